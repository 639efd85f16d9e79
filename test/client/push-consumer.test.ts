/**
 * rocketbun/client PushConsumer against the compiled binary (standalone, test-min settings):
 * clustering groups share queues (exactly once while membership is stable, at least once across
 * rebalances), broadcasting, tag filtering, retries through %RETRY%<group>, orderly consumption,
 * committed offsets across restarts, and where a new group starts (fromWhere).
 *
 * Consumers here rebalance every second (Env.push sets rebalanceIntervalMs) and most commit every
 * few hundred ms; the broker also tells members when the group changes (NOTIFY_CONSUMER_IDS_CHANGED).
 */
import { expect } from "bun:test";
import { compatTest } from "../harness/compat.ts";
import { MQClientError, PushConsumer, type MessageExt, type MessageQueue } from "rocketbun/client";
import { parseProperties } from "../../src/common/message-record.ts";
import { dupes, Env, text, tempDirScope, uniq, until } from "./support.ts";

/** Each test is a row of docs/COMPATIBILITY.md (rocketbun-client against RocketBun). */
const test = compatTest("rocketbun-client", "rocketbun");

interface Delivery {
  who: string;
  body: string;
  queueId: number;
  queueOffset: number;
  reconsumeTimes: number;
  at: number;
}

const rec = (who: string, m: MessageExt): Delivery => ({
  who,
  body: text(m.body),
  queueId: m.queueId,
  queueOffset: m.queueOffset,
  reconsumeTimes: m.reconsumeTimes,
  at: Date.now(),
});

const ids = (c: PushConsumer, topic: string) =>
  c
    .assignedQueues()
    .filter((q) => q.topic === topic)
    .map((q) => q.queueId)
    .sort((a, b) => a - b);

/**
 * Waits until the members own disjoint shares covering all `total` queues (sizes as allocated
 * averagely), unchanged for `stableMs`; returns the shares.
 */
async function balanced(env: Env, members: PushConsumer[], topic: string, total: number, stableMs = 1200): Promise<number[][]> {
  let last = "";
  let since = 0;
  return until(
    () => {
      const shares = members.map((m) => ids(m, topic));
      const all = shares.flat();
      const sizes = shares.map((s) => s.length).sort();
      const even = sizes[sizes.length - 1]! - sizes[0]! <= 1;
      if (all.length !== total || new Set(all).size !== total || !even) {
        last = "";
        return null;
      }
      const key = JSON.stringify(shares);
      if (key !== last) [last, since] = [key, Date.now()];
      return Date.now() - since >= stableMs ? shares : null;
    },
    20_000,
    () => `a stable split of ${total} queues of ${topic} among ${members.length}: ${JSON.stringify(members.map((m) => ids(m, topic)))}${env.diag()}`,
  );
}

const range = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));

test("clustering: two members split the queues and every message is consumed exactly once, with all its fields", async () => {
  await using env = await Env.start();
  const topic = uniq("T_cl");
  const group = uniq("G_cl");
  await env.createTopic(topic, 4);
  const got: Delivery[] = [];
  const msgs = new Map<string, MessageExt>();
  const start = async (who: string) => {
    const c = env.push({ group, persistOffsetIntervalMs: 500 });
    c.subscribe(topic, "*", async (m) => {
      got.push(rec(who, m));
      msgs.set(text(m.body), m);
    });
    await c.start();
    return c;
  };
  const a = await start("a");
  const b = await start("b");
  const shares = await balanced(env, [a, b], topic, 4);
  expect(shares.map((s) => s.length)).toEqual([2, 2]);
  expect((await env.consumerIds(group)).sort()).toEqual([a.clientId, b.clientId].sort());

  const p = await env.producer();
  const sent = new Map<string, { msgId: string; queueId: number; queueOffset: number; t: number }>();
  for (let i = 0; i < 200; i++) {
    const t = Date.now();
    const r = await p.send({ topic, body: `m-${i}`, tags: `Tag${i % 3}`, keys: [`k-${i}`, "common"], properties: { i: String(i) } });
    sent.set(`m-${i}`, { msgId: r.msgId, queueId: r.queue.queueId, queueOffset: r.queueOffset, t });
  }
  await until(
    () => new Set(got.map((d) => d.body)).size === 200,
    20_000,
    () => `all 200 messages (have ${new Set(got.map((d) => d.body)).size})${env.diag()}`,
  );
  // Every acknowledged offset gets committed: the group's offsets reach the queue ends.
  await until(
    async () => {
      for (let q = 0; q < 4; q++) if ((await env.committedOffset(group, topic, q)) !== (await env.maxOffset(topic, q))) return false;
      return true;
    },
    10_000,
    () => "committed offsets to reach the queue ends",
  );
  expect(dupes(got.map((d) => d.body))).toEqual([]);
  expect(got.length).toBe(200);
  // Each member only saw its own queues, and both worked.
  for (const [who, share] of [
    ["a", shares[0]!],
    ["b", shares[1]!],
  ] as const) {
    const mine = got.filter((d) => d.who === who);
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.every((d) => share.includes(d.queueId))).toBe(true);
  }
  for (const [body, s] of sent) {
    const m = msgs.get(body)!;
    const i = Number(body.slice(2));
    expect(m.topic).toBe(topic);
    expect(m.tags).toBe(`Tag${i % 3}`);
    expect(m.keys).toEqual([`k-${i}`, "common"]);
    expect(m.properties.i).toBe(String(i));
    expect(m.msgId).toBe(s.msgId);
    expect(m.queueId).toBe(s.queueId);
    expect(m.queueOffset).toBe(s.queueOffset);
    expect(m.reconsumeTimes).toBe(0);
    expect(m.body).toBeInstanceOf(Uint8Array);
    expect(Math.abs(m.bornTimestamp - s.t)).toBeLessThan(1000);
    expect(m.storeTimestamp).toBeGreaterThanOrEqual(m.bornTimestamp - 5);
  }
  // Within a queue a single member delivered in offset order (one pull batch at a time).
  for (let q = 0; q < 4; q++) {
    const offs = got.filter((d) => d.queueId === q).map((d) => d.queueOffset);
    expect(new Set(offs).size).toBe(offs.length);
  }
}, 40_000);

test("rebalance: a third member joining and a member leaving while messages flow loses nothing (duplicates counted)", async () => {
  await using env = await Env.start();
  const topic = uniq("T_rb");
  const group = uniq("G_rb");
  const QUEUES = 6;
  await env.createTopic(topic, QUEUES);
  const got: Delivery[] = [];
  const start = async (who: string) => {
    const c = env.push({ group, persistOffsetIntervalMs: 500, consumeThreads: 4 });
    c.subscribe(topic, "*", async (m) => {
      await Bun.sleep(1 + (m.queueOffset % 3));
      got.push(rec(who, m));
    });
    await c.start();
    return c;
  };
  const a = await start("a");
  const b = await start("b");
  expect((await balanced(env, [a, b], topic, QUEUES)).map((s) => s.length)).toEqual([3, 3]);

  // A producer sends all along (about 400 messages a second) until told to stop.
  const p = await env.producer();
  let sent = 0;
  let stop = false;
  const producing = (async () => {
    while (!stop) {
      await p.send({ topic, body: `r-${sent}` });
      sent++;
      if (sent % 5 === 0) await Bun.sleep(10);
    }
  })();
  const events: { what: string; at: number; sent: number }[] = [];
  const event = (what: string) => events.push({ what, at: Date.now(), sent });
  const sentMore = async (n: number) => {
    const target = sent + n;
    await until(
      () => sent >= target,
      20_000,
      () => `${n} more messages to be sent`,
    );
  };
  await sentMore(150);
  event("c joins");
  const c = await start("c");
  const three = await balanced(env, [a, b, c], topic, QUEUES, 500);
  expect(three.map((s) => s.length)).toEqual([2, 2, 2]);
  event("balanced over 3");
  await sentMore(150);
  event("a leaves");
  await a.shutdown();
  const two = await balanced(env, [b, c], topic, QUEUES, 500);
  expect(two.map((s) => s.length)).toEqual([3, 3]);
  event("balanced over 2");
  await sentMore(150);
  stop = true;
  await producing;
  event("stopped");
  const total = sent;
  await until(
    () => new Set(got.map((d) => d.body)).size === total,
    30_000,
    () => `all ${total} messages (have ${new Set(got.map((d) => d.body)).size})${env.diag()}`,
  );
  // Settle: every offset committed, so late duplicates (a re-pull below a committed offset) would have shown up.
  await until(
    async () => {
      for (let q = 0; q < QUEUES; q++) if ((await env.committedOffset(group, topic, q)) !== (await env.maxOffset(topic, q))) return false;
      return true;
    },
    10_000,
    () => "committed offsets to reach the queue ends",
  );

  expect(new Set(got.map((d) => d.body))).toEqual(new Set(range(total, (i) => `r-${i}`)));
  const dup = dupes(got.map((d) => d.body));
  const extra = got.length - total;
  console.log(
    `rebalance test: ${total} messages, ${got.length} deliveries, ${extra} duplicate deliveries (${dup.length} messages: ${dup.slice(0, 10).join(" ")}); events ${JSON.stringify(events)}`,
  );
  // Duplicates come only from a queue changing hands: the deliveries of a duplicated message were made by different members.
  for (const body of dup.map((d) => d.split("×")[0]!)) {
    const whos = got.filter((d) => d.body === body).map((d) => d.who);
    expect(new Set(whos).size).toBe(whos.length);
  }
  // And they are few: at most what was pulled but not acknowledged when a queue moved.
  expect(extra).toBeLessThan(total / 5);
  // Once "a" had left, nothing more was handled by it.
  const aLeft = events.find((e) => e.what === "balanced over 2")!.at;
  expect(got.filter((d) => d.who === "a" && d.at > aLeft)).toEqual([]);
  expect((await env.consumerIds(group)).sort()).toEqual([b.clientId, c.clientId].sort());
}, 60_000);

test("broadcasting: every member gets every message; a new broadcasting member starts at the end unless fromWhere is first", async () => {
  await using env = await Env.start();
  const topic = uniq("T_bc");
  const group = uniq("G_bc");
  await env.createTopic(topic, 4);
  const p = await env.producer();
  for (let i = 0; i < 5; i++) await p.send({ topic, body: `before-${i}` });

  const got: Record<"a" | "b", string[]> = { a: [], b: [] };
  const a = env.push({ group, model: "broadcasting" });
  a.subscribe(topic, "*", (m) => void got.a.push(text(m.body)));
  const b = env.push({ group, model: "broadcasting", fromWhere: "first" });
  b.subscribe(topic, "*", (m) => void got.b.push(text(m.body)));
  await a.start();
  await b.start();
  expect(ids(a, topic)).toEqual([0, 1, 2, 3]);
  expect(ids(b, topic)).toEqual([0, 1, 2, 3]);

  for (let i = 0; i < 100; i++) await p.send({ topic, body: `bc-${i}` });
  const want = range(100, (i) => `bc-${i}`);
  await until(
    () => want.every((x) => got.a.includes(x)) && want.every((x) => got.b.includes(x)) && got.b.filter((x) => x.startsWith("before")).length === 5,
    15_000,
    () => `both members to get everything (a ${got.a.length}, b ${got.b.length})${env.diag()}`,
  );
  await Bun.sleep(300); // a short quiet period: extra deliveries would show up
  expect(dupes(got.a)).toEqual([]);
  expect(dupes(got.b)).toEqual([]);
  expect(new Set(got.a)).toEqual(new Set(want));
  expect(new Set(got.b)).toEqual(new Set([...want, ...range(5, (i) => `before-${i}`)]));
  // Broadcasting keeps offsets in the member: nothing is committed for the group on the broker.
  for (let q = 0; q < 4; q++) expect(await env.committedOffset(group, topic, q)).toBeLessThanOrEqual(0);
}, 30_000);

test("tag subscriptions: 'TagA || TagB' gets exactly those tags; filtered messages still advance the committed offset", async () => {
  await using env = await Env.start();
  const topic = uniq("T_tag");
  await env.createTopic(topic, 2);
  const groups = { ab: uniq("G_ab"), c: uniq("G_c"), all: uniq("G_all") };
  const got: Record<keyof typeof groups, MessageExt[]> = { ab: [], c: [], all: [] };
  for (const [k, expr] of [
    ["ab", "TagA || TagB"],
    ["c", " TagC "],
    ["all", "*"],
  ] as const) {
    // A short long-poll: a pull parked on a trailing message that does not match is only answered when it times out.
    const c = env.push({ group: groups[k], persistOffsetIntervalMs: 300, suspendTimeoutMs: 1000 });
    c.subscribe(topic, expr, (m) => void got[k].push(m));
    await c.start();
  }
  const p = await env.producer();
  const tags = ["TagA", "TagB", "TagC", undefined, "TagAB"] as const;
  for (let i = 0; i < 100; i++) await p.send({ topic, body: `t-${i}`, ...(tags[i % 5] ? { tags: tags[i % 5] } : {}) });
  await until(
    () => got.all.length >= 100 && got.ab.length >= 40 && got.c.length >= 20,
    15_000,
    () => `deliveries (all ${got.all.length}, ab ${got.ab.length}, c ${got.c.length})${env.diag()}`,
  );
  // Every group, filtering or not, commits up to the end of the queues.
  await until(
    async () => {
      for (const g of Object.values(groups))
        for (let q = 0; q < 2; q++) if ((await env.committedOffset(g, topic, q)) !== (await env.maxOffset(topic, q))) return false;
      return true;
    },
    10_000,
    () => "every group's committed offsets to reach the queue ends",
  );
  expect(got.ab.map((m) => m.tags).sort()).toEqual([...Array(20).fill("TagA"), ...Array(20).fill("TagB")]);
  expect(got.c.map((m) => m.tags)).toEqual(Array(20).fill("TagC"));
  expect(got.all.length).toBe(100);
  expect(dupes(got.ab.map((m) => text(m.body)))).toEqual([]);
}, 30_000);

test("a handler that throws (or returns 'retry') gets the message again from %RETRY%<group> with reconsumeTimes 1", async () => {
  await using env = await Env.start();
  const topic = uniq("T_retry");
  const group = uniq("G_retry");
  await env.createTopic(topic, 2);
  const deliveries: { body: string; m: MessageExt; at: number }[] = [];
  const c = env.push({ group });
  c.subscribe(topic, "*", async (m) => {
    const body = text(m.body);
    deliveries.push({ body, m, at: Date.now() });
    if (m.reconsumeTimes === 0 && body === "fail-throw") throw new Error("boom (expected by the test)");
    if (m.reconsumeTimes === 0 && body === "fail-return") return "retry";
    return undefined;
  });
  await c.start();
  const p = await env.producer();
  const sent = new Map<string, string>();
  for (const body of ["ok-1", "fail-throw", "ok-2", "fail-return"])
    sent.set(body, (await p.send({ topic, body, tags: "TagR", keys: [`key-${body}`] })).msgId);
  // Delay level 3 (10 s) is what a first retry waits on the broker.
  await until(
    () => deliveries.filter((d) => d.m.reconsumeTimes === 1).length === 2,
    20_000,
    () => `both failed messages to come back (deliveries: ${JSON.stringify(deliveries.map((d) => [d.body, d.m.reconsumeTimes]))})${env.diag()}`,
  );
  await Bun.sleep(300);
  const byBody = (b: string) => deliveries.filter((d) => d.body === b);
  expect(byBody("ok-1").length).toBe(1);
  expect(byBody("ok-2").length).toBe(1);
  for (const body of ["fail-throw", "fail-return"]) {
    const [first, again, ...more] = byBody(body);
    expect(more).toEqual([]);
    expect(first!.m.reconsumeTimes).toBe(0);
    expect(again!.m.reconsumeTimes).toBe(1);
    // The retry looks like the original to the handler: same topic, id, body, tags and keys.
    expect(again!.m.topic).toBe(topic);
    expect(again!.m.msgId).toBe(sent.get(body)!);
    expect(again!.m.tags).toBe("TagR");
    expect(again!.m.keys).toEqual([`key-${body}`]);
    // It came from the retry topic (the broker records where it came from).
    expect(again!.m.properties.RETRY_TOPIC).toBe(topic);
    expect(again!.at - first!.at).toBeGreaterThanOrEqual(9000);
  }
  expect(await env.maxOffset(`%RETRY%${group}`, 0)).toBe(2);
}, 40_000);

test("orderly: one queue's messages are handled strictly in order, one at a time; a failure is retried in place", async () => {
  await using env = await Env.start();
  const topic = uniq("T_ord");
  const group = uniq("G_ord");
  await env.createTopic(topic, 2);
  const handled = new Map<number, number[]>();
  const active = new Map<number, number>();
  let maxActivePerQueue = 0;
  let maxActiveOverall = 0;
  let failedOnce = false;
  const attempts: [number, number][] = []; // queue 1: [seq, reconsumeTimes]
  const c = env.push({ group, orderly: true });
  c.subscribe(topic, "*", async (m) => {
    const q = m.queueId;
    if (q === 1) attempts.push([Number(text(m.body).split("-")[1]), m.reconsumeTimes]);
    active.set(q, (active.get(q) ?? 0) + 1);
    const overall = [...active.values()].reduce((x, y) => x + y, 0);
    maxActivePerQueue = Math.max(maxActivePerQueue, active.get(q)!);
    maxActiveOverall = Math.max(maxActiveOverall, overall);
    try {
      await Bun.sleep(m.queueOffset % 4);
      const seq = Number(text(m.body).split("-")[1]);
      if (q === 1 && seq === 10 && !failedOnce) {
        failedOnce = true;
        return "retry";
      }
      if (!handled.has(q)) handled.set(q, []);
      handled.get(q)!.push(seq);
      return undefined;
    } finally {
      active.set(q, active.get(q)! - 1);
    }
  });
  await c.start();
  expect(ids(c, topic)).toEqual([0, 1]);
  const p = await env.producer();
  const pick = (qs: readonly MessageQueue[], q: number) => qs[q]!;
  // Interleave sends to both queues so both are busy at the same time.
  const sends: Promise<unknown>[] = [];
  for (let i = 0; i < 50; i++) for (const q of [0, 1]) sends.push(p.send({ topic, body: `q${q}-${i}` }, { selector: pick, arg: q }));
  await Promise.all(sends);
  await until(
    () => (handled.get(0)?.length ?? 0) === 50 && (handled.get(1)?.length ?? 0) === 50,
    20_000,
    () => `50 per queue (have ${handled.get(0)?.length ?? 0}, ${handled.get(1)?.length ?? 0})${env.diag()}`,
  );
  // Concurrent sends with a selector keep per-queue order only if sends are issued in order; check the stored order.
  for (const q of [0, 1]) {
    const stored = (await env.rawRecords(topic, q)).map((r) => Number(text(r.body).split("-")[1]));
    expect(handled.get(q)).toEqual(stored);
  }
  expect(failedOnce).toBe(true);
  // The failed message was handed over again right away (before the next one), counted as a reconsume.
  const at = attempts.findIndex(([seq]) => seq === 10);
  expect(attempts.slice(at, at + 3)).toEqual([
    [10, 0],
    [10, 1],
    [11, 0],
  ]);
  expect(maxActivePerQueue).toBe(1);
  // The two queues were worked on at the same time (orderly is per queue, not global).
  expect(maxActiveOverall).toBe(2);
}, 30_000);

test("orderly: a queue that moves to a new member continues right after the last message the old one handled", async () => {
  await using env = await Env.start();
  const topic = uniq("T_ordrb");
  const group = uniq("G_ordrb");
  await env.createTopic(topic, 2);
  const PER_QUEUE = 20;
  // Every handling, in start order, across both members.
  const starts: { who: string; q: number; off: number }[] = [];
  const active = new Map<number, number>();
  let overlap = 0;
  const member = (who: string) => {
    const c = env.push({ group, orderly: true, rebalanceIntervalMs: 500 });
    c.subscribe(topic, "*", async (m) => {
      const q = m.queueId;
      active.set(q, (active.get(q) ?? 0) + 1);
      if (active.get(q)! > 1) overlap++;
      starts.push({ who, q, off: m.queueOffset });
      await Bun.sleep(100);
      active.set(q, active.get(q)! - 1);
    });
    return c;
  };
  const a = member("a");
  await a.start();
  const p = await env.producer();
  for (let i = 0; i < PER_QUEUE; i++)
    for (const q of [0, 1]) await p.send({ topic, body: `q${q}-${i}` }, { selector: (qs, x: number) => qs[x]!, arg: q });
  await until(
    () => starts.filter((s) => s.q === 1).length >= 3,
    10_000,
    () => "member a to be into queue 1",
  );
  const b = member("b");
  await b.start();
  await until(
    () => [0, 1].every((q) => new Set(starts.filter((s) => s.q === q).map((s) => s.off)).size === PER_QUEUE),
    30_000,
    () => `every message handled: ${JSON.stringify(starts)}${env.diag()}`,
  );
  await balanced(env, [a, b], topic, 2, 300);
  // Then a leaves (shut down in the middle of a message): b takes a's queue over, again right after a's last message.
  const aQueue = ids(a, topic)[0]!;
  for (let i = PER_QUEUE; i < 2 * PER_QUEUE; i++)
    for (const q of [0, 1]) await p.send({ topic, body: `q${q}-${i}` }, { selector: (qs, x: number) => qs[x]!, arg: q });
  await until(
    () => starts.filter((s) => s.who === "a" && s.off >= PER_QUEUE + 2).length > 0,
    10_000,
    () => "member a to be into the second round",
  );
  await a.shutdown();
  await until(
    () => [0, 1].every((q) => new Set(starts.filter((s) => s.q === q).map((s) => s.off)).size === 2 * PER_QUEUE),
    30_000,
    () => `every message handled: ${JSON.stringify(starts)}${env.diag()}`,
  );
  await until(
    async () => (await env.committedOffset(group, topic, aQueue)) === 2 * PER_QUEUE,
    10_000,
    () => "b to commit a's old queue to the end",
  );
  const seq = (q: number) => starts.filter((s) => s.q === q).map((s) => `${s.who}${s.off}`);
  // Per queue, offsets were handled strictly increasing across members: each new owner started right
  // after the old one's last message — nothing handled twice, nothing out of order.
  for (const q of [0, 1]) {
    const offs = starts.filter((s) => s.q === q).map((s) => s.off);
    expect(offs, `queue ${q} handled as ${seq(q).join(" ")}`).toEqual(Array.from({ length: 2 * PER_QUEUE }, (_, k) => k));
  }
  expect(new Set(starts.map((s) => s.who))).toEqual(new Set(["a", "b"]));
  expect(starts.filter((s) => s.q === aQueue && s.off >= PER_QUEUE + 3).every((s) => s.who === "b")).toBe(true);
  expect(overlap).toBe(0);
}, 45_000);

test("offsets: a restarted group resumes at its committed offsets — nothing acknowledged comes again beyond the in-flight window", async () => {
  await using env = await Env.start();
  const topic = uniq("T_off");
  const group = uniq("G_off");
  await env.createTopic(topic, 4);
  const p = await env.producer();
  const committed = async () => Promise.all([0, 1, 2, 3].map((q) => env.committedOffset(group, topic, q)));
  const ends = async () => Promise.all([0, 1, 2, 3].map((q) => env.maxOffset(topic, q)));

  // Phase 1: consume everything, shut down cleanly, restart: nothing comes again.
  const first: Delivery[] = [];
  const c1 = env.push({ group, persistOffsetIntervalMs: 60_000 }); // only the shutdown commits
  c1.subscribe(topic, "*", (m) => void first.push(rec("c1", m)));
  await c1.start();
  for (let i = 0; i < 100; i++) await p.send({ topic, body: `one-${i}` });
  await until(
    () => first.length >= 100,
    15_000,
    () => `100 messages (have ${first.length})`,
  );
  await c1.shutdown();
  expect(await committed()).toEqual(await ends());

  for (let i = 0; i < 50; i++) await p.send({ topic, body: `two-${i}` });
  const second: Delivery[] = [];
  const c2 = env.push({ group });
  c2.subscribe(topic, "*", (m) => void second.push(rec("c2", m)));
  await c2.start();
  await until(
    () => second.length >= 50,
    15_000,
    () => `the 50 new messages (have ${second.length})`,
  );
  await Bun.sleep(300);
  expect(second.map((d) => d.body).sort()).toEqual(range(50, (i) => `two-${i}`).sort());
  await c2.shutdown();

  // Phase 2: shut down mid-stream with slow handlers. The committed offset of each queue must not
  // pass a message that was not acknowledged (no loss), and the next member must start exactly
  // there: it gets everything from the committed offsets on and nothing below them.
  const phase2Start = await ends();
  for (let i = 0; i < 200; i++) await p.send({ topic, body: `three-${i}` });
  const acked: Delivery[] = [];
  const late: Delivery[] = []; // handlers that finished while the consumer was shutting down
  let stopping = false;
  const c3 = env.push({ group, consumeThreads: 4 });
  c3.subscribe(topic, "*", async (m) => {
    await Bun.sleep(5);
    (stopping ? late : acked).push(rec("c3", m));
  });
  await c3.start();
  await until(
    () => acked.length >= 60,
    15_000,
    () => `60 acknowledged (have ${acked.length})`,
  );
  stopping = true;
  await c3.shutdown();
  const at = await committed();
  const ackedAt = new Set(acked.map((d) => `${d.queueId}:${d.queueOffset}`));
  expect(acked.length).toBeLessThan(200);
  for (let q = 0; q < 4; q++) {
    expect(at[q]!).toBeGreaterThanOrEqual(phase2Start[q]!);
    for (let off = phase2Start[q]!; off < at[q]!; off++)
      expect(ackedAt.has(`${q}:${off}`), `${q}:${off} is below the committed offset ${at[q]}`).toBe(true);
  }
  expect(at.reduce((x, y) => x + y, 0)).toBeGreaterThan(phase2Start.reduce((x, y) => x + y, 0));

  const fourth: Delivery[] = [];
  const c4 = env.push({ group, persistOffsetIntervalMs: 300 });
  c4.subscribe(topic, "*", (m) => void fourth.push(rec("c4", m)));
  await c4.start();
  const end = await ends();
  const expected = end.reduce((n, e, q) => n + e - at[q]!, 0);
  await until(
    () => fourth.length >= expected,
    15_000,
    () => `the ${expected} messages from the committed offsets on (have ${fourth.length})`,
  );
  await until(
    async () => JSON.stringify(await committed()) === JSON.stringify(end),
    10_000,
    () => "the new member to commit up to the end",
  );
  expect(fourth.length).toBe(expected);
  expect(dupes(fourth.map((d) => d.body))).toEqual([]);
  expect(fourth.filter((d) => d.queueOffset < at[d.queueId]!).map((d) => d.body)).toEqual([]);
  // Everything not acknowledged came (the in-flight ones included); of the acknowledged ones only
  // those above a queue's committed offset (a lower message of that queue was still in flight).
  const seen = new Set(fourth.map((d) => d.body));
  const ackedBodies = new Set(acked.map((d) => d.body));
  expect(range(200, (i) => `three-${i}`).filter((b) => !ackedBodies.has(b) && !seen.has(b))).toEqual([]);
  expect(late.every((d) => seen.has(d.body))).toBe(true);
  const again = fourth.filter((d) => ackedBodies.has(d.body));
  console.log(
    `offsets test: ${acked.length} acknowledged before shutdown, ${late.length} finished during shutdown; ` +
      `the next member got ${fourth.length}: ${late.length} of those in flight, ${again.length} acknowledged ones above a committed offset`,
  );
}, 60_000);

test("fromWhere: first, last and { timestamp } decide where a new group starts once the queue's head is gone; on a young queue every new group starts at 0", async () => {
  using tmp = tempDirScope("rb-client-fromwhere-");
  const topic = uniq("T_fw");
  const youngTopic = uniq("T_young");
  // Phase 1: aggressive retention (every closed CommitLog segment expires at once) until the
  // head of the queue is deleted, so that the broker has no "young queue" answer for new groups.
  {
    await using env = await Env.start({
      dir: tmp.dir,
      config: {
        store: {
          fileReservedTimeHours: 0,
          deleteWhen: range(24, (h) => String(h).padStart(2, "0")).join(";"),
          deleteCommitLogFilesIntervalMs: 100,
        },
      },
    });
    await env.createTopic(topic, 1);
    const p = await env.producer();
    const filler = "x".repeat(2000);
    let i = 0;
    await until(
      async () => {
        for (let k = 0; k < 20; k++) await p.send({ topic, body: `old-${i++}-${filler}` });
        return (await env.minOffset(topic, 0)) > 0;
      },
      20_000,
      () => `the head of ${topic} to be deleted (min offset ${i} sent)${env.diag()}`,
    );
  }
  // Phase 2: the same store with test-min settings (no more deletion).
  await using env = await Env.start({ dir: tmp.dir });
  await env.waitRoute(topic, 1);
  await env.createTopic(youngTopic, 1);
  const min = await env.minOffset(topic, 0);
  expect(min).toBeGreaterThan(0);
  const p = await env.producer();
  for (let i = 0; i < 5; i++) await p.send({ topic, body: `old2-${i}` });
  for (let i = 0; i < 5; i++) await p.send({ topic: youngTopic, body: `young-${i}` });
  const tsBefore = Date.now();
  await until(
    () => Date.now() > tsBefore + 5,
    1000,
    () => "the clock",
  );
  const t0 = Date.now();
  await until(
    () => Date.now() > t0 + 5,
    1000,
    () => "the clock",
  );
  for (let i = 0; i < 5; i++) await p.send({ topic, body: `mid-${i}` });

  const got: Record<"first" | "last" | "ts" | "young", string[]> = { first: [], last: [], ts: [], young: [] };
  const starts = [
    ["first", "first"],
    ["last", "last"],
    ["ts", { timestamp: t0 }],
  ] as const;
  for (const [k, fromWhere] of starts) {
    const c = env.push({ group: uniq(`G_fw_${k}`), fromWhere });
    c.subscribe(topic, "*", (m) => void got[k].push(text(m.body).slice(0, 12)));
    await c.start();
    expect(ids(c, topic)).toEqual([0]);
  }
  const y = env.push({ group: uniq("G_young_last"), fromWhere: "last" });
  y.subscribe(youngTopic, "*", (m) => void got.young.push(text(m.body)));
  await y.start();

  for (let i = 0; i < 5; i++) await p.send({ topic, body: `new-${i}` });
  const news = range(5, (i) => `new-${i}`);
  const mids = range(5, (i) => `mid-${i}`);
  const old2 = range(5, (i) => `old2-${i}`);
  await until(
    () =>
      news.every((x) => got.first.includes(x) && got.last.includes(x) && got.ts.includes(x)) &&
      got.young.length >= 5 &&
      [...mids, ...old2].every((x) => got.first.includes(x)),
    15_000,
    () => `deliveries ${JSON.stringify(got)}${env.diag()}`,
  );
  await Bun.sleep(300);
  expect(got.last.sort()).toEqual(news);
  expect(got.ts.sort()).toEqual([...mids, ...news].sort());
  // "first" starts at the queue's minimum offset: what survived of the old messages, then the rest.
  const stored = (await env.rawRecords(topic, 0, min)).map((r) => text(r.body).slice(0, 12));
  expect(got.first).toEqual(stored);
  expect(got.first.filter((x) => x.startsWith("old-")).length).toBeGreaterThan(0);
  // RocketMQ's rule for a queue whose first message is still at hand: a new group starts at 0, whatever fromWhere says.
  expect(got.young.sort()).toEqual(range(5, (i) => `young-${i}`));
}, 60_000);

test("start() on a topic that does not exist fails with code 17 and leaves nothing running; start() again once it exists consumes", async () => {
  await using env = await Env.start({ config: { broker: { autoCreateTopicEnable: false } } });
  const topic = uniq("T_late");
  const group = uniq("G_late");
  const got: string[] = [];
  const c = env.push({ group });
  c.subscribe(topic, "*", (m) => void got.push(text(m.body)));
  const err = await c.start().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(MQClientError);
  expect((err as MQClientError).code).toBe(17);
  expect((err as MQClientError).message).toContain(topic);
  expect((err as MQClientError).message).toMatch(/create the topic/);
  // Nothing registered with the broker.
  expect(await env.consumerIds(group)).toEqual([]);

  await env.createTopic(topic, 2);
  await c.start();
  expect(ids(c, topic)).toEqual([0, 1]);
  expect(await env.consumerIds(group)).toEqual([c.clientId]);
  const p = await env.producer();
  for (let i = 0; i < 10; i++) await p.send({ topic, body: `late-${i}` });
  await until(
    () => got.length >= 10,
    10_000,
    () => `10 messages after the second start (have ${got.length})${env.diag()}`,
  );
  expect(got.sort()).toEqual(range(10, (i) => `late-${i}`).sort());
}, 30_000);

test("misuse is a typed error: no group, no subscription, subscribe after start", async () => {
  await using env = await Env.start();
  const topic = uniq("T_pmisuse");
  await env.createTopic(topic, 1);
  expect(() => new PushConsumer({ namesrv: env.namesrv, group: "" })).toThrow(MQClientError);
  expect(() => new PushConsumer({ namesrv: "", group: "g" })).toThrow(MQClientError);
  const empty = env.push({ group: uniq("G_empty") });
  await expect(empty.start()).rejects.toThrow(/subscribe/);
  const c = env.push({ group: uniq("G_pm") });
  c.subscribe(topic, "*", () => {});
  await c.start();
  await c.start(); // idempotent
  expect(() => c.subscribe(topic, "TagA", () => {})).toThrow(MQClientError);
  await c.shutdown();
  await c.shutdown(); // idempotent
}, 30_000);

test("maxReconsumeTimes 0: a failed message goes straight to %DLQ%<group> and is not handed over again", async () => {
  await using env = await Env.start();
  const topic = uniq("T_dlq");
  const group = uniq("G_dlq");
  await env.createTopic(topic, 1);
  const seen: MessageExt[] = [];
  const c = env.push({ group, maxReconsumeTimes: 0, persistOffsetIntervalMs: 300 });
  c.subscribe(topic, "*", (m) => {
    seen.push(m);
    return "retry";
  });
  await c.start();
  const p = await env.producer();
  const r = await p.send({ topic, body: "doomed", keys: ["dlq-key"] });
  const dlq = `%DLQ%${group}`;
  const stored = await until(
    async () => {
      const recs = await env.rawRecords(dlq, 0).catch(() => []);
      return recs.length > 0 ? recs : null;
    },
    10_000,
    () => `the message in ${dlq}${env.diag()}`,
  );
  expect(stored.length).toBe(1);
  expect(text(stored[0]!.body)).toBe("doomed");
  expect(parseProperties(stored[0]!.properties).UNIQ_KEY).toBe(r.msgId);
  await until(
    async () => (await env.committedOffset(group, topic, 0)) === 1,
    10_000,
    () => "the failed message to count as done",
  );
  expect(seen.length).toBe(1);
}, 30_000);
