/**
 * The admin processor's requests (./admin.ts, docs/PROTOCOL.md §3.11, §3.15) through the
 * in-process broker (../test-support.ts): each answer's code and remark, and the state after it
 * read back over the wire — a group created is listed and read, deleted with its offsets; topic
 * and consume stats follow the messages sent and the offsets committed; the connection lists
 * follow the clients' heartbeats and connections; broker config changes are in force for the next
 * send; expired ConsumeQueues are dropped once retention deleted what they point at.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { parseObjectKeyedJson } from "../../common/object-key-json.ts";
import { loadConfig } from "../../config/load.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import { RuntimeConfig } from "../../runtime-config.ts";
import { createTopicRequest, heartbeatRequest, InProcessBroker, pulledRecords, pullRequest, sendV2Request } from "../test-support.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The answer's code and remark (null when none), compared in one assertion so a failure shows both. */
const answer = (res: RemotingCommand) => ({ code: res.code, remark: res.remark ?? null });
const json = <T = Record<string, unknown>>(res: RemotingCommand): T => JSON.parse(dec.decode(res.body)) as T;
const req = (code: number, ext?: Record<string, string>, body?: string) => createRequest(code, ext, body === undefined ? undefined : enc.encode(body));

/** An object-keyed {mq: value} table of a body (TopicStatsTable, ConsumeStats), as queueId → value. */
function byQueue(res: RemotingCommand): Record<number, unknown> {
  const parsed = parseObjectKeyedJson(dec.decode(res.body));
  if ("invalid" in parsed) throw new Error(parsed.invalid);
  // An empty table `{}` parses as a plain record, not a Map.
  const table = (parsed.value as { offsetTable: Map<{ queueId: number }, unknown> | Record<string, never> }).offsetTable;
  const out: Record<number, unknown> = {};
  if (table instanceof Map) for (const [mq, v] of table) out[mq.queueId] = v;
  return out;
}

const groups = async (b: InProcessBroker) =>
  json<{ subscriptionGroupTable: Record<string, Record<string, unknown>>; dataVersion: { counter: number } }>(
    await b.ok(req(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)),
  );
const allOffsets = async (b: InProcessBroker) => json<{ offsetTable: Record<string, Record<string, number>> }>(await b.ok(req(RequestCode.GET_ALL_CONSUMER_OFFSET))).offsetTable;
const commit = (b: InProcessBroker, group: string, topic: string, queueId: number, offset: number) =>
  b.ok(req(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: group, topic, queueId: String(queueId), commitOffset: String(offset) }));
const upsertGroup = (o: object) => req(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, undefined, JSON.stringify(o));
const deleteGroup = (groupName: string, removeOffset: boolean) => req(RequestCode.DELETE_SUBSCRIPTIONGROUP, { groupName, removeOffset: String(removeOffset) });
const SLAVE_REFUSAL = "Can't modify topic or subscription group from slave broker, please execute it from master broker.";

describe("subscription groups", () => {
  test("a group created is listed and read back; deleted with removeOffset, its config and offsets are gone", async () => {
    await using b = InProcessBroker.start();
    const before = await groups(b);
    expect(before.subscriptionGroupTable.G1).toBeUndefined();
    expect(answer(await b.call(upsertGroup({ groupName: "G1", retryMaxTimes: 3, consumeBroadcastEnable: true })))).toEqual({
      code: ResponseCode.SUCCESS,
      remark: null,
    });
    const after = await groups(b);
    expect(after.subscriptionGroupTable.G1).toMatchObject({ groupName: "G1", retryMaxTimes: 3, consumeBroadcastEnable: true, consumeEnable: true });
    expect(after.dataVersion.counter).toBeGreaterThan(before.dataVersion.counter);
    const one = await b.ok(req(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, { group: "G1" }));
    expect(json(one)).toMatchObject({ groupName: "G1", retryMaxTimes: 3, retryQueueNums: 1 });

    await b.ok(createTopicRequest("T", 2));
    await commit(b, "G1", "T", 0, 5);
    await commit(b, "G2", "T", 1, 7);
    expect(await allOffsets(b)).toMatchObject({ "T@G1": { "0": 5 }, "T@G2": { "1": 7 } });

    expect(answer(await b.call(deleteGroup("G1", true)))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(answer(await b.call(req(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, { group: "G1" })))).toEqual({
      code: ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
      remark: "No group in this broker",
    });
    expect((await groups(b)).subscriptionGroupTable.G1).toBeUndefined();
    const offsets = await allOffsets(b);
    expect(offsets["T@G1"]).toBeUndefined();
    expect(offsets["T@G2"]).toEqual({ "1": 7 });
    // Without removeOffset the group's offsets stay.
    await b.ok(upsertGroup({ groupName: "G2" }));
    await b.ok(deleteGroup("G2", false));
    expect((await groups(b)).subscriptionGroupTable.G2).toBeUndefined();
    expect((await allOffsets(b))["T@G2"]).toEqual({ "1": 7 });
  });

  test("a missing, unreadable or invalid body, and a missing groupName, are SYSTEM_ERROR with the reason; nothing changes", async () => {
    await using b = InProcessBroker.start();
    const before = await groups(b);
    expect(answer(await b.call(req(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "the request has no SubscriptionGroupConfig body",
    });
    const notJson = await b.call(req(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, undefined, "{groupName"));
    expect(notJson.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(notJson.remark).toStartWith("the body is not JSON: ");
    const blank = await b.call(upsertGroup({ groupName: " " }));
    expect(blank.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(blank.remark).toStartWith("bad SubscriptionGroupConfig: groupName: expected a non-blank string");
    const badRetry = await b.call(upsertGroup({ groupName: "G", retryQueueNums: -1 }));
    expect(badRetry.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(badRetry.remark).toStartWith("bad SubscriptionGroupConfig: retryQueueNums");
    expect(answer(await b.call(req(RequestCode.DELETE_SUBSCRIPTIONGROUP, {})))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "the custom field <groupName> is null",
    });
    expect(await groups(b)).toEqual(before);
  });

  test("a slave refuses both group writes (its groups follow its master) and still serves the reads", async () => {
    await using b = InProcessBroker.start({ role: "slave" });
    const before = await groups(b);
    expect(answer(await b.call(upsertGroup({ groupName: "G1" })))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: SLAVE_REFUSAL });
    const existing = Object.keys(before.subscriptionGroupTable)[0]!;
    expect(answer(await b.call(deleteGroup(existing, true)))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: SLAVE_REFUSAL });
    expect(await groups(b)).toEqual(before);
    expect(json(await b.ok(req(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, { group: existing })))).toMatchObject({ groupName: existing });
  });
});

describe("topic and consume stats", () => {
  test("GET_TOPIC_CONFIG, GET_TOPIC_STATS_INFO and GET_CONSUME_STATS follow the messages sent and the offsets committed", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 2));
    expect(json(await b.ok(req(RequestCode.GET_TOPIC_CONFIG, { topic: "T" })))).toEqual({
      attributes: {},
      order: false,
      perm: 6,
      readQueueNums: 2,
      topicFilterType: "SINGLE_TAG",
      topicName: "T",
      topicSysFlag: 0,
      writeQueueNums: 2,
    });
    const stored: number[] = [];
    for (let i = 0; i < 3; i++) {
      stored.push(b.sim.now);
      await b.ok(sendV2Request("T", `m${i}`, { queueId: 0 }));
      await b.advance(1000);
    }
    await b.ok(sendV2Request("T", "q1", { queueId: 1 }));
    expect(byQueue(await b.ok(req(RequestCode.GET_TOPIC_STATS_INFO, { topic: "T" })))).toEqual({
      0: { lastUpdateTimestamp: stored[2], maxOffset: 3, minOffset: 0 },
      1: { lastUpdateTimestamp: b.sim.now, maxOffset: 1, minOffset: 0 },
    });

    await commit(b, "CG", "T", 0, 2);
    const stats = await b.ok(req(RequestCode.GET_CONSUME_STATS, { consumerGroup: "CG", topic: "T" }));
    expect(byQueue(stats)).toEqual({
      0: { brokerOffset: 3, consumerOffset: 2, lastTimestamp: stored[1], pullOffset: 2 },
      1: { brokerOffset: 1, consumerOffset: 0, lastTimestamp: 0, pullOffset: 0 },
    });
    expect(dec.decode(stats.body)).toStartWith('{"consumeTps":0,"offsetTable":');
    // Without a topic: every topic the group has offsets for.
    expect(Object.keys(byQueue(await b.ok(req(RequestCode.GET_CONSUME_STATS, { consumerGroup: "CG" }))))).toEqual(["0", "1"]);
    expect(byQueue(await b.ok(req(RequestCode.GET_CONSUME_STATS, { consumerGroup: "Nobody" })))).toEqual({});
  });

  test("an unknown topic is TOPIC_NOT_EXIST with Java's remarks; a missing header field is SYSTEM_ERROR", async () => {
    await using b = InProcessBroker.start();
    expect(answer(await b.call(req(RequestCode.GET_TOPIC_CONFIG, { topic: "Nope" })))).toEqual({
      code: ResponseCode.TOPIC_NOT_EXIST,
      remark: "No topic in this broker. topic: Nope",
    });
    expect(answer(await b.call(req(RequestCode.GET_TOPIC_STATS_INFO, { topic: "Nope" })))).toEqual({
      code: ResponseCode.TOPIC_NOT_EXIST,
      remark: "topic[Nope] not exist",
    });
    expect(answer(await b.call(req(RequestCode.GET_CONSUME_STATS, {})))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "the custom field <consumerGroup> is null",
    });
    expect(answer(await b.call(req(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {})))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "the custom field <topic> is null",
    });
  });

  test("QUERY_TOPIC_CONSUME_BY_WHO names the groups online on the topic and the groups with offsets for it", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    const who = async () => json<{ groupList: string[] }>(await b.ok(req(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, { topic: "T" }))).groupList.sort();
    expect(await who()).toEqual([]);
    await commit(b, "Committed", "T", 0, 0);
    const online = b.client();
    await online.invoke(b.addr, heartbeatRequest("10.0.0.1@on", { group: "Online", subs: [{ topic: "T", expr: "*" }] }), 10_000);
    await b.ok(heartbeatRequest("10.0.0.2@other", { group: "Elsewhere", subs: [{ topic: "U", expr: "*" }] }));
    expect(await who()).toEqual(["Committed", "Online"]);
    await online.close();
    await b.advance(0);
    expect(await who()).toEqual(["Committed"]);
  });

  test("VIEW_BROKER_STATS_DATA and GET_BROKER_RUNTIME_INFO count the puts; an unknown stats key is SYSTEM_ERROR", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    for (let i = 0; i < 4; i++) await b.ok(sendV2Request("T", "abcd"));
    const view = (statsName: string, statsKey: string) => b.call(req(RequestCode.VIEW_BROKER_STATS_DATA, { statsName, statsKey }));
    const topic = json<{ statsMinute: { sum: number } }>(await view("TOPIC_PUT_NUMS", "T"));
    expect(topic.statsMinute.sum).toBe(4);
    const cluster = b.controller.info.settings().clusterName;
    expect(json<{ statsMinute: { sum: number } }>(await view("BROKER_PUT_NUMS", cluster)).statsMinute.sum).toBe(4);
    expect(answer(await view("TOPIC_PUT_NUMS", "Nope"))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "The stats <TOPIC_PUT_NUMS> <Nope> not exist" });
    expect(answer(await view("BROKER_PUT_NUMS", "OtherCluster"))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "The stats <BROKER_PUT_NUMS> <OtherCluster> not exist",
    });
    expect(answer(await view("NO_SUCH_STATS", "T"))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "The stats <NO_SUCH_STATS> <T> not exist" });

    const table = json<{ table: Record<string, string> }>(await b.ok(req(RequestCode.GET_BROKER_RUNTIME_INFO))).table;
    expect([table.msgPutTotalTodayNow, table.putMessageTimesTotal, table.commitLogMinOffset]).toEqual(["4", "4", "0"]);
    expect(Number(table.commitLogMaxOffset)).toBeGreaterThan(0);
    expect(table.bootTimestamp).toBe(String(b.sim.now));
  });

  test("GET_ALL_DELAY_OFFSET: a delayed message delivered moves its level's offset", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    const delayOffsets = async () => json<{ offsetTable: Record<string, number> }>(await b.ok(req(RequestCode.GET_ALL_DELAY_OFFSET))).offsetTable;
    const before = await delayOffsets();
    expect(before["2"] ?? 0).toBe(0);
    await b.ok(sendV2Request("T", "later", { props: { DELAY: "2" } }));
    await b.advance(6000);
    expect((await delayOffsets())["2"]).toBe(1);
    const table = json<{ table: Record<string, string> }>(await b.ok(req(RequestCode.GET_BROKER_RUNTIME_INFO))).table;
    expect(table.scheduleMessageOffset_2).toBe("1,1");
  });
});

describe("connections", () => {
  test("consumer and producer connection lists and GET_ALL_PRODUCER_INFO follow heartbeats and closed connections", async () => {
    await using b = InProcessBroker.start();
    const c = b.client();
    const hb = heartbeatRequest("10.0.0.1@c", { group: "CG", subs: [{ topic: "T", expr: "TagA || TagB" }], producer: "PG" });
    expect((await c.invoke(b.addr, hb, 10_000)).code).toBe(ResponseCode.SUCCESS);

    const consumers = json<{ connectionSet: { clientId: string }[]; subscriptionTable: Record<string, { subString: string; tagsSet: string[] }> }>(
      await b.ok(req(RequestCode.GET_CONSUMER_CONNECTION_LIST, { consumerGroup: "CG" })),
    );
    expect(consumers).toMatchObject({ consumeType: "CONSUME_PASSIVELY", messageModel: "CLUSTERING", consumeFromWhere: "CONSUME_FROM_LAST_OFFSET" });
    expect(consumers.connectionSet.map((x) => x.clientId)).toEqual(["10.0.0.1@c"]);
    expect(consumers.subscriptionTable.T).toMatchObject({ subString: "TagA || TagB", tagsSet: ["TagA", "TagB"] });
    const producers = json<{ connectionSet: { clientId: string }[] }>(await b.ok(req(RequestCode.GET_PRODUCER_CONNECTION_LIST, { producerGroup: "PG" })));
    expect(producers.connectionSet.map((x) => x.clientId)).toEqual(["10.0.0.1@c"]);
    const info = json<{ data: Record<string, { clientId: string; remoteIP: string }[]> }>(await b.ok(req(RequestCode.GET_ALL_PRODUCER_INFO)));
    expect(Object.keys(info.data)).toEqual(["PG"]);
    expect(info.data.PG!.map((p) => p.clientId)).toEqual(["10.0.0.1@c"]);
    expect(info.data.PG![0]!.remoteIP).toStartWith("/");

    await c.close();
    await b.advance(0);
    expect(answer(await b.call(req(RequestCode.GET_CONSUMER_CONNECTION_LIST, { consumerGroup: "CG" })))).toEqual({
      code: ResponseCode.CONSUMER_NOT_ONLINE,
      remark: "the consumer group[CG] not online",
    });
    expect(answer(await b.call(req(RequestCode.GET_PRODUCER_CONNECTION_LIST, { producerGroup: "PG" })))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "the producer group[PG] not exist",
    });
    expect(json(await b.ok(req(RequestCode.GET_ALL_PRODUCER_INFO)))).toEqual({ data: {} });
  });
});

/** A RuntimeConfig (the process's config owner) whose broker target is the fixture's controller. */
function startWithConfigOwner(maxMessageSizeBytes: number): { b: InProcessBroker; rc: RuntimeConfig } {
  const flags = { role: "master", namesrv: "127.0.0.1:9876" };
  const loaded = loadConfig({ flags });
  if ("errors" in loaded) throw new Error(loaded.errors.join("\n"));
  loaded.config.broker.maxMessageSizeBytes = maxMessageSizeBytes;
  let broker: InProcessBroker | undefined;
  const rc = new RuntimeConfig({
    config: loaded.config,
    sources: loaded.sources,
    file: undefined,
    flags,
    targets: { broker: { reconfigure: (p) => broker!.controller.reconfigure(p) }, resolveNamesrvAddr: (l) => l, setLogLevel: () => {} },
  });
  broker = InProcessBroker.start({ broker: { maxMessageSizeBytes }, configAccess: rc.brokerAccess() });
  return { b: broker, rc };
}

describe("broker config", () => {
  test("UPDATE_BROKER_CONFIG of a live key is in force for the next send and GET_BROKER_CONFIG shows it with a new version", async () => {
    const { b } = startWithConfigOwner(16384);
    await using _ = b;
    const get = async () => {
      const res = await b.ok(req(RequestCode.GET_BROKER_CONFIG));
      return { text: dec.decode(res.body), version: JSON.parse(res.extFields!.version!) as { counter: number } };
    };
    const before = await get();
    expect(before.text).toContain("\nmaxMessageSize=16384\n");
    await b.ok(createTopicRequest("T", 1));
    expect((await b.call(sendV2Request("T", "x".repeat(2000)))).code).toBe(ResponseCode.SUCCESS);

    expect(answer(await b.call(req(RequestCode.UPDATE_BROKER_CONFIG, undefined, "maxMessageSize=1024\n")))).toEqual({
      code: ResponseCode.SUCCESS,
      remark: null,
    });
    const after = await get();
    expect(after.text).toContain("\nmaxMessageSize=1024\n");
    expect(after.version.counter).toBe(before.version.counter + 1);
    expect(answer(await b.call(sendV2Request("T", "x".repeat(2000))))).toEqual({
      code: ResponseCode.MESSAGE_ILLEGAL,
      remark: "message body is 2000 bytes, over maxMessageSizeBytes 1024",
    });
    // An empty body changes nothing (Java: no properties, nothing to do).
    expect((await b.call(req(RequestCode.UPDATE_BROKER_CONFIG))).code).toBe(ResponseCode.SUCCESS);
    expect((await get()).version.counter).toBe(after.version.counter);
  });

  test("a key that needs a restart is NO_PERMISSION, an unknown key SYSTEM_ERROR; nothing changes", async () => {
    const { b } = startWithConfigOwner(16384);
    await using _ = b;
    const before = dec.decode((await b.ok(req(RequestCode.GET_BROKER_CONFIG))).body);
    const restart = await b.call(req(RequestCode.UPDATE_BROKER_CONFIG, undefined, "brokerName=other\n"));
    expect(restart.code).toBe(ResponseCode.NO_PERMISSION);
    expect(restart.remark).toContain("brokerName");
    const unknown = await b.call(req(RequestCode.UPDATE_BROKER_CONFIG, undefined, "noSuchKey=1\n"));
    expect(answer(unknown)).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "noSuchKey: unknown key" });
    expect(dec.decode((await b.ok(req(RequestCode.GET_BROKER_CONFIG))).body)).toBe(before);
  });

  test("without a config owner both requests are REQUEST_CODE_NOT_SUPPORTED", async () => {
    await using b = InProcessBroker.start();
    for (const code of [RequestCode.GET_BROKER_CONFIG, RequestCode.UPDATE_BROKER_CONFIG]) {
      expect(answer(await b.call(req(code, undefined, "maxMessageSize=1024\n")))).toEqual({
        code: ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        remark: `request code ${code} not supported`,
      });
    }
  });
});

describe("CLEAN_EXPIRED_CONSUMEQUEUE", () => {
  test("drops the ConsumeQueues of a topic whose every message retention deleted, and keeps a topic still readable", async () => {
    const everyHour = Array.from({ length: 24 }, (_, h) => String(h).padStart(2, "0")).join(";");
    await using b = InProcessBroker.start({ store: { fileReservedTimeHours: 0, deleteWhen: everyHour } });
    await b.ok(createTopicRequest("Old", 1));
    await b.ok(createTopicRequest("Live", 1));
    for (let i = 0; i < 150; i++) await b.ok(sendV2Request("Old", "o".repeat(1000)));
    for (let i = 0; i < 80; i++) await b.ok(sendV2Request("Live", "l".repeat(1000)));
    const maxOffset = async (topic: string) => Number((await b.ok(req(RequestCode.GET_MAX_OFFSET, { topic, queueId: "0" }))).extFields!.offset);
    expect([await maxOffset("Old"), await maxOffset("Live")]).toEqual([150, 80]);

    // Every segment but the one being written is old: retention deletes them at its next check.
    const segments = join(b.dir, "commitlog");
    const names = readdirSync(segments).sort();
    for (const name of names.slice(0, -1)) utimesSync(join(segments, name), new Date(2001, 0, 1), new Date(2001, 0, 1));
    await b.advance(60_000);
    const runtime = json<{ table: Record<string, string> }>(await b.ok(req(RequestCode.GET_BROKER_RUNTIME_INFO))).table;
    expect(Number(runtime.commitLogMinOffset)).toBe((names.length - 1) * 65536);

    expect(answer(await b.call(req(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect([await maxOffset("Old"), await maxOffset("Live")]).toEqual([0, 80]);
    const live = await b.ok(pullRequest("Live", { group: "CG", offset: 79, max: 1 }));
    expect(pulledRecords(live).map((r) => r.queueOffset)).toEqual([79]);
  });
});
