/**
 * RebalanceLockManager: which client of a consumer group holds each message queue, for orderly
 * consumers (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ, docs/PROTOCOL.md §3.11; Java
 * `broker/client/rebalance/RebalanceLockManager.java`).
 *
 *   group → MessageQueue → { clientId, lastUpdate }
 *
 * Rules (as Java):
 *   - a queue is held by at most one client; a lock request by the holder renews it;
 *   - a lock not renewed for more than `lockMaxLiveMs` (60 s) has expired: the next client to
 *     ask gets it;
 *   - unlock releases only the caller's own locks.
 *
 * Unlike Java, a refused client is remembered on the lock (`waiting`), and `unlockBatch` returns
 * the clients that were refused a queue it released, so the broker can tell them to rebalance now
 * (NOTIFY_CONSUMER_IDS_CHANGED). A 4.x orderly consumer that joins a group is refused its queues
 * while their old owner still holds them, and asks again only at its next rebalance, 20 s later;
 * whether the old owner's unlock lands before the newcomer's second, notified rebalance is a race
 * that Apache RocketMQ loses about as often as it wins (seen on 4.9.7: hand-over after 0.05 s or
 * after 20 s). Waiters live only as long as the lock they wait on.
 *
 * Bounded memory, unlike Java (which keeps expired entries forever): expired entries are dropped
 * from a group whenever that group is locked, and from every group at most once per
 * `lockMaxLiveMs`; a group with no entries is dropped.
 */
import type { MessageQueue } from "../protocol/route.ts";

/** Java `rocketmq.broker.rebalance.lockMaxLiveTime`. */
export const REBALANCE_LOCK_MAX_LIVE_MS = 60_000;

interface LockEntry {
  clientId: string;
  lastUpdate: number;
  /** Clients refused this queue while it was held (bounded by the group's members). */
  waiting?: Set<string>;
}

/** One string per distinct (topic, brokerName, queueId); JSON keeps it unambiguous. */
function mqKey(mq: MessageQueue): string {
  return JSON.stringify([mq.topic, mq.brokerName, mq.queueId]);
}

export class RebalanceLockManager {
  readonly #now: () => number;
  readonly #maxLiveMs: number;
  readonly #groups = new Map<string, Map<string, LockEntry>>();
  #lastSweep: number;

  constructor(opts: { now?: () => number; lockMaxLiveMs?: number } = {}) {
    this.#now = opts.now ?? Date.now;
    this.#maxLiveMs = opts.lockMaxLiveMs ?? REBALANCE_LOCK_MAX_LIVE_MS;
    this.#lastSweep = this.#now();
  }

  #expired(e: LockEntry, now: number): boolean {
    return now - e.lastUpdate > this.#maxLiveMs;
  }

  /**
   * Locks (or renews) each queue for `clientId` unless another client holds an unexpired lock.
   * Returns the queues this client holds afterwards, in request order, without duplicates.
   */
  tryLockBatch(group: string, mqs: readonly MessageQueue[], clientId: string): MessageQueue[] {
    const now = this.#now();
    this.#sweep(now);
    let table = this.#groups.get(group);
    if (!table) {
      table = new Map();
      this.#groups.set(group, table);
    }
    for (const [k, e] of table) if (this.#expired(e, now)) table.delete(k);
    const held: MessageQueue[] = [];
    const seen = new Set<string>();
    for (const mq of mqs) {
      const key = mqKey(mq);
      if (seen.has(key)) continue;
      seen.add(key);
      const e = table.get(key);
      if (e === undefined || e.clientId === clientId) {
        if (e === undefined) table.set(key, { clientId, lastUpdate: now });
        else e.lastUpdate = now;
        held.push(mq);
      } else {
        (e.waiting ??= new Set()).add(clientId);
      }
    }
    if (table.size === 0) this.#groups.delete(group);
    return held;
  }

  /**
   * Releases the queues `clientId` holds among `mqs`; other clients' locks stay. Returns the
   * clients that were refused one of the released queues (never `clientId` itself).
   */
  unlockBatch(group: string, mqs: readonly MessageQueue[], clientId: string): Set<string> {
    const waiters = new Set<string>();
    const table = this.#groups.get(group);
    if (!table) return waiters;
    for (const mq of mqs) {
      const key = mqKey(mq);
      const e = table.get(key);
      if (e?.clientId !== clientId) continue;
      table.delete(key);
      for (const w of e.waiting ?? []) if (w !== clientId) waiters.add(w);
    }
    if (table.size === 0) this.#groups.delete(group);
    return waiters;
  }

  /** The client holding an unexpired lock on `mq`, if any. */
  holder(group: string, mq: MessageQueue): string | undefined {
    const e = this.#groups.get(group)?.get(mqKey(mq));
    return e && !this.#expired(e, this.#now()) ? e.clientId : undefined;
  }

  /** Number of lock entries kept (expired ones included until swept). */
  get size(): number {
    let n = 0;
    for (const t of this.#groups.values()) n += t.size;
    return n;
  }

  #sweep(now: number): void {
    if (now - this.#lastSweep < this.#maxLiveMs) return;
    this.#lastSweep = now;
    for (const [group, table] of this.#groups) {
      for (const [k, e] of table) if (this.#expired(e, now)) table.delete(k);
      if (table.size === 0) this.#groups.delete(group);
    }
  }
}
