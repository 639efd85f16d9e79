/** src/failover/election.ts: replicas of one broker group on a real etcd (cold start, failover to the best in-sync replica, fencing) and on the in-memory etcd in virtual time (partitions, unclean election, an etcd outage). */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { systemClock, type Clock } from "../../src/common/clock.ts";
import { scope } from "../../src/common/log.ts";
import { EtcdHttpClient, type EtcdKv } from "../../src/failover/etcd.ts";
import { Election, type MasterRecord, type MasterRole } from "../../src/failover/election.ts";
import { MemoryEtcd } from "../../src/failover/test-support.ts";
import { SimClock } from "../../src/common/sim-clock.ts";
import { waitFor } from "../harness/binary.ts";
import { etcdPresent, startEtcd, type RunningEtcd } from "../harness/etcd.ts";

const present = etcdPresent("election");
let etcd: RunningEtcd;
beforeAll(async () => {
  if (present) etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

const TTL = 2000;

/**
 * Replicas 0..n-1 of broker group `name`, each on its own `kv(id)` view of etcd; `offsets[id]` is
 * each one's confirmed offset (tests change it). Replica 0 starts as master. `events` records
 * elections ("0 master e1 @500") and follows ("1 follows 0 e1").
 */
function replicasOf(o: {
  name: string;
  offsets: number[];
  kv: (id: number) => EtcdKv;
  clock: Clock;
  allowUncleanElection?: boolean;
  /** Each one's configured master role (undefined: SLAVE); none by default. */
  roles?: (MasterRole | undefined)[];
}) {
  const events: string[] = [];
  const replicas = o.offsets.map((_, id) => {
    const listener = {
      becameMaster: (epoch: number, start: number, role: MasterRole | undefined) => events.push(`${id} master e${epoch} @${start}${role ? ` ${role}` : ""}`),
      follow: (m: MasterRecord) => events.push(`${id} follows ${m.brokerId} e${m.epoch}`),
    };
    const me = {
      cluster: "c",
      brokerName: o.name,
      brokerId: id,
      addr: `127.0.0.1:${1000 + id}`,
      haAddr: `127.0.0.1:${2000 + id}`,
      startsAsMaster: id === 0,
      ...(o.roles?.[id] ? { masterRole: o.roles[id] } : {}),
    };
    const opts = { leaseTtlMs: TTL, allowUncleanElection: o.allowUncleanElection ?? false, inSyncWithinMs: () => 1000 };
    return new Election(o.kv(id), o.clock, scope(`election-${id}`), me, opts, { confirmedOffset: () => o.offsets[id]! }, listener);
  });
  return { events, replicas };
}

/** A group on the real etcd, on real time. */
function group(name: string, offsets: number[]) {
  const kv = new EtcdHttpClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 500 });
  return { kv, prefix: `/rocketbun/c/${name}/`, ...replicasOf({ name, offsets, kv: () => kv, clock: systemClock }) };
}

test.skipIf(!present)(
  "cold start: the starting master wins epoch 1; when it dies the in-sync replica with the highest offset wins epoch 2",
  async () => {
    const offsets = [500, 480, 500];
    const g = group("g1", offsets);
    const [r0, r1, r2] = g.replicas as [Election, Election, Election];
    for (const r of g.replicas) r.start();
    try {
      await waitFor(
        () => r0.role === "master" && r1.master?.brokerId === 0 && r2.master?.brokerId === 0,
        10_000,
        () => g.events.join("; "),
      );
      expect(r0.epoch).toBe(1);
      expect(r0.writable()).toBe(true);
      expect(r1.writable()).toBe(false);
      // The master keeps the sync state set: replica 2 holds its whole log, replica 1 stays 20 bytes behind.
      await waitFor(async () => (await g.kv.get(`${g.prefix}syncStateSet`))?.value === JSON.stringify({ epoch: 1, members: [0, 2] }), 10_000);
      await r0.stop(false); // killed: its lease lapses by itself
      await waitFor(
        () => r2.role === "master",
        15_000,
        () => g.events.join("; "),
      );
      expect(r2.epoch).toBe(2);
      await waitFor(
        () => r1.master?.brokerId === 2,
        5000,
        () => g.events.join("; "),
      );
      expect(r1.role).toBe("replica");
      expect(JSON.parse((await g.kv.get(`${g.prefix}epoch`))!.value)).toEqual({ epoch: 2, brokerId: 2, startOffset: 500 });
      // Replica 1 is still 20 bytes behind: the new master's set is itself alone.
      expect(JSON.parse((await g.kv.get(`${g.prefix}syncStateSet`))!.value)).toEqual({ epoch: 2, members: [2] });
      // It catches up: the set grows back.
      offsets[1] = 500;
      await waitFor(async () => (await g.kv.get(`${g.prefix}syncStateSet`))?.value === JSON.stringify({ epoch: 2, members: [1, 2] }), 10_000);
      expect(g.events.filter((e) => e.includes("master e"))).toEqual(["0 master e1 @500", "2 master e2 @500"]);
    } finally {
      for (const r of g.replicas) await r.stop(true);
    }
  },
  40_000,
);

test.skipIf(!present)(
  "a replica outside the sync state set is not elected; the group waits without a master",
  async () => {
    const g = group("g2", [10, 5]);
    const [r0, r1] = g.replicas as [Election, Election];
    r0.start();
    r1.start();
    try {
      await waitFor(
        () => r0.role === "master" && r1.master?.brokerId === 0,
        10_000,
        () => g.events.join("; "),
      );
      await Bun.sleep(TTL);
      expect((await g.kv.get(`${g.prefix}syncStateSet`))?.value).toBe(JSON.stringify({ epoch: 1, members: [0] }));
      await r0.stop(false); // sync state set is {0}: replica 1 never caught up
      await Bun.sleep(TTL * 3);
      expect(r1.role).toBe("replica");
      expect(await g.kv.get(`${g.prefix}master`)).toBeUndefined();
    } finally {
      for (const r of g.replicas) await r.stop(true);
    }
  },
  40_000,
);

test.skipIf(!present)(
  "fencing: a master that cannot reach etcd stops being writable before its lease can lapse, and keeps its role",
  async () => {
    const g = group("g3", [1, 0]);
    const [r0, r1] = g.replicas as [Election, Election];
    r0.start();
    r1.start();
    try {
      await waitFor(
        () => r0.role === "master" && r0.writable(),
        10_000,
        () => g.events.join("; "),
      );
      etcd.pause();
      const pausedAt = Date.now();
      await waitFor(() => !r0.writable(), TTL + 1000, "the master to fence itself");
      expect(Date.now() - pausedAt).toBeLessThan(TTL); // before etcd could expire the lease
      expect(r0.role).toBe("master");
      expect(r1.role).toBe("replica");
    } finally {
      etcd.resume();
      for (const r of g.replicas) await r.stop(true);
    }
  },
  40_000,
);

/** A group on a MemoryEtcd, in virtual time. */
function simGroup(offsets: number[], allowUncleanElection = false, roles?: (MasterRole | undefined)[]) {
  const sim = new SimClock();
  const clock = sim.view();
  const etcd = new MemoryEtcd(clock);
  return { sim, clock, etcd, ...replicasOf({ name: "sim", offsets, kv: (id) => etcd.client(`r${id}`), clock, allowUncleanElection, ...(roles ? { roles } : {}) }) };
}

describe("the election on the in-memory etcd, in virtual time", () => {
  test("a replica configured SLAVE that wins takes the role the group's master had (recorded with each epoch)", async () => {
    const g = simGroup([100, 100], false, ["SYNC_MASTER", undefined]);
    const [r0, r1] = g.replicas as [Election, Election];
    r0.start();
    r1.start();
    expect(await g.sim.until(() => r0.role === "master" && r1.master?.brokerId === 0, 5000)).toBe(true);
    await g.sim.advance(3 * TTL);
    await r0.stop(false);
    expect(await g.sim.until(() => r1.role === "master", 6 * TTL)).toBe(true);
    expect(g.events.filter((e) => e.includes("master e"))).toEqual(["0 master e1 @100 SYNC_MASTER", "1 master e2 @100 SYNC_MASTER"]);
    expect(JSON.parse(g.etcd.peek("/rocketbun/c/sim/epoch")!.value)).toEqual({ epoch: 2, brokerId: 1, startOffset: 100, masterRole: "SYNC_MASTER" });
    for (const r of g.replicas) await r.stop(true);
  });

  test("allowUncleanElection: a replica outside the sync state set is elected when no in-sync one lives (and only then)", async () => {
    for (const unclean of [false, true]) {
      const g = simGroup([100, 40], unclean);
      const [r0, r1] = g.replicas as [Election, Election];
      r0.start();
      r1.start();
      expect(await g.sim.until(() => r0.role === "master" && r1.master?.brokerId === 0, 5000)).toBe(true);
      await g.sim.advance(3 * TTL); // replica 1 stays 60 bytes behind: the set is {0}
      expect(g.etcd.peek("/rocketbun/c/sim/syncStateSet")?.value).toBe(JSON.stringify({ epoch: 1, members: [0] }));
      await r0.stop(false); // dies
      const elected = await g.sim.until(() => r1.role === "master", 6 * TTL);
      expect(elected).toBe(unclean);
      if (unclean) expect(JSON.parse(g.etcd.peek("/rocketbun/c/sim/epoch")!.value)).toEqual({ epoch: 2, brokerId: 1, startOffset: 40 });
      else expect(g.etcd.peek("/rocketbun/c/sim/master")).toBeUndefined();
      for (const r of g.replicas) await r.stop(true);
    }
  });

  test("etcd down: every replica keeps its role, the master acknowledges nothing; etcd back: the lease resumes and it is writable again, no election", async () => {
    const g = simGroup([100, 100]);
    const [r0, r1] = g.replicas as [Election, Election];
    r0.start();
    r1.start();
    expect(await g.sim.until(() => r0.role === "master" && r0.writable() && r1.master?.brokerId === 0, 5000)).toBe(true);
    g.etcd.setDown(true);
    await g.sim.advance(5 * TTL);
    expect([r0.role, r0.writable(), r1.role]).toEqual(["master", false, "replica"]);
    g.etcd.setDown(false);
    expect(await g.sim.until(() => r0.writable(), TTL)).toBe(true);
    expect([r0.role, r0.epoch, r1.role]).toEqual(["master", 1, "replica"]);
    expect(g.events.filter((e) => e.includes("master e"))).toEqual(["0 master e1 @100"]);
    for (const r of g.replicas) await r.stop(true);
  });

  test("a partitioned master fences itself before its lease lapses; the in-sync replica is elected; healed, the old master steps down; one master per epoch", async () => {
    const { sim, clock, etcd, events, replicas } = simGroup([100, 100]);
    const [r0, r1] = replicas as [Election, Election];
    r0.start();
    r1.start();
    expect(await sim.until(() => r0.role === "master" && r1.master?.brokerId === 0, 5000)).toBe(true);
    expect(await sim.until(() => etcd.peek("/rocketbun/c/sim/syncStateSet")?.value === JSON.stringify({ epoch: 1, members: [0, 1] }), 5000)).toBe(
      true,
    );
    etcd.partition("r0", true);
    const cutAt = clock.now();
    expect(await sim.until(() => !r0.writable(), TTL)).toBe(true);
    const fencedAfter = clock.now() - cutAt;
    expect(fencedAfter).toBeLessThan(TTL); // before etcd can expire its lease
    expect(await sim.until(() => r1.role === "master", 5 * TTL)).toBe(true);
    expect(r1.epoch).toBe(2);
    expect(r0.role).toBe("master"); // cut off: no election is possible on its side, it keeps its role...
    expect(r0.writable()).toBe(false); // ...but acknowledges nothing
    etcd.partition("r0", false);
    expect(await sim.until(() => r0.role === "replica" && r0.master?.brokerId === 1, 5000)).toBe(true);
    const masters = events.filter((e) => e.includes("master e"));
    expect(masters).toEqual(["0 master e1 @100", "1 master e2 @100"]);
    for (const r of replicas) await r.stop(true);
  });
});
