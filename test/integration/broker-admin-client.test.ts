/**
 * The compiled binary with rocketbun/client producers and consumers, driven over the wire: the
 * admin requests added for mqadmin and monitoring (QUERY_TOPIC_CONSUME_BY_WHO, VIEW_BROKER_STATS_DATA,
 * GET_TOPIC_CONFIG, GET_SUBSCRIPTIONGROUP_CONFIG, GET_ALL_PRODUCER_INFO, CLEAN_EXPIRED_CONSUMEQUEUE,
 * consume TPS) and those the broker forwards to a consumer (INVOKE_BROKER_TO_RESET_OFFSET →
 * RESET_CONSUMER_CLIENT_OFFSET, INVOKE_BROKER_TO_GET_CONSUMER_STATUS → GET_CONSUMER_STATUS_FROM_CLIENT,
 * GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY), answered by the client library.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Producer, PushConsumer, type SendResult } from "../../src/client/index.ts";
import { parseObjectKeyedJson } from "../../src/common/object-key-json.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingClient, type RemotingCommand } from "../../src/remoting/index.ts";
import { startRocketbun, waitFor, type RunningBinary } from "../harness/binary.ts";
import { bodyJson, newClient } from "../harness/wire.ts";

const TOPIC = "AdminClientT";
const GROUP = "AdminClientCG";
const PGROUP = "AdminClientPG";
const YAML = (ns: string) => `logLevel: warn
broker:
  namesrvAddr: [${ns}]
  brokerClusterName: C
  brokerName: b
  brokerIP1: 127.0.0.1
  autoCreateTopicEnable: true
  registerNameServerPeriodMs: 1000
`;

let ns: RunningBinary;
let broker: RunningBinary;
let addr = "";
let wire: RemotingClient;
let producer: Producer;
let consumer: PushConsumer;
const seen: string[] = [];
let sent: SendResult[] = [];

function call(code: number, ext?: Record<string, string>): Promise<RemotingCommand> {
  return wire.invoke(addr, createRequest(code, ext), 12_000);
}

beforeAll(async () => {
  ns = await startRocketbun({ role: "namesrv" });
  broker = await startRocketbun({ role: "master", configYaml: YAML(ns.namesrvAddr) });
  addr = `127.0.0.1:${broker.ports.broker}`;
  wire = newClient();
  const create = {
    topic: TOPIC,
    defaultTopic: "TBW102",
    readQueueNums: "1",
    writeQueueNums: "1",
    perm: "6",
    topicFilterType: "SINGLE_TAG",
    order: "false",
  };
  expect((await call(RequestCode.UPDATE_AND_CREATE_TOPIC, create)).code).toBe(ResponseCode.SUCCESS);
  await waitFor(
    async () => (await wire.invoke(ns.namesrvAddr, createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: TOPIC }), 2000)).code === 0,
  );
  producer = new Producer({ namesrv: ns.namesrvAddr, group: PGROUP });
  await producer.start();
  sent = [];
  for (let i = 0; i < 3; i++) sent.push(await producer.send({ topic: TOPIC, body: `m${i}`, tags: "A" }));
  consumer = new PushConsumer({ namesrv: ns.namesrvAddr, group: GROUP, fromWhere: "first", persistOffsetIntervalMs: 200 });
  consumer.subscribe(TOPIC, "*", (m) => {
    seen.push(new TextDecoder().decode(m.body));
  });
  await consumer.start();
  await waitFor(() => seen.length >= 3, 10_000, "the three messages consumed");
  // Committed (UPDATE_CONSUMER_OFFSET every 200 ms).
  await waitFor(
    async () => (await call(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: GROUP, topic: TOPIC, queueId: "0" })).extFields?.offset === "3",
  );
}, 30_000);

afterAll(async () => {
  await consumer?.shutdown();
  await producer?.shutdown();
  wire?.close();
  await broker?.[Symbol.asyncDispose]();
  await ns?.[Symbol.asyncDispose]();
});

describe("admin requests for mqadmin and monitoring", () => {
  test("QUERY_TOPIC_CONSUME_BY_WHO lists the online group", async () => {
    const r = await call(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, { topic: TOPIC });
    expect(r.code).toBe(ResponseCode.SUCCESS);
    expect(bodyJson<{ groupList: string[] }>(r).groupList).toContain(GROUP);
  });

  test("GET_TOPIC_CONFIG / GET_SUBSCRIPTIONGROUP_CONFIG, and their not-found answers", async () => {
    const t = await call(RequestCode.GET_TOPIC_CONFIG, { topic: TOPIC });
    expect(t.code).toBe(ResponseCode.SUCCESS);
    expect(bodyJson<{ topicName: string; readQueueNums: number; perm: number }>(t)).toMatchObject({ topicName: TOPIC, readQueueNums: 1, perm: 6 });
    expect((await call(RequestCode.GET_TOPIC_CONFIG, { topic: "NoSuchTopic" })).code).toBe(ResponseCode.TOPIC_NOT_EXIST);
    const g = await call(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, { group: GROUP });
    expect(g.code).toBe(ResponseCode.SUCCESS);
    expect(bodyJson<{ groupName: string }>(g).groupName).toBe(GROUP);
    expect((await call(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, { group: "NoSuchGroup" })).code).toBe(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST);
  });

  test("GET_ALL_PRODUCER_INFO lists the producer group's client", async () => {
    const r = await call(RequestCode.GET_ALL_PRODUCER_INFO, {});
    expect(r.code).toBe(ResponseCode.SUCCESS);
    const data = bodyJson<{ data: Record<string, { clientId: string; remoteIP: string }[]> }>(r).data;
    expect(data[PGROUP]?.[0]?.remoteIP).toStartWith("/127.0.0.1:");
  });

  test("VIEW_BROKER_STATS_DATA counts puts per topic and gets per group; unknown stats are SYSTEM_ERROR", async () => {
    const put = await call(RequestCode.VIEW_BROKER_STATS_DATA, { statsName: "TOPIC_PUT_NUMS", statsKey: TOPIC });
    expect(put.code).toBe(ResponseCode.SUCCESS);
    const p = bodyJson<{ statsMinute: { sum: number; tps: number }; statsDay: { sum: number } }>(put);
    expect(p.statsMinute.sum).toBe(3);
    expect(p.statsMinute.tps).toBeGreaterThan(0);
    const get = await call(RequestCode.VIEW_BROKER_STATS_DATA, { statsName: "GROUP_GET_NUMS", statsKey: `${TOPIC}@${GROUP}` });
    expect(bodyJson<{ statsMinute: { sum: number } }>(get).statsMinute.sum).toBeGreaterThanOrEqual(3);
    const none = await call(RequestCode.VIEW_BROKER_STATS_DATA, { statsName: "TOPIC_PUT_NUMS", statsKey: "NoSuchTopic" });
    expect(none.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(none.remark).toBe("The stats <TOPIC_PUT_NUMS> <NoSuchTopic> not exist");
  });

  test("GET_CONSUME_STATS carries a real consume TPS", async () => {
    const r = await call(RequestCode.GET_CONSUME_STATS, { consumerGroup: GROUP, topic: TOPIC });
    const parsed = parseObjectKeyedJson(new TextDecoder().decode(r.body));
    if ("invalid" in parsed) throw new Error(parsed.invalid);
    expect((parsed.value as { consumeTps: number }).consumeTps).toBeGreaterThan(0);
  });

  test("CLEAN_EXPIRED_CONSUMEQUEUE succeeds and keeps live queues; an unknown code is still REQUEST_CODE_NOT_SUPPORTED", async () => {
    expect((await call(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)).code).toBe(ResponseCode.SUCCESS);
    expect((await call(RequestCode.GET_MAX_OFFSET, { topic: TOPIC, queueId: "0" })).extFields?.offset).toBe("3");
    expect((await call(9999)).code).toBe(ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
  });
});

describe("requests the broker forwards to a consumer", () => {
  test("GET_CONSUMER_RUNNING_INFO: the client's ConsumerRunningInfo with its queues", async () => {
    const r = await call(RequestCode.GET_CONSUMER_RUNNING_INFO, { consumerGroup: GROUP, clientId: consumer.clientId, jstackEnable: "false" });
    expect(r.code).toBe(ResponseCode.SUCCESS);
    const parsed = parseObjectKeyedJson(new TextDecoder().decode(r.body));
    if ("invalid" in parsed) throw new Error(parsed.invalid);
    const info = parsed.value as { mqTable: Map<{ topic: string }, { commitOffset: number }>; properties: Record<string, string> };
    const topics = [...info.mqTable.keys()].map((mq) => mq.topic);
    expect(topics).toContain(TOPIC);
    expect(info.properties.PROP_CONSUME_TYPE).toBe("CONSUME_PASSIVELY");
    const gone = await call(RequestCode.GET_CONSUMER_RUNNING_INFO, { consumerGroup: GROUP, clientId: "nobody@0" });
    expect(gone.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(gone.remark).toBe(`The Consumer <${GROUP}> <nobody@0> not online`);
  });

  test("INVOKE_BROKER_TO_GET_CONSUMER_STATUS: each client's offsets", async () => {
    const r = await call(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, { topic: TOPIC, group: GROUP });
    expect(r.code).toBe(ResponseCode.SUCCESS);
    const parsed = parseObjectKeyedJson(new TextDecoder().decode(r.body));
    if ("invalid" in parsed) throw new Error(parsed.invalid);
    const table = (parsed.value as { consumerTable: Record<string, Map<{ queueId: number }, number>> }).consumerTable;
    expect([...(table[consumer.clientId]?.values() ?? [])]).toEqual([3]);
  });

  test("CONSUME_MESSAGE_DIRECTLY: the handler runs on the stored message", async () => {
    const before = seen.length;
    const r = await call(RequestCode.CONSUME_MESSAGE_DIRECTLY, {
      consumerGroup: GROUP,
      clientId: consumer.clientId,
      msgId: sent[1]!.offsetMsgId ?? "",
    });
    expect(r.code).toBe(ResponseCode.SUCCESS);
    expect(bodyJson<{ consumeResult: string }>(r).consumeResult).toBe("CR_SUCCESS");
    expect(seen.slice(before)).toEqual(["m1"]);
  });

  test("INVOKE_BROKER_TO_RESET_OFFSET: the online consumer goes back and consumes again; offline groups are CONSUMER_NOT_ONLINE", async () => {
    const before = seen.length;
    const r = await call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, { topic: TOPIC, group: GROUP, timestamp: "0", isForce: "true" });
    expect(r.code).toBe(ResponseCode.SUCCESS);
    await waitFor(() => seen.length >= before + 3, 10_000, "the messages consumed again after the reset");
    expect(seen.slice(before, before + 3)).toEqual(["m0", "m1", "m2"]);
    const offline = await call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, { topic: TOPIC, group: "NoOneHere", timestamp: "0", isForce: "true" });
    // No stored offset for that group: Java's "not exist" answer comes first.
    expect(offline.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(offline.remark).toBe("THe consumer group <NoOneHere> not exist");
    await call(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: "NoOneHere", topic: TOPIC, queueId: "0", commitOffset: "2" });
    const notOnline = await call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, { topic: TOPIC, group: "NoOneHere", timestamp: "0", isForce: "true" });
    expect(notOnline.code).toBe(ResponseCode.CONSUMER_NOT_ONLINE);
  });
});
