/**
 * The compiled binary reloading its configuration: SIGHUP after editing the config file (a live
 * key takes effect, a restart-only key is reported and kept, an invalid file changes nothing and
 * the process keeps running), and the broker config over the wire (GET_BROKER_CONFIG,
 * UPDATE_BROKER_CONFIG, what mqadmin getBrokerConfig / updateBrokerConfig send).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequest, RequestCode, ResponseCode, type RemotingClient, type RemotingCommand } from "../../src/remoting/index.ts";
import { startRocketbun, waitFor, type RunningBinary } from "../harness/binary.ts";
import { newClient } from "../harness/wire.ts";

const TIMEOUT_MS = 3000;
const TOPIC = "ReloadT";

const CONFIG = `role: standalone
logLevel: info
remoting:
  frameSizeMaxBytes: 262144
namesrv:
  listen: 127.0.0.1:0
  admin: 127.0.0.1:0
broker:
  listen: 127.0.0.1:0
  brokerName: broker-a
  autoCreateTopicEnable: true
  defaultTopicQueueNums: 2
  registerNameServerPeriodMs: 1000
  maxMessageSizeBytes: 4096
store:
  commitLogSegmentBytes: 1048576
  flushIntervalMs: 50
`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(): Promise<{ proc: RunningBinary; addr: string; file: string; client: RemotingClient }> {
  const proc = await startRocketbun({ role: "standalone", configYaml: CONFIG });
  cleanups.push(() => proc[Symbol.asyncDispose]());
  const client = newClient();
  cleanups.push(() => client.close());
  return { proc, addr: `127.0.0.1:${proc.ports.broker}`, file: join(proc.dir, "config.yaml"), client };
}

interface ConfigView {
  dataVersion: { counter: number; timestamp: number };
  liveKeys: string[];
  config: { logLevel: string; broker: { maxMessageSizeBytes: number; brokerName: string } };
}

async function configView(proc: RunningBinary): Promise<ConfigView> {
  const res = await fetch(`${proc.adminUrl}/config`);
  expect(res.status).toBe(200);
  return (await res.json()) as ConfigView;
}

function call(c: RemotingClient, addr: string, code: number, ext?: Record<string, string>, body?: Uint8Array): Promise<RemotingCommand> {
  return c.invoke(addr, createRequest(code, ext, body), TIMEOUT_MS);
}

/** SEND_MESSAGE_V2 of a body of `bytes` bytes; returns the response code. */
async function sendBody(c: RemotingClient, addr: string, bytes: number): Promise<number> {
  const ext = { a: "PG", b: TOPIC, c: "TBW102", d: "2", e: "0", f: "0", g: String(Date.now()), h: "0", i: "TAGS\u0001x" };
  const res = await call(c, addr, RequestCode.SEND_MESSAGE_V2, ext, new Uint8Array(bytes).fill(97));
  return res.code;
}

function hup(proc: RunningBinary): void {
  proc.proc.kill("SIGHUP");
}

const allOutput = (proc: RunningBinary) => proc.output.out() + proc.output.err();

describe("SIGHUP reload (compiled binary)", () => {
  test("a live key takes effect, a restart-only key is reported and kept, an invalid file changes nothing", async () => {
    const { proc, addr, file, client } = await start();
    expect(await sendBody(client, addr, 1000)).toBe(ResponseCode.SUCCESS);
    expect(await sendBody(client, addr, 8000)).toBe(ResponseCode.MESSAGE_ILLEGAL);
    const before = await configView(proc);
    expect(before.config.broker.maxMessageSizeBytes).toBe(4096);
    expect(before.liveKeys).toContain("broker.maxMessageSizeBytes");
    expect(before.liveKeys).not.toContain("broker.brokerName");

    writeFileSync(
      file,
      CONFIG.replace("maxMessageSizeBytes: 4096", "maxMessageSizeBytes: 65536")
        .replace("brokerName: broker-a", "brokerName: broker-z")
        .replace("logLevel: info", "logLevel: debug"),
    );
    hup(proc);
    await waitFor(async () => (await configView(proc)).config.broker.maxMessageSizeBytes === 65536, 10_000, "maxMessageSizeBytes to be applied");
    const after = await configView(proc);
    expect(after.config.logLevel).toBe("debug");
    expect(after.config.broker.brokerName).toBe("broker-a");
    expect(after.dataVersion.counter).toBe(before.dataVersion.counter + 1);
    await waitFor(() => allOutput(proc).includes("broker.maxMessageSizeBytes: 4096 → 65536 (applied)"), 5000, "the applied line");
    const out = allOutput(proc);
    expect(out).toContain('broker.brokerName: "broker-a" → "broker-z": changed in the file, needs a restart (still "broker-a")');
    expect(out).toContain('logLevel: "info" → "debug" (applied)');
    expect(await sendBody(client, addr, 8000)).toBe(ResponseCode.SUCCESS);
    const broker = (await (await fetch(`${proc.adminUrl}/broker`)).json()) as { brokerName: string };
    expect(broker.brokerName).toBe("broker-a");

    // Invalid: a bad value and an unknown key, plus a valid-looking live change that must not apply.
    const bad = readFileSync(file, "utf8")
      .replace("maxMessageSizeBytes: 65536", "maxMessageSizeBytes: lots\n  maxMesageSize: 1")
      .replace("flushIntervalMs: 50", "flushIntervalMs: 75");
    writeFileSync(file, bad);
    hup(proc);
    await waitFor(() => allOutput(proc).includes("nothing changed, still running on the previous configuration"), 10_000, "the refusal");
    const errText = proc.output.err();
    expect(errText).toContain(`${file}:14:3: broker.maxMessageSizeBytes: expected an integer, got "lots"`);
    expect(errText).toContain(`${file}:15:3: broker.maxMesageSize: unknown key "maxMesageSize"`);
    expect(proc.proc.exitCode).toBeNull();
    const still = await configView(proc);
    expect(still.dataVersion).toEqual(after.dataVersion);
    expect(still.config.broker.maxMessageSizeBytes).toBe(65536);
    expect(await sendBody(client, addr, 8000)).toBe(ResponseCode.SUCCESS);

    // A burst of SIGHUPs is queued, not fatal; the last file wins.
    writeFileSync(file, CONFIG.replace("maxMessageSizeBytes: 4096", "maxMessageSizeBytes: 6000"));
    for (let i = 0; i < 5; i++) hup(proc);
    await waitFor(async () => (await configView(proc)).config.broker.maxMessageSizeBytes === 6000, 10_000, "the burst to settle");
    expect(proc.proc.exitCode).toBeNull();
    expect(await sendBody(client, addr, 8000)).toBe(ResponseCode.MESSAGE_ILLEGAL);
    expect(await proc.stop()).toBe(0);
  }, 60_000);
});

describe("SIGHUP: name server list", () => {
  test("a new namesrvAddr registers with the added name server and unregisters from the removed one", async () => {
    const ns1 = await startRocketbun({ role: "namesrv" });
    cleanups.push(() => ns1[Symbol.asyncDispose]());
    const ns2 = await startRocketbun({ role: "namesrv" });
    cleanups.push(() => ns2[Symbol.asyncDispose]());
    const yaml = (ns: string) =>
      `role: master\nbroker:\n  namesrvAddr: ["${ns}"]\n  registerNameServerPeriodMs: 60000\n  maxMessageSizeBytes: 65536\nstore:\n  commitLogSegmentBytes: 1048576\n`;
    const master = await startRocketbun({ role: "master", configYaml: yaml(ns1.namesrvAddr) });
    cleanups.push(() => master[Symbol.asyncDispose]());
    const brokers = async (ns: RunningBinary) => ((await (await fetch(`${ns.adminUrl}/brokers`)).json()) as { brokers: unknown[] }).brokers.length;
    await waitFor(async () => (await brokers(ns1)) === 1, 10_000, "registration with ns1");
    expect(await brokers(ns2)).toBe(0);
    writeFileSync(join(master.dir, "config.yaml"), yaml(ns2.namesrvAddr));
    hup(master);
    // Well before the 60 s registration period: the reload itself registers and unregisters.
    await waitFor(async () => (await brokers(ns2)) === 1 && (await brokers(ns1)) === 0, 10_000, "the move to ns2");
  }, 60_000);
});

describe("broker config over the wire (mqadmin getBrokerConfig / updateBrokerConfig)", () => {
  test("GET_BROKER_CONFIG answers properties and a DataVersion; UPDATE_BROKER_CONFIG applies live keys and refuses the rest", async () => {
    const { proc, addr, client } = await start();
    const got = await call(client, addr, RequestCode.GET_BROKER_CONFIG);
    expect(got.code).toBe(ResponseCode.SUCCESS);
    const text = new TextDecoder().decode(got.body);
    expect(text).toContain("maxMessageSize=4096\n");
    expect(text).toContain("brokerName=broker-a\n");
    expect(text).toContain("flushIntervalCommitLog=50\n");
    expect(JSON.parse(got.extFields?.version ?? "")).toEqual({ timestamp: expect.any(Number), counter: 0 });

    const enc = new TextEncoder();
    const upd = await call(client, addr, RequestCode.UPDATE_BROKER_CONFIG, undefined, enc.encode("maxMessageSize=65536\n"));
    expect(upd.code).toBe(ResponseCode.SUCCESS);
    expect(await sendBody(client, addr, 8000)).toBe(ResponseCode.SUCCESS);
    expect((await configView(proc)).config.broker.maxMessageSizeBytes).toBe(65536);

    const restart = await call(client, addr, RequestCode.UPDATE_BROKER_CONFIG, undefined, enc.encode("brokerName=broker-z\n"));
    expect(restart.code).toBe(ResponseCode.NO_PERMISSION);
    expect(restart.remark).toContain("broker.brokerName: cannot be changed while the broker runs");
    const unknown = await call(client, addr, RequestCode.UPDATE_BROKER_CONFIG, undefined, enc.encode("noSuchKey=1\n"));
    expect(unknown.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(unknown.remark).toBe("noSuchKey: unknown key");

    // The VIP channel serves the same requests (mqadmin may use it).
    const vip = await call(client, `127.0.0.1:${proc.ports.vip}`, RequestCode.GET_BROKER_CONFIG);
    expect(new TextDecoder().decode(vip.body)).toContain("maxMessageSize=65536\n");
    expect(JSON.parse(vip.extFields?.version ?? "").counter).toBe(1);
  }, 60_000);
});
