/**
 * Long polling of pops (RocketMQ 5.x's PopLongPollingService): a POP_MESSAGE or NOTIFICATION that
 * found nothing is parked until a message arrives that it could take — on its topic (one queue, or
 * any queue for queueId −1) or on its group's POP retry topic — or until its poll time ends; then
 * it runs again. Each arrival wakes one parked request per group (the one whose time ends first),
 * as Java does: one message is enough for one pop, and the pop that finds more wakes the next
 * (`wakeNext`). The store's arrival listener is the only caller of `arriving`, so every writer —
 * a send, a revive into the retry topic, a delayed delivery — wakes pops without a call of its own.
 *
 * Parked requests are bounded in total and per key (popPollingSize, maxPopPollingSize); a request
 * whose connection closes is dropped, never run.
 */
import { assert } from "../../common/assert.ts";
import type { Clock, TimerHandle } from "../../common/clock.ts";
import { MinHeap } from "../../common/min-heap.ts";
import type { RemotingConnection } from "../../remoting/index.ts";

export interface ParkedPop {
  conn: RemotingConnection;
  topic: string;
  /** The group's POP retry topic: its arrivals wake the request too. */
  retryTopic: string;
  group: string;
  /** −1: any queue of the topic. */
  queueId: number;
  /** Tag-code filter of the request's subscription (undefined = all). */
  matches: ((tagsCode: number) => boolean) | undefined;
  deadline: number;
  run: () => void;
  drop: () => void;
}

interface Entry extends ParkedPop {
  settled: boolean;
}

export interface PopPollingOptions {
  clock: Clock;
  /** Parked requests per topic@group@queueId (popPollingSize). */
  maxPerKey: number;
  /** Parked requests in all (maxPopPollingSize). */
  maxTotal: number;
  checkIntervalMs: number;
}

export type ParkResult = "parked" | "full";

export class PopLongPolling {
  readonly #o: PopPollingOptions;
  /** By topic (and retry topic): every entry that an arrival there may wake. */
  readonly #byTopic = new Map<string, Set<Entry>>();
  readonly #perKey = new Map<string, number>();
  readonly #watched = new WeakSet<RemotingConnection>();
  /** Every parked entry by deadline (settled ones are skipped when they surface): the timeout scan is O(due). */
  readonly #byDeadline = new MinHeap<Entry>((a, b) => a.deadline < b.deadline);
  #total = 0;
  #timer: TimerHandle | null = null;

  constructor(o: PopPollingOptions) {
    this.#o = o;
  }

  start(): void {
    this.#timer ??= this.#o.clock.setInterval(() => this.checkTimeouts(), this.#o.checkIntervalMs);
  }

  /** Answers everything parked (each re-runs and answers as it can), so no client waits for nothing. */
  stop(): void {
    if (this.#timer) this.#o.clock.clearInterval(this.#timer);
    this.#timer = null;
    for (const e of this.#byDeadline.drain()) this.#settle(e, true);
  }

  get parkedCount(): number {
    return this.#total;
  }

  /** Parked requests of topic@group@queueId (POLLING_INFO). */
  pollingNum(topic: string, group: string, queueId: number): number {
    return this.#perKey.get(key(topic, group, queueId)) ?? 0;
  }

  park(p: ParkedPop): ParkResult {
    const k = key(p.topic, p.group, p.queueId);
    const n = this.#perKey.get(k) ?? 0;
    if (this.#total >= this.#o.maxTotal || n >= this.#o.maxPerKey) return "full";
    if (!this.#watched.has(p.conn)) {
      this.#watched.add(p.conn);
      p.conn.onClose((c) => this.#dropConnection(c));
    }
    const e: Entry = { ...p, settled: false };
    this.#perKey.set(k, n + 1);
    this.#total++;
    this.#byDeadline.push(e);
    for (const t of [p.topic, p.retryTopic]) {
      let set = this.#byTopic.get(t);
      if (!set) this.#byTopic.set(t, (set = new Set()));
      set.add(e);
    }
    return "parked";
  }

  /** A message reached queue `queueId` of `topic`: wake, per group, the request it satisfies that ends first. */
  arriving(topic: string, queueId: number, tagsCode: number): void {
    if (this.#total === 0) return;
    const set = this.#byTopic.get(topic);
    if (!set) return;
    const first = new Map<string, Entry>();
    for (const e of set) {
      const retry = topic === e.retryTopic;
      if (!retry && e.queueId >= 0 && e.queueId !== queueId) continue;
      if (e.matches && !e.matches(tagsCode)) continue;
      const best = first.get(e.group);
      if (!best || e.deadline < best.deadline) first.set(e.group, e);
    }
    for (const e of first.values()) this.#settle(e, true);
  }

  /** A pop found more than it could take: wake one more request parked on the same queue and group. */
  wakeNext(topic: string, group: string, queueId: number): void {
    const set = this.#byTopic.get(topic);
    if (!set) return;
    for (const e of set) {
      if (e.group === group && e.topic === topic && (e.queueId < 0 || e.queueId === queueId)) {
        this.#settle(e, true);
        return;
      }
    }
  }

  checkTimeouts(now = this.#o.clock.now()): void {
    const h = this.#byDeadline;
    for (let e = h.peek(); e !== undefined && (e.settled || e.deadline <= now); e = h.peek()) this.#settle(h.pop()!, true);
  }

  /** Unparks once: `run` re-runs the request, else (its connection closed) `drop`. */
  #settle(e: Entry, run: boolean): void {
    if (e.settled) return;
    e.settled = true;
    for (const t of [e.topic, e.retryTopic]) {
      const set = this.#byTopic.get(t);
      set?.delete(e);
      if (set?.size === 0) this.#byTopic.delete(t);
    }
    const k = key(e.topic, e.group, e.queueId);
    const n = (this.#perKey.get(k) ?? 0) - 1;
    assert(n >= 0 && this.#total >= 1, "a parked pop settled from key {} counted {}", k, n + 1);
    if (n === 0) this.#perKey.delete(k);
    else this.#perKey.set(k, n);
    this.#total--;
    if (run) e.run();
    else e.drop();
  }

  #dropConnection(conn: RemotingConnection): void {
    for (const e of this.#byDeadline.values()) if (e.conn === conn) this.#settle(e, false);
  }
}

function key(topic: string, group: string, queueId: number): string {
  return `${topic}@${group}@${queueId}`;
}
