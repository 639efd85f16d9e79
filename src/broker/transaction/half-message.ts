/**
 * Transactional messages on disk (docs/PROTOCOL.md §6): the rewrites between a producer's half
 * message, its parked copy in RMQ_SYS_TRANS_HALF_TOPIC, the committed message and the op record.
 * Pure functions over PutMessageRequest / DecodedRecord; no store, no clock.
 *
 * Half message (what SEND_MESSAGE_V2 with TRAN_MSG=true or sysFlag PREPARED stores):
 *
 *   field        producer sent            stored
 *   -----------  -----------------------  ------------------------------------------------
 *   TOPIC        T                        RMQ_SYS_TRANS_HALF_TOPIC
 *   QUEUEID      q                        0
 *   SYSFLAG      tx bits PREPARED (or 0)  tx bits NOT_TYPE (so it gets a ConsumeQueue unit
 *                                         in the half queue, which the check service scans)
 *   properties   TRAN_MSG, PGROUP, ...    + REAL_TOPIC=T, REAL_QID=q, PGROUP (if missing)
 *
 * Re-appended copy (check-back, or a long CHECK_IMMUNITY_TIME_IN_SECONDS): the same record
 * appended again to the half queue, with TRANSACTION_CHECK_TIMES counted up (check-back only) and
 * TRAN_PREPARED_QUEUE_OFFSET = the ORIGIN: the half-queue offset of the first copy. Every copy of
 * one transaction has the same origin; the check service and the duplicate guard key on it.
 *
 * Committed message (END_TRANSACTION commit): topic REAL_TOPIC, queue REAL_QID, tx bits COMMIT,
 * PREPARED TRANSACTION OFFSET = CommitLog offset of the half copy the producer named, body, flag,
 * born time/host and reconsume times of the half. REAL_TOPIC / REAL_QID and the check-back
 * bookkeeping are dropped; TRAN_MSG and PGROUP are kept (consumers see a transactional message).
 *
 * Op record (commit and rollback both write one), in RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0:
 *
 *   +------------------------------+------------------------------------------------------+
 *   | TAGS                         | "d" (RocketMQ's REMOVETAG; other tags are ignored)    |
 *   | BODY                         | half-queue offset of the resolved copy, decimal ASCII |
 *   | TRAN_PREPARED_QUEUE_OFFSET   | origin of that copy, decimal (RocketBun; absent in    |
 *   |                              | records a Java broker wrote: origin = body)           |
 *   +------------------------------+------------------------------------------------------+
 *
 * Invariants: origin ≤ copy offset; a copy's origin names a record in the half queue that was
 * appended before it; an op names a copy that existed when the op was written.
 */
import { MessageConst } from "../../protocol/message-const.ts";
import { SysFlag, transactionType } from "../../protocol/sys-flag.ts";
import { encodeProperties, parseProperties, type DecodedRecord, type HostAddress, type PutMessageRequest } from "../../commitlog/index.ts";
import { type Invalid } from "../../common/invalid.ts";
import { putRequestFromRecord, realQueueOf } from "../reput.ts";

export const TRANS_SYS_GROUP = "CID_RMQ_SYS_TRANS";
/** The op tag meaning "this half message is resolved" (committed or rolled back). */
export const OP_REMOVE_TAG = "d";
/** Half and op topics have one queue each, as in RocketMQ 4.x. */
export const HALF_QUEUE_ID = 0;
export const OP_QUEUE_ID = 0;

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * TRAN_MSG=true (Java's Boolean.parseBoolean) or a prepared/rollback sysFlag: a transactional half
 * message. As in Java, a consumer's delayed re-send (reconsumeTimes > 0 with a DELAY) is not one.
 */
export function isTransactionPrepare(props: Record<string, string>, sysFlag: number, reconsumeTimes: number): boolean {
  if (reconsumeTimes > 0 && Number(props[MessageConst.DELAY] ?? 0) > 0) return false;
  const t = transactionType(sysFlag);
  if (t === SysFlag.TRANSACTION_PREPARED_TYPE || t === SysFlag.TRANSACTION_ROLLBACK_TYPE) return true;
  return props[MessageConst.TRAN_MSG]?.toLowerCase() === "true";
}

/** The half copy of a producer's message (see the table at the top). */
export function toHalfRequest(req: PutMessageRequest, halfTopic: string, producerGroup: string): PutMessageRequest {
  const props = parseProperties(req.properties);
  props[MessageConst.REAL_TOPIC] = req.topic;
  props[MessageConst.REAL_QID] = String(req.queueId);
  // ali-ons (or a raw sysFlag) may leave PGROUP out; the check-back needs it to find a producer.
  props[MessageConst.PGROUP] ??= producerGroup;
  const half: PutMessageRequest = {
    ...req,
    topic: halfTopic,
    queueId: HALF_QUEUE_ID,
    properties: encodeProperties(props),
    sysFlag: (req.sysFlag & ~SysFlag.TRANSACTION_TYPE_MASK) | SysFlag.TRANSACTION_NOT_TYPE,
    preparedTransactionOffset: 0,
  };
  return half;
}

/** Half-queue offset of the first copy of this transaction (see "origin" at the top). */
export function originOf(rec: Pick<DecodedRecord, "queueOffset">, props: Record<string, string>): number {
  const o = parseLong(props[MessageConst.TRAN_PREPARED_QUEUE_OFFSET]);
  return o !== null && o >= 0 && o <= rec.queueOffset ? o : rec.queueOffset;
}

/** The committed message for a half record (see the top), or why it cannot be built. */
export function toCommitRequest(half: DecodedRecord): PutMessageRequest | Invalid {
  const props = parseProperties(half.properties);
  const real = realQueueOf(props);
  if ("invalid" in real) return { invalid: `half message has ${real.invalid}` };
  for (const k of [
    MessageConst.REAL_TOPIC,
    MessageConst.REAL_QID,
    MessageConst.TRAN_PREPARED_QUEUE_OFFSET,
    MessageConst.TRANSACTION_CHECK_TIMES,
    MessageConst.WAIT,
  ])
    delete props[k];
  const req = putRequestFromRecord(half, real.topic, real.queueId, props);
  req.sysFlag = (half.sysFlag & ~SysFlag.TRANSACTION_TYPE_MASK) | SysFlag.TRANSACTION_COMMIT_TYPE;
  req.preparedTransactionOffset = half.physicalOffset;
  return req;
}

/**
 * A new copy of a half record at the end of the half queue: origin recorded, and the check count
 * raised by one when `countCheck` (a check-back is about to be sent for it).
 */
export function toRenewedHalfRequest(half: DecodedRecord, countCheck: boolean): PutMessageRequest {
  const props = parseProperties(half.properties);
  props[MessageConst.TRAN_PREPARED_QUEUE_OFFSET] = String(originOf(half, props));
  if (countCheck) props[MessageConst.TRANSACTION_CHECK_TIMES] = String(checkTimesOf(props) + 1);
  return putRequestFromRecord(half, half.topic, half.queueId, props);
}

/** A half record given up on (checked too often): parked in TRANS_CHECK_MAX_TIME_TOPIC queue 0. */
export function toDiscardRequest(half: DecodedRecord, topic: string): PutMessageRequest {
  const props = parseProperties(half.properties);
  return putRequestFromRecord(half, topic, 0, props);
}

/** Check-backs already sent for this half message (TRANSACTION_CHECK_TIMES; 0 when absent or bad). */
export function checkTimesOf(props: Record<string, string>): number {
  const n = parseLong(props[MessageConst.TRANSACTION_CHECK_TIMES]);
  return n !== null && n > 0 ? n : 0;
}

/** The op record resolving half copy `halfOffset` of transaction `origin`. */
export function toOpRequest(opTopic: string, halfOffset: number, origin: number, host: HostAddress, now: number): PutMessageRequest {
  const props: Record<string, string> = {
    [MessageConst.TAGS]: OP_REMOVE_TAG,
    [MessageConst.TRAN_PREPARED_QUEUE_OFFSET]: String(origin),
  };
  return {
    topic: opTopic,
    queueId: OP_QUEUE_ID,
    flag: 0,
    body: enc.encode(String(halfOffset)),
    properties: encodeProperties(props),
    sysFlag: 0,
    bornTimestamp: now,
    bornHost: host,
    reconsumeTimes: 0,
    preparedTransactionOffset: 0,
    tags: OP_REMOVE_TAG,
    waitStoreMsgOK: false,
  };
}

export interface OpEntry {
  /** Queue offset of the op record in the op queue. */
  opOffset: number;
  /** Half-queue offset of the copy that was resolved. */
  halfOffset: number;
  /** Half-queue offset of the transaction's first copy. */
  origin: number;
}

/** Reads an op record (ours or a Java broker's); anything that is not a "d" op is a reason. */
export function parseOpRecord(rec: Pick<DecodedRecord, "queueOffset" | "body" | "properties">): OpEntry | Invalid {
  const props = parseProperties(rec.properties);
  if (props[MessageConst.TAGS] !== OP_REMOVE_TAG) return { invalid: `op record tag ${JSON.stringify(props[MessageConst.TAGS])} is not "d"` };
  const halfOffset = parseLong(dec.decode(rec.body));
  if (halfOffset === null || halfOffset < 0) return { invalid: "op record body is not a half-queue offset" };
  const o = parseLong(props[MessageConst.TRAN_PREPARED_QUEUE_OFFSET]);
  const origin = o !== null && o >= 0 && o <= halfOffset ? o : halfOffset;
  return { opOffset: rec.queueOffset, halfOffset, origin };
}

/** A Java long in decimal within the safe-integer range; null otherwise. */
export function parseLong(text: string | undefined): number | null {
  if (text === undefined || !/^-?[0-9]{1,16}$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : null;
}
