/**
 * PullRequestHoldService: long polling. A pull that finds nothing new and carries the SUSPEND
 * flag is parked here until a message for its topic/queue arrives (then it is re-run at once)
 * or its hold time ends (then it is re-run and answers PULL_NOT_FOUND). Holds are capped at
 * `holdMaxMs` — well under ali-ons' 30 s pull timeout, after which it would close the whole
 * connection — and bounded in number per connection. A pull whose connection closes first is
 * never run: its `drop` is called instead, so that the request's answer (the processor's Promise,
 * which the request pipeline waits for) settles with no response.
 */
import { nowOf, systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import type { RemotingConnection } from "../remoting/index.ts";
import { assert } from "../common/assert.ts";

export interface HeldPull {
  conn: RemotingConnection;
  /** The queue offset the pull asked for: any message at or past it wakes the pull. */
  offset: number;
  deadline: number;
  /** Tag-code filter of the pull's subscription (undefined = all). */
  matches: ((tagsCode: number) => boolean) | undefined;
  run: () => void;
  /** Called instead of `run` when the connection closed before the pull was answered. */
  drop?: () => void;
}

/** A parked pull as kept here: `settled` once it was run or dropped (each is answered once). */
interface Parked extends HeldPull {
  settled: boolean;
}

export interface HoldOptions {
  holdMaxMs: number;
  checkIntervalMs: number;
  maxHeldPerConnection: number;
  now?: () => number;
  /** The timeout scan's timer and (unless `now` is given) the time; default the system clock. */
  clock?: Clock;
}

export class PullRequestHoldService {
  readonly #o: HoldOptions;
  readonly #now: () => number;
  readonly #held = new Map<string, Parked[]>();
  readonly #perConn = new Map<RemotingConnection, number>();
  /** Connections we already listen to for close (one listener each, however often they park). */
  readonly #watched = new WeakSet<RemotingConnection>();
  readonly #clock: Clock;
  #timer: TimerHandle | null = null;

  constructor(o: HoldOptions) {
    // A copy: setHoldMaxMs() changes it.
    this.#o = { ...o };
    this.#clock = o.clock ?? systemClock;
    this.#now = o.now ?? nowOf(this.#clock);
  }

  /** Config reload: pulls parked from now on are held at most this long (those parked keep their deadline). */
  setHoldMaxMs(ms: number): void {
    this.#o.holdMaxMs = ms;
  }

  start(): void {
    this.#timer ??= this.#clock.setInterval(() => this.checkTimeouts(), this.#o.checkIntervalMs);
  }

  stop(): void {
    if (this.#timer) this.#clock.clearInterval(this.#timer);
    this.#timer = null;
    // Answer everything still parked so no client waits for a reply that never comes.
    const all = [...this.#held.values()].flat();
    this.#held.clear();
    this.#perConn.clear();
    for (const h of all) settle(h);
  }

  /** Parks a pull; false when the connection already has too many parked (answer at once). */
  hold(topic: string, queueId: number, pull: Omit<HeldPull, "deadline">, suspendMs: number): boolean {
    const n = this.#perConn.get(pull.conn) ?? 0;
    if (n >= this.#o.maxHeldPerConnection) return false;
    if (!this.#watched.has(pull.conn)) {
      this.#watched.add(pull.conn);
      pull.conn.onClose((c) => this.#dropConnection(c));
    }
    this.#perConn.set(pull.conn, n + 1);
    const key = `${topic}@${queueId}`;
    let list = this.#held.get(key);
    if (!list) this.#held.set(key, (list = []));
    list.push({ ...pull, deadline: this.#now() + Math.min(suspendMs, this.#o.holdMaxMs), settled: false });
    return true;
  }

  get heldCount(): number {
    let n = 0;
    for (const l of this.#held.values()) n += l.length;
    return n;
  }

  /** A message was stored at `queueOffset` with `tagsCode`: wake the pulls it satisfies. */
  notifyMessageArriving(topic: string, queueId: number, queueOffset: number, tagsCode: number): void {
    // The store tells of every message: with nothing parked, no key is built (the send path's common case).
    if (this.#held.size === 0) return;
    const key = `${topic}@${queueId}`;
    const list = this.#held.get(key);
    if (!list) return;
    const wake: Parked[] = [];
    const keep: Parked[] = [];
    for (const h of list) {
      if (queueOffset >= h.offset && (!h.matches || h.matches(tagsCode))) wake.push(h);
      else keep.push(h);
    }
    if (wake.length === 0) return;
    if (keep.length === 0) this.#held.delete(key);
    else this.#held.set(key, keep);
    this.#release(wake);
  }

  checkTimeouts(): void {
    // Every parked pull is counted against its connection, and nothing else is (hold, #release
    // and #dropConnection change both together): the per-connection cap holds what it says.
    const counted = this.#countedPerConn();
    const held = this.heldCount;
    assert(counted === held, "{} pulls counted per connection, {} parked", counted, held);
    const now = this.#now();
    for (const [key, list] of this.#held) {
      const due = list.filter((h) => h.deadline <= now);
      if (due.length === 0) continue;
      const keep = list.filter((h) => h.deadline > now);
      if (keep.length === 0) this.#held.delete(key);
      else this.#held.set(key, keep);
      this.#release(due);
    }
  }

  #countedPerConn(): number {
    let n = 0;
    for (const c of this.#perConn.values()) n += c;
    return n;
  }

  #release(list: Parked[]): void {
    for (const h of list) {
      // A pull leaves #held only here or with its connection (#dropConnection, which forgets the
      // count too): one still parked was counted.
      const counted = this.#perConn.get(h.conn) ?? 0;
      assert(counted >= 1, "a parked pull released from a connection with {} counted", counted);
      const n = counted - 1;
      if (n <= 0) this.#perConn.delete(h.conn);
      else this.#perConn.set(h.conn, n);
      settle(h);
    }
  }

  #dropConnection(conn: RemotingConnection): void {
    this.#perConn.delete(conn);
    for (const [key, list] of this.#held) {
      const keep = list.filter((h) => h.conn !== conn);
      if (keep.length === list.length) continue;
      if (keep.length === 0) this.#held.delete(key);
      else this.#held.set(key, keep);
      for (const h of list) {
        if (h.conn !== conn) continue;
        markSettled(h);
        h.drop?.();
      }
    }
  }
}

/** A released pull: re-run, or dropped when its connection closed meanwhile. */
function settle(h: Parked): void {
  markSettled(h);
  if (h.conn.closed) h.drop?.();
  else h.run();
}

function markSettled(h: Parked): void {
  // Taken out of #held before it is settled, and never put back: a request is answered once (a
  // second run would send a second response to one opaque).
  assert(!h.settled, "a parked pull of offset {} settled twice", h.offset);
  h.settled = true;
}
