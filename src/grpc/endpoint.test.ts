/**
 * The gRPC endpoint over real sockets in front of an in-process broker (src/broker/test-support.ts),
 * driven by a grpc-js client built from the same schema: the Telemetry settings exchange,
 * QueryRoute, SendMessage read back over remoting PULL, bad requests, the grpc-timeout clamp,
 * a TLS ClientHello refused without a certificate.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import {
  credentials,
  Metadata,
  makeGenericClientConstructor,
  status as GrpcStatus,
  type Client,
  type ClientDuplexStream,
  type ServiceError,
} from "@grpc/grpc-js";
import { createTopicRequest, InProcessBroker, pulledRecords, pullRequest } from "../broker/test-support.ts";
import { parseProperties } from "../commitlog/index.ts";
import { scope } from "../common/log.ts";
import { Code, MessageType, Permission } from "./codes.ts";
import { GrpcEndpoint, MAX_DEADLINE_MS, timeoutMs } from "./endpoint.ts";
import type {
  GrpcMessage,
  QueryRouteResponse,
  SendMessageRequest,
  SendMessageResponse,
  Settings,
  StatusResponse,
  TelemetryCommand,
} from "./messages.ts";
import { serviceDefinition } from "./schema.ts";
import { consistentHash, javaStringHash } from "./send-message.ts";

const TOPIC = "GrpcTopic";
const Ctor = makeGenericClientConstructor(serviceDefinition(), "MessagingService");
type Rpc = (req: unknown, md: Metadata, opts: { deadline?: number }, cb: (e: ServiceError | null, res: unknown) => void) => void;

let broker: InProcessBroker;
let endpoint: GrpcEndpoint;
let client: Client;

function md(clientId = "test-client@1"): Metadata {
  const m = new Metadata();
  if (clientId !== "") m.set("x-mq-client-id", clientId);
  return m;
}

function call<T>(name: string, req: unknown, meta = md(), deadline?: number): Promise<T> {
  const fn = (client as unknown as Record<string, Rpc>)[name]!.bind(client);
  return new Promise((resolve, reject) => fn(req, meta, deadline ? { deadline } : {}, (e, res) => (e ? reject(e) : resolve(res as T))));
}

function telemetry(meta = md(), deadline?: number): ClientDuplexStream<TelemetryCommand, TelemetryCommand> {
  const fn = (
    client as unknown as Record<string, (m: Metadata, o: object) => ClientDuplexStream<TelemetryCommand, TelemetryCommand>>
  ).Telemetry!.bind(client);
  return fn(meta, deadline ? { deadline } : {});
}

function nextCommand(s: ClientDuplexStream<TelemetryCommand, TelemetryCommand>): Promise<TelemetryCommand | ServiceError> {
  return new Promise((resolve) => {
    s.once("data", resolve);
    s.once("error", resolve);
  });
}

const producerSettings: Settings = {
  client_type: 1,
  publishing: { topics: [{ name: TOPIC }], max_body_size: 0, validate_message_type: false },
  request_timeout: { seconds: 3 },
};

function message(over: Partial<GrpcMessage> & { id?: string } = {}): GrpcMessage {
  return {
    topic: { name: TOPIC },
    user_properties: { color: "blue" },
    system_properties: {
      tag: "TagA",
      keys: ["k1", "k2"],
      message_id: over.id ?? "01AABBCCDDEEFF0011223344556677889900",
      body_encoding: 1,
      message_type: 1,
      born_host: "host-a",
      queue_id: 0,
      born_timestamp: { seconds: 1_700_000_000, nanos: 5_000_000 },
    },
    body: new TextEncoder().encode("hello grpc"),
    ...over,
  };
}

beforeAll(async () => {
  broker = InProcessBroker.start();
  await broker.ok(createTopicRequest(TOPIC, 4));
  endpoint = new GrpcEndpoint({
    host: "127.0.0.1",
    port: 0,
    broker: broker.controller.messaging(),
    tls: { mode: "permissive", serverPem: () => undefined, onServerPemChange: () => {} },
    log: scope("grpc-test"),
  });
  await endpoint.start();
  client = new Ctor(`127.0.0.1:${endpoint.port}`, credentials.createInsecure());
});

afterAll(async () => {
  client?.close();
  await endpoint?.stop();
  await broker?.stop();
});

describe("Telemetry", () => {
  test("a producer's Settings are answered with the server's: backoff, max body size, type validation, metric off", async () => {
    const s = telemetry();
    s.write({ settings: producerSettings });
    const got = (await nextCommand(s)) as TelemetryCommand;
    s.end();
    expect(got.status?.code).toBe(Code.OK);
    expect(got.settings?.publishing?.max_body_size).toBe(4 * 1024 * 1024);
    expect(got.settings?.publishing?.validate_message_type).toBe(true);
    expect(got.settings?.publishing?.topics.map((t) => t.name)).toEqual([TOPIC]);
    expect(got.settings?.backoff_policy?.max_attempts).toBe(3);
    expect(got.settings?.backoff_policy?.exponential_backoff?.multiplier).toBe(2);
    expect(got.settings?.metric?.on).toBe(false);
  });

  test("a consumer's Settings get the batch size, long polling time and a retry strategy", async () => {
    const s = telemetry(md("consumer@1"));
    s.write({
      settings: {
        client_type: 3,
        subscription: { group: { name: "G1" }, subscriptions: [{ topic: { name: TOPIC }, expression: { type: 1, expression: "*" } }] },
      },
    });
    const got = (await nextCommand(s)) as TelemetryCommand;
    s.end();
    expect(got.settings?.subscription?.receive_batch_size).toBe(32);
    expect(got.settings?.subscription?.fifo).toBe(false);
    expect(got.settings?.backoff_policy?.max_attempts).toBe(17);
    expect(got.settings?.backoff_policy?.customized_backoff?.next.length).toBe(18);
  });

  test("Settings with neither publishing nor subscription end the stream with INVALID_ARGUMENT", async () => {
    const s = telemetry(md("nothing@1"));
    s.write({ settings: { client_type: 1 } });
    const got = (await nextCommand(s)) as ServiceError;
    expect(got.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(got.details).toContain("no publishing or subscription");
  });

  test("a Java-sized deadline (60 years) does not end the stream at once", async () => {
    expect(timeoutMs("31535999M")! > MAX_DEADLINE_MS).toBe(true);
    const s = telemetry(md("java@1"), Date.now() + 60 * 365 * 86_400_000);
    s.write({ settings: producerSettings });
    const got = (await nextCommand(s)) as TelemetryCommand;
    s.end();
    expect(got.status?.code).toBe(Code.OK);
  });
});

describe("Heartbeat and NotifyClientTermination", () => {
  test("without Settings: UNRECOGNIZED_CLIENT_TYPE; without a client id: CLIENT_ID_REQUIRED", async () => {
    expect((await call<StatusResponse>("Heartbeat", { client_type: 1 }, md("unknown@1"))).status.code).toBe(Code.UNRECOGNIZED_CLIENT_TYPE);
    expect((await call<StatusResponse>("Heartbeat", { client_type: 1 }, md(""))).status.code).toBe(Code.CLIENT_ID_REQUIRED);
    expect((await call<StatusResponse>("NotifyClientTermination", {}, md("unknown@1"))).status.code).toBe(Code.UNRECOGNIZED_CLIENT_TYPE);
  });

  test("after Settings: OK while the stream is open; terminated, the settings are gone", async () => {
    const s = telemetry(md("hb@1"));
    s.write({ settings: producerSettings });
    await nextCommand(s);
    expect((await call<StatusResponse>("Heartbeat", { client_type: 1 }, md("hb@1"))).status.code).toBe(Code.OK);
    expect((await call<StatusResponse>("NotifyClientTermination", {}, md("hb@1"))).status.code).toBe(Code.OK);
    expect((await call<StatusResponse>("Heartbeat", { client_type: 1 }, md("hb@1"))).status.code).toBe(Code.UNRECOGNIZED_CLIENT_TYPE);
    s.end();
  });
});

describe("QueryRoute", () => {
  test("this broker's queues, numbered and permissioned as the proxy does, with the endpoint's own address", async () => {
    const res = await call<QueryRouteResponse>("QueryRoute", {
      topic: { name: TOPIC },
      endpoints: { scheme: 1, addresses: [{ host: "127.0.0.1", port: 1 }] },
    });
    expect(res.status.code).toBe(Code.OK);
    expect(res.message_queues.map((q) => [q.id, q.permission])).toEqual([0, 1, 2, 3].map((i) => [i, Permission.READ_WRITE]));
    const q = res.message_queues[0]!;
    expect(q.broker.name).toBe("broker-a");
    expect(q.broker.id).toBe(0);
    expect(q.broker.endpoints.addresses).toEqual([{ host: "127.0.0.1", port: endpoint.port }]);
    expect(q.accept_message_types).toEqual([MessageType.NORMAL]);
  });

  test("unknown topic: TOPIC_NOT_FOUND; illegal or system topic: ILLEGAL_TOPIC; no client id: CLIENT_ID_REQUIRED", async () => {
    expect((await call<QueryRouteResponse>("QueryRoute", { topic: { name: "NoSuchTopic" } })).status.code).toBe(Code.TOPIC_NOT_FOUND);
    expect((await call<QueryRouteResponse>("QueryRoute", { topic: { name: "bad topic!" } })).status.code).toBe(Code.ILLEGAL_TOPIC);
    expect((await call<QueryRouteResponse>("QueryRoute", { topic: { name: "TBW102" } })).status.code).toBe(Code.ILLEGAL_TOPIC);
    expect((await call<QueryRouteResponse>("QueryRoute", {})).status.code).toBe(Code.ILLEGAL_TOPIC);
    expect((await call<QueryRouteResponse>("QueryRoute", { topic: { name: TOPIC } }, md(""))).status.code).toBe(Code.CLIENT_ID_REQUIRED);
  });
});

describe("SendMessage", () => {
  test("stores the message through the broker's send: topic, tags, keys, properties and body read back over PULL", async () => {
    const res = await call<SendMessageResponse>("SendMessage", { messages: [message()] } satisfies SendMessageRequest);
    expect(res.status).toEqual({ code: Code.OK, message: "OK" });
    const entry = res.entries[0]!;
    expect(entry.message_id).toBe("01AABBCCDDEEFF0011223344556677889900");
    let found = false;
    for (let queueId = 0; queueId < 4 && !found; queueId++) {
      const records = pulledRecords(await broker.call(pullRequest(TOPIC, { queueId, offset: 0 })));
      for (const r of records) {
        const p = parseProperties(r.properties);
        if (p.UNIQ_KEY !== entry.message_id) continue;
        found = true;
        expect(r.topic).toBe(TOPIC);
        expect(r.queueOffset).toBe(Number(entry.offset));
        expect(new TextDecoder().decode(r.body)).toBe("hello grpc");
        expect(p.TAGS).toBe("TagA");
        expect(p.KEYS).toBe("k1 k2");
        expect(p.color).toBe("blue");
        expect(p.PGROUP).toBe(TOPIC);
        expect(p.__BORNHOST).toBe("host-a");
        expect(p.BORN_TIMESTAMP).toBe("1700000000005");
        expect(r.bornTimestamp).toBe(1_700_000_000_005);
      }
    }
    expect(found).toBe(true);
  });

  test("round-robin spreads messages without a group over the write queues", async () => {
    const queues = new Set<number>();
    for (let i = 0; i < 8; i++) {
      const res = await call<SendMessageResponse>("SendMessage", { messages: [message({ id: `RR${i}` })] });
      expect(res.status.code).toBe(Code.OK);
      queues.add(queueOf(`RR${i}`, await pulledIds()));
    }
    expect(queues.size).toBe(4);
  });

  test("bad requests answer the proxy's codes", async () => {
    const cases: [unknown, number][] = [
      [{ messages: [] }, Code.MESSAGE_CORRUPTED],
      [{ messages: [message(), message({ topic: { name: "Other" } })] }, Code.MESSAGE_CORRUPTED],
      [{ messages: [message({ topic: { name: "a b" } })] }, Code.ILLEGAL_TOPIC],
      [{ messages: [message({ body: new Uint8Array(0) })] }, Code.MESSAGE_BODY_EMPTY],
      [{ messages: [message({ body: new Uint8Array(4 * 1024 * 1024 + 1) })] }, Code.MESSAGE_BODY_TOO_LARGE],
      [{ messages: [message({ user_properties: { TAGS: "x" } })] }, Code.ILLEGAL_MESSAGE_PROPERTY_KEY],
      [{ messages: [message({ user_properties: { k: "a\u0001" } })] }, Code.ILLEGAL_MESSAGE_PROPERTY_KEY],
      [
        { messages: [message({ user_properties: Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`p${i}`, "v"])) })] },
        Code.MESSAGE_PROPERTIES_TOO_LARGE,
      ],
      [{ messages: [message({ user_properties: { big: "x".repeat(17_000) } })] }, Code.MESSAGE_PROPERTIES_TOO_LARGE],
      [{ messages: [withSystem({ tag: "a|b" })] }, Code.ILLEGAL_MESSAGE_TAG],
      [{ messages: [withSystem({ keys: ["  "] })] }, Code.ILLEGAL_MESSAGE_KEY],
      [{ messages: [withSystem({ message_id: "" })] }, Code.ILLEGAL_MESSAGE_ID],
      [{ messages: [withSystem({ delivery_timestamp: { seconds: Math.floor(Date.now() / 1000) + 2 * 86_400 } })] }, Code.ILLEGAL_DELIVERY_TIME],
      [{ messages: [withSystem({ message_group: "g".repeat(64) })] }, Code.ILLEGAL_MESSAGE_GROUP],
      [{ messages: [withSystem({ message_group: "g1" })] }, Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE],
      [{ messages: [message({ topic: { name: "NoSuchTopic" } })] }, Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE],
    ];
    for (const [i, [req, code]] of cases.entries()) {
      const res = await call<SendMessageResponse>("SendMessage", req);
      expect([i, res.status.code]).toEqual([i, code]);
    }
    expect((await call<SendMessageResponse>("SendMessage", { messages: [message()] }, md(""))).status.code).toBe(Code.CLIENT_ID_REQUIRED);
  });
});

describe("transport", () => {
  test("an RPC the endpoint does not serve yet is UNIMPLEMENTED", async () => {
    const e = await call("GetOffset", {}).catch((x: ServiceError) => x);
    expect((e as ServiceError).code).toBe(GrpcStatus.UNIMPLEMENTED);
  });

  test("a TLS ClientHello without a certificate is closed, and the port keeps serving", async () => {
    const closed = await new Promise<boolean>((resolve) => {
      const s = connect(endpoint.port, "127.0.0.1", () => s.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 1, 0, 0, 1, 0])));
      s.on("close", () => resolve(true));
      s.on("error", () => {});
      setTimeout(() => resolve(false), 3000);
    });
    expect(closed).toBe(true);
    expect((await call<QueryRouteResponse>("QueryRoute", { topic: { name: TOPIC } })).status.code).toBe(Code.OK);
  });
});

describe("queue selection", () => {
  test("Java String.hashCode and Guava consistentHash", () => {
    expect(javaStringHash("hello")).toBe(99162322);
    expect(javaStringHash("")).toBe(0);
    for (let n = 1; n < 20; n++) expect(consistentHash(javaStringHash("group-7"), n)).toBeLessThan(n);
    // Guava's property: growing the buckets moves a key only to the new bucket.
    for (let n = 2; n < 50; n++) {
      const before = consistentHash(12345, n - 1);
      const after = consistentHash(12345, n);
      expect(after === before || after === n - 1).toBe(true);
    }
  });
});

function withSystem(sp: Partial<NonNullable<GrpcMessage["system_properties"]>>): GrpcMessage {
  const m = message();
  return { ...m, system_properties: { ...m.system_properties!, ...sp } };
}

async function pulledIds(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let queueId = 0; queueId < 4; queueId++) {
    for (const r of pulledRecords(await broker.call(pullRequest(TOPIC, { queueId, offset: 0 }))))
      out.set(parseProperties(r.properties).UNIQ_KEY ?? "", queueId);
  }
  return out;
}

function queueOf(id: string, ids: Map<string, number>): number {
  const q = ids.get(id);
  if (q === undefined) throw new Error(`${id} was not stored`);
  return q;
}
