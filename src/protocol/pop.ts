/**
 * RocketMQ 5.x POP consumption's shapes (docs/PROTOCOL.md §3.21): the receipt handle, the offset
 * info strings of a POP answer, the POP retry topic's name, the revive log's names, and the JSON
 * of checkpoints, acks and BATCH_ACK_MESSAGE's body, with RocketMQ 5.3's field names.
 *
 * Receipt handle ("extraInfo", the POP_CK property a client acks with): eight fields joined by one
 * space (ExtraInfoUtil):
 *
 *   0 ckQueueOffset   the first queue offset the pop read from that queue (the checkpoint's start)
 *   1 popTime         ms
 *   2 invisibleTime   ms
 *   3 reviveQid       the revive queue the checkpoint went to; 999 = an orderly (FIFO) pop
 *   4 retry           "0" the topic itself, "1" %RETRY%{group}_{topic}, "2" %RETRY%{group}+{topic}
 *   5 brokerName
 *   6 queueId         of the real topic (the retry topic's queue for a retried message)
 *   7 queueOffset     the message's offset in that queue
 *
 * e.g. "1200 1718000000000 60000 3 0 broker-a 2 1205". The gRPC proxy appends a ninth field, the
 * CommitLog offset.
 *
 * Offset infos of a POP answer, one entry per queue that gave messages, joined by ";":
 *   startOffsetInfo  "{retry} {queueId} {startOffset}"
 *   msgOffsetInfo    "{retry} {queueId} {offset},{offset},…"
 */
import { RETRY_GROUP_TOPIC_PREFIX } from "./topics.ts";

/** The revive log: `rmq_sys_REVIVE_LOG_{brokerClusterName}`, one queue per revive queue id. */
export const REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_";
/** The group whose consumer offsets on the revive topic record the revive service's progress. */
export const REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP";
/** reviveQid of an orderly pop's handle (KeyBuilder.POP_ORDER_REVIVE_QUEUE). */
export const POP_ORDER_REVIVE_QUEUE = 999;
/** POP_MESSAGE's largest maxMsgNums. */
export const POP_MAX_MSG_NUMS = 32;
/** Tags of the revive log's records (PopAckConstants). */
export const PopTag = { CK: "ck", ACK: "ack", BATCH_ACK: "bAck" } as const;

export function reviveTopic(clusterName: string): string {
  return `${REVIVE_TOPIC_PREFIX}${clusterName}`;
}

export type RetryMarker = "0" | "1" | "2";

/** The POP retry topic of `topic` for `group` (KeyBuilder.buildPopRetryTopic): V1 `%RETRY%{group}_{topic}`, V2 with '+'. */
export function popRetryTopic(topic: string, group: string, v2 = false): string {
  return `${RETRY_GROUP_TOPIC_PREFIX}${group}${v2 ? "+" : "_"}${topic}`;
}

/** The topic a POP retry topic retries (KeyBuilder.parseNormalTopic); `topic` itself when it is not one of `group`'s. */
export function popNormalTopic(topic: string, group: string): string {
  for (const sep of ["+", "_"]) {
    const prefix = `${RETRY_GROUP_TOPIC_PREFIX}${group}${sep}`;
    if (topic.startsWith(prefix)) return topic.slice(prefix.length);
  }
  return topic;
}

/** ExtraInfoUtil.getRetry: the marker of the topic a message was popped from. */
export function retryMarker(topic: string): RetryMarker {
  if (!topic.startsWith(RETRY_GROUP_TOPIC_PREFIX)) return "0";
  return topic.includes("+") ? "2" : "1";
}

/** The topic a marker names (ExtraInfoUtil.getRealTopic). */
export function realTopicOf(marker: RetryMarker, topic: string, group: string): string {
  if (marker === "1") return popRetryTopic(topic, group, false);
  if (marker === "2") return popRetryTopic(topic, group, true);
  return topic;
}

export interface ReceiptHandle {
  ckQueueOffset: number;
  popTime: number;
  invisibleTime: number;
  reviveQid: number;
  retry: RetryMarker;
  brokerName: string;
  queueId: number;
  queueOffset: number;
}

export function encodeReceiptHandle(h: ReceiptHandle): string {
  return `${h.ckQueueOffset} ${h.popTime} ${h.invisibleTime} ${h.reviveQid} ${h.retry} ${h.brokerName} ${h.queueId} ${h.queueOffset}`;
}

/**
 * Parses a handle; a refusal names what is wrong, as Java's ExtraInfoUtil does (its accessors
 * throw "getX fail, extraInfoStrs length N"). Input from a client: never asserted on.
 */
export function decodeReceiptHandle(extraInfo: string): ReceiptHandle | { invalid: string } {
  const f = extraInfo.split(" ");
  if (f.length < 8) return { invalid: `getQueueOffset fail, extraInfoStrs length ${f.length}` };
  const nums = [f[0], f[1], f[2], f[3], f[6], f[7]].map((s) => (s !== undefined && /^-?\d{1,19}$/.test(s) ? Number(s) : NaN));
  const bad = nums.findIndex((n) => !Number.isSafeInteger(n));
  if (bad >= 0) return { invalid: `NumberFormatException: For input string: "${[f[0], f[1], f[2], f[3], f[6], f[7]][bad]}"` };
  const retry = f[4];
  if (retry !== "0" && retry !== "1" && retry !== "2") return { invalid: "getRetry fail, format is wrong" };
  const [ckQueueOffset, popTime, invisibleTime, reviveQid, queueId, queueOffset] = nums as [number, number, number, number, number, number];
  return { ckQueueOffset, popTime, invisibleTime, reviveQid, retry, brokerName: f[5]!, queueId, queueOffset };
}

/** One queue's part of a POP answer's offset infos. */
export interface PopQueueOffsets {
  retry: RetryMarker;
  queueId: number;
  startOffset: number;
  offsets: number[];
}

export function encodeStartOffsetInfo(queues: readonly PopQueueOffsets[]): string {
  return queues.map((q) => `${q.retry} ${q.queueId} ${q.startOffset}`).join(";");
}

export function encodeMsgOffsetInfo(queues: readonly PopQueueOffsets[]): string {
  return queues.map((q) => `${q.retry} ${q.queueId} ${q.offsets.join(",")}`).join(";");
}

/**
 * A checkpoint (PopCheckPoint's JSON names): the messages one pop took from one queue, in flight
 * until acked or revived. `d`: each message's offset minus `so`, in order.
 */
export interface PopCheckPointJson {
  so: number;
  pt: number;
  it: number;
  bm: number;
  n: number;
  q: number;
  t: string;
  c: string;
  ro: number;
  d: number[];
  bn: string;
  rp?: string;
}

/** An ack of one message (AckMsg), or of several (BatchAckMsg: `ao` −1 and `aol`). */
export interface AckMsgJson {
  ao: number;
  so: number;
  c: string;
  t: string;
  q: number;
  pt: number;
  bn: string;
  aol?: number[];
}

/** One entry of BATCH_ACK_MESSAGE's body (BatchAck): `b` is a java.util.BitSet, base64 of toByteArray(). */
export interface BatchAckJson {
  c: string;
  t: string;
  r: string;
  so: number;
  q: number;
  rq: number;
  pt: number;
  it: number;
  b: string;
}

/** The offsets a BatchAck names: bit i of the little-endian BitSet bytes set = offset `so + i`. */
export function batchAckOffsets(so: number, bitSetBase64: string): number[] {
  const bytes = Buffer.from(bitSetBase64, "base64");
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    for (let bit = 0; bit < 8; bit++) if (b & (1 << bit)) out.push(so + i * 8 + bit);
  }
  return out;
}

/** The BitSet bytes (base64) of offsets relative to `so` (what a client or the proxy sends). */
export function encodeBatchAckBits(so: number, offsets: readonly number[]): string {
  const max = offsets.reduce((m, o) => Math.max(m, o - so), -1);
  const bytes = new Uint8Array(max < 0 ? 0 : (max >> 3) + 1);
  for (const o of offsets) bytes[(o - so) >> 3]! |= 1 << ((o - so) & 7);
  return Buffer.from(bytes).toString("base64");
}
