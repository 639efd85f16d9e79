/**
 * POP's in-flight state (docs/PROTOCOL.md §3.21, docs/STORAGE.md §11) with the compiled binary,
 * over raw remoting requests as the 5.3 client sends them: after a kill -9 and a restart on the
 * same store, on a slave (the revive log replicates; pops and acks are refused there), and across
 * an automatic failover on etcd. In each, messages popped and never acked come back after their
 * invisible time — from the POP retry topic, reconsumeTimes 1, same UNIQ_KEY — and acked ones
 * never do; nothing already popped is handed out again from the topic itself; nothing is revived
 * twice (after a kill -9 that follows a revive, after a failover back to the first master).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodeReceiptHandle, popRetryTopic, reviveTopic } from "../../src/protocol/pop.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../src/remoting/index.ts";
import { parseProperties } from "../../src/commitlog/index.ts";
import { pulledRecords } from "../../src/broker/test-support.ts";
import { waitFor } from "../harness/binary.ts";
import { etcdPresent, startEtcd, type RunningEtcd } from "../harness/etcd.ts";
import { brokerYaml, HaCluster, type Node } from "../harness/ha-cluster.ts";

const T = "PopDurableTopic";
const G = "GID_pop_durable";
/** brokerYaml's cluster name: the revive log is rmq_sys_REVIVE_LOG_HaCluster. */
const REVIVE = reviveTopic("HaCluster");
const REVIVE_QUEUES = 8;
/** POP_MESSAGE's "nothing to pop" (5.x's POLLING_TIMEOUT). */
const POLLING_TIMEOUT = 210;

interface Popped {
  /** The topic the message was read from: T, or the POP retry topic for a revived one. */
  realTopic: string;
  queueId: number;
  offset: number;
  extraInfo: string;
  reconsumeTimes: number;
  uniq: string;
}

function popRequest(o: { invisibleTime: number; max?: number; pollTime?: number }): RemotingCommand {
  return createRequest(RequestCode.POP_MESSAGE, {
    consumerGroup: G,
    topic: T,
    queueId: "-1",
    maxMsgNums: String(o.max ?? 32),
    invisibleTime: String(o.invisibleTime),
    pollTime: String(o.pollTime ?? 0),
    bornTime: String(Date.now()),
    initMode: "0",
    expType: "TAG",
    exp: "*",
    order: "false",
  });
}

/** Each message of a pop answer with the receipt handle the 5.3 client builds (MQClientAPIImpl.processPopResponse). */
function popped(res: RemotingCommand, brokerName: string): Popped[] {
  if (res.code !== ResponseCode.SUCCESS) return [];
  const ext = res.extFields!;
  const start = new Map(
    ext.startOffsetInfo!.split(";").map((e) => {
      const [r, q, o] = e.split(" ");
      return [`${r}@${q}`, Number(o)];
    }),
  );
  return pulledRecords(res).map((rec) => {
    const props = parseProperties(rec.properties);
    const uniq = props.UNIQ_KEY ?? "";
    const ck = props.POP_CK;
    if (ck) {
      // A revived message: its handle travels in POP_CK and names the retry topic's queue.
      const h = decodeReceiptHandle(ck);
      if ("invalid" in h) throw new Error(`bad POP_CK ${ck}: ${h.invalid}`);
      return { realTopic: popRetryTopic(T, G), queueId: h.queueId, offset: h.queueOffset, extraInfo: ck, reconsumeTimes: rec.reconsumeTimes, uniq };
    }
    const so = start.get(`0@${rec.queueId}`);
    if (so === undefined) throw new Error(`no startOffsetInfo for queue ${rec.queueId}: ${ext.startOffsetInfo}`);
    const extraInfo = `${so} ${ext.popTime} ${ext.invisibleTime} ${ext.reviveQid} 0 ${brokerName} ${rec.queueId} ${rec.queueOffset}`;
    return { realTopic: T, queueId: rec.queueId, offset: rec.queueOffset, extraInfo, reconsumeTimes: rec.reconsumeTimes, uniq };
  });
}

function ackRequest(p: Popped): RemotingCommand {
  return createRequest(RequestCode.ACK_MESSAGE, {
    consumerGroup: G,
    topic: p.realTopic,
    queueId: String(p.queueId),
    extraInfo: p.extraInfo,
    offset: String(p.offset),
  });
}

/** Pops until `n` messages came (each pop a checkpoint per queue); fails on anything but SUCCESS and 210. */
async function popAll(c: HaCluster, node: Node, brokerName: string, n: number, invisibleTime: number): Promise<{ msgs: Popped[]; checkpoints: number }> {
  const msgs: Popped[] = [];
  let checkpoints = 0;
  await waitFor(
    async () => {
      const res = await c.wire.invoke(node.addr, popRequest({ invisibleTime }), 5000);
      if (res.code !== ResponseCode.SUCCESS && res.code !== POLLING_TIMEOUT) throw new Error(`pop answered ${res.code} ${res.remark ?? ""}`);
      if (res.code === ResponseCode.SUCCESS) checkpoints += res.extFields!.startOffsetInfo!.split(";").length;
      msgs.push(...popped(res, brokerName));
      return msgs.length >= n;
    },
    10_000,
    () => `${n} messages popped from ${node.name} (got ${msgs.length})`,
  );
  expect(msgs.length).toBe(n);
  expect(new Set(msgs.map((m) => m.uniq)).size).toBe(n); // no message twice
  return { msgs, checkpoints };
}

async function ackAll(c: HaCluster, node: Node, msgs: readonly Popped[]): Promise<void> {
  for (const m of msgs) {
    const res = await c.wire.invoke(node.addr, ackRequest(m), 5000);
    expect([res.code, res.remark]).toEqual([ResponseCode.SUCCESS, undefined]);
  }
}

/** `n` sends over the topic's 4 queues. */
async function sendN(c: HaCluster, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await c.sendOne(T, { queueId: i % 4 });
    expect(r.code).toBe(ResponseCode.SUCCESS);
  }
}

/**
 * Pops from `node` until every UNIQ_KEY of `expected` came back, acking each (with its retry handle);
 * then keeps popping for `quietMs` to see that nothing else comes. Returns everything popped.
 */
async function drainRevived(c: HaCluster, node: Node, brokerName: string, expected: Set<string>, o: { deadlineMs: number; quietMs: number }): Promise<Popped[]> {
  const got: Popped[] = [];
  const pollOnce = async () => {
    const res = await c.wire.invoke(node.addr, popRequest({ invisibleTime: 30_000, pollTime: 1000 }), 5000);
    if (res.code !== ResponseCode.SUCCESS && res.code !== POLLING_TIMEOUT) throw new Error(`pop answered ${res.code} ${res.remark ?? ""}`);
    const msgs = popped(res, brokerName);
    await ackAll(c, node, msgs);
    got.push(...msgs);
  };
  await waitFor(
    async () => {
      await pollOnce();
      return [...expected].every((u) => got.some((m) => m.uniq === u));
    },
    o.deadlineMs,
    () => `the un-acked ${[...expected].join(",")} to come back from ${node.name}; got ${got.map((m) => m.uniq).join(",")}: ${c.diag()}`,
  );
  const quietUntil = Date.now() + o.quietMs;
  while (Date.now() < quietUntil) await pollOnce();
  return got;
}

/** The revive log's max offset per revive queue (GET_MAX_OFFSET: what the node's store holds). */
async function reviveEnds(c: HaCluster, node: Node): Promise<number[]> {
  const ends: number[] = [];
  for (let q = 0; q < REVIVE_QUEUES; q++) {
    const res = await c.call(node.addr, RequestCode.GET_MAX_OFFSET, { topic: REVIVE, queueId: String(q) });
    expect(res.code).toBe(ResponseCode.SUCCESS);
    ends.push(Number(res.extFields!.offset));
  }
  return ends;
}

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const uniqs = (xs: readonly Popped[]) => new Set(xs.map((m) => m.uniq));

/** What came back: every un-acked message once, revived (reconsumeTimes 1, from the retry topic); no acked one. */
function expectRevivedExactly(got: readonly Popped[], unacked: readonly Popped[], acked: readonly Popped[]): void {
  expect(got.map((m) => m.uniq).sort()).toEqual(unacked.map((m) => m.uniq).sort());
  for (const m of got) expect([m.realTopic, m.reconsumeTimes]).toEqual([popRetryTopic(T, G), 1]);
  const ackedKeys = uniqs(acked);
  expect(got.filter((m) => ackedKeys.has(m.uniq))).toEqual([]);
}

describe("POP in-flight state, compiled binary", () => {
  test("kill -9 and restart on the same store: nothing popped is handed out again; acks before the kill and after the restart hold; the un-acked half comes back after its invisible time", async () => {
    const N = 16;
    const INVISIBLE_MS = 10_000;
    await using c = await HaCluster.start({ groups: [{ name: "pop-k", role: "ASYNC_MASTER", slaves: 0 }] });
    const m = c.master();
    await c.createTopic(T, 4);
    await sendN(c, N);
    const poppedAt = Date.now();
    const { msgs } = await popAll(c, m, "pop-k", N, INVISIBLE_MS);
    expect(msgs.every((x) => x.reconsumeTimes === 0 && x.realTopic === T)).toBe(true);
    // A quarter acked before the kill, a quarter after the restart (with the handles popped before it), half never.
    const ackedBefore = msgs.filter((_, i) => i % 4 === 0);
    const ackedAfter = msgs.filter((_, i) => i % 4 === 1);
    const acked = [...ackedBefore, ...ackedAfter];
    const unacked = msgs.filter((_, i) => i % 4 >= 2);
    await ackAll(c, m, ackedBefore);

    // At once: the consumer offsets (persisted every 5 s) and the revive progress may not be on disk.
    await m.kill();
    await m.start();
    const early = await c.wire.invoke(m.addr, popRequest({ invisibleTime: INVISIBLE_MS }), 5000);
    // Still within the invisible time: nothing, neither from the topic again nor revived early.
    expect(Date.now() - poppedAt).toBeLessThan(INVISIBLE_MS);
    expect([early.code, popped(early, "pop-k").map((x) => x.uniq)]).toEqual([POLLING_TIMEOUT, []]);
    await ackAll(c, m, ackedAfter);

    const got = await drainRevived(c, m, "pop-k", uniqs(unacked), { deadlineMs: INVISIBLE_MS + 15_000, quietMs: 3000 });
    expect(Date.now() - poppedAt).toBeGreaterThanOrEqual(INVISIBLE_MS);
    expectRevivedExactly(got, unacked, acked);
    // The revived messages were stored in the retry topic once each.
    const retry = await c.call(m.addr, RequestCode.GET_MAX_OFFSET, { topic: popRetryTopic(T, G), queueId: "0" });
    expect(retry.extFields!.offset).toBe(String(unacked.length));
  }, 60_000);

  test("the revive log replicates to a slave (same ends per revive queue, the revived messages too); a slave refuses pops and acks", async () => {
    const N = 8;
    const INVISIBLE_MS = 6_000;
    await using c = await HaCluster.start({ groups: [{ name: "pop-s", role: "ASYNC_MASTER", slaves: 1 }] });
    const [m, s] = [c.master(), c.slave()];
    await c.createTopic(T, 4);
    await sendN(c, N);
    const { msgs, checkpoints } = await popAll(c, m, "pop-s", N, INVISIBLE_MS);
    const acked = msgs.slice(0, N / 2);
    const unacked = msgs.slice(N / 2);
    await ackAll(c, m, acked);

    await c.caughtUp();
    const masterEnds = await reviveEnds(c, m);
    expect(sum(masterEnds)).toBe(checkpoints + acked.length); // one ck per queue per pop, one ack record per ack
    expect(await reviveEnds(c, s)).toEqual(masterEnds);

    const refusedPop = await c.wire.invoke(s.addr, popRequest({ invisibleTime: INVISIBLE_MS }), 5000);
    expect(refusedPop.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(refusedPop.remark).toContain("forbidden on a slave");
    const refusedAck = await c.wire.invoke(s.addr, ackRequest(unacked[0]!), 5000);
    expect([refusedAck.code, refusedAck.remark]).toEqual([ResponseCode.SYSTEM_ERROR, "pop acks are taken by the master only"]);

    const got = await drainRevived(c, m, "pop-s", uniqs(unacked), { deadlineMs: INVISIBLE_MS + 15_000, quietMs: 2000 });
    expectRevivedExactly(got, unacked, acked);
    // The slave holds what the revive wrote: the retry topic's messages and the master's revive log to its end.
    await c.caughtUp();
    const retry = await c.call(s.addr, RequestCode.GET_MAX_OFFSET, { topic: popRetryTopic(T, G), queueId: "0" });
    expect(retry.extFields!.offset).toBe(String(unacked.length));
    expect(await reviveEnds(c, s)).toEqual(await reviveEnds(c, m));
  }, 60_000);
});

describe("POP in-flight state of revived messages, compiled binary", () => {
  test("kill -9 after a revive: nothing is revived twice; revived messages popped again and not acked come back once more (reconsumeTimes 2); a changed invisible time holds", async () => {
    const N = 6;
    const INVISIBLE_MS = 5_000;
    await using c = await HaCluster.start({ groups: [{ name: "pop-r", role: "ASYNC_MASTER", slaves: 0 }] });
    const m = c.master();
    await c.createTopic(T, 4);
    await sendN(c, N);
    const { msgs } = await popAll(c, m, "pop-r", N, INVISIBLE_MS);
    const retryEnd = async () => Number((await c.call(m.addr, RequestCode.GET_MAX_OFFSET, { topic: popRetryTopic(T, G), queueId: "0" })).extFields!.offset);
    await waitFor(async () => (await retryEnd()) === N, INVISIBLE_MS + 10_000, () => `all ${N} to be revived: ${c.diag()}`);

    // Popped again from the retry topic: ack two, move one's invisible time far out, leave three.
    const again = (await popAll(c, m, "pop-r", N, INVISIBLE_MS)).msgs;
    expect(again.map((x) => [x.realTopic, x.reconsumeTimes])).toEqual(again.map(() => [popRetryTopic(T, G), 1]));
    expect([...uniqs(again)].sort()).toEqual([...uniqs(msgs)].sort());
    const [acked, [moved], unacked] = [again.slice(0, 2), again.slice(2, 3), again.slice(3)];
    await ackAll(c, m, acked);
    const change = createRequest(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, { ...ackRequest(moved!).extFields, invisibleTime: "120000" });
    const changed = await c.wire.invoke(m.addr, change, 5000);
    expect([changed.code, changed.extFields?.invisibleTime]).toEqual([ResponseCode.SUCCESS, "120000"]);
    const poppedAt = Date.now();

    await m.kill();
    await m.start();
    const early = await c.wire.invoke(m.addr, popRequest({ invisibleTime: INVISIBLE_MS }), 5000);
    expect(Date.now() - poppedAt).toBeLessThan(INVISIBLE_MS);
    expect([early.code, popped(early, "pop-r").map((x) => x.uniq)]).toEqual([POLLING_TIMEOUT, []]);
    expect(await retryEnd()).toBe(N); // the first revive is not done again

    const got = await drainRevived(c, m, "pop-r", uniqs(unacked), { deadlineMs: INVISIBLE_MS + 15_000, quietMs: 3000 });
    expect(got.map((x) => x.uniq).sort()).toEqual(unacked.map((x) => x.uniq).sort());
    expect(got.map((x) => [x.realTopic, x.reconsumeTimes])).toEqual(got.map(() => [popRetryTopic(T, G), 2]));
    expect(await retryEnd()).toBe(N + unacked.length);
  }, 60_000);
});

// ---------------------------------------------------------------- automatic failover on etcd

const present = etcdPresent("pop-durability failover");
const LEASE_MS = 2000;

describe.skipIf(!present)("POP in-flight state across an automatic failover (compiled binary, etcd)", () => {
  let etcd: RunningEtcd;
  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterAll(async () => {
    await etcd?.stop();
  });

  const failoverYaml = () =>
    brokerYaml({ broker: { haSlaveTimeoutMs: 2000 } }).replace(
      "broker:\n",
      `broker:\n  failover:\n    enable: true\n    leaseTtlMs: ${LEASE_MS}\n    minInSyncReplicas: 1\n    etcd: ["${etcd.endpoint}"]\n`,
    );
  const elected = (c: HaCluster, n: Node, epoch: number) =>
    waitFor(async () => {
      const h = await n.admin<{ role: string; failover?: { role: string; epoch: number; writable: boolean } }>("/ha");
      return h.role !== "SLAVE" && h.failover?.role === "master" && h.failover.epoch === epoch && h.failover.writable;
    }, 20_000, () => `${n.name} to be master of epoch ${epoch}: ${c.diag()}`);

  test("kill -9 of the master: the promoted replica hands out nothing already popped, takes acks of handles popped before, revives the un-acked after their invisible time and never the acked; nothing is revived twice after a failover back", async () => {
    const N = 12;
    const INVISIBLE_MS = 15_000;
    const yaml = failoverYaml();
    await using c = await HaCluster.start({ groups: [{ name: "pop-f", role: "ASYNC_MASTER", slaves: 1, masterYaml: yaml, slaveYaml: yaml }] });
    const [m, s] = [c.master(), c.slave()];
    await elected(c, m, 1);
    await c.createTopic(T, 4);
    await sendN(c, N / 2);
    await c.caughtUp();
    await Bun.sleep(LEASE_MS); // the caught-up slave joins the sync state set: it may be elected

    const poppedAt = Date.now();
    const first = await popAll(c, m, "pop-f", N / 2, INVISIBLE_MS);
    // The first revive record made the replica sync the master's metadata (offsets included, an
    // unknown topic); for these the replica has the group's offsets only from the revive log.
    await sendN(c, N / 2);
    const second = await popAll(c, m, "pop-f", N / 2, INVISIBLE_MS);
    const msgs = [...first.msgs, ...second.msgs];
    // A third acked on the old master, a third on the new one (with the old master's handles, as a
    // client that popped before the failover does), a third never.
    const ackedBefore = msgs.filter((_, i) => i % 3 === 0);
    const ackedAfter = msgs.filter((_, i) => i % 3 === 1);
    const acked = [...ackedBefore, ...ackedAfter];
    const unacked = msgs.filter((_, i) => i % 3 === 2);
    await ackAll(c, m, ackedBefore);
    await c.caughtUp(); // the checkpoints and acks are on the replica (asynchronous replication)
    await m.kill();

    await elected(c, s, 2);
    await waitFor(async () => (await c.route(c.namesrvs[0]!, T))?.brokerDatas[0]?.brokerAddrs["0"] === s.addr, 15_000, `the name server to route ${T} to ${s.addr}`);
    const early = await c.wire.invoke(s.addr, popRequest({ invisibleTime: INVISIBLE_MS }), 5000);
    expect(Date.now() - poppedAt).toBeLessThan(INVISIBLE_MS);
    expect([early.code, popped(early, "pop-f").map((x) => x.uniq)]).toEqual([POLLING_TIMEOUT, []]);
    await ackAll(c, s, ackedAfter);

    const got = await drainRevived(c, s, "pop-f", uniqs(unacked), { deadlineMs: INVISIBLE_MS + 15_000, quietMs: 3000 });
    expect(Date.now() - poppedAt).toBeGreaterThanOrEqual(INVISIBLE_MS);
    expectRevivedExactly(got, unacked, acked);

    // Back again: the old master rejoins as the new one's replica, which then dies. Promoted once
    // more, it reads the revive log from the start: the checkpoints of its own pops, long due, are
    // resolved by the bAck records the other master wrote, and the retried ones by their acks.
    await m.start();
    await waitFor(async () => {
      const h = await m.admin<{ failover?: { role: string } }>("/ha");
      return h.failover?.role === "replica" && (await m.maxOffset()) === (await s.maxOffset());
    }, 20_000, () => `the old master to follow and catch up: ${c.diag()}`);
    await Bun.sleep(LEASE_MS); // back in the sync state set
    const retryEnd = async (n: Node) => (await c.call(n.addr, RequestCode.GET_MAX_OFFSET, { topic: popRetryTopic(T, G), queueId: "0" })).extFields!.offset;
    expect(await retryEnd(m)).toBe(String(unacked.length));
    await s.kill();
    await elected(c, m, 3);
    await Bun.sleep(2500); // past a revive tick or two of the promoted node
    const last = await c.wire.invoke(m.addr, popRequest({ invisibleTime: INVISIBLE_MS }), 5000);
    expect([last.code, popped(last, "pop-f").map((x) => x.uniq)]).toEqual([POLLING_TIMEOUT, []]);
    expect(await retryEnd(m)).toBe(String(unacked.length)); // nothing revived a second time
  }, 60_000);
});
