/**
 * A name server and a master as separate processes on 127.0.0.1 (the compiled binary, or the
 * sources under `bun --cpu-prof-md` when profiling), with a config written for the run, plus the
 * admin requests the workloads need (create topics, wait until the name server routes them).
 */
import { connect } from "node:net";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { scope } from "../../src/common/log.ts";
import {
  createRequest,
  RemotingClient,
  REMOTING_CLIENT_DEFAULTS,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
} from "../../src/remoting/index.ts";
import { signRequest, type AclCredentials } from "../../src/protocol/acl-signature.ts";
import { parseRoute } from "../../src/protocol/route.ts";
import { parseJsonBytes } from "../../src/common/json.ts";
import { now, sleep } from "./measure.ts";
import { RUNTIME_ENV } from "../../src/runtime-tuning.ts";

export const PROJECT = resolve(import.meta.dir, "../..");

export type FlushDiskType = "ASYNC_FLUSH" | "SYNC_FLUSH";

export interface Launcher {
  /** The compiled binary, or undefined to run src/server.ts under Bun (profiling). */
  binary?: string;
  /** Profile the broker (bun --cpu-prof-md) into this folder; needs `binary` undefined. */
  cpuProfDir?: string;
}

export interface Proc {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  pid: number;
  port: number;
  /** Process start (spawn) to the first accepted TCP connection on its remoting port, ms. */
  readyMs: number;
  addr: string;
  output: () => string;
  stop(): Promise<number | null>;
}

function collect(stream: ReadableStream<Uint8Array>): () => string {
  let text = "";
  const decoder = new TextDecoder();
  void (async () => {
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true });
      if (text.length > 200_000) text = text.slice(-100_000);
    }
  })();
  return () => text;
}

export function canConnect(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = connect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      res(true);
    });
    s.once("error", () => res(false));
  });
}

/**
 * Starts `rocketbun` with `configYaml` and waits until its remoting port accepts a connection.
 * readyMs runs from just before the spawn to that connection (the ports file is polled every ms,
 * so the figure is at most ~1 ms late).
 */
async function startProcess(l: Launcher, dir: string, name: string, configYaml: string, key: "namesrv" | "broker"): Promise<Proc> {
  mkdirSync(dir, { recursive: true });
  const cfg = join(dir, `${name}.yaml`);
  const portsFile = join(dir, `${name}-ports-${Date.now()}.json`);
  writeFileSync(cfg, configYaml);
  const argv = l.binary
    ? [l.binary, "--config", cfg, "--ports-file", portsFile]
    : [
        process.execPath,
        ...(l.cpuProfDir && key === "broker" ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${join(l.cpuProfDir, `${name}-${Date.now()}`)}`] : []),
        join(PROJECT, "src/server.ts"),
        "--config",
        cfg,
        "--ports-file",
        portsFile,
      ];
  const t0 = now();
  // The runtime settings the binary would re-exec itself with (src/runtime-tuning.ts), as the
  // systemd unit sets them: given up front, the measured start is not a re-exec.
  const env = { ...RUNTIME_ENV, ...process.env };
  const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", cwd: dir, env });
  const out = collect(proc.stdout);
  const err = collect(proc.stderr);
  const output = () => out() + err();
  const deadline = t0 + 30_000;
  let port = 0;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${name} exited with ${proc.exitCode}:\n${output()}`);
    if (now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`${name} not ready within 30 s:\n${output()}`);
    }
    if (port === 0 && existsSync(portsFile)) {
      const text = readFileSync(portsFile, "utf8");
      if (text.endsWith("\n")) port = (JSON.parse(text) as Record<string, number>)[key] ?? 0;
    }
    if (port !== 0 && (await canConnect(port))) break;
    await sleep(1);
  }
  const readyMs = now() - t0;
  const stop = async (graceMs = 15_000) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), graceMs);
    const code = await proc.exited;
    clearTimeout(timer);
    return code;
  };
  return { proc, pid: proc.pid, port, readyMs, addr: `127.0.0.1:${port}`, output, stop };
}

export function startNamesrv(l: Launcher, dir: string): Promise<Proc> {
  const yaml = [
    "role: namesrv",
    "logLevel: warn",
    "namesrv:",
    "  listen: 127.0.0.1:0",
    "  admin: 127.0.0.1:0",
    "store:",
    `  dir: ${JSON.stringify(join(dir, "namesrv-store"))}`,
    "",
  ].join("\n");
  return startProcess({ ...(l.binary ? { binary: l.binary } : {}) }, dir, "namesrv", yaml, "namesrv");
}

/** `--acl`: the one account every benchmark client signs with (an admin: it creates topics too). */
export const BENCH_ACL_CREDENTIALS = { accessKey: "rocketbun-bench", secretKey: "bench-secret-key-1" } as const;

/** The plain_acl.yml of `--acl` runs: one admin account, no white list, so every request is signed and checked. */
export const BENCH_ACL_FILE = [
  "accounts:",
  `  - accessKey: ${BENCH_ACL_CREDENTIALS.accessKey}`,
  `    secretKey: ${BENCH_ACL_CREDENTIALS.secretKey}`,
  "    admin: true",
  "    defaultTopicPerm: PUB|SUB",
  "    defaultGroupPerm: PUB|SUB",
  "",
].join("\n");

export interface MasterOptions {
  /** Enforce this plain_acl.yml (broker.aclEnable); undefined = no ACL. */
  aclFile?: string;
  namesrv: string;
  storeDir: string;
  flushDiskType: FlushDiskType;
  /** Largest pull batch the broker serves from memory (RocketMQ's default is 32). */
  pullBatchMax: number;
  /** remoting.maxNewConnectionsPerSecondPerAddress; absent = the default (no limit). */
  connectRatePerAddress?: number;
}

/** The master's config for a benchmark run: RocketMQ's production sizes (1 GiB CommitLog segments). */
export function masterYaml(o: MasterOptions): string {
  return [
    "role: master",
    "logLevel: warn",
    "broker:",
    "  listen: 127.0.0.1:0",
    "  admin: 127.0.0.1:0",
    "  brokerIP1: 127.0.0.1",
    `  namesrvAddr: [${JSON.stringify(o.namesrv)}]`,
    "  autoCreateTopicEnable: false",
    "  registerNameServerPeriodMs: 30000",
    ...(o.aclFile ? ["  aclEnable: true", `  aclFile: ${JSON.stringify(o.aclFile)}`] : []),
    "store:",
    `  dir: ${JSON.stringify(o.storeDir)}`,
    `  flushDiskType: ${o.flushDiskType}`,
    "  commitLogSegmentBytes: 1073741824",
    "  flushIntervalMs: 500",
    "  syncFlushTimeoutMs: 5000",
    "  consumeQueueUnitsPerFile: 300000",
    `  maxTransferCountOnMessageInMemory: ${o.pullBatchMax}`,
    `  maxTransferBytesOnMessageInMemory: ${Math.max(262144, o.pullBatchMax * 1400)}`,
    ...(o.connectRatePerAddress !== undefined ? ["remoting:", `  maxNewConnectionsPerSecondPerAddress: ${o.connectRatePerAddress}`] : []),
    "",
  ].join("\n");
}

export function startMaster(l: Launcher, dir: string, o: MasterOptions): Promise<Proc> {
  return startProcess(l, dir, `master-${o.flushDiskType.toLowerCase()}`, masterYaml(o), "broker");
}

/** Admin requests over one remoting client. */
export class Admin {
  readonly #c = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("bench-admin") });
  constructor(
    readonly namesrv: string,
    readonly broker: string,
    readonly credentials?: AclCredentials,
  ) {}

  /** `--acl` runs: every request signed, as a client with credentials signs it. */
  #signed(req: RemotingCommand): RemotingCommand {
    if (this.credentials) signRequest(req, this.credentials);
    return req;
  }

  async createTopic(topic: string, queues: number): Promise<void> {
    const ext = {
      topic,
      defaultTopic: "TBW102",
      readQueueNums: String(queues),
      writeQueueNums: String(queues),
      perm: "6",
      topicFilterType: "SINGLE_TAG",
      topicSysFlag: "0",
      order: "false",
    };
    const res = await this.#c.invoke(this.broker, this.#signed(createRequest(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)), 10_000);
    if (res.code !== ResponseCode.SUCCESS) throw new Error(`UPDATE_AND_CREATE_TOPIC ${topic}: ${res.code} ${res.remark ?? ""}`);
  }

  /** Waits until the name server answers a route for every topic (the broker re-registers ~20 ms after a change). */
  async waitRoutes(topics: string[], timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (const topic of topics) {
      for (;;) {
        const res = await this.#c.invoke(this.namesrv, this.#signed(createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic })), 10_000);
        if (res.code === ResponseCode.SUCCESS) break;
        if (Date.now() > deadline) throw new Error(`no route for ${topic} after ${timeoutMs} ms`);
        await sleep(20);
      }
    }
  }

  /**
   * SET_MESSAGE_REQUEST_MODE (401) on the broker, as `mqadmin setConsumeMode -b` sends it: (topic,
   * group) consumes by POP or PULL. The body's members in fastjson's (alphabetical) order.
   */
  async setConsumeMode(topic: string, group: string, mode: "POP" | "PULL"): Promise<void> {
    const body = new TextEncoder().encode(JSON.stringify({ consumerGroup: group, mode, popShareQueueNum: 0, topic }));
    const res = await this.#c.invoke(this.broker, this.#signed(createRequest(RequestCode.SET_MESSAGE_REQUEST_MODE, {}, body)), 10_000);
    if (res.code !== ResponseCode.SUCCESS) throw new Error(`SET_MESSAGE_REQUEST_MODE ${topic}/${group}: ${res.code} ${res.remark ?? ""}`);
  }

  /** The broker name the name server routes `topic` to (what a client puts in receipt handles and `bname`). */
  async brokerName(topic: string): Promise<string> {
    const res = await this.#c.invoke(this.namesrv, this.#signed(createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic })), 10_000);
    if (res.code !== ResponseCode.SUCCESS || !res.body) throw new Error(`GET_ROUTEINFO_BY_TOPIC ${topic}: ${res.code} ${res.remark ?? ""}`);
    const route = parseRoute(parseJsonBytes(res.body));
    if ("invalid" in route) throw new Error(`route of ${topic}: ${route.invalid}`);
    const name = route.brokerDatas[0]?.brokerName;
    if (name === undefined) throw new Error(`route of ${topic} names no broker`);
    return name;
  }

  /** Messages stored in a queue (GET_MAX_OFFSET). */
  async maxOffset(topic: string, queueId: number): Promise<number> {
    const res = await this.#c.invoke(
      this.broker,
      this.#signed(createRequest(RequestCode.GET_MAX_OFFSET, { topic, queueId: String(queueId) })),
      10_000,
    );
    if (res.code !== ResponseCode.SUCCESS) throw new Error(`GET_MAX_OFFSET ${topic}/${queueId}: ${res.code} ${res.remark ?? ""}`);
    return Number(res.extFields?.offset ?? 0);
  }

  /** Messages stored in a topic of `queues` queues. */
  async stored(topic: string, queues: number): Promise<number> {
    let n = 0;
    for (let q = 0; q < queues; q++) n += await this.maxOffset(topic, q);
    return n;
  }

  async close(): Promise<void> {
    await this.#c.close();
  }
}

/** `binary` when given, else the compiled binary built from these sources into `tmp` (benches that need one process of it). */
export function benchBinary(tmp: string, binary: string | undefined): string {
  if (binary !== undefined) return binary;
  const out = join(tmp, "rocketbun");
  const r = Bun.spawnSync([process.execPath, join(PROJECT, "scripts/build-binary.ts"), "--outfile", out], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`building the binary failed: ${r.stderr.toString()}`);
  return out;
}
