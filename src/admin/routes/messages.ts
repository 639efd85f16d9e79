/**
 * Broker routes (messages): send a test message, look messages up. The same operations as the
 * wire requests (BrokerAdmin, src/broker/admin-api.ts):
 *
 *   POST /messages                          SEND_MESSAGE_V2's send path (checks, delay, store) → the send result
 *   GET  /messages/{msgId}                  VIEW_MESSAGE_BY_ID (an offset message id); with ?topic= an id that
 *                                           is not one is looked up as a client unique key (QUERY_MESSAGE)
 *   GET  /messages?topic=&key=              QUERY_MESSAGE by key (the IndexFiles)
 *   GET  /messages?topic=&queueId=&offset=  PULL_MESSAGE's store read from a queue offset (no subscription)
 *
 * Bodies travel as base64 always, plus text when the bytes are valid UTF-8.
 */
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { BrokerAdmin, StoredMessage } from "../../broker/index.ts";
import { MessageConst } from "../../broker/index.ts";
import { ApiError, refusalError } from "../errors.ts";
import { peerAddr } from "../peer.ts";
import { errors, Int, IntQuery, json, jsonBody, needsBody, StoredMessageSchema, TopicName } from "../schemas.ts";

const tags = ["broker: messages"];

/** RocketMQ's own property names: a user property may not take one (Java's Message.putUserProperty). */
const RESERVED_PROPERTIES = new Set<string>(Object.values(MessageConst));
/** The separators of the stored property string: never inside a name or a value. */
const SEPARATORS = /[\u0001\u0002]/;

const sendFields = {
  topic: TopicName,
  tags: z
    .string()
    .max(255)
    .regex(/^[^\u0001\u0002]*$/)
    .optional()
    .openapi({ example: "TagA" }),
  keys: z
    .array(
      z
        .string()
        .min(1)
        .max(255)
        .regex(/^[^\s\u0001\u0002]+$/),
    )
    .max(32)
    .optional()
    .openapi({ description: "message keys (QUERY_MESSAGE finds the message by each)" }),
  properties: z.record(z.string().min(1).max(255), z.string().max(4096)).optional().openapi({ description: "user properties" }),
  queueId: z.number().int().min(0).max(65535).optional().openapi({ description: "a queue of the topic; absent = one at random" }),
  delayLevel: z
    .number()
    .int()
    .min(0)
    .max(255)
    .optional()
    .openapi({ description: "a delay level as a producer sets it (1 = the first of broker.messageDelayLevel)" }),
};

/** The body as text or as base64 bytes: two strict shapes, so a request gives exactly one. */
const SendBody = z
  .union([
    z
      .object({ ...sendFields, body: z.string().openapi({ description: "the body as text (stored as UTF-8)", example: "hello" }) })
      .strict()
      .openapi("SendText"),
    z
      .object({ ...sendFields, bodyBase64: z.base64().openapi({ description: "the body as base64 bytes" }) })
      .strict()
      .openapi("SendBytes"),
  ])
  .openapi("SendMessage");

const SendResult = z
  .object({
    status: z.enum(["PUT_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"]).openapi({
      description: "PUT_OK, or stored but not yet as durable as the broker's flush or replication mode promises",
    }),
    msgId: z.string().openapi({ description: "offset message id (GET /messages/{msgId})" }),
    queueId: Int,
    queueOffset: Int,
    commitLogOffset: Int,
  })
  .openapi("SendResult");

const MessageList = z
  .object({
    messages: z.array(StoredMessageSchema),
    nextOffset: Int.optional().openapi({ description: "queue reads: the offset to read from next" }),
    minOffset: Int.optional(),
    maxOffset: Int.optional(),
    status: z.string().optional().openapi({ description: "queue reads: the store's GetMessageStatus (FOUND, OFFSET_OVERFLOW_ONE, …)" }),
  })
  .openapi("MessageList");

const MsgIdParam = z.object({
  msgId: z
    .string()
    .min(1)
    .max(128)
    .openapi({ param: { name: "msgId", in: "path" }, description: "an offset message id (32 or 56 hex digits), or a unique key with ?topic=" }),
});

const ListQuery = z.object({
  topic: z.string().min(1).max(127),
  key: z.string().min(1).max(255).optional().openapi({ description: "find by key (QUERY_MESSAGE); absent: read a queue from an offset" }),
  queueId: IntQuery.max(65535).optional().openapi({ description: "the queue to read (default 0); with key: only messages of this queue" }),
  offset: IntQuery.optional().openapi({
    description: "the queue offset to read from (default the queue's first); with key: only messages at or after it",
  }),
  maxNum: IntQuery.min(1).max(64).default(32).openapi({ description: "at most this many (key queries: 64, queue reads: 32)" }),
  begin: IntQuery.default(0).openapi({ description: "key queries: stored at or after (ms since the epoch)" }),
  end: IntQuery.default(Number.MAX_SAFE_INTEGER).openapi({ description: "key queries: stored at or before (ms)" }),
});

const routes = {
  send: createRoute({
    method: "post",
    path: "/messages",
    tags,
    summary: "send a test message (the SEND_MESSAGE_V2 path)",
    request: { body: jsonBody(SendBody, "the message") },
    middleware: needsBody,
    responses: { 200: json(SendResult, "stored"), ...errors(400, 403, 404, 409, 415, 503) },
  }),
  byId: createRoute({
    method: "get",
    path: "/messages/{msgId}",
    tags,
    summary: "one message by offset message id (VIEW_MESSAGE_BY_ID), or by unique key with ?topic=",
    request: { params: MsgIdParam, query: z.object({ topic: z.string().min(1).max(127).optional() }) },
    responses: { 200: json(StoredMessageSchema, "the message"), ...errors(400, 404) },
  }),
  list: createRoute({
    method: "get",
    path: "/messages",
    tags,
    summary: "messages of a topic by key (QUERY_MESSAGE), or read from a queue offset (the pull path's store read)",
    request: { query: ListQuery },
    responses: { 200: json(MessageList, "the messages found (possibly none)"), ...errors(400) },
  }),
};

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The body both ways: base64 always, text only when the bytes are valid UTF-8. */
function bodyJson(b: Uint8Array): { base64: string; text?: string; sizeBytes: number } {
  let text: string | undefined;
  try {
    text = utf8.decode(b);
  } catch {
    text = undefined;
  }
  return { base64: Buffer.from(b).toString("base64"), ...(text !== undefined ? { text } : {}), sizeBytes: b.length };
}

export function messageJson(m: StoredMessage): z.infer<typeof StoredMessageSchema> {
  const tagsValue = m.properties[MessageConst.TAGS];
  const keys = m.properties[MessageConst.KEYS];
  return {
    ...m,
    ...(tagsValue !== undefined ? { tags: tagsValue } : {}),
    ...(keys !== undefined ? { keys: keys.split(MessageConst.PROPERTY_KEY_SEPARATOR).filter((k) => k !== "") } : {}),
    body: bodyJson(m.body),
  };
}

function checkProperties(props: Record<string, string> | undefined): void {
  for (const [k, v] of Object.entries(props ?? {})) {
    if (RESERVED_PROPERTIES.has(k))
      throw new ApiError("BAD_REQUEST", { detail: `property ${k} is one of RocketMQ's own; use tags, keys, delayLevel` });
    if (SEPARATORS.test(k) || SEPARATORS.test(v))
      throw new ApiError("BAD_REQUEST", { detail: `property ${JSON.stringify(k)}: names and values may not contain \\u0001 or \\u0002` });
  }
}

export function messageRoutes(admin: BrokerAdmin): OpenAPIHono {
  const app = new OpenAPIHono();
  app.openapi(routes.send, async (c) => {
    const m = c.req.valid("json");
    checkProperties(m.properties);
    const body = "body" in m ? new TextEncoder().encode(m.body) : new Uint8Array(Buffer.from(m.bodyBase64, "base64"));
    const { topic, tags, keys, properties, queueId, delayLevel } = m;
    const r = await admin.send({ topic, body, tags, keys, properties, queueId, delayLevel, from: peerAddr(c) });
    if ("refused" in r) throw refusalError(r.refused, r.remark);
    if (r.status === "PUT_OK" || r.status === "FLUSH_DISK_TIMEOUT" || r.status === "FLUSH_SLAVE_TIMEOUT" || r.status === "SLAVE_NOT_AVAILABLE") {
      return c.json({ ...r, status: r.status }, 200);
    }
    throw new ApiError("UNAVAILABLE", { detail: r.status });
  });
  app.openapi(routes.byId, (c) => {
    const { msgId } = c.req.valid("param");
    const { topic } = c.req.valid("query");
    const found =
      admin.messageById(msgId) ??
      (topic !== undefined
        ? admin.messagesByKey({ topic, key: msgId, uniqueKey: true, maxNum: 1, beginTimestamp: 0, endTimestamp: Number.MAX_SAFE_INTEGER })[0]
        : undefined);
    if (!found)
      throw new ApiError("MESSAGE_NOT_FOUND", {
        detail: `no message ${msgId}${topic !== undefined ? ` (offset id or unique key of ${topic})` : ""}`,
      });
    return c.json(messageJson(found), 200);
  });
  app.openapi(routes.list, (c) => {
    const q = c.req.valid("query");
    if (q.key !== undefined) {
      const found = admin.messagesByKey({
        topic: q.topic,
        key: q.key,
        uniqueKey: false,
        maxNum: q.maxNum,
        beginTimestamp: q.begin,
        endTimestamp: q.end,
      });
      const { queueId, offset } = q;
      const messages = found.filter((m) => (queueId === undefined || m.queueId === queueId) && (offset === undefined || m.queueOffset >= offset));
      return c.json({ messages: messages.map(messageJson) }, 200);
    }
    const r = admin.messagesInQueue(q.topic, q.queueId ?? 0, q.offset, q.maxNum);
    return c.json({ ...r, messages: r.messages.map(messageJson) }, 200);
  });
  return app;
}
