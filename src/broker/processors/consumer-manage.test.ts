/**
 * The consumer-manage processor's rules (docs/PROTOCOL.md §3.6–§3.8), checked in process through
 * the broker fixture (../test-support.ts): the member list of a group (GET_CONSUMER_LIST_BY_GROUP),
 * committed offsets and the first offset of a group that has none (UPDATE_CONSUMER_OFFSET,
 * QUERY_CONSUMER_OFFSET), and the per-queue offset queries (GET_MAX_OFFSET, GET_MIN_OFFSET,
 * SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME). A missing required header field is
 * SYSTEM_ERROR naming it. Store times come from the virtual clock, moved between sends.
 */
import { describe, expect, test } from "bun:test";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import {
  createTopicRequest,
  heartbeatRequest,
  InProcessBroker,
  PULL_COMMIT_OFFSET,
  PULL_SUBSCRIPTION,
  pulledRecords,
  pullRequest,
  sendV2Request,
} from "../test-support.ts";

const dec = new TextDecoder();
const NOT_FOUND_REMARK = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first";

function expectCode(res: RemotingCommand, code: number, remark?: string): void {
  expect({ code: res.code, remark: res.remark }).toMatchObject({ code });
  if (remark !== undefined) expect(res.remark ?? "").toContain(remark);
}

/** SUCCESS with no remark, and the answer's extFields exactly `ext` (`{}`: none at all). */
function expectSuccess(res: RemotingCommand, ext?: Record<string, string>): void {
  expect({ code: res.code, remark: res.remark ?? null }).toEqual({ code: ResponseCode.SUCCESS, remark: null });
  if (ext !== undefined) expect(res.extFields ?? {}).toEqual(ext);
}

const listRequest = (group: string) => createRequest(RequestCode.GET_CONSUMER_LIST_BY_GROUP, { consumerGroup: group });

const queryOffset = (group: string, topic: string, queueId: number) =>
  createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: group, topic, queueId: String(queueId) });

const updateOffset = (group: string, topic: string, queueId: number, offset: number) =>
  createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: group, topic, queueId: String(queueId), commitOffset: String(offset) });

const queueRequest = (code: number, topic: string, queueId: number, more: Record<string, string> = {}) =>
  createRequest(code, { topic, queueId: String(queueId), ...more });

function consumerIds(res: RemotingCommand): unknown {
  expectSuccess(res);
  return JSON.parse(dec.decode(res.body)) as unknown;
}

describe("GET_CONSUMER_LIST_BY_GROUP", () => {
  test("a group with no members is SYSTEM_ERROR naming the group", async () => {
    await using b = InProcessBroker.start();
    expectCode(await b.call(listRequest("Nobody")), ResponseCode.SYSTEM_ERROR, "no consumer for this group, Nobody");
  });

  test("the members registered by heartbeat are listed sorted; an unregistered member leaves the list", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 2));
    const subs = [{ topic: "T", expr: "*" }];
    for (const id of ["10.0.0.9@2", "10.0.0.9@1"]) {
      const res = await b.client().invoke(b.addr, heartbeatRequest(id, { group: "LG", subs }), 60_000);
      expectSuccess(res);
    }
    await b.ok(heartbeatRequest("10.0.0.8@7", { group: "OtherGroup", subs }));
    expect(consumerIds(await b.call(listRequest("LG")))).toEqual({ consumerIdList: ["10.0.0.9@1", "10.0.0.9@2"] });
    await b.ok(createRequest(RequestCode.UNREGISTER_CLIENT, { clientID: "10.0.0.9@1", consumerGroup: "LG" }));
    expect(consumerIds(await b.call(listRequest("LG")))).toEqual({ consumerIdList: ["10.0.0.9@2"] });
    await b.ok(createRequest(RequestCode.UNREGISTER_CLIENT, { clientID: "10.0.0.9@2", consumerGroup: "LG" }));
    expectCode(await b.call(listRequest("LG")), ResponseCode.SYSTEM_ERROR, "no consumer for this group, LG");
  });

  test("a missing consumerGroup is SYSTEM_ERROR naming the field", async () => {
    await using b = InProcessBroker.start();
    expectCode(await b.call(createRequest(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {})), ResponseCode.SYSTEM_ERROR, "<consumerGroup> is null");
  });
});

describe("UPDATE_CONSUMER_OFFSET and QUERY_CONSUMER_OFFSET", () => {
  test("a committed offset is stored as given, backwards moves included, and QUERY answers it", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 2));
    for (let i = 0; i < 3; i++) await b.ok(sendV2Request("T", `m${i}`, { queueId: 1 }));
    expectSuccess(await b.call(updateOffset("CG", "T", 1, 3)), {});
    expectSuccess(await b.call(queryOffset("CG", "T", 1)), { offset: "3" });
    expect(b.controller.info.groupOffsets("CG")).toEqual([{ topic: "T", queueId: 1, consumerOffset: 3, brokerOffset: 3, lag: 0 }]);
    await b.ok(updateOffset("CG", "T", 1, 1));
    expectSuccess(await b.call(queryOffset("CG", "T", 1)), { offset: "1" });
    // Past the queue's end too: the broker does not check the value against the queue.
    await b.ok(updateOffset("CG", "T", 1, 50));
    expectSuccess(await b.call(queryOffset("CG", "T", 1)), { offset: "50" });
    // Per group and per queue: the other queue and another group have none of it.
    expect(b.controller.info.groupOffsets("CG")).toEqual([{ topic: "T", queueId: 1, consumerOffset: 50, brokerOffset: 3, lag: 0 }]);
    expect(b.controller.info.groupOffsets("CG2")).toEqual([]);
  });

  test("-1 is stored as given; QUERY then falls back to the young-queue rule and answers 0", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    await b.ok(sendV2Request("T", "m0"));
    await b.ok(updateOffset("CG", "T", 0, 1));
    await b.ok(updateOffset("CG", "T", 0, -1));
    expect(b.controller.info.groupOffsets("CG")).toEqual([{ topic: "T", queueId: 0, consumerOffset: -1, brokerOffset: 1, lag: 1 }]);
    expectSuccess(await b.call(queryOffset("CG", "T", 0)), { offset: "0" });
  });

  test("an offset for a topic and group the broker does not know is stored and answered", async () => {
    await using b = InProcessBroker.start({ broker: { autoCreateTopicEnable: false } });
    expectSuccess(await b.call(updateOffset("NoSuchGroup", "NoSuchTopic", 3, 7)), {});
    expectSuccess(await b.call(queryOffset("NoSuchGroup", "NoSuchTopic", 3)), { offset: "7" });
    expect(b.controller.info.topic("NoSuchTopic")).toBeUndefined();
  });

  test("the offset table refuses a topic or group containing '@' with SYSTEM_ERROR, and stores nothing", async () => {
    await using b = InProcessBroker.start();
    expectCode(await b.call(updateOffset("CG", "a@b", 0, 1)), ResponseCode.SYSTEM_ERROR, 'topic "a@b" is empty or contains "@"');
    expectCode(await b.call(updateOffset("c@g", "T", 0, 1)), ResponseCode.SYSTEM_ERROR, 'group "c@g" is empty or contains "@"');
    expect(b.controller.info.groupOffsets("CG")).toEqual([]);
    expect(b.controller.info.groupOffsets("c@g")).toEqual([]);
  });

  test("no stored offset on a young queue (unknown, empty, or first message still in memory) answers 0", async () => {
    await using b = InProcessBroker.start();
    expectSuccess(await b.call(queryOffset("CG", "Unknown", 0)), { offset: "0" });
    await b.ok(createTopicRequest("T", 2));
    expectSuccess(await b.call(queryOffset("CG", "T", 0)), { offset: "0" });
    for (let i = 0; i < 3; i++) await b.ok(sendV2Request("T", `m${i}`, { queueId: 1 }));
    expectSuccess(await b.call(queryOffset("CG", "T", 1)), { offset: "0" });
    // A query stores nothing.
    expect(b.controller.info.groupOffsets("CG")).toEqual([]);
  });

  test("no stored offset and the queue's first message no longer in memory is QUERY_NOT_FOUND with Java's remark", async () => {
    await using b = InProcessBroker.start({ store: { accessMessageInMemoryMaxBytes: 1024 } });
    await b.ok(createTopicRequest("T", 2));
    await b.ok(sendV2Request("T", "first", { queueId: 0 }));
    // Later messages on another queue push the first one past the in-memory distance.
    for (let i = 0; i < 4; i++) await b.ok(sendV2Request("T", "x".repeat(600), { queueId: 1 }));
    const res = await b.call(queryOffset("CG", "T", 0));
    expect({ code: res.code, remark: res.remark }).toEqual({ code: ResponseCode.QUERY_NOT_FOUND, remark: NOT_FOUND_REMARK });
    expect(b.controller.info.groupOffsets("CG")).toEqual([]);
    // A committed offset still wins over the rule.
    await b.ok(updateOffset("CG", "T", 0, 0));
    expectSuccess(await b.call(queryOffset("CG", "T", 0)), { offset: "0" });
  });

  test("an offset committed by a pull with COMMIT_OFFSET is what QUERY answers and UPDATE overwrites", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    for (let i = 0; i < 2; i++) await b.ok(sendV2Request("T", `m${i}`));
    await b.call(pullRequest("T", { group: "PG1", offset: 2, commitOffset: 2, sysFlag: PULL_SUBSCRIPTION | PULL_COMMIT_OFFSET }));
    expectSuccess(await b.call(queryOffset("PG1", "T", 0)), { offset: "2" });
    await b.ok(updateOffset("PG1", "T", 0, 1));
    expectSuccess(await b.call(queryOffset("PG1", "T", 0)), { offset: "1" });
  });

  test("a missing or non-integer header field is SYSTEM_ERROR naming it; nothing is stored", async () => {
    await using b = InProcessBroker.start();
    const noQueue = createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: "CG", topic: "T" });
    expectCode(await b.call(noQueue), ResponseCode.SYSTEM_ERROR, "<queueId> is null");
    const noGroup = createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { topic: "T", queueId: "0" });
    expectCode(await b.call(noGroup), ResponseCode.SYSTEM_ERROR, "<consumerGroup> is null");
    const noOffset = createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: "CG", topic: "T", queueId: "0" });
    expectCode(await b.call(noOffset), ResponseCode.SYSTEM_ERROR, "<commitOffset> is null");
    const noTopic = createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: "CG", queueId: "0", commitOffset: "1" });
    expectCode(await b.call(noTopic), ResponseCode.SYSTEM_ERROR, "<topic> is null");
    const badOffset = updateOffset("CG", "T", 0, 1);
    badOffset.extFields!.commitOffset = "one";
    expectCode(await b.call(badOffset), ResponseCode.SYSTEM_ERROR, "<commitOffset> is not an integer");
    expect(b.controller.info.groupOffsets("CG")).toEqual([]);
  });
});

describe("offset queries", () => {
  test("GET_MAX_OFFSET and GET_MIN_OFFSET answer the ConsumeQueue's bounds; 0 for an unknown topic or queue", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 2));
    for (let i = 0; i < 3; i++) await b.ok(sendV2Request("T", `m${i}`, { queueId: 1 }));
    expectSuccess(await b.call(queueRequest(RequestCode.GET_MAX_OFFSET, "T", 1)), { offset: "3" });
    expectSuccess(await b.call(queueRequest(RequestCode.GET_MIN_OFFSET, "T", 1)), { offset: "0" });
    expectSuccess(await b.call(queueRequest(RequestCode.GET_MAX_OFFSET, "T", 0)), { offset: "0" });
    expectSuccess(await b.call(queueRequest(RequestCode.GET_MAX_OFFSET, "T", 9)), { offset: "0" });
    expectSuccess(await b.call(queueRequest(RequestCode.GET_MAX_OFFSET, "Unknown", 0)), { offset: "0" });
    expectSuccess(await b.call(queueRequest(RequestCode.GET_MIN_OFFSET, "Unknown", 0)), { offset: "0" });
  });

  test("GET_EARLIEST_MSG_STORETIME answers the first message's store time; -1 for an empty or unknown queue", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 2));
    await b.ok(sendV2Request("T", "m0"));
    await b.advance(5000);
    await b.ok(sendV2Request("T", "m1"));
    const stored = pulledRecords(await b.call(pullRequest("T"))).map((r) => r.storeTimestamp);
    expect(stored[1]! - stored[0]!).toBeGreaterThanOrEqual(5000);
    expectSuccess(await b.call(queueRequest(RequestCode.GET_EARLIEST_MSG_STORETIME, "T", 0)), { timestamp: String(stored[0]) });
    expectSuccess(await b.call(queueRequest(RequestCode.GET_EARLIEST_MSG_STORETIME, "T", 1)), { timestamp: "-1" });
    expectSuccess(await b.call(queueRequest(RequestCode.GET_EARLIEST_MSG_STORETIME, "Unknown", 0)), { timestamp: "-1" });
  });

  test("SEARCH_OFFSET_BY_TIMESTAMP: a message's own store time finds it, an earlier time finds the first; 0 for an unknown queue", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    for (let i = 0; i < 4; i++) {
      await b.ok(sendV2Request("T", `m${i}`));
      await b.advance(1000);
    }
    const stored = pulledRecords(await b.call(pullRequest("T"))).map((r) => r.storeTimestamp);
    expect(stored).toHaveLength(4);
    const search = (topic: string, ts: number) => b.call(queueRequest(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, topic, 0, { timestamp: String(ts) }));
    for (const [i, ts] of stored.entries()) expectSuccess(await search("T", ts), { offset: String(i) });
    expectSuccess(await search("T", stored[0]! - 60_000), { offset: "0" });
    expectSuccess(await search("T", 0), { offset: "0" });
    expectSuccess(await search("Unknown", stored[0]!), { offset: "0" });
  });

  test("a missing topic, queueId or timestamp is SYSTEM_ERROR naming the field", async () => {
    await using b = InProcessBroker.start();
    const codes = [RequestCode.GET_MAX_OFFSET, RequestCode.GET_MIN_OFFSET, RequestCode.GET_EARLIEST_MSG_STORETIME, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP];
    for (const code of codes) {
      expectCode(await b.call(createRequest(code, { queueId: "0", timestamp: "0" })), ResponseCode.SYSTEM_ERROR, "<topic> is null");
      expectCode(await b.call(createRequest(code, { topic: "T", timestamp: "0" })), ResponseCode.SYSTEM_ERROR, "<queueId> is null");
    }
    const noTime = createRequest(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, { topic: "T", queueId: "0" });
    expectCode(await b.call(noTime), ResponseCode.SYSTEM_ERROR, "<timestamp> is null");
  });
});
