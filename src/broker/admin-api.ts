/**
 * BrokerAdmin: the broker's state-changing and message admin operations as the HTTP admin API
 * (src/admin/) calls them. Each is the function the wire request's processor calls — one
 * implementation, so the two doors cannot drift apart:
 *
 *   upsertTopic      UPDATE_AND_CREATE_TOPIC             processors/topic-admin.ts upsertTopic
 *   deleteTopic      DELETE_TOPIC_IN_BROKER              processors/topic-admin.ts deleteTopicInBroker
 *   upsertGroup      UPDATE_AND_CREATE_SUBSCRIPTIONGROUP processors/admin.ts upsertGroup
 *   deleteGroup      DELETE_SUBSCRIPTIONGROUP            processors/admin.ts deleteGroup
 *   resetOffset      INVOKE_BROKER_TO_RESET_OFFSET       processors/broker-to-client.ts resetOffsets (commit: true)
 *   send             SEND_MESSAGE_V2                     SendMessageProcessor.send
 *   messageAt        VIEW_MESSAGE_BY_ID                  processors/query-message.ts viewMessage
 *   messagesByKey    QUERY_MESSAGE                       processors/query-message.ts queryMessagesByKey
 *   messagesInQueue  PULL_MESSAGE's store read           MessageStore.getMessage (no subscription, no hold)
 *   updateConfig     UPDATE_BROKER_CONFIG                runtime-config.ts through BrokerConfigAccess
 *
 * Refusals come back as OpRefusal (the wire code and remark, and a kind the HTTP side maps to a
 * status). Messages come back decoded (StoredMessage), bodies as bytes.
 */
import { MessageConst } from "../protocol/message-const.ts";
import {
  createOffsetMsgId,
  decodeOffsetMsgId,
  decodeRecordAt,
  formatHostAddress,
  tryParseHostAddress,
  type HostAddress,
  parseProperties,
  encodeProperties,
  type PutMessageStatus,
} from "../commitlog/index.ts";
import { AUTO_CREATE_TOPIC } from "../protocol/topics.ts";
import { ResponseCode, type ConfigUpdateOutcome } from "../remoting/index.ts";
import type { BrokerConfigAccess } from "./broker.ts";
import type { BrokerContext, OpRefusal } from "./context.ts";
import { deleteGroup, upsertGroup } from "./processors/admin.ts";
import { resetOffsets } from "./processors/broker-to-client.ts";
import { queryMessagesByKey, viewMessage, QUERY_MESSAGE_MAX_NUM } from "./processors/query-message.ts";
import type { SendMessageProcessor } from "./processors/send-message.ts";
import { deleteTopicInBroker, upsertTopic, type TopicInput } from "./processors/topic-admin.ts";

export type { OpRefusal, RefusalKind } from "./context.ts";
export type { TopicInput } from "./processors/topic-admin.ts";

/** The producer group the admin API's test messages carry (only transactions use it). */
const ADMIN_PRODUCER_GROUP = "ROCKETBUN_ADMIN_API";
/** The most messages one GET /messages?topic=&queueId=&offset= returns. */
export const QUEUE_READ_MAX_NUM = 32;

/** One stored message, decoded. */
export interface StoredMessage {
  /** The offset message id (store host + CommitLog offset), what VIEW_MESSAGE_BY_ID takes. */
  msgId: string;
  topic: string;
  queueId: number;
  queueOffset: number;
  commitLogOffset: number;
  storeSize: number;
  flag: number;
  sysFlag: number;
  bornTimestamp: number;
  bornHost: string;
  storeTimestamp: number;
  storeHost: string;
  reconsumeTimes: number;
  preparedTransactionOffset: number;
  properties: Record<string, string>;
  /** A copy of the body (the stored bytes; a compressed body stays compressed, sysFlag bit 0). */
  body: Uint8Array;
}

/** A test message (POST /messages). */
export interface AdminSend {
  topic: string;
  body: Uint8Array;
  tags?: string;
  keys?: string[];
  /** User properties (names not RocketMQ's own). */
  properties?: Record<string, string>;
  /** A queue of the topic; absent = one picked at random, as a producer's default. */
  queueId?: number;
  /** A delay level (1..18 by default), as a producer's DELAY property. */
  delayLevel?: number;
  from: string;
}

export interface AdminSendResult {
  status: PutMessageStatus;
  msgId: string;
  queueId: number;
  queueOffset: number;
  commitLogOffset: number;
}

export interface AdminResetOffset {
  topic: string;
  group: string;
  timestamp?: number;
  offsets?: ReadonlyMap<number, number>;
  force: boolean;
  from: string;
}

export interface BrokerAdmin {
  upsertTopic(t: TopicInput): OpRefusal | null;
  deleteTopic(topic: string): OpRefusal | null;
  /** `group`: a SubscriptionGroupConfig as JSON (groupName required, the rest at Java's defaults). */
  upsertGroup(group: Record<string, unknown>, from: string): OpRefusal | null;
  deleteGroup(group: string, removeOffset: boolean, from: string): OpRefusal | null;
  /** The new offset of every write queue, committed, and how many consumers online were told. */
  resetOffset(r: AdminResetOffset): { offsets: { queueId: number; offset: number }[]; clientsNotified: number } | OpRefusal;
  send(m: AdminSend): Promise<AdminSendResult | OpRefusal>;
  /** By offset message id; undefined = no message starts there (or the id is not one). */
  messageById(msgId: string): StoredMessage | undefined;
  messagesByKey(q: { topic: string; key: string; uniqueKey: boolean; maxNum: number; beginTimestamp: number; endTimestamp: number }): StoredMessage[];
  /** Up to maxNum (at most QUEUE_READ_MAX_NUM) stored messages of one queue from `offset` (undefined: the queue's first). */
  messagesInQueue(
    topic: string,
    queueId: number,
    offset: number | undefined,
    maxNum: number,
  ): { messages: StoredMessage[]; nextOffset: number; minOffset: number; maxOffset: number; status: string };
  /** UPDATE_BROKER_CONFIG with a properties text; undefined when the process gave the broker no config access. */
  updateConfig?(properties: string, from: string): Promise<ConfigUpdateOutcome>;
}

/** A stored record decoded for the API (a copy of its body), or undefined when the bytes are not one. */
export function decodeStored(bytes: Uint8Array): StoredMessage | undefined {
  const r = decodeRecordAt(bytes, 0, { checkCrc: false });
  if (!("totalSize" in r)) return undefined;
  return {
    msgId: createOffsetMsgId(r.storeHost, r.physicalOffset),
    topic: r.topic,
    queueId: r.queueId,
    queueOffset: r.queueOffset,
    commitLogOffset: r.physicalOffset,
    storeSize: r.totalSize,
    flag: r.flag,
    sysFlag: r.sysFlag,
    bornTimestamp: r.bornTimestamp,
    bornHost: formatHostAddress(r.bornHost),
    storeTimestamp: r.storeTimestamp,
    storeHost: formatHostAddress(r.storeHost),
    reconsumeTimes: r.reconsumeTimes,
    preparedTransactionOffset: r.preparedTransactionOffset,
    properties: parseProperties(r.properties),
    body: r.body.slice(),
  };
}

function decodedAll(records: readonly Uint8Array[]): StoredMessage[] {
  const out: StoredMessage[] = [];
  for (const b of records) {
    const m = decodeStored(b);
    if (m) out.push(m);
  }
  return out;
}

/** BORNHOST of a test message: the HTTP client's address when it parses, else 127.0.0.1:0. */
function bornHostOf(from: string): HostAddress {
  const h = tryParseHostAddress(from);
  return "invalid" in h ? { ip: new Uint8Array([127, 0, 0, 1]), port: 0 } : h;
}

/** The properties of a test message, as a producer sets them. */
function sendProperties(m: AdminSend): string {
  const props: Record<string, string> = { ...m.properties };
  if (m.tags !== undefined && m.tags !== "") props[MessageConst.TAGS] = m.tags;
  if (m.keys !== undefined && m.keys.length > 0) props[MessageConst.KEYS] = m.keys.join(MessageConst.PROPERTY_KEY_SEPARATOR);
  if (m.delayLevel !== undefined && m.delayLevel > 0) props[MessageConst.DELAY] = String(m.delayLevel);
  return encodeProperties(props);
}

async function adminSend(ctx: BrokerContext, sender: SendMessageProcessor, m: AdminSend): Promise<AdminSendResult | OpRefusal> {
  const out = await sender.send({
    header: {
      producerGroup: ADMIN_PRODUCER_GROUP,
      topic: m.topic,
      defaultTopic: AUTO_CREATE_TOPIC,
      defaultTopicQueueNums: ctx.settings.defaultTopicQueueNums,
      queueId: m.queueId ?? -1,
      sysFlag: 0,
      bornTimestamp: ctx.now(),
      flag: 0,
      properties: sendProperties(m),
      reconsumeTimes: 0,
      maxReconsumeTimes: undefined,
      batch: false,
    },
    body: m.body,
    batch: false,
    bornHost: bornHostOf(m.from),
    from: m.from,
    version: Number.MAX_SAFE_INTEGER,
  });
  if ("code" in out) return { refused: sendRefusalKind(out.code), code: out.code, remark: out.remark };
  const first = out.result.appended[0];
  if (!first) {
    const st = out.result.status;
    const invalid = st === "MESSAGE_ILLEGAL" || st === "PROPERTIES_SIZE_EXCEEDED";
    const code = invalid ? ResponseCode.MESSAGE_ILLEGAL : ResponseCode.SERVICE_NOT_AVAILABLE;
    return { refused: invalid ? "invalid" : "unavailable", code, remark: out.result.remark ?? st };
  }
  return {
    status: out.result.status,
    msgId: createOffsetMsgId(ctx.settings.storeHost, first.physicalOffset),
    queueId: out.queueId,
    queueOffset: first.queueOffset,
    commitLogOffset: first.physicalOffset,
  };
}

/** What kind of refusal a send-path answer is: an unknown topic or group, a broker or topic that takes no sends, or bad input. */
function sendRefusalKind(code: number): OpRefusal["refused"] {
  if (code === ResponseCode.TOPIC_NOT_EXIST || code === ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST) return "not_found";
  if (code === ResponseCode.NO_PERMISSION || code === ResponseCode.SERVICE_NOT_AVAILABLE) return "conflict";
  return "invalid";
}

/** The BrokerAdmin of a started broker: its context, its send processor, and the process's config owner. */
export function brokerAdmin(ctx: BrokerContext, sender: SendMessageProcessor, config: BrokerConfigAccess | undefined): BrokerAdmin {
  return {
    upsertTopic: (t) => upsertTopic(ctx, t),
    deleteTopic: (topic) => deleteTopicInBroker(ctx, topic),
    upsertGroup: (group, from) => upsertGroup(ctx, group, from),
    deleteGroup: (group, removeOffset, from) => deleteGroup(ctx, group, removeOffset, from),
    resetOffset: (r) => {
      const done = resetOffsets(ctx, { ...r, commit: true });
      if ("refused" in done) return done;
      return { offsets: done.table.map(([mq, offset]) => ({ queueId: mq.queueId, offset })), clientsNotified: done.clients };
    },
    send: (m) => adminSend(ctx, sender, m),
    messageById: (msgId) => {
      const id = decodeOffsetMsgId(msgId);
      if ("invalid" in id) return undefined;
      const bytes = viewMessage(ctx, id.offset);
      return bytes ? decodeStored(bytes) : undefined;
    },
    messagesByKey: (q) => decodedAll(queryMessagesByKey(ctx, { ...q, maxNum: Math.min(q.maxNum, QUERY_MESSAGE_MAX_NUM) }).records),
    messagesInQueue: (topic, queueId, offset, maxNum) => {
      const from = offset ?? ctx.store.getMinOffsetInQueue(topic, queueId);
      const r = ctx.store.getMessage(topic, queueId, from, Math.max(1, Math.min(maxNum, QUEUE_READ_MAX_NUM)));
      return { messages: decodedAll(r.messages), nextOffset: r.nextBeginOffset, minOffset: r.minOffset, maxOffset: r.maxOffset, status: r.status };
    },
    ...(config ? { updateConfig: (properties: string, from: string) => config.update(properties, from) } : {}),
  };
}
