/**
 * rocketbun/client PullConsumer against the compiled binary (standalone, test-min settings): the
 * application drives consumption with poll(); commit() stores offsets on the broker and a
 * restarted consumer of the group resumes there; assign() takes exactly the given queues;
 * seek() moves a queue's next read; subscribe() shares the queues among the group's members.
 */
import { expect } from "bun:test";
import { compatTest } from "../harness/compat.ts";
import { MQClientError, PullConsumer, type MessageExt, type MessageQueue } from "rocketbun/client";
import { dupes, Env, text, uniq, until } from "./support.ts";

/** Each test is a row of docs/COMPATIBILITY.md (rocketbun-client against RocketBun). */
const test = compatTest("rocketbun-client", "rocketbun");

/** Polls until `n` messages came (or fails at the deadline). */
async function pollN(c: PullConsumer, n: number, timeoutMs = 10_000): Promise<MessageExt[]> {
  const out: MessageExt[] = [];
  await until(
    async () => {
      out.push(...(await c.poll(100)));
      return out.length >= n;
    },
    timeoutMs,
    () => `${n} messages from poll() (have ${out.length})`,
  );
  return out;
}

const range = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));

test("subscribe + poll + commit: the offsets land on the broker and a restarted consumer resumes there", async () => {
  await using env = await Env.start();
  const topic = uniq("T_pull");
  const group = uniq("G_pull");
  await env.createTopic(topic, 4);
  const p = await env.producer();
  for (let i = 0; i < 40; i++) await p.send({ topic, body: `a-${i}`, tags: "TagA", keys: [`k${i}`] });

  const c1 = env.pull({ group, autoCommit: false });
  c1.subscribe(topic, "*");
  await c1.start();
  expect(
    c1
      .assignment()
      .map((q) => q.queueId)
      .sort(),
  ).toEqual([0, 1, 2, 3]);
  const first = await pollN(c1, 40);
  expect(first.map((m) => text(m.body)).sort()).toEqual(range(40, (i) => `a-${i}`).sort());
  expect(dupes(first.map((m) => m.msgId))).toEqual([]);
  const m0 = first.find((m) => text(m.body) === "a-0")!;
  expect(m0.topic).toBe(topic);
  expect(m0.tags).toBe("TagA");
  expect(m0.keys).toEqual(["k0"]);
  // Nothing more to read: poll waits its timeout and returns [].
  const t0 = Date.now();
  expect(await c1.poll(300)).toEqual([]);
  expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
  // Not committed yet (autoCommit off)…
  for (let q = 0; q < 4; q++) expect(await env.committedOffset(group, topic, q)).toBeLessThanOrEqual(0);
  await c1.commit();
  // …now every queue's offset is its end.
  for (let q = 0; q < 4; q++) {
    expect(await env.committedOffset(group, topic, q)).toBe(10);
    expect(c1.position({ topic, brokerName: "broker-a", queueId: q })).toBe(10);
  }
  // Read some more without committing, then stop: those come again to the next consumer.
  for (let i = 0; i < 20; i++) await p.send({ topic, body: `b-${i}` });
  const uncommitted = await pollN(c1, 1);
  expect(uncommitted.length).toBeGreaterThan(0);
  await c1.shutdown();

  const c2 = env.pull({ group, autoCommit: false });
  c2.subscribe(topic, "*");
  await c2.start();
  const second = await pollN(c2, 20);
  expect(await c2.poll(200)).toEqual([]);
  expect(second.map((m) => text(m.body)).sort()).toEqual(range(20, (i) => `b-${i}`).sort());
  await c2.shutdown();

  // autoCommit (the default) commits on shutdown.
  const c3 = env.pull({ group });
  c3.subscribe(topic, "*");
  await c3.start();
  expect((await pollN(c3, 20)).length).toBe(20);
  await c3.shutdown();
  for (let q = 0; q < 4; q++) expect(await env.committedOffset(group, topic, q)).toBe(15);
}, 30_000);

test("two subscribed pull consumers of a group share the queues; a tag expression filters", async () => {
  await using env = await Env.start();
  const topic = uniq("T_pshare");
  const group = uniq("G_pshare");
  await env.createTopic(topic, 4);
  const a = env.pull({ group, rebalanceIntervalMs: 500 });
  const b = env.pull({ group, rebalanceIntervalMs: 500 });
  a.subscribe(topic, "TagA || TagB");
  b.subscribe(topic, "TagA || TagB");
  await a.start();
  await b.start();
  const share = (c: PullConsumer) =>
    c
      .assignment()
      .map((q) => q.queueId)
      .sort();
  await until(
    () => share(a).length === 2 && share(b).length === 2 && new Set([...share(a), ...share(b)]).size === 4,
    10_000,
    () => `a 2/2 split (a ${share(a)}, b ${share(b)})`,
  );
  const p = await env.producer();
  for (let i = 0; i < 60; i++) await p.send({ topic, body: `s-${i}`, tags: ["TagA", "TagB", "TagC"][i % 3]! });
  const got: { who: string; m: MessageExt }[] = [];
  await until(
    async () => {
      for (const m of await a.poll(50)) got.push({ who: "a", m });
      for (const m of await b.poll(50)) got.push({ who: "b", m });
      return got.length >= 40;
    },
    10_000,
    () => `40 TagA/TagB messages (have ${got.length})`,
  );
  expect(await a.poll(100)).toEqual([]);
  expect(await b.poll(100)).toEqual([]);
  expect(got.length).toBe(40);
  expect(got.every(({ m }) => m.tags === "TagA" || m.tags === "TagB")).toBe(true);
  expect(dupes(got.map(({ m }) => text(m.body)))).toEqual([]);
  for (const { who, m } of got) expect((who === "a" ? share(a) : share(b)).includes(m.queueId)).toBe(true);
}, 30_000);

test("assign takes exactly the given queues; seek moves the next read; position follows", async () => {
  await using env = await Env.start();
  const topic = uniq("T_assign");
  await env.createTopic(topic, 4);
  const p = await env.producer();
  const pick = (qs: readonly MessageQueue[], q: number) => qs[q]!;
  for (let q = 0; q < 4; q++) for (let i = 0; i < 10; i++) await p.send({ topic, body: `q${q}-${i}` }, { selector: pick, arg: q });

  const group = uniq("G_assign");
  const c = env.pull({ group, fromWhere: "first", autoCommit: false });
  await c.start();
  const all = await c.fetchQueues(topic);
  expect(all.map((q) => q.queueId)).toEqual([0, 1, 2, 3]);
  const q1 = all[1]!;
  const q3 = all[3]!;
  c.assign([q1, q3]);
  await until(
    () => c.assignment().length === 2,
    5000,
    () => "the assignment",
  );
  const got = await pollN(c, 20);
  expect(await c.poll(200)).toEqual([]);
  expect(got.every((m) => m.queueId === 1 || m.queueId === 3)).toBe(true);
  // Per queue, poll returns messages in offset order.
  for (const q of [1, 3]) expect(got.filter((m) => m.queueId === q).map((m) => text(m.body))).toEqual(range(10, (i) => `q${q}-${i}`));
  expect(c.position(q1)).toBe(10);

  // seek back into the middle of queue 1: only those come again.
  c.seek(q1, 7);
  expect(c.position(q1)).toBe(7);
  const again = await pollN(c, 3);
  expect(again.map((m) => text(m.body))).toEqual(["q1-7", "q1-8", "q1-9"]);
  expect(again.map((m) => m.queueOffset)).toEqual([7, 8, 9]);
  // seek to the start of queue 3 and re-read it all.
  c.seek(q3, 0);
  const q3again = await pollN(c, 10);
  expect(q3again.map((m) => text(m.body))).toEqual(range(10, (i) => `q3-${i}`));
  // A queue that is not assigned cannot be sought.
  expect(() => c.seek(all[0]!, 0)).toThrow(MQClientError);
  expect(c.position(all[0]!)).toBe(-1);
  // seek + commit stores the sought offset.
  c.seek(q1, 4);
  await c.commit();
  expect(await env.committedOffset(group, topic, 1)).toBe(4);
  expect(await env.committedOffset(group, topic, 3)).toBe(10);
  // Queues never assigned have no committed offset.
  expect(await env.committedOffset(group, topic, 0)).toBeLessThanOrEqual(0);
}, 30_000);

test("misuse is a typed error: poll before start, subscribe after assign, no group", async () => {
  await using env = await Env.start();
  const topic = uniq("T_misuse");
  await env.createTopic(topic, 1);
  expect(() => new PullConsumer({ namesrv: env.namesrv, group: "" })).toThrow(MQClientError);
  const c = env.pull({ group: uniq("G_misuse") });
  await expect(c.poll(10)).rejects.toThrow(MQClientError);
  c.assign([{ topic, brokerName: "broker-a", queueId: 0 }]);
  expect(() => c.subscribe(topic)).toThrow(/either subscribe\(\) or assign\(\)/);
  await c.start();
  await expect(c.fetchQueues(uniq("T_none"))).rejects.toThrow(MQClientError);
}, 30_000);
