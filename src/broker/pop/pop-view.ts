/**
 * POP consumption as operators see it: which (topic, group) pairs consume by POP, what each has in
 * flight and ready, per queue. One source for GET_CONSUME_STATS (../admin-bodies.ts), the metrics
 * state (../metrics-state.ts) and BrokerInfo.popConsumption (the admin API and the dashboard).
 *
 * A pair counts as POP when the mode table (../message-request-mode.ts) says POP for it, when a
 * checkpoint of it, or of its POP retry topic `%RETRY%{group}_{topic}`, is in flight, or when
 * that retry topic exists (only a revive creates it: messages may wait there for the next pops,
 * long after the last pop). The retry
 * topic is reported apart, under the topic it retries with isRetry, as RocketMQ 5.x's
 * ConsumerLagCalculator reports it.
 *
 * Per queue: in flight = the messages of checkpoints neither acked nor revived (the in-flight
 * table, ./inflight.ts; all of them lie below the committed offset, a pop commits as it goes);
 * ready = max offset − committed offset, what the next pops hand out. A queue without a committed
 * offset: ready 0 for the topic (where the first pop starts is its initMode's choice, as Java
 * counts it), everything from the queue's start for the retry topic (a pop always reads it from
 * there).
 */
import { popNormalTopic, popRetryTopic } from "../../protocol/pop.ts";
import type { MessageRequestMode } from "../../protocol/message-request-mode.ts";
import type { BrokerContext } from "../context.ts";
import type { LiveCheckPoint } from "./inflight.ts";

/** What the views read of the in-flight table (./inflight.ts InflightTable). */
export interface InflightSource {
  entries(): Iterable<Readonly<LiveCheckPoint>>;
}

/** One checkpoint in flight, for the dashboard. */
export interface PopCheckpointView {
  queueId: number;
  startOffset: number;
  /** Queue offsets of its messages still in flight (neither acked nor revived), ascending. */
  offsets: number[];
  popTime: number;
  /** When the revive service takes the open messages back (popTime + invisibleTime, or a retry of a failed revive). */
  invisibleUntil: number;
}

/** One queue's in-flight messages. */
export interface QueueInflight {
  count: number;
  /** The smallest offset in flight (the oldest message popped and not acked). */
  lowestOffset: number;
  checkpoints: Readonly<LiveCheckPoint>[];
}

/** POP consumption of one (topic, group), or of its POP retry topic (isRetry). */
export interface PopConsumption {
  group: string;
  /** The topic consumed; for isRetry the one whose POP retry topic this is. */
  topic: string;
  isRetry: boolean;
  /** The topic the queues belong to: `topic`, or `%RETRY%{group}_{topic}`. */
  queueTopic: string;
  /** The mode table's entry for (topic, group); PULL when there is none (something is in flight). */
  mode: MessageRequestMode;
  inflight: number;
  ready: number;
  /** Ordered by invisible-until, then queue and start offset. */
  checkpoints: PopCheckpointView[];
}

/** The in-flight table by topic@group and queue, built once per read (O(checkpoints)). */
export class PopInflightIndex {
  readonly #byPair = new Map<string, Map<number, QueueInflight>>();

  constructor(source?: InflightSource) {
    for (const ck of source?.entries() ?? []) {
      const open = openOffsets(ck);
      if (open.length === 0) continue;
      const k = pairKey(ck.topic, ck.group);
      let queues = this.#byPair.get(k);
      if (!queues) this.#byPair.set(k, (queues = new Map()));
      const q = queues.get(ck.queueId);
      const lowest = Math.min(...open);
      if (q) {
        q.count += open.length;
        q.lowestOffset = Math.min(q.lowestOffset, lowest);
        q.checkpoints.push(ck);
      } else queues.set(ck.queueId, { count: open.length, lowestOffset: lowest, checkpoints: [ck] });
    }
  }

  /** The queues of `topic` (the topic itself or a POP retry topic) with messages of `group` in flight. */
  queues(topic: string, group: string): ReadonlyMap<number, QueueInflight> | undefined {
    return this.#byPair.get(pairKey(topic, group));
  }

  inflight(topic: string, group: string, queueId: number): number {
    return this.queues(topic, group)?.get(queueId)?.count ?? 0;
  }

  /** Every (topic, group) with something in flight; retry topics as they are. */
  *pairs(): Iterable<{ topic: string; group: string }> {
    for (const k of this.#byPair.keys()) {
      const at = k.indexOf("@");
      yield { topic: k.slice(0, at), group: k.slice(at + 1) };
    }
  }
}

/** A checkpoint's messages neither acked nor revived, ascending. */
function openOffsets(ck: Readonly<LiveCheckPoint>): number[] {
  return ck.diffs.flatMap((d, i) => ((ck.acked & (1 << i)) === 0 ? [ck.startOffset + d] : [])).sort((a, b) => a - b);
}

/** Keys are topic@group; a topic name never contains '@' (validateTopicName). */
function pairKey(topic: string, group: string): string {
  return `${topic}@${group}`;
}

/** Does `group` consume `topic` (a topic, or its POP retry topic) by POP? */
export function isPopConsumed(ctx: BrokerContext, index: PopInflightIndex, topic: string, group: string): boolean {
  const normal = popNormalTopic(topic, group);
  if (ctx.requestModes.get(normal, group)?.mode === "POP") return true;
  const retry = popRetryTopic(normal, group);
  return index.queues(normal, group) !== undefined || index.queues(retry, group) !== undefined || ctx.topics.get(retry) !== undefined;
}

/**
 * Every (topic, group) consuming by POP: the mode table's POP entries, the pairs in flight, and
 * the pairs with committed offsets whose POP retry topic exists; sorted by group then topic.
 */
export function popPairs(ctx: BrokerContext, index: PopInflightIndex): { topic: string; group: string }[] {
  const out = new Map<string, { topic: string; group: string }>();
  ctx.consumerOffsets.forEachEntry((topic, group) => {
    const normal = popNormalTopic(topic, group);
    if (normal !== topic || ctx.topics.get(popRetryTopic(topic, group))) out.set(pairKey(normal, group), { topic: normal, group });
  });
  for (const [topic, groups] of Object.entries(ctx.requestModes.wrapper().messageRequestModeMap)) {
    for (const [group, e] of Object.entries(groups)) if (e.mode === "POP") out.set(pairKey(topic, group), { topic, group });
  }
  for (const p of index.pairs()) {
    const topic = popNormalTopic(p.topic, p.group);
    out.set(pairKey(topic, p.group), { topic, group: p.group });
  }
  return [...out.values()].sort((a, b) => cmp(a.group, b.group) || cmp(a.topic, b.topic));
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Ready messages of one queue (this file's header). */
export function readyInQueue(ctx: BrokerContext, topic: string, queueId: number, committed: number, isRetry: boolean): number {
  const max = Math.max(0, ctx.store.getMaxOffsetInQueue(topic, queueId));
  if (committed >= 0) return Math.max(0, max - committed);
  return isRetry ? Math.max(0, max - Math.max(0, ctx.store.getMinOffsetInQueue(topic, queueId))) : 0;
}

function consumption(ctx: BrokerContext, index: PopInflightIndex, topic: string, group: string, isRetry: boolean): PopConsumption {
  const queueTopic = isRetry ? popRetryTopic(topic, group) : topic;
  const tc = ctx.topics.get(queueTopic);
  const offsets = ctx.consumerOffsets.offsetsOf(group, queueTopic);
  let ready = 0;
  for (let q = 0; tc && q < tc.readQueueNums; q++) ready += readyInQueue(ctx, queueTopic, q, offsets?.get(q) ?? -1, isRetry);
  let inflight = 0;
  const checkpoints: PopCheckpointView[] = [];
  for (const [queueId, q] of index.queues(queueTopic, group) ?? []) {
    inflight += q.count;
    for (const ck of q.checkpoints) {
      checkpoints.push({ queueId, startOffset: ck.startOffset, offsets: openOffsets(ck), popTime: ck.popTime, invisibleUntil: ck.reviveTime });
    }
  }
  checkpoints.sort((a, b) => a.invisibleUntil - b.invisibleUntil || a.queueId - b.queueId || a.startOffset - b.startOffset);
  const mode = ctx.requestModes.get(topic, group)?.mode ?? "PULL";
  return { group, topic, isRetry, queueTopic, mode, inflight, ready, checkpoints };
}

/** BrokerInfo.popConsumption: each POP pair (of `group` only, when given), its topic then its POP retry topic. */
export function popConsumption(ctx: BrokerContext, source: InflightSource | undefined, group?: string): PopConsumption[] {
  const index = new PopInflightIndex(source);
  const out: PopConsumption[] = [];
  for (const p of popPairs(ctx, index)) {
    if (group !== undefined && p.group !== group) continue;
    out.push(consumption(ctx, index, p.topic, p.group, false), consumption(ctx, index, p.topic, p.group, true));
  }
  return out;
}
