/**
 * AckMessageProcessor and ChangeInvisibleTimeProcessor of RocketMQ 5.3: ACK_MESSAGE (200051),
 * BATCH_ACK_MESSAGE (200151) and CHANGE_MESSAGE_INVISIBLETIME (200053) (docs/PROTOCOL.md §3.21).
 * As in Java, an ack checks the topic, the queue and the offset's range, then writes an ack record
 * to the revive log (../pop/pop-service.ts) and answers SUCCESS: an ack of a message no longer in
 * flight (late, already acked, revived, another group's) changes nothing and is still answered
 * SUCCESS. A handle that does not parse is SYSTEM_ERROR with the reason. Changing the invisible
 * time writes a new checkpoint for the message (due at now + the new time) and acks the old one.
 * A FIFO handle (reviveQid 999) goes to the queue's order info instead (../pop/order-info.ts).
 */
import { decodeReceiptHandle, batchAckOffsets, POP_ORDER_REVIVE_QUEUE, realTopicOf, type AckMsgJson, type BatchAckJson } from "../../protocol/pop.ts";
import {
  createResponse,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import type { BrokerContext } from "../context.ts";
import { FAQ, num, str, type Refusal } from "../pop/pop-request.ts";
import type { PopService } from "../pop/pop-service.ts";

interface Answer {
  code: number;
  remark?: string;
  ext?: Record<string, string>;
}

export class AckMessageProcessor implements RequestProcessor {
  static readonly CODES = [RequestCode.ACK_MESSAGE, RequestCode.BATCH_ACK_MESSAGE, RequestCode.CHANGE_MESSAGE_INVISIBLETIME];
  readonly #ctx: BrokerContext;
  readonly #pop: PopService;
  /** An orderly ack unblocked a queue: wake a pop parked on it. */
  readonly #wake: (topic: string, group: string, queueId: number) => void;

  constructor(ctx: BrokerContext, pop: PopService, wake: (topic: string, group: string, queueId: number) => void) {
    this.#ctx = ctx;
    this.#pop = pop;
    this.#wake = wake;
  }

  process(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | Promise<RemotingCommand> {
    if (cmd.code === RequestCode.BATCH_ACK_MESSAGE) return this.#batchAck(conn, cmd);
    return this.#ack(conn, cmd, cmd.code === RequestCode.CHANGE_MESSAGE_INVISIBLETIME);
  }

  async #ack(conn: RemotingConnection, cmd: RemotingCommand, change: boolean): Promise<RemotingCommand> {
    const ext = cmd.extFields;
    const group = str(ext, "consumerGroup");
    const topic = str(ext, "topic");
    const queueId = num(ext, "queueId", 0);
    const offset = num(ext, "offset", 0);
    const checked = this.#check(conn, topic, queueId, offset, change);
    if (checked) return createResponse(cmd, checked.code, checked.remark || undefined);
    const handle = decodeReceiptHandle(str(ext, "extraInfo"));
    if ("invalid" in handle) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `java.lang.IllegalArgumentException: ${handle.invalid}`);
    if (this.#ctx.role.isSlave || !this.#pop.active) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, "pop acks are taken by the master only");
    if (handle.reviveQid === POP_ORDER_REVIVE_QUEUE) {
      const r = change
        ? this.#changeOrderly(group, topic, queueId, offset, handle.popTime, num(ext, "invisibleTime", 0))
        : this.#ackOrderly(conn, group, topic, queueId, offset, handle.popTime);
      return createResponse(cmd, r.code, r.remark, r.ext);
    }
    const ack: AckMsgJson = { ao: offset, so: handle.ckQueueOffset, c: group, t: topic, q: queueId, pt: handle.popTime, bn: handle.brokerName };
    if (!change) {
      await this.#pop.writeAck(ack, handle.reviveQid, [offset]);
      return createResponse(cmd, ResponseCode.SUCCESS);
    }
    // The new checkpoint first: if it cannot be written the old one still holds the message.
    // Past the old pop time even within its millisecond: a handle names its checkpoint by (start, pop time).
    const popTime = Math.max(this.#ctx.now(), handle.popTime + 1);
    const invisibleTime = num(ext, "invisibleTime", 0);
    const ck = { topic, group, queueId, startOffset: offset, popTime, invisibleTime, diffs: [0], reviveQid: handle.reviveQid };
    if (!(await this.#pop.writeCheckpoint(ck))) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, "the new checkpoint was not stored");
    await this.#pop.writeAck(ack, handle.reviveQid, [offset]);
    const answer = { popTime: String(popTime), invisibleTime: String(invisibleTime), reviveQid: String(handle.reviveQid) };
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, answer);
  }

  /** An orderly ack (RocketMQ's ackOrderly): the group's offset moves to the batch's first un-acked message. */
  #ackOrderly(conn: RemotingConnection, group: string, topic: string, queueId: number, offset: number, popTime: number): Answer {
    const offsets = this.#ctx.consumerOffsets;
    const committed = offsets.query(group, topic, queueId);
    if (offset < committed) return { code: ResponseCode.SUCCESS };
    const next = this.#pop.order.ack(topic, group, queueId, offset, popTime);
    if (next === -1) {
      const remark = `offset is illegal, key:${topic}@${group}@${queueId}, old:${committed}, commit:${offset}, next:-1, /${conn.remoteAddress}`;
      return { code: ResponseCode.MESSAGE_ILLEGAL, remark };
    }
    if (next >= 0) {
      offsets.commit(group, topic, queueId, next);
      this.#wake(topic, group, queueId);
    }
    return { code: ResponseCode.SUCCESS };
  }

  /** CHANGE_MESSAGE_INVISIBLETIME of an orderly handle: the message's own next-visible time; the handle keeps its pop time. */
  #changeOrderly(group: string, topic: string, queueId: number, offset: number, popTime: number, invisibleTime: number): Answer {
    if (offset < this.#ctx.consumerOffsets.query(group, topic, queueId)) {
      return { code: ResponseCode.SUCCESS, ext: { popTime: "0", invisibleTime: "0", reviveQid: "0" } };
    }
    const visibleAt = this.#ctx.now() + invisibleTime;
    this.#pop.order.changeInvisible(topic, group, queueId, offset, popTime, visibleAt);
    const ext = { popTime: String(popTime), invisibleTime: String(visibleAt - popTime), reviveQid: String(POP_ORDER_REVIVE_QUEUE) };
    return { code: ResponseCode.SUCCESS, ext };
  }

  /** Java's checks: the topic, the queue id, the offset within the queue (ACK: ≤ max; CHANGE: < max). */
  #check(conn: RemotingConnection, topic: string, queueId: number, offset: number, change: boolean): Refusal | null {
    const tc = this.#ctx.topics.get(topic);
    if (!tc) return { code: ResponseCode.TOPIC_NOT_EXIST, remark: `topic[${topic}] not exist, apply first please! ${FAQ}` };
    if (queueId < 0 || queueId >= tc.readQueueNums) {
      const remark = `queueId[${queueId}] is illegal, topic:[${topic}] topicConfig.readQueueNums:[${tc.readQueueNums}] consumer:[/${conn.remoteAddress}]`;
      return { code: ResponseCode.MESSAGE_ILLEGAL, remark };
    }
    const min = this.#ctx.store.getMinOffsetInQueue(topic, queueId);
    const max = this.#ctx.store.getMaxOffsetInQueue(topic, queueId);
    if (offset < min || offset > max || (change && offset >= max)) {
      return { code: ResponseCode.NO_MESSAGE, remark: change ? "" : `offset is illegal, key:${topic}@${queueId}, commit:${offset}, store:${min}~${max}` };
    }
    return null;
  }

  /** BATCH_ACK_MESSAGE: per entry, the offsets its bit set names within the queue's range. */
  async #batchAck(conn: RemotingConnection, cmd: RemotingCommand): Promise<RemotingCommand> {
    const acks = parseBatchAcks(cmd.body);
    if (acks === null || acks.length === 0) return createResponse(cmd, ResponseCode.NO_MESSAGE);
    if (this.#ctx.role.isSlave || !this.#pop.active) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, "pop acks are taken by the master only");
    for (const b of acks) {
      const marker = b.r === "1" || b.r === "2" ? b.r : "0";
      const topic = realTopicOf(marker, b.t, b.c);
      const min = this.#ctx.store.getMinOffsetInQueue(topic, b.q);
      const max = this.#ctx.store.getMaxOffsetInQueue(topic, b.q);
      const offsets = batchAckOffsets(b.so, b.b).filter((o) => o >= min && o <= max);
      if (offsets.length === 0) continue;
      if (b.rq === POP_ORDER_REVIVE_QUEUE) {
        for (const o of offsets) this.#ackOrderly(conn, b.c, topic, b.q, o, b.pt);
        continue;
      }
      const ack: AckMsgJson = { ao: -1, so: b.so, c: b.c, t: topic, q: b.q, pt: b.pt, bn: this.#ctx.settings.brokerName, aol: offsets };
      await this.#pop.writeAck(ack, b.rq, offsets);
    }
    return createResponse(cmd, ResponseCode.SUCCESS);
  }
}

/** BatchAckMessageRequestBody's `acks`, each with its JSON names (or Java's full names); null when the body is not one. */
function parseBatchAcks(body: Uint8Array | undefined): BatchAckJson[] | null {
  if (!body || body.length === 0) return null;
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder().decode(body));
  } catch {
    return null;
  }
  const acks = (doc as { acks?: unknown } | null)?.acks;
  if (!Array.isArray(acks)) return null;
  const out: BatchAckJson[] = [];
  for (const a of acks as Record<string, unknown>[]) {
    const pick = (short: string, long: string) => a?.[short] ?? a?.[long];
    const e = {
      c: pick("c", "consumerGroup"),
      t: pick("t", "topic"),
      r: pick("r", "retry"),
      so: pick("so", "startOffset"),
      q: pick("q", "queueId"),
      rq: pick("rq", "reviveQueueId"),
      pt: pick("pt", "popTime"),
      it: pick("it", "invisibleTime"),
      b: pick("b", "bitSet"),
    };
    if (typeof e.c !== "string" || typeof e.t !== "string" || typeof e.b !== "string") return null;
    if (![e.so, e.q, e.rq, e.pt].every((n) => Number.isSafeInteger(n))) return null;
    out.push({ ...e, r: String(e.r ?? "0"), it: Number(e.it ?? 0) } as BatchAckJson);
  }
  return out;
}
