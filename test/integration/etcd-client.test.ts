/**
 * The EtcdKv contract, against a real etcd (Debian etcd-server, src/failover/etcd.ts) and against
 * the in-memory one the simulation uses (src/failover/test-support.ts, on virtual time): reads,
 * writes, transactions, leases — the same tests, so the two cannot drift. Then what only one of
 * them has: the real client's endpoint fail-over and deadlines, the memory etcd's partitions.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { EtcdError, EtcdHttpClient, EtcdUnavailableError, type EtcdKv } from "../../src/failover/etcd.ts";
import { MemoryEtcd } from "../../src/failover/test-support.ts";
import { etcdPresent, startEtcd, type RunningEtcd } from "../harness/etcd.ts";
import { freePort } from "../harness/java.ts";
import { SimClock } from "../../src/common/sim-clock.ts";

const present = etcdPresent("etcd client");
let etcd: RunningEtcd;
let real: EtcdHttpClient;

beforeAll(async () => {
  if (!present) return;
  etcd = await startEtcd();
  real = new EtcdHttpClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 3000 });
});
afterAll(async () => {
  await etcd?.stop();
});

const sim = new SimClock();
const memory = new MemoryEtcd(sim.view());

interface Subject {
  kv: () => EtcdKv;
  /** Lets `ms` pass (real time, or virtual time for the memory etcd). */
  sleep: (ms: number) => Promise<void>;
  /** A key prefix of its own (both share nothing, but the real etcd lives for the whole file). */
  prefix: string;
}

function contract(name: string, skip: boolean, s: Subject): void {
  describe(name, () => {
    test.skipIf(skip)("put, get, prefix ranges and delete; keys and values keep their UTF-8", async () => {
      await s.kv().put(s.prefix + "/t1/a", "1");
      await s.kv().put(s.prefix + "/t1/b", "zwei ✓");
      await s.kv().put(s.prefix + "/t10/c", "not in /rb/t1/");
      const a = await s.kv().get(s.prefix + "/t1/a");
      expect(a).toMatchObject({ key: s.prefix + "/t1/a", value: "1", version: 1, lease: undefined });
      expect(a!.modRevision).toBeGreaterThan(0);
      expect((await s.kv().getPrefix(s.prefix + "/t1/")).map((k) => [k.key, k.value])).toEqual([
        [s.prefix + "/t1/a", "1"],
        [s.prefix + "/t1/b", "zwei ✓"],
      ]);
      await s.kv().delete(s.prefix + "/t1/a");
      expect(await s.kv().get(s.prefix + "/t1/a")).toBeUndefined();
      expect(await s.kv().get(s.prefix + "/none")).toBeUndefined();
    });

    test.skipIf(skip)("a transaction is a compare-and-set: only one of two claims on an absent key succeeds", async () => {
      const claim = (who: string) =>
        s
          .kv()
          .txn(
            [{ key: s.prefix + "/t2/master", target: "VERSION", result: "EQUAL", version: 0 }],
            [{ put: s.prefix + "/t2/master", value: who }],
            [{ get: s.prefix + "/t2/master" }],
          );
      const [x, y] = await Promise.all([claim("x"), claim("y")]);
      expect([x.succeeded, y.succeeded].sort()).toEqual([false, true]);
      const lost = x.succeeded ? y : x;
      const winner = x.succeeded ? "x" : "y";
      expect(lost.gets[0]?.value).toBe(winner);
      // MOD compare: a write based on a stale read fails.
      const now = (await s.kv().get(s.prefix + "/t2/master"))!;
      const stale = await s
        .kv()
        .txn(
          [{ key: s.prefix + "/t2/master", target: "MOD", result: "EQUAL", modRevision: now.modRevision - 1 }],
          [{ put: s.prefix + "/t2/master", value: "z" }],
        );
      expect(stale.succeeded).toBe(false);
      const fresh = await s
        .kv()
        .txn(
          [{ key: s.prefix + "/t2/master", target: "MOD", result: "EQUAL", modRevision: now.modRevision }],
          [{ put: s.prefix + "/t2/master", value: "z" }],
        );
      expect(fresh.succeeded).toBe(true);
      expect((await s.kv().get(s.prefix + "/t2/master"))!.value).toBe("z");
    });

    test.skipIf(skip)(
      "a key on a lease lives while the lease is kept alive and goes when it lapses or is revoked",
      async () => {
        const lease = await s.kv().grantLease(2000);
        expect(lease.ttlMs).toBe(2000);
        await s.kv().put(s.prefix + "/t3/held", "me", lease.id);
        expect((await s.kv().get(s.prefix + "/t3/held"))!.lease).toBe(lease.id);
        for (let i = 0; i < 3; i++) {
          await s.sleep(1000);
          expect(await s.kv().keepAlive(lease.id)).toBe(2000);
        }
        expect((await s.kv().get(s.prefix + "/t3/held"))?.value).toBe("me");
        await s.sleep(3500); // no renewal: etcd expires it (its lease checks run every 500 ms)
        expect(await s.kv().get(s.prefix + "/t3/held")).toBeUndefined();
        expect(await s.kv().keepAlive(lease.id)).toBe(0);
        const second = await s.kv().grantLease(5000);
        await s.kv().put(s.prefix + "/t3/held", "again", second.id);
        await s.kv().revoke(second.id);
        expect(await s.kv().get(s.prefix + "/t3/held")).toBeUndefined();
        await s.kv().revoke(second.id); // unknown now: not an error
      },
      20_000,
    );
  });
}

contract("a real etcd (EtcdHttpClient)", !present, { kv: () => real, sleep: (ms) => Bun.sleep(ms), prefix: "/real" });
contract("the in-memory etcd (MemoryEtcd, virtual time)", false, { kv: () => memory.client("test"), sleep: (ms) => sim.advance(ms), prefix: "/mem" });

test.skipIf(!present)("a dead first endpoint is skipped; no endpoint answering is EtcdUnavailableError; a bad request is EtcdError", async () => {
  const dead = `127.0.0.1:${freePort()}`;
  const both = new EtcdHttpClient({ endpoints: [dead, etcd.endpoint], requestTimeoutMs: 3000 });
  await both.put("/rb/t4/k", "v");
  expect((await both.get("/rb/t4/k"))?.value).toBe("v");
  const none = new EtcdHttpClient({ endpoints: [dead], requestTimeoutMs: 1000 });
  await expect(none.get("/rb/t4/k")).rejects.toBeInstanceOf(EtcdUnavailableError);
  // A paused etcd accepts connections but answers nothing: the deadline ends the call.
  etcd.pause();
  try {
    const t = Date.now();
    const slow = new EtcdHttpClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 800 });
    await expect(slow.get("/rb/t4/k")).rejects.toBeInstanceOf(EtcdUnavailableError);
    expect(Date.now() - t).toBeLessThan(5000);
  } finally {
    etcd.resume();
  }
  await expect(real.put("/rb/t4/k", "v", "12345")).rejects.toBeInstanceOf(EtcdError);
});

test("the in-memory etcd: a partitioned client is unreachable, the others are not; down cuts everyone and renews leases on return", async () => {
  const a = memory.client("a");
  const b = memory.client("b");
  const lease = await a.grantLease(2000);
  await a.put("/mem/p/held", "a", lease.id);
  memory.partition("a", true);
  await expect(a.get("/mem/p/held")).rejects.toBeInstanceOf(EtcdUnavailableError);
  expect((await b.get("/mem/p/held"))?.value).toBe("a");
  await sim.advance(2500); // a cannot renew: its lease lapses, its key goes
  expect(await b.get("/mem/p/held")).toBeUndefined();
  memory.partition("a", false);
  expect(await a.keepAlive(lease.id)).toBe(0);
  const second = await a.grantLease(2000);
  await a.put("/mem/p/held", "again", second.id);
  memory.setDown(true);
  await expect(b.get("/mem/p/held")).rejects.toBeInstanceOf(EtcdUnavailableError);
  await sim.advance(5000); // etcd down: no lease expires meanwhile
  memory.setDown(false);
  expect((await b.get("/mem/p/held"))?.value).toBe("again");
  await expect(b.put("/mem/p/x", "v", "999999")).rejects.toBeInstanceOf(EtcdError);
});
