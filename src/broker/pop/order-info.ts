/**
 * FIFO (orderly) pops (RocketMQ 5.3's ConsumerOrderInfoManager; docs/PROTOCOL.md §3.21): per
 * topic@group and queue, the batch an orderly pop handed out last. The queue is blocked while any
 * of that batch's messages is neither acked nor past its invisible time; the group's offset stays at
 * the first un-acked message and moves only by orderly acks; a batch popped again after it expired
 * counts each message's deliveries (its reconsumeTimes for the client).
 *
 * Kept in `config/consumerOrderInfo.json` (Java's file and JSON names), written every 10 s when
 * changed and at a clean stop, as Java does: after a crash a batch popped in the last seconds may be
 * handed out again before its invisible time ends (at least once; the offset itself is durable).
 *
 *   {"table":{"T@G":{"0":{"popTime":…,"i":invisibleTime,"o":[first, d1, d2…],"ot":{offset:ms},
 *                          "oc":{offset:count},"l":lastConsumeTimestamp,"cm":commitOffsetBit,"a":attemptId}}}}
 *
 * `o` holds the first offset, then each other's distance from it. Invariants: `cm` has a bit per
 * entry of `o` at most; an acked message's bit stays set until the next batch replaces the entry.
 */
import { assert } from "../../common/assert.ts";
import { isInvalid, type Invalid } from "../../common/invalid.ts";
import { configPath, isJsonObject, loadConfigFile, persistConfigFileAsync, persistConfigFile, type Decoded } from "../metadata-file.ts";

export const ORDER_INFO_FILE = "consumerOrderInfo.json";

interface OrderInfo {
  popTime: number;
  invisibleTime: number;
  /** Absolute offsets of the batch, in order. */
  offsets: number[];
  /** An offset's own next-visible time (CHANGE_MESSAGE_INVISIBLETIME), else popTime + invisibleTime. */
  nextVisible: Map<number, number>;
  /** Deliveries before this one, per offset. */
  consumed: Map<number, number>;
  lastConsume: number;
  /** Bit i: offsets[i] acked. */
  acked: number;
  attemptId: string;
}

/** What an orderly ack found: the offset to commit, or −1 (not in the batch) / −2 (a stale handle). */
export type OrderAck = number;

export class ConsumerOrderInfoManager {
  readonly #path: string;
  readonly #table = new Map<string, Map<number, OrderInfo>>();
  #dirty = false;

  constructor(storeDir: string) {
    this.#path = configPath(storeDir, ORDER_INFO_FILE);
  }

  load(): string[] {
    const loaded = loadConfigFile(this.#path, decodeOrderTable);
    if (loaded.value) for (const [k, v] of loaded.value) this.#table.set(k, v);
    return loaded.problems;
  }

  /** Is the queue blocked by its last batch at `now` (an un-acked message not yet visible again)? */
  isBlocked(topic: string, group: string, queueId: number, now: number, attemptId: string): boolean {
    const o = this.#get(topic, group, queueId);
    if (!o || o.offsets.length === 0) return false;
    if (attemptId !== "" && o.attemptId === attemptId) return false;
    for (let i = 0; i < o.offsets.length; i++) {
      if ((o.acked & (1 << i)) !== 0) continue;
      const visibleAt = o.nextVisible.get(o.offsets[i]!) ?? o.popTime + o.invisibleTime;
      if (now < visibleAt) return true;
    }
    return false;
  }

  /** A batch was popped: it replaces the queue's entry; the deliveries before it per offset (for orderCountInfo). */
  popped(topic: string, group: string, queueId: number, offsets: readonly number[], popTime: number, invisibleTime: number, attemptId: string): number[] {
    assert(offsets.length > 0 && offsets.length <= 32, "an orderly batch of {} messages", offsets.length);
    const key = `${topic}@${group}`;
    const prev = this.#get(topic, group, queueId);
    const consumed = new Map<number, number>();
    for (const off of offsets) {
      const before = prev?.consumed.get(off) ?? (prev?.offsets.includes(off) ? 0 : undefined);
      if (before === undefined) continue;
      // Popped again: one more delivery (the same attempt, a proxy's retry of one receive, counts once).
      consumed.set(off, prev!.attemptId !== "" && prev!.attemptId === attemptId ? before : before + 1);
    }
    let byQueue = this.#table.get(key);
    if (!byQueue) this.#table.set(key, (byQueue = new Map()));
    byQueue.set(queueId, { popTime, invisibleTime, offsets: [...offsets], nextVisible: new Map(), consumed, lastConsume: popTime, acked: 0, attemptId });
    this.#dirty = true;
    return offsets.map((o) => consumed.get(o) ?? 0);
  }

  /** An orderly ack of `offset` from the pop at `popTime`: the offset to commit now, −1 or −2 (RocketMQ's commitAndNext). */
  ack(topic: string, group: string, queueId: number, offset: number, popTime: number): OrderAck {
    const o = this.#get(topic, group, queueId);
    if (!o) return offset + 1;
    if (o.offsets.length === 0) return -1;
    if (o.popTime !== popTime) return -2;
    const i = o.offsets.indexOf(offset);
    if (i < 0) return -1;
    o.acked |= 1 << i;
    this.#dirty = true;
    for (let j = 0; j < o.offsets.length; j++) if ((o.acked & (1 << j)) === 0) return o.offsets[j]!;
    return o.offsets.at(-1)! + 1;
  }

  /** CHANGE_MESSAGE_INVISIBLETIME of an orderly handle: the message is visible again at `visibleAt` (ignored for a stale handle). */
  changeInvisible(topic: string, group: string, queueId: number, offset: number, popTime: number, visibleAt: number): void {
    const o = this.#get(topic, group, queueId);
    if (!o || o.popTime !== popTime || !o.offsets.includes(offset)) return;
    o.nextVisible.set(offset, visibleAt);
    this.#dirty = true;
  }

  /** Messages of orderly batches handed out and not yet acked, for topic@group. */
  inflight(topic: string, group: string, now: number): number {
    let n = 0;
    for (const o of this.#table.get(`${topic}@${group}`)?.values() ?? []) {
      for (let i = 0; i < o.offsets.length; i++) {
        const visibleAt = o.nextVisible.get(o.offsets[i]!) ?? o.popTime + o.invisibleTime;
        if ((o.acked & (1 << i)) === 0 && now < visibleAt) n++;
      }
    }
    return n;
  }

  async persistIfDirty(): Promise<void> {
    if (!this.#dirty) return;
    this.#dirty = false;
    await persistConfigFileAsync(this.#path, this.#encode());
  }

  persist(): void {
    this.#dirty = false;
    persistConfigFile(this.#path, this.#encode());
  }

  #get(topic: string, group: string, queueId: number): OrderInfo | undefined {
    return this.#table.get(`${topic}@${group}`)?.get(queueId);
  }

  #encode(): object {
    const table: Record<string, Record<string, object>> = {};
    for (const [key, byQueue] of this.#table) {
      const out: Record<string, object> = {};
      for (const [qid, o] of byQueue) {
        const first = o.offsets[0] ?? 0;
        out[String(qid)] = {
          popTime: o.popTime,
          i: o.invisibleTime,
          o: o.offsets.map((x, j) => (j === 0 ? x : x - first)),
          ot: Object.fromEntries(o.nextVisible),
          oc: Object.fromEntries(o.consumed),
          l: o.lastConsume,
          cm: o.acked,
          a: o.attemptId,
        };
      }
      table[key] = out;
    }
    return { table };
  }
}

function decodeOrderTable(raw: unknown): Decoded<Map<string, Map<number, OrderInfo>>> | Invalid {
  if (!isJsonObject(raw) || !isJsonObject(raw.table)) return { invalid: "expected {\"table\":{…}}" };
  const out = new Map<string, Map<number, OrderInfo>>();
  const problems: string[] = [];
  for (const [key, queues] of Object.entries(raw.table)) {
    if (!isJsonObject(queues)) {
      problems.push(`${key}: expected an object`);
      continue;
    }
    const byQueue = new Map<number, OrderInfo>();
    for (const [qid, v] of Object.entries(queues)) {
      const o = decodeOrderInfo(v);
      if (isInvalid(o) || !/^\d+$/.test(qid)) problems.push(`${key}.${qid}: ${isInvalid(o) ? o.invalid : "not a queue id"}`);
      else byQueue.set(Number(qid), o);
    }
    out.set(key, byQueue);
  }
  return { value: out, problems };
}

function decodeOrderInfo(v: unknown): OrderInfo | Invalid {
  if (!isJsonObject(v)) return { invalid: "expected an object" };
  const nums = (x: unknown) => Array.isArray(x) && x.every((n) => Number.isSafeInteger(n));
  const map = (x: unknown) =>
    new Map(
      Object.entries(isJsonObject(x) ? x : {})
        .filter(([, n]) => Number.isSafeInteger(n))
        .map(([k, n]) => [Number(k), n as number]),
    );
  if (!Number.isSafeInteger(v.popTime) || !nums(v.o) || (v.o as number[]).length > 32) return { invalid: "popTime or o missing" };
  const rel = v.o as number[];
  return {
    popTime: v.popTime as number,
    invisibleTime: Number.isSafeInteger(v.i) ? (v.i as number) : 0,
    offsets: rel.map((x, j) => (j === 0 ? x : rel[0]! + x)),
    nextVisible: map(v.ot),
    consumed: map(v.oc),
    lastConsume: Number.isSafeInteger(v.l) ? (v.l as number) : 0,
    acked: Number.isSafeInteger(v.cm) ? (v.cm as number) : 0,
    attemptId: typeof v.a === "string" ? v.a : "",
  };
}
