/** src/failover/etcd.ts against a real etcd (Debian etcd-server): reads, writes, transactions, leases, endpoint fail-over. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { EtcdError, EtcdHttpClient, EtcdUnavailableError } from "../../src/failover/etcd.ts";
import { etcdPresent, startEtcd, type RunningEtcd } from "../harness/etcd.ts";
import { freePort } from "../harness/java.ts";

const present = etcdPresent("etcd client");
let etcd: RunningEtcd;
let kv: EtcdHttpClient;

beforeAll(async () => {
  if (!present) return;
  etcd = await startEtcd();
  kv = new EtcdHttpClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 3000 });
});
afterAll(async () => {
  await etcd?.stop();
});

test.skipIf(!present)("put, get, prefix ranges and delete; keys and values keep their UTF-8", async () => {
  await kv.put("/rb/t1/a", "1");
  await kv.put("/rb/t1/b", "zwei ✓");
  await kv.put("/rb/t10/c", "not in /rb/t1/");
  const a = await kv.get("/rb/t1/a");
  expect(a).toMatchObject({ key: "/rb/t1/a", value: "1", version: 1, lease: undefined });
  expect(a!.modRevision).toBeGreaterThan(0);
  expect((await kv.getPrefix("/rb/t1/")).map((k) => [k.key, k.value])).toEqual([
    ["/rb/t1/a", "1"],
    ["/rb/t1/b", "zwei ✓"],
  ]);
  await kv.delete("/rb/t1/a");
  expect(await kv.get("/rb/t1/a")).toBeUndefined();
  expect(await kv.get("/rb/none")).toBeUndefined();
});

test.skipIf(!present)("a transaction is a compare-and-set: only one of two claims on an absent key succeeds", async () => {
  const claim = (who: string) =>
    kv.txn([{ key: "/rb/t2/master", target: "VERSION", result: "EQUAL", version: 0 }], [{ put: "/rb/t2/master", value: who }], [{ get: "/rb/t2/master" }]);
  const [x, y] = await Promise.all([claim("x"), claim("y")]);
  expect([x.succeeded, y.succeeded].sort()).toEqual([false, true]);
  const lost = x.succeeded ? y : x;
  const winner = x.succeeded ? "x" : "y";
  expect(lost.gets[0]?.value).toBe(winner);
  // MOD compare: a write based on a stale read fails.
  const now = (await kv.get("/rb/t2/master"))!;
  const stale = await kv.txn([{ key: "/rb/t2/master", target: "MOD", result: "EQUAL", modRevision: now.modRevision - 1 }], [{ put: "/rb/t2/master", value: "z" }]);
  expect(stale.succeeded).toBe(false);
  const fresh = await kv.txn([{ key: "/rb/t2/master", target: "MOD", result: "EQUAL", modRevision: now.modRevision }], [{ put: "/rb/t2/master", value: "z" }]);
  expect(fresh.succeeded).toBe(true);
  expect((await kv.get("/rb/t2/master"))!.value).toBe("z");
});

test.skipIf(!present)("a key on a lease lives while the lease is kept alive and goes when it lapses or is revoked", async () => {
  const lease = await kv.grantLease(2000);
  expect(lease.ttlMs).toBe(2000);
  await kv.put("/rb/t3/held", "me", lease.id);
  expect((await kv.get("/rb/t3/held"))!.lease).toBe(lease.id);
  for (let i = 0; i < 3; i++) {
    await Bun.sleep(1000);
    expect(await kv.keepAlive(lease.id)).toBe(2000);
  }
  expect((await kv.get("/rb/t3/held"))?.value).toBe("me");
  await Bun.sleep(3500); // no renewal: etcd expires it (its lease checks run every 500 ms)
  expect(await kv.get("/rb/t3/held")).toBeUndefined();
  expect(await kv.keepAlive(lease.id)).toBe(0);
  const second = await kv.grantLease(5000);
  await kv.put("/rb/t3/held", "again", second.id);
  await kv.revoke(second.id);
  expect(await kv.get("/rb/t3/held")).toBeUndefined();
  await kv.revoke(second.id); // unknown now: not an error
}, 20_000);

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
  await expect(kv.put("/rb/t4/k", "v", "12345")).rejects.toBeInstanceOf(EtcdError);
});
