/**
 * BrokerToClientProcessor: the admin requests the broker answers by asking the consumers of a
 * group (Java `Broker2Client` and `AdminBrokerProcessor.callConsumer`, rocketmq-all-4.9.8):
 *
 *   INVOKE_BROKER_TO_RESET_OFFSET (222)   topic, group, timestamp (-1 = the queue's end), isForce
 *       → the new offset of every write queue: the one at `timestamp`, or the consumed one when
 *         it is lower and isForce is false; RESET_CONSUMER_CLIENT_OFFSET (220, oneway, same
 *         header, body ResetOffsetBody {"offsetTable":{{mq}:offset}}) to every consumer of the
 *         group; answer SUCCESS with the same body.
 *         No stored offset for a queue → SYSTEM_ERROR "THe consumer group <g> not exist";
 *         no consumer online → CONSUMER_NOT_ONLINE (mqadmin then resets the stored offsets itself
 *         with UPDATE_CONSUMER_OFFSET, as it does against Apache RocketMQ); no topic → SYSTEM_ERROR.
 *         A CPP client gets ResetOffsetBodyForC {"offsetTable":[{brokerName,offset,queueId,topic}]}.
 *   INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223)   topic, group [, clientAddr = one client id]
 *       → GET_CONSUMER_STATUS_FROM_CLIENT (221, header topic, group) to each consumer (or the one
 *         named); answer GetConsumerStatusBody {"consumerTable":{clientId:{{mq}:offset}},
 *         "messageQueueTable":{}}. A client that fails or times out is left out, as in Java.
 *   GET_CONSUMER_RUNNING_INFO (307)   consumerGroup, clientId [, jstackEnable]
 *   CONSUME_MESSAGE_DIRECTLY (309)    consumerGroup, clientId, msgId [, brokerName]
 *       → the same request forwarded to that client (309 carries the stored record of msgId as
 *         its body and this broker's name); the client's answer is returned as it came.
 *         Client not connected → SYSTEM_ERROR "The Consumer <g> <id> not online"; no answer in
 *         10 s → CONSUME_MSG_TIMEOUT.
 */
import { decodeOffsetMsgId } from "../../commitlog/index.ts";
import { parseObjectKeyedJson, objectKeyedJson } from "../../common/object-key-json.ts";
import {
  createRequest,
  createResponse,
  optBool,
  optString,
  reqInt,
  reqString,
  RemotingTimeoutError,
  RequestCode,
  ResponseCode,
  type ExtFields,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import { mqJson } from "../admin-bodies.ts";
import type { ClientChannel } from "../client-manager.ts";
import type { BrokerContext, OpRefusal } from "../context.ts";
import type { MessageQueue } from "../../protocol/route.ts";

/** Java Broker2Client.callClient's wait for a forwarded request. */
export const CALL_CLIENT_TIMEOUT_MS = 10_000;
/** Java Broker2Client.getConsumeStatus's wait per client. */
export const CONSUMER_STATUS_TIMEOUT_MS = 5_000;

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** What to reset: INVOKE_BROKER_TO_RESET_OFFSET's header, or the admin API's POST /groups/:group/reset-offset. */
export interface ResetOffsetRequest {
  topic: string;
  group: string;
  /** Each queue to its offset at this time (ms); -1 = each queue's end. Used when `offsets` is absent. */
  timestamp?: number;
  /** Explicit targets by queue id (clamped to the queue's [min, max]); a queue not named keeps its offset. */
  offsets?: ReadonlyMap<number, number>;
  /** Timestamp targets: move forward too (false: only back, a queue already consumed below stays). */
  force: boolean;
  /**
   * false (the wire): the consumers online are told and must exist, the stored offsets are theirs
   * to commit. true (the admin API): the new offsets are also committed here, as mqadmin does with
   * UPDATE_CONSUMER_OFFSET when no consumer is online, and the consumers online are told.
   */
  commit: boolean;
  from: string;
}

export interface ResetOffsetDone {
  /** The new offset of every write queue. */
  table: [MessageQueue, number][];
  /** Consumers told (RESET_CONSUMER_CLIENT_OFFSET). */
  clients: number;
  /** The ResetOffsetBody answered on the wire. */
  body: Uint8Array;
}

const refusal = (refused: OpRefusal["refused"], code: number, remark: string): OpRefusal => ({ refused, code, remark });

/** The target of each write queue, or why there is none. */
function resetTargets(ctx: BrokerContext, r: ResetOffsetRequest): [MessageQueue, number][] | OpRefusal {
  const { topic, group } = r;
  const tc = ctx.topics.get(topic);
  if (!tc) return refusal("not_found", ResponseCode.SYSTEM_ERROR, `[reset-offset] reset offset failed, no topic in this broker. topic=${topic}`);
  for (const q of r.offsets?.keys() ?? []) {
    if (q >= tc.writeQueueNums)
      return refusal("invalid", ResponseCode.SYSTEM_ERROR, `queue ${q} of ${topic} does not exist (${tc.writeQueueNums} write queues)`);
  }
  const table: [MessageQueue, number][] = [];
  for (let q = 0; q < tc.writeQueueNums; q++) {
    const consumed = ctx.consumerOffsets.query(group, topic, q);
    if (consumed === -1) return refusal("not_found", ResponseCode.SYSTEM_ERROR, `THe consumer group <${group}> not exist`);
    let target: number;
    if (r.offsets) {
      const asked = r.offsets.get(q);
      target =
        asked === undefined ? consumed : Math.min(Math.max(asked, ctx.store.getMinOffsetInQueue(topic, q)), ctx.store.getMaxOffsetInQueue(topic, q));
    } else {
      const ts = r.timestamp ?? -1;
      target = ts === -1 ? ctx.store.getMaxOffsetInQueue(topic, q) : ctx.store.getOffsetInQueueByTime(topic, q, ts);
      if (target < 0) target = 0;
      if (!r.force && target >= consumed) target = consumed;
    }
    table.push([mqJson(topic, ctx.settings.brokerName, q), target]);
  }
  return table;
}

/**
 * INVOKE_BROKER_TO_RESET_OFFSET (Java Broker2Client.resetOffset): the new offset of every write
 * queue, sent to every consumer of the group online (RESET_CONSUMER_CLIENT_OFFSET, oneway; a CPP
 * client gets ResetOffsetBodyForC), and with `commit` stored in the broker's offset table.
 */
export function resetOffsets(ctx: BrokerContext, r: ResetOffsetRequest): ResetOffsetDone | OpRefusal {
  const { topic, group } = r;
  const table = resetTargets(ctx, r);
  if ("refused" in table) return table;
  const channels = ctx.consumers.channels(group);
  if (channels.length === 0 && !r.commit) {
    const remark = `Consumer not online, so can not reset offset, Group: ${group} Topic: ${topic} Timestamp: ${r.timestamp ?? -1}`;
    return refusal("conflict", ResponseCode.CONSUMER_NOT_ONLINE, remark);
  }
  if (r.commit) {
    for (const [mq, offset] of table) {
      const problem = ctx.consumerOffsets.commit(group, topic, mq.queueId, offset);
      if (problem) return refusal("invalid", ResponseCode.SYSTEM_ERROR, problem);
    }
  }
  const body = encoder.encode(`{"offsetTable":${objectKeyedJson(table)}}`);
  const header = { topic, group, timestamp: String(r.timestamp ?? -1), isForce: String(r.force) };
  for (const ch of channels) {
    const forC = ch.language === "CPP";
    const b = forC
      ? encoder.encode(
          JSON.stringify({
            offsetTable: table.map(([mq, offset]) => ({ brokerName: mq.brokerName, offset, queueId: mq.queueId, topic: mq.topic })),
          }),
        )
      : body;
    ch.conn.invokeOneway(createRequest(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header, b));
  }
  const to = r.offsets ? "the offsets given" : String(r.timestamp ?? -1);
  const stored = r.commit ? ", stored" : "";
  ctx.log.info(`reset offsets of ${group} on ${topic} to ${to} (force ${r.force}${stored}) by ${r.from}: ${channels.length} client(s) told`);
  return { table, clients: channels.length, body };
}

export class BrokerToClientProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;

  constructor(ctx: BrokerContext) {
    this.#ctx = ctx;
  }

  static readonly CODES = [
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
    RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
    RequestCode.GET_CONSUMER_RUNNING_INFO,
    RequestCode.CONSUME_MESSAGE_DIRECTLY,
  ];

  process(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | Promise<RemotingCommand> {
    switch (cmd.code) {
      case RequestCode.INVOKE_BROKER_TO_RESET_OFFSET:
        return this.#resetOffset(conn, cmd);
      case RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS:
        return this.#consumerStatus(cmd);
      case RequestCode.GET_CONSUMER_RUNNING_INFO:
        return this.#callConsumer(cmd, cmd.extFields ?? {}, cmd.body);
      default:
        return this.#consumeDirectly(cmd);
    }
  }

  #resetOffset(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand {
    const ext = cmd.extFields;
    const done = resetOffsets(this.#ctx, {
      topic: reqString(ext, "topic"),
      group: reqString(ext, "group"),
      timestamp: reqInt(ext, "timestamp"),
      force: optBool(ext, "isForce") ?? false,
      commit: false,
      from: conn.remoteAddress,
    });
    if ("refused" in done) return createResponse(cmd, done.code, done.remark);
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, done.body);
  }

  async #consumerStatus(cmd: RemotingCommand): Promise<RemotingCommand> {
    const ctx = this.#ctx;
    const topic = reqString(cmd.extFields, "topic");
    const group = reqString(cmd.extFields, "group");
    const only = optString(cmd.extFields, "clientAddr") ?? "";
    const channels = ctx.consumers.channels(group);
    if (channels.length === 0) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `No Any Consumer online in the consumer group: [${group}]`);
    const asked = channels.filter((ch) => only === "" || ch.clientId === only);
    const parts = await Promise.all(
      asked.map(async (ch): Promise<string | undefined> => {
        try {
          const res = await ch.conn.invoke(createRequest(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, { topic, group }), CONSUMER_STATUS_TIMEOUT_MS);
          if (res.code !== ResponseCode.SUCCESS || !res.body) return undefined;
          // The client's GetConsumerStatusBody; its messageQueueTable goes under the client id.
          const parsed = parseObjectKeyedJson(decoder.decode(res.body));
          if ("invalid" in parsed || typeof parsed.value !== "object" || parsed.value === null) return undefined;
          const table = (parsed.value as Record<string, unknown>).messageQueueTable;
          return `${JSON.stringify(ch.clientId)}:${mqTableJson(table)}`;
        } catch (e) {
          ctx.log.warn(`consumer status of ${group} from ${ch.clientId} failed: ${e instanceof Error ? e.message : String(e)}`);
          return undefined;
        }
      }),
    );
    const body = `{"consumerTable":{${parts.filter((p) => p !== undefined).join(",")}},"messageQueueTable":{}}`;
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, encoder.encode(body));
  }

  #consumeDirectly(cmd: RemotingCommand): Promise<RemotingCommand> {
    const ctx = this.#ctx;
    const ext: ExtFields = { ...cmd.extFields, brokerName: ctx.settings.brokerName };
    // Java forwards with an empty body when the id does not decode; the client then fails it.
    let body: Uint8Array | undefined;
    const id = decodeOffsetMsgId(optString(cmd.extFields, "msgId") ?? "");
    if (!("invalid" in id)) body = ctx.store.selectOneMessageByOffset(id.offset)?.slice();
    return this.#callConsumer(cmd, ext, body);
  }

  async #callConsumer(cmd: RemotingCommand, ext: ExtFields, body: Uint8Array | undefined): Promise<RemotingCommand> {
    const group = reqString(ext, "consumerGroup");
    const clientId = reqString(ext, "clientId");
    const ch: ClientChannel | undefined = this.#ctx.consumers.group(group)?.channels.get(clientId);
    if (!ch) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `The Consumer <${group}> <${clientId}> not online`);
    try {
      const res = await ch.conn.invoke(createRequest(cmd.code, ext, body), CALL_CLIENT_TIMEOUT_MS);
      return createResponse(cmd, res.code, res.remark, res.extFields, res.body);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      if (e instanceof RemotingTimeoutError)
        return createResponse(cmd, ResponseCode.CONSUME_MSG_TIMEOUT, `consumer <${group}> <${clientId}> Timeout: ${why}`);
      return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `invoke consumer <${group}> <${clientId}> Exception: ${why}`);
    }
  }
}

/** A parsed {{mq}:offset} table (a Map with object keys; `{}` parses as a plain record) back to its wire form. */
function mqTableJson(table: unknown): string {
  const entries: [object, unknown][] = [];
  if (table instanceof Map) {
    for (const [k, v] of table) if (typeof k === "object" && k !== null) entries.push([k as object, v]);
  }
  return objectKeyedJson(entries);
}
