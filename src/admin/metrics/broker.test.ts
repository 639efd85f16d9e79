/**
 * GET /metrics of an in-process broker (src/broker/test-support.ts, simulated time) with a known
 * backlog: the exporter's and RocketMQ 5.x's lag figures (a POP group's in flight and ready too),
 * offsets, traffic counters, the store-time latencies, the name server's part, and the admin token.
 */
import { describe, expect, test } from "bun:test";
import {
  ackMessageRequest,
  createTopicRequest,
  heartbeatRequest,
  InProcessBroker,
  popMessageRequest,
  poppedHandles,
  pullRequest,
  sendV2Request,
} from "../../broker/test-support.ts";
import type { NamesrvInfo } from "../../namesrv/index.ts";
import { createRequest, RequestCode, ResponseCode } from "../../remoting/index.ts";
import { buildAdminApp } from "../app.ts";
import { EXPOSITION_CONTENT_TYPE } from "./exposition.ts";
import { parseExposition, samplesOf, type ParsedExposition } from "./test-support.ts";

function commit(group: string, topic: string, queueId: number, offset: number) {
  return createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: group, topic, queueId: String(queueId), commitOffset: String(offset) });
}

async function scrape(b: InProcessBroker, token?: string): Promise<ParsedExposition> {
  const app = buildAdminApp({ role: "master", version: "1", startedAt: 0, broker: b.controller.info, ...(token ? { token: () => token } : {}) });
  const r = await app.request("/metrics", token ? { headers: { authorization: `Bearer ${token}` } } : {});
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toBe(EXPOSITION_CONTENT_TYPE);
  return parseExposition(await r.text());
}

function one(p: ParsedExposition, name: string, match: Record<string, string>): number {
  const s = samplesOf(p, name, match);
  expect(s.map((x) => x.labels)).toHaveLength(1);
  return s[0]!.value;
}

/**
 * Topic T, 4 queues: queue 2 gets 2 messages at t0; one second later queues 0, 1, 3 get 3, 3, 2.
 * Group G (offline) committed queue 0 at 1 and queue 1 at 3; nothing on queues 2 and 3.
 *   exporter diff = 10 − (1 + 3) = 6 (uncommitted queues count from 0); consumer offset 4
 *   5.x lag = (3 − 1) + (3 − 3) = 2 (uncommitted queues count 0)
 *   two seconds after t0: oldest unconsumed overall = queue 2 offset 0 (t0) → 2000 ms;
 *   over committed queues = queue 0 offset 1 (t0 + 1 s) → 1000 ms
 */
async function backlog(b: InProcessBroker): Promise<void> {
  await b.ok(createTopicRequest("T", 4));
  for (let i = 0; i < 2; i++) await b.ok(sendV2Request("T", "early", { queueId: 2 }));
  await b.advance(1000);
  for (const [q, n] of [
    [0, 3],
    [1, 3],
    [3, 2],
  ] as const)
    for (let i = 0; i < n; i++) await b.ok(sendV2Request("T", "msg", { queueId: q }));
  await b.ok(commit("G", "T", 0, 1));
  await b.ok(commit("G", "T", 1, 3));
  await b.advance(1000);
}

describe("GET /metrics on a broker", () => {
  test("a known backlog: exporter diff, offsets and latency, 5.x lag and latency", async () => {
    await using b = InProcessBroker.start();
    await backlog(b);
    const p = await scrape(b);
    const base = { cluster: "DefaultCluster", broker: "broker-a" };
    expect(one(p, "rocketmq_group_diff", { group: "G", topic: "T" })).toBe(6);
    expect(samplesOf(p, "rocketmq_group_diff", { group: "G" })[0]!.labels).toEqual({
      group: "G",
      topic: "T",
      countOfOnlineConsumers: "0",
      msgModel: "1",
    });
    expect(one(p, "rocketmq_consumer_offset", { ...base, topic: "T", group: "G" })).toBe(4);
    expect(one(p, "rocketmq_producer_offset", { ...base, topic: "T" })).toBe(10);
    expect(one(p, "rocketmq_group_get_latency_by_storetime", { ...base, topic: "T", group: "G" })).toBe(2000);
    const v5 = { cluster: "DefaultCluster", node_type: "broker", node_id: "broker-a", topic: "T", consumer_group: "G" };
    expect(one(p, "rocketmq_consumer_lag_messages", { ...v5, is_retry: "false", is_system: "false" })).toBe(2);
    expect(one(p, "rocketmq_consumer_lag_latency_milliseconds", v5)).toBe(1000);
    expect(one(p, "rocketmq_group_count", { group: "G" })).toBe(0);
    expect(one(p, "rocketmq_messages_in_total", { topic: "T" })).toBe(10);
    expect(one(p, "rocketmq_throughput_in_total", { topic: "T" })).toBe(2 * 5 + 8 * 3);
    expect(one(p, "rocketmq_brokeruntime_msg_put_total_today_now", { cluster: "DefaultCluster", brokerIP: b.addr })).toBe(10);
  });

  test("pulls, an online consumer, retry and DLQ topics", async () => {
    await using b = InProcessBroker.start();
    await backlog(b);
    await b.ok(
      heartbeatRequest("client-1", {
        group: "G",
        subs: [
          { topic: "T", expr: "*" },
          { topic: "%RETRY%G", expr: "*" },
        ],
      }),
    );
    const pulled = await b.call(pullRequest("T", { group: "G", queueId: 3, offset: 0 }));
    expect(pulled.code).toBe(ResponseCode.SUCCESS);
    for (let i = 0; i < 3; i++) await b.ok(sendV2Request("%RETRY%G", "again"));
    await b.ok(commit("G", "%RETRY%G", 0, 1));
    await b.ok(createTopicRequest("%DLQ%G", 1));
    for (let i = 0; i < 2; i++) await b.ok(sendV2Request("%DLQ%G", "dead"));
    const p = await scrape(b);
    const diff = { group: "G", countOfOnlineConsumers: "1", msgModel: "1" };
    expect(one(p, "rocketmq_group_diff", { ...diff, topic: "T" })).toBe(6);
    expect(one(p, "rocketmq_group_retrydiff", { ...diff, topic: "%RETRY%G" })).toBe(2);
    expect(one(p, "rocketmq_group_dlqdiff", { ...diff, topic: "%DLQ%G" })).toBe(2);
    expect(one(p, "rocketmq_topic_dlq_offset", { group: "G" })).toBe(2);
    expect(one(p, "rocketmq_topic_retry_offset", { topic: "%RETRY%G" })).toBe(3);
    expect(one(p, "rocketmq_group_count", { group: "G", localaddr: "client-1" })).toBe(1);
    expect(one(p, "rocketmq_messages_out_total", { topic: "T", consumer_group: "G" })).toBe(2);
    expect(one(p, "rocketmq_throughput_out_total", { topic: "T", consumer_group: "G" })).toBeGreaterThan(0);
    expect(one(p, "rocketmq_consumer_connections", { consumer_group: "G", consume_mode: "push" })).toBe(1);
    // 5.x counts neither retry nor DLQ topics in its lag and traffic.
    expect(samplesOf(p, "rocketmq_consumer_lag_messages", { topic: "%RETRY%G" })).toEqual([]);
    expect(samplesOf(p, "rocketmq_messages_in_total", { topic: "%DLQ%G" })).toEqual([]);
    const rpc = samplesOf(p, "rocketmq_rpc_latency_milliseconds_count", { node_type: "broker", request_code: "pull_message" });
    expect(rpc.map((s) => s.value)).toEqual([1]);
    expect(one(p, "rocketbun_requests_total", { node_type: "broker", request_code: "send_message_v2", response_code: "success" })).toBe(15);
  });

  test("a POP group: in flight, ready, lag = ready + in flight, the queueing latency, its POP retry topic with is_retry; a PULL group's ready = its lag", async () => {
    await using b = InProcessBroker.start();
    await backlog(b);
    // GP pops 2 of queue 0's 3 (stored at t0 + 1 s) at t0 + 2 s, then one comes back into %RETRY%GP_T.
    const popped = poppedHandles(await b.ok(popMessageRequest("GP", "T", b.sim.now, { queueId: 0, max: 2, invisibleTime: 10_000 })), "GP");
    await b.ok(ackMessageRequest("GP", popped[0]!));
    await b.advance(3000);
    const v5 = { cluster: "DefaultCluster", node_type: "broker", node_id: "broker-a", topic: "T", consumer_group: "GP", is_system: "false" };
    let p = await scrape(b);
    const topic = { ...v5, is_retry: "false" };
    expect(one(p, "rocketmq_consumer_inflight_messages", topic)).toBe(1);
    expect(one(p, "rocketmq_consumer_ready_messages", topic)).toBe(1);
    expect(one(p, "rocketmq_consumer_lag_messages", topic)).toBe(2);
    // The oldest unconsumed is the one in flight (offset 1), the first ready offset 2: both stored at t0 + 1 s.
    expect(one(p, "rocketmq_consumer_lag_latency_milliseconds", topic)).toBe(4000);
    expect(one(p, "rocketmq_consumer_queueing_latency_milliseconds", topic)).toBe(4000);
    // No retry topic yet: Java's zeros.
    const retry = { ...v5, is_retry: "true" };
    for (const name of ["inflight", "ready", "lag"]) expect(one(p, `rocketmq_consumer_${name}_messages`, retry)).toBe(0);
    await b.advance(10_000);
    p = await scrape(b);
    expect(one(p, "rocketmq_consumer_inflight_messages", topic)).toBe(0);
    expect(one(p, "rocketmq_consumer_ready_messages", retry)).toBe(1);
    expect(one(p, "rocketmq_consumer_lag_messages", retry)).toBe(1);
    expect(one(p, "rocketmq_consumer_queueing_latency_milliseconds", retry)).toBeGreaterThan(0);
    expect(samplesOf(p, "rocketmq_consumer_ready_messages", { topic: "%RETRY%GP_T" })).toEqual([]);
    // The PULL group G of the backlog: nothing in flight, ready = lag, queueing latency = lag latency.
    const pull = { ...v5, consumer_group: "G", is_retry: "false" };
    expect(one(p, "rocketmq_consumer_inflight_messages", pull)).toBe(0);
    expect(one(p, "rocketmq_consumer_ready_messages", pull)).toBe(2);
    expect(one(p, "rocketmq_consumer_lag_messages", pull)).toBe(2);
    expect(one(p, "rocketmq_consumer_queueing_latency_milliseconds", pull)).toBe(one(p, "rocketmq_consumer_lag_latency_milliseconds", pull));
    expect(samplesOf(p, "rocketmq_consumer_lag_messages", { consumer_group: "G", is_retry: "true" })).toEqual([]);
  });

  test("the admin token guards /metrics like every endpoint but /health", async () => {
    await using b = InProcessBroker.start();
    const app = buildAdminApp({ role: "master", version: "1", startedAt: 0, broker: b.controller.info, token: () => "s3cret" });
    expect((await app.request("/metrics")).status).toBe(401);
    expect((await app.request("/metrics", { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    const p = await scrape(b, "s3cret");
    expect(samplesOf(p, "process_resident_memory_bytes")[0]!.value).toBeGreaterThan(0);
  });
});

describe("GET /metrics on a name server", () => {
  test("request latency by code and process metrics", async () => {
    const info: NamesrvInfo = {
      cluster: () => ({ brokerAddrTable: {}, clusterAddrTable: {} }),
      brokers: () => [],
      topics: () => [],
      topicRoute: () => null,
      connections: () => 3,
      requestStats: () => ({
        sinceMs: 0,
        codes: [
          {
            code: 105,
            name: "GET_ROUTEINFO_BY_TOPIC",
            count: 4,
            errors: 0,
            responses: { SUCCESS: 3, TOPIC_NOT_EXIST: 1 },
            latency: {
              buckets: [
                { leMs: 0.008, count: 1 },
                { leMs: 0.016, count: 4 },
              ],
              sumMs: 0.05,
              p50Ms: 0,
              p99Ms: 0,
            },
          },
        ],
      }),
    };
    const app = buildAdminApp({ role: "namesrv", version: "1", startedAt: 0, namesrv: info, namesrvAtRoot: true });
    const p = parseExposition(await (await app.request("/metrics")).text());
    const code = { node_type: "namesrv", request_code: "get_routeinfo_by_topic" };
    expect(samplesOf(p, "rocketmq_rpc_latency_milliseconds_bucket", code).map((s) => [s.labels.le, s.value])).toEqual([
      ["0.008", 1],
      ["0.016", 4],
      ["+Inf", 4],
    ]);
    expect(one(p, "rocketmq_rpc_latency_milliseconds_sum", code)).toBe(0.05);
    expect(one(p, "rocketbun_requests_total", { ...code, response_code: "topic_not_exist" })).toBe(1);
    expect(one(p, "rocketbun_remoting_connections", { port: "namesrv" })).toBe(3);
    expect(samplesOf(p, "process_cpu_seconds_total")).toHaveLength(1);
    expect(samplesOf(p, "rocketmq_group_diff")).toEqual([]);
  });
});
