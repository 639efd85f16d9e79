/**
 * SendMessage as Apache's proxy answers it in local mode (docs/PROTOCOL.md §9.4): the checks in
 * its order with its codes, the gRPC GrpcMessage turned into the record's properties and sysflag,
 * the queue picked by the server (round-robin, or by message group), then the broker's own
 * send (BrokerMessaging.send, the SEND_MESSAGE_V2 path) and its answer mapped back.
 */
import { MessageConst, type BrokerMessaging, type MessagingRefusal, type MessagingStored } from "../broker/index.ts";
import { isWriteable } from "../protocol/permission.ts";
import { SysFlag } from "../protocol/sys-flag.ts";
import { Code, Encoding, MessageType } from "./codes.ts";
import { int64, type GrpcMessage, type SendMessageRequest, type SendMessageResponse, type SendResultEntry, type Status } from "./messages.ts";
import { hasControlChar, topicProblem } from "./validate.ts";

/** The proxy's limits (ProxyConfig): body bytes, user properties, their total size, message group bytes. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
const MAX_USER_PROPERTIES = 128;
const MAX_USER_PROPERTY_BYTES = 16 * 1024;
const MAX_MESSAGE_GROUP_BYTES = 64;
const MAX_DELAY_MS = 24 * 3600 * 1000;
const MAX_TRANSACTION_RECOVERY_S = 3600;
/** The names a user property may not take: RocketMQ's own (MessageConst). */
const SYSTEM_PROPERTY_NAMES: ReadonlySet<string> = new Set(Object.values(MessageConst).filter((v) => v !== MessageConst.PROPERTY_KEY_SEPARATOR));

const utf8Bytes = (s: string) => Buffer.byteLength(s, "utf8");
const bad = (code: number, message: string): Status => ({ code, message });

/** Checks 1–2 of the request and 3–11 of each message, in the proxy's order; null when all pass. */
export function sendProblem(req: SendMessageRequest, now: number): Status | null {
  const first = req.messages[0];
  if (!first) return bad(Code.MESSAGE_CORRUPTED, "no message to send");
  const topic = topicProblem(first.topic);
  if (topic) return topic;
  for (const m of req.messages) {
    if (m.topic?.name !== first.topic?.name) return bad(Code.MESSAGE_CORRUPTED, "topic in message is not same");
    const p = messageProblem(m, now);
    if (p) return p;
  }
  return null;
}

function messageProblem(m: GrpcMessage, now: number): Status | null {
  if (m.body.length === 0) return bad(Code.MESSAGE_BODY_EMPTY, "message body cannot be empty");
  if (m.body.length > MAX_BODY_BYTES) return bad(Code.MESSAGE_BODY_TOO_LARGE, `message body cannot exceed the max ${MAX_BODY_BYTES}`);
  const props = Object.entries(m.user_properties);
  if (props.length > MAX_USER_PROPERTIES) return bad(Code.MESSAGE_PROPERTIES_TOO_LARGE, `too many user properties, max is ${MAX_USER_PROPERTIES}`);
  let size = 0;
  for (const [k, v] of props) {
    if (SYSTEM_PROPERTY_NAMES.has(k)) return bad(Code.ILLEGAL_MESSAGE_PROPERTY_KEY, `property is used by system: ${k}`);
    if (hasControlChar(k) || hasControlChar(v))
      return bad(Code.ILLEGAL_MESSAGE_PROPERTY_KEY, `the key or value of property ${k} contains a control character`);
    size += utf8Bytes(k) + utf8Bytes(v);
  }
  const sp = m.system_properties;
  const tag = sp?.tag ?? "";
  if (tag !== "" && (tag.trim() === "" || tag.includes("|") || hasControlChar(tag))) return bad(Code.ILLEGAL_MESSAGE_TAG, `tag is illegal: ${tag}`);
  for (const key of sp?.keys ?? []) {
    if (key !== "" && (key.trim() === "" || hasControlChar(key))) return bad(Code.ILLEGAL_MESSAGE_KEY, `key is illegal: ${key}`);
    size += utf8Bytes(key);
  }
  size += utf8Bytes(tag);
  if (size > MAX_USER_PROPERTY_BYTES) {
    return bad(Code.MESSAGE_PROPERTIES_TOO_LARGE, `the total size of user property is too large, max is ${MAX_USER_PROPERTY_BYTES}`);
  }
  return systemPropertiesProblem(m, now);
}

/** Checks 8–11: message id, transaction recovery time, delivery time, message group. */
function systemPropertiesProblem(m: GrpcMessage, now: number): Status | null {
  const sp = m.system_properties;
  if ((sp?.message_id ?? "").trim() === "") return bad(Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty");
  const recovery = sp?.orphaned_transaction_recovery_duration;
  if (sp?.message_type === MessageType.TRANSACTION && recovery && int64(recovery.seconds) > MAX_TRANSACTION_RECOVERY_S) {
    return bad(Code.BAD_REQUEST, `the max orphaned transaction recovery duration is ${MAX_TRANSACTION_RECOVERY_S}s`);
  }
  const at = sp?.delivery_timestamp;
  if (at && int64(at.seconds) * 1000 - now > MAX_DELAY_MS) return bad(Code.ILLEGAL_DELIVERY_TIME, `the max delay is ${MAX_DELAY_MS}ms`);
  const group = sp?.message_group ?? "";
  if (group !== "" && (group.trim() === "" || utf8Bytes(group) >= MAX_MESSAGE_GROUP_BYTES || hasControlChar(group))) {
    return bad(Code.ILLEGAL_MESSAGE_GROUP, `message group is illegal: ${group}`);
  }
  return null;
}

/** The record's properties of one gRPC message (the proxy's conversion). */
export function recordProperties(m: GrpcMessage, topic: string, peer: string): Record<string, string> {
  const sp = m.system_properties;
  const p: Record<string, string> = { ...m.user_properties };
  if (sp?.tag) p[MessageConst.TAGS] = sp.tag;
  if (sp && sp.keys.length > 0) p[MessageConst.KEYS] = sp.keys.join(MessageConst.PROPERTY_KEY_SEPARATOR);
  if (sp?.message_id) p[MessageConst.UNIQ_KEY] = sp.message_id;
  if (sp?.message_type === MessageType.TRANSACTION) {
    p[MessageConst.TRAN_MSG] = "true";
    const r = sp.orphaned_transaction_recovery_duration;
    if (r) p[MessageConst.CHECK_IMMUNITY_TIME_IN_SECONDS] = String(int64(r.seconds));
  }
  if (sp?.delivery_timestamp) p[MessageConst.TIMER_DELIVER_MS] = String(timestampMs(sp.delivery_timestamp));
  if (sp?.delivery_attempt) p[MessageConst.RECONSUME_TIME] = String(sp.delivery_attempt);
  p[MessageConst.PGROUP] = topic;
  if (sp?.message_group) p[MessageConst.SHARDINGKEY] = sp.message_group;
  if (sp?.trace_context) p[MessageConst.TRACE_CONTEXT] = sp.trace_context;
  p[MessageConst.BORN_HOST] = sp?.born_host?.trim() ? sp.born_host : peer;
  if (sp?.born_timestamp) p[MessageConst.BORN_TIMESTAMP] = String(timestampMs(sp.born_timestamp));
  return p;
}

function timestampMs(t: { seconds: Parameters<typeof int64>[0]; nanos?: number }): number {
  return int64(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1_000_000);
}

/** The message's actual type, from its record properties by the proxy's precedence. */
export function actualType(p: Record<string, string>): number {
  if (p[MessageConst.TRAN_MSG] === "true") return MessageType.TRANSACTION;
  if (p[MessageConst.DELAY] || p[MessageConst.TIMER_DELIVER_MS] || p[MessageConst.TIMER_DELAY_SEC] || p[MessageConst.TIMER_DELAY_MS])
    return MessageType.DELAY;
  if (p[MessageConst.SHARDINGKEY]) return MessageType.FIFO;
  return MessageType.NORMAL;
}

const TYPE_NAMES = Object.fromEntries(Object.entries(MessageType).map(([k, v]) => [v, k === "MESSAGE_TYPE_UNSPECIFIED" ? "UNSPECIFIED" : k]));

/** Java String.hashCode (UTF-16 units, int32 wrap). */
export function javaStringHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

/** Guava Hashing.consistentHash(long, buckets): the proxy's queue for a message group. */
export function consistentHash(input: number, buckets: number): number {
  let state = BigInt.asUintN(64, BigInt(input));
  let candidate = 0;
  for (;;) {
    state = BigInt.asUintN(64, 2862933555777941757n * state + 1n);
    const d = (Number(state >> 33n) + 1) / 2147483648;
    const next = Math.floor((candidate + 1) / d);
    if (next >= 0 && next < buckets) candidate = next;
    else return candidate;
  }
}

/** Round-robin over a topic's write queues from a random start, as the proxy's selector walks. */
export class QueueSelector {
  #next = Math.floor(Math.random() * 0x7fffffff);

  /** A write queue id of `writeQueueNums`; one message with a group hashes it, anything else goes round-robin. */
  select(writeQueueNums: number, group: string | undefined): number {
    if (group) return consistentHash(javaStringHash(group), writeQueueNums);
    this.#next = (this.#next + 1) % 0x7fffffff;
    return this.#next % writeQueueNums;
  }
}

/** What the proxy answers for a store status other than PUT_OK, or a refusal before the store. */
function failedStatus(r: MessagingStored | MessagingRefusal): Status {
  if ("code" in r) return { code: Code.INTERNAL_SERVER_ERROR, message: r.remark };
  switch (r.status) {
    case "FLUSH_DISK_TIMEOUT":
      return { code: Code.MASTER_PERSISTENCE_TIMEOUT, message: `send message failed, sendStatus=${r.status}` };
    case "FLUSH_SLAVE_TIMEOUT":
      return { code: Code.SLAVE_PERSISTENCE_TIMEOUT, message: `send message failed, sendStatus=${r.status}` };
    case "SLAVE_NOT_AVAILABLE":
      return { code: Code.HA_NOT_AVAILABLE, message: `send message failed, sendStatus=${r.status}` };
    default:
      return { code: Code.INTERNAL_SERVER_ERROR, message: r.remark ?? r.status };
  }
}

const OK: Status = { code: Code.OK, message: "OK" };

/** The whole RPC: checks, type check, queue, the broker's send per message, the entries' statuses folded. */
export async function sendMessage(
  broker: BrokerMessaging,
  selector: QueueSelector,
  req: SendMessageRequest,
  peer: string,
  now: number,
): Promise<SendMessageResponse> {
  const problem = sendProblem(req, now);
  if (problem) return { status: problem, entries: [] };
  const topic = req.messages[0]!.topic!.name;
  const tc = broker.topic(topic);
  const props = req.messages.map((m) => recordProperties(m, topic, peer));
  // Topics carry no message.type attribute yet: an existing topic counts as NORMAL, a missing one UNSPECIFIED.
  const expected = tc ? MessageType.NORMAL : MessageType.MESSAGE_TYPE_UNSPECIFIED;
  for (const p of props) {
    const actual = actualType(p);
    if (actual !== expected) {
      const message = `TopicMessageType validate failed, the expected type is ${TYPE_NAMES[expected]}, but actual type is ${TYPE_NAMES[actual]}`;
      return { status: bad(Code.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, message), entries: [] };
    }
  }
  if (!tc || !isWriteable(tc.perm) || tc.writeQueueNums <= 0) return { status: bad(Code.FORBIDDEN, "no writable queue"), entries: [] };
  const group = req.messages.length === 1 ? req.messages[0]!.system_properties?.message_group : undefined;
  const queueId = selector.select(tc.writeQueueNums, group);
  const entries: SendResultEntry[] = [];
  for (const [i, m] of req.messages.entries()) entries.push(await sendOne(broker, m, props[i]!, topic, queueId, peer, now));
  const codes = new Set(entries.map((e) => e.status.code));
  const status = codes.size === 1 ? entries[0]!.status : { code: Code.MULTIPLE_RESULTS, message: "send message failed" };
  return { status, entries };
}

async function sendOne(
  broker: BrokerMessaging,
  m: GrpcMessage,
  props: Record<string, string>,
  topic: string,
  queueId: number,
  peer: string,
  now: number,
): Promise<SendResultEntry> {
  const sp = m.system_properties;
  let sysFlag = 0;
  if (sp?.body_encoding === Encoding.GZIP) sysFlag |= SysFlag.COMPRESSED;
  if (sp?.message_type === MessageType.TRANSACTION) sysFlag |= SysFlag.TRANSACTION_PREPARED_TYPE;
  const born = props[MessageConst.BORN_TIMESTAMP];
  const r = await broker.send({
    topic,
    queueId,
    sysFlag,
    bornTimestamp: born !== undefined ? Number(born) : now,
    properties: props,
    body: m.body,
    bornHost: peer,
    producerGroup: topic,
  });
  const id = sp?.message_id ?? "";
  if ("code" in r || !r.stored) return { status: failedStatus(r), message_id: id };
  const status = r.status === "PUT_OK" ? OK : failedStatus(r);
  // A 5.3 broker's transactionId is the message's UNIQ_KEY, for every message.
  return { status, message_id: id, transaction_id: id, offset: r.stored.queueOffset };
}
