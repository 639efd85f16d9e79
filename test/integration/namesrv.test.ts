/**
 * The compiled binary as a name server, driven over the real wire: the seed deployment
 * (broker-a and broker-b masters plus one slave each, from seeds/000_3ac6b2d8388150aa.txt),
 * routes, cluster info, unregister, connection close, expiry, KV config, and garbage input.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { RemotingClient, RequestCode, ResponseCode, SerializeType, createRequest, encodeCommand } from "../../src/remoting/index.ts";
import { encodeRegisterBrokerBodyCompressed } from "../../src/namesrv/index.ts";
import { type TopicConfig } from "../../src/protocol/topics.ts";
import { type TopicRouteData } from "../../src/protocol/route.ts";
import { startRocketbun, waitFor, type RunningBinary } from "../harness/binary.ts";
import { bodyJson, newClient, registerBrokerRequest, routeRequest, type BrokerIdentity } from "../harness/wire.ts";

const TOPICS: Record<string, TopicConfig> = {
  test: { topicName: "test", readQueueNums: 8, writeQueueNums: 8, perm: 6, order: false, topicFilterType: "SINGLE_TAG", topicSysFlag: 0 },
};

const SEED: BrokerIdentity[] = [
  {
    clusterName: "rocketmq-cluster",
    brokerAddr: "192.168.116.115:10911",
    brokerName: "broker-a",
    brokerId: 0,
    haServerAddr: "192.168.116.115:10912",
  },
  {
    clusterName: "rocketmq-cluster",
    brokerAddr: "192.168.116.116:10911",
    brokerName: "broker-b",
    brokerId: 0,
    haServerAddr: "192.168.116.115:10912",
  },
  {
    clusterName: "rocketmq-cluster",
    brokerAddr: "192.168.116.115:11911",
    brokerName: "broker-b",
    brokerId: 1,
    haServerAddr: "192.168.116.115:11912",
  },
  {
    clusterName: "rocketmq-cluster",
    brokerAddr: "192.168.116.116:11911",
    brokerName: "broker-a",
    brokerId: 1,
    haServerAddr: "192.168.116.115:11912",
  },
];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function namesrv(configYaml?: string): Promise<RunningBinary> {
  const srv = await startRocketbun(configYaml !== undefined ? { role: "namesrv", configYaml } : { role: "namesrv" });
  cleanups.push(() => srv[Symbol.asyncDispose]());
  return srv;
}

function client(): RemotingClient {
  const c = newClient();
  cleanups.push(() => c.close());
  return c;
}

async function registerSeed(addr: string): Promise<RemotingClient[]> {
  const brokers = SEED.map(() => client());
  for (const [i, b] of SEED.entries()) {
    const res = await brokers[i]!.invoke(addr, registerBrokerRequest(b, TOPICS), 3000);
    expect(res.code).toBe(ResponseCode.SUCCESS);
  }
  return brokers;
}

async function route(c: RemotingClient, addr: string, topic = "test") {
  return c.invoke(addr, routeRequest(topic), 3000);
}

describe("name server binary: seed deployment", () => {
  test("route of `test` lists both brokers, 8/8 queues, perm 6, masters and slaves; cluster info groups them", async () => {
    const srv = await namesrv();
    await registerSeed(srv.namesrvAddr);
    const c = client();
    const res = await route(c, srv.namesrvAddr);
    expect(res.code).toBe(ResponseCode.SUCCESS);
    expect(res.serializeType).toBe(SerializeType.JSON);
    const r = bodyJson<TopicRouteData>(res);
    expect(r.queueDatas).toEqual([
      { brokerName: "broker-a", readQueueNums: 8, writeQueueNums: 8, perm: 6, topicSysFlag: 0 },
      { brokerName: "broker-b", readQueueNums: 8, writeQueueNums: 8, perm: 6, topicSysFlag: 0 },
    ]);
    expect(r.brokerDatas).toEqual([
      { cluster: "rocketmq-cluster", brokerName: "broker-a", brokerAddrs: { "0": "192.168.116.115:10911", "1": "192.168.116.116:11911" } },
      { cluster: "rocketmq-cluster", brokerName: "broker-b", brokerAddrs: { "0": "192.168.116.116:10911", "1": "192.168.116.115:11911" } },
    ]);
    expect(r.filterServerTable).toEqual({});

    const ci = await c.invoke(srv.namesrvAddr, createRequest(RequestCode.GET_BROKER_CLUSTER_INFO), 3000);
    const info = bodyJson<{ clusterAddrTable: Record<string, string[]>; brokerAddrTable: Record<string, unknown> }>(ci);
    expect(info.clusterAddrTable).toEqual({ "rocketmq-cluster": ["broker-a", "broker-b"] });
    expect(Object.keys(info.brokerAddrTable).sort()).toEqual(["broker-a", "broker-b"]);

    const topics = await c.invoke(srv.namesrvAddr, createRequest(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), 3000);
    expect(bodyJson<{ topicList: string[] }>(topics).topicList).toEqual(["test"]);
    const byCluster = await c.invoke(srv.namesrvAddr, createRequest(RequestCode.GET_TOPICS_BY_CLUSTER, { cluster: "rocketmq-cluster" }), 3000);
    expect(bodyJson<{ topicList: string[] }>(byCluster).topicList).toEqual(["test"]);

    // The same view over the admin API.
    const http = await fetch(`${srv.adminUrl}/topics/test/route`);
    expect(http.status).toBe(200);
    expect(((await http.json()) as TopicRouteData).brokerDatas).toEqual(r.brokerDatas);
    const cluster = (await (await fetch(`${srv.adminUrl}/cluster`)).json()) as { clusterAddrTable: unknown };
    expect(cluster.clusterAddrTable).toEqual({ "rocketmq-cluster": ["broker-a", "broker-b"] });
    const brokers = (await (await fetch(`${srv.adminUrl}/brokers`)).json()) as { brokers: { brokerAddr: string }[] };
    expect(brokers.brokers.map((b) => b.brokerAddr).sort()).toEqual(SEED.map((b) => b.brokerAddr).sort());
    const missing = await fetch(`${srv.adminUrl}/topics/nope/route`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("TOPIC_NOT_EXIST");
  });

  test("a slave's register result carries its master's address and HA address", async () => {
    const srv = await namesrv();
    const a0 = client();
    const a1 = client();
    await a0.invoke(srv.namesrvAddr, registerBrokerRequest(SEED[0]!, TOPICS), 3000);
    const res = await a1.invoke(srv.namesrvAddr, registerBrokerRequest(SEED[3]!, TOPICS), 3000);
    expect(res.code).toBe(ResponseCode.SUCCESS);
    expect(res.extFields).toEqual({ masterAddr: "192.168.116.115:10911", haServerAddr: "192.168.116.115:10912" });
  });

  test("unknown topic → TOPIC_NOT_EXIST with a remark", async () => {
    const srv = await namesrv();
    const res = await route(client(), srv.namesrvAddr, "nope");
    expect(res.code).toBe(ResponseCode.TOPIC_NOT_EXIST);
    expect(res.remark).toContain("No topic route info in name server for the topic: nope");
  });

  test("unregister and connection close remove brokers; master gone keeps queues on the slave", async () => {
    const srv = await namesrv();
    const brokers = await registerSeed(srv.namesrvAddr);
    const c = client();
    const unreg = createRequest(RequestCode.UNREGISTER_BROKER, {
      brokerName: "broker-a",
      brokerAddr: "192.168.116.115:10911",
      clusterName: "rocketmq-cluster",
      brokerId: "0",
    });
    expect((await brokers[0]!.invoke(srv.namesrvAddr, unreg, 3000)).code).toBe(ResponseCode.SUCCESS);
    let r = bodyJson<TopicRouteData>(await route(c, srv.namesrvAddr));
    expect(r.queueDatas.map((q) => q.brokerName)).toEqual(["broker-a", "broker-b"]);
    expect(r.brokerDatas[0]!.brokerAddrs).toEqual({ "1": "192.168.116.116:11911" });

    // Closing broker-a slave's connection removes it at once: broker-a is gone from the route.
    await brokers[3]!.close();
    r = await waitFor(
      async () => {
        const x = bodyJson<TopicRouteData>(await route(c, srv.namesrvAddr));
        return x.brokerDatas.length === 1 ? x : null;
      },
      5000,
      "broker-a to disappear",
    );
    expect(r.queueDatas.map((q) => q.brokerName)).toEqual(["broker-b"]);

    await brokers[1]!.close();
    await brokers[2]!.close();
    await waitFor(async () => (await route(c, srv.namesrvAddr)).code === ResponseCode.TOPIC_NOT_EXIST, 5000, "topic to disappear");
  });

  test("a broker silent past brokerExpiredMs is dropped by the scan", async () => {
    const srv = await namesrv("namesrv:\n  brokerExpiredMs: 1000\n  brokerScanIntervalMs: 100\n");
    const b = client();
    await b.invoke(srv.namesrvAddr, registerBrokerRequest(SEED[0]!, TOPICS), 3000);
    const c = client();
    expect((await route(c, srv.namesrvAddr)).code).toBe(ResponseCode.SUCCESS);
    const t0 = Date.now();
    await waitFor(async () => (await route(c, srv.namesrvAddr)).code === ResponseCode.TOPIC_NOT_EXIST, 5000, "expiry");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500);
  });

  test("compressed REGISTER_BROKER body is understood", async () => {
    const srv = await namesrv();
    const body = encodeRegisterBrokerBodyCompressed({ dataVersion: { counter: 1, timestamp: 5 }, topicConfigTable: TOPICS, filterServerList: [] });
    const b = SEED[0]!;
    const req = createRequest(
      RequestCode.REGISTER_BROKER,
      {
        brokerName: b.brokerName,
        brokerAddr: b.brokerAddr,
        clusterName: b.clusterName,
        haServerAddr: b.haServerAddr,
        brokerId: "0",
        compressed: "true",
        bodyCrc32: String(Bun.hash.crc32(body) & 0x7fffffff),
      },
      body,
    );
    const c = client();
    expect((await c.invoke(srv.namesrvAddr, req, 3000)).code).toBe(ResponseCode.SUCCESS);
    expect(bodyJson<TopicRouteData>(await route(c, srv.namesrvAddr)).queueDatas[0]!.writeQueueNums).toBe(8);
  });

  test("a body CRC mismatch is refused", async () => {
    const srv = await namesrv();
    const req = registerBrokerRequest(SEED[0]!, TOPICS);
    req.extFields!.bodyCrc32 = "12345";
    const res = await client().invoke(srv.namesrvAddr, req, 3000);
    expect(res.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(res.remark).toBe("crc32 not match");
  });

  test("ROCKETMQ binary requests get ROCKETMQ binary answers; ali-ons-style JSON numbers are accepted", async () => {
    const srv = await namesrv();
    const c = client();
    await c.invoke(srv.namesrvAddr, registerBrokerRequest(SEED[0]!, TOPICS), 3000);
    const bin = createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: "test" }, undefined, SerializeType.ROCKETMQ);
    const res = await c.invoke(srv.namesrvAddr, bin, 3000);
    expect(res.serializeType).toBe(SerializeType.ROCKETMQ);
    expect(res.code).toBe(ResponseCode.SUCCESS);

    // Hand-made ali-ons frame: version 121, numeric extFields values, flag 0.
    const header = new TextEncoder().encode('{"code":105,"language":"JAVA","opaque":42,"flag":0,"version":121,"extFields":{"topic":"test"}}');
    const frame = new Uint8Array(8 + header.length);
    const v = new DataView(frame.buffer);
    v.setUint32(0, 4 + header.length);
    v.setUint32(4, header.length);
    frame.set(header, 8);
    const reply = await rawExchange(srv.ports.namesrv!, frame);
    const hl = new DataView(reply.buffer).getUint32(4);
    expect(hl >>> 24).toBe(0);
    const h = JSON.parse(new TextDecoder().decode(reply.subarray(8, 8 + hl)));
    expect(h).toMatchObject({ code: 0, opaque: 42, flag: 1 });
  });

  test("KV config: put, get, list by namespace, delete; persisted across a restart", async () => {
    const { tempDir } = await import("../harness/binary.ts");
    const dir = tempDir();
    cleanups.push(async () => (await import("node:fs")).rmSync(dir, { recursive: true, force: true }));
    {
      await using srv = await startRocketbun({ role: "namesrv", dir });
      const c = newClient();
      try {
        const put = createRequest(RequestCode.PUT_KV_CONFIG, { namespace: "ORDER_TOPIC_CONFIG", key: "test", value: "broker-a:8;broker-b:8" });
        expect((await c.invoke(srv.namesrvAddr, put, 3000)).code).toBe(ResponseCode.SUCCESS);
        const get = await c.invoke(srv.namesrvAddr, createRequest(RequestCode.GET_KV_CONFIG, { namespace: "ORDER_TOPIC_CONFIG", key: "test" }), 3000);
        expect(get.extFields?.value).toBe("broker-a:8;broker-b:8");
        // A master registering gets the ORDER_TOPIC_CONFIG table back.
        const reg = await c.invoke(srv.namesrvAddr, registerBrokerRequest(SEED[0]!, TOPICS), 3000);
        expect(bodyJson(reg)).toEqual({ table: { test: "broker-a:8;broker-b:8" } });
      } finally {
        await c.close();
      }
    }
    {
      await using srv = await startRocketbun({ role: "namesrv", dir });
      const c = newClient();
      try {
        const list = await c.invoke(srv.namesrvAddr, createRequest(RequestCode.GET_KVLIST_BY_NAMESPACE, { namespace: "ORDER_TOPIC_CONFIG" }), 3000);
        expect(bodyJson(list)).toEqual({ table: { test: "broker-a:8;broker-b:8" } });
        await c.invoke(srv.namesrvAddr, createRequest(RequestCode.DELETE_KV_CONFIG, { namespace: "ORDER_TOPIC_CONFIG", key: "test" }), 3000);
        const miss = await c.invoke(
          srv.namesrvAddr,
          createRequest(RequestCode.GET_KV_CONFIG, { namespace: "ORDER_TOPIC_CONFIG", key: "test" }),
          3000,
        );
        expect(miss.code).toBe(ResponseCode.QUERY_NOT_FOUND);
      } finally {
        await c.close();
      }
    }
  });

  test("wipe write perm of a broker shows in the route", async () => {
    const srv = await namesrv();
    await registerSeed(srv.namesrvAddr);
    const c = client();
    const res = await c.invoke(srv.namesrvAddr, createRequest(RequestCode.WIPE_WRITE_PERM_OF_BROKER, { brokerName: "broker-a" }), 3000);
    expect(res.extFields?.wipeTopicCount).toBe("1");
    const r = bodyJson<TopicRouteData>(await route(c, srv.namesrvAddr));
    expect(r.queueDatas.find((q) => q.brokerName === "broker-a")!.perm).toBe(4);
  });
});

describe("name server binary: its own configuration over the wire", () => {
  test("GET_NAMESRV_CONFIG lists its keys; UPDATE_NAMESRV_CONFIG applies live keys and refuses the rest, changing nothing", async () => {
    const srv = await namesrv();
    const c = client();
    const get = async () => {
      const res = await c.invoke(srv.namesrvAddr, createRequest(RequestCode.GET_NAMESRV_CONFIG), 3000);
      expect(res.code).toBe(ResponseCode.SUCCESS);
      return new TextDecoder().decode(res.body);
    };
    const update = (text: string) =>
      c.invoke(srv.namesrvAddr, createRequest(RequestCode.UPDATE_NAMESRV_CONFIG, {}, new TextEncoder().encode(text)), 3000);
    const before = await get();
    expect(before).toContain("orderMessageEnable=false\n");
    expect(before).toContain("brokerExpiredMs=");
    expect(before).not.toContain("maxMessageSize="); // a broker key
    expect((await update("orderMessageEnable=true\n")).code).toBe(ResponseCode.SUCCESS);
    expect(await get()).toContain("orderMessageEnable=true\n");
    const restart = await update("orderMessageEnable=false\nlisten=127.0.0.1:1\n");
    expect(restart.code).toBe(ResponseCode.NO_PERMISSION);
    expect(restart.remark).toContain("namesrv.listen: cannot be changed while the name server runs");
    const unknown = await update("maxMessageSize=1024\n");
    expect(unknown.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(unknown.remark).toContain("maxMessageSize: unknown key");
    // Neither refusal changed anything.
    expect(await get()).toContain("orderMessageEnable=true\n");
    expect(srv.output.out() + srv.output.err()).toContain("UPDATE_NAMESRV_CONFIG from");
  });
});

describe("name server binary: bad input", () => {
  test("unknown request code → REQUEST_CODE_NOT_SUPPORTED", async () => {
    const srv = await namesrv();
    const res = await client().invoke(srv.namesrvAddr, createRequest(9999), 3000);
    expect(res.code).toBe(ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
    expect(res.remark).toContain("9999");
  });

  test("remoting.maxNewConnectionsPerSecondPerAddress: a burst past a second's worth is closed unanswered; a connected client is served; the log names the key", async () => {
    const srv = await namesrv("remoting:\n  maxNewConnectionsPerSecondPerAddress: 5\n");
    const c = client();
    expect((await c.invoke(srv.namesrvAddr, registerBrokerRequest(SEED[0]!, TOPICS), 3000)).code).toBe(ResponseCode.SUCCESS);
    // The client's connection took one token of five: 20 more at once get 4 (5 with a refill) answers.
    const frame = encodeCommand(createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: "test" }));
    const replies = await Promise.all(Array.from({ length: 20 }, () => rawExchange(srv.ports.namesrv!, frame).catch(() => new Uint8Array(0))));
    const answered = replies.filter((r) => r.length > 0).length;
    expect(answered).toBeGreaterThanOrEqual(4);
    expect(answered).toBeLessThanOrEqual(6);
    expect((await route(c, srv.namesrvAddr)).code).toBe(ResponseCode.SUCCESS);
    const refusal = /refused: over 5 new connections a second from this address \(remoting\.maxNewConnectionsPerSecondPerAddress\)/;
    await waitFor(() => refusal.test(srv.output.err() + srv.output.out()), 5000, "the refusal in the log");
    expect(srv.proc.exitCode).toBeNull();
  });

  test("garbage, oversized frames and half frames close only their own connection", async () => {
    const srv = await namesrv("remoting:\n  frameSizeMaxBytes: 65536\n");
    const c = client();
    await c.invoke(srv.namesrvAddr, registerBrokerRequest(SEED[0]!, TOPICS), 3000);
    let seed = 12345;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
    const payloads: Uint8Array[] = [];
    for (let i = 0; i < 30; i++) payloads.push(Uint8Array.from({ length: 1 + (rnd() % 300) }, () => rnd() & 0xff));
    const huge = new Uint8Array(8);
    new DataView(huge.buffer).setUint32(0, 0x7fffffff);
    payloads.push(huge);
    const badHeader = encodeCommand(createRequest(105, { topic: "test" }));
    badHeader[9] = 0x7b ^ 0xff; // corrupt the first header byte
    payloads.push(badHeader);
    payloads.push(encodeCommand(createRequest(105, { topic: "test" })).subarray(0, 10)); // half a frame, then close
    for (const p of payloads) await rawSendAndClose(srv.ports.namesrv!, p);
    const res = await route(c, srv.namesrvAddr);
    expect(res.code).toBe(ResponseCode.SUCCESS);
    expect(srv.proc.exitCode).toBeNull();
  });
});

async function rawExchange(port: number, frame: Uint8Array): Promise<Uint8Array> {
  let buf = new Uint8Array(0);
  let done: (b: Uint8Array) => void = () => {};
  const got = new Promise<Uint8Array>((r) => (done = r));
  const sock = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_s, chunk) {
        const n = new Uint8Array(buf.length + chunk.length);
        n.set(buf);
        n.set(chunk, buf.length);
        buf = n;
        if (buf.length >= 4 && buf.length >= 4 + new DataView(buf.buffer).getUint32(0)) done(buf);
      },
    },
  });
  sock.write(frame);
  const timeout = setTimeout(() => done(buf), 3000);
  const out = await got;
  clearTimeout(timeout);
  sock.end();
  return out;
}

async function rawSendAndClose(port: number, bytes: Uint8Array): Promise<void> {
  let closed: () => void = () => {};
  const done = new Promise<void>((r) => (closed = r));
  const sock = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {}, close: () => closed(), error: () => closed() } });
  sock.write(bytes);
  // Either the server closes us (bad bytes) or we close after a moment (incomplete frame).
  const t = setTimeout(() => sock.end(), 100);
  await done;
  clearTimeout(t);
}
