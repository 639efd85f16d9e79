/**
 * The admin API's shapes as zod schemas: each route validates its path, query and body with them,
 * and /openapi.json is generated from them (./openapi.ts), so the document and the checks are one
 * definition. Responses are described for every status a route can answer, errors included (the
 * one error body of ./errors.ts).
 */
import { z } from "@hono/zod-openapi";
import { GROUP_NAME_MAX_CHARS, GROUP_NAME_PATTERN, TOPIC_NAME_MAX_CHARS, TOPIC_NAME_PATTERN } from "../broker/index.ts";
import type { MiddlewareHandler } from "hono";
import { API_ERRORS, ApiError, type ApiErrorCode } from "./errors.ts";
import { INT32_MAX } from "../common/int32.ts";

/** The one error body (docs/CONVENTIONS.md §12). */
export const ErrorBody = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(API_ERRORS) as [ApiErrorCode, ...ApiErrorCode[]]).openapi({ description: "stable error code (src/admin/errors.ts)" }),
      message: z.string(),
    }),
  })
  .openapi("Error");

/** What each error status means, for the document. */
const ERROR_MEANING = {
  400: "the request is malformed or refused as invalid (bad parameter, body, name or value)",
  401: "the admin token is configured and the request has none or a wrong one",
  403: "a write with no admin token configured: writes need admin.token or admin.tokenFile",
  404: "no such topic, group, message or route",
  409: "refused in this state (a slave takes no writes, a system topic, a topic not writable, already exists)",
  415: "the body is not application/json",
  422: "the configuration file was not reloaded",
  503: "the store takes no writes now (disk full, write path halted)",
} as const;

export type ErrorStatus = keyof typeof ERROR_MEANING;

/** The error responses of a route: 401 always (every route but /health), plus those named. */
export function errors(...statuses: ErrorStatus[]) {
  const out: Partial<Record<ErrorStatus, { description: string; content: { "application/json": { schema: typeof ErrorBody } } }>> = {};
  for (const s of [401, ...statuses] as ErrorStatus[])
    out[s] = { description: ERROR_MEANING[s], content: { "application/json": { schema: ErrorBody } } };
  return out;
}

/** A JSON response or body of `schema`. */
export function json<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { "application/json": { schema } } };
}

/** A required JSON request body. */
export function jsonBody<T extends z.ZodType>(schema: T, description: string) {
  return { required: true, description, content: { "application/json": { schema } } };
}

/**
 * Route middleware of the routes with a required body: a request with no body at all is refused
 * (400) rather than read as `{}` (the JSON validator's reading of a request without a
 * Content-Type); a body of another type is refused with 415 by the validator.
 */
export const needsBody: MiddlewareHandler = async (c, next) => {
  if (c.req.header("content-type") === undefined)
    throw new ApiError("BAD_REQUEST", { detail: "this request needs a JSON body (Content-Type: application/json)" });
  await next();
};

/** Offsets, timestamps, counts: JSON numbers that are exact integers (Java longs up to 2^53 − 1). */
export const Int = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
/** A signed exact integer (a committed offset may be -1). */
export const SignedInt = z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);
/** An integer query parameter (query strings are text). */
export const IntQuery = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** A name a topic can be created with (the broker's rule, protocol/topics.ts). */
export const TopicName = z
  .string()
  .min(1)
  .max(TOPIC_NAME_MAX_CHARS)
  .regex(TOPIC_NAME_PATTERN)
  .openapi({ description: `topic name: ${TOPIC_NAME_PATTERN.source}, at most ${TOPIC_NAME_MAX_CHARS} characters`, example: "TopicTest" });
/** A name a group can be created with (new groups; older ones read from files may be laxer). */
export const GroupName = z
  .string()
  .min(1)
  .max(GROUP_NAME_MAX_CHARS)
  .regex(GROUP_NAME_PATTERN)
  .openapi({ description: `group name: ${GROUP_NAME_PATTERN.source}, at most ${GROUP_NAME_MAX_CHARS} characters`, example: "GroupTest" });

const pathParam = (name: string, description: string) => ({ param: { name, in: "path" as const }, description });

/** {topic} of a read: any name (a lookup of a name that cannot exist is a 404). */
export const TopicParam = z.object({ topic: z.string().min(1).max(255).openapi(pathParam("topic", "topic name")) });
/** {topic} of a write: a valid topic name. */
export const TopicWriteParam = z.object({ topic: TopicName.openapi(pathParam("topic", "topic name")) });
export const GroupParam = z.object({ group: z.string().min(1).max(255).openapi(pathParam("group", "consumer group name")) });
export const GroupWriteParam = z.object({ group: GroupName.openapi(pathParam("group", "consumer group name")) });

export const TopicConfigSchema = z
  .object({
    topicName: z.string(),
    readQueueNums: Int,
    writeQueueNums: Int,
    perm: Int.openapi({ description: "PermName bits: 4 read, 2 write, 1 inherit (6 = read and write)" }),
    topicFilterType: z.enum(["SINGLE_TAG", "MULTI_TAG"]),
    topicSysFlag: Int,
    order: z.boolean(),
  })
  .openapi("TopicConfig");

/** POST /topics and PUT /topics/{topic}: UPDATE_AND_CREATE_TOPIC's fields. */
export const TopicSettings = z.object({
  readQueueNums: z.number().int().min(0).max(65535).default(8).openapi({ description: "read queues (mqadmin's default 8)" }),
  writeQueueNums: z.number().int().min(0).max(65535).default(8).openapi({ description: "write queues (mqadmin's default 8)" }),
  perm: z.number().int().min(0).max(15).default(6).openapi({ description: "PermName bits: 4 read, 2 write (default 6 = both)" }),
  topicFilterType: z.enum(["SINGLE_TAG", "MULTI_TAG"]).default("SINGLE_TAG"),
  topicSysFlag: z.number().int().min(0).max(2147483647).default(0),
  order: z.boolean().default(false).openapi({ description: "an ordered topic (clients keep one queue's messages in order)" }),
});
export const TopicCreate = TopicSettings.extend({ topicName: TopicName }).openapi("TopicCreate");

/** POST /groups and PUT /groups/{group}: a SubscriptionGroupConfig (missing fields at Java's defaults). */
export const GroupSettings = z.object({
  consumeEnable: z.boolean().optional(),
  consumeFromMinEnable: z.boolean().optional(),
  consumeBroadcastEnable: z.boolean().optional(),
  retryQueueNums: z.number().int().min(0).max(INT32_MAX).optional(),
  retryMaxTimes: z
    .number()
    .int()
    .min(-INT32_MAX - 1)
    .max(INT32_MAX)
    .optional(),
  brokerId: Int.optional(),
  whichBrokerWhenConsumeSlowly: Int.optional(),
  notifyConsumerIdsChangedEnable: z.boolean().optional(),
});
export const GroupCreate = GroupSettings.extend({ groupName: GroupName }).openapi("GroupCreate");

export const GroupConfigSchema = z
  .object({
    groupName: z.string(),
    consumeEnable: z.boolean(),
    consumeFromMinEnable: z.boolean(),
    consumeBroadcastEnable: z.boolean(),
    retryQueueNums: Int,
    retryMaxTimes: SignedInt,
    brokerId: Int,
    whichBrokerWhenConsumeSlowly: Int,
    notifyConsumerIdsChangedEnable: z.boolean(),
  })
  .openapi("SubscriptionGroupConfig");

export const Done = z.object({ status: z.literal("ok") }).openapi("Done");

/** A message body both ways: base64 always; text too when the bytes are valid UTF-8. */
export const BodyOut = z
  .object({
    base64: z.string().openapi({ description: "the stored bytes, base64 (always present)" }),
    text: z.string().optional().openapi({ description: "the bytes as text, present only when they are valid UTF-8" }),
    sizeBytes: Int,
  })
  .openapi("MessageBody");

export const StoredMessageSchema = z
  .object({
    msgId: z.string().openapi({ description: "offset message id (store host and CommitLog offset), as VIEW_MESSAGE_BY_ID takes it" }),
    topic: z.string(),
    queueId: Int,
    queueOffset: Int,
    commitLogOffset: Int,
    storeSize: Int,
    flag: SignedInt,
    sysFlag: SignedInt,
    bornTimestamp: SignedInt,
    bornHost: z.string(),
    storeTimestamp: SignedInt,
    storeHost: z.string(),
    reconsumeTimes: SignedInt,
    preparedTransactionOffset: SignedInt,
    tags: z.string().optional(),
    keys: z.array(z.string()).optional(),
    properties: z.record(z.string(), z.string()),
    body: BodyOut,
  })
  .openapi("StoredMessage");

/** GET /stats/requests: the request pipeline's stats hook, by request code. */
export const RequestStatsSchema = z
  .object({
    sinceMs: Int,
    codes: z.array(
      z.object({
        code: SignedInt,
        name: z.string(),
        count: Int,
        errors: Int,
        responses: z.record(z.string(), Int),
        latency: z.object({
          buckets: z.array(z.object({ leMs: z.number(), count: Int })),
          sumMs: z.number(),
          p50Ms: z.number(),
          p99Ms: z.number(),
        }),
      }),
    ),
  })
  .openapi("RequestStats");
