/**
 * The standard workloads against a running master, driven by the project's own client library
 * (src/client Producer and PushConsumer) from this process. Each returns one result object shaped
 * like the peers' JSON lines (peer, workload, msgs_per_s, latency percentiles in ms, CPU, flushes).
 *
 *   W1   durable publish: 1 KiB random bodies, 32 sends in flight each awaiting SEND_OK, 8 queues
 *   W1s  W1 against a SYNC_FLUSH master (the ack means fsync'd, group commit)
 *   W2   drain W1's backlog from the first offset with a push consumer group (pulls of up to 256)
 *   W3   5,000 msgs/s for 10 s with a live push consumer, send time in the body: end-to-end latency
 *   W4   W1 with 128-byte bodies
 *   W5   batch sends of 32 × 1 KiB, 32 batches in flight
 *   W6   1,250 topics × 8 queues = 10,000 queues: send across all of them, then consume them all
 *
 * The POP workloads (W2p, W3p) are in bench/lib/pop.ts.
 */
import { Producer, PushConsumer, type Message } from "../../src/client/index.ts";
import type { AclCredentials } from "../../src/protocol/acl-signature.ts";
import type { Admin } from "./cluster.ts";
import {
  closedLoop,
  cpuPerMsg,
  diff,
  diskUsage,
  E2E,
  now,
  paced,
  randomBodies,
  round,
  rssBytes,
  rssDetail,
  sleep,
  snap,
  stats,
  type WorkloadParams,
} from "./measure.ts";

export type Result = Record<string, unknown> & { peer: string; workload: string };

export interface Ctx {
  namesrv: string;
  /** `--acl`: every client signs with these. */
  credentials?: AclCredentials;
  admin: Admin;
  brokerPid: number;
  dataDir: string;
  p: WorkloadParams;
  log: (msg: string) => void;
}

/** Queues of every workload's topic (W6's are `w6Queues`). */
export const QUEUES = 8;

/** The client options that make a client sign (`--acl` runs), or none. */
function signed(ctx: Ctx): { credentials?: AclCredentials } {
  return ctx.credentials ? { credentials: ctx.credentials } : {};
}

/**
 * The start of a timed window: collect this (client) process's garbage first, then snapshot the
 * broker. Without it the previous workload's 200 MB body pool is still uncollected when the next
 * one starts, and its collection lands inside that window: W2 right after W1 measured 98–143k
 * msgs/s with ~100k page faults in the client, 163–178k with ~35k after a collection (same
 * machine, alternating runs). The peers' harness does not do this; the README says so, and
 * `--no-collect` measures without it.
 */
export function startWindow(ctx: Ctx): ReturnType<typeof snap> {
  if (ctx.p.collectBetween) Bun.gc(true);
  return snap(ctx.brokerPid, ctx.dataDir);
}

export function result(workload: string, fields: Record<string, unknown>): Result {
  return { peer: "rocketbun", workload, ts: new Date().toISOString(), client_runtime: `bun ${Bun.version}`, ...fields };
}

export async function newProducer(ctx: Ctx, group: string): Promise<Producer> {
  const p = new Producer({ namesrv: ctx.namesrv, group, sendTimeoutMs: 10_000, maxInFlight: 4096, ...signed(ctx) });
  await p.start();
  return p;
}

export async function createTopics(ctx: Ctx, topics: string[], queues = QUEUES): Promise<void> {
  for (const t of topics) await ctx.admin.createTopic(t, queues);
  await ctx.admin.waitRoutes(topics);
}

/** Un-timed sends so the client's and the broker's JIT are warm (the peers publish 5,000 first too). */
export async function warmup(ctx: Ctx, producer: Producer, topic: string): Promise<void> {
  await createTopics(ctx, [topic]);
  const bodies = randomBodies(ctx.p.warmup, ctx.p.body);
  await closedLoop(bodies, ctx.p.inflight, (b) => producer.send({ topic, body: b }));
}

function publishFigures(n: number, size: number, r: { elapsedMs: number; lat: Float64Array }) {
  const s = stats(r.lat);
  return {
    msgs: n,
    body_bytes: size,
    msgs_per_s: Math.round(n / (r.elapsedMs / 1000)),
    mib_per_s: round((n * size) / (r.elapsedMs / 1000) / 1048576, 1),
    ack_p50_ms: s.p50_ms,
    ack_p99_ms: s.p99_ms,
    ack_p999_ms: s.p999_ms,
    ack_max_ms: s.max_ms,
    ack_mean_ms: s.mean_ms,
  };
}

/** W1 / W1s / W4: closed-loop publish of `n` bodies of `size` bytes to a fresh 8-queue topic. */
export async function publishWorkload(ctx: Ctx, producer: Producer, workload: string, topic: string, size: number): Promise<Result> {
  await createTopics(ctx, [topic]);
  const bodies = randomBodies(ctx.p.msgs, size);
  let failures = 0;
  let notOk = 0;
  const a = startWindow(ctx);
  const r = await closedLoop(bodies, ctx.p.inflight, async (b) => {
    try {
      const res = await producer.send({ topic, body: b });
      if (res.status !== "SEND_OK") notOk++;
    } catch {
      failures++;
    }
  });
  const b = snap(ctx.brokerPid, ctx.dataDir);
  const stored = await ctx.admin.stored(topic, QUEUES);
  const d = diff(a, b);
  const extra: Record<string, unknown> = {};
  if (workload === "W1" || workload === "W1s") {
    extra.server_rss_bytes = rssBytes(ctx.brokerPid);
    const rd = rssDetail(ctx.brokerPid, ctx.dataDir);
    extra.server_rss_anon_bytes = rd?.anon;
    extra.server_rss_file_bytes = rd?.file;
    extra.server_rss_store_bytes = rd?.store;
    const du = diskUsage(ctx.dataDir);
    extra.data_dir_bytes = du?.apparent;
    extra.data_dir_alloc_bytes = du?.allocated;
  }
  return result(workload, {
    ...publishFigures(ctx.p.msgs, size, r),
    inflight: ctx.p.inflight,
    ...d,
    ...cpuPerMsg(d, ctx.p.msgs),
    failures,
    not_send_ok: notOk,
    stored_msgs: stored,
    ...extra,
  });
}

/** Counts distinct (topic, queue, offset) deliveries; resolves when `total` distinct ones arrived. */
class Drain {
  count = 0;
  dups = 0;
  bytes = 0;
  readonly #seen = new Map<string, Uint8Array>();
  #done?: () => void;
  constructor(
    readonly total: number,
    readonly perQueue: number,
  ) {}
  on(topic: string, queueId: number, offset: number, bodyLen: number): void {
    const k = `${topic}\u0000${queueId}`;
    let s = this.#seen.get(k);
    if (!s) this.#seen.set(k, (s = new Uint8Array(this.perQueue)));
    if (offset >= s.length) {
      const bigger = new Uint8Array(Math.max(offset + 1, s.length * 2));
      bigger.set(s);
      this.#seen.set(k, (s = bigger));
    }
    if (s[offset]) {
      this.dups++;
      return;
    }
    s[offset] = 1;
    this.bytes += bodyLen;
    if (++this.count === this.total) this.#done?.();
  }
  wait(timeoutMs: number): Promise<boolean> {
    if (this.count >= this.total) return Promise.resolve(true);
    return new Promise((res) => {
      const timer = setTimeout(() => res(false), timeoutMs);
      this.#done = () => {
        clearTimeout(timer);
        res(true);
      };
    });
  }
}

/** Consumes `total` messages of `topics` from the first offset with a new push consumer group. */
async function drain(ctx: Ctx, group: string, topics: string[], total: number, perQueue: number, timeoutMs: number) {
  const d = new Drain(total, perQueue);
  const consumer = new PushConsumer({
    namesrv: ctx.namesrv,
    ...signed(ctx),
    group,
    fromWhere: "first",
    pullBatchSize: ctx.p.batch,
    consumeThreads: 64,
    pullThresholdForQueue: Math.max(1000, ctx.p.batch * 4),
  });
  for (const t of topics) consumer.subscribe(t, "*", (m) => d.on(m.topic, m.queueId, m.queueOffset, m.body.length));
  const a = startWindow(ctx);
  const t0 = now();
  // The deadline covers start() too: with thousands of queues the rebalance itself takes long.
  let startMs = NaN;
  const started = consumer.start().then(() => (startMs = now() - t0));
  const gotAll = d.wait(timeoutMs);
  await Promise.race([started, gotAll]);
  const complete = await gotAll;
  const b = snap(ctx.brokerPid, ctx.dataDir);
  if (!complete) ctx.log(`${group}: ${d.count} of ${total} messages within ${timeoutMs / 1000} s`);
  const stopped = await Promise.race([started.then(() => consumer.shutdown()).then(() => true), sleep(30_000).then(() => false)]);
  if (!stopped) ctx.log(`${group}: consumer shutdown did not finish within 30 s; going on`);
  return { d, complete, startMs, diff: diff(a, b) };
}

/** W2: drain W1's backlog from the first offset. */
export async function drainWorkload(ctx: Ctx, workload: string, topic: string, expect: number): Promise<Result> {
  const r = await drain(ctx, `bench-${workload.toLowerCase()}`, [topic], expect, Math.ceil(expect / QUEUES) + 16, 600_000);
  return result(workload, {
    msgs: r.d.count,
    body_bytes: ctx.p.body,
    batch: ctx.p.batch,
    mode: `push consumer, pulls of up to ${ctx.p.batch} per queue (${QUEUES} queues), offsets committed by the client`,
    msgs_per_s: Math.round(r.d.count / r.diff.elapsed_s),
    mib_per_s: round(r.d.bytes / r.diff.elapsed_s / 1048576, 1),
    ...r.diff,
    ...cpuPerMsg(r.diff, Math.max(1, r.d.count)),
    consumer_start_ms: round(r.startMs, 1),
    complete: r.complete,
    dups: r.d.dups,
  });
}

/** W3: a paced producer and a live push consumer in this process; end-to-end latency from the stamp in the body. */
export async function e2eWorkload(ctx: Ctx, producer: Producer, topic: string): Promise<Result> {
  await createTopics(ctx, [topic]);
  const total = ctx.p.e2eRate * ctx.p.e2eSecs;
  const e2e = new E2E(total);
  const consumer = new PushConsumer({ namesrv: ctx.namesrv, group: "bench-w3", fromWhere: "first", consumeThreads: 64, ...signed(ctx) });
  consumer.subscribe(topic, "*", (m) => e2e.onBody(m.body));
  await consumer.start();
  await sleep(500); // every queue's first long-polling pull is parked on the broker
  // Un-timed warm-up at the same rate (1 s, as W1's 5,000 warm-up sends): the broker's
  // long-polling wake path has not run before W3, and its first ~0.5 s under JIT tiering would
  // otherwise be most of the p99 (the peers' servers are native code). Reported in the notes.
  const warm = randomBodies(Math.min(ctx.p.e2eRate, total), ctx.p.body);
  await paced(warm, ctx.p.e2eRate, (b) => {
    b.writeUInt32LE(E2E.WARMUP_SEQ, 8);
    return producer.send({ topic, body: b });
  });
  await e2e.waitWarmup(warm.length, 10_000);
  const bodies = randomBodies(total, ctx.p.body);
  const a = startWindow(ctx);
  const p = await paced(bodies, ctx.p.e2eRate, (b) => producer.send({ topic, body: b }));
  const complete = await e2e.wait(10_000);
  const b = snap(ctx.brokerPid, ctx.dataDir);
  await consumer.shutdown();
  const s = stats(e2e.lat, e2e.count);
  const ack = stats(p.ackLat);
  const d = diff(a, b);
  return result("W3", {
    target_rate: ctx.p.e2eRate,
    secs: ctx.p.e2eSecs,
    sent: p.sent,
    received: e2e.count,
    complete,
    dups: e2e.dups,
    failures: p.failures,
    achieved_rate: Math.round(p.sent / (p.elapsedMs / 1000)),
    e2e_p50_ms: s.p50_ms,
    e2e_p99_ms: s.p99_ms,
    e2e_p999_ms: s.p999_ms,
    e2e_max_ms: s.max_ms,
    e2e_mean_ms: s.mean_ms,
    pub_ack_p50_ms: ack.p50_ms,
    pub_ack_p99_ms: ack.p99_ms,
    pub_max_outstanding: p.maxOutstanding,
    ...d,
    ...cpuPerMsg(d, Math.max(1, p.sent)),
  });
}

/** W5: batch sends (SEND_BATCH_MESSAGE) of `sendBatch` × 1 KiB, `inflight` batches in flight. */
export async function batchWorkload(ctx: Ctx, producer: Producer, topic: string): Promise<Result> {
  await createTopics(ctx, [topic]);
  const per = ctx.p.sendBatch;
  const nBatches = Math.ceil(ctx.p.msgs / per);
  const bodies = randomBodies(nBatches * per, ctx.p.body);
  const batches: Message[][] = [];
  for (let i = 0; i < nBatches; i++) batches.push(bodies.slice(i * per, (i + 1) * per).map((body) => ({ topic, body })));
  let failures = 0;
  const a = startWindow(ctx);
  const r = await closedLoop(batches, ctx.p.inflight, async (batch) => {
    try {
      await producer.sendBatch(batch);
    } catch {
      failures++;
    }
  });
  const b = snap(ctx.brokerPid, ctx.dataDir);
  const n = nBatches * per;
  const s = stats(r.lat);
  const d = diff(a, b);
  return result("W5", {
    msgs: n,
    body_bytes: ctx.p.body,
    batch: per,
    batches: nBatches,
    inflight_batches: ctx.p.inflight,
    msgs_per_s: Math.round(n / (r.elapsedMs / 1000)),
    mib_per_s: round((n * ctx.p.body) / (r.elapsedMs / 1000) / 1048576, 1),
    ack_p50_ms: s.p50_ms,
    ack_p99_ms: s.p99_ms,
    ack_p999_ms: s.p999_ms,
    ack_max_ms: s.max_ms,
    ack_mean_ms: s.mean_ms,
    ...d,
    ...cpuPerMsg(d, n),
    failures,
    stored_msgs: await ctx.admin.stored(topic, QUEUES),
  });
}

/**
 * W6: `w6Topics` × `w6Queues` queues. Creating the topics and one un-timed send per topic (so the
 * producer holds every route) come first; then `msgs` sends spread evenly over every queue (a
 * queue selector picks them in turn), then one push consumer group drains every queue.
 */
export async function manyQueuesWorkload(ctx: Ctx, producer: Producer): Promise<Result[]> {
  const T = ctx.p.w6Topics;
  const Q = ctx.p.w6Queues;
  const topics = Array.from({ length: T }, (_, i) => `w6-${String(i).padStart(5, "0")}`);
  const tc = now();
  for (const t of topics) await ctx.admin.createTopic(t, Q);
  await ctx.admin.waitRoutes(topics);
  const createMs = now() - tc;
  const rssBefore = rssBytes(ctx.brokerPid);
  // First send to every queue (creates its ConsumeQueue file; the producer learns every route): measured apart.
  const one = randomBodies(1, ctx.p.body)[0]!;
  const firstItems = Array.from({ length: T * Q }, (_, i) => i);
  const fa = startWindow(ctx);
  const first = await closedLoop(firstItems, ctx.p.inflight, (i) =>
    producer.send({ topic: topics[i % T]!, body: one }, { selector: (qs) => qs.find((x) => x.queueId === Math.floor(i / T) % Q) ?? qs[0]! }),
  );
  const fd = diff(fa, snap(ctx.brokerPid, ctx.dataDir));
  const firstResult = result("W6-first", {
    topics: T,
    queues: T * Q,
    mode: "the first message to each queue (the broker creates its ConsumeQueue file), 32 in flight",
    ...publishFigures(T * Q, ctx.p.body, first),
    ...fd,
    ...cpuPerMsg(fd, T * Q),
  });
  ctx.log(`W6 first send to each of ${T * Q} queues: ${firstResult.msgs_per_s} msgs/s`);
  const bodies = randomBodies(ctx.p.msgs, ctx.p.body);
  let failures = 0;
  const a = startWindow(ctx);
  const r = await closedLoop(
    bodies,
    ctx.p.inflight,
    async (b, i) => {
      const q = Math.floor(i / T) % Q;
      try {
        await producer.send({ topic: topics[i % T]!, body: b }, { selector: (qs) => qs.find((x) => x.queueId === q) ?? qs[0]! });
      } catch {
        failures++;
      }
    },
    ctx.p.w6MaxSecs * 1000,
  );
  const b = snap(ctx.brokerPid, ctx.dataDir);
  const sd = diff(a, b);
  const sent = r.done;
  const send = result("W6-send", {
    topics: T,
    queues: T * Q,
    ...publishFigures(sent, ctx.p.body, r),
    planned: ctx.p.msgs,
    stopped_early: sent < ctx.p.msgs ? `stopped after ${ctx.p.w6MaxSecs} s` : false,
    inflight: ctx.p.inflight,
    ...sd,
    ...cpuPerMsg(sd, Math.max(1, sent)),
    failures,
    topic_create_ms: Math.round(createMs),
    server_rss_before_bytes: rssBefore,
    server_rss_bytes: rssBytes(ctx.brokerPid),
  });
  ctx.log(`W6 send: ${send.msgs_per_s} msgs/s; draining ${T * Q} queues`);
  const total = sent + T * Q;
  const c = await drain(ctx, "bench-w6", topics, total, Math.ceil(total / (T * Q)) + 16, 2 * ctx.p.w6MaxSecs * 1000);
  const consume = result("W6-consume", {
    topics: T,
    queues: T * Q,
    msgs: c.d.count,
    expected: total,
    body_bytes: ctx.p.body,
    batch: ctx.p.batch,
    mode: `one push consumer subscribed to ${T} topics (${T * Q} queues), from the first offset; the time includes start() (rebalance of every queue)`,
    msgs_per_s: Math.round(c.d.count / c.diff.elapsed_s),
    mib_per_s: round(c.d.bytes / c.diff.elapsed_s / 1048576, 1),
    ...c.diff,
    ...cpuPerMsg(c.diff, Math.max(1, c.d.count)),
    consumer_start_ms: round(c.startMs, 1),
    complete: c.complete,
    dups: c.d.dups,
    server_rss_bytes: rssBytes(ctx.brokerPid),
  });
  return [firstResult, send, consume];
}
