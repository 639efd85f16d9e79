/**
 * Broker routes (writes): topics, subscription groups, offset resets. Each calls the function the
 * wire request's processor calls (BrokerAdmin, src/broker/admin-api.ts), so HTTP and mqadmin do
 * the same thing:
 *
 *   POST   /topics                      UPDATE_AND_CREATE_TOPIC (409 when it exists)
 *   PUT    /topics/{topic}              UPDATE_AND_CREATE_TOPIC (create or replace)
 *   DELETE /topics/{topic}              DELETE_TOPIC_IN_BROKER (config, ConsumeQueues, offsets)
 *   POST   /groups                      UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (409 when it exists)
 *   PUT    /groups/{group}              UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (create or replace)
 *   DELETE /groups/{group}              DELETE_SUBSCRIPTIONGROUP (?removeOffset=true: its offsets too)
 *   POST   /groups/{group}/reset-offset INVOKE_BROKER_TO_RESET_OFFSET, the new offsets also committed
 */
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { BrokerAdmin, BrokerInfo, OpRefusal } from "../../broker/index.ts";
import { ApiError, refusalError } from "../errors.ts";
import { peerAddr } from "../peer.ts";
import {
  Done,
  errors,
  GroupConfigSchema,
  GroupCreate,
  GroupParam,
  GroupWriteParam,
  GroupSettings,
  Int,
  json,
  jsonBody,
  SignedInt,
  TopicConfigSchema,
  TopicCreate,
  TopicName,
  TopicWriteParam,
  TopicSettings,
} from "../schemas.ts";

const tags = ["broker: topics and groups"];
const WRITE = [400, 403, 409, 415] as const;

const ResetOffset = z
  .object({
    topic: TopicName,
    timestamp: z
      .number()
      .int()
      .min(-1)
      .max(Number.MAX_SAFE_INTEGER)
      .optional()
      .openapi({ description: "each queue to its first message stored at or after this time (ms since the epoch); -1 = each queue's end" }),
    offset: Int.optional().openapi({ description: "every queue to this offset (clamped to the queue's min and max)" }),
    offsets: z
      .record(z.string().regex(/^\d{1,5}$/), Int)
      .optional()
      .openapi({ description: 'per queue id: {"0": 10, "3": 0}; queues not named keep their offset', example: { "0": 0 } }),
    force: z.boolean().default(true).openapi({ description: "timestamp resets: also move forward (false: only back)" }),
  })
  .openapi("ResetOffset");

const ResetDone = z
  .object({ group: z.string(), topic: z.string(), offsets: z.array(z.object({ queueId: Int, offset: SignedInt })), clientsNotified: Int })
  .openapi("ResetOffsetDone");

const routes = {
  createTopic: createRoute({
    method: "post",
    path: "/topics",
    tags,
    summary: "create a topic (UPDATE_AND_CREATE_TOPIC)",
    request: { body: jsonBody(TopicCreate, "the topic") },
    responses: { 201: json(TopicConfigSchema, "created"), ...errors(...WRITE) },
  }),
  putTopic: createRoute({
    method: "put",
    path: "/topics/{topic}",
    tags,
    summary: "create or replace a topic (UPDATE_AND_CREATE_TOPIC)",
    request: { params: TopicWriteParam, body: jsonBody(TopicSettings, "the topic's settings") },
    responses: { 200: json(TopicConfigSchema, "the topic as stored"), ...errors(...WRITE) },
  }),
  deleteTopic: createRoute({
    method: "delete",
    path: "/topics/{topic}",
    tags,
    summary: "delete a topic on this broker (DELETE_TOPIC_IN_BROKER): its config, ConsumeQueues and group offsets",
    description: "mqadmin deleteTopic then deletes its routes on the name servers: DELETE /namesrv/topics/{topic} in standalone.",
    request: { params: TopicWriteParam },
    responses: { 200: json(Done, "deleted"), ...errors(400, 403, 404, 409) },
  }),
  createGroup: createRoute({
    method: "post",
    path: "/groups",
    tags,
    summary: "create a subscription group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)",
    request: { body: jsonBody(GroupCreate, "the group; missing fields take RocketMQ's defaults") },
    responses: { 201: json(GroupConfigSchema, "created"), ...errors(...WRITE) },
  }),
  putGroup: createRoute({
    method: "put",
    path: "/groups/{group}",
    tags,
    summary: "create or replace a subscription group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)",
    request: { params: GroupWriteParam, body: jsonBody(GroupSettings, "the group's settings; missing fields take RocketMQ's defaults") },
    responses: { 200: json(GroupConfigSchema, "the group as stored"), ...errors(...WRITE) },
  }),
  deleteGroup: createRoute({
    method: "delete",
    path: "/groups/{group}",
    tags,
    summary: "delete a subscription group (DELETE_SUBSCRIPTIONGROUP)",
    request: {
      params: GroupParam,
      query: z.object({
        removeOffset: z.enum(["true", "false"]).default("false").openapi({ description: "also drop the group's committed offsets" }),
      }),
    },
    responses: { 200: json(Done, "deleted"), ...errors(400, 403, 404, 409) },
  }),
  resetOffset: createRoute({
    method: "post",
    path: "/groups/{group}/reset-offset",
    tags,
    summary: "reset a group's offsets on a topic, by time or to given offsets",
    description:
      "INVOKE_BROKER_TO_RESET_OFFSET's computation; the new offsets are committed here and every consumer of the group online is told " +
      "(RESET_CONSUMER_CLIENT_OFFSET). Give exactly one of timestamp, offset, offsets. The group must have committed offsets on the topic.",
    request: { params: GroupParam, body: jsonBody(ResetOffset, "what to reset to") },
    responses: { 200: json(ResetDone, "the new offset of every write queue"), ...errors(...WRITE, 404) },
  }),
};

function check(r: OpRefusal | null): void {
  if (r) throw refusalError(r.refused, r.remark);
}

function topicRoutes(app: OpenAPIHono, info: BrokerInfo, admin: BrokerAdmin): void {
  const stored = (topic: string) => {
    const cfg = info.topic(topic);
    if (!cfg) throw new ApiError("TOPIC_NOT_FOUND", { topic });
    return cfg;
  };
  app.openapi(routes.createTopic, (c) => {
    const t = c.req.valid("json");
    if (info.topic(t.topicName)) throw new ApiError("TOPIC_EXISTS", { topic: t.topicName });
    check(admin.upsertTopic(t));
    return c.json(stored(t.topicName), 201);
  });
  app.openapi(routes.putTopic, (c) => {
    const { topic } = c.req.valid("param");
    check(admin.upsertTopic({ ...c.req.valid("json"), topicName: topic }));
    return c.json(stored(topic), 200);
  });
  app.openapi(routes.deleteTopic, (c) => {
    const { topic } = c.req.valid("param");
    if (!info.topic(topic)) throw new ApiError("TOPIC_NOT_FOUND", { topic });
    check(admin.deleteTopic(topic));
    return c.json({ status: "ok" as const }, 200);
  });
}

function groupRoutes(app: OpenAPIHono, info: BrokerInfo, admin: BrokerAdmin): void {
  const stored = (group: string) => {
    const cfg = info.group(group);
    if (!cfg) throw new ApiError("GROUP_NOT_FOUND", { group });
    return cfg;
  };
  app.openapi(routes.createGroup, (c) => {
    const g = c.req.valid("json");
    if (info.group(g.groupName)) throw new ApiError("GROUP_EXISTS", { group: g.groupName });
    check(admin.upsertGroup(g, peerAddr(c)));
    return c.json(stored(g.groupName), 201);
  });
  app.openapi(routes.putGroup, (c) => {
    const { group } = c.req.valid("param");
    check(admin.upsertGroup({ ...c.req.valid("json"), groupName: group }, peerAddr(c)));
    return c.json(stored(group), 200);
  });
  app.openapi(routes.deleteGroup, (c) => {
    const { group } = c.req.valid("param");
    const removeOffset = c.req.valid("query").removeOffset === "true";
    if (!info.group(group) && !(removeOffset && info.groupOffsets(group).length > 0)) throw new ApiError("GROUP_NOT_FOUND", { group });
    check(admin.deleteGroup(group, removeOffset, peerAddr(c)));
    return c.json({ status: "ok" as const }, 200);
  });
  app.openapi(routes.resetOffset, (c) => {
    const { group } = c.req.valid("param");
    const b = c.req.valid("json");
    const given = [b.timestamp, b.offset, b.offsets].filter((x) => x !== undefined).length;
    if (given !== 1) throw new ApiError("BAD_REQUEST", { detail: "give exactly one of timestamp, offset, offsets" });
    const offsets = b.offsets ? new Map(Object.entries(b.offsets).map(([q, o]) => [Number(q), o])) : undefined;
    const done = admin.resetOffset({
      topic: b.topic,
      group,
      ...(b.timestamp !== undefined ? { timestamp: b.timestamp } : {}),
      ...(offsets ? { offsets } : b.offset !== undefined ? { offsets: allQueues(info, b.topic, b.offset) } : {}),
      force: b.force,
      from: peerAddr(c),
    });
    if ("refused" in done) throw refusalError(done.refused, done.remark);
    return c.json({ group, topic: b.topic, ...done }, 200);
  });
}

/** `offset` for every write queue of the topic (an unknown topic: none; the reset refuses it). */
function allQueues(info: BrokerInfo, topic: string, offset: number): Map<number, number> {
  const n = info.topic(topic)?.writeQueueNums ?? 0;
  return new Map(Array.from({ length: n }, (_, q) => [q, offset]));
}

export function brokerWriteRoutes(info: BrokerInfo, admin: BrokerAdmin): OpenAPIHono {
  const app = new OpenAPIHono();
  topicRoutes(app, info, admin);
  groupRoutes(app, info, admin);
  return app;
}
