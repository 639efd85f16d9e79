/**
 * The topic admin processor's rules (docs/PROTOCOL.md §3.10, §3.15): UPDATE_AND_CREATE_TOPIC,
 * DELETE_TOPIC_IN_BROKER and GET_ALL_TOPIC_CONFIG, checked in process through the broker fixture
 * (../test-support.ts). For each code: the good case and the state it leaves (the topic table as
 * the controller and GET_ALL_TOPIC_CONFIG show it, ConsumeQueues, group offsets, topics.json, the
 * re-registration with the name servers) and the refusals (a slave, bad names, system topics, bad
 * or missing header fields), each of which leaves the table as it was.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { TopicConfigWrapper } from "../metadata-topics.ts";
import type { TopicConfig } from "../../protocol/topics.ts";
import {
  createRequest,
  RequestCode,
  ResponseCode,
  type ExtFields,
  type RemotingCommand,
} from "../../remoting/index.ts";
import { MemNetwork } from "../../remoting/test-support.ts";
import { createTopicRequest, FAKE_NAMESRV_ADDR, fakeNamesrv, InProcessBroker, sendV2Request } from "../test-support.ts";

const dec = new TextDecoder();
const SLAVE_REMARK = "broker broker-a is a slave: change topics on its master";
const conflict = (topic: string) => `The topic[${topic}] is conflict with system topic.`;

function expectCode(res: RemotingCommand, code: number, remark?: string): void {
  expect({ code: res.code, remark: res.remark }).toMatchObject({ code });
  if (remark !== undefined) expect(res.remark ?? "").toBe(remark);
}

/** UPDATE_AND_CREATE_TOPIC with exactly these fields (none added), for the header checks. */
function upsertRequest(ext: ExtFields): RemotingCommand {
  return createRequest(RequestCode.UPDATE_AND_CREATE_TOPIC, ext);
}

/** The four required fields; `extra` adds or overrides. */
function fullUpsert(topic: string, extra: ExtFields = {}): RemotingCommand {
  return upsertRequest({ topic, readQueueNums: "4", writeQueueNums: "4", perm: "6", ...extra });
}

function deleteRequest(topic?: string): RemotingCommand {
  return createRequest(RequestCode.DELETE_TOPIC_IN_BROKER, topic === undefined ? {} : { topic });
}

async function allTopicConfig(b: InProcessBroker): Promise<TopicConfigWrapper> {
  const res = await b.ok(createRequest(RequestCode.GET_ALL_TOPIC_CONFIG));
  return JSON.parse(dec.decode(res.body)) as TopicConfigWrapper;
}

const singleTag = (topicName: string, queues: number, perm = 6): TopicConfig => ({
  topicName,
  readQueueNums: queues,
  writeQueueNums: queues,
  perm,
  topicFilterType: "SINGLE_TAG",
  topicSysFlag: 0,
  order: false,
});

/** The topics the fixture's master has at start (docs/STORAGE.md §8), under the schema's default names. */
const START_TOPICS = [
  "SELF_TEST_TOPIC",
  "BenchmarkTest",
  "DefaultCluster",
  "broker-a",
  "OFFSET_MOVED_EVENT",
  "SCHEDULE_TOPIC_XXXX",
  "DefaultCluster_REPLY_TOPIC",
];

/** Every name docs/PROTOCOL.md §3.10 calls a system topic, on the fixture's cluster and broker names. */
const SYSTEM_NAMES = [
  "TBW102",
  "SCHEDULE_TOPIC_XXXX",
  "BenchmarkTest",
  "RMQ_SYS_TRANS_HALF_TOPIC",
  "RMQ_SYS_TRANS_OP_HALF_TOPIC",
  "TRANS_CHECK_MAX_TIME_TOPIC",
  "SELF_TEST_TOPIC",
  "OFFSET_MOVED_EVENT",
  "RMQ_SYS_TRACE_TOPIC",
  "rmq_sys_anything",
  "DefaultCluster",
  "broker-a",
  "DefaultCluster_REPLY_TOPIC",
];

describe("UPDATE_AND_CREATE_TOPIC", () => {
  test("creates the topic from the header, writes topics.json and bumps the data version", async () => {
    await using b = InProcessBroker.start();
    const before = (await allTopicConfig(b)).dataVersion.counter;
    const res = await b.call(createTopicRequest("Orders", 4));
    expectCode(res, ResponseCode.SUCCESS);
    expect(res.remark ?? "").toBe("");
    expect(b.controller.info.topic("Orders")).toEqual(singleTag("Orders", 4));
    const all = await allTopicConfig(b);
    expect(all.topicConfigTable.Orders).toEqual(singleTag("Orders", 4));
    expect(all.dataVersion.counter).toBe(before + 1);
    const onDisk = JSON.parse(readFileSync(join(b.dir, "config", "topics.json"), "utf8")) as TopicConfigWrapper;
    expect(onDisk.topicConfigTable.Orders).toEqual(singleTag("Orders", 4));
    expect(onDisk.dataVersion).toEqual(all.dataVersion);
  });

  test("the optional fields are read: read and write queue counts apart, MULTI_TAG, topicSysFlag, order; defaultTopic is ignored", async () => {
    await using b = InProcessBroker.start();
    const extra = { readQueueNums: "2", writeQueueNums: "8", perm: "4", topicFilterType: "MULTI_TAG", topicSysFlag: "1", order: "true" };
    await b.ok(fullUpsert("Shaped", { ...extra, defaultTopic: "NoSuchTopic" }));
    expect(b.controller.info.topic("Shaped")).toEqual({
      topicName: "Shaped",
      readQueueNums: 2,
      writeQueueNums: 8,
      perm: 4,
      topicFilterType: "MULTI_TAG",
      topicSysFlag: 1,
      order: true,
    });
    expect(b.controller.info.topic("NoSuchTopic")).toBeUndefined();
  });

  test("an update replaces the whole config: optional fields left out fall back to their defaults", async () => {
    await using b = InProcessBroker.start();
    await b.ok(fullUpsert("T", { topicFilterType: "MULTI_TAG", topicSysFlag: "1", order: "true" }));
    const counter = (await allTopicConfig(b)).dataVersion.counter;
    await b.ok(fullUpsert("T", { readQueueNums: "8", writeQueueNums: "8", perm: "2" }));
    expect(b.controller.info.topic("T")).toEqual(singleTag("T", 8, 2));
    expect((await allTopicConfig(b)).dataVersion.counter).toBe(counter + 1);
  });

  test("queue counts 0 and 65535 and perm 0 and 15 are accepted: the ranges are inclusive", async () => {
    await using b = InProcessBroker.start();
    await b.ok(fullUpsert("Low", { readQueueNums: "0", writeQueueNums: "0", perm: "0" }));
    await b.ok(fullUpsert("High", { readQueueNums: "65535", writeQueueNums: "65535", perm: "15" }));
    expect(b.controller.info.topic("Low")).toEqual(singleTag("Low", 0, 0));
    expect(b.controller.info.topic("High")).toEqual(singleTag("High", 65535, 15));
  });

  test("queue counts outside 0..65535, perm outside 0..15 and an unknown filter type are SYSTEM_ERROR and change nothing", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 4));
    const before = await allTopicConfig(b);
    const queues = "readQueueNums and writeQueueNums must be between 0 and 65535";
    expectCode(await b.call(fullUpsert("T", { readQueueNums: "65536" })), ResponseCode.SYSTEM_ERROR, queues);
    expectCode(await b.call(fullUpsert("T", { writeQueueNums: "-1" })), ResponseCode.SYSTEM_ERROR, queues);
    expectCode(await b.call(fullUpsert("T", { perm: "16" })), ResponseCode.SYSTEM_ERROR, "perm must be between 0 and 15, got 16");
    expectCode(await b.call(fullUpsert("T", { perm: "-1" })), ResponseCode.SYSTEM_ERROR, "perm must be between 0 and 15, got -1");
    expectCode(
      await b.call(fullUpsert("T", { topicFilterType: "SQL92" })),
      ResponseCode.SYSTEM_ERROR,
      "topicFilterType must be SINGLE_TAG or MULTI_TAG, got SQL92",
    );
    expectCode(await b.call(fullUpsert("T", { topicSysFlag: "-1" })), ResponseCode.SYSTEM_ERROR, "topicSysFlag: -1 is outside 0..2147483647");
    expectCode(await b.call(fullUpsert("New", { perm: "16" })), ResponseCode.SYSTEM_ERROR);
    expect(await allTopicConfig(b)).toEqual(before);
    expect(b.controller.info.topic("New")).toBeUndefined();
  });

  test("a missing or non-integer required field is SYSTEM_ERROR naming the field", async () => {
    await using b = InProcessBroker.start();
    const before = await allTopicConfig(b);
    const required = { topic: "T", readQueueNums: "4", writeQueueNums: "4", perm: "6" };
    for (const field of ["topic", "readQueueNums", "writeQueueNums", "perm"] as const) {
      const ext: ExtFields = { ...required };
      delete ext[field];
      expectCode(await b.call(upsertRequest(ext)), ResponseCode.SYSTEM_ERROR, `the custom field <${field}> is null`);
    }
    // An empty value counts as missing, as Java's header decoding has it.
    expectCode(await b.call(fullUpsert("")), ResponseCode.SYSTEM_ERROR, "the custom field <topic> is null");
    expectCode(await b.call(fullUpsert("T", { perm: "rw" })), ResponseCode.SYSTEM_ERROR, "the custom field <perm> is not an integer: rw");
    expectCode(await b.call(fullUpsert("T", { readQueueNums: "4.5" })), ResponseCode.SYSTEM_ERROR, "the custom field <readQueueNums> is not an integer: 4.5");
    expectCode(await b.call(fullUpsert("T", { topicSysFlag: "x" })), ResponseCode.SYSTEM_ERROR, "the custom field <topicSysFlag> is not an integer: x");
    expect(await allTopicConfig(b)).toEqual(before);
  });

  test("an invalid topic name is SYSTEM_ERROR with Java's validator remark; 127 characters is the longest name", async () => {
    await using b = InProcessBroker.start();
    const before = await allTopicConfig(b);
    expectCode(await b.call(fullUpsert("   ")), ResponseCode.SYSTEM_ERROR, "The specified topic is blank.");
    const illegal = "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$";
    for (const name of ["bad/topic", "../escape", "a b", "topic.v1"]) {
      expectCode(await b.call(fullUpsert(name)), ResponseCode.SYSTEM_ERROR, illegal);
    }
    expectCode(await b.call(fullUpsert("x".repeat(128))), ResponseCode.SYSTEM_ERROR, "The specified topic is longer than topic max length.");
    expect(await allTopicConfig(b)).toEqual(before);
    await b.ok(fullUpsert("x".repeat(127)));
    await b.ok(fullUpsert("%RETRY%Group|a-b_c"));
    expect(b.controller.info.topic("x".repeat(127))).toEqual(singleTag("x".repeat(127), 4));
  });

  test("a system topic is SYSTEM_ERROR `conflict with system topic` and keeps its config", async () => {
    await using b = InProcessBroker.start();
    const before = await allTopicConfig(b);
    for (const name of SYSTEM_NAMES) {
      expectCode(await b.call(fullUpsert(name, { perm: "2" })), ResponseCode.SYSTEM_ERROR, conflict(name));
    }
    expect(await allTopicConfig(b)).toEqual(before);
    // The prefix is case-sensitive, as in Java's TopicValidator.
    await b.ok(fullUpsert("RMQ_SYS_mine"));
  });

  test("a slave refuses with SYSTEM_ERROR naming itself, before it looks at the name", async () => {
    await using b = InProcessBroker.start({ role: "slave" });
    const before = await allTopicConfig(b);
    expectCode(await b.call(createTopicRequest("T", 4)), ResponseCode.SYSTEM_ERROR, SLAVE_REMARK);
    expectCode(await b.call(fullUpsert("bad/topic")), ResponseCode.SYSTEM_ERROR, SLAVE_REMARK);
    expectCode(await b.call(fullUpsert("SCHEDULE_TOPIC_XXXX")), ResponseCode.SYSTEM_ERROR, SLAVE_REMARK);
    expect(b.controller.info.topic("T")).toBeUndefined();
    expect(await allTopicConfig(b)).toEqual(before);
  });
});

/** Two messages on queue 0 of `topic` and an offset of group CG committed there. */
async function fillTopic(b: InProcessBroker, topic: string): Promise<void> {
  await b.ok(createTopicRequest(topic, 4));
  await b.ok(sendV2Request(topic, "one"));
  await b.ok(sendV2Request(topic, "two"));
  const commit = { consumerGroup: "CG", topic, queueId: "0", commitOffset: "1" };
  await b.ok(createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, commit));
  expect(b.controller.info.queueOffsets(topic)[0]!.maxOffset).toBe(2);
  expect(b.controller.info.groupOffsets("CG")).toContainEqual(expect.objectContaining({ topic, queueId: 0, consumerOffset: 1 }));
}

describe("DELETE_TOPIC_IN_BROKER", () => {
  test("drops the config, the ConsumeQueues and the topic's group offsets, and bumps the data version", async () => {
    await using b = InProcessBroker.start();
    await fillTopic(b, "Gone");
    await fillTopic(b, "Kept");
    const counter = (await allTopicConfig(b)).dataVersion.counter;
    const res = await b.call(deleteRequest("Gone"));
    expectCode(res, ResponseCode.SUCCESS);
    expect(res.remark ?? "").toBe("");
    expect(b.controller.info.topic("Gone")).toBeUndefined();
    const all = await allTopicConfig(b);
    expect(Object.keys(all.topicConfigTable)).not.toContain("Gone");
    expect(all.dataVersion.counter).toBe(counter + 1);
    expect(b.controller.info.groupOffsets("CG")).toMatchObject([{ topic: "Kept", queueId: 0, consumerOffset: 1 }]);
    const onDisk = JSON.parse(readFileSync(join(b.dir, "config", "topics.json"), "utf8")) as TopicConfigWrapper;
    expect(Object.keys(onDisk.topicConfigTable)).not.toContain("Gone");
    // Created again, the topic starts empty: its old queues are gone.
    await b.ok(createTopicRequest("Gone", 4));
    expect(b.controller.info.queueOffsets("Gone").map((q) => q.maxOffset)).toEqual([0, 0, 0, 0]);
    expect(b.controller.info.queueOffsets("Kept")[0]!.maxOffset).toBe(2);
  });

  test("deleting a topic the broker does not have succeeds and leaves the table and its version alone", async () => {
    await using b = InProcessBroker.start();
    const before = await allTopicConfig(b);
    expectCode(await b.call(deleteRequest("NeverMade")), ResponseCode.SUCCESS);
    expect(await allTopicConfig(b)).toEqual(before);
  });

  test("a missing topic, an invalid name and a system topic are SYSTEM_ERROR; the system topics stay", async () => {
    await using b = InProcessBroker.start();
    const before = await allTopicConfig(b);
    expectCode(await b.call(deleteRequest()), ResponseCode.SYSTEM_ERROR, "the custom field <topic> is null");
    expectCode(await b.call(deleteRequest("")), ResponseCode.SYSTEM_ERROR, "the custom field <topic> is null");
    const illegal = "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$";
    expectCode(await b.call(deleteRequest("../config")), ResponseCode.SYSTEM_ERROR, illegal);
    expectCode(await b.call(deleteRequest("x".repeat(128))), ResponseCode.SYSTEM_ERROR, "The specified topic is longer than topic max length.");
    for (const name of SYSTEM_NAMES) expectCode(await b.call(deleteRequest(name)), ResponseCode.SYSTEM_ERROR, conflict(name));
    expect(await allTopicConfig(b)).toEqual(before);
    for (const name of START_TOPICS) expect(b.controller.info.topic(name)).toBeDefined();
  });

  test("a slave refuses with SYSTEM_ERROR naming itself and keeps its topics", async () => {
    await using b = InProcessBroker.start({ role: "slave" });
    const before = await allTopicConfig(b);
    expectCode(await b.call(deleteRequest("SELF_TEST_TOPIC")), ResponseCode.SYSTEM_ERROR, SLAVE_REMARK);
    expectCode(await b.call(deleteRequest("AnyTopic")), ResponseCode.SYSTEM_ERROR, SLAVE_REMARK);
    expect(await allTopicConfig(b)).toEqual(before);
  });
});

describe("GET_ALL_TOPIC_CONFIG", () => {
  test("answers the whole table as topics.json has it, entries in fastjson's (alphabetical) field order", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("Orders", 2));
    const res = await b.ok(createRequest(RequestCode.GET_ALL_TOPIC_CONFIG));
    const text = dec.decode(res.body);
    const body = JSON.parse(text) as TopicConfigWrapper;
    expect(Object.keys(body)).toEqual(["dataVersion", "topicConfigTable"]);
    expect(Object.keys(body.topicConfigTable).sort()).toEqual([...START_TOPICS, "Orders"].sort());
    for (const [name, cfg] of Object.entries(body.topicConfigTable)) expect(cfg.topicName).toBe(name);
    expect(text).toContain(
      '"Orders":{"order":false,"perm":6,"readQueueNums":2,"topicFilterType":"SINGLE_TAG","topicName":"Orders","topicSysFlag":0,"writeQueueNums":2}',
    );
    expect(body).toEqual(JSON.parse(readFileSync(join(b.dir, "config", "topics.json"), "utf8")) as TopicConfigWrapper);
  });

  test("a slave answers it too: reads are not refused", async () => {
    await using b = InProcessBroker.start({ role: "slave" });
    const body = await allTopicConfig(b);
    expect(body.topicConfigTable.SELF_TEST_TOPIC).toEqual(singleTag("SELF_TEST_TOPIC", 1));
    expect(typeof body.dataVersion.counter).toBe("number");
  });
});

/** Moves time in small steps until `done` holds (at most `ms`), letting the in-memory sockets deliver in between. */
async function advanceUntil(b: InProcessBroker, ms: number, done: () => boolean): Promise<void> {
  for (let t = 0; t < ms && !done(); t += 5) {
    await b.advance(5);
    await Bun.sleep(1);
  }
}

describe("re-registration", () => {
  test("a create and a delete each re-register with the name servers within tens of milliseconds", async () => {
    const network = new MemNetwork();
    const ns = fakeNamesrv(network);
    try {
      await using b = InProcessBroker.start({ network, namesrvAddr: [FAKE_NAMESRV_ADDR] });
      await advanceUntil(b, 100, () => ns.registrations.length > 0);
      const atStart = ns.registrations.length;
      expect(atStart).toBeGreaterThan(0);
      await b.ok(createTopicRequest("Routed", 4));
      await advanceUntil(b, 100, () => ns.registrations.length > atStart);
      expect(ns.registrations.at(-1)).toContain("Routed");
      const afterCreate = ns.registrations.length;
      await b.ok(deleteRequest("Routed"));
      await advanceUntil(b, 100, () => ns.registrations.length > afterCreate);
      expect(ns.registrations.length).toBeGreaterThan(afterCreate);
      expect(ns.registrations.at(-1)).not.toContain("Routed");
    } finally {
      ns.server.stop();
    }
  });
});
