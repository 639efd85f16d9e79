/**
 * POP consumption through the in-process broker on virtual time (docs/PROTOCOL.md §3.21): pop,
 * ack, the invisible time and the revive into the POP retry topic, change of the invisible time,
 * long polling woken by the store's arrival listener, the answers to bad requests, and in-flight
 * state read back after a restart (a clean stop and a crash alike).
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodeReceiptHandle, encodeBatchAckBits, popRetryTopic } from "../../protocol/pop.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import { parseProperties } from "../../commitlog/index.ts";
import { createTopicRequest, InProcessBroker, pulledRecords, sendV2Request } from "../test-support.ts";

const G = "GP";
const BROKER = "broker-a";
const T = "TP";

function popRequest(
  b: InProcessBroker,
  o: { queueId?: number; max?: number; invisibleTime?: number; pollTime?: number; exp?: string; initMode?: number; order?: boolean } = {},
): RemotingCommand {
  return createRequest(RequestCode.POP_MESSAGE, {
    consumerGroup: G,
    topic: T,
    queueId: String(o.queueId ?? -1),
    maxMsgNums: String(o.max ?? 32),
    invisibleTime: String(o.invisibleTime ?? 60_000),
    pollTime: String(o.pollTime ?? 0),
    bornTime: String(b.sim.now),
    initMode: String(o.initMode ?? 0),
    expType: "TAG",
    exp: o.exp ?? "*",
    order: String(o.order ?? false),
  });
}

/** The handle the 5.3 client builds for message i of a pop answer (MQClientAPIImpl.processPopResponse). */
function handles(res: RemotingCommand): { topic: string; queueId: number; offset: number; extraInfo: string; reconsumeTimes: number }[] {
  const ext = res.extFields!;
  const start = new Map(ext.startOffsetInfo!.split(";").map((e) => { const [r, q, o] = e.split(" "); return [`${r}@${q}`, Number(o)]; }));
  return pulledRecords(res).map((rec) => {
    const ck = parseProperties(rec.properties).POP_CK;
    if (ck) return { topic: rec.topic, queueId: rec.queueId, offset: rec.queueOffset, extraInfo: ck, reconsumeTimes: rec.reconsumeTimes };
    const so = start.get(`0@${rec.queueId}`)!;
    const extraInfo = `${so} ${ext.popTime} ${ext.invisibleTime} ${ext.reviveQid} 0 ${BROKER} ${rec.queueId} ${rec.queueOffset}`;
    return { topic: rec.topic, queueId: rec.queueId, offset: rec.queueOffset, extraInfo, reconsumeTimes: rec.reconsumeTimes };
  });
}

function ackRequest(h: { extraInfo: string; queueId: number; offset: number }, code: number = RequestCode.ACK_MESSAGE, invisibleTime?: number): RemotingCommand {
  const info = decodeReceiptHandle(h.extraInfo);
  const topic = !("invalid" in info) && info.retry === "1" ? popRetryTopic(T, G) : T;
  return createRequest(code, {
    consumerGroup: G,
    topic,
    queueId: String(h.queueId),
    extraInfo: h.extraInfo,
    offset: String(h.offset),
    ...(invisibleTime !== undefined ? { invisibleTime: String(invisibleTime) } : {}),
  });
}

/** How many messages the POP retry topic holds (GET_MAX_OFFSET; 0 before it exists). */
async function retried(b: InProcessBroker): Promise<number> {
  const res = await b.call(createRequest(RequestCode.GET_MAX_OFFSET, { topic: popRetryTopic(T, G), queueId: "0" }));
  return Number(res.extFields?.offset ?? 0);
}

async function withTopic(b: InProcessBroker, n: number, queues = 1): Promise<void> {
  await b.ok(createTopicRequest(T, queues));
  for (let i = 0; i < n; i++) await b.ok(sendV2Request(T, `m${i}`, { queueId: i % queues, tags: i % 2 === 0 ? "even" : "odd" }));
}

describe("POP_MESSAGE and ACK_MESSAGE", () => {
  test("a pop takes every message once, with the offset infos a client builds handles from; acked ones never come back", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 6, 2);
    const res = await b.call(popRequest(b));
    expect(res.code).toBe(ResponseCode.SUCCESS);
    const got = handles(res);
    expect(got.map((h) => h.offset).sort()).toEqual([0, 0, 1, 1, 2, 2]);
    expect(res.extFields!.msgOffsetInfo!.split(";").sort()).toEqual(["0 0 0,1,2", "0 1 0,1,2"]);
    // Nothing more to pop: 210 at once without a poll time.
    expect((await b.call(popRequest(b))).code).toBe(210);
    for (const h of got) expect((await b.call(ackRequest(h))).code).toBe(ResponseCode.SUCCESS);
    await b.advance(70_000);
    expect(await retried(b)).toBe(0);
    expect((await b.call(popRequest(b))).code).toBe(210);
  });

  test("an un-acked message is revived into %RETRY%{group}_{topic} after its invisible time and popped again under its topic, reconsumeTimes 1", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 3);
    const first = handles(await b.ok(popRequest(b, { invisibleTime: 10_000 })));
    await b.call(ackRequest(first[0]!));
    await b.advance(9_000);
    expect(await retried(b)).toBe(0);
    await b.advance(3_000);
    expect(await retried(b)).toBe(2);
    const again = await b.ok(popRequest(b));
    const recs = pulledRecords(again);
    expect(recs.map((r) => [r.topic, new TextDecoder().decode(r.body), r.reconsumeTimes])).toEqual([
      [T, "m1", 1],
      [T, "m2", 1],
    ]);
    const hs = handles(again);
    expect(hs.map((h) => (decodeReceiptHandle(h.extraInfo) as { retry: string }).retry)).toEqual(["1", "1"]);
    for (const h of hs) expect((await b.call(ackRequest(h))).code).toBe(ResponseCode.SUCCESS);
    await b.advance(120_000);
    expect(await retried(b)).toBe(2);
  });

  test("CHANGE_MESSAGE_INVISIBLETIME moves the revive: not at the old time, at the new one", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 1);
    const [h] = handles(await b.ok(popRequest(b, { invisibleTime: 10_000 })));
    const res = await b.call(ackRequest(h!, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, 30_000));
    expect(res.code).toBe(ResponseCode.SUCCESS);
    expect(res.extFields!.invisibleTime).toBe("30000");
    await b.advance(15_000);
    expect(await retried(b)).toBe(0);
    await b.advance(20_000);
    expect(await retried(b)).toBe(1);
  });

  test("a parked pop is answered by the next matching send, with no time passing; a non-matching tag does not wake it", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 0);
    const parked = b.call(popRequest(b, { pollTime: 15_000, exp: "even" }));
    await b.advance(10);
    await b.ok(sendV2Request(T, "odd one", { tags: "odd" }));
    await b.ok(sendV2Request(T, "even one", { tags: "even" }));
    const res = await parked;
    expect(res.code).toBe(ResponseCode.SUCCESS);
    expect(pulledRecords(res).map((r) => new TextDecoder().decode(r.body))).toEqual(["even one"]);
  });

  test("a parked pop that nothing wakes answers POLLING_TIMEOUT (210) at its poll time", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 0);
    const parked = b.call(popRequest(b, { pollTime: 5_000 }));
    await b.advance(5_100);
    expect((await parked).code).toBe(210);
  });

  test("bad requests get Java's codes and change nothing", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 2);
    const bad = (o: Record<string, string>) => createRequest(RequestCode.POP_MESSAGE, { ...popRequest(b).extFields, ...o });
    expect((await b.call(bad({ maxMsgNums: "33" }))).code).toBe(ResponseCode.INVALID_PARAMETER);
    expect((await b.call(bad({ invisibleTime: String(3 * 24 * 3600 * 1000 + 1) }))).code).toBe(ResponseCode.INVALID_PARAMETER);
    expect((await b.call(bad({ invisibleTime: "-1" }))).code).toBe(ResponseCode.INVALID_PARAMETER);
    expect((await b.call(bad({ topic: "NOPE" }))).code).toBe(ResponseCode.TOPIC_NOT_EXIST);
    expect((await b.call(bad({ queueId: "7" }))).code).toBe(ResponseCode.INVALID_PARAMETER);
    expect((await b.call(bad({ expType: "SQL92", exp: "a >" }))).code).toBe(ResponseCode.SUBSCRIPTION_PARSE_FAILED);
    const [h] = handles(await b.ok(popRequest(b, { max: 1 })));
    const forged = await b.call(ackRequest({ ...h!, extraInfo: "12 x" }));
    expect(forged.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(forged.remark).toContain("extraInfoStrs length 2");
    expect((await b.call(ackRequest({ ...h!, offset: 99 }))).code).toBe(ResponseCode.NO_MESSAGE);
    // A well-formed handle of nothing in flight: SUCCESS, as Java, and the real one still revives.
    expect((await b.call(ackRequest({ ...h!, extraInfo: h!.extraInfo.replace(/^(\d+) (\d+)/, "$1 1") }))).code).toBe(ResponseCode.SUCCESS);
    await b.advance(62_000);
    expect(await retried(b)).toBe(1);
  });

  test("BATCH_ACK_MESSAGE acks the offsets its bit set names", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 3);
    const res = await b.ok(popRequest(b, { invisibleTime: 10_000 }));
    const h = decodeReceiptHandle(handles(res)[0]!.extraInfo);
    if ("invalid" in h) throw new Error(h.invalid);
    const body = { brokerName: "broker-a", acks: [{ c: G, t: T, r: "0", so: h.ckQueueOffset, q: 0, rq: h.reviveQid, pt: h.popTime, it: h.invisibleTime, b: encodeBatchAckBits(h.ckQueueOffset, [0, 2]) }] };
    expect((await b.call(createRequest(RequestCode.BATCH_ACK_MESSAGE, {}, new TextEncoder().encode(JSON.stringify(body))))).code).toBe(ResponseCode.SUCCESS);
    await b.advance(12_000);
    const retried = await b.ok(popRequest(b));
    expect(pulledRecords(retried).map((r) => new TextDecoder().decode(r.body))).toEqual(["m1"]);
  });
});

describe("PEEK_MESSAGE, NOTIFICATION, POLLING_INFO, the retry limit, the slave", () => {
  const req = (code: number, o: Record<string, string> = {}) =>
    createRequest(code, { consumerGroup: G, topic: T, queueId: "-1", maxMsgNums: "32", pollTime: "0", bornTime: "0", ...o });

  test("PEEK_MESSAGE shows what a pop would take and changes nothing; 19 when the queue is empty", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 2);
    const peek = await b.call(req(RequestCode.PEEK_MESSAGE, { queueId: "0" }));
    expect(peek.code).toBe(ResponseCode.SUCCESS);
    expect(pulledRecords(peek).map((r) => r.queueOffset)).toEqual([0, 1]);
    expect(pulledRecords(await b.ok(popRequest(b))).length).toBe(2);
    expect((await b.call(req(RequestCode.PEEK_MESSAGE, { queueId: "0" }))).code).toBe(ResponseCode.PULL_NOT_FOUND);
  });

  test("NOTIFICATION says whether a message waits, parks until one comes, and POLLING_INFO counts parked pops", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 0);
    expect((await b.ok(req(RequestCode.NOTIFICATION))).extFields!.hasMsg).toBe("false");
    const parkedPop = b.call(popRequest(b, { pollTime: 15_000 }));
    const parkedNote = b.call(req(RequestCode.NOTIFICATION, { pollTime: "15000", bornTime: String(b.sim.now) }));
    await b.advance(10);
    expect((await b.ok(req(RequestCode.POLLING_INFO))).extFields!.pollingNum).toBe("1");
    await b.ok(sendV2Request(T, "m"));
    expect((await parkedPop).code).toBe(ResponseCode.SUCCESS);
    expect((await parkedNote).extFields!.hasMsg).toBe("true"); // woken by the same arrival
    expect((await b.ok(req(RequestCode.POLLING_INFO))).extFields!.pollingNum).toBe("0");
    await b.ok(sendV2Request(T, "n"));
    expect((await b.ok(req(RequestCode.NOTIFICATION))).extFields!.hasMsg).toBe("true");
  });

  test("a message revived past the group's retryMaxTimes goes to %DLQ%{group} once", async () => {
    await using b = InProcessBroker.start();
    const upsert = { groupName: G, retryMaxTimes: 1 };
    await b.ok(createRequest(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, undefined, new TextEncoder().encode(JSON.stringify(upsert))));
    await withTopic(b, 1);
    await b.ok(popRequest(b, { invisibleTime: 5_000 }));
    await b.advance(7_000); // reconsumeTimes 1: the retry topic
    expect(await retried(b)).toBe(1);
    const again = await b.ok(popRequest(b, { invisibleTime: 5_000 }));
    expect(pulledRecords(again)[0]!.reconsumeTimes).toBe(1);
    await b.advance(7_000); // reconsumeTimes 2 > 1: the DLQ
    const dlq = await b.call(createRequest(RequestCode.GET_MAX_OFFSET, { topic: `%DLQ%${G}`, queueId: "0" }));
    expect(dlq.extFields!.offset).toBe("1");
    expect(await retried(b)).toBe(1);
    await b.advance(60_000);
    expect((await b.call(createRequest(RequestCode.GET_MAX_OFFSET, { topic: `%DLQ%${G}`, queueId: "0" }))).extFields!.offset).toBe("1");
  });

  test("a slave refuses pops and acks", async () => {
    await using b = InProcessBroker.start({ role: "slave" });
    expect((await b.call(popRequest(b))).code).not.toBe(ResponseCode.SUCCESS);
    const ack = ackRequest({ extraInfo: "0 1 60000 0 0 broker-a 0 0", queueId: 0, offset: 0 });
    expect([ResponseCode.SYSTEM_ERROR, ResponseCode.TOPIC_NOT_EXIST] as number[]).toContain((await b.call(ack)).code);
  });
});

describe("FIFO pops (order=true)", () => {
  const bodies = (res: RemotingCommand) => pulledRecords(res).map((r) => new TextDecoder().decode(r.body));

  test("a queue is blocked while its batch is in flight; acks move the offset to the first un-acked message", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 3);
    const first = await b.ok(popRequest(b, { order: true, invisibleTime: 10_000 }));
    expect(first.extFields!.reviveQid).toBe("999");
    expect(first.extFields!.orderCountInfo).toBe("0 0 0");
    expect(bodies(first)).toEqual(["m0", "m1", "m2"]);
    await b.ok(sendV2Request(T, "m3"));
    expect((await b.call(popRequest(b, { order: true }))).code).toBe(210);
    const hs = handles(first);
    await b.ok(ackRequest(hs[1]!)); // out of order: the offset stays at 0
    expect((await b.call(popRequest(b, { order: true }))).code).toBe(210);
    await b.ok(ackRequest(hs[0]!));
    await b.ok(ackRequest(hs[2]!));
    const next = await b.ok(popRequest(b, { order: true }));
    expect(bodies(next)).toEqual(["m3"]);
    // An ack of a batch no longer the queue's (a stale pop time) changes nothing.
    expect((await b.call(ackRequest(hs[0]!))).code).toBe(ResponseCode.SUCCESS);
  });

  test("an expired batch is popped again, in order, each message's deliveries counted", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 2);
    const first = await b.ok(popRequest(b, { order: true, invisibleTime: 5_000 }));
    await b.ok(ackRequest(handles(first)[0]!));
    await b.advance(6_000);
    const again = await b.ok(popRequest(b, { order: true, invisibleTime: 5_000 }));
    expect(bodies(again)).toEqual(["m1"]);
    expect(again.extFields!.orderCountInfo).toBe("0 qo0%1 1;0 0 1");
    // Nothing went through the retry topic.
    expect(await retried(b)).toBe(0);
  });

  test("CHANGE_MESSAGE_INVISIBLETIME of an orderly handle keeps the queue blocked until the new time", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b, 1);
    const [h] = handles(await b.ok(popRequest(b, { order: true, invisibleTime: 5_000 })));
    const res = await b.ok(ackRequest(h!, RequestCode.CHANGE_MESSAGE_INVISIBLETIME, 20_000));
    expect(res.extFields!.reviveQid).toBe("999");
    await b.advance(10_000);
    expect((await b.call(popRequest(b, { order: true }))).code).toBe(210);
    await b.advance(11_000);
    expect(bodies(await b.ok(popRequest(b, { order: true })))).toEqual(["m0"]);
  });
});

describe("in-flight state across restarts", () => {
  for (const how of ["clean stop", "crash"] as const) {
    test(`after a ${how}, un-acked messages come back after their invisible time and acked ones never do`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "rocketbun-pop-"));
      try {
        const first = InProcessBroker.start({ dir });
        await withTopic(first, 4);
        const hs = handles(await first.ok(popRequest(first, { invisibleTime: 30_000 })));
        for (const h of hs.slice(0, 2)) await first.ok(ackRequest(h));
        if (how === "clean stop") await first.stop();
        else await first.crash();
        await using second = InProcessBroker.start({ dir });
        // Nothing is popped twice from the topic: the offsets were read back from the checkpoints.
        expect((await second.call(popRequest(second))).code).toBe(210);
        await second.advance(35_000);
        const again = await second.ok(popRequest(second));
        expect(pulledRecords(again).map((r) => new TextDecoder().decode(r.body)).sort()).toEqual(["m2", "m3"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
