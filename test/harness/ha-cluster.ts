/**
 * A small DSL for master/slave scenarios on the compiled binary (docs/CONVENTIONS.md §9): name servers,
 * broker groups of one master and its slaves, each a separate process on 127.0.0.1 with its own
 * temp dir, driven over the real wire and the admin API.
 *
 *   await using cluster = await HaCluster.start({ groups: [{ name: "broker-a", role: "SYNC_MASTER" }] });
 *   cluster.slave().freeze();   await cluster.send(TOPIC, 1);   cluster.slave().thaw();
 *   await cluster.slave().stop(); await cluster.send(TOPIC, 100); await cluster.slave().start();
 *   await cluster.caughtUp();
 *
 * Masters listen on a fixed port picked once (HA = listen + 1, VIP = listen − 2), so a restarted
 * master comes back at the address its slave and the name servers know. Everything else is
 * ephemeral. Nodes are killed by PID only, stopped processes are continued before they are
 * stopped, and every process and temp dir is gone after dispose. HA_LOG_LEVEL=info (or debug)
 * makes the brokers log more; a node's output() is in the failure messages.
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createRequest, RequestCode, ResponseCode, type RemotingClient, type RemotingCommand } from "../../src/remoting/index.ts";
import { startRocketbun, tempDir, waitFor, type RunningBinary } from "./binary.ts";
import { bodyJson, createTopicExt, newClient, routeRequest } from "./wire.ts";

export type MasterRole = "ASYNC_MASTER" | "SYNC_MASTER";

/** test-min timings, with segments and limits a few MiB of data can use. Sections are appended. */
export function brokerYaml(
  o: { broker?: Record<string, string | number | boolean>; store?: Record<string, string | number | boolean> } = {},
): string {
  const broker: Record<string, string | number | boolean> = {
    brokerClusterName: "HaCluster",
    defaultTopicQueueNums: 4,
    registerNameServerPeriodMs: 1000,
    maxMessageSizeBytes: 65536,
    ...o.broker,
  };
  const store: Record<string, string | number | boolean> = {
    commitLogSegmentBytes: 1048576,
    flushIntervalMs: 50,
    consumeQueueUnitsPerFile: 4096,
    indexSlotNum: 4096,
    indexNum: 16384,
    ...o.store,
  };
  const section = (name: string, kv: Record<string, string | number | boolean>) =>
    `${name}:\n${Object.entries(kv)
      .map(([k, v]) => `  ${k}: ${typeof v === "string" ? JSON.stringify(v) : String(v)}`)
      .join("\n")}\n`;
  return `logLevel: ${process.env.HA_LOG_LEVEL ?? "warn"}\nremoting:\n  frameSizeMaxBytes: 16777216\n  connectionBufferMaxBytes: 67108864\n${section("broker", broker)}${section("store", store)}`;
}

const NAMESRV_YAML = "logLevel: warn\nnamesrv:\n  brokerExpiredMs: 10000\n  brokerScanIntervalMs: 200\n";

/** A listen port P with P − 2, P and P + 1 free (VIP, remoting, HA), below the ephemeral range. */
export function freeBrokerPort(): number {
  for (let attempt = 0; attempt < 200; attempt++) {
    const p = 20_000 + Math.floor(Math.random() * 12_000);
    const held: { stop(closeActive?: boolean): void }[] = [];
    try {
      for (const q of [p - 2, p, p + 1]) held.push(Bun.listen({ hostname: "127.0.0.1", port: q, socket: { data() {} } }));
      return p;
    } catch {
      // Taken: try another.
    } finally {
      for (const h of held) h.stop(true);
    }
  }
  throw new Error("no free broker port block found");
}

export class Node {
  readonly kind: "namesrv" | "master" | "slave";
  readonly name: string;
  readonly dir = tempDir("rocketbun-ha-");
  #proc: RunningBinary | null = null;
  readonly #argv: () => string[];
  readonly #yaml: string;
  #frozen = false;

  constructor(kind: "namesrv" | "master" | "slave", name: string, yaml: string, argv: () => string[]) {
    this.kind = kind;
    this.name = name;
    this.#yaml = yaml;
    this.#argv = argv;
  }

  get proc(): RunningBinary {
    if (!this.#proc) throw new Error(`${this.name} is not running`);
    return this.#proc;
  }

  get running(): boolean {
    const p = this.#proc?.proc;
    return !!p && p.exitCode === null && p.signalCode === null;
  }

  get pid(): number {
    return this.proc.proc.pid;
  }

  /** Remoting address (name server or broker). */
  get addr(): string {
    const p = this.proc.ports;
    return `127.0.0.1:${this.kind === "namesrv" ? p.namesrv : p.broker}`;
  }

  get haAddr(): string {
    return `127.0.0.1:${this.proc.ports.ha}`;
  }

  /** Starts (or restarts on the same store) and waits for the ports file. */
  async start(): Promise<void> {
    if (this.running) throw new Error(`${this.name} is already running`);
    const role = this.kind === "namesrv" ? "namesrv" : this.kind;
    this.#proc = await startRocketbun({ role, configYaml: this.#yaml, args: this.#argv(), dir: this.dir });
  }

  /** SIGTERM (clean shutdown). */
  async stop(): Promise<void> {
    this.thaw();
    await this.#proc?.stop();
  }

  /** kill -9 of this node's PID, and wait until it is gone. */
  async kill(): Promise<void> {
    const p = this.#proc?.proc;
    if (!p || !this.running) return;
    this.#frozen = false;
    process.kill(p.pid, "SIGKILL");
    await p.exited;
  }

  /** SIGSTOP: the process stays, but does nothing (its sockets stay open). */
  freeze(): void {
    if (!this.running) return;
    process.kill(this.pid, "SIGSTOP");
    this.#frozen = true;
  }

  thaw(): void {
    if (!this.#frozen) return;
    this.#frozen = false;
    if (this.running) process.kill(this.pid, "SIGCONT");
  }

  async admin<T>(path: string): Promise<T> {
    const r = await fetch(`${this.proc.adminUrl}${path}`);
    if (!r.ok) throw new Error(`${this.name} GET ${path}: HTTP ${r.status} ${await r.text()}`);
    return (await r.json()) as T;
  }

  async maxOffset(): Promise<number> {
    return (await this.admin<{ store: { maxPhyOffset: number } }>("/broker")).store.maxPhyOffset;
  }

  async ha(): Promise<HaInfo> {
    return this.admin<HaInfo>("/ha");
  }

  /** The CommitLog segment files under <dir>/store/commitlog, name → bytes. */
  commitLogFiles(): Map<string, Buffer> {
    const d = join(this.dir, "store", "commitlog");
    const out = new Map<string, Buffer>();
    for (const f of readdirSync(d).sort()) if (/^\d{20}$/.test(f)) out.set(f, readFileSync(join(d, f)));
    return out;
  }

  /** stdout + stderr so far, for failure messages. */
  output(): string {
    return this.#proc
      ? `--- ${this.name} (pid ${this.#proc.proc.pid}) ---\n${this.#proc.output.out().slice(-3000)}${this.#proc.output.err().slice(-3000)}`
      : "";
  }

  async dispose(): Promise<void> {
    this.thaw();
    if (this.#proc) await this.#proc[Symbol.asyncDispose]();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface SlaveHa {
  addr: string;
  ackOffset: number;
  transferOffset: number;
  lagBytes: number;
  lagSeconds: number;
}

export interface HaInfo {
  role: string;
  slaves?: SlaveHa[];
  master?: {
    connected: boolean;
    masterAddr: string | undefined;
    masterHaAddr: string | undefined;
    maxOffset: number;
    masterMaxOffset: number;
    lagBytes: number;
    lagSeconds: number;
    lastAppliedStoreTimestamp: number;
    bytesReceived: number;
    streamErrors: number;
    lastStreamError?: string;
    lastMetadataSyncAt: number;
  };
}

export interface GroupSpec {
  name: string;
  role: MasterRole;
  slaves?: number;
  masterYaml?: string;
  slaveYaml?: string;
  /** false: the slaves are set up (empty store) but not started. */
  startSlaves?: boolean;
}

export interface SendOutcome {
  code: number;
  remark: string | undefined;
  msgId: string | undefined;
  queueOffset: number;
}

export class HaCluster implements AsyncDisposable {
  readonly namesrvs: Node[] = [];
  readonly #groups = new Map<string, { master: Node; slaves: Node[] }>();
  readonly wire: RemotingClient = newClient();
  #seq = 0;

  private constructor() {}

  static async start(o: { namesrvs?: number; groups: GroupSpec[] }): Promise<HaCluster> {
    const c = new HaCluster();
    try {
      for (let i = 0; i < (o.namesrvs ?? 1); i++) {
        const ns = new Node("namesrv", `namesrv-${i}`, NAMESRV_YAML, () => ["--listen", "127.0.0.1:0"]);
        c.namesrvs.push(ns);
        await ns.start();
      }
      const nsList = () => c.namesrvs.map((n) => n.addr).join(";");
      const starts: Promise<void>[] = [];
      for (const g of o.groups) {
        const port = freeBrokerPort();
        const masterArgs = () => ["--namesrv", nsList(), "--listen", `127.0.0.1:${port}`, "--broker-name", g.name, "--broker-role", g.role];
        const master = new Node("master", `${g.name}-master`, g.masterYaml ?? brokerYaml(), masterArgs);
        const slaves: Node[] = [];
        for (let i = 1; i <= (g.slaves ?? 1); i++) {
          slaves.push(
            new Node("slave", `${g.name}-slave-${i}`, g.slaveYaml ?? brokerYaml(), () => [
              "--namesrv",
              nsList(),
              "--broker-name",
              g.name,
              "--broker-id",
              String(i),
            ]),
          );
        }
        c.#groups.set(g.name, { master, slaves });
        starts.push(master.start(), ...(g.startSlaves === false ? [] : slaves.map((s) => s.start())));
      }
      await Promise.all(starts);
      return c;
    } catch (e) {
      await c[Symbol.asyncDispose]();
      throw e;
    }
  }

  master(group = this.#first()): Node {
    return this.#group(group).master;
  }

  slave(i = 0, group = this.#first()): Node {
    const s = this.#group(group).slaves[i];
    if (!s) throw new Error(`${group} has no slave ${i}`);
    return s;
  }

  get groups(): string[] {
    return [...this.#groups.keys()];
  }

  #first(): string {
    return this.#groups.keys().next().value ?? "";
  }

  #group(name: string): { master: Node; slaves: Node[] } {
    const g = this.#groups.get(name);
    if (!g) throw new Error(`no broker group ${name}`);
    return g;
  }

  call(addr: string, code: number, ext?: Record<string, string>, body?: Uint8Array, timeoutMs = 5000): Promise<RemotingCommand> {
    return this.wire.invoke(addr, createRequest(code, ext, body), timeoutMs);
  }

  /** UPDATE_AND_CREATE_TOPIC on the masters of `groups` (default all), then waits for every name server to route it. */
  async createTopic(topic: string, queues = 4, groups = this.groups): Promise<void> {
    for (const g of groups) {
      const res = await this.call(this.master(g).addr, RequestCode.UPDATE_AND_CREATE_TOPIC, createTopicExt(topic, queues));
      if (res.code !== ResponseCode.SUCCESS) throw new Error(`creating ${topic} on ${g}: ${res.code} ${res.remark ?? ""}`);
    }
    for (const ns of this.namesrvs) {
      await waitFor(async () => (await this.route(ns, topic))?.queueDatas.length === groups.length, 15_000, `${ns.name} to route ${topic}`);
    }
  }

  async route(ns: Node, topic: string): Promise<Route | null> {
    const res = await this.wire.invoke(ns.addr, routeRequest(topic), 3000);
    return res.code === ResponseCode.SUCCESS ? bodyJson<Route>(res) : null;
  }

  /** One SEND_MESSAGE_V2 to `addr` (default: the first group's master); the answer as it came. */
  async sendOne(
    topic: string,
    o: { addr?: string; queueId?: number; body?: string | Uint8Array; keys?: string; timeoutMs?: number } = {},
  ): Promise<SendOutcome> {
    const seq = this.#seq++;
    const keys = o.keys ?? `k${seq}`;
    const ext = {
      a: "PID_ha",
      b: topic,
      c: "TBW102",
      d: "4",
      e: String(o.queueId ?? seq % 4),
      f: "0",
      g: String(Date.now()),
      h: "0",
      i: `TAGS\u0001t\u0002KEYS\u0001${keys}\u0002UNIQ_KEY\u0001U${seq}`,
      j: "0",
      k: "false",
    };
    const body = o.body ?? `message ${seq} `.padEnd(200, "x");
    const res = await this.call(
      o.addr ?? this.master().addr,
      RequestCode.SEND_MESSAGE_V2,
      ext,
      typeof body === "string" ? new TextEncoder().encode(body) : body,
      o.timeoutMs,
    );
    return { code: res.code, remark: res.remark, msgId: res.extFields?.msgId, queueOffset: Number(res.extFields?.queueOffset ?? -1) };
  }

  /** PULL_MESSAGE with the SUBSCRIPTION flag ("*"), no suspension, no commit. */
  pull(addr: string, topic: string, o: { group?: string; queueId?: number; offset?: number; max?: number } = {}): Promise<RemotingCommand> {
    return this.call(addr, RequestCode.PULL_MESSAGE, {
      consumerGroup: o.group ?? "GID_ha_reader",
      topic,
      queueId: String(o.queueId ?? 0),
      queueOffset: String(o.offset ?? 0),
      maxMsgNums: String(o.max ?? 32),
      sysFlag: "4",
      commitOffset: "0",
      suspendTimeoutMillis: "0",
      subscription: "*",
      subVersion: "0",
    });
  }

  /** `n` sends to a master; all must answer SUCCESS. */
  async send(topic: string, n: number, o: { group?: string; bodyBytes?: number; concurrency?: number; queueId?: number } = {}): Promise<void> {
    const addr = this.master(o.group).addr;
    const body = o.bodyBytes ? new Uint8Array(o.bodyBytes).fill(0x61) : undefined;
    let next = 0;
    const worker = async () => {
      while (next < n) {
        next++;
        const r = await this.sendOne(topic, { addr, ...(body ? { body } : {}), ...(o.queueId !== undefined ? { queueId: o.queueId } : {}) });
        if (r.code !== ResponseCode.SUCCESS) throw new Error(`send to ${addr} answered ${r.code} ${r.remark ?? ""}`);
      }
    };
    await Promise.all(Array.from({ length: Math.min(n, o.concurrency ?? 1) }, worker));
  }

  /** Waits until every slave of `group` holds exactly its master's CommitLog end. */
  async caughtUp(group = this.#first(), timeoutMs = 15_000): Promise<number> {
    const g = this.#group(group);
    const target = await g.master.maxOffset();
    for (const s of g.slaves) {
      await waitFor(async () => (await s.maxOffset()) === target, timeoutMs, `${s.name} to reach ${target}: ${this.diag()}`);
    }
    return target;
  }

  /** Output of every process, for failure messages. */
  diag(): string {
    const all = [...this.namesrvs, ...[...this.#groups.values()].flatMap((g) => [g.master, ...g.slaves])];
    return all.map((n) => n.output()).join("\n");
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.wire.close();
    const brokers = [...this.#groups.values()].flatMap((g) => [...g.slaves, g.master]);
    await Promise.all(brokers.map((b) => b.dispose()));
    await Promise.all(this.namesrvs.map((n) => n.dispose()));
  }
}

export interface Route {
  queueDatas: { brokerName: string; readQueueNums: number; writeQueueNums: number; perm: number }[];
  brokerDatas: { brokerName: string; brokerAddrs: Record<string, string> }[];
}
