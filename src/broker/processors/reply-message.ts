/**
 * ReplyMessageProcessor: SEND_REPLY_MESSAGE (324, SendMessageRequestHeader) and
 * SEND_REPLY_MESSAGE_V2 (325, its one-letter names): the replier's answer in request-reply, as
 * the Java broker's ReplyMessageProcessor (4.9.x) handles it:
 *
 *   1. the checks of a send (role, topic name, topic exists, queue id);
 *   2. PUSH_REPLY_MESSAGE_TO_CLIENT (326) to the requester: the producer client named by the
 *      reply's REPLY_TO_CLIENT property, found by the client id of its heartbeat. Header
 *      ReplyMessageRequestHeader (the send header's fields plus bornHost, storeHost,
 *      storeTimestamp; properties gain PUSH_REPLY_TIME), body the reply body, answer awaited
 *      for PUSH_REPLY_TIMEOUT_MS;
 *   3. the reply is stored in its topic as well (Java's storeReplyMessageEnable, on by default).
 *
 * The answer's code is the push's: SUCCESS, or SYSTEM_ERROR with Java's remarks ("push reply
 * message fail, channel of <id> not found.", "push reply message to <id>fail.", "reply message
 * properties[REPLY_TO_CLIENT] is null"). msgId / queueOffset are the stored record's ("0" / 0
 * when the store refused it).
 */
import { createOffsetMsgId, encodeProperties, parseProperties, setIndexedFields, type PutMessageRequest } from "../../commitlog/index.ts";
import { validateTopicName } from "../../protocol/topics.ts";
import {
  createRequest,
  createResponse,
  RequestCode,
  ResponseCode,
  type ExtFields,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import type { BrokerContext } from "../context.ts";
import { parseSendHeader, peerHost, recordPuts, slaveRefusal, type SendHeader } from "./send-message.ts";

/** Java Broker2Client.callClient's wait for the requester's answer. */
export const PUSH_REPLY_TIMEOUT_MS = 10_000;

const REPLY_TO_CLIENT = "REPLY_TO_CLIENT";
const PUSH_REPLY_TIME = "PUSH_REPLY_TIME";

export class ReplyMessageProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;

  constructor(ctx: BrokerContext) {
    this.#ctx = ctx;
  }

  static readonly CODES = [RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2];

  async process(conn: RemotingConnection, cmd: RemotingCommand): Promise<RemotingCommand> {
    const ctx = this.#ctx;
    const s = ctx.settings;
    const h = parseSendHeader(cmd, ctx.now);
    const refused = slaveRefusal(ctx);
    if (refused) return createResponse(cmd, refused.code, refused.remark);
    const bad = validateTopicName(h.topic);
    if (bad) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, bad);
    const tc = ctx.topics.get(h.topic);
    if (!tc) return createResponse(cmd, ResponseCode.TOPIC_NOT_EXIST, `topic[${h.topic}] not exist, apply first please!`);
    if (h.queueId >= Math.max(tc.readQueueNums, tc.writeQueueNums)) {
      return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `request queueId[${h.queueId}] is illegal, ${h.topic} has ${tc.writeQueueNums} queues`);
    }
    const queueId = h.queueId < 0 ? Math.floor(Math.random() * Math.max(1, tc.writeQueueNums)) : h.queueId;
    const body = cmd.body ?? new Uint8Array(0);
    const props = parseProperties(h.properties);

    const pushed = await this.#push(conn, cmd, h, props, body);

    // Stored as it came (Java stores the properties string it received, without PUSH_REPLY_TIME).
    const req: PutMessageRequest = {
      topic: h.topic,
      queueId,
      flag: h.flag,
      body,
      properties: encodeProperties(props),
      sysFlag: h.sysFlag,
      bornTimestamp: h.bornTimestamp,
      bornHost: peerHost(conn),
      reconsumeTimes: h.reconsumeTimes,
      preparedTransactionOffset: 0,
      waitStoreMsgOK: true,
      propertiesParsed: true,
    };
    setIndexedFields(req, props);
    const result = await ctx.store.putMessages([req]);
    recordPuts(ctx, [req], result);
    const stored = result.appended[0];
    if (!stored) ctx.log.warn(`reply to ${h.topic} not stored: ${result.status} ${result.remark ?? ""}`);
    if (pushed !== null) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, pushed);
    const ext: ExtFields = {
      msgId: stored ? createOffsetMsgId(s.storeHost, stored.physicalOffset) : "0",
      queueId: String(queueId),
      queueOffset: String(stored?.queueOffset ?? 0),
      MSG_REGION: s.regionId,
      TRACE_ON: String(s.traceOn),
    };
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, ext);
  }

  /** Pushes the reply to its requester; null when it took it, else why not (Java's remarks). */
  async #push(
    conn: RemotingConnection,
    cmd: RemotingCommand,
    h: SendHeader,
    props: Record<string, string>,
    body: Uint8Array,
  ): Promise<string | null> {
    const ctx = this.#ctx;
    const clientId = props[REPLY_TO_CLIENT];
    if (clientId === undefined) return `reply message properties[${REPLY_TO_CLIENT}] is null`;
    const channel = ctx.producers.findChannel(clientId);
    if (!channel) {
      const why = `push reply message fail, channel of <${clientId}> not found.`;
      ctx.log.warn(why);
      return why;
    }
    const ext = cmd.extFields ?? {};
    // ReplyMessageRequestHeader: the send header's fields under their long names (also for a V2 request).
    const header: ExtFields = {
      producerGroup: h.producerGroup,
      topic: h.topic,
      defaultTopic: h.defaultTopic,
      defaultTopicQueueNums: String(h.defaultTopicQueueNums),
      queueId: String(h.queueId),
      sysFlag: String(h.sysFlag),
      bornTimestamp: String(h.bornTimestamp),
      flag: String(h.flag),
      properties: encodeProperties({ ...props, [PUSH_REPLY_TIME]: String(ctx.now()) }),
      reconsumeTimes: String(h.reconsumeTimes),
      unitMode: ext.unitMode ?? ext.k ?? "false",
      bornHost: conn.remoteAddress,
      storeHost: ctx.settings.brokerAddr,
      storeTimestamp: String(ctx.now()),
    };
    try {
      const res = await channel.conn.invoke(createRequest(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header, body), PUSH_REPLY_TIMEOUT_MS);
      if (res.code === ResponseCode.SUCCESS) return null;
      ctx.log.warn(`push reply message to <${clientId}> return fail, response remark: ${res.remark ?? ""}`);
    } catch (e) {
      ctx.log.warn(`push reply message to <${clientId}> fail: ${e instanceof Error ? e.message : String(e)}`);
    }
    return `push reply message to ${clientId}fail.`;
  }
}
