/**
 * The send processor's rules (docs/PROTOCOL.md §3.4, §3.9), checked in process through the broker
 * fixture (../test-support.ts): a whole BrokerController on virtual time and in-memory sockets,
 * so these run in milliseconds and a delayed message is delivered by moving the clock.
 * test/integration/broker-wire.test.ts checks the same wire behaviour against the binary.
 */
import { describe, expect, test } from "bun:test";
import { decodeOffsetMsgId, parseProperties } from "../../commitlog/index.ts";
import { SIM_EPOCH_MS } from "../../common/sim-clock.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import { createTopicRequest, InProcessBroker, pulledRecords, pullRequest, sendBatchRequest, sendV1Request, sendV2Request } from "../test-support.ts";

const dec = new TextDecoder();
const text = (r: { body: Uint8Array }) => dec.decode(r.body);

function expectCode(res: RemotingCommand, code: number, remark?: string): void {
  expect({ code: res.code, remark: res.remark }).toMatchObject({ code });
  if (remark !== undefined) expect(res.remark ?? "").toContain(remark);
}

describe("send processor", () => {
  test("a slave refuses every write with SERVICE_NOT_AVAILABLE, naming itself", async () => {
    await using b = InProcessBroker.start({ role: "slave" });
    expectCode(await b.call(sendV2Request("TBW102", "x")), ResponseCode.SERVICE_NOT_AVAILABLE, "is a slave");
    expectCode(await b.call(sendBatchRequest("TBW102", [{ body: "x" }])), ResponseCode.SERVICE_NOT_AVAILABLE, "is a slave");
  });

  test("topic names: illegal characters and over-long names are SYSTEM_ERROR, system topics NO_PERMISSION", async () => {
    await using b = InProcessBroker.start();
    expectCode(await b.call(sendV2Request("bad/topic", "x")), ResponseCode.SYSTEM_ERROR, "illegal characters");
    expectCode(await b.call(sendV2Request("x".repeat(128), "x")), ResponseCode.SYSTEM_ERROR, "longer than topic max length");
    expectCode(
      await b.call(sendV2Request("SCHEDULE_TOPIC_XXXX", "x")),
      ResponseCode.NO_PERMISSION,
      "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.",
    );
    expectCode(await b.call(sendV2Request("RMQ_SYS_TRANS_HALF_TOPIC", "x")), ResponseCode.NO_PERMISSION);
  });

  test("an unknown topic: TOPIC_NOT_EXIST with the hint when auto-creation is off, created from TBW102 when on", async () => {
    {
      await using off = InProcessBroker.start({ broker: { autoCreateTopicEnable: false } });
      expectCode(await off.call(sendV2Request("New", "x")), ResponseCode.TOPIC_NOT_EXIST, "enable broker.autoCreateTopicEnable");
      expect(off.controller.info.topic("New")).toBeUndefined();
    }
    await using on = InProcessBroker.start({ broker: { autoCreateTopicEnable: true, defaultTopicQueueNums: 8 } });
    const res = await on.ok(sendV2Request("New", "x", { queueId: 3 }));
    expect(res.extFields).toMatchObject({ queueId: "3", queueOffset: "0" });
    // The request's defaultTopicQueueNums (4), capped by TBW102's write queues (8); perm without INHERIT.
    expect(on.controller.info.topic("New")).toMatchObject({ readQueueNums: 4, writeQueueNums: 4, perm: 6 });
  });

  test("a refused send to an unknown topic creates nothing; the first stored message creates it (found by the port fuzzer)", async () => {
    await using b = InProcessBroker.start({ broker: { autoCreateTopicEnable: true, maxMessageSizeBytes: 1000 } });
    // Each refused by a check after the topic lookup: queue id, body size, batch body, properties size.
    expectCode(await b.call(sendV2Request("A1", "x", { queueId: 4 })), ResponseCode.SYSTEM_ERROR, "queueId[4] is illegal, A1 has 4 queues");
    expectCode(await b.call(sendV2Request("A2", new Uint8Array(1001))), ResponseCode.MESSAGE_ILLEGAL, "maxMessageSizeBytes");
    const badBatch = sendBatchRequest("A3", [{ body: "x" }]);
    badBatch.body = badBatch.body!.subarray(0, badBatch.body!.length - 1);
    expectCode(await b.call(badBatch), ResponseCode.MESSAGE_ILLEGAL, "batch body does not decode");
    expect((await b.call(sendV2Request("A4", "x", { props: { BIG: "p".repeat(32_768) } }))).code).not.toBe(ResponseCode.SUCCESS);
    for (const t of ["A1", "A2", "A3", "A4"]) expect(b.controller.info.topic(t)).toBeUndefined();
    await b.ok(sendV2Request("A1", "x", { queueId: 3 }));
    expect(b.controller.info.topic("A1")).toMatchObject({ readQueueNums: 4, writeQueueNums: 4, perm: 6 });
    expect(b.controller.info.queueOffsets("A1")[3]!.maxOffset).toBe(1);
  });

  test("queue id out of range is SYSTEM_ERROR; a read-only topic is NO_PERMISSION", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("S", 4));
    await b.ok(createTopicRequest("RO", 4, 4));
    expectCode(await b.call(sendV2Request("S", "x", { queueId: 4 })), ResponseCode.SYSTEM_ERROR, "queueId[4] is illegal");
    expectCode(await b.call(sendV2Request("RO", "x")), ResponseCode.NO_PERMISSION, "forbidden");
    // A negative queue id lets the broker pick one of the topic's write queues.
    const picked = await b.ok(sendV2Request("S", "x", { queueId: -1 }));
    expect(Number(picked.extFields!.queueId)).toBeGreaterThanOrEqual(0);
    expect(Number(picked.extFields!.queueId)).toBeLessThan(4);
  });

  test("size limits: a body over maxMessageSizeBytes and properties over 32767 bytes are MESSAGE_ILLEGAL; the limit itself is stored", async () => {
    await using b = InProcessBroker.start({ broker: { maxMessageSizeBytes: 1000 } });
    await b.ok(createTopicRequest("S", 1));
    expectCode(await b.call(sendV2Request("S", new Uint8Array(1001))), ResponseCode.MESSAGE_ILLEGAL, "maxMessageSizeBytes 1000");
    await b.ok(sendV2Request("S", new Uint8Array(1000)));
    expectCode(await b.call(sendV2Request("S", "x", { props: { BIG: "p".repeat(32_768) } })), ResponseCode.MESSAGE_ILLEGAL);
    expectCode(
      await b.call(sendBatchRequest("S", [{ body: new Uint8Array(600) }, { body: new Uint8Array(600) }])),
      ResponseCode.MESSAGE_ILLEGAL,
      "batch body",
    );
    expect(b.controller.info.queueOffsets("S")[0]!.maxOffset).toBe(1);
    // Live: a smaller limit applies to the next send.
    await b.controller.reconfigure({ maxMessageSizeBytes: 500 });
    expectCode(await b.call(sendV2Request("S", new Uint8Array(501))), ResponseCode.MESSAGE_ILLEGAL, "maxMessageSizeBytes 500");
  });

  test("the stored record: body, tags, keys, born and store time from the broker's clock, storeHost in the msgId", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("S", 1));
    await b.advance(1234);
    const req = sendV2Request("S", "payload", { tags: "TagA", keys: "k1 k2", props: { custom: "v" } });
    delete req.extFields!.g; // no bornTimestamp: the broker's time
    const res = await b.ok(req);
    expect(res.extFields!.msgId).toMatch(/^7F00000100002A9F/);
    const [r] = pulledRecords(await b.call(pullRequest("S")));
    expect(text(r!)).toBe("payload");
    expect(parseProperties(r!.properties)).toMatchObject({ TAGS: "TagA", KEYS: "k1 k2", custom: "v", CLUSTER: "DefaultCluster" });
    expect(r!.bornTimestamp).toBe(SIM_EPOCH_MS + 1234);
    expect(r!.storeTimestamp).toBe(SIM_EPOCH_MS + 1234);
  });

  test("a delay level parks the message in SCHEDULE_TOPIC_XXXX (queue level − 1) and delivers it when virtual time reaches it", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("D", 4));
    const res = await b.ok(sendV2Request("D", "later", { queueId: 2, props: { DELAY: "2" } }));
    expect(res.extFields).toMatchObject({ queueId: "2", queueOffset: "0" });
    const [parked] = pulledRecords(await b.call(pullRequest("SCHEDULE_TOPIC_XXXX", { queueId: 1 })));
    expect(parked).toMatchObject({ topic: "SCHEDULE_TOPIC_XXXX", queueId: 1 });
    expect(parseProperties(parked!.properties)).toMatchObject({ REAL_TOPIC: "D", REAL_QID: "2", DELAY: "2" });
    expectCode(await b.call(pullRequest("D", { queueId: 2 })), ResponseCode.PULL_NOT_FOUND);
    // Level 2 is 5 s.
    await b.advance(4000);
    expectCode(await b.call(pullRequest("D", { queueId: 2 })), ResponseCode.PULL_NOT_FOUND);
    await b.advance(1500);
    const [delivered] = pulledRecords(await b.call(pullRequest("D", { queueId: 2 })));
    expect(text(delivered!)).toBe("later");
    expect(delivered!.storeTimestamp).toBeGreaterThanOrEqual(SIM_EPOCH_MS + 5000);
  });

  test("5.x timer properties: TIMER_DELAY_MS parks in the timer queue and delivers on time; past the max delay or unparsable, MESSAGE_ILLEGAL", async () => {
    await using b = InProcessBroker.start({ broker: { timerMaxDelaySec: 60 } });
    await b.ok(createTopicRequest("T", 4));
    await b.ok(sendV2Request("T", "in 12 s", { queueId: 1, props: { TIMER_DELAY_MS: "12000" } }));
    const [parked] = pulledRecords(await b.call(pullRequest("SCHEDULE_TOPIC_XXXX", { queueId: 18 })));
    expect(parseProperties(parked!.properties)).toMatchObject({ REAL_TOPIC: "T", REAL_QID: "1", TIMER_DELAY_MS: "12000" });
    await b.advance(11_800);
    expectCode(await b.call(pullRequest("T", { queueId: 1 })), ResponseCode.PULL_NOT_FOUND);
    await b.advance(400);
    const [delivered] = pulledRecords(await b.call(pullRequest("T", { queueId: 1 })));
    expect(text(delivered!)).toBe("in 12 s");
    // A delivery time in the past is delivered at once.
    await b.ok(sendV2Request("T", "past", { queueId: 2, props: { TIMER_DELIVER_MS: String(SIM_EPOCH_MS) } }));
    expect(pulledRecords(await b.call(pullRequest("T", { queueId: 2 }))).map(text)).toEqual(["past"]);
    const maxRemark = "timer message illegal, the delay time should not be bigger than the max delay 60000ms";
    const refused: Record<string, string>[] = [{ TIMER_DELAY_SEC: "61" }, { TIMER_DELAY_MS: "60001" }, { TIMER_DELAY_MS: "12s" }];
    for (const props of refused) {
      expectCode(await b.call(sendV2Request("T", "refused", { queueId: 3, props })), ResponseCode.MESSAGE_ILLEGAL, maxRemark);
    }
    expectCode(await b.call(pullRequest("T", { queueId: 3 })), ResponseCode.PULL_NOT_FOUND);
  });

  test("%RETRY%<group>: stored there below maxReconsumeTimes, in %DLQ%<group> queue 0 at it (a DELAY dropped)", async () => {
    await using b = InProcessBroker.start();
    const retry = await b.ok(sendV2Request("%RETRY%RG", "again", { reconsumeTimes: 1, maxReconsumeTimes: 3 }));
    expect(retry.extFields!.queueOffset).toBe("0");
    expect(pulledRecords(await b.call(pullRequest("%RETRY%RG", { group: "RG" }))).map(text)).toEqual(["again"]);
    const dead = await b.ok(sendV2Request("%RETRY%RG", "dead", { reconsumeTimes: 3, maxReconsumeTimes: 3, props: { DELAY: "2" } }));
    expect(dead.extFields).toMatchObject({ queueId: "0", queueOffset: "0" });
    const [d] = pulledRecords(await b.call(pullRequest("%DLQ%RG", { group: "RG" })));
    expect(d).toMatchObject({ topic: "%DLQ%RG", queueId: 0, reconsumeTimes: 3 });
    expect(parseProperties(d!.properties).DELAY).toBeUndefined();
    // Without maxReconsumeTimes in the header the group's retryMaxTimes (16) decides.
    await b.ok(sendV2Request("%RETRY%RG", "fifteen", { reconsumeTimes: 15 }));
    await b.ok(sendV2Request("%RETRY%RG", "sixteen", { reconsumeTimes: 16 }));
    expect(pulledRecords(await b.call(pullRequest("%RETRY%RG", { group: "RG", offset: 1 }))).map(text)).toEqual(["fifteen"]);
    expect(pulledRecords(await b.call(pullRequest("%DLQ%RG", { group: "RG", offset: 1 }))).map(text)).toEqual(["sixteen"]);
  });

  test("a batch is stored in one queue at consecutive offsets, one msgId each; delayed, retry-topic and undecodable batches are refused", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("B", 2));
    await b.ok(sendV2Request("B", "first", { queueId: 1 }));
    const res = await b.ok(sendBatchRequest("B", [{ body: "b0", tags: "A" }, { body: "b1" }, { body: "b2", tags: "C" }], { queueId: 1 }));
    expect(res.extFields!.queueOffset).toBe("1");
    expect(res.extFields!.msgId!.split(",")).toHaveLength(3);
    const recs = pulledRecords(await b.call(pullRequest("B", { queueId: 1, offset: 1 })));
    expect(recs.map((r) => [r.queueOffset, text(r), parseProperties(r.properties).TAGS])).toEqual([
      [1, "b0", "A"],
      [2, "b1", undefined],
      [3, "b2", "C"],
    ]);
    const delayed = sendBatchRequest("B", [{ body: "x" }]);
    delayed.extFields!.i = "DELAY\u00012\u0002";
    expectCode(await b.call(delayed), ResponseCode.MESSAGE_ILLEGAL, "cannot be delayed");
    expectCode(await b.call(sendBatchRequest("%RETRY%G", [{ body: "x" }])), ResponseCode.MESSAGE_ILLEGAL, "retry topic");
    const garbage = sendV2Request("B", "not a batch");
    garbage.code = RequestCode.SEND_BATCH_MESSAGE;
    expectCode(await b.call(garbage), ResponseCode.MESSAGE_ILLEGAL, "does not decode");
    expect(b.controller.info.queueOffsets("B")[1]!.maxOffset).toBe(4);
  });

  test("missing or malformed header fields are SYSTEM_ERROR naming the field", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("S", 1));
    const noTopic = sendV2Request("S", "x");
    delete noTopic.extFields!.b;
    expectCode(await b.call(noTopic), ResponseCode.SYSTEM_ERROR, "topic");
    const badQueue = sendV2Request("S", "x");
    badQueue.extFields!.e = "one";
    expectCode(await b.call(badQueue), ResponseCode.SYSTEM_ERROR, "queueId");
  });
});

describe("SEND_MESSAGE (the long header names)", () => {
  test("stored as the V2 send would be; the one-letter names alone are not read", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("V1", 2));
    const res = await b.call(sendV1Request("V1", "long names", { queueId: 1, tags: "TagA", keys: "k1" }));
    expectCode(res, ResponseCode.SUCCESS);
    expect(res.extFields).toMatchObject({ queueId: "1", queueOffset: "0" });
    const [r] = pulledRecords(await b.call(pullRequest("V1", { queueId: 1 })));
    expect([text(r!), parseProperties(r!.properties).TAGS, parseProperties(r!.properties).KEYS]).toEqual(["long names", "TagA", "k1"]);
    const shortNames = sendV2Request("V1", "x");
    shortNames.code = RequestCode.SEND_MESSAGE;
    expectCode(await b.call(shortNames), ResponseCode.SYSTEM_ERROR, "the custom field <producerGroup> is null");
  });
});

describe("CONSUMER_SEND_MSG_BACK", () => {
  /** A message sent to T and its CommitLog offset (from its offset msgId). */
  async function sent(b: InProcessBroker, body: string) {
    const res = await b.ok(sendV2Request("T", body, { tags: "TagA" }));
    const id = decodeOffsetMsgId(res.extFields!.msgId!);
    if ("invalid" in id) throw new Error(id.invalid);
    return { msgId: res.extFields!.msgId!, offset: id.offset };
  }
  const back = (offset: number, delayLevel: number, group = "CG") =>
    createRequest(RequestCode.CONSUMER_SEND_MSG_BACK, { offset: String(offset), group, delayLevel: String(delayLevel), originMsgId: "X", originTopic: "T" });
  const records = async (b: InProcessBroker, topic: string) => pulledRecords(await b.call(pullRequest(topic, { group: "Reader" })));

  test("a consumed message goes to %RETRY%<group> once its delay level is due, one reconsume more, its origin named", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    const m = await sent(b, "retry me");
    expectCode(await b.call(back(m.offset, 1)), ResponseCode.SUCCESS);
    expect(await records(b, "%RETRY%CG")).toEqual([]);
    await b.advance(1200);
    const [r] = await records(b, "%RETRY%CG");
    expect([text(r!), r!.reconsumeTimes]).toEqual(["retry me", 1]);
    expect(parseProperties(r!.properties)).toMatchObject({ RETRY_TOPIC: "T", ORIGIN_MESSAGE_ID: m.msgId, TAGS: "TagA" });
    expect(b.controller.info.topic("%RETRY%CG")).toMatchObject({ readQueueNums: 1, writeQueueNums: 1 });
  });

  test("delayLevel -1 goes straight to %DLQ%<group> queue 0; an offset with no message and a slave are refused", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    const m = await sent(b, "dead");
    expectCode(await b.call(back(m.offset, -1)), ResponseCode.SUCCESS);
    expect((await records(b, "%DLQ%CG")).map(text)).toEqual(["dead"]);
    expectCode(await b.call(back(999_999, 1)), ResponseCode.SYSTEM_ERROR, "look message by offset failed, 999999");
    const noGroup = back(m.offset, 1);
    delete noGroup.extFields!.group;
    expectCode(await b.call(noGroup), ResponseCode.SYSTEM_ERROR, "the custom field <group> is null");
    expect((await records(b, "%DLQ%CG")).map(text)).toEqual(["dead"]);

    await using slave = InProcessBroker.start({ role: "slave" });
    expectCode(await slave.call(back(m.offset, 1)), ResponseCode.SERVICE_NOT_AVAILABLE, "is a slave");
  });
});
