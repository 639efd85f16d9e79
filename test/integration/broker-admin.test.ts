/**
 * The compiled binary as a master broker, driven over the real wire: the query and admin requests
 * of docs/PROTOCOL.md §3.11, §3.12 and §3.15 (QUERY_MESSAGE, VIEW_MESSAGE_BY_ID, runtime info,
 * connections, offsets, subscription groups, rebalance locks, topic and consume stats), their
 * error answers, the same requests on the VIP port, and a slave refusing group writes.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { decodeOffsetMsgId, decodeRecordAt, javaStringHashCode, parseProperties, type DecodedRecord } from "../../src/commitlog/index.ts";
import { parseObjectKeyedJson } from "../../src/common/object-key-json.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingClient, type RemotingCommand } from "../../src/remoting/index.ts";
import { ROOT, startRocketbun, waitFor, type RunningBinary } from "../harness/binary.ts";
import { bodyJson, jsonBytes, newClient } from "../harness/wire.ts";

const TEST_MIN = join(ROOT, "config", "test-min.yaml");
const TOPIC = "AdminT";
const TIMEOUT_MS = 3000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Broker {
  addr: string;
  vip: string;
  proc: RunningBinary;
}

async function startBroker(role: "master" | "slave" = "master"): Promise<Broker> {
  const ns = await startRocketbun({ role: "namesrv" });
  cleanups.push(() => ns[Symbol.asyncDispose]());
  const proc = await startRocketbun({ role, args: ["--namesrv", ns.namesrvAddr, "--config", TEST_MIN] });
  cleanups.push(() => proc[Symbol.asyncDispose]());
  return { addr: `127.0.0.1:${proc.ports.broker}`, vip: `127.0.0.1:${proc.ports.vip}`, proc };
}

function client(): RemotingClient {
  const c = newClient();
  cleanups.push(() => c.close());
  return c;
}

function call(c: RemotingClient, addr: string, code: number, ext?: Record<string, string>, body?: Uint8Array): Promise<RemotingCommand> {
  return c.invoke(addr, createRequest(code, ext, body), TIMEOUT_MS);
}

async function createTopic(c: RemotingClient, addr: string, topic: string, queues: number): Promise<void> {
  const n = String(queues);
  const ext = { topic, defaultTopic: "TBW102", readQueueNums: n, writeQueueNums: n, perm: "6", topicFilterType: "SINGLE_TAG", order: "false" };
  const res = await call(c, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, ext);
  expect(res.code).toBe(ResponseCode.SUCCESS);
}

/** SEND_MESSAGE_V2 with TAGS x and the given KEYS / UNIQ_KEY; returns the CommitLog offset. */
async function send(c: RemotingClient, addr: string, o: { keys: string; uniq?: string; queueId?: number; body?: string }): Promise<number> {
  let props = `TAGS\u0001x\u0002KEYS\u0001${o.keys}`;
  if (o.uniq) props += `\u0002UNIQ_KEY\u0001${o.uniq}`;
  const ext = {
    a: "PG",
    b: TOPIC,
    c: "TBW102",
    d: "4",
    e: String(o.queueId ?? 0),
    f: "0",
    g: String(Date.now()),
    h: "0",
    i: props,
  };
  const res = await call(c, addr, RequestCode.SEND_MESSAGE_V2, ext, new TextEncoder().encode(o.body ?? "hello"));
  expect(res.code).toBe(ResponseCode.SUCCESS);
  const id = decodeOffsetMsgId(res.extFields?.msgId ?? "");
  if ("invalid" in id) throw new Error(id.invalid);
  return id.offset;
}

function records(body: Uint8Array | undefined): DecodedRecord[] {
  const out: DecodedRecord[] = [];
  let pos = 0;
  while (body && pos < body.length) {
    const r = decodeRecordAt(body, pos, { checkCrc: true });
    if (!("totalSize" in r)) throw new Error(`bad record at ${pos}: ${JSON.stringify(r)}`);
    out.push(r);
    pos += r.totalSize;
  }
  return out;
}

function query(c: RemotingClient, addr: string, key: string, maxNum: number, unique = false): Promise<RemotingCommand> {
  const ext: Record<string, string> = {
    topic: TOPIC,
    key,
    maxNum: String(maxNum),
    beginTimestamp: "0",
    endTimestamp: "9223372036854775807",
  };
  if (unique) ext._UNIQUE_KEY_QUERY = "true";
  return call(c, addr, RequestCode.QUERY_MESSAGE, ext);
}

function objectKeyed(
  res: RemotingCommand,
): Record<string, unknown> & { offsetTable: Map<{ topic: string; queueId: number }, Record<string, number>> } {
  const r = parseObjectKeyedJson(new TextDecoder().decode(res.body));
  if ("invalid" in r) throw new Error(r.invalid);
  const v = r.value as { offsetTable: unknown };
  // An empty table has no object keys, so it reads as a plain {}.
  if (!(v.offsetTable instanceof Map)) v.offsetTable = new Map(Object.entries(v.offsetTable as object));
  return v as ReturnType<typeof objectKeyed>;
}

function heartbeat(clientID: string, producer: string, consumer: string, subString: string): Uint8Array {
  return jsonBytes({
    clientID,
    producerDataSet: [{ groupName: producer }],
    consumerDataSet: [
      {
        groupName: consumer,
        consumeType: "CONSUME_PASSIVELY",
        messageModel: "CLUSTERING",
        consumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
        unitMode: false,
        subscriptionDataSet: [{ topic: TOPIC, subString, tagsSet: [subString], codeSet: [javaStringHashCode(subString)], subVersion: 1 }],
      },
    ],
  });
}

describe("broker binary: query and admin requests", () => {
  test("QUERY_MESSAGE by key and unique key (capped at 64 / 32), VIEW_MESSAGE_BY_ID, their errors, topic stats, runtime info", async () => {
    const b = await startBroker();
    const c = client();
    await createTopic(c, b.addr, TOPIC, 2);
    const offsets: number[] = [];
    for (let i = 0; i < 3; i++) offsets.push(await send(c, b.addr, { keys: "k1 shared", uniq: `U${i}`, body: `m${i}` }));
    for (let i = 0; i < 70; i++) await send(c, b.addr, { keys: "many", uniq: "many", queueId: 1 });

    // The index is built behind the CommitLog: wait until every "many" record is findable.
    const many = await waitFor(
      async () => {
        const res = await query(c, b.addr, "many", 1000);
        return records(res.body).length === 64 ? res : null;
      },
      5000,
      "64 records for key many",
    );
    expect(many.code).toBe(ResponseCode.SUCCESS);
    expect(Number(many.extFields?.indexLastUpdateTimestamp)).toBeGreaterThan(0);
    expect(Number(many.extFields?.indexLastUpdatePhyoffset)).toBeGreaterThan(offsets[2]!);
    expect(records((await query(c, b.addr, "many", 1000, true)).body).length).toBe(32);
    expect(records((await query(c, b.addr, "many", 5)).body).length).toBe(5);

    const k1 = await query(c, b.addr, "k1", 10);
    const found = records(k1.body);
    expect(found.map((r) => new TextDecoder().decode(r.body)).sort()).toEqual(["m0", "m1", "m2"]);
    expect(found.every((r) => r.topic === TOPIC && parseProperties(r.properties).TAGS === "x")).toBe(true);
    const u1 = records((await query(c, b.addr, "U1", 10, true)).body);
    expect(u1.map((r) => r.physicalOffset)).toEqual([offsets[1]!]);

    const none = await query(c, b.addr, "nope", 10);
    expect(none.code).toBe(ResponseCode.QUERY_NOT_FOUND);
    expect(none.body).toBeUndefined();
    expect(none.extFields?.indexLastUpdatePhyoffset).toBeDefined();
    const noKey = await call(c, b.addr, RequestCode.QUERY_MESSAGE, { topic: TOPIC, maxNum: "1", beginTimestamp: "0", endTimestamp: "1" });
    expect(noKey.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(noKey.remark).toContain("key");
    const badNum = await call(c, b.addr, RequestCode.QUERY_MESSAGE, {
      topic: TOPIC,
      key: "k1",
      maxNum: "ten",
      beginTimestamp: "0",
      endTimestamp: "1",
    });
    expect(badNum.code).toBe(ResponseCode.SYSTEM_ERROR);

    const view = await call(c, b.addr, RequestCode.VIEW_MESSAGE_BY_ID, { offset: String(offsets[2]) });
    expect(view.code).toBe(ResponseCode.SUCCESS);
    const [viewed] = records(view.body);
    expect(viewed!.physicalOffset).toBe(offsets[2]!);
    expect(new TextDecoder().decode(viewed!.body)).toBe("m2");
    for (const bad of [offsets[1]! + 1, -1, 1e12]) {
      const res = await call(c, b.addr, RequestCode.VIEW_MESSAGE_BY_ID, { offset: String(bad) });
      expect(res.code).toBe(ResponseCode.SYSTEM_ERROR);
      expect(res.remark).toBe(`can not find message by the offset, ${bad}`);
    }
    expect((await call(c, b.addr, RequestCode.VIEW_MESSAGE_BY_ID)).code).toBe(ResponseCode.SYSTEM_ERROR);

    const stats = await call(c, b.addr, RequestCode.GET_TOPIC_STATS_INFO, { topic: TOPIC });
    expect(stats.code).toBe(ResponseCode.SUCCESS);
    const table = [...objectKeyed(stats).offsetTable].sort(([a], [z]) => a.queueId - z.queueId);
    expect(table.map(([mq]) => mq)).toEqual([0, 1].map((queueId) => ({ brokerName: expect.any(String), queueId, topic: TOPIC })));
    expect(table.map(([, v]) => [v.minOffset, v.maxOffset])).toEqual([
      [0, 3],
      [0, 70],
    ]);
    expect(table[0]![1].lastUpdateTimestamp).toBe(viewed!.storeTimestamp);
    const noTopic = await call(c, b.addr, RequestCode.GET_TOPIC_STATS_INFO, { topic: "NoSuchTopic" });
    expect(noTopic.code).toBe(ResponseCode.TOPIC_NOT_EXIST);
    expect(noTopic.remark).toBe("topic[NoSuchTopic] not exist");

    const info = await call(c, b.addr, RequestCode.GET_BROKER_RUNTIME_INFO);
    expect(info.code).toBe(ResponseCode.SUCCESS);
    const t = bodyJson<{ table: Record<string, string> }>(info).table;
    expect(t.brokerVersionDesc).toBe("V4_9_8");
    // What mqadmin clusterList parses: longs, and the first of three space-separated doubles.
    for (const k of ["Put", "Get"]) {
      for (const when of ["TodayNow", "TodayMorning", "YesterdayMorning"]) expect(t[`msg${k}Total${when}`]).toMatch(/^\d+$/);
    }
    for (const k of ["putTps", "getTransferedTps"]) expect(t[k]!.split(" ").map(Number).every(Number.isFinite)).toBe(true);
    for (const k of ["sendThreadPoolQueueSize", "pullThreadPoolQueueSize", "pageCacheLockTimeMills"]) expect(t[k]).toBe("0");
    expect(Number(t.earliestMessageTimeStamp)).toBeGreaterThan(0);
    expect(Number(t.earliestMessageTimeStamp)).toBeLessThanOrEqual(viewed!.storeTimestamp);
    expect(Number(t.commitLogDiskRatio)).toBeGreaterThan(0);
    expect(Number(t.commitLogDiskRatio)).toBeLessThanOrEqual(1);
    expect(Number(t.commitLogMaxOffset)).toBeGreaterThan(offsets[2]!);
    expect(t.commitLogMinOffset).toBe("0");
  });

  test("connections, consumer offsets, consume stats, delay offsets; errors for offline and unknown groups", async () => {
    const b = await startBroker();
    const c = client();
    await createTopic(c, b.addr, TOPIC, 2);
    const offsets: number[] = [];
    for (let i = 0; i < 3; i++) offsets.push(await send(c, b.addr, { keys: `k${i}` }));

    const offline = await call(c, b.addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, { consumerGroup: "CG1" });
    expect(offline.code).toBe(ResponseCode.CONSUMER_NOT_ONLINE);
    expect(offline.remark).toBe("the consumer group[CG1] not online");
    const noProducer = await call(c, b.addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, { producerGroup: "PG1" });
    expect(noProducer.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(noProducer.remark).toBe("the producer group[PG1] not exist");
    expect((await call(c, b.addr, RequestCode.GET_CONSUMER_CONNECTION_LIST)).code).toBe(ResponseCode.SYSTEM_ERROR);

    const hb = await call(c, b.addr, RequestCode.HEART_BEAT, undefined, heartbeat("10.0.0.9@1", "PG1", "CG1", "x"));
    expect(hb.code).toBe(ResponseCode.SUCCESS);
    const conns = await call(c, b.addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, { consumerGroup: "CG1" });
    expect(conns.code).toBe(ResponseCode.SUCCESS);
    const cc = bodyJson<{
      connectionSet: { clientId: string; clientAddr: string; language: string; version: number }[];
      subscriptionTable: Record<string, { subString: string; codeSet: number[]; topic: string }>;
      consumeType: string;
      messageModel: string;
      consumeFromWhere: string;
    }>(conns);
    expect(cc.connectionSet).toEqual([
      { clientId: "10.0.0.9@1", clientAddr: expect.stringMatching(/^127\.0\.0\.1:\d+$/), language: "JAVA", version: 409 },
    ]);
    expect(cc.subscriptionTable[TOPIC]).toMatchObject({ topic: TOPIC, subString: "x", codeSet: [javaStringHashCode("x")] });
    expect([cc.consumeType, cc.messageModel, cc.consumeFromWhere]).toEqual(["CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_FIRST_OFFSET"]);
    const prod = await call(c, b.addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, { producerGroup: "PG1" });
    expect(bodyJson<{ connectionSet: { clientId: string }[] }>(prod).connectionSet.map((x) => x.clientId)).toEqual(["10.0.0.9@1"]);

    const commit = await call(c, b.addr, RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: "CG1", topic: TOPIC, queueId: "0", commitOffset: "2" });
    expect(commit.code).toBe(ResponseCode.SUCCESS);
    const all = await call(c, b.addr, RequestCode.GET_ALL_CONSUMER_OFFSET);
    expect(bodyJson<{ offsetTable: Record<string, Record<string, number>> }>(all).offsetTable[`${TOPIC}@CG1`]).toEqual({ "0": 2 });

    const second = records((await call(c, b.addr, RequestCode.VIEW_MESSAGE_BY_ID, { offset: String(offsets[1]) })).body)[0]!;
    const bothForms: Record<string, string>[] = [{ consumerGroup: "CG1" }, { consumerGroup: "CG1", topic: TOPIC }];
    for (const ext of bothForms) {
      const res = await call(c, b.addr, RequestCode.GET_CONSUME_STATS, ext);
      expect(res.code).toBe(ResponseCode.SUCCESS);
      const cs = objectKeyed(res);
      expect(cs.consumeTps).toBe(0);
      const rows = [...cs.offsetTable].sort(([a], [z]) => a.queueId - z.queueId).map(([mq, v]) => [mq.topic, mq.queueId, v]);
      expect(rows).toEqual([
        [TOPIC, 0, { brokerOffset: 3, consumerOffset: 2, lastTimestamp: second.storeTimestamp, pullOffset: 2 }],
        [TOPIC, 1, { brokerOffset: 0, consumerOffset: 0, lastTimestamp: 0, pullOffset: 0 }],
      ]);
    }
    const unknownTopic = objectKeyed(await call(c, b.addr, RequestCode.GET_CONSUME_STATS, { consumerGroup: "CG1", topic: "NoSuchTopic" }));
    expect(unknownTopic.offsetTable.size).toBe(0);
    expect((await call(c, b.addr, RequestCode.GET_CONSUME_STATS, { topic: TOPIC })).code).toBe(ResponseCode.SYSTEM_ERROR);

    const delay = await call(c, b.addr, RequestCode.GET_ALL_DELAY_OFFSET);
    expect(delay.code).toBe(ResponseCode.SUCCESS);
    expect(typeof bodyJson<{ offsetTable: object }>(delay).offsetTable).toBe("object");
  });

  test("subscription groups: create, list, delete with offsets; bad bodies refused", async () => {
    const b = await startBroker();
    const c = client();
    const groups = async () => {
      const res = await call(c, b.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG);
      expect(res.code).toBe(ResponseCode.SUCCESS);
      return bodyJson<{ dataVersion: { counter: number }; subscriptionGroupTable: Record<string, Record<string, unknown>> }>(res);
    };
    const before = await groups();
    expect(Object.keys(before.subscriptionGroupTable)).toContain("TOOLS_CONSUMER");

    const body = jsonBytes({ groupName: "CG2", retryMaxTimes: 3, consumeBroadcastEnable: false });
    expect((await call(c, b.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, undefined, body)).code).toBe(ResponseCode.SUCCESS);
    const after = await groups();
    expect(after.subscriptionGroupTable.CG2).toEqual({
      brokerId: 0,
      consumeBroadcastEnable: false,
      consumeEnable: true,
      consumeFromMinEnable: true,
      groupName: "CG2",
      notifyConsumerIdsChangedEnable: true,
      retryMaxTimes: 3,
      retryQueueNums: 1,
      whichBrokerWhenConsumeSlowly: 1,
    });
    expect(after.dataVersion.counter).toBeGreaterThan(before.dataVersion.counter);

    const enc = new TextEncoder();
    for (const bad of [undefined, enc.encode("{not json"), jsonBytes({ retryMaxTimes: 1 }), jsonBytes({ groupName: "bad name!" }), jsonBytes([1])]) {
      const res = await call(c, b.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, undefined, bad);
      expect(res.code).toBe(ResponseCode.SYSTEM_ERROR);
      expect(res.remark).toBeTruthy();
    }

    for (const group of ["CG2", "CG3"]) {
      const res = await call(c, b.addr, RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: group, topic: TOPIC, queueId: "0", commitOffset: "1" });
      expect(res.code).toBe(ResponseCode.SUCCESS);
    }
    const del = await call(c, b.addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, { groupName: "CG2", removeOffset: "true" });
    expect(del.code).toBe(ResponseCode.SUCCESS);
    expect((await call(c, b.addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, { groupName: "CG3" })).code).toBe(ResponseCode.SUCCESS);
    expect((await groups()).subscriptionGroupTable.CG2).toBeUndefined();
    const offs = bodyJson<{ offsetTable: Record<string, unknown> }>(await call(c, b.addr, RequestCode.GET_ALL_CONSUMER_OFFSET)).offsetTable;
    // removeOffset=true dropped CG2's offsets; CG3 was deleted without it and keeps them.
    expect(Object.keys(offs).sort()).toEqual([`${TOPIC}@CG3`]);
    expect((await call(c, b.addr, RequestCode.DELETE_SUBSCRIPTIONGROUP)).code).toBe(ResponseCode.SYSTEM_ERROR);
  });

  test("LOCK_BATCH_MQ / UNLOCK_BATCH_MQ: one holder per queue, unlock only by the holder", async () => {
    const b = await startBroker();
    const c = client();
    const mq = (queueId: number) => ({ topic: TOPIC, brokerName: "broker-a", queueId });
    const lock = async (clientId: string, ids: number[], code: number = RequestCode.LOCK_BATCH_MQ) => {
      const res = await call(c, b.addr, code, undefined, jsonBytes({ consumerGroup: "OG", clientId, mqSet: ids.map(mq) }));
      expect(res.code).toBe(ResponseCode.SUCCESS);
      if (code === RequestCode.UNLOCK_BATCH_MQ) return [];
      return bodyJson<{ lockOKMQSet: { queueId: number; topic: string; brokerName: string }[] }>(res).lockOKMQSet;
    };
    expect(await lock("A", [0, 1])).toEqual([mq(0), mq(1)]);
    expect((await lock("B", [0, 1, 2])).map((m) => m.queueId)).toEqual([2]);
    expect((await lock("A", [0, 1, 2])).map((m) => m.queueId)).toEqual([0, 1]);
    await lock("B", [0], RequestCode.UNLOCK_BATCH_MQ); // not B's: no effect
    expect(await lock("B", [0])).toEqual([]);
    await lock("A", [0], RequestCode.UNLOCK_BATCH_MQ);
    expect((await lock("B", [0])).map((m) => m.queueId)).toEqual([0]);

    for (const bad of [
      undefined,
      jsonBytes({ clientId: "A", mqSet: [] }),
      jsonBytes({ consumerGroup: "OG", clientId: "A", mqSet: [{ topic: TOPIC }] }),
    ]) {
      const res = await call(c, b.addr, RequestCode.LOCK_BATCH_MQ, undefined, bad);
      expect(res.code).toBe(ResponseCode.SYSTEM_ERROR);
    }
  });

  test("the VIP port answers the same non-pull requests and refuses pulls", async () => {
    const b = await startBroker();
    const c = client();
    await createTopic(c, b.vip, TOPIC, 1);
    const offset = await send(c, b.vip, { keys: "vipkey" });
    const q = await waitFor(
      async () => {
        const res = await query(c, b.vip, "vipkey", 4);
        return res.code === ResponseCode.SUCCESS ? res : null;
      },
      5000,
      "vipkey indexed",
    );
    expect(records(q.body).map((r) => r.physicalOffset)).toEqual([offset]);
    expect((await call(c, b.vip, RequestCode.VIEW_MESSAGE_BY_ID, { offset: String(offset) })).code).toBe(ResponseCode.SUCCESS);
    for (const code of [RequestCode.GET_BROKER_RUNTIME_INFO, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, RequestCode.GET_ALL_CONSUMER_OFFSET]) {
      expect((await call(c, b.vip, code)).code).toBe(ResponseCode.SUCCESS);
    }
    expect((await call(c, b.vip, RequestCode.GET_TOPIC_STATS_INFO, { topic: TOPIC })).code).toBe(ResponseCode.SUCCESS);
    expect((await call(c, b.vip, RequestCode.GET_CONSUME_STATS, { consumerGroup: "G" })).code).toBe(ResponseCode.SUCCESS);
    const pull = await call(c, b.vip, RequestCode.PULL_MESSAGE, { consumerGroup: "G", topic: TOPIC, queueId: "0", queueOffset: "0" });
    expect(pull.code).toBe(ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
  });

  test("a slave refuses subscription group writes", async () => {
    const b = await startBroker("slave");
    const c = client();
    const create = await call(c, b.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, undefined, jsonBytes({ groupName: "CG9" }));
    expect(create.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(create.remark).toContain("slave");
    const del = await call(c, b.addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, { groupName: "TOOLS_CONSUMER" });
    expect(del.code).toBe(ResponseCode.SYSTEM_ERROR);
    const groups = bodyJson<{ subscriptionGroupTable: Record<string, unknown> }>(await call(c, b.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG));
    expect(Object.keys(groups.subscriptionGroupTable)).toContain("TOOLS_CONSUMER");
    expect(groups.subscriptionGroupTable.CG9).toBeUndefined();
  });
});
