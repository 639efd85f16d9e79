/**
 * What one POP_MESSAGE reads (RocketMQ 5.3's PopMessageProcessor): the group's POP retry topic
 * first one pop in five (popFromRetryProbability 20), then the topic — one queue, or every read
 * queue from a random one for queueId −1 — then the retry topic if the batch is not full. Each
 * queue is locked while its checkpoint is written (./pop-service.ts), read from the group's
 * committed offset (a group without one starts as its initMode says), through the request's tag
 * and SQL92 filters. An offset the store moved (too small, too big, removed) is committed where
 * the store says and read again once; a queue whose messages were all filtered out commits past
 * them, with no checkpoint. `restNum` counts what is left behind in the queues read or skipped.
 */
import type { GetMessageResult } from "../../commitlog/index.ts";
import { readQueueOffset } from "../../common/message-record.ts";
import { popRetryTopic, retryMarker, type RetryMarker } from "../../protocol/pop.ts";
import type { BrokerContext } from "../context.ts";
import type { PopService } from "./pop-service.ts";

/** ConsumeInitMode: a group without an offset starts at the queue's start (MIN) or end (MAX). */
export const INIT_MODE_MIN = 0;

/** popFromRetryProbability: the share of pops (in percent) that read the retry topic first. */
const POP_FROM_RETRY_PERCENT = 20;

export interface PopRead {
  group: string;
  topic: string;
  /** −1: every read queue. */
  queueId: number;
  maxMsgNums: number;
  initMode: number;
  tagFilter: ((tagsCode: number) => boolean) | undefined;
  recordFilter: ((record: Uint8Array) => boolean) | undefined;
  /** 0..99 (random): decides whether the retry topic comes first and where the queue walk starts. */
  randomQ: number;
  /** A FIFO pop: never the retry topic, blocked queues skipped, no checkpoint (./order-info.ts). */
  order: boolean;
  attemptId: string;
  popTime: number;
  invisibleTime: number;
}

/** One queue's part of a pop: messages read and locked, awaiting their checkpoint. */
export interface QueuePart {
  topic: string;
  retry: RetryMarker;
  queueId: number;
  startOffset: number;
  next: number;
  messages: Uint8Array[];
  offsets: number[];
  /** Still locked: its checkpoint is to be written (a FIFO part needs none and is unlocked already). */
  locked: boolean;
  /** FIFO: each message's deliveries before this one (orderCountInfo). */
  counts?: number[];
}

export interface PopReadResult {
  parts: QueuePart[];
  restNum: number;
  count: number;
}

export function readForPop(ctx: BrokerContext, pop: PopService, r: PopRead): PopReadResult {
  const out: PopReadResult = { parts: [], restNum: 0, count: 0 };
  const retry = popRetryTopic(r.topic, r.group);
  const retryExists = ctx.topics.get(retry) !== undefined;
  const retryFirst = retryExists && !r.order && r.randomQ < POP_FROM_RETRY_PERCENT;
  if (retryFirst) readTopic(ctx, pop, r, retry, -1, out);
  readTopic(ctx, pop, r, r.topic, r.queueId, out);
  if (!retryFirst && retryExists && !r.order && out.count < r.maxMsgNums) readTopic(ctx, pop, r, retry, -1, out);
  return out;
}

function readTopic(ctx: BrokerContext, pop: PopService, r: PopRead, topic: string, queueId: number, out: PopReadResult): void {
  const tc = ctx.topics.get(topic);
  if (!tc) return;
  if (queueId >= 0) {
    readQueue(ctx, pop, r, topic, queueId, out);
    return;
  }
  const n = tc.readQueueNums;
  for (let i = 0; i < n; i++) readQueue(ctx, pop, r, topic, (r.randomQ + i) % n, out);
}

function readQueue(ctx: BrokerContext, pop: PopService, r: PopRead, topic: string, queueId: number, out: PopReadResult): void {
  const store = ctx.store;
  const full = out.count >= r.maxMsgNums;
  // A FIFO queue with a batch in flight is skipped (RocketMQ's checkBlock), its rest not counted.
  if (r.order && pop.order.isBlocked(topic, r.group, queueId, r.popTime, r.attemptId)) return;
  if (full || !pop.tryLock(r.group, topic, queueId)) {
    out.restNum += Math.max(0, store.getMaxOffsetInQueue(topic, queueId) - Math.max(0, ctx.consumerOffsets.query(r.group, topic, queueId)));
    return;
  }
  let unlockHere = true;
  try {
    const start = startOffset(ctx, r, topic, queueId);
    const got = read(ctx, r, topic, queueId, start, r.maxMsgNums - out.count);
    out.restNum += Math.max(0, got.result.maxOffset - got.result.nextBeginOffset);
    if (got.result.status === "FOUND" && got.result.messages.length > 0) {
      const offsets = got.result.messages.map((m) => readQueueOffset(m, 0));
      // Copies: the store's views into mapped segments must not outlive this turn (the checkpoint's write awaits).
      const messages = got.result.messages.map((m) => m.slice());
      const next = got.result.nextBeginOffset;
      const part: QueuePart = { topic, retry: retryMarker(topic), queueId, startOffset: got.from, next, messages, offsets, locked: !r.order };
      if (r.order) {
        // FIFO: no checkpoint; the batch is the queue's order info, the offset stays at its start.
        part.counts = pop.order.popped(topic, r.group, queueId, offsets, r.popTime, r.invisibleTime, r.attemptId);
        ctx.consumerOffsets.commit(r.group, topic, queueId, got.from);
      }
      out.parts.push(part);
      out.count += offsets.length;
      unlockHere = !part.locked; // else released once its checkpoint is written
    } else if (got.result.nextBeginOffset > got.from) {
      // Everything there was filtered out: past it, with nothing in flight (RocketMQ's addCkMock).
      ctx.consumerOffsets.commit(r.group, topic, queueId, got.result.nextBeginOffset);
    }
  } finally {
    if (unlockHere) pop.unlock(r.group, topic, queueId);
  }
}

/** The group's committed offset; without one, where its initMode starts (and committed there). */
function startOffset(ctx: BrokerContext, r: PopRead, topic: string, queueId: number): number {
  const committed = ctx.consumerOffsets.query(r.group, topic, queueId);
  if (committed >= 0) return committed;
  const store = ctx.store;
  const min = store.getMinOffsetInQueue(topic, queueId);
  const max = store.getMaxOffsetInQueue(topic, queueId);
  let init: number;
  if (r.initMode === INIT_MODE_MIN || topic !== r.topic) init = min;
  else if (min <= 0 && (max === 0 || !store.getMessage(topic, queueId, 0, 1).suggestPullingFromSlave)) init = 0; // a young queue, as PULL's rule
  else init = Math.max(0, max - 1);
  ctx.consumerOffsets.commit(r.group, topic, queueId, init);
  return init;
}

/** Reads from `from`; an offset the store moved is committed where it says and read again once. */
function read(ctx: BrokerContext, r: PopRead, topic: string, queueId: number, from: number, want: number): { from: number; result: GetMessageResult } {
  let result = ctx.store.getMessage(topic, queueId, from, want, r.tagFilter, r.recordFilter);
  const moved = result.status === "OFFSET_TOO_SMALL" || result.status === "OFFSET_OVERFLOW_BADLY" || result.status === "OFFSET_FOUND_NULL";
  if (moved && result.nextBeginOffset !== from) {
    from = result.nextBeginOffset;
    ctx.consumerOffsets.commit(r.group, topic, queueId, from);
    result = ctx.store.getMessage(topic, queueId, from, want, r.tagFilter, r.recordFilter);
  }
  return { from, result };
}
