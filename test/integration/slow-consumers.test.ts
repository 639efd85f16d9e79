/**
 * Slow and dead consumers against the compiled binary (issue #18, item 5): a standalone broker on
 * config/test-min.yaml and raw consumers from
 * test/harness/consumers.ts.
 *
 *   dead       consumers that pull a backlog of 15 KB messages and never read their sockets
 *              (3 rounds of 8, see deadRound): once about 1 MiB of answers waits on one, its
 *              further requests wait too; it is closed when 4,096 wait, when it goes quiet
 *              (remoting.idleTimeoutMs), or when woken long polls' answers pass
 *              connectionBufferMaxBytes (8 MiB here); the broker's RSS stays under a bound
 *              every round, its sockets are released, and a consumer on another connection
 *              keeps receiving
 *   parked     1,000 long polls over 10 connections on 100 empty queues: the 500 on queues that
 *              get a message are answered with it, the other 500 at their hold (not before it),
 *              none left unanswered; RSS bounded, sends stay quick while they are parked
 *   group      a consumer group of 500: 498 emulated members (2 client ids per connection, each
 *              rebalancing on NOTIFY_CONSUMER_IDS_CHANGED as PushConsumer does, with the client
 *              library's own allocation) and 2 real PushConsumers, over a 1,000-queue topic: after
 *              the joins every member sees all 500 and every queue has exactly one owner (the real
 *              consumers receive exactly their queues' messages); members leaving (unregistering,
 *              or their connection dropped) are pushed to those left and the group settles again;
 *              the broker's CPU and RSS stay bounded
 *
 * The figures (RSS per parked poll, rate beside the dead consumers, settle times) are printed;
 * bench/abuse/consumers.ts measures them at full size.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readlinkSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { cpuSeconds, rssBytes } from "../../bench/lib/measure.ts";
import { allocateAveragely } from "../../src/client/route.ts";
import { ResponseCode } from "../../src/remoting/index.ts";
import type { Producer } from "rocketbun/client";
import { Env, uniq, until } from "../client/support.ts";
import { DeadConsumer, GroupMembers, ownershipProblems, ParkedPolls, pullRequest, readingConsumer } from "../harness/consumers.ts";

const MiB = 1024 * 1024;
/** remoting.connectionBufferMaxBytes of the dead-consumer test (test-min's 1 MiB is too small to show the queue's growth). */
const LIMIT = 8 * MiB;
/** remoting.idleTimeoutMs of the dead-consumer test: a dead peer that went quiet is closed by it. */
const IDLE_MS = 2000;

interface DeadRound {
  during: number;
  peak: number;
  closedMs: number;
}

/**
 * One round of 8 dead consumers: 3 pipelining 5,000 pulls of the backlog (closed once 4,096
 * requests wait), 3 sending 20 and going quiet (closed at remoting.idleTimeoutMs), 2 parking 1,000
 * long polls on an empty queue that then gets 40 messages (the woken answers pass
 * connectionBufferMaxBytes). The reading consumer's rate meanwhile and the broker's RSS peak.
 */
async function deadRound(
  env: Env,
  t: { topic: string; backlog: number; empty: string; queueId: number; producer: Producer; sockets0: number },
  good: ReturnType<typeof readingConsumer>,
): Promise<DeadRound> {
  const dead = await Promise.all(Array.from({ length: 8 }, () => DeadConsumer.open(env.brokerAddr)));
  const t0 = performance.now();
  const group = uniq("DEAD");
  dead.slice(0, 3).forEach((d) => d.sendPulls({ group, topic: t.topic, queueId: 0, offset: 0, maxMsgNums: 32 }, 5000, t.backlog));
  dead.slice(3, 6).forEach((d) => d.sendPulls({ group, topic: t.topic, queueId: 0, offset: 0, maxMsgNums: 32 }, 20, t.backlog));
  dead.slice(6).forEach((d) => d.sendPulls({ group, topic: t.empty, queueId: t.queueId, offset: 0, maxMsgNums: 32, suspendMs: 15_000 }, 1000, 1));
  await Bun.sleep(300);
  for (let i = 0; i < 40; i++)
    await t.producer.send({ topic: t.empty, body: randomBytes(15_000) }, { selector: (qs) => qs.find((m) => m.queueId === t.queueId)!, arg: 0 });
  let peak = rss(env);
  const sampler = setInterval(() => (peak = Math.max(peak, rss(env))), 20);
  // The broker's socket count first (cheap), then the kernel's word on each dead consumer.
  const allClosed = until(
    () => sockets(env.srv.proc.pid) <= t.sockets0 && DeadConsumer.checkClosed(dead),
    20_000,
    () =>
      `the broker to close dead consumers ${dead.flatMap((d, i) => (d.closed ? [] : [i])).join(",")} (broker sockets ${sockets(env.srv.proc.pid)}, before ${t.sockets0})${env.diag()}`,
  );
  const closedAt = allClosed.then(() => performance.now() - t0);
  const during = await good.rateOver(1000);
  const closedMs = await closedAt;
  clearInterval(sampler);
  for (const d of dead) d.close();
  return { during, peak, closedMs };
}
const report = (what: string, figures: Record<string, number | string>) =>
  process.stderr.write(`[slow-consumers] ${what} ${JSON.stringify(figures)}\n`);
/** The broker's open sockets (its store files come and go with the CommitLog's segments). */
const sockets = (pid: number) =>
  readdirSync(`/proc/${pid}/fd`).filter((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith("socket:");
    } catch {
      return false;
    }
  }).length;
const rss = (env: Env) => rssBytes(env.srv.proc.pid) ?? NaN;

describe("slow and dead consumers", () => {
  test("consumers that stop reading: held, then closed; RSS bounded, sockets released; others keep receiving", async () => {
    await using env = await Env.start({ config: { remoting: { connectionBufferMaxBytes: LIMIT, idleTimeoutMs: IDLE_MS } } });
    const topic = uniq("BACKLOG");
    const empty = uniq("EMPTY");
    await env.createTopic(topic, 1);
    await env.createTopic(empty, 3);
    const producer = await env.producer();
    const BACKLOG = 256;
    for (let i = 0; i < BACKLOG; i++) await producer.send({ topic, body: randomBytes(15_000) });
    const good = readingConsumer(env.brokerAddr, uniq("GOOD"), topic, BACKLOG);
    const pid = env.srv.proc.pid;
    try {
      const baseline = await good.rateOver(1500);
      const rss0 = rss(env);
      const sockets0 = sockets(pid);
      // Three rounds of 8: memory the allocator keeps after a round is reused by the next, so
      // every round stays under the same bound (a leak would grow past it).
      const rounds: DeadRound[] = [];
      for (let round = 0; round < 3; round++)
        rounds.push(await deadRound(env, { topic, backlog: BACKLOG, empty, queueId: round, producer, sockets0 }, good));
      await until(
        () => sockets(pid) <= sockets0,
        10_000,
        () => `the broker's open sockets to come back to ${sockets0} (now ${sockets(pid)})`,
      );
      const after = await good.rateOver(1500);
      report("dead", {
        limit_mib: LIMIT / MiB,
        baseline_msgs_s: Math.round(baseline),
        during_msgs_s: rounds.map((r) => Math.round(r.during)).join(" "),
        after_msgs_s: Math.round(after),
        all_closed_ms: rounds.map((r) => Math.round(r.closedMs)).join(" "),
        rss0_mib: +(rss0 / MiB).toFixed(1),
        peak_mib: rounds.map((r) => (r.peak / MiB).toFixed(1)).join(" "),
      });
      const err = env.srv.output.err();
      expect(err).toContain("waiting while it does not read its answers");
      expect(err).toContain("over connectionBufferMaxBytes");
      // Per dead peer: about 1 MiB of answers before its requests wait, or for the parkers
      // connectionBufferMaxBytes (grown by doubling; old copies are garbage until collected).
      for (const r of rounds) expect(r.peak - rss0).toBeLessThan(2 * 4 * LIMIT + 6 * 4 * MiB + 16 * MiB);
      expect(Math.min(...rounds.map((r) => r.during))).toBeGreaterThan(0);
      expect(after).toBeGreaterThan(0);
    } finally {
      await good.stop();
    }
  }, 60_000);

  test("1,000 parked long polls: every one answered, by the message or at its hold; RSS bounded; sends stay quick", async () => {
    await using env = await Env.start();
    const QUEUES = 100;
    const topic = uniq("PARKED");
    await env.createTopic(topic, QUEUES);
    const producer = await env.producer();
    const HOLD = 5000;
    const polls = new ParkedPolls(10);
    try {
      // One round trip per connection first, so the RSS baseline has the connections in it.
      await Promise.all(polls.clients.map((c) => c.invoke(env.brokerAddr, pullRequest({ group: "warm", topic, queueId: 0, offset: 0 }), 5000)));
      const rss0 = rss(env);
      const t0 = performance.now();
      const all = polls.park(env.brokerAddr, 1000, { group: uniq("PG"), topic, offset: 0, queues: QUEUES, suspendMs: HOLD }, HOLD + 10_000);
      await Bun.sleep(1000);
      const rssParked = rss(env);
      expect(polls.answers.length).toBe(0);
      // A message for each of the first 50 queues wakes the 10 polls parked on it.
      const sendMs: number[] = [];
      for (let q = 0; q < QUEUES / 2; q++) {
        const s = performance.now();
        const r = await producer.send({ topic, body: randomBytes(512) }, { selector: (qs) => qs.find((m) => m.queueId === q)!, arg: q });
        sendMs.push(performance.now() - s);
        expect(r.queueOffset).toBe(0);
      }
      await until(
        () => polls.answers.length >= 500,
        5000,
        () => `500 woken polls (have ${polls.answers.length})`,
      );
      await all;
      const elapsed = performance.now() - t0;
      const found = polls.answers.filter((a) => a.code === ResponseCode.SUCCESS);
      const notFound = polls.answers.filter((a) => a.code === ResponseCode.PULL_NOT_FOUND);
      sendMs.sort((a, b) => a - b);
      report("parked", {
        rss0_mib: +(rss0 / MiB).toFixed(1),
        parked_mib: +(rssParked / MiB).toFixed(1),
        bytes_per_poll: Math.round((rssParked - rss0) / 1000),
        send_p50_ms: +sendMs[25]!.toFixed(1),
        send_max_ms: +sendMs[49]!.toFixed(1),
        elapsed_ms: Math.round(elapsed),
      });
      expect(polls.failures).toBe(0);
      expect(polls.answers.length).toBe(1000);
      expect(found.length).toBe(500);
      expect(notFound.length).toBe(500);
      for (const a of found) expect(a.nextBeginOffset).toBe(1);
      for (const a of notFound) expect(a.ms).toBeGreaterThanOrEqual(HOLD - 50);
      // The hold scan runs every 500 ms; a loaded 2-core machine gets some slack.
      expect(Math.max(...notFound.map((a) => a.ms))).toBeLessThan(HOLD + 3000);
      expect(rssParked - rss0).toBeLessThan(32 * MiB);
      expect(sendMs[49]!).toBeLessThan(1000);
    } finally {
      await polls.close();
    }
  }, 60_000);

  test("a group of 500 members settles: every queue owned once, joins and leaves notify the members", async () => {
    await using env = await Env.start();
    const QUEUES = 1000;
    const topic = uniq("GROUP");
    const group = uniq("G500");
    await env.createTopic(topic, QUEUES);
    const pid = env.srv.proc.pid;
    // 498 emulated members, 2 per connection, and 2 real PushConsumers of the client library.
    const members = new GroupMembers(env.brokerAddr, group, topic, QUEUES, 498, 249);
    const got = new Map<string, Set<number>>();
    const real = [0, 1].map(() => env.push({ group, rebalanceIntervalMs: 60_000, fromWhere: "first" }));
    for (const c of real) {
      const mine = new Set<number>();
      c.subscribe(topic, "*", (m) => void mine.add(m.queueId));
      got.set(c.clientId, mine);
    }
    const everyone = () => [...members.live().map((i) => members.ids[i]!), ...real.map((c) => c.clientId)];
    const settled = () =>
      members.idle &&
      ownershipProblems(
        withReal(
          members.views(),
          real.map((c) => c.clientId),
          everyone(),
          QUEUES,
        ),
        everyone(),
        QUEUES,
      ).length === 0;
    try {
      const rss0 = rss(env);
      const cpu0 = cpuSeconds(pid) ?? NaN;
      const t0 = performance.now();
      await Promise.all([members.join(), ...real.map((c) => c.start())]);
      const joined = performance.now();
      await until(
        settled,
        20_000,
        () =>
          `the group to settle: ${ownershipProblems(
            withReal(
              members.views(),
              real.map((c) => c.clientId),
              everyone(),
              QUEUES,
            ),
            everyone(),
            QUEUES,
          ).join("; ")}`,
      );
      const settleMs = performance.now() - joined;
      const cpuJoin = (cpuSeconds(pid) ?? NaN) - cpu0;
      const rssJoin = rss(env);
      const noticesJoin = members.totalNotified;
      const listsJoin = members.listRequests;

      // What the real consumers own is what they receive: one message on every queue.
      const producer = await env.producer();
      for (let q = 0; q < QUEUES; q++)
        await producer.send({ topic, body: randomBytes(64) }, { selector: (qs) => qs.find((m) => m.queueId === q)!, arg: q });
      const all = Array.from({ length: QUEUES }, (_, q) => q);
      for (const c of real) {
        const want = allocateAveragely(all, [...everyone()].sort(), c.clientId);
        await until(
          () => got.get(c.clientId)!.size >= want.length,
          15_000,
          () => `${c.clientId} to receive its ${want.length} queues (has ${got.get(c.clientId)!.size})`,
        );
        expect([...got.get(c.clientId)!].sort((a, b) => a - b)).toEqual(want);
      }

      // 50 leave cleanly, then a connection's 2 members drop, then 48 more connections (96 members) drop.
      const before = members.totalNotified;
      const t1 = performance.now();
      await members.leave(
        members
          .live()
          .slice(0, 100)
          .filter((i) => i % 2 === 0)
          .slice(0, 50),
      );
      await Promise.all(Array.from({ length: 49 }, (_, j) => members.dropConnection(200 + j)));
      expect(everyone().length).toBe(500 - 50 - 98);
      await until(
        settled,
        20_000,
        () =>
          `the group to settle again: ${ownershipProblems(
            withReal(
              members.views(),
              real.map((c) => c.clientId),
              everyone(),
              QUEUES,
            ),
            everyone(),
            QUEUES,
          ).join("; ")}`,
      );
      const resettleMs = performance.now() - t1;
      expect(members.totalNotified).toBeGreaterThan(before);
      report("group", {
        join_ms: Math.round(joined - t0),
        settle_after_join_ms: Math.round(settleMs),
        leave_and_settle_ms: Math.round(resettleMs),
        join_notices: noticesJoin,
        join_list_requests: listsJoin,
        broker_cpu_join_s: +cpuJoin.toFixed(2),
        rss0_mib: +(rss0 / MiB).toFixed(1),
        rss_join_mib: +(rssJoin / MiB).toFixed(1),
      });
      expect(rssJoin - rss0).toBeLessThan(64 * MiB);
      expect(cpuJoin).toBeLessThan(30);
    } finally {
      await members.close();
    }
  }, 80_000);
});

/** The emulated members' views plus, for the real consumers, the allocation their client computes from the whole group. */
function withReal(views: Map<string, { view: string[]; owned: number[] }>, realIds: string[], everyone: string[], queues: number) {
  const all = Array.from({ length: queues }, (_, q) => q);
  const out = new Map(views);
  for (const id of realIds) out.set(id, { view: everyone, owned: allocateAveragely(all, [...everyone].sort(), id) });
  return out;
}
