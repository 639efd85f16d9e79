/**
 * The compiled binary as a broker (role master, config/test-min.yaml) next to a compiled name
 * server, driven over real remoting frames: every request the broker serves, its error paths,
 * long polling, consumer membership and notifications, the VIP port, the admin API, garbage on
 * the wire, and a restart on the same store. Each test starts its own processes and stops them
 * with `await using`; waits poll a condition with a deadline, nothing sleeps for correctness.
 */
import { describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import type { Socket } from "bun";
import {
  decodeRecordAt,
  encodeMessageBatch,
  encodeProperties,
  javaStringHashCode,
  parseProperties,
  type DecodedRecord,
} from "../../src/commitlog/index.ts";
import type { TopicRouteData } from "../../src/protocol/route.ts";
import { scope } from "../../src/common/log.ts";
import {
  createRequest,
  FrameDecoder,
  RemotingClient,
  REMOTING_CLIENT_DEFAULTS,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
} from "../../src/remoting/index.ts";
import { ROOT, startRocketbun, tempDir, waitFor, type RunningBinary } from "../harness/binary.ts";
import { bodyJson, createTopicRequest, routeRequest } from "../harness/wire.ts";
import {
  heartbeatRequest,
  PULL_COMMIT_OFFSET as COMMIT_OFFSET,
  PULL_SUBSCRIPTION as SUBSCRIPTION,
  PULL_SUSPEND as SUSPEND,
  pullRequest as pull,
} from "../../src/broker/test-support.ts";

const CONFIG = join(ROOT, "config", "test-min.yaml");
/** test-min.yaml: broker.maxMessageSizeBytes. */
const MAX_MESSAGE_BYTES = 16384;
const BROKER_NAME = "broker-a";
const CLUSTER = "DefaultCluster";
const enc = new TextEncoder();
const dec = new TextDecoder();

// ------------------------------------------------------------------------------------ harness

interface Cluster extends AsyncDisposable {
  ns: RunningBinary;
  broker: RunningBinary;
  /** 127.0.0.1:<listen port>, the address the broker registers. */
  addr: string;
  vip: string;
  admin: string;
  /** A fresh RemotingClient (one connection per address), closed with the cluster. */
  client(onRequest?: (conn: RemotingConnection, cmd: RemotingCommand) => void): RemotingClient;
  call(cmd: RemotingCommand, timeoutMs?: number): Promise<RemotingCommand>;
  /** Stops the broker (SIGTERM) and starts it again on the same store. */
  restartBroker(): Promise<void>;
}

async function startBroker(nsAddr: string, dir?: string): Promise<RunningBinary> {
  const args = ["--namesrv", nsAddr, "--config", CONFIG];
  return startRocketbun(dir === undefined ? { role: "master", args } : { role: "master", args, dir });
}

async function startCluster(o: { dir?: string } = {}): Promise<Cluster> {
  const ns = await startRocketbun({ role: "namesrv" });
  let broker: RunningBinary;
  try {
    broker = await startBroker(ns.namesrvAddr, o.dir);
  } catch (e) {
    await ns[Symbol.asyncDispose]();
    throw e;
  }
  const clients: RemotingClient[] = [];
  let main: RemotingClient | null = null;
  const newClient = (onRequest?: (conn: RemotingConnection, cmd: RemotingCommand) => void) => {
    const cl = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("test-client"), ...(onRequest ? { onRequest } : {}) });
    clients.push(cl);
    return cl;
  };
  const c: Cluster = {
    ns,
    broker,
    addr: `127.0.0.1:${broker.ports.broker}`,
    vip: `127.0.0.1:${broker.ports.vip}`,
    admin: `http://127.0.0.1:${broker.ports.admin}`,
    client: newClient,
    async call(cmd, timeoutMs = 3000) {
      main ??= newClient();
      return main.invoke(c.addr, cmd, timeoutMs);
    },
    async restartBroker() {
      for (const cl of clients.splice(0)) await cl.close();
      main = null;
      expect(await c.broker.stop()).toBe(0);
      c.broker = await startBroker(ns.namesrvAddr, o.dir);
      c.addr = `127.0.0.1:${c.broker.ports.broker}`;
      c.vip = `127.0.0.1:${c.broker.ports.vip}`;
      c.admin = `http://127.0.0.1:${c.broker.ports.admin}`;
    },
    async [Symbol.asyncDispose]() {
      for (const cl of clients.splice(0)) await cl.close();
      await c.broker[Symbol.asyncDispose]();
      await ns[Symbol.asyncDispose]();
    },
  };
  return c;
}

/** A raw TCP peer: writes hand-made bytes and decodes whatever frames come back. */
interface RawPeer extends AsyncDisposable {
  received: RemotingCommand[];
  closed: boolean;
  write(bytes: Uint8Array): void;
  response(opaque: number, timeoutMs?: number): Promise<RemotingCommand>;
  end(): void;
}

async function rawPeer(addr: string): Promise<RawPeer> {
  const [host, port] = addr.split(":") as [string, string];
  const decoder = new FrameDecoder();
  const peer: RawPeer = {
    received: [],
    closed: false,
    write: (bytes) => void socket.write(bytes),
    response: (opaque, timeoutMs = 3000) => waitFor(() => peer.received.find((r) => r.opaque === opaque), timeoutMs, `response ${opaque}`),
    end: () => socket.end(),
    async [Symbol.asyncDispose]() {
      socket.end();
    },
  };
  const socket: Socket<undefined> = await Bun.connect({
    hostname: host,
    port: Number(port),
    socket: {
      binaryType: "uint8array",
      data(_s, chunk) {
        const r = decoder.feed(chunk);
        if (Array.isArray(r)) peer.received.push(...r);
      },
      close() {
        peer.closed = true;
      },
      error() {
        peer.closed = true;
      },
    },
  });
  return peer;
}

let rawOpaque = 1_000_000;
/** A JSON-header frame exactly as ali-ons writes it: extFields values are native JSON scalars. */
function aliOnsFrame(code: number, ext: Record<string, string | number | boolean>, body?: Uint8Array): { bytes: Uint8Array; opaque: number } {
  const opaque = rawOpaque++;
  const header = enc.encode(JSON.stringify({ code, language: "JAVA", opaque, flag: 0, version: 121, remark: null, extFields: ext }));
  const b = body ?? new Uint8Array(0);
  const out = new Uint8Array(8 + header.length + b.length);
  const v = new DataView(out.buffer);
  v.setInt32(0, 4 + header.length + b.length);
  v.setInt32(4, header.length); // serialize type 0 (JSON) in the top byte
  out.set(header, 8);
  out.set(b, 8 + header.length);
  return { bytes: out, opaque };
}

// ----------------------------------------------------------------------------------- requests

interface SendOpts {
  queueId?: number;
  tags?: string;
  props?: Record<string, string>;
  reconsumeTimes?: number;
  maxReconsumeTimes?: number;
  bornTimestamp?: number;
  flag?: number;
}

function sendV2(topic: string, body: string | Uint8Array, o: SendOpts = {}): RemotingCommand {
  const props: Record<string, string> = { ...(o.tags !== undefined ? { TAGS: o.tags } : {}), ...o.props };
  const ext: Record<string, string> = {
    a: "PG",
    b: topic,
    c: "TBW102",
    d: "4",
    e: String(o.queueId ?? 0),
    f: "0",
    g: String(o.bornTimestamp ?? Date.now()),
    h: String(o.flag ?? 0),
    i: encodeProperties(props),
    j: String(o.reconsumeTimes ?? 0),
    k: "false",
  };
  if (o.maxReconsumeTimes !== undefined) ext.l = String(o.maxReconsumeTimes);
  return createRequest(RequestCode.SEND_MESSAGE_V2, ext, typeof body === "string" ? enc.encode(body) : body);
}

function offsetReq(code: number, topic: string, queueId: number, extra: Record<string, string> = {}): RemotingCommand {
  return createRequest(code, { topic, queueId: String(queueId), ...extra });
}

// ----------------------------------------------------------------------------------- checking

function records(res: RemotingCommand): DecodedRecord[] {
  expect(res.code).toBe(ResponseCode.SUCCESS);
  const body = res.body!;
  const out: DecodedRecord[] = [];
  let pos = 0;
  while (pos < body.length) {
    const r = decodeRecordAt(body, pos, { checkCrc: true });
    if (!("totalSize" in r)) throw new Error(`pull body does not decode at ${pos}: ${JSON.stringify(r)}`);
    out.push(r);
    pos += r.totalSize;
  }
  return out;
}

const bodyText = (r: DecodedRecord) => dec.decode(r.body);

/** Java requires all four on codes 0/19/20/21 (docs/PROTOCOL.md §3.5, §8.7). */
function expectPullHeader(res: RemotingCommand, code: number, fields: { next?: number; min?: number; max?: number } = {}): void {
  expect({ code: res.code, remark: res.remark }).toMatchObject({ code });
  const e = res.extFields ?? {};
  for (const k of ["suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"]) expect(e[k]).toMatch(/^-?\d+$/);
  expect(e.suggestWhichBrokerId).toBe("0");
  if (fields.next !== undefined) expect(Number(e.nextBeginOffset)).toBe(fields.next);
  if (fields.min !== undefined) expect(Number(e.minOffset)).toBe(fields.min);
  if (fields.max !== undefined) expect(Number(e.maxOffset)).toBe(fields.max);
}

function expectCode(res: RemotingCommand, code: number, remark?: string | RegExp): void {
  expect({ code: res.code, remark: res.remark }).toMatchObject({ code });
  if (typeof remark === "string") expect(res.remark ?? "").toContain(remark);
  else if (remark) expect(res.remark ?? "").toMatch(remark);
}

async function ok(c: Cluster, cmd: RemotingCommand): Promise<RemotingCommand> {
  const res = await c.call(cmd);
  expectCode(res, ResponseCode.SUCCESS);
  return res;
}

async function route(c: Cluster, topic: string): Promise<RemotingCommand> {
  const cl = c.client();
  return cl.invoke(c.ns.namesrvAddr, routeRequest(topic), 3000);
}

/** Offset msg id: store IP, store port, commit-log offset (docs/PROTOCOL.md §4.6). */
function parseMsgId(id: string): { ip: string; port: number; offset: number } {
  expect(id).toMatch(/^[0-9A-F]{32}$/);
  const b = Buffer.from(id, "hex");
  return { ip: [...b.subarray(0, 4)].join("."), port: b.readInt32BE(4), offset: Number(b.readBigInt64BE(8)) };
}

// -------------------------------------------------------------------------------------- tests

describe("broker binary: name server registration and topics", () => {
  test("registers at start, UPDATE_AND_CREATE_TOPIC shows in the route, SIGTERM takes the route away", async () => {
    await using c = await startCluster();
    // Registration at start: the broker's own topic is routable.
    const self = await waitFor(
      async () => {
        const r = await route(c, BROKER_NAME);
        return r.code === ResponseCode.SUCCESS ? r : null;
      },
      5000,
      "the broker's registration",
    );
    expect(bodyJson<TopicRouteData>(self).brokerDatas).toEqual([{ cluster: CLUSTER, brokerName: BROKER_NAME, brokerAddrs: { "0": c.addr } }]);
    expectCode(await route(c, "RT"), ResponseCode.TOPIC_NOT_EXIST);

    await ok(c, createTopicRequest("RT", 3, 6, 2));
    const rt = await waitFor(
      async () => {
        const r = await route(c, "RT");
        return r.code === ResponseCode.SUCCESS ? bodyJson<TopicRouteData>(r) : null;
      },
      5000,
      "route of RT",
    );
    expect(rt.queueDatas).toEqual([{ brokerName: BROKER_NAME, readQueueNums: 3, writeQueueNums: 2, perm: 6, topicSysFlag: 0 }]);
    expect(rt.brokerDatas[0]!.brokerAddrs).toEqual({ "0": c.addr });

    // Changing a topic re-registers too.
    await ok(c, createTopicRequest("RT", 5));
    await waitFor(
      async () => {
        const r = await route(c, "RT");
        return r.code === ResponseCode.SUCCESS && bodyJson<TopicRouteData>(r).queueDatas[0]!.readQueueNums === 5;
      },
      5000,
      "updated route of RT",
    );

    // The topic config comes back from GET_ALL_TOPIC_CONFIG (slave sync, mqadmin).
    const all = bodyJson<{ topicConfigTable: Record<string, { readQueueNums: number; perm: number }> }>(
      await ok(c, createRequest(RequestCode.GET_ALL_TOPIC_CONFIG)),
    );
    expect(all.topicConfigTable.RT).toMatchObject({ readQueueNums: 5, perm: 6 });
    expect(all.topicConfigTable.SCHEDULE_TOPIC_XXXX!.readQueueNums).toBeGreaterThanOrEqual(18);

    // A clean stop unregisters: the route is gone at once, long before the name server's expiry.
    const stoppedAt = Date.now();
    expect(await c.broker.stop()).toBe(0);
    await waitFor(async () => (await route(c, "RT")).code === ResponseCode.TOPIC_NOT_EXIST, 4000, "route of RT to disappear");
    expect(Date.now() - stoppedAt).toBeLessThan(4000);
  });

  test("UPDATE_AND_CREATE_TOPIC refuses bad names, system topics and bad numbers; DELETE_TOPIC_IN_BROKER removes", async () => {
    await using c = await startCluster();
    expectCode(await c.call(createTopicRequest("bad topic", 4)), ResponseCode.SYSTEM_ERROR, "illegal characters");
    for (const sys of ["SCHEDULE_TOPIC_XXXX", "TBW102", "BenchmarkTest", "OFFSET_MOVED_EVENT", "rmq_sys_mine", CLUSTER, BROKER_NAME]) {
      expectCode(await c.call(createTopicRequest(sys, 4)), ResponseCode.SYSTEM_ERROR, `The topic[${sys}] is conflict with system topic.`);
    }
    const escape = createRequest(RequestCode.DELETE_TOPIC_IN_BROKER, { topic: "../../config" });
    expectCode(await c.call(escape), ResponseCode.SYSTEM_ERROR, "illegal characters");
    const delSchedule = createRequest(RequestCode.DELETE_TOPIC_IN_BROKER, { topic: "SCHEDULE_TOPIC_XXXX" });
    expectCode(await c.call(delSchedule), ResponseCode.SYSTEM_ERROR, "conflict with system topic");
    expect((await fetch(`${c.admin}/topics/SCHEDULE_TOPIC_XXXX`)).status).toBe(200);
    expectCode(await c.call(createTopicRequest("T1", 4, 99)), ResponseCode.SYSTEM_ERROR, "perm");
    expectCode(await c.call(createRequest(RequestCode.UPDATE_AND_CREATE_TOPIC, { topic: "T1" })), ResponseCode.SYSTEM_ERROR, "readQueueNums");
    await ok(c, createTopicRequest("T1", 2));
    await ok(c, sendV2("T1", "x"));
    await ok(c, createRequest(RequestCode.DELETE_TOPIC_IN_BROKER, { topic: "T1" }));
    expectCode(await c.call(sendV2("T1", "x")), ResponseCode.TOPIC_NOT_EXIST);
    const res = await fetch(`${c.admin}/topics/T1`);
    expect(res.status).toBe(404);
  });
});

describe("broker binary: send", () => {
  test("SEND_MESSAGE_V2 with ali-ons' numeric extFields, SEND_MESSAGE with long names, SEND_BATCH_MESSAGE", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("S", 4));

    // ali-ons: native JSON numbers and booleans, version 121, trailing 0x02 in properties.
    await using peer = await rawPeer(c.addr);
    const born = 1_700_000_000_123;
    const f = aliOnsFrame(
      RequestCode.SEND_MESSAGE_V2,
      {
        a: "PG",
        b: "S",
        c: "TBW102",
        d: 4,
        e: 1,
        f: 0,
        g: born,
        h: 7,
        i: "TAGS\u0001TagA\u0002KEYS\u0001k1 k2\u0002WAIT\u0001true\u0002",
        j: 0,
        k: false,
      },
      enc.encode("hello-v2"),
    );
    peer.write(f.bytes);
    const v2 = await peer.response(f.opaque);
    expectCode(v2, ResponseCode.SUCCESS);
    expect(v2.extFields).toMatchObject({ queueId: "1", queueOffset: "0", MSG_REGION: "DefaultRegion", TRACE_ON: "true" });
    const id = parseMsgId(v2.extFields!.msgId!);
    expect(id).toMatchObject({ ip: "127.0.0.1", port: c.broker.ports.broker });

    // Java's SEND_MESSAGE (code 10): long header names.
    const v1 = await ok(
      c,
      createRequest(
        RequestCode.SEND_MESSAGE,
        {
          producerGroup: "PG",
          topic: "S",
          defaultTopic: "TBW102",
          defaultTopicQueueNums: "4",
          queueId: "1",
          sysFlag: "0",
          bornTimestamp: String(Date.now()),
          flag: "0",
          properties: encodeProperties({ TAGS: "TagB", UNIQ_KEY: "AC1100010000000000000000000000A1" }),
          reconsumeTimes: "0",
          unitMode: "false",
        },
        enc.encode("hello-v1"),
      ),
    );
    expect(v1.extFields).toMatchObject({ queueId: "1", queueOffset: "1", MSG_REGION: "DefaultRegion", TRACE_ON: "true" });
    expect(parseMsgId(v1.extFields!.msgId!).offset).toBeGreaterThan(id.offset);

    // SEND_BATCH_MESSAGE: body from the batch encoder; ids joined with ",", first queue offset.
    const batchBody = encodeMessageBatch(
      [0, 1, 2].map((i) => ({ flag: i, body: enc.encode(`batch-${i}`), properties: encodeProperties({ TAGS: `B${i}`, KEYS: `bk${i}` }) })),
    );
    const batchReq = sendV2("S", batchBody, { queueId: 2 });
    batchReq.code = RequestCode.SEND_BATCH_MESSAGE;
    batchReq.extFields!.m = "true";
    batchReq.extFields!.i = encodeProperties({ WAIT: "true" });
    const batch = await ok(c, batchReq);
    expect(batch.extFields).toMatchObject({ queueId: "2", queueOffset: "0" });
    const ids = batch.extFields!.msgId!.split(",");
    expect(ids.length).toBe(3);
    const offsets = ids.map((x) => parseMsgId(x).offset);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));

    // What was stored, as a consumer reads it.
    const q1 = records(await c.call(pull("S", { queueId: 1 })));
    expect(q1.map(bodyText)).toEqual(["hello-v2", "hello-v1"]);
    const first = q1[0]!;
    expect(first).toMatchObject({
      topic: "S",
      queueId: 1,
      queueOffset: 0,
      flag: 7,
      bornTimestamp: born,
      physicalOffset: id.offset,
      reconsumeTimes: 0,
    });
    const props = parseProperties(first.properties);
    expect(props).toMatchObject({ TAGS: "TagA", KEYS: "k1 k2", CLUSTER });
    expect(props.WAIT).toBeUndefined();
    expect(parseProperties(q1[1]!.properties).UNIQ_KEY).toBe("AC1100010000000000000000000000A1");

    const q2 = records(await c.call(pull("S", { queueId: 2 })));
    expect(q2.map(bodyText)).toEqual(["batch-0", "batch-1", "batch-2"]);
    expect(q2.map((r) => r.queueOffset)).toEqual([0, 1, 2]);
    expect(q2.map((r) => r.flag)).toEqual([0, 1, 2]);
    expect(q2.map((r) => r.physicalOffset)).toEqual(offsets);
    expect(q2.map((r) => parseProperties(r.properties))).toEqual(
      [0, 1, 2].map((i) => expect.objectContaining({ TAGS: `B${i}`, KEYS: `bk${i}`, CLUSTER })),
    );

    // queueId < 0: the broker picks a queue.
    const any = await ok(c, sendV2("S", "anywhere", { queueId: -1 }));
    expect(Number(any.extFields!.queueId)).toBeGreaterThanOrEqual(0);
    expect(Number(any.extFields!.queueId)).toBeLessThan(4);
  });

  test("send error paths: unknown topic, bad name, oversized body, read-only topic, bad queueId, system topic, missing header", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("S", 4));
    await ok(c, createTopicRequest("RO", 4, 4));

    // autoCreateTopicEnable is false on a master: an unknown topic is refused with a hint.
    const unknown = await c.call(sendV2("NoSuchTopic", "x"));
    expectCode(unknown, ResponseCode.TOPIC_NOT_EXIST, "topic[NoSuchTopic] not exist");
    expect(await c.call(sendV2("bad/topic", "x"))).toMatchObject({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
    });
    expect(await c.call(sendV2("x".repeat(128), "x"))).toMatchObject({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "The specified topic is longer than topic max length.",
    });
    expectCode(await c.call(sendV2("S", new Uint8Array(MAX_MESSAGE_BYTES + 1))), ResponseCode.MESSAGE_ILLEGAL, "maxMessageSizeBytes");
    await ok(c, sendV2("S", new Uint8Array(MAX_MESSAGE_BYTES)));
    expectCode(await c.call(sendV2("RO", "x")), ResponseCode.NO_PERMISSION, "forbidden");
    expectCode(await c.call(sendV2("S", "x", { queueId: 4 })), ResponseCode.SYSTEM_ERROR, "queueId[4] is illegal");
    expect(await c.call(sendV2("SCHEDULE_TOPIC_XXXX", "x"))).toMatchObject({
      code: ResponseCode.NO_PERMISSION,
      remark: "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.",
    });
    expectCode(await c.call(sendV2("RMQ_SYS_TRANS_HALF_TOPIC", "x")), ResponseCode.NO_PERMISSION);
    // Properties over 32767 bytes.
    expectCode(await c.call(sendV2("S", "x", { props: { BIG: "p".repeat(32_768) } })), ResponseCode.MESSAGE_ILLEGAL, "properties");
    // A transactional half message is accepted but parked in RMQ_SYS_TRANS_HALF_TOPIC (see
    // test/integration/transaction.test.ts): it adds nothing to S below.
    const half = sendV2("S", "half", { props: { TRAN_MSG: "true", PGROUP: "PG" } });
    half.extFields!.f = "4";
    await ok(c, half);

    const noTopic = sendV2("S", "x");
    delete noTopic.extFields!.b;
    expectCode(await c.call(noTopic), ResponseCode.SYSTEM_ERROR, "topic");
    const badQueue = sendV2("S", "x");
    badQueue.extFields!.e = "one";
    expectCode(await c.call(badQueue), ResponseCode.SYSTEM_ERROR, "queueId");

    const badBatch = sendV2("S", enc.encode("not a batch"));
    badBatch.code = RequestCode.SEND_BATCH_MESSAGE;
    expectCode(await c.call(badBatch), ResponseCode.MESSAGE_ILLEGAL, "batch");

    // None of that stored anything in S but the one full-size message.
    const max = await ok(c, offsetReq(RequestCode.GET_MAX_OFFSET, "S", 0));
    expect(max.extFields!.offset).toBe("1");

    expectCode(await c.call(createRequest(9999)), ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 9999 not supported");
  });

  test("retry topic: a send to %RETRY%<group> is stored there, and goes to %DLQ%<group> at maxReconsumeTimes", async () => {
    await using c = await startCluster();
    await ok(c, heartbeatRequest("client-1", { group: "RG", subs: [{ topic: "S", expr: "*" }] }));
    const retry = await ok(c, sendV2("%RETRY%RG", "again", { reconsumeTimes: 1, maxReconsumeTimes: 3, props: { DELAY: "0" } }));
    expect(retry.extFields!.queueOffset).toBe("0");
    const [r] = records(await c.call(pull("%RETRY%RG", { group: "RG" })));
    expect(r).toMatchObject({ topic: "%RETRY%RG", reconsumeTimes: 1 });

    // A dead letter is stored at once: a DELAY it carries is dropped, not honoured.
    const dead = await ok(c, sendV2("%RETRY%RG", "dead", { reconsumeTimes: 3, maxReconsumeTimes: 3, props: { DELAY: "2" } }));
    expect(dead.extFields).toMatchObject({ queueId: "0", queueOffset: "0" });
    const [d] = records(await c.call(pull("%DLQ%RG", { group: "RG" })));
    expect(d).toMatchObject({ topic: "%DLQ%RG", queueId: 0, reconsumeTimes: 3 });
    expect(bodyText(d!)).toBe("dead");
    expect(parseProperties(d!.properties).DELAY).toBeUndefined();

    // A retry topic of a group the broker has not seen yet is created on demand (Java's
    // createTopicInSendMessageBackMethod), even with autoCreateTopicEnable off.
    await ok(c, sendV2("%RETRY%NewGroup", "first-retry", { reconsumeTimes: 1, maxReconsumeTimes: 16 }));
    expect(records(await c.call(pull("%RETRY%NewGroup", { group: "NewGroup" }))).map(bodyText)).toEqual(["first-retry"]);
  });

  test("delayed send: parked in SCHEDULE_TOPIC_XXXX, the answer names the queue the producer addressed", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("D", 4));
    const res = await ok(c, sendV2("D", "later", { queueId: 2, props: { DELAY: "1" } }));
    expect(res.extFields).toMatchObject({ queueId: "2", MSG_REGION: "DefaultRegion", TRACE_ON: "true" });
    const [parked] = records(await c.call(pull("SCHEDULE_TOPIC_XXXX", { queueId: 0 })));
    expect(parked).toMatchObject({ topic: "SCHEDULE_TOPIC_XXXX", queueId: 0, physicalOffset: parseMsgId(res.extFields!.msgId!).offset });
    expect(parseProperties(parked!.properties)).toMatchObject({ REAL_TOPIC: "D", REAL_QID: "2", DELAY: "1" });
    expectPullHeader(await c.call(pull("D", { queueId: 2 })), ResponseCode.PULL_NOT_FOUND);
  });

  test("MULTI_TAG topics get sysFlag bit MULTI_TAGS on their records", async () => {
    await using c = await startCluster();
    const create = createTopicRequest("MT", 1);
    create.extFields!.topicFilterType = "MULTI_TAG";
    await ok(c, create);
    await ok(c, sendV2("MT", "multi", { tags: "A" }));
    const [r] = records(await c.call(pull("MT")));
    expect(r!.sysFlag & 0x2).toBe(0x2);
  });
});

describe("broker binary: pull", () => {
  test("statuses 0/19/20/21 always carry the four offsets; bodies decode and are byte-identical across pulls", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("P", 2));
    for (let i = 0; i < 5; i++) await ok(c, sendV2("P", `m${i}`, { tags: i < 3 ? "TagA" : "TagB" }));

    // Empty queue: offset 0 is "not yet", anything else has moved (to 0).
    expectPullHeader(await c.call(pull("P", { queueId: 1 })), ResponseCode.PULL_NOT_FOUND, { next: 0, min: 0, max: 0 });
    expectPullHeader(await c.call(pull("P", { queueId: 1, offset: 3 })), ResponseCode.PULL_OFFSET_MOVED, { next: 0 });

    const found = await c.call(pull("P", { max: 3 }));
    expectPullHeader(found, ResponseCode.SUCCESS, { next: 3, min: 0, max: 5 });
    expect(records(found).map(bodyText)).toEqual(["m0", "m1", "m2"]);
    const again = await c.call(pull("P", { max: 3 }));
    expect(Buffer.from(again.body!).equals(Buffer.from(found.body!))).toBe(true);
    const rest = await c.call(pull("P", { offset: 3 }));
    expectPullHeader(rest, ResponseCode.SUCCESS, { next: 5 });
    expect(records(rest).map((r) => r.queueOffset)).toEqual([3, 4]);

    expectPullHeader(await c.call(pull("P", { offset: 5 })), ResponseCode.PULL_NOT_FOUND, { next: 5, max: 5 });
    expectPullHeader(await c.call(pull("P", { offset: 9 })), ResponseCode.PULL_OFFSET_MOVED, { next: 5, max: 5 });
    // Everything scanned is filtered out: retry immediately, from past what was scanned.
    const none = await c.call(pull("P", { subscription: "TagZ" }));
    expectPullHeader(none, ResponseCode.PULL_RETRY_IMMEDIATELY, { next: 5 });
    expect(none.body).toBeUndefined();
  });

  test("tag filtering with the SUBSCRIPTION flag: only matching tags come back, the offsets still advance", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("F", 1));
    const tags = ["TagA", "TagB", undefined, "null", "TagA", "TagC"];
    for (const [i, t] of tags.entries()) await ok(c, sendV2("F", `f${i}`, t === undefined ? {} : { tags: t }));
    const a = await c.call(pull("F", { subscription: "TagA" }));
    expectPullHeader(a, ResponseCode.SUCCESS, { next: 6 });
    expect(records(a).map(bodyText)).toEqual(["f0", "f4"]);
    const ac = records(await c.call(pull("F", { subscription: "TagA || TagC" })));
    expect(ac.map(bodyText)).toEqual(["f0", "f4", "f5"]);
    // ali-ons writes TAGS=null for untagged messages: the string "null" is a tag like any other.
    expect(records(await c.call(pull("F", { subscription: "null" }))).map(bodyText)).toEqual(["f3"]);
    expect(records(await c.call(pull("F", { subscription: "*" }))).length).toBe(6);
    expect(records(await c.call(pull("F", { subscription: "TagB", offset: 1, max: 1 }))).map(bodyText)).toEqual(["f1"]);
    const sqlReq = pull("F", { subscription: "a > 1" });
    sqlReq.extFields!.expressionType = "SQL92";
    expectCode(await c.call(sqlReq), ResponseCode.SYSTEM_ERROR, "The broker does not support consumer to filter message by SQL92");
    expectCode(await c.call(pull("F", { subscription: "|| ||" })), ResponseCode.SUBSCRIPTION_PARSE_FAILED, "no tags");
  });

  test("without the SUBSCRIPTION flag the heartbeat's subscription is used: 24 without one, 25 when older", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("H", 1));
    for (const t of ["TagA", "TagB", "TagA"]) await ok(c, sendV2("H", t, { tags: t }));
    const noSub = await c.call(pull("H", { group: "HG", sysFlag: 0 }));
    expectCode(noSub, ResponseCode.SUBSCRIPTION_NOT_EXIST, "subscription not exist");
    expect(noSub.extFields?.nextBeginOffset).toBeUndefined();

    await ok(c, heartbeatRequest("hb-1", { group: "HG", subs: [{ topic: "H", expr: "TagB", subVersion: 100 }] }));
    const viaHeartbeat = await c.call(pull("H", { group: "HG", sysFlag: 0, subVersion: 100 }));
    expect(records(viaHeartbeat).map(bodyText)).toEqual(["TagB"]);
    expectCode(await c.call(pull("H", { group: "HG", sysFlag: 0, subVersion: 200 })), ResponseCode.SUBSCRIPTION_NOT_LATEST);
    // Another topic of the same group: not subscribed.
    await ok(c, createTopicRequest("H2", 1));
    expectCode(await c.call(pull("H2", { group: "HG", sysFlag: 0 })), ResponseCode.SUBSCRIPTION_NOT_EXIST);
  });

  test("SQL92 as the Java client uses it: enablePropertyFilter switched on live, the heartbeat's SQL92 subscription filters pulls without the SUBSCRIPTION flag", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("Q", 1));
    for (let i = 0; i < 6; i++) await ok(c, sendV2("Q", `q${i}`, { tags: i % 2 ? "B" : "A", props: { n: String(i) } }));
    const sqlHeartbeat = (expr: string) =>
      createRequest(
        RequestCode.HEART_BEAT,
        undefined,
        enc.encode(
          JSON.stringify({
            clientID: "java-like",
            producerDataSet: [],
            consumerDataSet: [
              {
                groupName: "QG",
                consumeType: "CONSUME_PASSIVELY",
                messageModel: "CLUSTERING",
                consumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
                unitMode: false,
                subscriptionDataSet: [
                  { topic: "Q", subString: expr, tagsSet: [], codeSet: [], classFilterMode: false, subVersion: 7, expressionType: "SQL92" },
                ],
              },
            ],
          }),
        ),
      );
    // Off (the default): the heartbeat carrying SQL92 is refused.
    expectCode(await c.call(sqlHeartbeat("n >= 2")), ResponseCode.SYSTEM_ERROR, "SQL92");
    await ok(c, createRequest(RequestCode.UPDATE_BROKER_CONFIG, {}, enc.encode("enablePropertyFilter=true\n")));
    await ok(c, sqlHeartbeat("n >= 2 AND TAGS = 'A'"));
    const r = await c.call(pull("Q", { group: "QG", sysFlag: 0, subVersion: 7 }));
    expectPullHeader(r, ResponseCode.SUCCESS, { next: 6 });
    expect(records(r).map(bodyText)).toEqual(["q2", "q4"]);
    // The same with the expression on the pull itself (SUBSCRIPTION flag), and a bad one.
    const withSub = pull("Q", { subscription: "n < 2" });
    withSub.extFields!.expressionType = "SQL92";
    expect(records(await c.call(withSub)).map(bodyText)).toEqual(["q0", "q1"]);
    const bad = pull("Q", { subscription: "n <" });
    bad.extFields!.expressionType = "SQL92";
    expectCode(await c.call(bad), ResponseCode.SUBSCRIPTION_PARSE_FAILED, "Invalid MessageSelector");
  });

  test("pull error paths: unknown topic, bad queueId, unreadable topic, missing header", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("P", 2));
    await ok(c, createTopicRequest("WO", 1, 2));
    expectCode(await c.call(pull("Nope")), ResponseCode.TOPIC_NOT_EXIST, "Nope");
    expectCode(await c.call(pull("P", { queueId: 2 })), ResponseCode.SYSTEM_ERROR, "queueId[2] is illegal");
    expectCode(await c.call(pull("P", { queueId: -1 })), ResponseCode.SYSTEM_ERROR, "illegal");
    expectCode(await c.call(pull("WO")), ResponseCode.NO_PERMISSION, "forbidden");
    const missing = pull("P");
    delete missing.extFields!.consumerGroup;
    expectCode(await c.call(missing), ResponseCode.SYSTEM_ERROR, "consumerGroup");
    const notNumber = pull("P");
    notNumber.extFields!.queueOffset = "abc";
    expectCode(await c.call(notNumber), ResponseCode.SYSTEM_ERROR, "queueOffset");
  });

  test("long polling: a parked pull is answered as soon as a message arrives, and with 19 after its suspend time", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("L", 2));
    const consumer = c.client();

    // Parked for up to 10 s; a message 200 ms later answers it at once.
    const parkedAt = Date.now();
    const parked = consumer.invoke(c.addr, pull("L", { sysFlag: SUBSCRIPTION | SUSPEND, suspendMs: 10_000 }), 15_000);
    let answered = false;
    void parked.then(() => (answered = true));
    await waitFor(() => Date.now() - parkedAt >= 200, 1000);
    expect(answered).toBe(false);
    const sentAt = Date.now();
    await ok(c, sendV2("L", "wake-up"));
    const res = await parked;
    const latency = Date.now() - sentAt;
    expect(latency).toBeLessThan(500);
    expectPullHeader(res, ResponseCode.SUCCESS, { next: 1 });
    expect(records(res).map(bodyText)).toEqual(["wake-up"]);

    // A message for another queue, or one the subscription filters out, does not answer it.
    const filtered = consumer.invoke(
      c.addr,
      pull("L", { offset: 1, subscription: "TagA", sysFlag: SUBSCRIPTION | SUSPEND, suspendMs: 10_000 }),
      15_000,
    );
    let filteredDone = false;
    void filtered.then(() => (filteredDone = true));
    await ok(c, sendV2("L", "other-queue", { queueId: 1, tags: "TagA" }));
    await ok(c, sendV2("L", "wrong-tag", { tags: "TagB" }));
    const check = Date.now();
    await waitFor(() => Date.now() - check >= 150, 1000);
    expect(filteredDone).toBe(false);
    await ok(c, sendV2("L", "right-tag", { tags: "TagA" }));
    const fres = await filtered;
    expect(records(fres).map(bodyText)).toEqual(["right-tag"]);

    // Nothing arrives: answered 19 after the suspend time (checked every 500 ms).
    const idleAt = Date.now();
    const idle = await consumer.invoke(c.addr, pull("L", { offset: 3, sysFlag: SUBSCRIPTION | SUSPEND, suspendMs: 1000 }), 10_000);
    const waited = Date.now() - idleAt;
    expectPullHeader(idle, ResponseCode.PULL_NOT_FOUND, { next: 3, max: 3 });
    expect(waited).toBeGreaterThanOrEqual(950);
    expect(waited).toBeLessThan(3000);

    // Without SUSPEND nothing is parked.
    const quickAt = Date.now();
    expectPullHeader(await c.call(pull("L", { offset: 3, suspendMs: 5000 })), ResponseCode.PULL_NOT_FOUND);
    expect(Date.now() - quickAt).toBeLessThan(500);
  });

  test("COMMIT_OFFSET on a pull stores the group's offset (ali-ons' -1 too)", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("CO", 1));
    for (let i = 0; i < 3; i++) await ok(c, sendV2("CO", `c${i}`));
    const q = () => ok(c, createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: "COG", topic: "CO", queueId: "0" }));
    await c.call(pull("CO", { group: "COG", sysFlag: SUBSCRIPTION | COMMIT_OFFSET, offset: 2, commitOffset: 2 }));
    expect((await q()).extFields!.offset).toBe("2");
    // A parked pull stores its commit offset when it is parked.
    const parked = c
      .client()
      .invoke(
        c.addr,
        pull("CO", { group: "COG", sysFlag: SUBSCRIPTION | COMMIT_OFFSET | SUSPEND, offset: 3, commitOffset: 3, suspendMs: 10_000 }),
        15_000,
      );
    await waitFor(async () => (await q()).extFields!.offset === "3", 3000, "commit offset of a parked pull");
    await ok(c, sendV2("CO", "c3"));
    expect(records(await parked).map(bodyText)).toEqual(["c3"]);
    // The woken pull does not commit a second time.
    expect((await q()).extFields!.offset).toBe("3");
    // ali-ons may send -1: stored as given (Java does too), and the young-queue rule answers 0.
    await c.call(pull("CO", { group: "COG", sysFlag: SUBSCRIPTION | COMMIT_OFFSET, offset: 4, commitOffset: -1 }));
    const group = (await (await fetch(`${c.admin}/groups/COG`)).json()) as { queues: { consumerOffset: number }[] };
    expect(group.queues).toMatchObject([{ consumerOffset: -1 }]);
    expect((await q()).extFields!.offset).toBe("0");
  });
});

describe("broker binary: consumers", () => {
  test("HEART_BEAT then GET_CONSUMER_LIST_BY_GROUP; a joining member triggers NOTIFY_CONSUMER_IDS_CHANGED; UNREGISTER and close remove", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("C", 4));
    const notices: { who: string; cmd: RemotingCommand }[] = [];
    const first = c.client((_conn, cmd) => notices.push({ who: "first", cmd }));
    const second = c.client((_conn, cmd) => notices.push({ who: "second", cmd }));
    const list = async (via: RemotingClient = first) =>
      via.invoke(c.addr, createRequest(RequestCode.GET_CONSUMER_LIST_BY_GROUP, { consumerGroup: "CG1" }), 3000);

    expectCode(await list(), ResponseCode.SYSTEM_ERROR, "no consumer for this group, CG1");
    expectCode(await first.invoke(c.addr, heartbeatRequest("10.0.0.1@1", { group: "CG1", subs: [{ topic: "C", expr: "*" }] }), 3000), 0);
    // Registered before the heartbeat is answered: the list is right at once.
    expect(bodyJson<{ consumerIdList: string[] }>(await list())).toEqual({ consumerIdList: ["10.0.0.1@1"] });
    // The group's retry topic exists now.
    await waitFor(async () => (await fetch(`${c.admin}/topics/%25RETRY%25CG1`)).status === 200, 3000, "%RETRY%CG1");

    expectCode(await second.invoke(c.addr, heartbeatRequest("10.0.0.2@2", { group: "CG1", subs: [{ topic: "C", expr: "*" }] }), 3000), 0);
    const notice = await waitFor(() => notices.find((n) => n.who === "first"), 3000, "NOTIFY_CONSUMER_IDS_CHANGED to the first member");
    expect(notice.cmd.code).toBe(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED);
    expect(notice.cmd.extFields).toEqual({ consumerGroup: "CG1" });
    expect(notice.cmd.flag & 2).toBe(2); // oneway
    expect(bodyJson<{ consumerIdList: string[] }>(await list())).toEqual({ consumerIdList: ["10.0.0.1@1", "10.0.0.2@2"] });

    // A repeat heartbeat with nothing new notifies nobody.
    notices.length = 0;
    await first.invoke(c.addr, heartbeatRequest("10.0.0.1@1", { group: "CG1", subs: [{ topic: "C", expr: "*" }] }), 3000);
    await list();
    expect(notices).toEqual([]);

    // UNREGISTER_CLIENT removes the member and tells the rest.
    const unreg = createRequest(RequestCode.UNREGISTER_CLIENT, { clientID: "10.0.0.2@2", consumerGroup: "CG1" });
    expectCode(await second.invoke(c.addr, unreg, 3000), 0);
    expect(bodyJson<{ consumerIdList: string[] }>(await list())).toEqual({ consumerIdList: ["10.0.0.1@1"] });
    await waitFor(() => notices.find((n) => n.who === "first"), 3000, "notice after UNREGISTER_CLIENT");
    expectCode(await second.invoke(c.addr, createRequest(RequestCode.UNREGISTER_CLIENT, {}), 3000), ResponseCode.SYSTEM_ERROR, "clientID");

    // Closing the connection removes the member too.
    await second.invoke(c.addr, heartbeatRequest("10.0.0.2@2", { group: "CG1", subs: [{ topic: "C", expr: "*" }] }), 3000);
    expect(bodyJson<{ consumerIdList: string[] }>(await list()).consumerIdList.length).toBe(2);
    await first.close();
    const viewer = c.client();
    await waitFor(
      async () => bodyJson<{ consumerIdList: string[] }>(await list(viewer)).consumerIdList.join() === "10.0.0.2@2",
      3000,
      "the closed member to go",
    );
    await second.close();
    await waitFor(async () => (await list(viewer)).code === ResponseCode.SYSTEM_ERROR, 3000, "the group to empty");

    // A producer-only heartbeat and a malformed one.
    expectCode(await viewer.invoke(c.addr, heartbeatRequest("p@1", { producer: "PG" }), 3000), 0);
    const bad = createRequest(RequestCode.HEART_BEAT, undefined, enc.encode("{not json"));
    expectCode(await viewer.invoke(c.addr, bad, 3000), ResponseCode.SYSTEM_ERROR, "JSON");
    expectCode(await viewer.invoke(c.addr, createRequest(RequestCode.HEART_BEAT), 3000), ResponseCode.SYSTEM_ERROR, "no body");

    // CHECK_CLIENT_CONFIG (Java asks before using a non-TAG subscription).
    const check = (subscriptionData: unknown) =>
      viewer.invoke(
        c.addr,
        createRequest(RequestCode.CHECK_CLIENT_CONFIG, undefined, enc.encode(JSON.stringify({ clientId: "j@1", group: "CG1", subscriptionData }))),
        3000,
      );
    expectCode(await check({ topic: "C", subString: "TagA || TagB", expressionType: "TAG" }), ResponseCode.SUCCESS);
    expectCode(await check({ topic: "C", subString: "a > 1", expressionType: "SQL92" }), ResponseCode.SYSTEM_ERROR, "by SQL92");
    expectCode(await check(null), ResponseCode.SUCCESS);
  });

  test("consumer offsets and the offset queries", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("O", 2));
    const q = (queueId: number, group = "OG") =>
      c.call(createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: group, topic: "O", queueId: String(queueId) }));
    const update = (queueId: number, offset: number) =>
      createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: "OG", topic: "O", queueId: String(queueId), commitOffset: String(offset) });

    // Young queues (empty, or first message still in memory): 0 for a group that never committed.
    expect((await q(0)).extFields).toEqual({ offset: "0" });
    const stamps: number[] = [];
    for (let i = 0; i < 4; i++) {
      // Distinct store times, so that the search by time has an exact answer for each message.
      const before = Date.now();
      await waitFor(() => Date.now() > before, 1000);
      await ok(c, sendV2("O", `o${i}`));
    }
    for (const r of records(await c.call(pull("O")))) stamps.push(r.storeTimestamp);
    expect((await q(0)).extFields).toEqual({ offset: "0" });

    await ok(c, update(0, 2));
    expect((await q(0)).extFields).toEqual({ offset: "2" });
    expect((await q(1)).extFields).toEqual({ offset: "0" });
    // ali-ons may commit -1: accepted, and the young-queue rule answers again.
    await ok(c, update(0, -1));
    expect((await q(0)).extFields).toEqual({ offset: "0" });
    // Java sends the update oneway: no answer, but stored.
    const oneway = update(0, 3);
    const conn = await c.client().connection(c.addr);
    conn.invokeOneway(oneway);
    await waitFor(async () => (await q(0)).extFields?.offset === "3", 3000, "oneway UPDATE_CONSUMER_OFFSET");
    expectCode(await c.call(createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: "OG", topic: "O", queueId: "0" })), 1, "commitOffset");
    expectCode(await c.call(createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: "OG", topic: "O" })), 1, "queueId");

    expect((await ok(c, offsetReq(RequestCode.GET_MAX_OFFSET, "O", 0))).extFields).toEqual({ offset: "4" });
    expect((await ok(c, offsetReq(RequestCode.GET_MAX_OFFSET, "O", 1))).extFields).toEqual({ offset: "0" });
    expect((await ok(c, offsetReq(RequestCode.GET_MAX_OFFSET, "Unknown", 0))).extFields).toEqual({ offset: "0" });
    expect((await ok(c, offsetReq(RequestCode.GET_MIN_OFFSET, "O", 0))).extFields).toEqual({ offset: "0" });
    expect((await ok(c, offsetReq(RequestCode.GET_EARLIEST_MSG_STORETIME, "O", 0))).extFields).toEqual({ timestamp: String(stamps[0]) });
    expect((await ok(c, offsetReq(RequestCode.GET_EARLIEST_MSG_STORETIME, "O", 1))).extFields).toEqual({ timestamp: "-1" });
    const search = async (ts: number) =>
      Number((await ok(c, offsetReq(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, "O", 0, { timestamp: String(ts) }))).extFields!.offset);
    expect(await search(0)).toBe(0);
    for (const [i, ts] of stamps.entries()) expect(await search(ts)).toBe(i);
    expect((await ok(c, offsetReq(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, "O", 1, { timestamp: "0" }))).extFields).toEqual({ offset: "0" });
    expectCode(await c.call(offsetReq(RequestCode.GET_MAX_OFFSET, "O", Number.NaN)), ResponseCode.SYSTEM_ERROR, "queueId");
  });

  test("CONSUMER_SEND_MSG_BACK: to %RETRY%<group> (delayed via SCHEDULE_TOPIC_XXXX), to %DLQ%<group> past maxReconsumeTimes", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("B", 1));
    await ok(c, sendV2("B", "orig", { tags: "TagA", props: { KEYS: "key-1" } }));
    const [orig] = records(await c.call(pull("B")));
    const origId = createMsgIdOf(c, orig!.physicalOffset);
    const back = (o: Record<string, string>) =>
      createRequest(RequestCode.CONSUMER_SEND_MSG_BACK, { group: "BG", delayLevel: "1", originTopic: "B", maxReconsumeTimes: "16", ...o });

    // Delay level 1: parked in SCHEDULE_TOPIC_XXXX queue 0 (level − 1), bound for %RETRY%BG.
    await ok(c, back({ offset: String(orig!.physicalOffset), originMsgId: "CLIENT-SIDE-ID" }));
    const [parked] = records(await c.call(pull("SCHEDULE_TOPIC_XXXX", { group: "BG", queueId: 0 })));
    expect(parked).toMatchObject({ topic: "SCHEDULE_TOPIC_XXXX", reconsumeTimes: 1 });
    expect(bodyText(parked!)).toBe("orig");
    const pp = parseProperties(parked!.properties);
    // ORIGIN_MESSAGE_ID is the original's offset id, whatever the header's originMsgId says (Java).
    expect(pp).toMatchObject({ RETRY_TOPIC: "B", TAGS: "TagA", KEYS: "key-1", ORIGIN_MESSAGE_ID: origId, DELAY: "1" });
    expect(pp).toMatchObject({ REAL_TOPIC: "%RETRY%BG", REAL_QID: "0" });
    // About a second later it is delivered to the retry topic.
    const delivered = await waitFor(
      async () => {
        const r = await c.call(pull("%RETRY%BG", { group: "BG" }));
        return r.code === ResponseCode.SUCCESS ? records(r) : null;
      },
      5000,
      "the retried message in %RETRY%BG",
    );
    expect(delivered.map((r) => [r.topic, r.reconsumeTimes, bodyText(r)])).toEqual([["%RETRY%BG", 1, "orig"]]);
    expect(parseProperties(delivered[0]!.properties)).toMatchObject({ RETRY_TOPIC: "B", TAGS: "TagA", ORIGIN_MESSAGE_ID: origId });
    // The retry topic was created for the group.
    expect((await fetch(`${c.admin}/topics/%25RETRY%25BG`)).status).toBe(200);

    // reconsumeTimes (0) >= maxReconsumeTimes (0) → dead letter queue, no delay.
    await ok(c, back({ offset: String(orig!.physicalOffset), maxReconsumeTimes: "0" }));
    // delayLevel < 0 → dead letter queue too.
    await ok(c, back({ offset: String(orig!.physicalOffset), delayLevel: "-1" }));
    const dlq = records(await c.call(pull("%DLQ%BG", { group: "BG" })));
    expect(dlq.map((r) => [r.topic, r.queueId, r.reconsumeTimes, bodyText(r)])).toEqual([
      ["%DLQ%BG", 0, 1, "orig"],
      ["%DLQ%BG", 0, 1, "orig"],
    ]);
    const dp = parseProperties(dlq[0]!.properties);
    expect(dp).toMatchObject({ RETRY_TOPIC: "B", ORIGIN_MESSAGE_ID: origId });
    expect(dp.DELAY).toBeUndefined();

    expectCode(await c.call(back({ offset: "999999999" })), ResponseCode.SYSTEM_ERROR, "look message by offset failed, 999999999");
    expectCode(await c.call(back({ offset: "-1" })), ResponseCode.SYSTEM_ERROR, "look message by offset failed");
    expectCode(await c.call(back({ offset: String(orig!.physicalOffset + 4) })), ResponseCode.SYSTEM_ERROR, "look message by offset failed");
    expectCode(await c.call(back({ offset: "x" })), ResponseCode.SYSTEM_ERROR, "offset");

    // A retry topic made read-only refuses send-backs.
    await ok(c, createTopicRequest("%RETRY%ROG", 1, 4));
    expectCode(
      await c.call(createRequest(RequestCode.CONSUMER_SEND_MSG_BACK, { group: "ROG", delayLevel: "0", offset: String(orig!.physicalOffset) })),
      ResponseCode.NO_PERMISSION,
      "%RETRY%ROG",
    );
  });
});

function createMsgIdOf(c: Cluster, offset: number): string {
  const b = Buffer.alloc(16);
  b.set([127, 0, 0, 1], 0);
  b.writeInt32BE(c.broker.ports.broker!, 4);
  b.writeBigInt64BE(BigInt(offset), 8);
  return b.toString("hex").toUpperCase();
}

describe("broker binary: robustness, VIP port, admin API", () => {
  test("garbage bytes and half-sent requests close only that connection; a parked pull's client may vanish", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("R", 1));

    // Garbage: a frame length far over the limit. The broker drops that connection only.
    await using junk = await rawPeer(c.addr);
    junk.write(new Uint8Array([0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8]));
    await waitFor(() => junk.closed, 3000, "the garbage connection to be closed");
    // Header length larger than the frame.
    await using junk2 = await rawPeer(c.addr);
    junk2.write(new Uint8Array([0, 0, 0, 8, 0, 0, 0, 100, 1, 2, 3, 4]));
    await waitFor(() => junk2.closed, 3000, "the second garbage connection to be closed");
    // A well-framed request whose JSON header is not JSON.
    await using junk3 = await rawPeer(c.addr);
    const notJson = enc.encode("{{{{");
    const frame = new Uint8Array(8 + notJson.length);
    new DataView(frame.buffer).setInt32(0, 4 + notJson.length);
    new DataView(frame.buffer).setInt32(4, notJson.length);
    frame.set(notJson, 8);
    junk3.write(frame);
    await waitFor(() => junk3.closed, 3000, "the bad-header connection to be closed");

    // Half a request, then gone.
    await using half = await rawPeer(c.addr);
    const f = aliOnsFrame(RequestCode.SEND_MESSAGE_V2, { a: "PG", b: "R", c: "TBW102", d: 4, e: 0, f: 0, g: Date.now(), h: 0 }, enc.encode("never"));
    half.write(f.bytes.subarray(0, f.bytes.length - 3));
    half.end();

    // A parked pull whose client disconnects, then a message for that queue.
    const gone = c.client();
    void gone.invoke(c.addr, pull("R", { sysFlag: SUBSCRIPTION | SUSPEND, suspendMs: 10_000 }), 15_000).catch(() => {});
    // Give the pull time to be parked (not needed for correctness: either way the broker must carry on).
    const parkedAt = Date.now();
    await waitFor(() => Date.now() - parkedAt >= 100, 1000);
    await gone.close();

    // Everyone else is still served.
    await ok(c, sendV2("R", "still-here"));
    expect(records(await c.call(pull("R"))).map(bodyText)).toEqual(["still-here"]);
    const other = c.client();
    expectCode(await other.invoke(c.addr, pull("R", { offset: 1 }), 3000), ResponseCode.PULL_NOT_FOUND);
    expect(c.broker.proc.exitCode).toBeNull();
  });

  test("the VIP port serves sends but not pulls", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("V", 1));
    const vip = c.client();
    const sent = await vip.invoke(c.vip, sendV2("V", "via-vip"), 3000);
    expectCode(sent, ResponseCode.SUCCESS);
    expectCode(await vip.invoke(c.vip, pull("V"), 3000), ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "request type 11 not supported");
    expect(records(await c.call(pull("V"))).map(bodyText)).toEqual(["via-vip"]);
    expectCode(await vip.invoke(c.vip, heartbeatRequest("v@1", { group: "VG", subs: [{ topic: "V", expr: "*" }] }), 3000), 0);
  });

  test("admin API: health, topics with queue offsets, groups with offsets and lag, 404 JSON", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("A", 2));
    for (let i = 0; i < 3; i++) await ok(c, sendV2("A", `a${i}`, { queueId: 0 }));
    await ok(c, sendV2("A", "a-q1", { queueId: 1 }));
    await ok(c, createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: "AG", topic: "A", queueId: "0", commitOffset: "1" }));
    const get = async (path: string) => {
      const r = await fetch(c.admin + path);
      return { status: r.status, type: r.headers.get("content-type") ?? "", json: (await r.json()) as Record<string, unknown> };
    };
    const health = await get("/health");
    expect(health).toMatchObject({ status: 200, json: { status: "ok", role: "master" } });
    const topics = await get("/topics");
    expect((topics.json.topics as { topicName: string }[]).map((t) => t.topicName)).toContain("A");
    const a = await get("/topics/A");
    expect(a.json).toMatchObject({
      topicName: "A",
      readQueueNums: 2,
      perm: 6,
      queues: [
        { queueId: 0, minOffset: 0, maxOffset: 3 },
        { queueId: 1, minOffset: 0, maxOffset: 1 },
      ],
    });
    const g = await get("/groups/AG");
    expect(g.json).toMatchObject({ group: "AG", queues: [{ topic: "A", queueId: 0, consumerOffset: 1, brokerOffset: 3, lag: 2 }], totalLag: 2 });
    for (const [path, code, name] of [
      ["/topics/Nope", "TOPIC_NOT_FOUND", "Nope"],
      ["/groups/Nobody", "GROUP_NOT_FOUND", "Nobody"],
    ]) {
      const r = await get(path!);
      expect(r.status).toBe(404);
      expect(r.type).toContain("application/json");
      expect(r.json).toMatchObject({ error: { code, message: expect.stringContaining(name!) } });
    }
  });

  test("admin API: /stats/requests counts both ports' requests by code, a parked pull with its time parked; the name server's too", async () => {
    await using c = await startCluster();
    await ok(c, createTopicRequest("ST", 1));
    await ok(c, sendV2("ST", "s0"));
    const vip = c.client();
    expectCode(await vip.invoke(c.vip, sendV2("ST", "via-vip"), 3000), ResponseCode.SUCCESS);
    expectCode(await vip.invoke(c.vip, pull("ST"), 3000), ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
    // Parked until a message arrives ≥ 300 ms later.
    const consumer = c.client();
    const parkedAt = Date.now();
    const parked = consumer.invoke(c.addr, pull("ST", { offset: 2, sysFlag: SUBSCRIPTION | SUSPEND, suspendMs: 10_000 }), 15_000);
    await waitFor(() => Date.now() - parkedAt >= 300, 1000);
    await ok(c, sendV2("ST", "wake-up"));
    expectPullHeader(await parked, ResponseCode.SUCCESS, { next: 3 });

    type Stats = { codes: { name: string; count: number; errors: number; responses: Record<string, number>; latency: { sumMs: number } }[] };
    const stats = (await (await fetch(`${c.admin}/stats/requests`)).json()) as Stats;
    const by = new Map(stats.codes.map((s) => [s.name, s]));
    expect(by.get("SEND_MESSAGE_V2")).toMatchObject({ count: 3, errors: 0, responses: { SUCCESS: 3 } });
    // The VIP port's refusal and the parked pull, under one code.
    const pulls = by.get("PULL_MESSAGE")!;
    expect(pulls).toMatchObject({ count: 2, errors: 1, responses: { SUCCESS: 1, REQUEST_CODE_NOT_SUPPORTED: 1 } });
    expect(pulls.latency.sumMs).toBeGreaterThanOrEqual(250);

    const ns = (await (await fetch(`${c.ns.adminUrl}/stats/requests`)).json()) as Stats;
    expect(ns.codes.find((s) => s.name === "REGISTER_BROKER")?.count).toBeGreaterThanOrEqual(1);
  });

  test("restart on the same store keeps topics, messages and committed consumer offsets", async () => {
    const dir = tempDir("rocketbun-restart-");
    try {
      await using c = await startCluster({ dir });
      await ok(c, createTopicRequest("K", 2));
      const sent: string[] = [];
      for (let i = 0; i < 5; i++) {
        const body = `keep-${i}-${"x".repeat(i * 1000)}`;
        sent.push(body);
        await ok(c, sendV2("K", body, { queueId: i % 2, tags: `T${i}` }));
      }
      const before = (await c.call(pull("K", { queueId: 0 }))).body!;
      await ok(c, createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: "KG", topic: "K", queueId: "0", commitOffset: "2" }));
      await ok(c, heartbeatRequest("k@1", { group: "KG", subs: [{ topic: "K", expr: "*" }] }));

      await c.restartBroker();

      expect((await ok(c, offsetReq(RequestCode.GET_MAX_OFFSET, "K", 0))).extFields).toEqual({ offset: "3" });
      expect((await ok(c, offsetReq(RequestCode.GET_MAX_OFFSET, "K", 1))).extFields).toEqual({ offset: "2" });
      const after = (await c.call(pull("K", { queueId: 0 }))).body!;
      expect(Buffer.from(after).equals(Buffer.from(before))).toBe(true);
      const q1 = records(await c.call(pull("K", { queueId: 1 })));
      expect(q1.map(bodyText)).toEqual([sent[1]!, sent[3]!]);
      const q = await ok(c, createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: "KG", topic: "K", queueId: "0" }));
      expect(q.extFields).toEqual({ offset: "2" });
      expect((await fetch(`${c.admin}/topics/%25RETRY%25KG`)).status).toBe(200);
      // New messages continue the queue offsets.
      const next = await ok(c, sendV2("K", "after-restart", { queueId: 0 }));
      expect(next.extFields!.queueOffset).toBe("3");
      // And the restarted broker registered again.
      await waitFor(async () => (await route(c, "K")).code === ResponseCode.SUCCESS, 5000, "route of K after restart");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
