/**
 * The in-flight table of POP consumption: every checkpoint (the messages one pop took from one
 * queue) whose messages are not all acked and whose revive time has not come, rebuilt from the
 * revive log at start (./pop-service.ts) and kept current as checkpoints and acks are written.
 *
 * A checkpoint is matched by topic@group@queueId@startOffset@popTime (its handle's fields), as
 * Java's revive service matches acks to checkpoints. Its messages are bits of `acked`; it leaves
 * the table when every bit is set (nothing to revive) or when the revive service took it (due).
 *
 * Progress per revive queue (what the revive group's offset may be committed to): the smallest
 * revive-log offset of a checkpoint still in the table; every record below it is resolved.
 *
 * Invariants: `open` = the number of clear bits of `acked` among `diffs.length`; a checkpoint is
 * in `#byKey` iff it is in its revive queue's set; the per-group counts are the sums of `open`.
 */
import { assert } from "../../common/assert.ts";
import { MinHeap } from "../../common/min-heap.ts";

export interface CheckPoint {
  topic: string;
  group: string;
  queueId: number;
  startOffset: number;
  popTime: number;
  invisibleTime: number;
  /** Each message's queue offset minus startOffset, in order (at most 32). */
  diffs: number[];
  reviveQid: number;
  /** The checkpoint's offset in its revive queue. */
  reviveOffset: number;
}

export interface LiveCheckPoint extends CheckPoint {
  key: string;
  reviveTime: number;
  /** Bit i set: message i acked. */
  acked: number;
  open: number;
  /** Taken by the revive service (due): acks no longer count. */
  taken: boolean;
}

export class InflightTable {
  readonly #byKey = new Map<string, LiveCheckPoint>();
  readonly #byRevive = new Map<number, Set<LiveCheckPoint>>();
  readonly #heap = new MinHeap<LiveCheckPoint>((a, b) => a.reviveTime < b.reviveTime);
  readonly #open = new Map<string, number>();

  get size(): number {
    return this.#byKey.size;
  }

  /** Adds a checkpoint (from a pop, or read back from the log); false if it is there already. */
  add(ck: CheckPoint): boolean {
    assert(ck.diffs.length > 0 && ck.diffs.length <= 32, "a checkpoint holds {} messages", ck.diffs.length);
    const key = ckKey(ck.topic, ck.group, ck.queueId, ck.startOffset, ck.popTime);
    if (this.#byKey.has(key)) return false;
    const live: LiveCheckPoint = { ...ck, key, reviveTime: ck.popTime + ck.invisibleTime, acked: 0, open: ck.diffs.length, taken: false };
    this.#byKey.set(key, live);
    let set = this.#byRevive.get(ck.reviveQid);
    if (!set) this.#byRevive.set(ck.reviveQid, (set = new Set()));
    set.add(live);
    this.#count(live, live.open);
    this.#heap.push(live);
    return true;
  }

  /** Acks `offsets` of the checkpoint a handle names; the messages newly acked (0: none was in flight). */
  ack(topic: string, group: string, queueId: number, startOffset: number, popTime: number, offsets: readonly number[]): number {
    const live = this.#byKey.get(ckKey(topic, group, queueId, startOffset, popTime));
    if (!live || live.taken) return 0;
    let n = 0;
    for (const o of offsets) {
      const i = live.diffs.indexOf(o - startOffset);
      if (i < 0 || (live.acked & (1 << i)) !== 0) continue;
      live.acked |= 1 << i;
      live.open--;
      n++;
    }
    this.#count(live, -n);
    assert(live.open >= 0, "checkpoint {} has {} open messages", live.key, live.open);
    if (live.open === 0) this.#remove(live);
    return n;
  }

  /** Is this message of that checkpoint still in flight (neither acked nor revived)? */
  isInFlight(topic: string, group: string, queueId: number, startOffset: number, popTime: number, offset: number): boolean {
    const live = this.#byKey.get(ckKey(topic, group, queueId, startOffset, popTime));
    if (!live || live.taken) return false;
    const i = live.diffs.indexOf(offset - startOffset);
    return i >= 0 && (live.acked & (1 << i)) === 0;
  }

  /** Checkpoints whose revive time has come, taken out of reach of acks; then `done` or `putBack`. */
  takeDue(now: number, max: number): LiveCheckPoint[] {
    const out: LiveCheckPoint[] = [];
    while (out.length < max && (this.#heap.peek()?.reviveTime ?? Infinity) <= now) {
      const live = this.#heap.pop()!;
      if (this.#byKey.get(live.key) !== live) continue; // fully acked meanwhile
      live.taken = true;
      out.push(live);
    }
    return out;
  }

  /** A taken checkpoint was revived (its open messages are in the retry topic): it leaves. */
  done(live: LiveCheckPoint): void {
    assert(live.taken, "checkpoint {} finished without being taken", live.key);
    this.#remove(live);
  }

  /** A taken checkpoint could not be revived now: it comes due again at `retryAt`. */
  putBack(live: LiveCheckPoint, retryAt: number): void {
    assert(live.taken && this.#byKey.has(live.key), "checkpoint {} put back without being taken", live.key);
    live.taken = false;
    live.reviveTime = retryAt;
    this.#heap.push(live);
  }

  /** The smallest revive-log offset still in the table for `reviveQid`, or undefined when none is. */
  progress(reviveQid: number): number | undefined {
    let min: number | undefined;
    for (const live of this.#byRevive.get(reviveQid) ?? []) if (min === undefined || live.reviveOffset < min) min = live.reviveOffset;
    return min;
  }

  /** Messages in flight for topic@group (acks and revives not yet written). */
  inflight(topic: string, group: string): number {
    return this.#open.get(`${topic}@${group}`) ?? 0;
  }

  /** Every checkpoint still in flight (the dashboard, consume stats). */
  *entries(): Iterable<Readonly<LiveCheckPoint>> {
    for (const live of this.#byKey.values()) if (!live.taken) yield live;
  }

  clear(): void {
    this.#byKey.clear();
    this.#byRevive.clear();
    this.#heap.drain();
    this.#open.clear();
  }

  #remove(live: LiveCheckPoint): void {
    if (!this.#byKey.delete(live.key)) return;
    this.#byRevive.get(live.reviveQid)?.delete(live);
    this.#count(live, -live.open);
    live.open = 0;
  }

  #count(live: CheckPoint, delta: number): void {
    if (delta === 0) return;
    const k = `${live.topic}@${live.group}`;
    const n = (this.#open.get(k) ?? 0) + delta;
    assert(n >= 0, "{} messages in flight for {}", n, k);
    if (n === 0) this.#open.delete(k);
    else this.#open.set(k, n);
  }
}

export function ckKey(topic: string, group: string, queueId: number, startOffset: number, popTime: number): string {
  return `${topic}@${group}@${queueId}@${startOffset}@${popTime}`;
}
