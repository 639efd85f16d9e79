import { describe, expect, test } from "bun:test";
import { RebalanceLockManager, REBALANCE_LOCK_MAX_LIVE_MS } from "./rebalance-lock.ts";

const q = (queueId: number, topic = "T") => ({ topic, brokerName: "b", queueId });

describe("RebalanceLockManager", () => {
  test("a queue is held by one client; the holder renews; others get only free queues", () => {
    let now = 1_000_000;
    const m = new RebalanceLockManager({ now: () => now });
    expect(m.tryLockBatch("G", [q(0), q(1)], "c1")).toEqual([q(0), q(1)]);
    expect(m.tryLockBatch("G", [q(0), q(1), q(2)], "c2")).toEqual([q(2)]);
    expect(m.tryLockBatch("G", [q(0), q(0)], "c1")).toEqual([q(0)]);
    expect(m.holder("G", q(1))).toBe("c1");
    // Another group is independent.
    expect(m.tryLockBatch("H", [q(0)], "c2")).toEqual([q(0)]);
    now += 1000;
    expect(m.holder("G", q(2))).toBe("c2");
  });

  test("a lock expires 60 s after its last renewal", () => {
    let now = 0;
    const m = new RebalanceLockManager({ now: () => now });
    m.tryLockBatch("G", [q(0), q(1)], "c1");
    now = REBALANCE_LOCK_MAX_LIVE_MS - 1;
    expect(m.tryLockBatch("G", [q(0)], "c1")).toEqual([q(0)]); // renews q0 only
    now = REBALANCE_LOCK_MAX_LIVE_MS;
    expect(m.tryLockBatch("G", [q(0), q(1)], "c2")).toEqual([]); // exactly 60 s: not yet expired
    now = REBALANCE_LOCK_MAX_LIVE_MS + 1;
    expect(m.tryLockBatch("G", [q(0), q(1)], "c2")).toEqual([q(1)]);
    expect(m.holder("G", q(0))).toBe("c1");
    now = 2 * REBALANCE_LOCK_MAX_LIVE_MS;
    expect(m.tryLockBatch("G", [q(0)], "c2")).toEqual([q(0)]);
  });

  test("unlock releases only the caller's locks; expired entries are dropped", () => {
    let now = 0;
    const m = new RebalanceLockManager({ now: () => now });
    m.tryLockBatch("G", [q(0)], "c1");
    m.tryLockBatch("G", [q(1)], "c2");
    m.unlockBatch("G", [q(0), q(1)], "c1");
    expect(m.holder("G", q(0))).toBeUndefined();
    expect(m.holder("G", q(1))).toBe("c2");
    m.unlockBatch("nope", [q(1)], "c2");
    expect(m.size).toBe(1);
    now = 10 * REBALANCE_LOCK_MAX_LIVE_MS;
    m.tryLockBatch("other", [q(5)], "c3");
    expect(m.size).toBe(1);
  });

  test("unlock names the clients that were refused a released queue, once; a lock that changes hands forgets them", () => {
    let now = 0;
    const m = new RebalanceLockManager({ now: () => now });
    m.tryLockBatch("G", [q(0), q(1), q(2)], "old");
    expect(m.tryLockBatch("G", [q(0), q(1)], "new")).toEqual([]);
    expect(m.tryLockBatch("G", [q(1)], "third")).toEqual([]);
    // The holder renewing keeps its waiters.
    expect(m.tryLockBatch("G", [q(0), q(1)], "old")).toEqual([q(0), q(1)]);
    // q2 had no waiter; a client unlocking what it does not hold releases nothing and names no one.
    expect([...m.unlockBatch("G", [q(2)], "old")]).toEqual([]);
    expect([...m.unlockBatch("G", [q(0), q(1)], "new")]).toEqual([]);
    expect([...m.unlockBatch("G", [q(0), q(1)], "old")].sort()).toEqual(["new", "third"]);
    expect(m.tryLockBatch("G", [q(0), q(1)], "new")).toEqual([q(0), q(1)]);
    expect([...m.unlockBatch("G", [q(0), q(1)], "new")]).toEqual([]);
    // An expired lock taken over by a waiter starts with no waiters.
    m.tryLockBatch("G", [q(3)], "a");
    m.tryLockBatch("G", [q(3)], "b");
    now = REBALANCE_LOCK_MAX_LIVE_MS + 1;
    expect(m.tryLockBatch("G", [q(3)], "b")).toEqual([q(3)]);
    expect([...m.unlockBatch("G", [q(3)], "b")]).toEqual([]);
  });
});
