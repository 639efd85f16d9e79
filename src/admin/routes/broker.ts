/** Broker routes (reads): topics with queue offsets, consumer group offsets and lag, store status, replication, transactions, request stats. */
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { BrokerInfo } from "../../broker/index.ts";
import { ApiError } from "../errors.ts";
import { errors, GroupParam, Int, json, RequestStatsSchema, SignedInt, TopicConfigSchema, TopicParam } from "../schemas.ts";

const tags = ["broker"];

const BrokerSchema = z
  .object({
    clusterName: z.string(),
    brokerName: z.string(),
    brokerId: Int,
    brokerRole: z.enum(["ASYNC_MASTER", "SYNC_MASTER", "SLAVE"]),
    brokerAddr: z.string(),
    autoCreateTopicEnable: z.boolean(),
    defaultTopicQueueNums: Int,
    maxMessageSizeBytes: Int,
    pullHoldMaxMs: Int,
    slaveReadEnable: z.boolean(),
    enablePropertyFilter: z.boolean(),
    store: z.object({ minPhyOffset: Int, maxPhyOffset: Int, flushedOffset: Int, diskUsageRatio: z.number() }),
  })
  .openapi("Broker");

const QueueOffsets = z.object({ queueId: Int, minOffset: Int, maxOffset: Int });
const GroupOffsets = z.object({ topic: z.string(), queueId: Int, consumerOffset: SignedInt, brokerOffset: Int, lag: Int });
const PopConsumptionSchema = z
  .object({
    group: z.string(),
    topic: z.string().openapi({ description: "the topic consumed (for isRetry: the one its POP retry topic retries)" }),
    isRetry: z.boolean(),
    queueTopic: z.string().openapi({ description: "the topic the queues belong to: topic, or %RETRY%{group}_{topic}" }),
    mode: z.enum(["PULL", "POP"]).openapi({ description: "the (topic, group)'s entry of the mode table (PULL when none)" }),
    inflight: Int.openapi({ description: "messages popped and neither acked nor back yet" }),
    ready: Int.openapi({ description: "messages after the committed offsets, what the next pops hand out" }),
    checkpoints: z
      .array(
        z.object({
          queueId: Int,
          startOffset: Int,
          offsets: z.array(Int).openapi({ description: "queue offsets still in flight" }),
          popTime: Int,
          invisibleUntil: Int.openapi({ description: "when the messages not acked by then become visible again (epoch ms)" }),
        }),
      )
      .openapi({ description: "each popped batch still in flight, soonest visible first" }),
  })
  .openapi("PopConsumption");

const ReplicationSchema = z
  .object({
    role: z.enum(["ASYNC_MASTER", "SYNC_MASTER", "SLAVE"]),
    slaves: z
      .array(
        z.object({
          addr: z.string(),
          ackOffset: SignedInt,
          transferOffset: SignedInt,
          lagBytes: SignedInt,
          lagSeconds: z.number(),
          lastReportAt: SignedInt,
          caughtUpAt: SignedInt,
        }),
      )
      .optional()
      .openapi({ description: "master: its connected slaves" }),
    master: z
      .object({
        connected: z.boolean(),
        masterAddr: z.string().optional(),
        masterHaAddr: z.string().optional(),
        lagBytes: SignedInt,
        lagSeconds: z.number(),
      })
      .optional()
      .openapi({ description: "slave: its link to the master (more fields than listed here)" }),
  })
  .openapi("Replication");

const TransactionsSchema = z
  .object({
    halfMinOffset: SignedInt,
    halfMaxOffset: SignedInt,
    halfCheckOffset: SignedInt,
    opMaxOffset: SignedInt,
    opCheckOffset: SignedInt,
    resolvedKnown: Int,
    checksSent: Int,
    discarded: Int,
    committed: Int,
    rolledBack: Int,
  })
  .openapi("Transactions");

const get = <T extends z.ZodType>(path: string, schema: T, summary: string, more: Parameters<typeof createRoute>[0]["request"] = undefined) =>
  createRoute({ method: "get", path, tags, summary, ...(more ? { request: more } : {}), responses: { 200: json(schema, summary), ...errors() } });

const routes = {
  broker: get("/broker", BrokerSchema, "this broker: settings and store offsets"),
  topics: get("/topics", z.object({ topics: z.array(TopicConfigSchema) }), "the topics of this broker"),
  topic: createRoute({
    method: "get",
    path: "/topics/{topic}",
    tags,
    summary: "one topic with the min and max offset of each queue",
    request: { params: TopicParam },
    responses: { 200: json(TopicConfigSchema.extend({ queues: z.array(QueueOffsets) }), "the topic"), ...errors(400, 404) },
  }),
  groups: get("/groups", z.object({ groups: z.array(z.string()) }), "consumer groups known here (configured or online)"),
  group: createRoute({
    method: "get",
    path: "/groups/{group}",
    tags,
    summary: "a group's committed offsets and lag per queue, and what it consumes by POP (in flight, ready)",
    request: { params: GroupParam },
    responses: {
      200: json(
        z.object({
          group: z.string(),
          queues: z.array(GroupOffsets),
          totalLag: Int.openapi({ description: "Σ of the queues' lag, plus the POP messages in flight" }),
          pop: z
            .array(PopConsumptionSchema)
            .openapi({ description: "per topic consumed by POP, and its POP retry topic; empty for a group that only pulls" }),
        }),
        "the group's offsets",
      ),
      ...errors(400, 404),
    },
  }),
  ha: get("/ha", ReplicationSchema, "replication: slaves of a master, or a slave's link to its master"),
  transactions: get("/transactions", TransactionsSchema, "the transaction service: half/op queues, check cursors, counters"),
  stats: get("/stats/requests", RequestStatsSchema, "requests by request code since start (both ports)"),
};

export function brokerRoutes(info: BrokerInfo): OpenAPIHono {
  const app = new OpenAPIHono();
  app.openapi(routes.broker, (c) => c.json({ ...info.settings(), storeHost: undefined, store: info.store() }, 200));
  app.openapi(routes.topics, (c) => c.json({ topics: info.topics() }, 200));
  app.openapi(routes.topic, (c) => {
    const { topic } = c.req.valid("param");
    const cfg = info.topic(topic);
    if (!cfg) throw new ApiError("TOPIC_NOT_FOUND", { topic });
    return c.json({ ...cfg, queues: info.queueOffsets(topic) }, 200);
  });
  app.openapi(routes.groups, (c) => c.json({ groups: info.consumerGroups() }, 200));
  app.openapi(routes.ha, (c) => c.json(info.replication(), 200));
  app.openapi(routes.transactions, (c) => c.json(info.transactions(), 200));
  app.openapi(routes.stats, (c) => c.json(info.requestStats(), 200));
  app.openapi(routes.group, (c) => {
    const { group } = c.req.valid("param");
    const offsets = info.groupOffsets(group);
    const pop = info.popConsumption(group);
    if (offsets.length === 0 && pop.length === 0 && !info.consumerGroups().includes(group)) throw new ApiError("GROUP_NOT_FOUND", { group });
    const totalLag = offsets.reduce((n, q) => n + q.lag, 0) + pop.reduce((n, p) => n + p.inflight, 0);
    return c.json({ group, queues: offsets, totalLag, pop }, 200);
  });
  return app;
}
