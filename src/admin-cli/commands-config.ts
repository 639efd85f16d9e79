/**
 * Configuration commands: getBrokerConfig, updateBrokerConfig, getNamesrvConfig,
 * updateNamesrvConfig (mqadmin 4.9.8's GetBrokerConfigCommand, …). Both sides speak Java
 * Properties text (`key=value` lines; docs/PROTOCOL.md §3.15, §3.16); what a key means, and
 * whether it can change at run time, is the server's business: a refusal comes back as it was.
 */
import { RequestCode } from "../remoting/index.ts";
import { MASTER_ID } from "../protocol/route.ts";
import type { Command } from "./command.ts";
import { parseProperties, propertiesText } from "./bodies.ts";
import type { AdminSession } from "./session.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

async function brokerConfig(s: AdminSession, addr: string): Promise<[string, string][]> {
  const res = await s.ok(addr, RequestCode.GET_BROKER_CONFIG);
  return parseProperties(res.body ? decoder.decode(res.body) : "");
}

const configLines = (pairs: readonly [string, string][]): string => pairs.map(([k, v]) => `${k.padEnd(50)}=  ${v}`).join("\n");

/** Masters with their slaves after them, with mqadmin's banner for each (fetchMasterAndSlaveDistinguish). */
async function clusterMembers(s: AdminSession, cluster: string): Promise<[string, string][]> {
  const info = await s.clusterInfo();
  const out: [string, string][] = [];
  for (const name of await s.brokerNamesOf(cluster)) {
    const addrs = info.brokerAddrTable[name]?.brokerAddrs ?? {};
    const master = addrs[String(MASTER_ID)];
    if (master !== undefined) out.push([master, `Master: ${master}`]);
    for (const [id, addr] of Object.entries(addrs).sort(([a], [b]) => Number(a) - Number(b))) {
      if (Number(id) !== MASTER_ID) out.push([addr, `My Master: ${master ?? "none"}=====Slave: ${addr}`]);
    }
  }
  return out;
}

const getBrokerConfig: Command = {
  name: "getBrokerConfig",
  summary: "Print a broker's configuration (every member's, with -c).",
  flags: [
    { short: "b", long: "brokerAddr", value: "ADDR", desc: "this broker" },
    { short: "c", long: "clusterName", value: "NAME", desc: "every master and slave of this cluster" },
  ],
  oneOf: [["brokerAddr", "clusterName"]],
  examples: ["rocketbun admin getBrokerConfig -n 127.0.0.1:9876 -b 127.0.0.1:10911"],
  async run({ session: s, flags: f }) {
    const one = f.str("brokerAddr");
    const members: [string, string][] = one !== undefined ? [[one, one]] : await clusterMembers(s, f.req("clusterName"));
    const json: Record<string, Record<string, string>> = {};
    const text: string[] = [];
    for (const [addr, banner] of members) {
      const pairs = await brokerConfig(s, addr);
      json[addr] = Object.fromEntries(pairs);
      text.push(`============${banner}============`, configLines(pairs), "");
    }
    return { json: one !== undefined ? json[one] : json, text: text.join("\n").trimEnd() };
  },
};

const updateBrokerConfig: Command = {
  name: "updateBrokerConfig",
  summary: "Change one configuration key of a broker, or of every master of a cluster.",
  flags: [
    { short: "b", long: "brokerAddr", value: "ADDR", desc: "this broker" },
    { short: "c", long: "clusterName", value: "NAME", desc: "every master of this cluster" },
    { short: "k", long: "key", value: "KEY", desc: "configuration key (RocketMQ's name)", required: true },
    { short: "v", long: "value", value: "VALUE", desc: "new value", required: true },
  ],
  oneOf: [["brokerAddr", "clusterName"]],
  examples: ["rocketbun admin updateBrokerConfig -n 127.0.0.1:9876 -b 127.0.0.1:10911 -k maxMessageSize -v 4000000"],
  async run({ session: s, flags: f }) {
    const key = f.req("key");
    const value = f.req("value");
    const one = f.str("brokerAddr");
    const addrs = one !== undefined ? [one] : await s.mastersOf(f.req("clusterName"));
    for (const addr of addrs) await s.ok(addr, RequestCode.UPDATE_BROKER_CONFIG, undefined, encoder.encode(propertiesText([[key, value]])));
    return { json: { key, value, brokers: addrs }, text: addrs.map((a) => `update broker config success, ${a}`).join("\n") };
  },
};

const getNamesrvConfig: Command = {
  name: "getNamesrvConfig",
  summary: "Print the configuration of every name server given with -n.",
  flags: [],
  examples: ["rocketbun admin getNamesrvConfig -n '10.0.0.1:9876;10.0.0.2:9876'"],
  async run({ session: s }) {
    const json: Record<string, Record<string, string>> = {};
    const text: string[] = [];
    for (const addr of s.namesrvAddrs) {
      const res = await s.ok(addr, RequestCode.GET_NAMESRV_CONFIG);
      const pairs = parseProperties(res.body ? decoder.decode(res.body) : "");
      json[addr] = Object.fromEntries(pairs);
      text.push(`============${addr}============`, configLines(pairs));
    }
    return { json, text: text.join("\n") };
  },
};

const updateNamesrvConfig: Command = {
  name: "updateNamesrvConfig",
  summary: "Change one configuration key of every name server given with -n.",
  flags: [
    { short: "k", long: "key", value: "KEY", desc: "configuration key (RocketMQ's name)", required: true },
    { short: "v", long: "value", value: "VALUE", desc: "new value", required: true },
  ],
  examples: ["rocketbun admin updateNamesrvConfig -n 127.0.0.1:9876 -k orderMessageEnable -v true"],
  async run({ session: s, flags: f }) {
    const key = f.req("key");
    const value = f.req("value");
    const body = encoder.encode(propertiesText([[key, value]]));
    for (const addr of s.namesrvAddrs) await s.ok(addr, RequestCode.UPDATE_NAMESRV_CONFIG, undefined, body);
    return {
      json: { key, value, nameServers: s.namesrvAddrs },
      text: `update name server config success![${s.namesrvAddrs.join(", ")}]\n${key} : ${value}`,
    };
  },
};

export const CONFIG_COMMANDS: readonly Command[] = [getBrokerConfig, updateBrokerConfig, getNamesrvConfig, updateNamesrvConfig];
