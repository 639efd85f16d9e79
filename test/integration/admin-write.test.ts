/**
 * The admin API's writes against the compiled binary (issue #16 point 4): each is the operation
 * the wire request performs, so every test checks the HTTP side through the wire (or the wire
 * side through HTTP): topics (POST/PUT/DELETE, the name server's route), groups, offset resets,
 * test messages and their lookups, PATCH /config; and that every write is refused without the
 * token, with a wrong one, and when no token is configured.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { decodeOffsetMsgId, decodeRecordAt } from "../../src/commitlog/index.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingClient, type RemotingCommand } from "../../src/remoting/index.ts";
import { startRocketbun, waitFor, type RunningBinary } from "../harness/binary.ts";
import { bodyJson, createTopicRequest, newClient, routeRequest } from "../harness/wire.ts";

const TOKEN = "Write-T0ken_for-tests";
const BASE = `role: standalone
namesrv:
  listen: 127.0.0.1:0
  admin: 127.0.0.1:0
broker:
  listen: 127.0.0.1:0
  registerNameServerPeriodMs: 1000
store:
  commitLogSegmentBytes: 8388608
`;
const TIMEOUT_MS = 3000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(token: string | null = TOKEN): Promise<RunningBinary> {
  const proc = await startRocketbun({ role: "standalone", configYaml: token === null ? BASE : `${BASE}admin:\n  token: ${token}\n` });
  cleanups.push(() => proc[Symbol.asyncDispose]());
  return proc;
}

function client(): RemotingClient {
  const c = newClient();
  cleanups.push(() => c.close());
  return c;
}

const brokerAddr = (p: RunningBinary) => `127.0.0.1:${p.ports.broker}`;
const call = (c: RemotingClient, addr: string, cmd: RemotingCommand) => c.invoke(addr, cmd, TIMEOUT_MS);

interface Answer<T = Record<string, unknown>> {
  status: number;
  body: T;
}

async function http<T = Record<string, unknown>>(
  p: RunningBinary,
  method: string,
  path: string,
  body?: unknown,
  token: string | null = TOKEN,
): Promise<Answer<T>> {
  const headers: Record<string, string> = {};
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(`${p.adminUrl}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: r.status, body: (await r.json()) as T };
}

const errorCode = (a: Answer) => (a.body as { error?: { code: string } }).error?.code;

/** The name server's route of a topic: its write queue counts, or null once it has none. */
async function routeQueues(c: RemotingClient, p: RunningBinary, topic: string): Promise<number[] | null> {
  const r = await call(c, p.namesrvAddr, routeRequest(topic));
  if (r.code === ResponseCode.TOPIC_NOT_EXIST) return null;
  return bodyJson<{ queueDatas: { writeQueueNums: number }[] }>(r).queueDatas.map((q) => q.writeQueueNums);
}

describe("admin API writes (compiled binary)", () => {
  test("topics: POST creates (GET and the name server's route show it), PUT changes it, DELETE removes it from broker and name server", async () => {
    const p = await start();
    const c = client();
    const created = await http(p, "POST", "/topics", { topicName: "HttpTopic", readQueueNums: 3, writeQueueNums: 3 });
    expect(created).toEqual({
      status: 201,
      body: { topicName: "HttpTopic", readQueueNums: 3, writeQueueNums: 3, perm: 6, topicFilterType: "SINGLE_TAG", topicSysFlag: 0, order: false },
    });
    expect((await http<{ queues: unknown[] }>(p, "GET", "/topics/HttpTopic")).body.queues).toHaveLength(3);
    await waitFor(async () => (await routeQueues(c, p, "HttpTopic"))?.[0] === 3, 10_000, "the route of HttpTopic with 3 queues");
    // The broker's own wire view is the same table.
    const all = bodyJson<{ topicConfigTable: Record<string, { writeQueueNums: number }> }>(
      await call(c, brokerAddr(p), createRequest(RequestCode.GET_ALL_TOPIC_CONFIG)),
    );
    expect(all.topicConfigTable.HttpTopic?.writeQueueNums).toBe(3);

    expect(errorCode(await http(p, "POST", "/topics", { topicName: "HttpTopic" }))).toBe("TOPIC_EXISTS");
    const put = await http(p, "PUT", "/topics/HttpTopic", { readQueueNums: 5, writeQueueNums: 5, perm: 6, order: true });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ writeQueueNums: 5, order: true });
    await waitFor(async () => (await routeQueues(c, p, "HttpTopic"))?.[0] === 5, 10_000, "the route of HttpTopic with 5 queues");

    // The processor's refusals, as HTTP errors.
    const system = await http(p, "PUT", "/topics/SCHEDULE_TOPIC_XXXX", {});
    expect({ status: system.status, code: errorCode(system) }).toEqual({ status: 409, code: "REFUSED" });
    expect((await http(p, "PUT", "/topics/bad.name", {})).status).toBe(400);
    expect((await http(p, "PUT", "/topics/HttpTopic", { perm: 99 })).status).toBe(400);

    // A topic made over the wire is the same kind of thing to HTTP.
    expect((await call(c, brokerAddr(p), createTopicRequest("WireTopic", 2))).code).toBe(ResponseCode.SUCCESS);
    expect((await http(p, "GET", "/topics/WireTopic")).body).toMatchObject({ topicName: "WireTopic", writeQueueNums: 2 });

    expect(await http(p, "DELETE", "/topics/HttpTopic")).toEqual({ status: 200, body: { status: "ok" } });
    expect(errorCode(await http(p, "GET", "/topics/HttpTopic"))).toBe("TOPIC_NOT_FOUND");
    expect(errorCode(await http(p, "DELETE", "/topics/HttpTopic"))).toBe("TOPIC_NOT_FOUND");
    expect(await http(p, "DELETE", "/namesrv/topics/HttpTopic")).toEqual({ status: 200, body: { status: "ok" } });
    expect(await routeQueues(c, p, "HttpTopic")).toBeNull();
    expect(errorCode(await http(p, "DELETE", "/namesrv/topics/HttpTopic"))).toBe("TOPIC_NOT_EXIST");
  }, 60_000);

  test("groups: POST creates with RocketMQ's defaults, PUT replaces, DELETE removes; the wire sees each step", async () => {
    const p = await start();
    const c = client();
    const wireGroup = async () => call(c, brokerAddr(p), createRequest(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, { group: "HttpGroup" }));
    const created = await http(p, "POST", "/groups", { groupName: "HttpGroup", retryMaxTimes: 3 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ groupName: "HttpGroup", retryMaxTimes: 3, retryQueueNums: 1, consumeEnable: true });
    expect(bodyJson(await wireGroup())).toMatchObject({ groupName: "HttpGroup", retryMaxTimes: 3 });
    expect(errorCode(await http(p, "POST", "/groups", { groupName: "HttpGroup" }))).toBe("GROUP_EXISTS");
    expect((await http(p, "POST", "/groups", { groupName: "bad group" })).status).toBe(400);
    const put = await http(p, "PUT", "/groups/HttpGroup", { retryMaxTimes: 5, consumeEnable: false });
    expect(put.body).toMatchObject({ retryMaxTimes: 5, consumeEnable: false });
    expect(bodyJson(await wireGroup())).toMatchObject({ retryMaxTimes: 5, consumeEnable: false });
    expect((await http<{ groups: string[] }>(p, "GET", "/groups")).body.groups).toContain("HttpGroup");
    expect(await http(p, "DELETE", "/groups/HttpGroup")).toEqual({ status: 200, body: { status: "ok" } });
    expect((await wireGroup()).code).toBe(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST);
    expect(errorCode(await http(p, "DELETE", "/groups/HttpGroup"))).toBe("GROUP_NOT_FOUND");
  }, 60_000);

  test("messages: a test send is stored as a producer's; found by msgId (also over the wire), by key, and by queue offset", async () => {
    const p = await start();
    const c = client();
    expect((await http(p, "POST", "/topics", { topicName: "MsgTopic", readQueueNums: 2, writeQueueNums: 2 })).status).toBe(201);
    const sent = await http<{ status: string; msgId: string; queueId: number; queueOffset: number }>(p, "POST", "/messages", {
      topic: "MsgTopic",
      body: "héllo wörld",
      tags: "TagA",
      keys: ["order-1", "user-7"],
      properties: { origin: "test" },
      queueId: 1,
    });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ status: "PUT_OK", queueId: 1, queueOffset: 0 });
    const { msgId } = sent.body;

    const byId = await http<Record<string, unknown>>(p, "GET", `/messages/${msgId}`);
    expect(byId.status).toBe(200);
    expect(byId.body).toMatchObject({
      msgId,
      topic: "MsgTopic",
      queueId: 1,
      queueOffset: 0,
      tags: "TagA",
      keys: ["order-1", "user-7"],
      body: { text: "héllo wörld", base64: Buffer.from("héllo wörld").toString("base64"), sizeBytes: Buffer.byteLength("héllo wörld") },
    });
    expect((byId.body.properties as Record<string, string>).origin).toBe("test");
    // BORNHOST is the HTTP client's address, as a producer's is its socket's.
    expect(byId.body.bornHost).toMatch(/^127\.0\.0\.1:[1-9]\d*$/);
    // The same record over the wire.
    const id = decodeOffsetMsgId(msgId);
    if ("invalid" in id) throw new Error(id.invalid);
    const view = await call(c, brokerAddr(p), createRequest(RequestCode.VIEW_MESSAGE_BY_ID, { offset: String(id.offset) }));
    const rec = decodeRecordAt(view.body!, 0, { checkCrc: true });
    expect("totalSize" in rec && new TextDecoder().decode(rec.body)).toBe("héllo wörld");

    const byKey = await http<{ messages: { msgId: string }[] }>(p, "GET", "/messages?topic=MsgTopic&key=user-7");
    expect(byKey.body.messages.map((m) => m.msgId)).toEqual([msgId]);
    expect((await http<{ messages: unknown[] }>(p, "GET", "/messages?topic=MsgTopic&key=nobody")).body.messages).toEqual([]);
    const byOffset = await http<{ messages: { msgId: string }[]; nextOffset: number }>(p, "GET", "/messages?topic=MsgTopic&queueId=1&offset=0");
    expect(byOffset.body.messages.map((m) => m.msgId)).toEqual([msgId]);
    expect(byOffset.body.nextOffset).toBe(1);

    // Bytes that are not UTF-8: base64 only.
    const bytes = new Uint8Array([0xff, 0x00, 0xfe, 0x80]);
    const bin = await http<{ msgId: string }>(p, "POST", "/messages", { topic: "MsgTopic", bodyBase64: Buffer.from(bytes).toString("base64") });
    const binBody = (await http<{ body: { base64: string; text?: string; sizeBytes: number } }>(p, "GET", `/messages/${bin.body.msgId}`)).body.body;
    expect(binBody).toEqual({ base64: Buffer.from(bytes).toString("base64"), sizeBytes: 4 });

    // The send path's refusals.
    expect((await http(p, "POST", "/messages", { topic: "MsgTopic", body: "x", queueId: 9 })).status).toBe(400);
    expect((await http(p, "POST", "/messages", { topic: "MsgTopic", body: "x", bodyBase64: "eA==" })).status).toBe(400);
    expect((await http(p, "PUT", "/topics/ReadOnly", { perm: 4 })).status).toBe(200);
    expect(errorCode(await http(p, "POST", "/messages", { topic: "ReadOnly", body: "x" }))).toBe("REFUSED");
    expect(errorCode(await http(p, "GET", "/messages/7F0000010000AE53000000000FFFFFFF"))).toBe("MESSAGE_NOT_FOUND");
  }, 60_000);

  test("reset-offset moves committed offsets (by offset, per queue, by time) as QUERY_CONSUMER_OFFSET then answers", async () => {
    const p = await start();
    const c = client();
    const addr = brokerAddr(p);
    expect((await http(p, "POST", "/topics", { topicName: "ResetTopic", readQueueNums: 2, writeQueueNums: 2 })).status).toBe(201);
    for (const q of [0, 0, 0, 0, 1, 1]) expect((await http(p, "POST", "/messages", { topic: "ResetTopic", body: "m", queueId: q })).status).toBe(200);
    const commit = (queueId: number, offset: number) =>
      call(
        c,
        addr,
        createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, {
          consumerGroup: "ResetGroup",
          topic: "ResetTopic",
          queueId: String(queueId),
          commitOffset: String(offset),
        }),
      );
    expect((await commit(0, 4)).code).toBe(ResponseCode.SUCCESS);
    expect((await commit(1, 2)).code).toBe(ResponseCode.SUCCESS);
    const committed = async () => {
      const out: number[] = [];
      for (const q of [0, 1]) {
        const r = await call(
          c,
          addr,
          createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: "ResetGroup", topic: "ResetTopic", queueId: String(q) }),
        );
        out.push(Number(r.extFields?.offset));
      }
      return out;
    };
    const reset = (body: unknown) =>
      http<{ group: string; topic: string; offsets: { queueId: number; offset: number }[]; clientsNotified: number }>(
        p,
        "POST",
        "/groups/ResetGroup/reset-offset",
        body,
      );

    const toOne = await reset({ topic: "ResetTopic", offset: 1 });
    expect(toOne.body).toEqual({
      group: "ResetGroup",
      topic: "ResetTopic",
      offsets: [
        { queueId: 0, offset: 1 },
        { queueId: 1, offset: 1 },
      ],
      clientsNotified: 0,
    });
    expect(await committed()).toEqual([1, 1]);
    expect((await reset({ topic: "ResetTopic", offsets: [{ queueId: 1, offset: 99 }] })).body.offsets).toEqual([
      { queueId: 0, offset: 1 },
      { queueId: 1, offset: 2 },
    ]);
    expect(await committed()).toEqual([1, 2]);
    expect((await reset({ topic: "ResetTopic", timestamp: 0 })).body.offsets.map((o) => o.offset)).toEqual([0, 0]);
    expect(await committed()).toEqual([0, 0]);
    expect((await reset({ topic: "ResetTopic", timestamp: -1 })).body.offsets.map((o) => o.offset)).toEqual([4, 2]);
    expect(await committed()).toEqual([4, 2]);
    const lag = await http<{ totalLag: number }>(p, "GET", "/groups/ResetGroup");
    expect(lag.body.totalLag).toBe(0);

    expect(errorCode(await http(p, "POST", "/groups/NoOffsets/reset-offset", { topic: "ResetTopic", offset: 0 }))).toBe("NOT_FOUND_HERE");
    expect((await reset({ topic: "ResetTopic", offset: 0, timestamp: 0 })).status).toBe(400);
    expect((await reset({ topic: "ResetTopic", offsets: [{ queueId: 7, offset: 0 }] })).status).toBe(400);
    // The wire request keeps its rule: with nobody online to tell, it refuses (mqadmin then commits itself).
    const wire = await call(
      c,
      addr,
      createRequest(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, { topic: "ResetTopic", group: "ResetGroup", timestamp: "0", isForce: "true" }),
    );
    expect(wire.code).toBe(ResponseCode.CONSUMER_NOT_ONLINE);
    expect(await committed()).toEqual([4, 2]);
  }, 60_000);

  test("PATCH /config changes a live key (as UPDATE_BROKER_CONFIG would) and refuses restart-only, unknown and secret keys", async () => {
    const p = await start();
    const c = client();
    const wireConfig = async () => new TextDecoder().decode((await call(c, brokerAddr(p), createRequest(RequestCode.GET_BROKER_CONFIG))).body);
    const r = await http<{ config: { broker: { pullHoldMaxMs: number } }; dataVersion: { counter: number } }>(p, "PATCH", "/config", {
      pullHoldMaxMs: 12345,
    });
    expect(r.status).toBe(200);
    expect(r.body.config.broker.pullHoldMaxMs).toBe(12345);
    expect(r.body.dataVersion.counter).toBe(1);
    expect(await wireConfig()).toContain("pullHoldMaxMs=12345\n");
    expect(p.output.err() + p.output.out()).toContain("pullHoldMaxMs");

    const restart = await http(p, "PATCH", "/config", { brokerName: "other", pullHoldMaxMs: 777 });
    expect({ status: restart.status, code: errorCode(restart) }).toEqual({ status: 400, code: "CONFIG_NEEDS_RESTART" });
    expect((restart.body as { error: { message: string } }).error.message).toContain("brokerName");
    const unknown = await http(p, "PATCH", "/config", { noSuchKey: 1 });
    expect({ status: unknown.status, code: errorCode(unknown) }).toEqual({ status: 400, code: "BAD_REQUEST" });
    expect((await http(p, "PATCH", "/config", { token: "stolen" })).status).toBe(400);
    expect((await http(p, "PATCH", "/config", { pullHoldMaxMs: "soon" })).status).toBe(400);
    expect((await http(p, "PATCH", "/config", { "pullHoldMaxMs=1\nbrokerName": "x" })).status).toBe(400);
    // Nothing of the refused changes was applied.
    expect(await wireConfig()).toContain("pullHoldMaxMs=12345\n");
    expect(await wireConfig()).toContain("brokerName=broker-a\n");
  }, 60_000);
});

/** Every write the API has, with a body it would accept. */
const WRITES: [string, string, unknown?][] = [
  ["POST", "/topics", { topicName: "AuthTopic" }],
  ["PUT", "/topics/AuthTopic", {}],
  ["DELETE", "/topics/TopicTest"],
  ["POST", "/groups", { groupName: "AuthGroup" }],
  ["PUT", "/groups/AuthGroup", {}],
  ["DELETE", "/groups/GroupTest"],
  ["POST", "/groups/GroupTest/reset-offset", { topic: "TopicTest", offset: 0 }],
  ["POST", "/messages", { topic: "TBW102", body: "x" }],
  ["PATCH", "/config", { pullHoldMaxMs: 1000 }],
  ["POST", "/config/reload"],
  ["DELETE", "/namesrv/topics/TopicTest"],
];

describe("admin API writes need the token (compiled binary)", () => {
  test("a token configured: every write without it or with a wrong one is 401, and changes nothing", async () => {
    const p = await start();
    for (const [method, path, body] of WRITES) {
      for (const token of [null, "wrong-token"]) {
        const r = await http(p, method, path, body, token);
        expect({ method, path, token, status: r.status, code: errorCode(r) }).toEqual({ method, path, token, status: 401, code: "UNAUTHORIZED" });
      }
    }
    expect(errorCode(await http(p, "GET", "/topics/AuthTopic"))).toBe("TOPIC_NOT_FOUND");
    expect((await http(p, "POST", "/topics", { topicName: "AuthTopic" })).status).toBe(201);
  }, 60_000);

  test("no token configured: every write is 403 ADMIN_TOKEN_NOT_CONFIGURED, with or without a header; reads stay open", async () => {
    const p = await start(null);
    for (const [method, path, body] of WRITES) {
      for (const token of [null, "any-token"]) {
        const r = await http(p, method, path, body, token);
        expect({ method, path, status: r.status, code: errorCode(r) }).toEqual({ method, path, status: 403, code: "ADMIN_TOKEN_NOT_CONFIGURED" });
      }
    }
    expect((await http(p, "GET", "/topics", undefined, null)).status).toBe(200);
    expect(errorCode(await http(p, "GET", "/topics/AuthTopic", undefined, null))).toBe("TOPIC_NOT_FOUND");
  }, 60_000);
});
