/**
 * The requests the broker answers by asking a group's consumers (./broker-to-client.ts, Java
 * Broker2Client) through the in-process broker: the consumers are the test's own clients
 * (`InProcessBroker.client(onRequest)`), which record what the broker sends them and answer it.
 * INVOKE_BROKER_TO_RESET_OFFSET tells every consumer the new offsets (and stores none itself);
 * INVOKE_BROKER_TO_GET_CONSUMER_STATUS gathers each consumer's offsets; GET_CONSUMER_RUNNING_INFO
 * and CONSUME_MESSAGE_DIRECTLY are forwarded to the named client and its answer returned.
 */
import { describe, expect, test } from "bun:test";
import { decodeRecordAt } from "../../commitlog/index.ts";
import { parseObjectKeyedJson } from "../../common/object-key-json.ts";
import { createRequest, createResponse, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import { createTopicRequest, heartbeatRequest, InProcessBroker, sendV2Request } from "../test-support.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const GROUP = "CG";
const answer = (res: RemotingCommand) => ({ code: res.code, remark: res.remark ?? null });

type Reply = (cmd: RemotingCommand) => RemotingCommand | undefined;

/** A consumer of GROUP on T with its own connection: records what the broker sends and answers with `reply`. */
async function consumer(b: InProcessBroker, clientId: string, reply: Reply = () => undefined, language = "JAVA") {
  const received: RemotingCommand[] = [];
  const client = b.client((conn, cmd) => {
    if (cmd.code === RequestCode.NOTIFY_CONSUMER_IDS_CHANGED) return;
    received.push(cmd);
    const res = reply(cmd);
    if (res) conn.send(res);
  });
  const hb = heartbeatRequest(clientId, { group: GROUP, subs: [{ topic: "T", expr: "*" }] });
  hb.language = language;
  expect((await client.invoke(b.addr, hb, 10_000)).code).toBe(ResponseCode.SUCCESS);
  return { received, client };
}

/** An object-keyed {mq: offset} table as "topic/queueId" → offset. */
function mqTable(table: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (table instanceof Map) for (const [mq, v] of table) out[`${(mq as { topic: string }).topic}/${(mq as { queueId: number }).queueId}`] = v;
  return out;
}
const parsed = (body: Uint8Array | undefined): Record<string, unknown> => {
  const p = parseObjectKeyedJson(dec.decode(body));
  if ("invalid" in p) throw new Error(p.invalid);
  return p.value as Record<string, unknown>;
};
const commit = (b: InProcessBroker, queueId: number, offset: number, group = GROUP) =>
  b.ok(createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: group, topic: "T", queueId: String(queueId), commitOffset: String(offset) }));
const committed = async (b: InProcessBroker, queueId: number) =>
  Number((await b.ok(createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: GROUP, topic: "T", queueId: String(queueId) }))).extFields!.offset);
const reset = (timestamp: number, isForce: boolean, group = GROUP, topic = "T") =>
  createRequest(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, { topic, group, timestamp: String(timestamp), isForce: String(isForce) });

/** T with 2 queues: 3 messages on queue 0 one second apart (their store times returned), then 2 on queue 1. */
async function topicWithMessages(b: InProcessBroker): Promise<number[]> {
  await b.ok(createTopicRequest("T", 2));
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    times.push(b.sim.now);
    await b.ok(sendV2Request("T", `m${i}`, { queueId: 0 }));
    await b.advance(1000);
  }
  for (let i = 0; i < 2; i++) await b.ok(sendV2Request("T", `q1-${i}`, { queueId: 1 }));
  return times;
}

describe("INVOKE_BROKER_TO_RESET_OFFSET", () => {
  test("each online consumer is told the offsets at the timestamp (back only, unless forced); the stored offsets are the clients' to commit", async () => {
    await using b = InProcessBroker.start();
    const times = await topicWithMessages(b);
    const a = await consumer(b, "10.0.0.1@a");
    const c = await consumer(b, "10.0.0.2@c");
    await commit(b, 0, 3);
    await commit(b, 1, 2);

    const res = await b.call(reset(times[1]!, false));
    expect(res.code).toBe(ResponseCode.SUCCESS);
    expect(mqTable(parsed(res.body).offsetTable)).toEqual({ "T/0": 1, "T/1": 0 });
    await b.advance(0);
    for (const m of [a, c]) {
      expect(m.received.map((r) => r.code)).toEqual([RequestCode.RESET_CONSUMER_CLIENT_OFFSET]);
      expect(m.received[0]!.extFields).toMatchObject({ topic: "T", group: GROUP, timestamp: String(times[1]), isForce: "false" });
      expect(dec.decode(m.received[0]!.body)).toBe(dec.decode(res.body));
    }
    expect([await committed(b, 0), await committed(b, 1)]).toEqual([3, 2]);

    // -1 = each queue's end: not past what was consumed unless forced.
    await commit(b, 0, 1);
    expect(mqTable(parsed((await b.ok(reset(-1, false))).body).offsetTable)).toEqual({ "T/0": 1, "T/1": 2 });
    expect(mqTable(parsed((await b.ok(reset(-1, true))).body).offsetTable)).toEqual({ "T/0": 3, "T/1": 2 });
  });

  test("a CPP consumer gets ResetOffsetBodyForC", async () => {
    await using b = InProcessBroker.start();
    await topicWithMessages(b);
    const cpp = await consumer(b, "10.0.0.3@cpp", undefined, "CPP");
    await commit(b, 0, 2);
    await commit(b, 1, 1);
    await b.ok(reset(-1, true));
    await b.advance(0);
    const brokerName = b.controller.info.settings().brokerName;
    expect(JSON.parse(dec.decode(cpp.received[0]!.body))).toEqual({
      offsetTable: [
        { brokerName, offset: 3, queueId: 0, topic: "T" },
        { brokerName, offset: 2, queueId: 1, topic: "T" },
      ],
    });
  });

  test("refusals: no stored offset, no consumer online, no topic, no timestamp; nobody is told", async () => {
    await using b = InProcessBroker.start();
    await topicWithMessages(b);
    const a = await consumer(b, "10.0.0.1@a");
    expect(answer(await b.call(reset(-1, true)))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: `THe consumer group <${GROUP}> not exist` });
    await commit(b, 0, 1);
    await commit(b, 1, 1);
    await commit(b, 0, 1, "Offline");
    await commit(b, 1, 1, "Offline");
    expect(answer(await b.call(reset(-1, true, "Offline")))).toEqual({
      code: ResponseCode.CONSUMER_NOT_ONLINE,
      remark: "Consumer not online, so can not reset offset, Group: Offline Topic: T Timestamp: -1",
    });
    expect(answer(await b.call(reset(-1, true, GROUP, "Nope")))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "[reset-offset] reset offset failed, no topic in this broker. topic=Nope",
    });
    expect(answer(await b.call(createRequest(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, { topic: "T", group: GROUP })))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "the custom field <timestamp> is null",
    });
    await b.advance(0);
    expect(a.received).toEqual([]);
  });
});

describe("INVOKE_BROKER_TO_GET_CONSUMER_STATUS", () => {
  const status = (clientId: string, offset: number): Reply => (cmd) => {
    const body = `{"messageQueueTable":{{"brokerName":"b","queueId":0,"topic":"T"}:${offset}}}`;
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, enc.encode(clientId === "" ? "{}" : body));
  };

  test("gathers each consumer's offsets under its client id, or only the one named; a consumer that fails is left out", async () => {
    await using b = InProcessBroker.start();
    const a = await consumer(b, "10.0.0.1@a", status("a", 5));
    const c = await consumer(b, "10.0.0.2@c", status("c", 7));
    const failing = await consumer(b, "10.0.0.3@f", (cmd) => createResponse(cmd, ResponseCode.SYSTEM_ERROR, "no"));
    const ask = (ext: Record<string, string> = {}) =>
      b.ok(createRequest(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, { topic: "T", group: GROUP, ...ext }));

    const all = parsed((await ask()).body);
    const table = all.consumerTable as Record<string, unknown>;
    expect(Object.keys(table).sort()).toEqual(["10.0.0.1@a", "10.0.0.2@c"]);
    expect(mqTable(table["10.0.0.1@a"])).toEqual({ "T/0": 5 });
    expect(mqTable(table["10.0.0.2@c"])).toEqual({ "T/0": 7 });
    for (const m of [a, c, failing]) {
      expect(m.received.map((r) => [r.code, r.extFields])).toEqual([[RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, { topic: "T", group: GROUP }]]);
    }

    const one = parsed((await ask({ clientAddr: "10.0.0.2@c" })).body);
    expect(Object.keys(one.consumerTable as object)).toEqual(["10.0.0.2@c"]);
    expect(a.received.length).toBe(1);
  });

  test("no consumer online is SYSTEM_ERROR", async () => {
    await using b = InProcessBroker.start();
    const res = await b.call(createRequest(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, { topic: "T", group: "Nobody" }));
    expect(answer(res)).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "No Any Consumer online in the consumer group: [Nobody]" });
  });
});

describe("forwarded to one client", () => {
  test("GET_CONSUMER_RUNNING_INFO goes to the named client with its header; the client's answer comes back as it was", async () => {
    await using b = InProcessBroker.start();
    const running = enc.encode(JSON.stringify({ properties: { PROP_CONSUME_TYPE: "CONSUME_PASSIVELY" } }));
    const a = await consumer(b, "10.0.0.1@a", (cmd) => createResponse(cmd, ResponseCode.SUCCESS, "from a", { x: "1" }, running));
    const f = await consumer(b, "10.0.0.2@f", (cmd) => createResponse(cmd, ResponseCode.SYSTEM_ERROR, "jstack failed"));
    const ask = (clientId: string) =>
      b.call(createRequest(RequestCode.GET_CONSUMER_RUNNING_INFO, { consumerGroup: GROUP, clientId, jstackEnable: "true" }));

    const res = await ask("10.0.0.1@a");
    expect([res.code, res.remark, res.extFields?.x, dec.decode(res.body)]).toEqual([ResponseCode.SUCCESS, "from a", "1", dec.decode(running)]);
    expect(a.received.map((r) => [r.code, r.extFields])).toEqual([
      [RequestCode.GET_CONSUMER_RUNNING_INFO, { consumerGroup: GROUP, clientId: "10.0.0.1@a", jstackEnable: "true" }],
    ]);
    expect(answer(await ask("10.0.0.2@f"))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "jstack failed" });
    expect(f.received.length).toBe(1);
    expect(answer(await ask("10.0.0.9@gone"))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: `The Consumer <${GROUP}> <10.0.0.9@gone> not online` });
  });

  test("CONSUME_MESSAGE_DIRECTLY carries the stored record of msgId and the broker's name; a msgId that does not decode goes with no body", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    const sent = await b.ok(sendV2Request("T", "direct", { tags: "TagA" }));
    const result = enc.encode(JSON.stringify({ consumeResult: "CR_SUCCESS", order: false, autoCommit: true, spentTimeMills: 1 }));
    const a = await consumer(b, "10.0.0.1@a", (cmd) => createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, result));
    const direct = (msgId: string) =>
      b.call(createRequest(RequestCode.CONSUME_MESSAGE_DIRECTLY, { consumerGroup: GROUP, clientId: "10.0.0.1@a", msgId }));

    const res = await direct(sent.extFields!.msgId!);
    expect([res.code, dec.decode(res.body)]).toEqual([ResponseCode.SUCCESS, dec.decode(result)]);
    const fwd = a.received[0]!;
    expect(fwd.extFields).toEqual({
      consumerGroup: GROUP,
      clientId: "10.0.0.1@a",
      msgId: sent.extFields!.msgId!,
      brokerName: b.controller.info.settings().brokerName,
    });
    const record = decodeRecordAt(fwd.body!, 0, { checkCrc: true });
    if (!("totalSize" in record)) throw new Error(JSON.stringify(record));
    expect([record.topic, dec.decode(record.body), record.queueOffset]).toEqual(["T", "direct", 0]);

    expect((await direct("not-a-msg-id")).code).toBe(ResponseCode.SUCCESS);
    expect(a.received[1]!.body ?? new Uint8Array(0)).toEqual(new Uint8Array(0));
    expect(answer(await b.call(createRequest(RequestCode.CONSUME_MESSAGE_DIRECTLY, { clientId: "10.0.0.1@a" })))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "the custom field <consumerGroup> is null",
    });
  });
});
