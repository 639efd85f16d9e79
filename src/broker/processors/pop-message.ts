/**
 * PopMessageProcessor: POP_MESSAGE (200050), and PEEK_MESSAGE, NOTIFICATION and POLLING_INFO
 * (docs/PROTOCOL.md §3.21), as RocketMQ 5.3's broker answers them. A pop reads (../pop/pop-reader.ts),
 * writes one checkpoint per queue it took messages from (../pop/pop-service.ts), commits those
 * queues' offsets, and answers SUCCESS with the stored records as the body and the offset infos
 * the client builds each message's receipt handle from. Messages of the POP retry topic go out
 * under their topic's name with their handle already set (POP_CK), as Java sends them. A pop
 * that finds nothing is parked (../pop/pop-long-polling.ts) for its pollTime, then answers
 * POLLING_TIMEOUT (210); POLLING_FULL (209) when too many are parked.
 */
import { decodeRecordAt, encodeProperties, encodeRecord, parseProperties, recordSize } from "../../commitlog/index.ts";
import { MessageConst } from "../../protocol/message-const.ts";
import {
  encodeMsgOffsetInfo,
  encodeReceiptHandle,
  encodeStartOffsetInfo,
  POP_MAX_MSG_NUMS,
  POP_ORDER_REVIVE_QUEUE,
  popRetryTopic,
  type PopQueueOffsets,
} from "../../protocol/pop.ts";
import {
  createResponse,
  RequestCode,
  ResponseCode,
  ResponseCode5x,
  type ExtFields,
  type ProcessResult,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import type { BrokerContext } from "../context.ts";
import type { PopLongPolling } from "../pop/pop-long-polling.ts";
import { readForPop, type QueuePart } from "../pop/pop-reader.ts";
import { bool, num, popFilter, str, validateRead, type PopFilter, type Refusal } from "../pop/pop-request.ts";
import type { PopService } from "../pop/pop-service.ts";

/** A pop whose born time plus poll time passed more than this ago is answered at once (Java's isTimeoutTooMuch). */
const TIMEOUT_TOO_MUCH_MS = 500;
const enc = new TextEncoder();

interface PopHeader {
  group: string;
  topic: string;
  queueId: number;
  maxMsgNums: number;
  invisibleTime: number;
  pollTime: number;
  bornTime: number;
  initMode: number;
  exp: string;
  expType: string;
  order: boolean;
  attemptId: string;
}

export class PopMessageProcessor implements RequestProcessor {
  static readonly CODES = [RequestCode.POP_MESSAGE, RequestCode.PEEK_MESSAGE, RequestCode.NOTIFICATION, RequestCode.POLLING_INFO];
  readonly #ctx: BrokerContext;
  readonly #pop: PopService;
  readonly #polling: PopLongPolling;
  readonly #notifyPolling: PopLongPolling;

  constructor(ctx: BrokerContext, pop: PopService, polling: PopLongPolling, notifyPolling: PopLongPolling) {
    this.#ctx = ctx;
    this.#pop = pop;
    this.#polling = polling;
    this.#notifyPolling = notifyPolling;
  }

  process(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | Promise<ProcessResult> {
    if (cmd.code === RequestCode.POP_MESSAGE) return this.#popMessage(conn, cmd, popHeader(cmd.extFields, this.#ctx.now()), true);
    if (cmd.code === RequestCode.PEEK_MESSAGE) return this.#peek(conn, cmd);
    if (cmd.code === RequestCode.NOTIFICATION) return this.#notification(conn, cmd, true);
    return this.#pollingInfo(conn, cmd);
  }

  #popMessage(conn: RemotingConnection, cmd: RemotingCommand, h: PopHeader, mayPark: boolean): RemotingCommand | Promise<ProcessResult> {
    const ctx = this.#ctx;
    const fail = (r: Refusal) => popResponse(cmd, r.code, r.remark, {});
    const host = ctx.settings.brokerAddr.split(":")[0];
    const now = ctx.now();
    if (mayPark && now - h.bornTime - h.pollTime > TIMEOUT_TOO_MUCH_MS) {
      return fail({ code: ResponseCode5x.POLLING_TIMEOUT, remark: `the broker[${host}] pop message is timeout too much` });
    }
    if (h.maxMsgNums > POP_MAX_MSG_NUMS) {
      return fail({ code: ResponseCode.INVALID_PARAMETER, remark: `the broker[${host}] pop message's num is greater than ${POP_MAX_MSG_NUMS}` });
    }
    // Java's broker checks no bound; its timer then refuses the checkpoint past timerMaxDelaySec
    // and the pop's messages are silently dropped from the answer. A clear answer instead.
    if (h.invisibleTime < 0 || h.invisibleTime > ctx.settings.timerMaxDelayMs) {
      const max = ctx.settings.timerMaxDelayMs;
      const remark = `the broker[${host}] pop message's invisibleTime ${h.invisibleTime} is out of [0, ${max}] (broker.timerMaxDelaySec)`;
      return fail({ code: ResponseCode.INVALID_PARAMETER, remark });
    }
    if (ctx.role.isSlave || !this.#pop.active) {
      return fail({ code: ResponseCode.SYSTEM_ERROR, remark: `the broker[${host}] pop message is forbidden on a slave` });
    }
    const v = validateRead(ctx, conn, h.topic, h.group, h.queueId);
    if ("code" in v) return fail(v);
    const filter = popFilter(ctx, h.topic, h.exp, h.expType);
    if ("code" in filter) return fail(filter);
    const randomQ = Math.floor(Math.random() * 100);
    const read = readForPop(ctx, this.#pop, { ...h, tagFilter: filter.tagFilter, recordFilter: filter.recordFilter, randomQ, popTime: now });
    if (read.parts.length > 0) return this.#answer(cmd, h, read.parts, read.restNum, now);
    if (mayPark && h.pollTime > 0) {
      const parked = this.#park(conn, cmd, h, filter, now);
      if (parked !== "full") return parked;
      return popResponse(cmd, ResponseCode5x.POLLING_FULL, "NO_MESSAGE_IN_QUEUE", { restNum: String(read.restNum) });
    }
    return popResponse(cmd, ResponseCode5x.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE", { restNum: String(read.restNum) });
  }

  /** Checkpoints written (each queue unlocked after its own), offsets committed, the answer built. */
  async #answer(cmd: RemotingCommand, h: PopHeader, parts: QueuePart[], restNum: number, popTime: number): Promise<RemotingCommand> {
    const reviveQid = h.order ? POP_ORDER_REVIVE_QUEUE : this.#pop.nextReviveQid();
    // A FIFO part needs no checkpoint: its batch is the queue's order info already.
    const stored = await Promise.all(parts.map((p) => (p.locked ? this.#checkpoint(h, p, popTime, reviveQid) : true)));
    const kept = parts.filter((_, i) => stored[i]);
    const ext: ExtFields = {
      popTime: String(popTime),
      invisibleTime: String(h.invisibleTime),
      reviveQid: String(reviveQid),
      restNum: String(restNum),
      startOffsetInfo: "",
      msgOffsetInfo: "",
    };
    if (kept.length === 0) return popResponse(cmd, ResponseCode5x.POLLING_TIMEOUT, "the pop's checkpoint was not stored", ext);
    const infos: PopQueueOffsets[] = kept.map((p) => ({ retry: p.retry, queueId: p.queueId, startOffset: p.startOffset, offsets: p.offsets }));
    ext.startOffsetInfo = encodeStartOffsetInfo(infos);
    ext.msgOffsetInfo = encodeMsgOffsetInfo(infos);
    if (h.order) ext.orderCountInfo = orderCountInfo(kept);
    const body: Uint8Array[] = [];
    for (const p of kept) {
      if (p.retry === "0") body.push(...p.messages);
      else for (let i = 0; i < p.messages.length; i++) body.push(asPoppedFromTopic(p, i, h, popTime, reviveQid, this.#ctx.settings.brokerName));
    }
    this.#ctx.stats.recordGet(body.length, body.reduce((n, b) => n + b.length, 0), h.topic, h.group);
    if (restNum > 0) this.#polling.wakeNext(h.topic, h.group, h.queueId);
    const res = createResponse(cmd, ResponseCode.SUCCESS, "FOUND", ext);
    res.bodyParts = body;
    return res;
  }

  async #checkpoint(h: PopHeader, p: QueuePart, popTime: number, reviveQid: number): Promise<boolean> {
    let ok = false;
    try {
      const diffs = p.offsets.map((o) => o - p.startOffset);
      const { topic, queueId, startOffset } = p;
      ok = await this.#pop.writeCheckpoint({ topic, group: h.group, queueId, startOffset, popTime, invisibleTime: h.invisibleTime, diffs, reviveQid });
      if (ok && p.next > this.#ctx.consumerOffsets.query(h.group, p.topic, p.queueId)) this.#ctx.consumerOffsets.commit(h.group, p.topic, p.queueId, p.next);
    } finally {
      this.#pop.unlock(h.group, p.topic, p.queueId);
    }
    return ok;
  }

  /** Parks the pop: re-run (without parking) when a message may be there or its poll time ends. */
  #park(conn: RemotingConnection, cmd: RemotingCommand, h: PopHeader, filter: PopFilter, now: number): Promise<ProcessResult> | "full" {
    let settle!: (r: ProcessResult | Promise<ProcessResult>) => void;
    let fail!: (e: unknown) => void;
    const answer = new Promise<ProcessResult>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    const deadline = Math.min(h.bornTime + h.pollTime, now + this.#ctx.settings.pullHoldMaxMs);
    const parked = this.#polling.park({
      conn,
      topic: h.topic,
      retryTopic: popRetryTopic(h.topic, h.group),
      group: h.group,
      queueId: h.queueId,
      matches: filter.tagFilter,
      deadline,
      run: () => {
        try {
          // Woken by an arrival: pop again, parking again if someone else took it and time is left.
          const left = deadline - this.#ctx.now();
          settle(this.#popMessage(conn, cmd, { ...h, bornTime: this.#ctx.now(), pollTime: Math.max(0, left) }, left > 0));
        } catch (e) {
          fail(e);
        }
      },
      drop: () => settle(null),
    });
    return parked === "parked" ? answer : "full";
  }

  /** PEEK_MESSAGE: what a pop would read, with no checkpoint, no lock, no offset change; 19 when nothing. */
  #peek(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand {
    const ctx = this.#ctx;
    const ext = cmd.extFields;
    const topic = str(ext, "topic");
    const group = str(ext, "consumerGroup");
    const queueId = num(ext, "queueId", 0);
    const v = validateRead(ctx, conn, topic, group, queueId);
    if ("code" in v) return popResponse(cmd, v.code, v.remark, {});
    const max = num(ext, "maxMsgNums", 0);
    const queues = queueId >= 0 ? [queueId] : [...Array(v.tc.readQueueNums).keys()];
    const body: Uint8Array[] = [];
    let restNum = 0;
    for (const q of queues) {
      const committed = ctx.consumerOffsets.query(group, topic, q);
      const from = committed >= 0 ? committed : ctx.store.getMinOffsetInQueue(topic, q);
      const r = ctx.store.getMessage(topic, q, from, Math.max(0, max - body.length));
      if (r.status === "FOUND") body.push(...r.messages);
      restNum += Math.max(0, r.maxOffset - r.nextBeginOffset);
    }
    if (body.length === 0) return popResponse(cmd, ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE", { restNum: String(restNum) });
    const res = createResponse(cmd, ResponseCode.SUCCESS, "FOUND", { popTime: "0", invisibleTime: "0", reviveQid: "0", restNum: String(restNum) });
    res.bodyParts = body;
    return res;
  }

  /** NOTIFICATION: whether a pop would find a message now, else parked until one comes or the poll time ends. */
  #notification(conn: RemotingConnection, cmd: RemotingCommand, mayPark: boolean): RemotingCommand | Promise<ProcessResult> {
    const ctx = this.#ctx;
    const ext = cmd.extFields;
    const topic = str(ext, "topic");
    const group = str(ext, "consumerGroup");
    const queueId = num(ext, "queueId", -1) < 0 ? -1 : num(ext, "queueId", -1);
    const v = validateRead(ctx, conn, topic, group, queueId);
    if ("code" in v) return createResponse(cmd, v.code, v.remark);
    const answer = (hasMsg: boolean, pollingFull: boolean) =>
      createResponse(cmd, ResponseCode.SUCCESS, undefined, { hasMsg: String(hasMsg), pollingFull: String(pollingFull) });
    if (this.#hasMessage(topic, group, queueId, v.tc.readQueueNums)) return answer(true, false);
    const pollTime = num(ext, "pollTime", 0);
    if (!mayPark || pollTime <= 0) return answer(false, false);
    let settle!: (r: ProcessResult) => void;
    const parked = new Promise<ProcessResult>((resolve) => (settle = resolve));
    const bornTime = num(ext, "bornTime", 0) || ctx.now();
    const r = this.#notifyPolling.park({
      conn,
      topic,
      retryTopic: popRetryTopic(topic, group),
      group,
      queueId,
      matches: undefined,
      deadline: Math.min(bornTime + pollTime, ctx.now() + ctx.settings.pullHoldMaxMs),
      run: () => settle(answer(this.#hasMessage(topic, group, queueId, v.tc.readQueueNums), false)),
      drop: () => settle(null),
    });
    return r === "parked" ? parked : answer(false, true);
  }

  #hasMessage(topic: string, group: string, queueId: number, readQueueNums: number): boolean {
    const store = this.#ctx.store;
    const has = (t: string, q: number) => {
      const committed = this.#ctx.consumerOffsets.query(group, t, q);
      return store.getMaxOffsetInQueue(t, q) - Math.max(committed, store.getMinOffsetInQueue(t, q)) > 0;
    };
    const queues = queueId >= 0 ? [queueId] : [...Array(readQueueNums).keys()];
    if (queues.some((q) => has(topic, q))) return true;
    const retry = popRetryTopic(topic, group);
    const rtc = this.#ctx.topics.get(retry);
    return rtc !== undefined && [...Array(rtc.readQueueNums).keys()].some((q) => has(retry, q));
  }

  /** POLLING_INFO: how many pops are parked on topic@group@queueId. */
  #pollingInfo(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand {
    const ext = cmd.extFields;
    const topic = str(ext, "topic");
    const group = str(ext, "consumerGroup");
    const queueId = num(ext, "queueId", -1) < 0 ? -1 : num(ext, "queueId", -1);
    const v = validateRead(this.#ctx, conn, topic, group, queueId);
    if ("code" in v) return createResponse(cmd, v.code, v.remark);
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, { pollingNum: String(this.#polling.pollingNum(topic, group, queueId)) });
  }
}

function popHeader(ext: ExtFields | undefined, now: number): PopHeader {
  const queueId = num(ext, "queueId", 0);
  const bornTime = num(ext, "bornTime", 0);
  return {
    group: str(ext, "consumerGroup"),
    topic: str(ext, "topic"),
    queueId: queueId < 0 ? -1 : queueId,
    maxMsgNums: num(ext, "maxMsgNums", 0),
    invisibleTime: num(ext, "invisibleTime", 0),
    pollTime: num(ext, "pollTime", 0),
    bornTime: bornTime === 0 ? now : bornTime,
    initMode: num(ext, "initMode", 0),
    exp: str(ext, "exp"),
    expType: str(ext, "expType"),
    order: bool(ext, "order"),
    attemptId: str(ext, "attemptId"),
  };
}

/**
 * FIFO: each message popped before (`{retry} qo{queueId}%{offset} {count}`), then per queue the
 * fewest deliveries of its batch (`{retry} {queueId} {count}`), joined by ";" (ConsumerOrderInfoManager).
 */
function orderCountInfo(parts: readonly QueuePart[]): string {
  const entries: string[] = [];
  for (const p of parts) {
    const counts = p.counts ?? p.offsets.map(() => 0);
    counts.forEach((c, i) => {
      if (c > 0) entries.push(`${p.retry} qo${p.queueId}%${p.offsets[i]} ${c}`);
    });
    entries.push(`${p.retry} ${p.queueId} ${Math.min(...counts)}`);
  }
  return entries.join(";");
}

/** Java writes every field of PopMessageResponseHeader, 0 where unset, error answers too. */
function popResponse(cmd: RemotingCommand, code: number, remark: string, ext: ExtFields): RemotingCommand {
  return createResponse(cmd, code, remark, { popTime: "0", invisibleTime: "0", reviveQid: "0", restNum: "0", ...ext });
}

/**
 * A retry-topic record as a pop answers it (popResponseReturnActualRetryTopic off, Java's
 * default): under the topic the client popped, with its receipt handle in POP_CK.
 */
function asPoppedFromTopic(p: QueuePart, i: number, h: PopHeader, popTime: number, reviveQid: number, brokerName: string): Uint8Array {
  const bytes = p.messages[i]!;
  const rec = decodeRecordAt(bytes, 0, { checkCrc: false });
  if (!("totalSize" in rec)) return bytes;
  const props = parseProperties(rec.properties);
  props[MessageConst.POP_CK] ??= encodeReceiptHandle({
    ckQueueOffset: p.startOffset,
    popTime,
    invisibleTime: h.invisibleTime,
    reviveQid,
    retry: p.retry,
    brokerName,
    queueId: p.queueId,
    queueOffset: p.offsets[i]!,
  });
  const input = {
    topic: enc.encode(h.topic),
    queueId: rec.queueId,
    flag: rec.flag,
    body: rec.body,
    properties: enc.encode(encodeProperties(props)),
    sysFlag: rec.sysFlag,
    bornTimestamp: rec.bornTimestamp,
    bornHost: rec.bornHost,
    storeHost: rec.storeHost,
    reconsumeTimes: rec.reconsumeTimes,
    preparedTransactionOffset: rec.preparedTransactionOffset,
  };
  const out = new Uint8Array(recordSize(input));
  encodeRecord(out, 0, input, rec.queueOffset, rec.physicalOffset, rec.storeTimestamp);
  return out;
}
