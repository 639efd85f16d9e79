/**
 * Server-side rebalance and consume modes (./query-assignment.ts, docs/PROTOCOL.md §3.22) through
 * the in-process broker (../test-support.ts): SET_MESSAGE_REQUEST_MODE's refusals in Java's order
 * and its table kept across a restart; GET_ALL_MESSAGE_REQUEST_MODE's body, and a slave adopting
 * it; QUERY_ASSIGNMENT's allocation for members registered by heartbeat, checked against the
 * assignments RocketMQ 5.3.3's AllocateMessageQueueAveragely, ...ByCircle and allocate4Pop give
 * (worked out by hand from the Java source); the queues of every broker in the name server's
 * route, cached 30 s, and this broker's own when the name server has none.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jsonBytes } from "../../common/json.ts";
import { recordingLogger, MemNetwork } from "../../remoting/test-support.ts";
import {
  createRequest,
  createResponse,
  REMOTING_CLIENT_DEFAULTS,
  RemotingClient,
  RemotingServer,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
} from "../../remoting/index.ts";
import { ConsumerOffsetManager, DelayOffsetManager, SubscriptionGroupManager, TopicConfigManager } from "../metadata.ts";
import { MessageRequestModeManager } from "../message-request-mode.ts";
import { SlaveSynchronize } from "../slave-sync.ts";
import { createTopicRequest, FAKE_NAMESRV_ADDR, fakeNamesrv, heartbeatRequest, InProcessBroker } from "../test-support.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

const answer = (res: RemotingCommand) => ({ code: res.code, remark: res.remark ?? null });
const json = <T = Record<string, unknown>>(res: RemotingCommand): T => JSON.parse(dec.decode(res.body)) as T;
const setMode = (o: object) => createRequest(RequestCode.SET_MESSAGE_REQUEST_MODE, undefined, enc.encode(JSON.stringify(o)));
const getAll = () => createRequest(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE);
const query = (o: object) =>
  createRequest(RequestCode.QUERY_ASSIGNMENT, undefined, enc.encode(JSON.stringify({ messageModel: "CLUSTERING", strategyName: "AVG", ...o })));

interface Assignment {
  messageQueue: { brokerName: string; queueId: number; topic: string };
  mode: string;
}

/** The assignments as "broker:queueId/mode", in the answer's order; null when the answer has no field. */
async function assigned(b: InProcessBroker, o: object): Promise<string[] | null> {
  const body = json<{ messageQueueAssignments?: Assignment[] }>(await b.ok(query(o)));
  return body.messageQueueAssignments?.map((a) => `${a.messageQueue.brokerName}:${a.messageQueue.queueId}/${a.mode}`) ?? null;
}

const queues = (ids: number[], mode = "PULL", broker = "broker-a") => ids.map((q) => `${broker}:${q}/${mode}`);

/**
 * Members of `group` by heartbeat, each on its own connection as separate processes are. Time
 * moves while one waits: with a name server, a new group's first heartbeat is answered once its
 * retry topic's registration (20 ms later) was.
 */
async function members(b: InProcessBroker, group: string, ids: string[]): Promise<void> {
  for (const id of ids) {
    let done = false;
    const res = b
      .client()
      .invoke(b.addr, heartbeatRequest(id, { group, subs: [{ topic: "T", expr: "*" }] }), 5000)
      .finally(() => (done = true));
    for (await Bun.sleep(1); !done; await Bun.sleep(1)) await b.advance(5);
    expect((await res).code).toBe(ResponseCode.SUCCESS);
  }
}

describe("SET_MESSAGE_REQUEST_MODE", () => {
  test("Java's refusals in Java's order; an unknown group is created as auto-creation does", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 4));
    const entry = { topic: "T", consumerGroup: "G", mode: "POP", popShareQueueNum: 0 };
    expect(answer(await b.call(setMode({ ...entry, topic: "%RETRY%G" })))).toEqual({
      code: ResponseCode.NO_PERMISSION,
      remark: "retry topic is not allowed to set mode",
    });
    expect(answer(await b.call(setMode({ ...entry, topic: "Nope" })))).toEqual({
      code: ResponseCode.TOPIC_NOT_EXIST,
      remark: "topic[Nope] not exist",
    });
    // A name auto-creation refuses: no group to set the mode of.
    expect(answer(await b.call(setMode({ ...entry, consumerGroup: "bad group!" })))).toEqual({
      code: ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
      remark: "subscription group does not exist",
    });
    expect(answer(await b.call(createRequest(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, { group: "G" }))).code).toBe(
      ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
    );
    expect(answer(await b.call(setMode(entry)))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect((await b.call(createRequest(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, { group: "G" }))).code).toBe(ResponseCode.SUCCESS);
    // Nothing refused was stored.
    expect(json(await b.ok(getAll()))).toEqual({
      messageRequestModeMap: { T: { G: { consumerGroup: "G", mode: "POP", popShareQueueNum: 0, topic: "T" } } },
    });
  });

  test("a body that does not decode is SYSTEM_ERROR with the reason; mode and popShareQueueNum default as in Java", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 4));
    expect(answer(await b.call(createRequest(RequestCode.SET_MESSAGE_REQUEST_MODE)))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "bad SetMessageRequestModeRequestBody: the request has no body",
    });
    expect(answer(await b.call(setMode({ topic: "T", consumerGroup: "G", mode: "PUSH" })))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: 'bad SetMessageRequestModeRequestBody: mode: expected PULL or POP, got "PUSH"',
    });
    expect(answer(await b.call(setMode({ topic: "T", mode: "POP" })))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "bad SetMessageRequestModeRequestBody: consumerGroup is missing",
    });
    await b.ok(setMode({ topic: "T", consumerGroup: "G" }));
    expect(json(await b.ok(getAll()))).toEqual({
      messageRequestModeMap: { T: { G: { consumerGroup: "G", mode: "PULL", popShareQueueNum: 0, topic: "T" } } },
    });
  });

  test("the table is config/messageRequestMode.json in Java's shape, and a restart on the same dir keeps it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rocketbun-modes-"));
    try {
      {
        await using b = InProcessBroker.start({ dir });
        await b.ok(createTopicRequest("T", 4));
        await b.ok(createTopicRequest("U", 2));
        await b.ok(setMode({ topic: "T", consumerGroup: "G", mode: "POP", popShareQueueNum: 2 }));
        await b.ok(setMode({ topic: "T", consumerGroup: "H", mode: "POP", popShareQueueNum: 0 }));
        await b.ok(setMode({ topic: "U", consumerGroup: "G", mode: "POP", popShareQueueNum: 0 }));
        // A second set replaces the first.
        await b.ok(setMode({ topic: "U", consumerGroup: "G", mode: "PULL", popShareQueueNum: 0 }));
      }
      const table = {
        messageRequestModeMap: {
          T: {
            G: { consumerGroup: "G", mode: "POP", popShareQueueNum: 2, topic: "T" },
            H: { consumerGroup: "H", mode: "POP", popShareQueueNum: 0, topic: "T" },
          },
          U: { G: { consumerGroup: "G", mode: "PULL", popShareQueueNum: 0, topic: "U" } },
        },
      };
      expect(JSON.parse(readFileSync(join(dir, "config", "messageRequestMode.json"), "utf8"))).toEqual(table);
      await using again = InProcessBroker.start({ dir });
      expect(json(await again.ok(getAll()))).toEqual(table);
      await members(again, "G", ["c1", "c2"]);
      expect(await assigned(again, { topic: "T", consumerGroup: "G", clientId: "c1" })).toEqual(queues([-1], "POP"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("QUERY_ASSIGNMENT in PULL mode (the default)", () => {
  test("AVG over 8 queues for 1, 2 and 3 members: Java's contiguous runs, the first 8 % n members one more", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 8));
    const q = (clientId: string) => assigned(b, { topic: "T", consumerGroup: "G", clientId });
    await members(b, "G", ["c1"]);
    expect(await q("c1")).toEqual(queues([0, 1, 2, 3, 4, 5, 6, 7]));
    await members(b, "G", ["c2"]);
    expect([await q("c1"), await q("c2")]).toEqual([queues([0, 1, 2, 3]), queues([4, 5, 6, 7])]);
    await members(b, "G", ["c3"]);
    expect([await q("c1"), await q("c2"), await q("c3")]).toEqual([queues([0, 1, 2]), queues([3, 4, 5]), queues([6, 7])]);
    // Not a member (no heartbeat): nothing, but an answer.
    expect(await q("c9")).toEqual([]);
  });

  test("AVG_BY_CIRCLE over 8 queues for 3 members: dealt round like cards", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 8));
    await members(b, "G", ["c3", "c1", "c2"]);
    const q = (clientId: string) => assigned(b, { topic: "T", consumerGroup: "G", clientId, strategyName: "AVG_BY_CIRCLE" });
    expect([await q("c1"), await q("c2"), await q("c3")]).toEqual([queues([0, 3, 6]), queues([1, 4, 7]), queues([2, 5])]);
  });

  test("BROADCASTING gets every queue, member or not; serverLoadBalancerEnable off gives every member every queue", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 3));
    expect(await assigned(b, { topic: "T", consumerGroup: "Nobody", clientId: "x", messageModel: "BROADCASTING" })).toEqual(queues([0, 1, 2]));
    await b.controller.reconfigure({ serverLoadBalancerEnable: false });
    await members(b, "G", ["c1", "c2"]);
    expect(await assigned(b, { topic: "T", consumerGroup: "G", clientId: "c2" })).toEqual(queues([0, 1, 2]));
  });

  test("no assignment (the field left out) for an unknown group, strategy or topic; a bad body is SYSTEM_ERROR", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 4));
    const raw = async (o: object) => dec.decode((await b.ok(query(o))).body);
    expect(await raw({ topic: "T", consumerGroup: "Nobody", clientId: "c1" })).toBe("{}");
    await members(b, "G", ["c1"]);
    expect(await raw({ topic: "T", consumerGroup: "G", clientId: "c1", strategyName: "CONSISTENT_HASH" })).toBe("{}");
    expect(await raw({ topic: "Nope", consumerGroup: "G", clientId: "c1" })).toBe("{}");
    expect(answer(await b.call(query({ topic: "T", consumerGroup: "G", clientId: "c1", messageModel: "BOTH" })))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: 'bad QueryAssignmentRequestBody: messageModel: expected CLUSTERING or BROADCASTING, got "BOTH"',
    });
  });
});

describe("QUERY_ASSIGNMENT in POP mode", () => {
  test("popShareQueueNum ≤ 0: every member gets (topic, broker, -1), once per broker", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 8));
    await members(b, "G", ["c1", "c2", "c3"]);
    for (const n of [0, -1]) {
      await b.ok(setMode({ topic: "T", consumerGroup: "G", mode: "POP", popShareQueueNum: n }));
      for (const c of ["c1", "c2", "c3"]) expect(await assigned(b, { topic: "T", consumerGroup: "G", clientId: c })).toEqual(queues([-1], "POP"));
    }
    const body = json(await b.ok(query({ topic: "T", consumerGroup: "G", clientId: "c1" })));
    expect(body).toEqual({ messageQueueAssignments: [{ messageQueue: { brokerName: "broker-a", queueId: -1, topic: "T" }, mode: "POP" }] });
  });

  test("popShareQueueNum 1, 3 members, 8 queues: a member's AVG share plus the next member's", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 8));
    await members(b, "G", ["c1", "c2", "c3"]);
    await b.ok(setMode({ topic: "T", consumerGroup: "G", mode: "POP", popShareQueueNum: 1 }));
    const q = (clientId: string) => assigned(b, { topic: "T", consumerGroup: "G", clientId });
    expect(await q("c1")).toEqual(queues([0, 1, 2, 3, 4, 5], "POP"));
    expect(await q("c2")).toEqual(queues([3, 4, 5, 6, 7], "POP"));
    expect(await q("c3")).toEqual(queues([0, 1, 2, 6, 7], "POP"));
    // popShareQueueNum ≥ members - 1 is "everyone pops everything".
    await b.ok(setMode({ topic: "T", consumerGroup: "G", mode: "POP", popShareQueueNum: 2 }));
    expect(await q("c2")).toEqual(queues([-1], "POP"));
  });

  test("more members than queues: one queue each, dealt round the queues", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 2));
    await members(b, "G", ["c1", "c2", "c3", "c4"]);
    await b.ok(setMode({ topic: "T", consumerGroup: "G", mode: "POP", popShareQueueNum: 1 }));
    const got = [];
    for (const c of ["c1", "c2", "c3", "c4"]) got.push(await assigned(b, { topic: "T", consumerGroup: "G", clientId: c }));
    expect(got).toEqual([queues([0], "POP"), queues([1], "POP"), queues([0], "POP"), queues([1], "POP")]);
  });

  test("broker.defaultMessageRequestMode POP: a group with no entry pops with defaultPopShareQueueNum; a retry topic is always PULL", async () => {
    await using b = InProcessBroker.start({ broker: { defaultMessageRequestMode: "POP" } });
    await b.ok(createTopicRequest("T", 4));
    await members(b, "G", ["c1", "c2", "c3"]);
    expect(await assigned(b, { topic: "T", consumerGroup: "G", clientId: "c2" })).toEqual(queues([-1], "POP"));
    expect(await assigned(b, { topic: "%RETRY%G", consumerGroup: "G", clientId: "c1" })).toEqual(["broker-a:0/PULL"]);
    await b.controller.reconfigure({ defaultPopShareQueueNum: 1 });
    // AVG of 4 over 3 is [0 1] [2] [3]; c3 adds the next member's (c1's, cyclically).
    expect(await assigned(b, { topic: "T", consumerGroup: "G", clientId: "c3" })).toEqual(queues([0, 1, 3], "POP"));
    await b.controller.reconfigure({ defaultMessageRequestMode: "PULL" });
    expect(await assigned(b, { topic: "T", consumerGroup: "G", clientId: "c3" })).toEqual(queues([3]));
  });
});

describe("the queues of every broker, from the name server", () => {
  /** A topic on two broker groups; the name server counts the route requests. */
  const route = {
    queueDatas: [
      { brokerName: "broker-b", readQueueNums: 2, writeQueueNums: 2, perm: 6, topicSysFlag: 0 },
      { brokerName: "broker-a", readQueueNums: 2, writeQueueNums: 2, perm: 6, topicSysFlag: 0 },
      { brokerName: "broker-c", readQueueNums: 4, writeQueueNums: 4, perm: 2, topicSysFlag: 0 },
    ],
    brokerDatas: [],
    filterServerTable: {},
  };

  test("the route's readable queues are allocated, the route is cached 30 s; TOPIC_NOT_EXIST falls back to this broker's own", async () => {
    const network = new MemNetwork();
    const ns = fakeNamesrv(network);
    const asked: string[] = [];
    ns.server.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, {
      process: (_c, cmd) => {
        const topic = cmd.extFields?.topic ?? "";
        asked.push(topic);
        if (topic !== "T") return createResponse(cmd, ResponseCode.TOPIC_NOT_EXIST, `No topic route info in name server for the topic: ${topic}`);
        return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, jsonBytes(route));
      },
    });
    try {
      await using b = InProcessBroker.start({ network, namesrvAddr: [FAKE_NAMESRV_ADDR] });
      await b.ok(createTopicRequest("Local", 3));
      await members(b, "G", ["c1", "c2"]);
      const q = (topic: string, clientId: string) => assigned(b, { topic, consumerGroup: "G", clientId });
      // a0 a1 b0 b1 (broker-c's queues are not readable), split in two.
      expect(await q("T", "c1")).toEqual(queues([0, 1]));
      expect(await q("T", "c2")).toEqual(queues([0, 1], "PULL", "broker-b"));
      expect(asked).toEqual(["T"]);
      await b.advance(29_000);
      await q("T", "c1");
      expect(asked).toEqual(["T"]);
      await b.advance(1_000);
      await q("T", "c1");
      expect(asked).toEqual(["T", "T"]);
      // Not routed yet (its registration still on its way): this broker's queues.
      expect(await q("Local", "c1")).toEqual(queues([0, 1]));
      expect(await q("Nope", "c1")).toBeNull();
    } finally {
      ns.server.stop();
    }
  });
});

describe("slave sync", () => {
  test("a slave replaces its table with its master's GET_ALL_MESSAGE_REQUEST_MODE body", async () => {
    await using master = InProcessBroker.start();
    await master.ok(createTopicRequest("T", 4));
    await master.ok(createTopicRequest("U", 4));
    const dir = mkdtempSync(join(tmpdir(), "rocketbun-slave-modes-"));
    try {
      const requestModes = new MessageRequestModeManager({ dir });
      requestModes.set({ topic: "Gone", consumerGroup: "G", mode: "POP", popShareQueueNum: 0 });
      const sync = new SlaveSynchronize({
        client: master.client(),
        masterAddr: () => master.addr,
        topics: new TopicConfigManager({ dir }),
        consumerOffsets: new ConsumerOffsetManager({ dir }),
        delayOffsets: new DelayOffsetManager({ dir }),
        groups: new SubscriptionGroupManager({ dir }),
        requestModes,
        log: recordingLogger(),
      });
      await master.ok(setMode({ topic: "T", consumerGroup: "G", mode: "POP", popShareQueueNum: 1 }));
      expect(await sync.syncAll()).toBe(true);
      const masterTable = json(await master.ok(getAll()));
      expect(requestModes.wrapper()).toEqual(masterTable as never);
      expect(requestModes.get("Gone", "G")).toBeUndefined();
      await master.ok(setMode({ topic: "U", consumerGroup: "G", mode: "POP", popShareQueueNum: 0 }));
      expect(await sync.syncAll()).toBe(true);
      expect(requestModes.get("U", "G")?.mode).toBe("POP");
      // Written as the slave's own file: a restart of the slave has it.
      const reloaded = new MessageRequestModeManager({ dir });
      expect(reloaded.load()).toEqual([]);
      expect(reloaded.wrapper()).toEqual(requestModes.wrapper());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a master that does not know 402 (a 4.x broker) has no modes: the round succeeds and the slave's table stays", async () => {
    const network = new MemNetwork();
    const master = new RemotingServer({
      host: "127.0.0.1",
      port: 10999,
      frameSizeMaxBytes: 1 << 20,
      connectionBufferMaxBytes: 1 << 20,
      log: recordingLogger(),
      network,
    });
    const version = { dataVersion: { counter: 1, timestamp: 1 } };
    const bodies: [number, object][] = [
      [RequestCode.GET_ALL_TOPIC_CONFIG, { ...version, topicConfigTable: {} }],
      [RequestCode.GET_ALL_CONSUMER_OFFSET, { offsetTable: {} }],
      [RequestCode.GET_ALL_DELAY_OFFSET, { offsetTable: {} }],
      [RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, { ...version, subscriptionGroupTable: {} }],
    ];
    for (const [code, body] of bodies)
      master.register(code, { process: (_c, cmd) => createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, jsonBytes(body)) });
    master.start();
    const client = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: recordingLogger(), network });
    const dir = mkdtempSync(join(tmpdir(), "rocketbun-slave-modes-"));
    try {
      const requestModes = new MessageRequestModeManager({ dir });
      requestModes.set({ topic: "T", consumerGroup: "G", mode: "POP", popShareQueueNum: 0 });
      const log = recordingLogger();
      const sync = new SlaveSynchronize({
        client,
        masterAddr: () => "127.0.0.1:10999",
        topics: new TopicConfigManager({ dir }),
        consumerOffsets: new ConsumerOffsetManager({ dir }),
        delayOffsets: new DelayOffsetManager({ dir }),
        groups: new SubscriptionGroupManager({ dir }),
        requestModes,
        log,
      });
      expect(await sync.syncAll()).toBe(true);
      expect(requestModes.get("T", "G")?.mode).toBe("POP");
      expect(log.lines.filter((l) => l.level === "warn")).toEqual([]);
    } finally {
      await client.close();
      master.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
