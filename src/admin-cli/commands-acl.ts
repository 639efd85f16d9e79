/**
 * The ACL commands (mqadmin 4.9.8's UpdateAccessConfigSubCommand, DeleteAccessConfigSubCommand,
 * UpdateGlobalWhiteAddrSubCommand, ClusterAclConfigVersionListSubCommand; docs/PROTOCOL.md §3.19).
 * They change a broker's plain_acl.yml, so the broker wants them signed by an admin account:
 * --access-key/--secret-key, the environment, or $ROCKETMQ_HOME/conf/tools.yml (credentials.ts).
 * With -c they go to every master and slave of the cluster, as mqadmin's do.
 */
import { parseJsonLenient } from "../common/json.ts";
import { RequestCode } from "../remoting/index.ts";
import type { Command } from "./command.ts";
import type { Flags } from "./flags.ts";
import { AdminError, type AdminSession } from "./session.ts";
import { humanTime, renderTable } from "./table.ts";

const TARGET_FLAGS = [
  { short: "b", long: "brokerAddr", value: "ADDR", desc: "this broker" },
  { short: "c", long: "clusterName", value: "NAME", desc: "every master and slave of this cluster" },
] as const;

function targets(s: AdminSession, f: Flags): Promise<string[]> {
  const one = f.str("brokerAddr");
  return one !== undefined ? Promise.resolve([one]) : s.membersOf(f.req("clusterName"));
}

const updateAclConfig: Command = {
  name: "updateAclConfig",
  summary: "Create or update an ACL account in the brokers' plain_acl.yml.",
  flags: [
    ...TARGET_FLAGS,
    { short: "a", long: "accessKey", value: "KEY", desc: "the account's AccessKey", required: true },
    { short: "s", long: "secretKey", value: "KEY", desc: "its SecretKey", required: true },
    { short: "w", long: "whiteRemoteAddress", value: "PATTERN", desc: "addresses that need no signature, e.g. 192.168.0.*" },
    { short: "i", long: "defaultTopicPerm", value: "PERM", desc: "DENY, PUB, SUB or PUB|SUB" },
    { short: "u", long: "defaultGroupPerm", value: "PERM", desc: "DENY, PUB, SUB or PUB|SUB" },
    { short: "t", long: "topicPerms", value: "LIST", desc: "topicA=PUB,topicB=SUB" },
    { short: "g", long: "groupPerms", value: "LIST", desc: "groupA=SUB,groupB=DENY" },
    { short: "m", long: "admin", value: "true|false", desc: "an admin account (default false)" },
  ],
  oneOf: [["brokerAddr", "clusterName"]],
  examples: [
    "rocketbun admin updateAclConfig -n 127.0.0.1:9876 -c DefaultCluster -a app1 -s app1-secret -i PUB|SUB --access-key admin --secret-key ...",
  ],
  async run({ session: s, flags: f }) {
    const ext: Record<string, string> = { accessKey: f.req("accessKey"), secretKey: f.req("secretKey"), admin: String(f.bool("admin", false)) };
    const optional = ["whiteRemoteAddress", "defaultTopicPerm", "defaultGroupPerm", "topicPerms", "groupPerms"] as const;
    for (const k of optional) {
      const v = f.str(k);
      if (v !== undefined) ext[k] = v;
    }
    const addrs = await targets(s, f);
    for (const addr of addrs) await s.ok(addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, ext);
    const { secretKey: _secret, ...shown } = ext;
    const text = [
      ...addrs.map((a) => `create or update plain access config to ${a} success.`),
      `accessKey=${ext.accessKey}, admin=${ext.admin}`,
    ].join("\n");
    return { json: { ...shown, brokers: addrs }, text };
  },
};

const deleteAclConfig: Command = {
  name: "deleteAclConfig",
  alias: "deleteAccessConfig",
  summary: "Delete an ACL account from the brokers' plain_acl.yml.",
  flags: [...TARGET_FLAGS, { short: "a", long: "accessKey", value: "KEY", desc: "the account's AccessKey", required: true }],
  oneOf: [["brokerAddr", "clusterName"]],
  examples: ["rocketbun admin deleteAclConfig -n 127.0.0.1:9876 -c DefaultCluster -a app1"],
  async run({ session: s, flags: f }) {
    const accessKey = f.req("accessKey");
    const addrs = await targets(s, f);
    for (const addr of addrs) await s.ok(addr, RequestCode.DELETE_ACL_CONFIG, { accessKey });
    const text = [...addrs.map((a) => `delete plain access config account from ${a} success.`), `account's accesskey is:${accessKey}`].join("\n");
    return { json: { accessKey, brokers: addrs }, text };
  },
};

const updateGlobalWhiteAddr: Command = {
  name: "updateGlobalWhiteAddr",
  summary: "Replace the global white list (addresses that need no signature) of the brokers' ACL file.",
  flags: [
    ...TARGET_FLAGS,
    { short: "g", long: "globalWhiteRemoteAddresses", value: "LIST", desc: "e.g. 10.10.103.*,192.168.0.*", required: true },
    { short: "p", long: "aclFileFullPath", value: "FILE", desc: "the broker's ACL file (default: the one it uses)" },
  ],
  oneOf: [["brokerAddr", "clusterName"]],
  examples: ["rocketbun admin updateGlobalWhiteAddr -n 127.0.0.1:9876 -b 127.0.0.1:10911 -g 10.0.0.*"],
  async run({ session: s, flags: f }) {
    const ext: Record<string, string> = { globalWhiteAddrs: f.req("globalWhiteRemoteAddresses") };
    const file = f.str("aclFileFullPath");
    if (file !== undefined) ext.aclFileFullPath = file;
    const addrs = await targets(s, f);
    for (const addr of addrs) await s.ok(addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ext);
    return { json: { ...ext, brokers: addrs }, text: addrs.map((a) => `update global white remote addresses to ${a} success.`).join("\n") };
  },
};

interface AclVersionRow {
  clusterName: string;
  brokerName: string;
  brokerAddr: string;
  aclFilePath: string;
  aclConfigVersionNum: number;
  aclLastUpdateTime: number;
}

async function aclVersions(s: AdminSession, addr: string): Promise<AclVersionRow[]> {
  const res = await s.ok(addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO);
  const ext = res.extFields ?? {};
  let files: unknown;
  try {
    files = parseJsonLenient(ext.allAclFileVersion ?? "{}");
  } catch {
    throw new AdminError(`${addr} answered an unreadable allAclFileVersion: ${ext.allAclFileVersion}`);
  }
  const rows: AclVersionRow[] = [];
  for (const [file, v] of Object.entries(typeof files === "object" && files !== null ? files : {})) {
    const dv = (typeof v === "object" && v !== null ? v : {}) as { counter?: unknown; timestamp?: unknown };
    const base = { clusterName: ext.clusterName ?? "", brokerName: ext.brokerName ?? "", brokerAddr: ext.brokerAddr ?? addr, aclFilePath: file };
    rows.push({ ...base, aclConfigVersionNum: Number(dv.counter) || 0, aclLastUpdateTime: Number(dv.timestamp) || 0 });
  }
  return rows;
}

const clusterAclConfigVersion: Command = {
  name: "clusterAclConfigVersion",
  summary: "List the version (change counter and time) of each broker's ACL file.",
  flags: [
    { short: "b", long: "brokerAddr", value: "ADDR", desc: "this broker" },
    { short: "c", long: "clusterName", value: "NAME", desc: "every master of this cluster" },
  ],
  oneOf: [["brokerAddr", "clusterName"]],
  examples: ["rocketbun admin clusterAclConfigVersion -n 127.0.0.1:9876 -c DefaultCluster"],
  async run({ session: s, flags: f }) {
    const one = f.str("brokerAddr");
    const addrs = one !== undefined ? [one] : await s.mastersOf(f.req("clusterName"));
    const rows: AclVersionRow[] = [];
    for (const addr of addrs) rows.push(...(await aclVersions(s, addr)));
    const table = renderTable({
      headers: ["Cluster Name", "Broker Name", "Broker Addr", "AclFilePath", "AclConfigVersionNum", "AclLastUpdateTime"],
      rows: rows.map((r) => [r.clusterName, r.brokerName, r.brokerAddr, r.aclFilePath, r.aclConfigVersionNum, humanTime(r.aclLastUpdateTime, false)]),
    });
    return { json: rows, text: table };
  },
};

export const ACL_COMMANDS: readonly Command[] = [updateAclConfig, deleteAclConfig, updateGlobalWhiteAddr, clusterAclConfigVersion];
