/**
 * rocketbun/client Producer against the compiled binary (standalone, test-min settings): send
 * results, round-robin over queues, what arrives (tags, keys, properties, compressed bodies,
 * batches, oneway), ordered sends through a selector, delayed and timed delivery, and errors.
 * Arrival is checked with raw pulls (records decoded with decodeRecordAt, so the stored bytes —
 * sysFlag, properties — are seen as the broker keeps them) or with a PullConsumer.
 */
import { expect } from "bun:test";
import { compatTest } from "../harness/compat.ts";
import { deflateSync, inflateSync } from "node:zlib";
import { MQBrokerError, MQClientError, Producer, type MessageExt, type MessageQueue, type SendResult } from "rocketbun/client";
import { SysFlag } from "../../src/protocol/sys-flag.ts";
import { parseProperties } from "../../src/common/message-record.ts";
import { Env, text, uniq, until } from "./support.ts";

/** Each test is a row of docs/COMPATIBILITY.md (rocketbun-client against RocketBun). */
const test = compatTest("rocketbun-client", "rocketbun");

const SEND_STATUSES = ["SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"];

/** Everything currently in the topic's queues, through a PullConsumer of a fresh group (assigned all queues, from offset 0). */
async function pullEverything(env: Env, topic: string, expected: number, timeoutMs = 10_000): Promise<MessageExt[]> {
  const c = env.pull({ group: uniq("inspect"), fromWhere: "first", autoCommit: false });
  await c.start();
  c.assign(await c.fetchQueues(topic));
  const got: MessageExt[] = [];
  await until(
    async () => {
      got.push(...(await c.poll(200)));
      return got.length >= expected;
    },
    timeoutMs,
    () => `${expected} messages in ${topic} (have ${got.length})${env.diag()}`,
  );
  await c.shutdown();
  return got;
}

test("send: SEND_OK with msgId, offsetMsgId, queue and queueOffset; round-robin covers every queue evenly", async () => {
  await using env = await Env.start();
  const topic = uniq("T_send");
  await env.createTopic(topic, 4);
  const p = await env.producer();
  const results: SendResult[] = [];
  for (let i = 0; i < 40; i++) results.push(await p.send({ topic, body: `m-${i}` }));

  for (const r of results) {
    expect(SEND_STATUSES).toContain(r.status);
    expect(r.status).toBe("SEND_OK");
    expect(r.msgId).toMatch(/^[0-9A-F]{32}$/);
    expect(r.offsetMsgId).toMatch(/^[0-9A-F]{32}$/);
    expect(r.queue.topic).toBe(topic);
    expect(r.queue.brokerName).toBe("broker-a");
    expect(r.queue.queueId).toBeGreaterThanOrEqual(0);
    expect(r.queue.queueId).toBeLessThan(4);
    expect(r.queueOffset).toBeGreaterThanOrEqual(0);
  }
  expect(new Set(results.map((r) => r.msgId)).size).toBe(40);
  expect(new Set(results.map((r) => r.offsetMsgId)).size).toBe(40);
  // Round-robin: consecutive sends go to consecutive queues, so 40 sends give 10 per queue…
  const perQueue = [0, 1, 2, 3].map((q) => results.filter((r) => r.queue.queueId === q).length);
  expect(perQueue).toEqual([10, 10, 10, 10]);
  for (let i = 1; i < results.length; i++) expect(results[i]!.queue.queueId).toBe((results[i - 1]!.queue.queueId + 1) % 4);
  // …and each queue's offsets are 0..9 in send order.
  for (let q = 0; q < 4; q++) {
    expect(results.filter((r) => r.queue.queueId === q).map((r) => r.queueOffset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await env.maxOffset(topic, q)).toBe(10);
  }
  // The stored record at (queue, offset) is the one the result names.
  const r7 = results[7]!;
  const rec = (await env.rawRecords(topic, r7.queue.queueId, r7.queueOffset))[0]!;
  expect(text(rec.body)).toBe("m-7");
  expect(parseProperties(rec.properties).UNIQ_KEY).toBe(r7.msgId);
}, 30_000);

test("tags, keys and properties arrive; string and Uint8Array bodies arrive byte for byte", async () => {
  await using env = await Env.start();
  const topic = uniq("T_props");
  await env.createTopic(topic, 2);
  const p = await env.producer();
  const binary = new Uint8Array(256).map((_, i) => i);
  const a = await p.send({ topic, body: "hi ünïcødé ✓", tags: "TagA", keys: ["k1", "k2"], properties: { a: "1", "x-y": "z w" } });
  const b = await p.send({ topic, body: binary, tags: "TagB", keys: "single", properties: { b: "2" } });
  const c = await p.send({ topic, body: "", flag: 7 });

  const got = await pullEverything(env, topic, 3);
  const byId = new Map(got.map((m) => [m.msgId, m]));
  const ma = byId.get(a.msgId)!;
  expect(ma.topic).toBe(topic);
  expect(text(ma.body)).toBe("hi ünïcødé ✓");
  expect(ma.tags).toBe("TagA");
  expect(ma.keys).toEqual(["k1", "k2"]);
  expect(ma.properties).toMatchObject({ a: "1", "x-y": "z w", TAGS: "TagA", KEYS: "k1 k2" });
  expect(ma.queueId).toBe(a.queue.queueId);
  expect(ma.queueOffset).toBe(a.queueOffset);
  expect(ma.offsetMsgId).toBe(a.offsetMsgId);
  expect(ma.reconsumeTimes).toBe(0);
  expect(ma.bornTimestamp).toBeGreaterThan(Date.now() - 60_000);
  expect(ma.storeTimestamp).toBeGreaterThanOrEqual(ma.bornTimestamp - 1000);
  const mb = byId.get(b.msgId)!;
  expect([...mb.body]).toEqual([...binary]);
  expect(mb.tags).toBe("TagB");
  expect(mb.keys).toEqual(["single"]);
  expect(mb.properties.b).toBe("2");
  expect(mb.properties.a).toBeUndefined();
  const mc = byId.get(c.msgId)!;
  expect(mc.body.length).toBe(0);
  expect(mc.tags).toBeUndefined();
  expect(mc.keys).toEqual([]);
  expect(mc.flag).toBe(7);
}, 30_000);

test("a 10 KiB body is zlib-compressed on the wire (sysFlag COMPRESSED in the stored record) and arrives intact; a small one is not", async () => {
  await using env = await Env.start({ config: { broker: { maxMessageSizeBytes: 60_000 } } });
  const topic = uniq("T_zip");
  await env.createTopic(topic, 1);
  const p = await env.producer();
  // Compressible but not trivial: a repeating text with a counter.
  const big = Array.from({ length: 1000 }, (_, i) => `line ${i};`)
    .join("")
    .padEnd(10 * 1024, "x")
    .slice(0, 10 * 1024);
  expect(big.length).toBe(10 * 1024);
  const rBig = await p.send({ topic, body: big, tags: "Big" });
  const rSmall = await p.send({ topic, body: "small", tags: "Small" });
  const rRandom = await p.send({ topic, body: crypto.getRandomValues(new Uint8Array(10 * 1024)) });

  const recs = await env.rawRecords(topic, 0);
  expect(recs.length).toBe(3);
  const [big0, small0, random0] = recs;
  expect(big0!.sysFlag & SysFlag.COMPRESSED).toBe(SysFlag.COMPRESSED);
  expect(big0!.body.length).toBeLessThan((10 * 1024) / 2);
  expect(new TextDecoder().decode(inflateSync(big0!.body))).toBe(big);
  expect(small0!.sysFlag & SysFlag.COMPRESSED).toBe(0);
  expect(text(small0!.body)).toBe("small");
  expect(random0!.sysFlag & SysFlag.COMPRESSED).toBe(SysFlag.COMPRESSED);

  const got = await pullEverything(env, topic, 3);
  const byId = new Map(got.map((m) => [m.msgId, m]));
  expect(text(byId.get(rBig.msgId)!.body)).toBe(big);
  expect(text(byId.get(rSmall.msgId)!.body)).toBe("small");
  expect(byId.get(rRandom.msgId)!.body.length).toBe(10 * 1024);
  // A deflate of the same body is what the stored bytes inflate from (zlib framing, not raw deflate).
  expect(big0!.body[0]).toBe(deflateSync("x")[0]!);
}, 30_000);

test("sendBatch stores the messages contiguously in one queue with their tags, keys and properties", async () => {
  await using env = await Env.start();
  const topic = uniq("T_batch");
  await env.createTopic(topic, 4);
  const p = await env.producer();
  const msgs = Array.from({ length: 10 }, (_, i) => ({ topic, body: `b-${i}`, tags: `T${i % 2}`, keys: [`key-${i}`], properties: { i: String(i) } }));
  const r = await p.sendBatch(msgs);
  expect(r.status).toBe("SEND_OK");
  const ids = r.msgId.split(",");
  expect(ids.length).toBe(10);
  expect(new Set(ids).size).toBe(10);
  expect(r.offsetMsgId.split(",").length).toBe(10);
  const recs = await env.rawRecords(topic, r.queue.queueId);
  expect(recs.map((x) => text(x.body))).toEqual(msgs.map((m) => m.body));
  expect(recs.map((x) => x.queueOffset)).toEqual(Array.from({ length: 10 }, (_, i) => r.queueOffset + i));
  recs.forEach((x, i) => {
    const props = parseProperties(x.properties);
    expect(props).toMatchObject({ TAGS: `T${i % 2}`, KEYS: `key-${i}`, i: String(i), UNIQ_KEY: ids[i]! });
  });
  // Nothing else went anywhere.
  for (let q = 0; q < 4; q++) expect(await env.maxOffset(topic, q)).toBe(q === r.queue.queueId ? 10 : 0);

  await expect(p.sendBatch([])).rejects.toBeInstanceOf(MQClientError);
  await expect(
    p.sendBatch([
      { topic, body: "a" },
      { topic: `${topic}_other`, body: "b" },
    ]),
  ).rejects.toThrow(/same topic/);
  await expect(p.sendBatch([{ topic, body: "a", delayLevel: 2 }])).rejects.toThrow(/delayed/);
}, 30_000);

test("sendOneway: the message arrives although nothing is awaited", async () => {
  await using env = await Env.start();
  const topic = uniq("T_oneway");
  await env.createTopic(topic, 2);
  const p = await env.producer();
  const ret = p.sendOneway({ topic, body: "fire-and-forget", tags: "One", keys: ["ow"] });
  expect(ret).toBeUndefined();
  for (let i = 0; i < 5; i++) p.sendOneway({ topic, body: `ow-${i}` });
  const got = await pullEverything(env, topic, 6);
  expect(got.map((m) => text(m.body)).sort()).toEqual(["fire-and-forget", "ow-0", "ow-1", "ow-2", "ow-3", "ow-4"]);
  const first = got.find((m) => text(m.body) === "fire-and-forget")!;
  expect(first.tags).toBe("One");
  expect(first.keys).toEqual(["ow"]);
}, 30_000);

test("selector: ordered sends all land in the chosen queue, in send order; the selector sees every writable queue", async () => {
  await using env = await Env.start();
  const topic = uniq("T_order");
  await env.createTopic(topic, 4);
  const p = await env.producer();
  const seen: MessageQueue[][] = [];
  const selector = (queues: readonly MessageQueue[], orderId: number) => {
    seen.push([...queues]);
    return queues[orderId % queues.length]!;
  };
  const results = [];
  for (let i = 0; i < 60; i++) {
    const orderId = i % 3; // orders 0, 1, 2 → queues 0, 1, 2; queue 3 stays empty
    results.push({ orderId, i, r: await p.send({ topic, body: `o${orderId}-${i}` }, { selector, arg: orderId }) });
  }
  expect(seen[0]!.map((q) => q.queueId)).toEqual([0, 1, 2, 3]);
  for (const { orderId, r } of results) expect(r.queue.queueId).toBe(orderId);
  for (let q = 0; q < 3; q++) {
    const bodies = (await env.rawRecords(topic, q)).map((x) => text(x.body));
    expect(bodies).toEqual(results.filter((x) => x.orderId === q).map((x) => `o${q}-${x.i}`));
  }
  expect(await env.maxOffset(topic, 3)).toBe(0);
}, 30_000);

test("delayLevel 1 arrives about 1 s later; deliverAt arrives at its time; neither is visible before", async () => {
  await using env = await Env.start();
  const topic = uniq("T_delay");
  await env.createTopic(topic, 1);
  const p = await env.producer();
  const c = env.pull({ group: uniq("delay_reader"), fromWhere: "first", autoCommit: false });
  await c.start();
  c.assign(await c.fetchQueues(topic));

  const t0 = Date.now();
  await p.send({ topic, body: "now" });
  const rDelay = await p.send({ topic, body: "delayed-1s", delayLevel: 1 });
  const deliverAt = Date.now() + 2500;
  const rAt = await p.send({ topic, body: "at", deliverAt });
  expect(rDelay.status).toBe("SEND_OK");
  expect(rAt.status).toBe("SEND_OK");

  const arrivals = new Map<string, { at: number; m: MessageExt }>();
  await until(
    async () => {
      for (const m of await c.poll(100)) arrivals.set(text(m.body), { at: Date.now(), m });
      return arrivals.size >= 3;
    },
    10_000,
    () => `the three messages (have ${[...arrivals.keys()].join(", ")})${env.diag()}`,
  );
  const d = arrivals.get("delayed-1s")!;
  const at = arrivals.get("at")!;
  expect(arrivals.get("now")!.at - t0).toBeLessThan(900);
  expect(d.at - t0).toBeGreaterThanOrEqual(900);
  expect(d.at - t0).toBeLessThan(4000);
  expect(at.at).toBeGreaterThanOrEqual(deliverAt - 100);
  expect(at.at - deliverAt).toBeLessThan(2000);
  // Same client id and topic after re-delivery from the schedule topic; the delay property is gone.
  expect(d.m.msgId).toBe(rDelay.msgId);
  expect(d.m.topic).toBe(topic);
  expect(at.m.msgId).toBe(rAt.msgId);
  expect(d.m.storeTimestamp - d.m.bornTimestamp).toBeGreaterThanOrEqual(900);
}, 30_000);

test("an unknown topic (auto-creation off) fails with a typed MQClientError, code 17, saying what to do", async () => {
  await using env = await Env.start({ config: { broker: { autoCreateTopicEnable: false } } });
  const p = await env.producer({ sendTimeoutMs: 3000 });
  const topic = uniq("T_nope");
  let err: unknown;
  try {
    await p.send({ topic, body: "x" });
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(MQClientError);
  const e = err as MQClientError;
  expect(e.code).toBe(17);
  expect(e.message).toContain(topic);
  // Actionable: it names the way out.
  expect(e.message).toMatch(/UPDATE_AND_CREATE_TOPIC|autoCreateTopicEnable/);
  // Nothing was stored anywhere under that name.
  expect(await env.maxOffset(topic, 0)).toBeLessThanOrEqual(0);
  // Once the topic exists the same producer can send to it.
  await env.createTopic(topic, 2);
  await until(
    async () => (await p.send({ topic, body: "now it exists" }).catch(() => null))?.status === "SEND_OK",
    10_000,
    () => `a send to ${topic} after it was created`,
  );
}, 30_000);

test("with broker auto-creation on, a send to a new topic creates it (the TBW102 route as template) and spreads over its queues", async () => {
  await using env = await Env.start(); // standalone: autoCreateTopicEnable defaults to true
  const topic = uniq("T_auto");
  const p = await env.producer();
  const results: SendResult[] = [];
  for (let i = 0; i < 8; i++) results.push(await p.send({ topic, body: `auto-${i}` }));
  expect(results.every((r) => r.status === "SEND_OK")).toBe(true);
  // test-min's broker.defaultTopicQueueNums (4) queues, each used twice by round-robin.
  expect(results.map((r) => r.queue.queueId).sort()).toEqual([0, 0, 1, 1, 2, 2, 3, 3]);
  await env.waitRoute(topic, 4);
  const got = await pullEverything(env, topic, 8);
  expect(got.map((m) => text(m.body)).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `auto-${i}`));
}, 30_000);

test("sending before start, after shutdown, and bad options all throw MQClientError", async () => {
  await using env = await Env.start();
  const topic = uniq("T_state");
  await env.createTopic(topic, 1);
  expect(() => new Producer({ namesrv: env.namesrv, group: "" })).toThrow(MQClientError);
  expect(() => new Producer({ namesrv: "", group: "g" })).toThrow(/name server/);
  expect(() => new Producer({ namesrv: " ; ", group: "g" })).toThrow(MQClientError);

  const p = new Producer({ namesrv: env.namesrv, group: uniq("PG_state") });
  env.track("producer", p);
  await expect(p.send({ topic, body: "early" })).rejects.toThrow(/not running/);
  await p.start();
  await expect(p.start()).rejects.toBeInstanceOf(MQClientError);
  expect((await p.send({ topic, body: "ok" })).status).toBe("SEND_OK");
  await p.shutdown();
  await p.shutdown(); // idempotent
  await expect(p.send({ topic, body: "late" })).rejects.toThrow(MQClientError);
  await expect(p.send({ topic, body: "late" })).rejects.toThrow(/not running/);
  await expect(p.sendBatch([{ topic, body: "late" }])).rejects.toThrow(MQClientError);
  expect(() => p.sendOneway({ topic, body: "late" })).toThrow(MQClientError);
  await expect(p.start()).rejects.toThrow(/shutdown/);
  expect(await env.maxOffset(topic, 0)).toBe(1);

  // A selector returning nothing is a client error, not a crash.
  const p2 = await env.producer();
  await expect(p2.send({ topic, body: "x" }, { selector: () => undefined as unknown as MessageQueue })).rejects.toThrow(/selector/);
  // Broker errors are typed too: a body above broker.maxMessageSizeBytes (test-min: 16384) is refused.
  const tooBig = crypto.getRandomValues(new Uint8Array(20_000));
  const e = await p2.send({ topic, body: tooBig }).catch((x: unknown) => x);
  expect(e).toBeInstanceOf(MQBrokerError);
  expect((e as MQBrokerError).code).toBeGreaterThan(0);
}, 30_000);
