/**
 * The name server's route requests over the wire, through the in-process name server
 * (./test-support.ts) on virtual time, where route-info-manager.test.ts checks the tables alone:
 * REGISTER_BROKER (plain and compressed bodies, a slave told its master, the CRC and body checks,
 * the ORDER_TOPIC_CONFIG table answered), UNREGISTER_BROKER, broker expiry after
 * namesrv.brokerExpiredMs on the SimClock and on a closed connection, QUERY_DATA_VERSION (changed
 * or not, and the liveness touch), the route, cluster and topic lists, DELETE_TOPIC_IN_NAMESRV and
 * the write-permission requests. Each answer's code is checked, and the state after through
 * GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO and the controller's info.
 */
import { describe, expect, test } from "bun:test";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../remoting/index.ts";
import type { ClusterInfo, TopicRouteData } from "../protocol/route.ts";
import { NAMESPACE_ORDER_TOPIC_CONFIG } from "../protocol/route.ts";
import { TOPIC_SYS_FLAG_UNIT, TOPIC_SYS_FLAG_UNIT_SUB } from "../protocol/topics.ts";
import { InProcessNamesrv, queryDataVersionRequest, registerBrokerRequest } from "./test-support.ts";

const dec = new TextDecoder();
const enc = new TextEncoder();
const json = <T>(res: RemotingCommand): T => JSON.parse(dec.decode(res.body)) as T;
/** The answer's code and remark (null when none), compared in one assertion so a failure shows both. */
const answer = (res: RemotingCommand) => ({ code: res.code, remark: res.remark ?? null });

const A = { brokerName: "broker-a", brokerAddr: "10.0.0.1:10911", haServerAddr: "10.0.0.1:10912" };
const A_SLAVE = { brokerName: "broker-a", brokerAddr: "10.0.0.2:10911", haServerAddr: "10.0.0.2:10912", brokerId: 1 };
const B = { brokerName: "broker-b", brokerAddr: "10.0.0.3:10911", haServerAddr: "10.0.0.3:10912" };

const routeRequest = (topic: string) => createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic });

/** The topic's route, or the answer's code when there is none. */
async function route(n: InProcessNamesrv, topic: string): Promise<TopicRouteData | number> {
  const res = await n.call(routeRequest(topic));
  return res.code === ResponseCode.SUCCESS ? json<TopicRouteData>(res) : res.code;
}

async function topicList(n: InProcessNamesrv, cmd: RemotingCommand): Promise<string[]> {
  return json<{ topicList: string[] }>(await n.ok(cmd)).topicList;
}

const liveAddrs = (n: InProcessNamesrv) => n.controller.info.brokers().map((b) => b.brokerAddr);

describe("REGISTER_BROKER", () => {
  test("a master's registration makes its topics routable and the broker live at the clock's time", async () => {
    await using n = InProcessNamesrv.start();
    const res = await n.call(registerBrokerRequest({ ...A, topics: { TopicA: {} } }));
    expect(answer(res)).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(res.extFields ?? {}).toEqual({});
    expect(res.body).toBeUndefined();
    expect(await route(n, "TopicA")).toEqual({
      queueDatas: [{ brokerName: "broker-a", readQueueNums: 4, writeQueueNums: 4, perm: 6, topicSysFlag: 0 }],
      brokerDatas: [{ cluster: "DefaultCluster", brokerName: "broker-a", brokerAddrs: { "0": A.brokerAddr } }],
      filterServerTable: {},
    });
    expect(n.controller.info.brokers()).toMatchObject([{ ...A, brokerId: 0, lastUpdateTimestamp: n.sim.now, dataVersion: { counter: 1, timestamp: 1 } }]);
  });

  test("a slave is answered its master's address and HA address, and joins the route without adding topics", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, topics: { TopicA: {} } }));
    const res = await n.ok(registerBrokerRequest({ ...A_SLAVE, topics: { TopicFromSlave: {} } }));
    expect(res.extFields).toMatchObject({ masterAddr: A.brokerAddr, haServerAddr: A.haServerAddr });
    expect(await route(n, "TopicA")).toMatchObject({ brokerDatas: [{ brokerAddrs: { "0": A.brokerAddr, "1": A_SLAVE.brokerAddr } }] });
    expect(await route(n, "TopicFromSlave")).toBe(ResponseCode.TOPIC_NOT_EXIST);
  });

  test("a slave registering before its master is answered no master address", async () => {
    await using n = InProcessNamesrv.start();
    const res = await n.ok(registerBrokerRequest(A_SLAVE));
    expect(res.extFields?.masterAddr).toBeUndefined();
    expect(liveAddrs(n)).toEqual([A_SLAVE.brokerAddr]);
  });

  test("the compressed body registers the same topics", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, compressed: true, topics: { TopicA: { readQueueNums: 8, writeQueueNums: 2 } } }));
    expect(await route(n, "TopicA")).toMatchObject({ queueDatas: [{ brokerName: "broker-a", readQueueNums: 8, writeQueueNums: 2, perm: 6 }] });
  });

  test("the answer carries the ORDER_TOPIC_CONFIG table when the KV store has one", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(createRequest(RequestCode.PUT_KV_CONFIG, { namespace: NAMESPACE_ORDER_TOPIC_CONFIG, key: "TopicA", value: "broker-a:4" }));
    const res = await n.ok(registerBrokerRequest({ ...A, topics: { TopicA: {} } }));
    expect(json(res)).toEqual({ table: { TopicA: "broker-a:4" } });
  });

  test("a body whose CRC does not match is SYSTEM_ERROR 'crc32 not match' and registers nothing", async () => {
    await using n = InProcessNamesrv.start();
    const req = registerBrokerRequest({ ...A, topics: { TopicA: {} } });
    req.extFields!.bodyCrc32 = String((Number(req.extFields!.bodyCrc32) + 1) & 0x7fffffff);
    expect(answer(await n.call(req))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "crc32 not match" });
    expect(liveAddrs(n)).toEqual([]);
    expect(await route(n, "TopicA")).toBe(ResponseCode.TOPIC_NOT_EXIST);
  });

  test("a body that does not decode is SYSTEM_ERROR with the reason and registers nothing", async () => {
    await using n = InProcessNamesrv.start();
    const bad = enc.encode("{not json");
    const req = createRequest(RequestCode.REGISTER_BROKER, { ...A, clusterName: "DefaultCluster", brokerId: "0", compressed: "false" }, bad);
    const res = await n.call(req);
    expect(res.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(res.remark).toStartWith("register body does not decode");
    const compressed = registerBrokerRequest({ ...A, compressed: true });
    compressed.body = enc.encode("not zlib");
    delete compressed.extFields!.bodyCrc32;
    expect((await n.call(compressed)).code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(liveAddrs(n)).toEqual([]);
  });

  test("a header without brokerName is SYSTEM_ERROR naming the field, as Java's header decoding refuses it", async () => {
    await using n = InProcessNamesrv.start();
    const req = registerBrokerRequest(A);
    delete req.extFields!.brokerName;
    expect(answer(await n.call(req))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "the custom field <brokerName> is null" });
    expect(liveAddrs(n)).toEqual([]);
  });

  test("a master's topics change only with a new data version", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, topics: { T1: {} }, dataVersion: { counter: 1, timestamp: 1 } }));
    await n.ok(registerBrokerRequest({ ...A, topics: { T1: {}, T2: {} }, dataVersion: { counter: 1, timestamp: 1 } }));
    expect(await route(n, "T2")).toBe(ResponseCode.TOPIC_NOT_EXIST);
    await n.ok(registerBrokerRequest({ ...A, topics: { T1: {}, T2: {} }, dataVersion: { counter: 2, timestamp: 5 } }));
    expect(await route(n, "T2")).toMatchObject({ brokerDatas: [{ brokerName: "broker-a" }] });
    expect(n.controller.info.brokers()[0]!.dataVersion).toEqual({ counter: 2, timestamp: 5 });
  });
});

describe("UNREGISTER_BROKER", () => {
  const unregister = (o: { brokerName: string; brokerAddr: string }, brokerId = 0) =>
    createRequest(RequestCode.UNREGISTER_BROKER, { clusterName: "DefaultCluster", brokerName: o.brokerName, brokerAddr: o.brokerAddr, brokerId: String(brokerId) });

  test("the broker leaves the cluster, and its last address takes its topics with it", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, topics: { TopicA: {} } }));
    await n.ok(registerBrokerRequest({ ...B, topics: { TopicB: {} } }));
    expect(answer(await n.call(unregister(A)))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(liveAddrs(n)).toEqual([B.brokerAddr]);
    expect(await route(n, "TopicA")).toBe(ResponseCode.TOPIC_NOT_EXIST);
    expect(n.controller.info.cluster()).toEqual({
      brokerAddrTable: { "broker-b": { cluster: "DefaultCluster", brokerName: "broker-b", brokerAddrs: { "0": B.brokerAddr } } },
      clusterAddrTable: { DefaultCluster: ["broker-b"] },
    });
  });

  test("a slave leaving keeps the master's route", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, topics: { TopicA: {} } }));
    await n.ok(registerBrokerRequest(A_SLAVE));
    await n.ok(unregister(A_SLAVE, 1));
    expect(await route(n, "TopicA")).toMatchObject({ brokerDatas: [{ brokerAddrs: { "0": A.brokerAddr } }] });
    expect(liveAddrs(n)).toEqual([A.brokerAddr]);
  });

  test("an unknown broker is SUCCESS and changes nothing; a header without brokerId is SYSTEM_ERROR", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, topics: { TopicA: {} } }));
    expect((await n.call(unregister(B))).code).toBe(ResponseCode.SUCCESS);
    const noId = unregister(A);
    delete noId.extFields!.brokerId;
    expect(answer(await n.call(noId))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "the custom field <brokerId> is null" });
    expect(liveAddrs(n)).toEqual([A.brokerAddr]);
  });
});

describe("broker liveness on virtual time", () => {
  test("a silent broker is dropped by the first scan after namesrv.brokerExpiredMs, not before", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, topics: { TopicA: {} } }));
    // The scan runs every brokerScanIntervalMs (10 s) and drops silence longer than 120 s.
    await n.advance(120_000);
    expect(liveAddrs(n)).toEqual([A.brokerAddr]);
    expect(n.controller.info.brokers()[0]!.silentForMs).toBe(120_000);
    await n.advance(10_000);
    expect(liveAddrs(n)).toEqual([]);
    expect(await route(n, "TopicA")).toBe(ResponseCode.TOPIC_NOT_EXIST);
  });

  test("a registration renews the broker's lease", async () => {
    await using n = InProcessNamesrv.start({ namesrv: { brokerExpiredMs: 30_000, brokerScanIntervalMs: 1_000 } });
    await n.ok(registerBrokerRequest(A));
    for (let i = 0; i < 5; i++) {
      await n.advance(25_000);
      await n.ok(registerBrokerRequest(A));
    }
    expect(liveAddrs(n)).toEqual([A.brokerAddr]);
    await n.advance(31_000);
    expect(liveAddrs(n)).toEqual([]);
  });

  test("the close of the connection a broker registered on removes it at once", async () => {
    await using n = InProcessNamesrv.start();
    const broker = n.client();
    await broker.invoke(n.addr, registerBrokerRequest({ ...A, topics: { TopicA: {} } }), 10_000);
    await n.ok(registerBrokerRequest(B));
    expect(liveAddrs(n)).toEqual([A.brokerAddr, B.brokerAddr]);
    await broker.close();
    await n.advance(0);
    expect(liveAddrs(n)).toEqual([B.brokerAddr]);
    expect(await route(n, "TopicA")).toBe(ResponseCode.TOPIC_NOT_EXIST);
  });
});

describe("QUERY_DATA_VERSION", () => {
  const V1 = { counter: 1, timestamp: 1 };
  const V2 = { counter: 2, timestamp: 7 };

  test("the same version is changed=false, answers the name server's version and renews the lease", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, dataVersion: V1 }));
    await n.advance(100_000);
    const res = await n.ok(queryDataVersionRequest({ ...A, dataVersion: V1 }));
    expect(res.extFields?.changed).toBe("false");
    expect(json(res)).toEqual(V1);
    expect(n.controller.info.brokers()[0]!.lastUpdateTimestamp).toBe(n.sim.now);
    await n.advance(30_000);
    expect(liveAddrs(n)).toEqual([A.brokerAddr]);
  });

  test("another version is changed=true and does not renew the lease", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, dataVersion: V1 }));
    const registeredAt = n.sim.now;
    await n.advance(100_000);
    const res = await n.ok(queryDataVersionRequest({ ...A, dataVersion: V2 }));
    expect(res.extFields?.changed).toBe("true");
    expect(json(res)).toEqual(V1);
    expect(n.controller.info.brokers()[0]!.lastUpdateTimestamp).toBe(registeredAt);
    await n.advance(30_000);
    expect(liveAddrs(n)).toEqual([]);
  });

  test("after a re-registration with a new version, the new one is unchanged and the old one changed", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, dataVersion: V1 }));
    await n.ok(registerBrokerRequest({ ...A, dataVersion: V2 }));
    expect((await n.ok(queryDataVersionRequest({ ...A, dataVersion: V2 }))).extFields?.changed).toBe("false");
    expect((await n.ok(queryDataVersionRequest({ ...A, dataVersion: V1 }))).extFields?.changed).toBe("true");
  });

  test("an unknown broker is changed=true with no body; a body that is not JSON is SYSTEM_ERROR", async () => {
    await using n = InProcessNamesrv.start();
    const res = await n.ok(queryDataVersionRequest({ ...B, dataVersion: V1 }));
    expect(res.extFields?.changed).toBe("true");
    expect(res.body).toBeUndefined();
    const bad = queryDataVersionRequest({ ...A, dataVersion: V1 });
    bad.body = enc.encode("{counter:");
    expect((await n.call(bad)).code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(liveAddrs(n)).toEqual([]);
  });
});

describe("routes, cluster and topic lists", () => {
  /** broker-a in ClusterA with TopicA and Shared, broker-b in ClusterB with TopicB and Shared. */
  async function twoClusters(n: InProcessNamesrv): Promise<void> {
    await n.ok(registerBrokerRequest({ ...A, clusterName: "ClusterA", topics: { TopicA: {}, Shared: {} } }));
    await n.ok(registerBrokerRequest({ ...B, clusterName: "ClusterB", topics: { TopicB: {}, Shared: { perm: 4 } } }));
  }

  test("GET_ROUTEINFO_BY_TOPIC: a topic on two brokers lists both; an unknown topic is TOPIC_NOT_EXIST; no topic field is SYSTEM_ERROR", async () => {
    await using n = InProcessNamesrv.start();
    await twoClusters(n);
    expect(await route(n, "Shared")).toEqual({
      queueDatas: [
        { brokerName: "broker-a", readQueueNums: 4, writeQueueNums: 4, perm: 6, topicSysFlag: 0 },
        { brokerName: "broker-b", readQueueNums: 4, writeQueueNums: 4, perm: 4, topicSysFlag: 0 },
      ],
      brokerDatas: [
        { cluster: "ClusterA", brokerName: "broker-a", brokerAddrs: { "0": A.brokerAddr } },
        { cluster: "ClusterB", brokerName: "broker-b", brokerAddrs: { "0": B.brokerAddr } },
      ],
      filterServerTable: {},
    });
    expect(answer(await n.call(routeRequest("Nope")))).toEqual({
      code: ResponseCode.TOPIC_NOT_EXIST,
      remark: "No topic route info in name server for the topic: Nope",
    });
    expect(answer(await n.call(createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, {})))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "the custom field <topic> is null",
    });
  });

  test("GET_BROKER_CLUSTER_INFO: every broker name with its addresses, every cluster with its broker names", async () => {
    await using n = InProcessNamesrv.start();
    expect(json(await n.ok(createRequest(RequestCode.GET_BROKER_CLUSTER_INFO)))).toEqual({ brokerAddrTable: {}, clusterAddrTable: {} });
    await twoClusters(n);
    await n.ok(registerBrokerRequest({ ...A_SLAVE, clusterName: "ClusterA" }));
    expect(json<ClusterInfo>(await n.ok(createRequest(RequestCode.GET_BROKER_CLUSTER_INFO)))).toEqual({
      brokerAddrTable: {
        "broker-a": { cluster: "ClusterA", brokerName: "broker-a", brokerAddrs: { "0": A.brokerAddr, "1": A_SLAVE.brokerAddr } },
        "broker-b": { cluster: "ClusterB", brokerName: "broker-b", brokerAddrs: { "0": B.brokerAddr } },
      },
      clusterAddrTable: { ClusterA: ["broker-a"], ClusterB: ["broker-b"] },
    });
  });

  test("GET_ALL_TOPIC_LIST_FROM_NAMESERVER and GET_TOPICS_BY_CLUSTER", async () => {
    await using n = InProcessNamesrv.start();
    expect(await topicList(n, createRequest(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))).toEqual([]);
    await twoClusters(n);
    expect(await topicList(n, createRequest(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))).toEqual(["Shared", "TopicA", "TopicB"]);
    const byCluster = (cluster: string) => topicList(n, createRequest(RequestCode.GET_TOPICS_BY_CLUSTER, { cluster }));
    expect(await byCluster("ClusterA")).toEqual(["Shared", "TopicA"]);
    expect(await byCluster("ClusterB")).toEqual(["Shared", "TopicB"]);
    expect(await byCluster("NoSuchCluster")).toEqual([]);
    expect((await n.call(createRequest(RequestCode.GET_TOPICS_BY_CLUSTER, {}))).code).toBe(ResponseCode.SYSTEM_ERROR);
  });

  test("GET_SYSTEM_TOPIC_LIST_FROM_NS: the cluster and broker names, and a master's address", async () => {
    await using n = InProcessNamesrv.start();
    expect(json(await n.ok(createRequest(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)))).toEqual({ topicList: [] });
    await twoClusters(n);
    expect(json(await n.ok(createRequest(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)))).toEqual({
      topicList: ["ClusterA", "ClusterB", "broker-a", "broker-b"],
      brokerAddr: A.brokerAddr,
    });
  });

  test("GET_UNIT_TOPIC_LIST, GET_HAS_UNIT_SUB_TOPIC_LIST and GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST pick by the topics' sys flags", async () => {
    await using n = InProcessNamesrv.start();
    const both = TOPIC_SYS_FLAG_UNIT | TOPIC_SYS_FLAG_UNIT_SUB;
    await n.ok(
      registerBrokerRequest({
        ...A,
        topics: { Plain: {}, Unit: { topicSysFlag: TOPIC_SYS_FLAG_UNIT }, UnitSub: { topicSysFlag: TOPIC_SYS_FLAG_UNIT_SUB }, Both: { topicSysFlag: both } },
      }),
    );
    expect(await topicList(n, createRequest(RequestCode.GET_UNIT_TOPIC_LIST))).toEqual(["Both", "Unit"]);
    expect(await topicList(n, createRequest(RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST))).toEqual(["Both", "UnitSub"]);
    expect(await topicList(n, createRequest(RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST))).toEqual(["UnitSub"]);
  });
});

describe("DELETE_TOPIC_IN_NAMESRV", () => {
  const del = (ext: Record<string, string>) => createRequest(RequestCode.DELETE_TOPIC_IN_NAMESRV, ext);

  test("without a cluster the whole topic goes; with one only its brokers' queues go", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, clusterName: "ClusterA", topics: { TopicA: {}, Shared: {} } }));
    await n.ok(registerBrokerRequest({ ...B, clusterName: "ClusterB", topics: { Shared: {} } }));
    expect(answer(await n.call(del({ topic: "Shared", clusterName: "ClusterA" })))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(await route(n, "Shared")).toMatchObject({ queueDatas: [{ brokerName: "broker-b" }], brokerDatas: [{ brokerName: "broker-b" }] });
    await n.ok(del({ topic: "TopicA" }));
    expect(await route(n, "TopicA")).toBe(ResponseCode.TOPIC_NOT_EXIST);
    expect(n.controller.info.topics()).toEqual(["Shared"]);
    // The brokers stay registered: only routes were deleted.
    expect(liveAddrs(n)).toEqual([A.brokerAddr, B.brokerAddr]);
  });

  test("an unknown topic is SUCCESS; no topic field is SYSTEM_ERROR and deletes nothing", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, topics: { TopicA: {} } }));
    expect((await n.call(del({ topic: "Nope" }))).code).toBe(ResponseCode.SUCCESS);
    expect(answer(await n.call(del({})))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "the custom field <topic> is null" });
    expect(n.controller.info.topics()).toEqual(["TopicA"]);
  });
});

describe("WIPE_WRITE_PERM_OF_BROKER and ADD_WRITE_PERM_OF_BROKER", () => {
  const perms = async (n: InProcessNamesrv, topic: string) => {
    const r = await route(n, topic);
    return typeof r === "number" ? r : r.queueDatas.map((q) => `${q.brokerName}:${q.perm}`);
  };

  test("wipe takes the write bit off the broker's queues and counts them; add puts it back; other brokers keep theirs", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, topics: { T1: {}, Shared: {} } }));
    await n.ok(registerBrokerRequest({ ...B, topics: { Shared: {} } }));
    const wipe = await n.ok(createRequest(RequestCode.WIPE_WRITE_PERM_OF_BROKER, { brokerName: "broker-a" }));
    expect(wipe.extFields?.wipeTopicCount).toBe("2");
    expect(await perms(n, "T1")).toEqual(["broker-a:4"]);
    expect(await perms(n, "Shared")).toEqual(["broker-a:4", "broker-b:6"]);
    const add = await n.ok(createRequest(RequestCode.ADD_WRITE_PERM_OF_BROKER, { brokerName: "broker-a" }));
    expect(add.extFields?.addTopicCount).toBe("2");
    expect(await perms(n, "Shared")).toEqual(["broker-a:6", "broker-b:6"]);
  });

  test("an unknown broker counts 0; no brokerName is SYSTEM_ERROR", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(registerBrokerRequest({ ...A, topics: { T1: {} } }));
    expect((await n.ok(createRequest(RequestCode.WIPE_WRITE_PERM_OF_BROKER, { brokerName: "nobody" }))).extFields?.wipeTopicCount).toBe("0");
    expect((await n.ok(createRequest(RequestCode.ADD_WRITE_PERM_OF_BROKER, { brokerName: "nobody" }))).extFields?.addTopicCount).toBe("0");
    expect((await n.call(createRequest(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {}))).code).toBe(ResponseCode.SYSTEM_ERROR);
    expect((await n.call(createRequest(RequestCode.ADD_WRITE_PERM_OF_BROKER, {}))).code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(await perms(n, "T1")).toEqual(["broker-a:6"]);
  });
});
