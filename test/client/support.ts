/**
 * Shared setup for the client-library tests: a standalone binary (name server + master in one
 * process) on config/test-min.yaml with per-test overrides, topic creation over the wire, raw
 * inspection of what the broker stored (PULL_MESSAGE decoded with decodeRecordAt, offsets, group
 * members), and tracking of every client so that disposal shuts them all down.
 *
 *   await using env = await Env.start();
 *   await env.createTopic("T", 4);
 *   const p = await env.producer();
 *   const c = env.push({ group: "g", rebalanceIntervalMs: 500 });
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { Producer, PullConsumer, PushConsumer, type ProducerOptions, type PullConsumerOptions, type PushConsumerOptions } from "rocketbun/client";
import { decodeRecordAt, type DecodedRecord } from "../../src/common/message-record.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingClient } from "../../src/remoting/index.ts";
import { ROOT, startRocketbun, type RunningBinary, waitFor } from "../harness/binary.ts";
import { bodyJson, createTopicExt, newClient, routeRequest } from "../harness/wire.ts";

export const TEST_MIN_YAML = readFileSync(join(ROOT, "config/test-min.yaml"), "utf8");

type Tree = Record<string, unknown>;

function merge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = v && typeof v === "object" && !Array.isArray(v) && b && typeof b === "object" ? merge(b as Tree, v as Tree) : v;
  }
  return out;
}

/** config/test-min.yaml with `overrides` merged in (e.g. `{ broker: { maxMessageSizeBytes: 60000 } }`). */
export function testMinYaml(overrides: Tree = {}): string {
  return stringify(merge(parse(TEST_MIN_YAML) as Tree, overrides));
}

/** Polling with a deadline: the harness's waitFor. */
export const until = waitFor;

/** Resolves with what `p` gives, or rejects after `ms`. */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`${what} took over ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Entries that occur more than once, as "value×count". */
export function dupes(xs: readonly string[]): string[] {
  const count = new Map<string, number>();
  for (const x of xs) count.set(x, (count.get(x) ?? 0) + 1);
  return [...count].filter(([, n]) => n > 1).map(([x, n]) => `${x}×${n}`);
}

export const text = (b: Uint8Array): string => new TextDecoder().decode(b);

let seq = 0;
/** A name unique within this test process (topics and groups must not collide between tests). */
export function uniq(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${seq++}`;
}

interface Closable {
  shutdown(): Promise<void>;
}

export interface EnvOptions {
  /** Merged into config/test-min.yaml. */
  config?: Tree;
  /** Store directory to reuse (a restart on the same data); the caller removes it. */
  dir?: string;
}

export class Env implements AsyncDisposable {
  readonly srv: RunningBinary;
  readonly wire: RemotingClient;
  readonly #clients: { what: string; c: Closable }[] = [];

  private constructor(srv: RunningBinary, wire: RemotingClient) {
    this.srv = srv;
    this.wire = wire;
  }

  /** A standalone rocketbun on ephemeral ports with test-min settings (plus `opts.config`). */
  static async start(opts: EnvOptions = {}): Promise<Env> {
    const srv = await startRocketbun({ role: "standalone", configYaml: testMinYaml(opts.config), ...(opts.dir ? { dir: opts.dir } : {}) });
    return new Env(srv, newClient());
  }

  get namesrv(): string {
    return this.srv.namesrvAddr;
  }

  get brokerAddr(): string {
    return `127.0.0.1:${this.srv.ports.broker}`;
  }

  track<T extends Closable>(what: string, c: T): T {
    this.#clients.push({ what, c });
    return c;
  }

  /** A started producer, shut down with the environment. */
  async producer(o: Partial<ProducerOptions> = {}): Promise<Producer> {
    const p = this.track("producer", new Producer({ namesrv: this.namesrv, group: uniq("PG"), ...o }));
    await p.start();
    return p;
  }

  /** A push consumer (not started), shut down with the environment. */
  push(o: Partial<PushConsumerOptions> & { group: string }): PushConsumer {
    return this.track(`push consumer ${o.group}`, new PushConsumer({ namesrv: this.namesrv, rebalanceIntervalMs: 1000, ...o }));
  }

  /** A pull consumer (not started), shut down with the environment. */
  pull(o: Partial<PullConsumerOptions> & { group: string }): PullConsumer {
    return this.track(`pull consumer ${o.group}`, new PullConsumer({ namesrv: this.namesrv, ...o }));
  }

  async #invoke(code: number, ext: Record<string, string>, body?: Uint8Array) {
    return this.wire.invoke(this.brokerAddr, createRequest(code, ext, body), 5000);
  }

  /** UPDATE_AND_CREATE_TOPIC on the broker, then waits until the name server routes it with `queues` queues. */
  async createTopic(topic: string, queues = 4, perm = 6): Promise<void> {
    const res = await this.#invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, createTopicExt(topic, queues, perm));
    if (res.code !== ResponseCode.SUCCESS) throw new Error(`UPDATE_AND_CREATE_TOPIC ${topic}: ${res.code} ${res.remark ?? ""}`);
    await this.waitRoute(topic, queues);
  }

  /** Waits until the name server routes `topic` with `queues` read and write queues. */
  async waitRoute(topic: string, queues: number): Promise<void> {
    await until(
      async () => {
        const r = await this.wire.invoke(this.namesrv, routeRequest(topic), 3000);
        if (r.code !== ResponseCode.SUCCESS) return false;
        const route = bodyJson<{ queueDatas: { readQueueNums: number; writeQueueNums: number }[] }>(r);
        return route.queueDatas.some((q) => q.readQueueNums === queues && q.writeQueueNums === queues);
      },
      15_000,
      () => `the name server to route ${topic} with ${queues} queues${this.diag()}`,
    );
  }

  async maxOffset(topic: string, queueId: number): Promise<number> {
    const r = await this.#invoke(RequestCode.GET_MAX_OFFSET, { topic, queueId: String(queueId) });
    return Number(r.extFields?.offset ?? -1);
  }

  async minOffset(topic: string, queueId: number): Promise<number> {
    const r = await this.#invoke(RequestCode.GET_MIN_OFFSET, { topic, queueId: String(queueId) });
    return Number(r.extFields?.offset ?? -1);
  }

  /** The group's committed offset of a queue on the broker (-1 when it has none). */
  async committedOffset(group: string, topic: string, queueId: number): Promise<number> {
    const r = await this.#invoke(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: group, topic, queueId: String(queueId) });
    return r.code === ResponseCode.SUCCESS ? Number(r.extFields?.offset ?? -1) : -1;
  }

  async consumerIds(group: string): Promise<string[]> {
    const r = await this.#invoke(RequestCode.GET_CONSUMER_LIST_BY_GROUP, { consumerGroup: group });
    return r.code === ResponseCode.SUCCESS && r.body ? bodyJson<{ consumerIdList: string[] }>(r).consumerIdList : [];
  }

  /** Every stored record of one queue from `offset` on, exactly as the broker returns them (raw PULL_MESSAGE). */
  async rawRecords(topic: string, queueId: number, offset = 0): Promise<DecodedRecord[]> {
    const out: DecodedRecord[] = [];
    for (let i = 0; i < 1000; i++) {
      const r = await this.#invoke(RequestCode.PULL_MESSAGE, {
        consumerGroup: "client_tests_inspector",
        topic,
        queueId: String(queueId),
        queueOffset: String(offset),
        maxMsgNums: "32",
        sysFlag: "4",
        commitOffset: "0",
        suspendTimeoutMillis: "0",
        subscription: "*",
        subVersion: "0",
        expressionType: "TAG",
      });
      if (r.code !== ResponseCode.SUCCESS || !r.body) break;
      for (let pos = 0; pos < r.body.length;) {
        const rec = decodeRecordAt(r.body, pos, { checkCrc: true });
        if (!("totalSize" in rec)) throw new Error(`undecodable record at ${pos} of a pull of ${topic}:${queueId}: ${JSON.stringify(rec)}`);
        out.push({ ...rec, body: rec.body.slice() });
        pos += rec.totalSize;
      }
      const next = Number(r.extFields?.nextBeginOffset ?? offset);
      if (next <= offset) break;
      offset = next;
    }
    return out;
  }

  /** The broker's stderr tail, for failure messages. */
  diag(): string {
    return `\nbroker stderr (tail):\n${this.srv.output.err().slice(-3000)}`;
  }

  /** Shuts down the tracked clients (bounded), then stops the binary. */
  async shutdownClients(): Promise<string[]> {
    const problems: string[] = [];
    for (const { what, c } of this.#clients.splice(0).reverse()) {
      await within(c.shutdown(), 10_000, `shutting down ${what}`).catch((e) => problems.push(String(e)));
    }
    return problems;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    const problems = await this.shutdownClients();
    await this.wire.close().catch(() => {});
    await this.srv[Symbol.asyncDispose]();
    if (problems.length > 0) throw new Error(`cleanup problems:\n${problems.join("\n")}`);
  }
}

/** A temp dir removed on disposal (for a store reused across restarts). */
export function tempDirScope(prefix: string): { dir: string } & Disposable {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
}
