/**
 * SendMessageProcessor: SEND_MESSAGE (long header names), SEND_MESSAGE_V2 (single letters),
 * SEND_BATCH_MESSAGE and CONSUMER_SEND_MSG_BACK (docs/PROTOCOL.md §3.4, §3.9, §4.8).
 *
 * Order of checks, as the Java broker: role → topic name → system topic → topic exists (or is
 * auto-created) → queue id → writable → retry/DLQ redirect → size limits → store. Every refusal
 * carries a remark that says what to change.
 */
import { MessageConst } from "../../protocol/message-const.ts";
import { SysFlag } from "../../protocol/sys-flag.ts";
import {
  createOffsetMsgId,
  decodeMessageBatch,
  encodeProperties,
  parseProperties,
  setIndexedFields,
  tryParseHostAddress,
  type HostAddress,
  type PutMessageRequest,
  type PutMessageResult,
} from "../../commitlog/index.ts";
import {
  AUTO_CREATE_TOPIC,
  defaultTopicConfig,
  dlqTopic,
  isNotAllowedSendTopic,
  RETRY_GROUP_TOPIC_PREFIX,
  retryTopic,
  validateTopicName,
  type TopicConfig,
} from "../../protocol/topics.ts";
import { isWriteable, PermName } from "../../protocol/permission.ts";
import {
  createResponse,
  optInt,
  optString,
  reqInt,
  toInt,
  reqString,
  RequestCode,
  ResponseCode,
  type ExtFields,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import type { BrokerContext, BrokerSettings } from "../context.ts";
import { isTransactionPrepare } from "../transaction/half-message.ts";
import type { TransactionalMessageService } from "../transaction/transactional-message-service.ts";

const V3_4_9 = 121;

/** The send header with long names, whichever form it arrived in. */
export interface SendHeader {
  producerGroup: string;
  topic: string;
  defaultTopic: string;
  defaultTopicQueueNums: number;
  queueId: number;
  sysFlag: number;
  bornTimestamp: number;
  flag: number;
  properties: string;
  reconsumeTimes: number;
  maxReconsumeTimes: number | undefined;
  batch: boolean;
}

/** SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE carry the same fields under one-letter names (Java's SendMessageRequestHeaderV2). */
export const V1_TO_V2 = {
  producerGroup: "a",
  topic: "b",
  defaultTopic: "c",
  defaultTopicQueueNums: "d",
  queueId: "e",
  sysFlag: "f",
  bornTimestamp: "g",
  flag: "h",
  properties: "i",
  reconsumeTimes: "j",
  unitMode: "k",
  maxReconsumeTimes: "l",
  batch: "m",
  bname: "n",
} as const;

/**
 * Reads the send header by long name. The hot path: no copy of extFields into a long-name map,
 * each field is looked up under its one-letter name (V2) and, failing that, its long name.
 */
export function parseSendHeader(cmd: RemotingCommand, now: () => number = Date.now): SendHeader {
  const ext: ExtFields = cmd.extFields ?? {};
  const v2 = cmd.code !== RequestCode.SEND_MESSAGE;
  const raw = (long: keyof typeof V1_TO_V2): string | undefined => (v2 ? (ext[V1_TO_V2[long]] ?? ext[long]) : ext[long]);
  const str = (long: keyof typeof V1_TO_V2): string | undefined => {
    const v = raw(long);
    return v === undefined || v === "" ? undefined : v;
  };
  const int = (long: keyof typeof V1_TO_V2): number | undefined => {
    const v = str(long);
    return v === undefined ? undefined : toInt(long, v);
  };
  const producerGroup = str("producerGroup") ?? reqString(undefined, "producerGroup");
  const topic = str("topic") ?? reqString(undefined, "topic");
  const queueId = int("queueId") ?? toInt("queueId", reqString(undefined, "queueId"));
  const batch = str("batch");
  return {
    producerGroup,
    topic,
    defaultTopic: str("defaultTopic") ?? AUTO_CREATE_TOPIC,
    defaultTopicQueueNums: int("defaultTopicQueueNums") ?? 4,
    queueId,
    sysFlag: int("sysFlag") ?? 0,
    bornTimestamp: int("bornTimestamp") ?? now(),
    flag: int("flag") ?? 0,
    properties: str("properties") ?? "",
    reconsumeTimes: int("reconsumeTimes") ?? 0,
    maxReconsumeTimes: int("maxReconsumeTimes"),
    batch: batch !== undefined ? batch === "true" : cmd.code === RequestCode.SEND_BATCH_MESSAGE,
  };
}

type Refusal = { code: number; remark: string };

const EMPTY_BODY = new Uint8Array(0);

/** One send after its header was read: from the wire, or from the admin API (POST /messages). */
export interface SendInput {
  header: SendHeader;
  body: Uint8Array;
  /** SEND_BATCH_MESSAGE with batch set: the body is a batch of messages. */
  batch: boolean;
  bornHost: HostAddress;
  /** Who sent it, for remarks (the peer's address). */
  from: string;
  /** The request's protocol version (a retry's max reconsume times is read from the header from 3.4.9 on). */
  version: number;
}

/** Refused before the store (the wire code and remark), or the store's result and the queue addressed. */
export type SendOutcome = Refusal | { result: PutMessageResult; queueId: number };

/** A send's topic: found, or planned (`create` makes it once the message is stored). */
interface TopicTarget {
  tc: TopicConfig;
  create?: () => void;
}

/** A slave takes no writes (sends, send-backs, replies). */
export function slaveRefusal(ctx: BrokerContext): Refusal | null {
  if (ctx.role.isSlave)
    return { code: ResponseCode.SERVICE_NOT_AVAILABLE, remark: `broker ${ctx.settings.brokerName} is a slave: it does not take writes, send to its master` };
  return null;
}

/**
 * Counts the stored messages of one put (one topic). The pulls parked for them are woken by the
 * store's arrival listener (MessageStoreOptions.messageArriving), whoever wrote them.
 */
export function recordPuts(ctx: BrokerContext, reqs: PutMessageRequest[], result: PutMessageResult): void {
  if (result.appended.length === 0) return;
  let bytes = 0;
  for (let i = 0; i < result.appended.length; i++) bytes += reqs[i]!.body.length;
  ctx.stats.recordPut(result.appended.length, bytes, reqs[0]!.topic);
}

export interface ScheduleHook {
  /** The request to store instead (e.g. diverted to SCHEDULE_TOPIC_XXXX), or null if not delayed. */
  divert(req: PutMessageRequest, props: Record<string, string>): PutMessageRequest | Refusal | null;
}

export class SendMessageProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;
  readonly #schedule: ScheduleHook | undefined;
  readonly #tx: TransactionalMessageService | undefined;

  constructor(ctx: BrokerContext, schedule?: ScheduleHook, tx?: TransactionalMessageService) {
    this.#ctx = ctx;
    this.#schedule = schedule;
    this.#tx = tx;
  }

  static readonly CODES = [RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.CONSUMER_SEND_MSG_BACK];

  process(conn: RemotingConnection, cmd: RemotingCommand): Promise<RemotingCommand> | RemotingCommand {
    if (cmd.code === RequestCode.CONSUMER_SEND_MSG_BACK) return this.#sendBack(conn, cmd);
    return this.#send(conn, cmd);
  }

  async #send(conn: RemotingConnection, cmd: RemotingCommand): Promise<RemotingCommand> {
    const h = parseSendHeader(cmd, this.#ctx.now);
    const out = await this.send({
      header: h,
      body: cmd.body ?? EMPTY_BODY,
      batch: h.batch && cmd.code === RequestCode.SEND_BATCH_MESSAGE,
      bornHost: peerHost(conn),
      from: conn.remoteAddress,
      version: cmd.version,
    });
    if ("code" in out) return createResponse(cmd, out.code, out.remark);
    return this.#response(cmd, out.result, out.queueId);
  }

  /**
   * The send path after the header (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE, and the
   * admin API's POST /messages): the checks in Java's order, then the store. Like Java, the
   * outcome names the queue the producer addressed (or the one picked for it), even when the
   * message was parked in SCHEDULE_TOPIC_XXXX or redirected to the DLQ.
   */
  async send(i: SendInput): Promise<SendOutcome> {
    const ctx = this.#ctx;
    const target = this.#target(i);
    if ("code" in target) return target;
    const { tc, queueId, create } = target;
    const max = ctx.settings.maxMessageSizeBytes;
    if (i.body.length > max) {
      return {
        code: ResponseCode.MESSAGE_ILLEGAL,
        remark: `${i.batch ? "batch" : "message"} body is ${i.body.length} bytes, over maxMessageSizeBytes ${max}`,
      };
    }
    let reqs: PutMessageRequest[] | Refusal;
    if (i.batch) {
      reqs = this.#batchRequests(i, queueId);
    } else {
      const props = parseProperties(i.header.properties);
      if (isTransactionPrepare(props, i.header.sysFlag, i.header.reconsumeTimes)) return this.#prepare(i, queueId, props, create);
      reqs = this.#singleRequest(i, tc, queueId, props);
    }
    if ("code" in reqs) return reqs;
    const result = await ctx.store.putMessages(reqs);
    // An auto-created topic comes into being with its first stored message, so that a send
    // refused by any check (queue id, size, batch body, properties, a full disk) creates nothing.
    if (result.appended.length > 0) create?.();
    recordPuts(ctx, reqs, result);
    // A topic made by this send (auto-created, or the DLQ of a retry past its max) is routable
    // before the producer hears of it, as Java registers inside createTopicInSendMessageMethod.
    const routed = ctx.untilRoutable(i.header.topic, reqs[0]!.topic);
    if (routed) await routed;
    return { result, queueId };
  }

  /** Role, topic name, topic (found, or planned for auto-creation), queue id, writable; the queue to store in. */
  #target(i: SendInput): TopicTarget & { queueId: number } | Refusal {
    const h = i.header;
    const refused = slaveRefusal(this.#ctx) ?? this.#checkTopicName(h.topic);
    if (refused) return refused;
    const found = this.#findOrPlanTopic(h);
    if ("code" in found) return found;
    const tc = found.tc;
    const queueNums = Math.max(tc.readQueueNums, tc.writeQueueNums);
    if (h.queueId >= queueNums) {
      return {
        code: ResponseCode.SYSTEM_ERROR,
        remark: `request queueId[${h.queueId}] is illegal, ${h.topic} has ${queueNums} queues, producer: ${i.from}`,
      };
    }
    if (!isWriteable(tc.perm)) {
      return { code: ResponseCode.NO_PERMISSION, remark: `the topic[${h.topic}] sending message is forbidden: its perm ${tc.perm} is not writable` };
    }
    const queueId = h.queueId < 0 ? Math.floor(Math.random() * Math.max(1, tc.writeQueueNums)) : h.queueId;
    return found.create ? { tc, queueId, create: found.create } : { tc, queueId };
  }

  #batchRequests(i: SendInput, queueId: number): PutMessageRequest[] | Refusal {
    const h = i.header;
    if (h.topic.startsWith(RETRY_GROUP_TOPIC_PREFIX))
      return { code: ResponseCode.MESSAGE_ILLEGAL, remark: "batch messages cannot be sent to a retry topic" };
    const entries = decodeMessageBatch(i.body);
    if ("invalid" in entries) return { code: ResponseCode.MESSAGE_ILLEGAL, remark: `batch body does not decode: ${entries.invalid}` };
    const batchProps = parseProperties(h.properties);
    const reqs: PutMessageRequest[] = [];
    for (const e of entries) {
      const props = { ...parseProperties(e.properties), ...withoutWait(batchProps) };
      if (props[MessageConst.DELAY] && Number(props[MessageConst.DELAY]) > 0)
        return { code: ResponseCode.MESSAGE_ILLEGAL, remark: "batch messages cannot be delayed" };
      reqs.push(this.#request(h, h.topic, queueId, e.flag, e.body, props, i.bornHost, batchProps[MessageConst.WAIT] !== "false"));
    }
    return reqs;
  }

  /**
   * A half message: parked in the half topic (never delayed, never seen by consumers) until
   * END_TRANSACTION or a check-back decides. The answer names the producer's queue and the half
   * queue offset, which END_TRANSACTION sends back as tranStateTableOffset.
   */
  async #prepare(i: SendInput, queueId: number, props: Record<string, string>, create: (() => void) | undefined): Promise<SendOutcome> {
    const ctx = this.#ctx;
    const h = i.header;
    if (!this.#tx) {
      return {
        code: ResponseCode.NO_PERMISSION,
        remark: `the broker[${ctx.settings.brokerName}] sending transaction message is forbidden: transactions are not supported`,
      };
    }
    const wait = props[MessageConst.WAIT] !== "false";
    const req = this.#tx.prepare(this.#request(h, h.topic, queueId, h.flag, i.body, withoutWait(props), i.bornHost, wait), h.producerGroup);
    const result = await ctx.store.putMessages([req]);
    if (result.appended.length > 0) {
      create?.();
      ctx.stats.recordPut(1, i.body.length, h.topic);
    }
    const routed = ctx.untilRoutable(h.topic);
    if (routed) await routed;
    return { result, queueId };
  }

  /** One message: retry past its max → DLQ, MULTI_TAG, delayed → SCHEDULE_TOPIC_XXXX. */
  #singleRequest(i: SendInput, tc: TopicConfig, queueId: number, props: Record<string, string>): PutMessageRequest[] | Refusal {
    const h = i.header;
    const wait = props[MessageConst.WAIT] !== "false";
    // WAIT steers only this send; Java drops it from the stored string. `props` is this
    // request's own parse, so it is dropped in place (no copy on the hot path).
    delete props[MessageConst.WAIT];
    let topic = h.topic;
    let qid = queueId;
    let dlq = false;
    if (topic.startsWith(RETRY_GROUP_TOPIC_PREFIX)) {
      const redirect = this.#retryRedirect(topic, h.reconsumeTimes, h.maxReconsumeTimes, i.version);
      if ("code" in redirect) return redirect;
      if (redirect.dlq) {
        topic = redirect.dlq;
        qid = 0;
        dlq = true;
        // Java's setDelayTimeLevel(0): a dead letter is stored at once, never parked.
        delete props[MessageConst.DELAY];
      }
    }
    let req = this.#request(h, topic, qid, h.flag, i.body, props, i.bornHost, wait);
    if (tc.topicFilterType === "MULTI_TAG") req.sysFlag |= SysFlag.MULTI_TAGS;
    const diverted = dlq ? null : (this.#schedule?.divert(req, props) ?? null);
    if (diverted !== null && "code" in diverted) return diverted;
    return [diverted ?? req];
  }

  #request(
    h: SendHeader,
    topic: string,
    queueId: number,
    flag: number,
    body: Uint8Array,
    props: Record<string, string>,
    bornHost: HostAddress,
    wait: boolean,
    reconsumeTimes = h.reconsumeTimes,
  ): PutMessageRequest {
    props[MessageConst.CLUSTER] = this.#ctx.settings.clusterName;
    const req: PutMessageRequest = {
      topic,
      queueId,
      flag,
      body,
      properties: encodeProperties(props),
      sysFlag: h.sysFlag,
      bornTimestamp: h.bornTimestamp,
      bornHost,
      reconsumeTimes,
      preparedTransactionOffset: 0,
      waitStoreMsgOK: wait,
      propertiesParsed: true,
    };
    setIndexedFields(req, props);
    return req;
  }

  #response(cmd: RemotingCommand, result: PutMessageResult, queueId: number): RemotingCommand {
    const s = this.#ctx.settings;
    const code = {
      PUT_OK: ResponseCode.SUCCESS,
      FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
      FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
      SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
      MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
      PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
      SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
      UNKNOWN_ERROR: ResponseCode.SYSTEM_ERROR,
    }[result.status];
    if (result.appended.length === 0) return createResponse(cmd, code, result.remark ?? result.status);
    const first = result.appended[0]!;
    const ext: ExtFields = {
      msgId: result.appended.map((a) => createOffsetMsgId(s.storeHost, a.physicalOffset)).join(","),
      queueId: String(queueId),
      queueOffset: String(first.queueOffset),
      MSG_REGION: s.regionId,
      TRACE_ON: String(s.traceOn),
    };
    return createResponse(cmd, code, code === ResponseCode.SUCCESS ? undefined : result.status, ext);
  }

  #checkTopicName(topic: string): Refusal | null {
    const bad = validateTopicName(topic);
    if (bad) return { code: ResponseCode.SYSTEM_ERROR, remark: bad };
    if (isNotAllowedSendTopic(topic)) return { code: ResponseCode.NO_PERMISSION, remark: `Sending message to topic[${topic}] is forbidden.` };
    return null;
  }

  /**
   * The topic, or the one Java's send would auto-create (the checks see its queues and perm as
   * Java's do), with `create` to make it once the message is stored.
   */
  #findOrPlanTopic(h: SendHeader): TopicTarget | Refusal {
    const ctx = this.#ctx;
    const existing = ctx.topics.get(h.topic);
    if (existing) return { tc: existing };
    const plan = (queueNums: number, perm: number): TopicTarget => ({
      tc: { ...defaultTopicConfig(h.topic), readQueueNums: queueNums, writeQueueNums: queueNums, perm },
      create: () => void ctx.createTopicIfAbsent(h.topic, queueNums, perm),
    });
    if (h.topic.startsWith(RETRY_GROUP_TOPIC_PREFIX)) {
      // Java's createTopicInSendMessageBackMethod: a retry topic is created on demand (1 queue
      // unless the group asks for more), whatever autoCreateTopicEnable says.
      const group = ctx.groups.findOrCreate(h.topic.slice(RETRY_GROUP_TOPIC_PREFIX.length), ctx.settings.autoCreateSubscriptionGroup);
      return plan(Math.max(1, group?.retryQueueNums ?? 1), PermName.READ | PermName.WRITE);
    }
    if (ctx.settings.autoCreateTopicEnable) {
      const def = ctx.topics.get(h.defaultTopic);
      if (def && (def.perm & PermName.INHERIT) !== 0) {
        return plan(Math.max(1, Math.min(h.defaultTopicQueueNums, def.writeQueueNums)), def.perm & ~PermName.INHERIT);
      }
    }
    return {
      code: ResponseCode.TOPIC_NOT_EXIST,
      remark: `topic[${h.topic}] not exist, apply first please! (create it with UPDATE_AND_CREATE_TOPIC or enable broker.autoCreateTopicEnable)`,
    };
  }

  /** A message sent to %RETRY%<group> past its max reconsume times goes to %DLQ%<group>. */
  #retryRedirect(topic: string, reconsumeTimes: number, maxFromHeader: number | undefined, version: number): { dlq?: string } | Refusal {
    const groupName = topic.slice(RETRY_GROUP_TOPIC_PREFIX.length);
    const group = this.#ctx.groups.findOrCreate(groupName, this.#ctx.settings.autoCreateSubscriptionGroup);
    if (!group) return { code: ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark: `subscription group not exist, ${groupName}` };
    const max = version >= V3_4_9 && maxFromHeader !== undefined ? maxFromHeader : group.retryMaxTimes;
    if (reconsumeTimes >= max) {
      const dlq = dlqTopic(groupName);
      this.#ctx.createTopicIfAbsent(dlq, 1, PermName.READ | PermName.WRITE);
      return { dlq };
    }
    return {};
  }

  /** CONSUMER_SEND_MSG_BACK: re-store a consumed message in the group's retry topic (or DLQ). */
  async #sendBack(conn: RemotingConnection, cmd: RemotingCommand): Promise<RemotingCommand> {
    const ctx = this.#ctx;
    const ext = cmd.extFields;
    const offset = reqInt(ext, "offset");
    const groupName = reqString(ext, "group");
    const delayLevel = reqInt(ext, "delayLevel");
    const maxFromHeader = optInt(ext, "maxReconsumeTimes");
    const role = slaveRefusal(this.#ctx);
    if (role) return createResponse(cmd, role.code, role.remark);
    const group = ctx.groups.get(groupName) ?? ctx.groups.findOrCreate(groupName, ctx.settings.autoCreateSubscriptionGroup);
    if (!group) return createResponse(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, `subscription group not exist, ${groupName}`);
    if (group.retryQueueNums <= 0) return createResponse(cmd, ResponseCode.SUCCESS);
    const retry = retryTopic(groupName);
    const rtc = ctx.createTopicIfAbsent(retry, group.retryQueueNums, PermName.READ | PermName.WRITE);
    if (!isWriteable(rtc.perm)) return createResponse(cmd, ResponseCode.NO_PERMISSION, `the topic[${retry}] sending message is forbidden`);
    const orig = ctx.store.lookMessageByOffset(offset);
    if (!orig) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `look message by offset failed, ${offset}`);
    const props = parseProperties(orig.properties);
    props[MessageConst.RETRY_TOPIC] ??= orig.topic;
    const max = cmd.version >= V3_4_9 && maxFromHeader !== undefined ? maxFromHeader : group.retryMaxTimes;
    let topic = retry;
    let queueId = Math.floor(Math.random() * Math.max(1, rtc.writeQueueNums));
    let level = delayLevel;
    if (orig.reconsumeTimes >= max || delayLevel < 0) {
      topic = dlqTopic(groupName);
      queueId = 0;
      ctx.createTopicIfAbsent(topic, 1, PermName.READ | PermName.WRITE);
      level = 0;
    } else if (level === 0) {
      level = 3 + orig.reconsumeTimes;
    }
    // The id of the first delivery: kept from an earlier retry, else the original's offset id
    // (Java ignores the header's originMsgId here; a Java client puts its UNIQ_KEY there).
    props[MessageConst.ORIGIN_MESSAGE_ID] ??= createOffsetMsgId(orig.storeHost, orig.physicalOffset);
    props[MessageConst.WAIT] = "false";
    if (level > 0) props[MessageConst.DELAY] = String(level);
    else delete props[MessageConst.DELAY];
    const h: SendHeader = {
      producerGroup: groupName,
      topic,
      defaultTopic: AUTO_CREATE_TOPIC,
      defaultTopicQueueNums: 1,
      queueId,
      sysFlag: orig.sysFlag,
      bornTimestamp: orig.bornTimestamp,
      flag: orig.flag,
      properties: "",
      reconsumeTimes: orig.reconsumeTimes + 1,
      maxReconsumeTimes: undefined,
      batch: false,
    };
    const storeProps = withoutWait(props);
    let req = this.#request(h, topic, queueId, orig.flag, orig.body.slice(), storeProps, orig.bornHost, false);
    // A level > 0 always parks (DELAY wins over every timer property): never a refusal.
    const diverted = level > 0 ? (this.#schedule?.divert(req, storeProps) ?? null) : null;
    if (diverted !== null && !("code" in diverted)) req = diverted;
    void conn;
    const result = await ctx.store.putMessages([req]);
    recordPuts(this.#ctx, [req], result);
    const routed = ctx.untilRoutable(retry, topic);
    if (routed) await routed;
    if (result.status === "PUT_OK") {
      ctx.stats.recordSendBack(orig.topic, groupName);
      return createResponse(cmd, ResponseCode.SUCCESS);
    }
    return createResponse(cmd, ResponseCode.SYSTEM_ERROR, result.remark ?? result.status);
  }
}

/** WAIT only steers this send; the Java broker drops it from the stored property string. */
function withoutWait(props: Record<string, string>): Record<string, string> {
  if (!(MessageConst.WAIT in props)) return props;
  const copy = { ...props };
  delete copy[MessageConst.WAIT];
  return copy;
}

/** BORNHOST per connection, parsed once (the address text does not change). */
const peerHosts = new WeakMap<RemotingConnection, HostAddress>();

export function peerHost(conn: RemotingConnection): HostAddress {
  let host = peerHosts.get(conn);
  if (host === undefined) {
    const h = tryParseHostAddress(conn.remoteAddress);
    host = "invalid" in h ? { ip: new Uint8Array([127, 0, 0, 1]), port: 0 } : h;
    peerHosts.set(conn, host);
  }
  return host;
}
