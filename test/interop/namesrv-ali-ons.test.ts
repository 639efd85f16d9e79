/**
 * Interop: ali-ons (a RocketMQ remoting client nobody here wrote) reads routes from the compiled
 * name server. It parses route bodies with JSON2, sorts queueDatas/brokerDatas, and turns
 * TOPIC_NOT_EXIST into an MQClientException — the exact path its producers and consumers take.
 */
import { afterEach, expect } from "bun:test";
import { compatTest } from "../harness/compat.ts";
// @ts-expect-error ali-ons ships no type declarations
import MQClientAPI from "ali-ons/lib/mq_client_api.js";
import { defaultTopicConfig, type TopicConfig } from "../../src/protocol/topics.ts";
import type { TopicRouteData } from "../../src/protocol/route.ts";
import { startRocketbun, type RunningBinary } from "../harness/binary.ts";
import { newClient, registerBrokerRequest } from "../harness/wire.ts";

/** Each test is a row of docs/COMPATIBILITY.md (ali-ons against RocketBun). */
const test = compatTest("ali-ons", "rocketbun");

interface AliOnsApi {
  ready(): Promise<void>;
  close(): Promise<void>;
  getTopicRouteInfoFromNameServer(topic: string, timeoutMs: number): Promise<TopicRouteData>;
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const silent = { info() {}, warn() {}, error() {}, debug() {} };
/** ali-ons only uses its HTTP client to ask an address server; with nameSrv set it must not. */
const noHttp = {
  request() {
    throw new Error("ali-ons tried HTTP although nameSrv is set");
  },
};

test("ali-ons fetches the seed deployment's route and gets TOPIC_NOT_EXIST for unknown topics", async () => {
  const srv: RunningBinary = await startRocketbun({ role: "namesrv" });
  cleanups.push(() => srv[Symbol.asyncDispose]());
  const topics: Record<string, TopicConfig> = { test: { ...defaultTopicConfig("test"), readQueueNums: 8, writeQueueNums: 8 } };
  const brokers = [
    { clusterName: "rocketmq-cluster", brokerAddr: "127.0.0.1:10911", brokerName: "broker-a", brokerId: 0, haServerAddr: "127.0.0.1:10912" },
    { clusterName: "rocketmq-cluster", brokerAddr: "127.0.0.1:11911", brokerName: "broker-a", brokerId: 1, haServerAddr: "127.0.0.1:11912" },
  ];
  for (const b of brokers) {
    const c = newClient();
    cleanups.push(() => c.close());
    expect((await c.invoke(srv.namesrvAddr, registerBrokerRequest(b, topics), 3000)).code).toBe(0);
  }

  const api = new MQClientAPI({ nameSrv: srv.namesrvAddr, logger: silent, httpclient: noHttp, responseTimeout: 3000 }) as AliOnsApi;
  await api.ready();
  cleanups.push(() => api.close());
  const route = await api.getTopicRouteInfoFromNameServer("test", 3000);
  expect(route.queueDatas).toEqual([{ brokerName: "broker-a", readQueueNums: 8, writeQueueNums: 8, perm: 6, topicSysFlag: 0 }]);
  expect(route.brokerDatas[0]!.brokerAddrs).toEqual({ "0": "127.0.0.1:10911", "1": "127.0.0.1:11911" });

  let err: { code?: number; name?: string } | undefined;
  try {
    await api.getTopicRouteInfoFromNameServer("no-such-topic", 3000);
  } catch (e) {
    err = e as { code?: number };
  }
  expect(err?.code).toBe(17);
});
