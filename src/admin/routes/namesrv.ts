/** Name server routes: cluster view, live brokers, topics and their routes, request stats; DELETE a topic's routes (mqadmin deleteTopic's second step). */
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { NamesrvAdmin, NamesrvInfo } from "../../namesrv/index.ts";
import { ApiError } from "../errors.ts";
import { Done, errors, Int, json, RequestStatsSchema, SignedInt, TopicParam } from "../schemas.ts";

const tags = ["name server"];

const BrokerDataSchema = z
  .object({ cluster: z.string(), brokerName: z.string(), brokerAddrs: z.record(z.string(), z.string()) })
  .openapi("BrokerData");

const ClusterSchema = z
  .object({ brokerAddrTable: z.record(z.string(), BrokerDataSchema), clusterAddrTable: z.record(z.string(), z.array(z.string())) })
  .openapi("ClusterInfo");

const LiveBrokerSchema = z
  .object({
    brokerName: z.string(),
    brokerId: Int,
    brokerAddr: z.string(),
    clusterName: z.string(),
    haServerAddr: z.string(),
    lastUpdateTimestamp: SignedInt,
    silentForMs: SignedInt,
    dataVersion: z.object({ counter: SignedInt, timestamp: SignedInt }),
  })
  .openapi("LiveBroker");

const RouteSchema = z
  .object({
    orderTopicConf: z.string().optional(),
    queueDatas: z.array(z.object({ brokerName: z.string(), readQueueNums: Int, writeQueueNums: Int, perm: Int, topicSysFlag: Int })),
    brokerDatas: z.array(BrokerDataSchema),
    filterServerTable: z.record(z.string(), z.array(z.string())),
  })
  .openapi("TopicRouteData");

const get = <T extends z.ZodType>(path: string, schema: T, summary: string) =>
  createRoute({ method: "get", path, tags, summary, responses: { 200: json(schema, summary), ...errors() } });

const routes = {
  cluster: get("/cluster", ClusterSchema, "clusters and their brokers"),
  brokers: get("/brokers", z.object({ brokers: z.array(LiveBrokerSchema) }), "live brokers and how long each has been silent"),
  topics: get("/topics", z.object({ topics: z.array(z.string()) }), "every topic with a route"),
  stats: get("/stats/requests", RequestStatsSchema, "requests by request code since start"),
  route: createRoute({
    method: "get",
    path: "/topics/{topic}/route",
    tags,
    summary: "a topic's route, as GET_ROUTEINFO_BY_TOPIC answers it",
    request: { params: TopicParam },
    responses: { 200: json(RouteSchema, "the route"), ...errors(400, 404) },
  }),
  deleteTopic: createRoute({
    method: "delete",
    path: "/topics/{topic}",
    tags,
    summary: "DELETE_TOPIC_IN_NAMESRV: drop a topic's routes (of one cluster's brokers with ?clusterName=)",
    description:
      "mqadmin deleteTopic deletes the topic on every broker of the cluster, then here; the broker's DELETE /topics/{topic} is the first step.",
    request: {
      params: TopicParam,
      query: z.object({ clusterName: z.string().min(1).optional().openapi({ description: "only this cluster's brokers' routes" }) }),
    },
    responses: { 200: json(Done, "deleted"), ...errors(400, 403, 404) },
  }),
};

export function namesrvRoutes(info: NamesrvInfo): OpenAPIHono {
  const app = new OpenAPIHono();
  app.openapi(routes.cluster, (c) => c.json(info.cluster(), 200));
  app.openapi(routes.brokers, (c) => c.json({ brokers: info.brokers() }, 200));
  app.openapi(routes.topics, (c) => c.json({ topics: info.topics() }, 200));
  app.openapi(routes.stats, (c) => c.json(info.requestStats(), 200));
  app.openapi(routes.route, (c) => {
    const { topic } = c.req.valid("param");
    const route = info.topicRoute(topic);
    if (!route) throw new ApiError("TOPIC_NOT_EXIST", { topic });
    return c.json(route, 200);
  });
  const admin: NamesrvAdmin | undefined = info.admin?.();
  if (admin) {
    app.openapi(routes.deleteTopic, (c) => {
      const { topic } = c.req.valid("param");
      const { clusterName } = c.req.valid("query");
      if (!admin.deleteTopic(topic, clusterName)) throw new ApiError("TOPIC_NOT_EXIST", { topic });
      return c.json({ status: "ok" as const }, 200);
    });
  }
  return app;
}
