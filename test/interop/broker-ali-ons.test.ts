/**
 * Interop: ali-ons 3.12 producers and push consumers against the compiled binary, run as a name
 * server and a master in two processes. Each test creates its topics (8 queues) on the master,
 * waits for the name server to route them, and then only ali-ons talks to the broker. Raw calls
 * (admin API, PULL_MESSAGE through ali-ons' own MQClientAPI) are used only to inspect results.
 *
 * ali-ons facts these tests lean on (docs/PROTOCOL.md §7, §8): consumers rebalance on a
 * timer (`rebalanceInterval`, lowered here), new groups start at offset 0 on young queues, offsets
 * travel in pulls and in UPDATE_CONSUMER_OFFSET (also on close), failed messages go back with
 * CONSUMER_SEND_MSG_BACK (delayLevel 0 → level 3 + reconsumeTimes), bodies ≥ 4096 bytes are
 * zlib-compressed by the producer.
 */
import { expect } from "bun:test";
import { compatTest } from "../harness/compat.ts";
import { randomBytes } from "node:crypto";
import { TransactionProducer } from "rocketbun/client";
import { assignedQueues, Cluster, Message, until, type OnsConsumer, type OnsMessage } from "./ali-ons-cluster.ts";

/** Each test is a row of docs/COMPATIBILITY.md (ali-ons against RocketBun). */
const test = compatTest("ali-ons", "rocketbun");

const TAGS = ["TagA", "TagB", "TagC"] as const;
const DELAY_LEVEL_MS = [1000, 5000, 10_000, 30_000];

/** Measurements worth seeing when tuning or debugging: printed with ALI_ONS_DEBUG=1. */
function note(what: string, value: unknown): void {
  if (process.env.ALI_ONS_DEBUG) console.log(`[broker-ali-ons] ${what}: ${JSON.stringify(value)}`);
}

/** Waits until the consumers own disjoint, non-empty shares of all `total` queues, unchanged for `stableMs`. */
async function waitBalanced(c: Cluster, consumers: OnsConsumer[], topic: string, total: number, stableMs = 2500): Promise<number[][]> {
  let last = "";
  let since = 0;
  return until(
    () => {
      const shares = consumers.map((x) => assignedQueues(x, topic));
      const all = shares.flat();
      if (all.length !== total || new Set(all).size !== total || shares.some((s) => s.length === 0)) {
        last = "";
        return null;
      }
      const key = JSON.stringify(shares);
      if (key !== last) {
        last = key;
        since = Date.now();
        return null;
      }
      return Date.now() - since >= stableMs ? shares : null;
    },
    20_000,
    () => `a stable split of ${total} queues of ${topic}: ${JSON.stringify(consumers.map((x) => assignedQueues(x, topic)))}${c.diag()}`,
  );
}

async function waitAssigned(c: Cluster, consumer: OnsConsumer, topic: string, n: number): Promise<void> {
  await until(
    () => assignedQueues(consumer, topic).length === n,
    15_000,
    () => `the consumer to own ${n} queues of ${topic} (has ${JSON.stringify(assignedQueues(consumer, topic))})${c.diag()}`,
  );
}

/** Entries that occur more than once, as "value×count". */
function dupes(xs: string[]): string[] {
  const d: string[] = [];
  const count = new Map<string, number>();
  for (const x of xs) count.set(x, (count.get(x) ?? 0) + 1);
  for (const [x, n] of count) if (n > 1) d.push(`${x}×${n}`);
  return d;
}

test("1,000 tagged, keyed messages are each consumed exactly once by a clustering group of two ali-ons consumers", async () => {
  await using c = await Cluster.start();
  const topic = "ali_cluster_1k";
  const group = "GID_ali_cluster";
  await c.createTopic(topic);

  const got: Record<"a" | "b", string[]> = { a: [], b: [] };
  const wrong: string[] = [];
  const start = (who: "a" | "b") => {
    const consumer = c.consumer({ consumerGroup: group, instanceName: `ali-cluster-${who}`, rebalanceInterval: 1000 });
    consumer.subscribe(topic, "*", async (msg) => {
      const body = msg.body.toString();
      got[who].push(body);
      const i = Number(body.slice("m-".length));
      if (msg.tags !== TAGS[i % 3] || msg.keys !== `key-${i}` || msg.topic !== topic) {
        wrong.push(`${body}: tags=${msg.tags} keys=${msg.keys} topic=${msg.topic}`);
      }
    });
    return consumer;
  };
  const a = start("a");
  const b = start("b");
  await Promise.all([a.ready(), b.ready()]);
  await until(
    async () => (await c.consumerIds(group)).length === 2,
    15_000,
    () => `two members of ${group}${c.diag()}`,
  );
  const shares = await waitBalanced(c, [a, b], topic, 8);
  expect(shares.map((s) => s.length)).toEqual([4, 4]);
  note("queue split", shares);

  const producer = await c.producer("PID_ali_cluster");
  for (let i = 0; i < 1000; i++) {
    const msg = new Message(topic, TAGS[i % 3]!, `m-${i}`);
    // @ts-expect-error ali-ons' keys setter takes an array, its getter returns the joined string
    msg.keys = [`key-${i}`];
    const r = await producer.send(msg);
    if (r.sendStatus !== "SEND_OK") throw new Error(`send ${i}: ${JSON.stringify(r)}`);
  }
  await until(
    () => new Set([...got.a, ...got.b]).size === 1000,
    30_000,
    () => `all 1000 bodies (a ${got.a.length}, b ${got.b.length})${c.diag()}`,
  );
  await Bun.sleep(1500); // late duplicates would show up now

  const all = [...got.a, ...got.b];
  expect(dupes(all)).toEqual([]);
  expect(new Set(all)).toEqual(new Set(Array.from({ length: 1000 }, (_, i) => `m-${i}`)));
  expect(got.a.length).toBeGreaterThan(0);
  expect(got.b.length).toBeGreaterThan(0);
  expect(wrong).toEqual([]);
}, 60_000);

test("a consumer closed mid-stream and replaced resumes at the committed offsets (nothing acknowledged is redelivered, nothing is lost)", async () => {
  await using c = await Cluster.start();
  const topic = "ali_resume";
  const group = "GID_ali_resume";
  await c.createTopic(topic);
  interface Rec {
    body: string;
    queueId: number;
    queueOffset: number;
  }
  const rec = (m: OnsMessage): Rec => ({ body: m.body.toString(), queueId: m.queueId, queueOffset: m.queueOffset });

  // A consumes slowly; it is closed after 80 of 200 so that the rest of the first batch is unconsumed.
  const acked: Rec[] = [];
  const inFlight: Rec[] = [];
  let closing = false;
  const a = c.consumer({ consumerGroup: group, instanceName: "ali-resume-a", rebalanceInterval: 1000 });
  a.subscribe(topic, "*", async (msg) => {
    await Bun.sleep(10);
    (closing ? inFlight : acked).push(rec(msg));
  });
  await a.ready();
  await waitAssigned(c, a, topic, 8);
  const producer = await c.producer("PID_ali_resume");
  for (let i = 0; i < 200; i++) await producer.send(new Message(topic, "TagA", `first-${i}`));
  await until(
    () => acked.length >= 80,
    20_000,
    () => `A to consume 80 (has ${acked.length})${c.diag()}`,
  );
  closing = true;
  await a.close();
  expect(acked.length).toBeLessThan(200);

  // ali-ons persisted its offsets on close (UPDATE_CONSUMER_OFFSET, not awaited): every message A
  // finished lies below its queue's committed offset.
  const below = (off: Map<number, number>, r: Rec) => r.queueOffset < (off.get(r.queueId) ?? -1);
  let committed = new Map<number, number>();
  await until(
    async () => {
      committed = await c.committedOffsets(group, topic);
      return acked.every((r) => below(committed, r));
    },
    5000,
    () => `committed offsets ${JSON.stringify([...committed])} to cover A's ${acked.length} acknowledged messages`,
  );

  for (let i = 0; i < 100; i++) await producer.send(new Message(topic, "TagA", `second-${i}`));
  const got: Rec[] = [];
  const b = c.consumer({ consumerGroup: group, instanceName: "ali-resume-b", rebalanceInterval: 1000 });
  b.subscribe(topic, "*", async (msg) => {
    got.push(rec(msg));
  });
  await b.ready();
  const ackedBodies = new Set(acked.map((r) => r.body));
  const expected = [
    ...Array.from({ length: 200 }, (_, i) => `first-${i}`).filter((x) => !ackedBodies.has(x)),
    ...Array.from({ length: 100 }, (_, i) => `second-${i}`),
  ];
  await until(
    () => {
      const seen = new Set(got.map((r) => r.body));
      return expected.every((x) => seen.has(x));
    },
    30_000,
    () => `B to receive the ${expected.length} unacknowledged messages (has ${got.length})${c.diag()}`,
  );
  await Bun.sleep(1500);
  note("resume", { acked: acked.length, inFlight: inFlight.map((r) => r.body), committed: [...committed], bGot: got.length });

  const redeliveredAcked = got.filter((r) => ackedBodies.has(r.body)).map((r) => `${r.body}@${r.queueId}:${r.queueOffset}`);
  expect(redeliveredAcked).toEqual([]);
  expect(dupes(got.map((r) => r.body))).toEqual([]);
  // B started exactly at the committed offsets: nothing below them, and everything at or above them.
  expect(got.filter((r) => below(committed, r)).map((r) => `${r.body}@${r.queueId}:${r.queueOffset}`)).toEqual([]);
  expect(new Set(got.map((r) => r.body))).toEqual(new Set(expected));
}, 60_000);

test("a message whose handler throws comes back from the retry topic after its delay, then lands in %DLQ%<group>", async () => {
  await using c = await Cluster.start();
  const topic = "ali_retry";
  const group = "GID_ali_retry";
  const retryTopic = `%RETRY%${group}`;
  const dlqTopic = `%DLQ%${group}`;
  await c.createTopic(topic);
  const deliveries: { at: number; reconsumeTimes: number; topic: string; body: string; msgId: string; originMessageId: string | undefined }[] = [];
  // maxReconsumeTimes 1: delivery 1 fails → retry (level 3 = 10 s); delivery 2 fails → DLQ.
  const consumer = c.consumer({
    consumerGroup: group,
    instanceName: "ali-retry",
    rebalanceInterval: 1000,
    pollNameServerInteval: 1000,
    maxReconsumeTimes: 1,
  });
  consumer.subscribe(topic, "*", async (msg) => {
    deliveries.push({
      at: Date.now(),
      reconsumeTimes: msg.reconsumeTimes,
      topic: msg.topic,
      body: msg.body.toString(),
      msgId: msg.msgId,
      originMessageId: msg.originMessageId,
    });
    throw new Error("handler refuses the message (expected by the test)");
  });
  await consumer.ready();
  await waitAssigned(c, consumer, topic, 8);
  await waitAssigned(c, consumer, retryTopic, 1);

  const producer = await c.producer("PID_ali_retry");
  const sent = await producer.send(new Message(topic, "TagP", "poison"));
  expect(sent.sendStatus).toBe("SEND_OK");
  await until(
    () => deliveries.length >= 2,
    25_000,
    () => `the retry delivery (deliveries: ${JSON.stringify(deliveries)})${c.diag()}`,
  );
  let dlq: OnsMessage[] = [];
  await until(
    async () => {
      dlq = await c.pullAll(dlqTopic, 0);
      return dlq.length >= 1;
    },
    10_000,
    () => `a message in ${dlqTopic} (queues: ${JSON.stringify(deliveries)})${c.diag()}`,
  );
  await Bun.sleep(1500); // nothing more may be delivered once it is dead

  // One comparison, so that a failure shows every deviation at once.
  const first = deliveries[0];
  const second = deliveries[1];
  const gap = first && second ? second.at - first.at : NaN;
  note("retry gap ms", gap);
  const minGap = DELAY_LEVEL_MS[2]! - 100; // delayLevel 0 from ali-ons → level 3 + reconsumeTimes(0) = 10 s
  const dead = dlq[0];
  expect({
    deliveries: deliveries.length,
    first: first && { reconsumeTimes: first.reconsumeTimes, topic: first.topic, body: first.body, originMessageId: first.originMessageId },
    // ali-ons rewrites the retry topic back to the original one (RETRY_TOPIC property).
    second: second && { reconsumeTimes: second.reconsumeTimes, topic: second.topic, body: second.body, originMessageId: second.originMessageId },
    retryDelay: gap >= minGap ? `>= ${minGap} ms` : `${gap} ms`,
    dlqCount: dlq.length,
    dead: dead && {
      body: dead.body.toString(),
      topic: dead.topic,
      reconsumeTimes: dead.reconsumeTimes,
      tags: dead.tags,
      retryTopic: dead.retryTopic,
      originMessageId: dead.originMessageId,
    },
  }).toEqual({
    deliveries: 2,
    first: { reconsumeTimes: 0, topic, body: "poison", originMessageId: undefined },
    second: { reconsumeTimes: 1, topic, body: "poison", originMessageId: first?.msgId },
    retryDelay: `>= ${minGap} ms`,
    dlqCount: 1,
    dead: { body: "poison", topic: dlqTopic, reconsumeTimes: 2, tags: "TagP", retryTopic: topic, originMessageId: first?.msgId },
  });
}, 60_000);

test("bodies at and over 4 KiB (zlib-compressed by ali-ons) arrive byte for byte", async () => {
  await using c = await Cluster.start();
  const topic = "ali_big";
  await c.createTopic(topic);
  const bodies = new Map<string, Buffer>([
    ["random-4095", randomBytes(4095)],
    ["random-4096", randomBytes(4096)],
    ["text-20000", Buffer.from("RocketBun says hello to ali-ons. ".repeat(700).slice(0, 20_000))],
    ["random-65536-a", randomBytes(65536)],
    ["random-65536-b", randomBytes(65536)],
  ]);
  const got = new Map<string, { body: Buffer; compressed: boolean }[]>();
  const consumer = c.consumer({ consumerGroup: "GID_ali_big", instanceName: "ali-big", rebalanceInterval: 1000 });
  consumer.subscribe(topic, "*", async (msg) => {
    const key = msg.keys ?? "?";
    got.set(key, [...(got.get(key) ?? []), { body: msg.body, compressed: (msg.sysFlag & 1) === 1 }]);
  });
  await consumer.ready();
  await waitAssigned(c, consumer, topic, 8);
  const producer = await c.producer("PID_ali_big");
  for (const [key, body] of bodies) {
    const msg = new Message(topic, "TagBig", Buffer.from(body)); // the producer replaces msg.body with the compressed bytes
    // @ts-expect-error ali-ons' keys setter takes an array
    msg.keys = [key];
    expect((await producer.send(msg)).sendStatus).toBe("SEND_OK");
  }
  await until(
    () => got.size === bodies.size,
    20_000,
    () => `${bodies.size} bodies (got ${[...got.keys()]})${c.diag()}`,
  );
  await Bun.sleep(500);
  for (const [key, body] of bodies) {
    const g = got.get(key)!;
    expect(g.length).toBe(1);
    expect(g[0]!.body.length).toBe(body.length);
    expect(Buffer.compare(g[0]!.body, body)).toBe(0);
    expect(g[0]!.compressed).toBe(body.length >= 4096);
  }
}, 30_000);

test("a broadcasting group of two ali-ons consumers: every message reaches both", async () => {
  await using c = await Cluster.start();
  const topic = "ali_bcast";
  const group = "GID_ali_bcast";
  await c.createTopic(topic);
  const got: Record<"x" | "y", string[]> = { x: [], y: [] };
  const start = (who: "x" | "y") => {
    const consumer = c.consumer({ consumerGroup: group, instanceName: `ali-bcast-${who}`, isBroadcast: true, rebalanceInterval: 1000 });
    consumer.subscribe(topic, "*", async (msg) => {
      got[who].push(msg.body.toString());
    });
    return consumer;
  };
  const x = start("x");
  const y = start("y");
  await Promise.all([x.ready(), y.ready()]);
  // Broadcasting consumers start at the max offset, so both must own all queues before the sends.
  await waitAssigned(c, x, topic, 8);
  await waitAssigned(c, y, topic, 8);
  await until(
    async () => (await c.consumerIds(group)).length === 2,
    10_000,
    () => `two members of ${group}${c.diag()}`,
  );
  const producer = await c.producer("PID_ali_bcast");
  const want = Array.from({ length: 40 }, (_, i) => `b-${i}`);
  for (const body of want) expect((await producer.send(new Message(topic, "TagB", body))).sendStatus).toBe("SEND_OK");
  await until(
    () => new Set(got.x).size === 40 && new Set(got.y).size === 40,
    20_000,
    () => `40 messages at both (x ${got.x.length}, y ${got.y.length})${c.diag()}`,
  );
  await Bun.sleep(1000);
  expect(dupes(got.x)).toEqual([]);
  expect(dupes(got.y)).toEqual([]);
  expect(new Set(got.x)).toEqual(new Set(want));
  expect(new Set(got.y)).toEqual(new Set(want));
}, 30_000);

test("a tag subscription 'TagA || TagC' receives only those tags, and the broker filters them", async () => {
  await using c = await Cluster.start();
  const topic = "ali_tags";
  await c.createTopic(topic);
  const tags = ["TagA", "TagB", "TagC", "TagD"];
  const got: { body: string; tags: string | null }[] = [];
  const consumer = c.consumer({ consumerGroup: "GID_ali_tags", instanceName: "ali-tags", rebalanceInterval: 1000 });
  consumer.subscribe(topic, "TagA || TagC", async (msg) => {
    got.push({ body: msg.body.toString(), tags: msg.tags });
  });
  await consumer.ready();
  await waitAssigned(c, consumer, topic, 8);
  const producer = await c.producer("PID_ali_tags");
  for (let i = 0; i < 80; i++) expect((await producer.send(new Message(topic, tags[i % 4]!, `t-${i}-${tags[i % 4]}`))).sendStatus).toBe("SEND_OK");
  const want = Array.from({ length: 80 }, (_, i) => `t-${i}-${tags[i % 4]}`).filter((b) => b.endsWith("TagA") || b.endsWith("TagC"));
  await until(
    () => new Set(got.map((g) => g.body)).size === want.length,
    20_000,
    () => `${want.length} TagA/TagC messages (got ${got.length})${c.diag()}`,
  );
  await Bun.sleep(1000);
  expect(got.filter((g) => g.tags !== "TagA" && g.tags !== "TagC")).toEqual([]);
  expect(dupes(got.map((g) => g.body))).toEqual([]);
  expect(new Set(got.map((g) => g.body))).toEqual(new Set(want));

  // ali-ons also filters client-side, so check the broker's own filter with raw pulls.
  const filtered: OnsMessage[] = [];
  const everything: OnsMessage[] = [];
  for (let q = 0; q < 8; q++) {
    filtered.push(...(await c.pullAll(topic, q, "TagA || TagC")));
    everything.push(...(await c.pullAll(topic, q, "*")));
  }
  expect(everything.length).toBe(80);
  expect([...new Set(filtered.map((m) => m.tags))].sort()).toEqual(["TagA", "TagC"]);
  expect(filtered.length).toBe(want.length);
}, 30_000);

test("a delayed message (delayTimeLevel 2 = 5 s) arrives after its level's delay, not before", async () => {
  await using c = await Cluster.start();
  const topic = "ali_delay";
  await c.createTopic(topic);
  const arrived = new Map<string, { at: number; topic: string; queueId: number }>();
  const consumer = c.consumer({ consumerGroup: "GID_ali_delay", instanceName: "ali-delay", rebalanceInterval: 1000 });
  consumer.subscribe(topic, "*", async (msg) => {
    arrived.set(msg.body.toString(), { at: Date.now(), topic: msg.topic, queueId: msg.queueId });
  });
  await consumer.ready();
  await waitAssigned(c, consumer, topic, 8);
  const producer = await c.producer("PID_ali_delay");
  const delayed = new Message(topic, "TagDelay", "delayed-level-2");
  delayed.delayTimeLevel = 2;
  const t0 = Date.now();
  expect((await producer.send(delayed)).sendStatus).toBe("SEND_OK");
  expect((await producer.send(new Message(topic, "TagNow", "not-delayed"))).sendStatus).toBe("SEND_OK");
  await until(
    () => arrived.has("not-delayed"),
    5000,
    () => `the undelayed control message${c.diag()}`,
  );
  expect(arrived.get("not-delayed")!.at - t0).toBeLessThan(3000);
  await until(
    () => arrived.has("delayed-level-2"),
    15_000,
    () => `the delayed message${c.diag()}`,
  );
  const d = arrived.get("delayed-level-2")!;
  const elapsed = d.at - t0;
  note("delay level 2 elapsed ms", elapsed);
  expect(d.topic).toBe(topic);
  expect(elapsed).toBeGreaterThanOrEqual(DELAY_LEVEL_MS[1]! - 100);
  expect(elapsed).toBeLessThan(DELAY_LEVEL_MS[1]! + 5000);
}, 30_000);

test("msg.setStartDeliverTime(now + 3 s) arrives about 3 s later", async () => {
  await using c = await Cluster.start();
  const topic = "ali_deliver_time";
  await c.createTopic(topic);
  const arrived = new Map<string, number>();
  const consumer = c.consumer({ consumerGroup: "GID_ali_deliver_time", instanceName: "ali-deliver-time", rebalanceInterval: 1000 });
  consumer.subscribe(topic, "*", async (msg) => {
    arrived.set(msg.body.toString(), Date.now());
  });
  await consumer.ready();
  await waitAssigned(c, consumer, topic, 8);
  const producer = await c.producer("PID_ali_deliver_time");
  const t0 = Date.now();
  const msg = new Message(topic, "TagTimer", "deliver-at-t0+3s");
  msg.setStartDeliverTime(t0 + 3000);
  expect((await producer.send(msg)).sendStatus).toBe("SEND_OK");
  expect((await producer.send(new Message(topic, "TagNow", "not-delayed"))).sendStatus).toBe("SEND_OK");
  await until(
    () => arrived.has("not-delayed"),
    5000,
    () => `the undelayed control message${c.diag()}`,
  );
  await until(
    () => arrived.has("deliver-at-t0+3s"),
    12_000,
    () => `the timed message${c.diag()}`,
  );
  const elapsed = arrived.get("deliver-at-t0+3s")! - t0;
  note("start deliver time elapsed ms", elapsed);
  expect(elapsed).toBeGreaterThanOrEqual(3000 - 100);
  expect(elapsed).toBeLessThanOrEqual(3000 + 2000);
}, 30_000);

test("transactions: an ali-ons consumer gets a message committed through TransactionProducer once, never a rolled-back one; an ali-ons half message stays invisible", async () => {
  // ali-ons has no transactional producer (no END_TRANSACTION, check-backs ignored): it can only
  // consume committed messages, or send a half message (TRAN_MSG) that nobody ever ends.
  await using c = await Cluster.start();
  const topic = "ali_tx";
  await c.createTopic(topic, 2);
  const got: string[] = [];
  const consumer = c.consumer({ consumerGroup: "GID_ali_tx", instanceName: "ali-tx" });
  consumer.subscribe(topic, "*", async (msg) => void got.push(msg.body.toString()));
  await consumer.ready();
  await waitAssigned(c, consumer, topic, 2);

  const tx = new TransactionProducer({ namesrv: c.nsAddr, group: "PID_ali_tx_ours", checkListener: () => "ROLLBACK" });
  await tx.start();
  try {
    expect((await tx.sendMessageInTransaction({ topic, body: "tx-commit" }, () => "COMMIT")).localState).toBe("COMMIT");
    expect((await tx.sendMessageInTransaction({ topic, body: "tx-rollback" }, () => "ROLLBACK")).localState).toBe("ROLLBACK");
  } finally {
    await tx.shutdown();
  }
  const producer = await c.producer("PID_ali_tx");
  const half = new Message(topic, "t", "ali-half");
  half.properties.TRAN_MSG = "true";
  expect((await producer.send(half)).sendStatus).toBe("SEND_OK");

  await until(
    () => got.includes("tx-commit"),
    15_000,
    () => `the committed message (have ${got})${c.diag()}`,
  );
  await Bun.sleep(1500);
  expect(got).toEqual(["tx-commit"]);
});
