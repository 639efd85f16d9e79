/**
 * W2p and W3p: RocketMQ 5.x POP consumption (docs/PROTOCOL.md §3.21), driven the same way against
 * RocketBun and Apache RocketMQ 5.3.3 by a hand-built POP consumer on the project's remoting client
 * (src/remoting), sending what rocketmq-client 5.3.3's DefaultMQPushConsumer sends once its group
 * is in POP mode (client rebalance off):
 *
 *   POP_MESSAGE (200050)  queueId −1 (every queue), maxMsgNums 32, invisibleTime 60 s,
 *                         pollTime 15 s, bornTime now, initMode 0 (from the first offset),
 *                         expType TAG, exp "*", order false, bname; timeout pollTime + 10 s
 *   ACK_MESSAGE (200051)  one per message, all of a batch in flight together (the 5.3.3 push
 *                         consumer never batch-acks; the gRPC proxy does), timeout 3 s
 *
 * Receipt handles are built as the client builds them (MQClientAPIImpl.processPopResponse) from the
 * answer's startOffsetInfo, popTime, invisibleTime and reviveQid, or taken from POP_CK for a
 * message of the POP retry topic. Reactions as the client's: 210/19 pop again at once, 209 after
 * 3 s, anything else after 3 s. Each poller pops again as soon as an answer came, with at most one
 * batch of acks in flight beside that pop (≤ 64 un-acked, under the client's 96 of flow control).
 * Before consuming, each workload sets its (topic, group) to POP with SET_MESSAGE_REQUEST_MODE, as
 * `mqadmin setConsumeMode` does; direct pops do not need it, a 5.3.3 push consumer does.
 *
 *   W2p  drain a backlog of `msgs` bodies of `body` bytes (W2's) in an 8-queue topic with
 *        POP_POLLERS pollers: messages acked per second, broker CPU per message. Un-timed first:
 *        `warmup` messages of another topic popped and acked the same way (both brokers' JIT).
 *   W3p  W3's producer (`e2eRate` msgs/s for `e2eSecs` s after 1 s of warm-up) and POP_POLLERS
 *        long-polling pollers: latency from the send time stamped in the body to the pop answer.
 */
import { decodeMessages, type MessageExt } from "../../src/client/message.ts";
import type { Producer } from "../../src/client/index.ts";
import { scope } from "../../src/common/log.ts";
import { decodeReceiptHandle, encodeReceiptHandle, realTopicOf, retryMarker } from "../../src/protocol/pop.ts";
import { createRequest, RemotingClient, REMOTING_CLIENT_DEFAULTS, RequestCode, ResponseCode, ResponseCode5x, type RemotingCommand } from "../../src/remoting/index.ts";
import { closedLoop, cpuPerMsg, diff, E2E, now, paced, randomBodies, round, sleep, snap, stats } from "./measure.ts";
import { createTopics, newProducer, QUEUES, result, startWindow, type Ctx, type Result } from "./workloads.ts";

/** Concurrent pops of one consumer process (each awaiting its answer). */
export const POP_POLLERS = 4;
const MAX_MSG_NUMS = 32;
const INVISIBLE_MS = 60_000;
/** The 5.3.3 push consumer's long-polling time. */
const POLL_MS = 15_000;
const ACK_TIMEOUT_MS = 3_000;
/** The 5.3.3 client's pause after POLLING_FULL or an error answer. */
const RETRY_PAUSE_MS = 3_000;

/** One popped message and what acking it takes. */
interface Popped {
  msg: MessageExt;
  extraInfo: string;
  /** The real topic: the POP retry topic for a retried message. */
  ackTopic: string;
  queueId: number;
  offset: number;
  /** From the POP retry topic (POP_CK already set by the broker). */
  retried: boolean;
}

/** A POP consumer's requests to one broker over one connection, as rocketmq-client 5.3.3 builds them. */
export class PopClient {
  readonly #c = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("bench-pop") });
  constructor(
    readonly broker: string,
    readonly brokerName: string,
    readonly topic: string,
    readonly group: string,
  ) {}

  async pop(pollMs: number): Promise<{ code: number; popped: Popped[] }> {
    const req = createRequest(RequestCode.POP_MESSAGE, {
      consumerGroup: this.group,
      topic: this.topic,
      queueId: "-1",
      maxMsgNums: String(MAX_MSG_NUMS),
      invisibleTime: String(INVISIBLE_MS),
      pollTime: String(pollMs),
      bornTime: String(Date.now()),
      initMode: "0",
      expType: "TAG",
      exp: "*",
      order: "false",
      bname: this.brokerName,
    });
    const res = await this.#c.invoke(this.broker, req, pollMs + 10_000);
    return { code: res.code, popped: res.code === ResponseCode.SUCCESS ? this.#handles(res) : [] };
  }

  /** Each message's receipt handle, as MQClientAPIImpl.processPopResponse builds it. */
  #handles(res: RemotingCommand): Popped[] {
    const ext = res.extFields ?? {};
    const starts = new Map<string, string>();
    for (const e of (ext.startOffsetInfo ?? "").split(";")) {
      const [r, q, o] = e.split(" ");
      if (o !== undefined) starts.set(`${r}@${q}`, o);
    }
    const head = { popTime: Number(ext.popTime), invisibleTime: Number(ext.invisibleTime), reviveQid: Number(ext.reviveQid) };
    return (res.body ? decodeMessages(res.body, this.brokerName) : []).map((msg) => {
      const ck = msg.properties.POP_CK;
      if (ck !== undefined) {
        const h = decodeReceiptHandle(ck);
        if ("invalid" in h) throw new Error(`POP_CK ${ck}: ${h.invalid}`);
        const ackTopic = realTopicOf(h.retry, this.topic, this.group);
        return { msg, extraInfo: ck, ackTopic, queueId: h.queueId, offset: h.queueOffset, retried: true };
      }
      const retry = retryMarker(msg.topic);
      const start = starts.get(`${retry}@${msg.queueId}`);
      if (start === undefined) throw new Error(`pop answer without startOffsetInfo for ${retry}@${msg.queueId}: ${JSON.stringify(ext)}`);
      const extraInfo = encodeReceiptHandle({ ckQueueOffset: Number(start), ...head, retry, brokerName: this.brokerName, queueId: msg.queueId, queueOffset: msg.queueOffset });
      return { msg, extraInfo, ackTopic: this.topic, queueId: msg.queueId, offset: msg.queueOffset, retried: false };
    });
  }

  async ack(p: Popped): Promise<number> {
    const req = createRequest(RequestCode.ACK_MESSAGE, {
      consumerGroup: this.group,
      topic: p.ackTopic,
      queueId: String(p.queueId),
      offset: String(p.offset),
      extraInfo: p.extraInfo,
      bname: this.brokerName,
    });
    return (await this.#c.invoke(this.broker, req, ACK_TIMEOUT_MS)).code;
  }

  close(): Promise<void> {
    return this.#c.close();
  }
}

/** What the pollers saw: distinct messages acked (by queue and offset), pops, errors. */
export class PopTally {
  acked = 0;
  popped = 0;
  dupPops = 0;
  retried = 0;
  ackFailures = 0;
  acksInFlight = 0;
  pops = 0;
  emptyPops = 0;
  fullPops = 0;
  popErrors: string[] = [];
  /** Round trip of each pop that brought messages, ms. */
  readonly popLat: number[] = [];
  readonly #seen = new Map<number, Uint8Array>();
  #target = Infinity;
  #done?: () => void;

  onPopped(ps: Popped[]): void {
    for (const p of ps) {
      this.popped++;
      if (p.retried) this.retried++;
      else if (this.#mark(p.queueId, p.offset, 1) !== 0) this.dupPops++;
    }
  }

  onAck(p: Popped, code: number): void {
    if (code !== ResponseCode.SUCCESS) this.ackFailures++;
    else if (!p.retried && this.#mark(p.queueId, p.offset, 2) !== 2) {
      this.acked++;
      if (this.acked >= this.#target) this.#done?.();
    }
  }

  /** Sets `bit` for (queue, offset); returns the bits it had. */
  #mark(queueId: number, offset: number, bit: number): number {
    let s = this.#seen.get(queueId);
    if (!s || offset >= s.length) {
      const bigger = new Uint8Array(Math.max(offset + 1, (s?.length ?? 0) * 2, 1024));
      if (s) bigger.set(s);
      this.#seen.set(queueId, (s = bigger));
    }
    const had = s[offset]!;
    s[offset] = had | bit;
    return had & bit;
  }

  /** Resolves true once `n` distinct messages were acked, false after `timeoutMs`. */
  waitAcked(n: number, timeoutMs: number): Promise<boolean> {
    if (this.acked >= n) return Promise.resolve(true);
    this.#target = n;
    return new Promise((res) => {
      const timer = setTimeout(() => res(false), timeoutMs);
      this.#done = () => {
        clearTimeout(timer);
        res(true);
      };
    });
  }
}

/** One poller: pop, hand the messages over, ack them while the next pop runs (one batch of acks at a time). */
async function poller(c: PopClient, t: PopTally, running: () => boolean, onPopped: (ps: Popped[]) => void): Promise<void> {
  let acks: Promise<unknown> = Promise.resolve();
  while (running()) {
    const t0 = now();
    let r: { code: number; popped: Popped[] };
    try {
      r = await c.pop(POLL_MS);
    } catch (e) {
      if (!running()) break;
      t.popErrors.push(e instanceof Error ? e.message : String(e));
      await sleep(RETRY_PAUSE_MS);
      continue;
    }
    t.pops++;
    if (r.code === ResponseCode.SUCCESS) {
      t.popLat.push(now() - t0);
      onPopped(r.popped);
      t.onPopped(r.popped);
      await acks;
      t.acksInFlight += r.popped.length;
      const ackOne = (p: Popped) =>
        c.ack(p).then(
          (code) => t.onAck(p, code),
          () => t.ackFailures++,
        );
      acks = Promise.all(r.popped.map(ackOne)).finally(() => (t.acksInFlight -= r.popped.length));
    } else if (r.code === ResponseCode5x.POLLING_TIMEOUT || r.code === ResponseCode.PULL_NOT_FOUND) t.emptyPops++;
    else {
      if (r.code === ResponseCode5x.POLLING_FULL) t.fullPops++;
      else t.popErrors.push(`code ${r.code}`);
      await sleep(RETRY_PAUSE_MS);
    }
  }
  await acks;
}

/** POP_POLLERS pollers on one client; stop() lets the acks in flight finish, then closes the connection (parked pops end with it). */
function startPollers(c: PopClient, onPopped: (ps: Popped[]) => void = () => {}): { tally: PopTally; stop: () => Promise<void> } {
  const tally = new PopTally();
  let on = true;
  const all = Array.from({ length: POP_POLLERS }, () => poller(c, tally, () => on, onPopped));
  const stop = async () => {
    on = false;
    const deadline = now() + 10_000;
    while (tally.acksInFlight > 0 && now() < deadline) await sleep(5);
    await c.close();
    await Promise.all(all);
  };
  return { tally, stop };
}

async function popClient(ctx: Ctx, topic: string, group: string): Promise<PopClient> {
  await ctx.admin.setConsumeMode(topic, group, "POP");
  return new PopClient(ctx.admin.broker, await ctx.admin.brokerName(topic), topic, group);
}

/**
 * `n` bodies of `size` bytes sent to `topic` (32 in flight); returns how many were stored, once the
 * broker's queues show them all: Apache builds its ConsumeQueue behind the acks (its reput), and
 * a drain timed from before that would wait for it.
 */
async function fillBacklog(ctx: Ctx, producer: Producer, topic: string, n: number, size: number): Promise<number> {
  const bodies = randomBodies(n, size);
  let ok = 0;
  await closedLoop(bodies, ctx.p.inflight, async (b) => {
    if ((await producer.send({ topic, body: b })).status === "SEND_OK") ok++;
  });
  const deadline = now() + 30_000;
  let stored = await ctx.admin.stored(topic, QUEUES);
  while (stored < ok && now() < deadline) {
    await sleep(20);
    stored = await ctx.admin.stored(topic, QUEUES);
  }
  if (stored < ok) ctx.log(`${topic}: ${stored} of ${ok} sends in the queues after 30 s`);
  return stored;
}

/** The pop figures every POP row carries. */
function popFigures(t: PopTally): Record<string, unknown> {
  const s = stats(Float64Array.from(t.popLat));
  return {
    pollers: POP_POLLERS,
    max_msg_nums: MAX_MSG_NUMS,
    pops: t.pops,
    empty_pops: t.emptyPops,
    full_pops: t.fullPops,
    msgs_per_pop: round(t.popped / Math.max(1, t.popLat.length), 1),
    pop_p50_ms: s.p50_ms,
    pop_p99_ms: s.p99_ms,
    pop_max_ms: s.max_ms,
    dups: t.dupPops,
    retried: t.retried,
    ack_failures: t.ackFailures,
    pop_errors: t.popErrors.length,
    ...(t.popErrors.length ? { first_pop_error: t.popErrors[0] } : {}),
  };
}

/** W2p: drain a backlog by pop + per-message ack. */
export async function popDrainWorkload(ctx: Ctx, producer: Producer): Promise<Result> {
  const topic = "w2p";
  await createTopics(ctx, [topic, `${topic}-warm`]);
  // Un-timed: the same pop + ack over a small backlog of its own, so both brokers' JIT is warm.
  const warmStored = await fillBacklog(ctx, producer, `${topic}-warm`, ctx.p.warmup, ctx.p.body);
  const warm = startPollers(await popClient(ctx, `${topic}-warm`, "bench-w2p-warm"));
  if (!(await warm.tally.waitAcked(warmStored, 120_000))) ctx.log(`W2p warm-up: ${warm.tally.acked} of ${warmStored} acked within 120 s`);
  await warm.stop();
  const stored = await fillBacklog(ctx, producer, topic, ctx.p.msgs, ctx.p.body);
  const c = await popClient(ctx, topic, "bench-w2p");
  const a = startWindow(ctx);
  const pollers = startPollers(c);
  const complete = await pollers.tally.waitAcked(stored, 600_000);
  const b = snap(ctx.brokerPid, ctx.dataDir);
  const acked = pollers.tally.acked;
  await pollers.stop();
  const t = pollers.tally;
  if (!complete) ctx.log(`W2p: ${acked} of ${stored} acked within 600 s`);
  const d = diff(a, b);
  return result("W2p", {
    msgs: acked,
    stored_msgs: stored,
    body_bytes: ctx.p.body,
    mode: `POP consumer: ${POP_POLLERS} pollers, pops of up to ${MAX_MSG_NUMS} from every queue (${QUEUES}), one ACK_MESSAGE per message`,
    msgs_per_s: Math.round(acked / d.elapsed_s),
    mib_per_s: round((acked * ctx.p.body) / d.elapsed_s / 1048576, 1),
    ...d,
    ...cpuPerMsg(d, Math.max(1, acked)),
    complete,
    ...popFigures(t),
  });
}

/**
 * W3p's tail, second by second of the timed window: how many messages took over SLOW_MS and the
 * slowest, so a report tells one stall (a burst in one second) from a tail spread over the run.
 */
class SlowTimeline {
  static readonly SLOW_MS = 10;
  readonly slow: number[] = [];
  readonly max: number[] = [];
  start = Infinity;
  on(body: Uint8Array): void {
    const t = now();
    if (t < this.start || body.byteLength < 12) return;
    const dv = new DataView(body.buffer, body.byteOffset, body.byteLength);
    if (dv.getUint32(8, true) === E2E.WARMUP_SEQ) return;
    const lat = t - dv.getFloat64(0, true);
    const s = Math.floor((t - this.start) / 1000);
    while (this.slow.length <= s) (this.slow.push(0), this.max.push(0));
    if (lat > SlowTimeline.SLOW_MS) this.slow[s]!++;
    if (lat > this.max[s]!) this.max[s] = round(lat, 1);
  }
}

/** W3p: W3's paced producer and long-polling POP pollers; latency from the body's send stamp to the pop answer. */
export async function popE2eWorkload(ctx: Ctx, producer: Producer): Promise<Result> {
  const topic = "w3p";
  await createTopics(ctx, [topic]);
  const total = ctx.p.e2eRate * ctx.p.e2eSecs;
  const e2e = new E2E(total);
  const slow = new SlowTimeline();
  const pollers = startPollers(await popClient(ctx, topic, "bench-w3p"), (ps) => {
    for (const p of ps) {
      e2e.onBody(p.msg.body);
      slow.on(p.msg.body);
    }
  });
  await sleep(500); // every poller's first pop is parked on the broker
  // Un-timed warm-up at the same rate, as W3's: the pop path's long-polling wake-up runs first here.
  const warm = randomBodies(Math.min(ctx.p.e2eRate, total), ctx.p.body);
  await paced(warm, ctx.p.e2eRate, (b) => {
    b.writeUInt32LE(E2E.WARMUP_SEQ, 8);
    return producer.send({ topic, body: b });
  });
  await e2e.waitWarmup(warm.length, 10_000);
  const bodies = randomBodies(total, ctx.p.body);
  const a = startWindow(ctx);
  slow.start = now();
  const p = await paced(bodies, ctx.p.e2eRate, (b) => producer.send({ topic, body: b }));
  const complete = await e2e.wait(10_000);
  const b = snap(ctx.brokerPid, ctx.dataDir);
  await pollers.stop();
  const s = stats(e2e.lat, e2e.count);
  const ack = stats(p.ackLat);
  const d = diff(a, b);
  return result("W3p", {
    target_rate: ctx.p.e2eRate,
    secs: ctx.p.e2eSecs,
    sent: p.sent,
    received: e2e.count,
    complete,
    failures: p.failures,
    achieved_rate: Math.round(p.sent / (p.elapsedMs / 1000)),
    e2e_p50_ms: s.p50_ms,
    e2e_p99_ms: s.p99_ms,
    e2e_p999_ms: s.p999_ms,
    e2e_max_ms: s.max_ms,
    e2e_mean_ms: s.mean_ms,
    pub_ack_p50_ms: ack.p50_ms,
    pub_ack_p99_ms: ack.p99_ms,
    mode: `POP consumer: ${POP_POLLERS} pollers, pollTime ${POLL_MS / 1000} s, pops of up to ${MAX_MSG_NUMS} from every queue, one ACK_MESSAGE per message`,
    ...d,
    ...cpuPerMsg(d, Math.max(1, p.sent)),
    ...popFigures(pollers.tally),
    e2e_dups: e2e.dups,
    e2e_over_10ms_per_s: slow.slow,
    e2e_max_per_s_ms: slow.max,
  });
}

/** The POP workloads, in the order they run (`--only` names them). */
export const POP_WORKLOADS = ["W2p", "W3p"];

/** The POP workloads `want` selects, on a fresh master (RocketBun's or Apache's), with a producer of their own. */
export async function popWorkloads(ctx: Ctx, want: (w: string) => boolean, producerGroup: string): Promise<Result[]> {
  const producer = await newProducer(ctx, producerGroup);
  const out: Result[] = [];
  try {
    if (want("W2p")) {
      const r = await popDrainWorkload(ctx, producer);
      out.push(r);
      ctx.log(`W2p: ${String(r.msgs_per_s)} msgs/s popped and acked (${String(r.msgs)}/${String(r.stored_msgs)}), broker ${String(r.server_cpu_us_per_msg)} µs/msg, pop p99 ${String(r.pop_p99_ms)} ms`);
    }
    if (want("W3p")) {
      const r = await popE2eWorkload(ctx, producer);
      out.push(r);
      ctx.log(`W3p: e2e p50/p99/max ${String(r.e2e_p50_ms)}/${String(r.e2e_p99_ms)}/${String(r.e2e_max_ms)} ms (${String(r.received)}/${String(r.sent)})`);
    }
  } finally {
    await producer.shutdown();
  }
  return out;
}
