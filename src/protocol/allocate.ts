/**
 * How RocketMQ splits a topic's queues among a consumer group's members, written once for the
 * clients that rebalance themselves (src/client/) and the broker that rebalances for them
 * (QUERY_ASSIGNMENT, src/broker/processors/query-assignment.ts, docs/PROTOCOL.md §3.22). Every
 * side sorts the queues (Java `MessageQueue.compareTo`) and the member ids (`String.compareTo`)
 * the same way first, so every member computes the same split; JavaScript's `<` on strings
 * compares UTF-16 code units, as Java does.
 */
import { isReadable } from "./permission.ts";
import type { MessageQueue, TopicRouteData } from "./route.ts";

/** The strategy names a 5.3.3 client sends in QUERY_ASSIGNMENT (Java `AllocateMessageQueueStrategy.getName`). */
export const AllocateStrategyName = { AVG: "AVG", AVG_BY_CIRCLE: "AVG_BY_CIRCLE" } as const;

/** Java `MessageQueue.compareTo`: topic, then broker name, then queue id. */
export function compareQueues(a: MessageQueue, b: MessageQueue): number {
  if (a.topic !== b.topic) return a.topic < b.topic ? -1 : 1;
  if (a.brokerName !== b.brokerName) return a.brokerName < b.brokerName ? -1 : 1;
  return a.queueId - b.queueId;
}

/** Queues a consumer may read: readable queues of every broker named in the route, sorted. */
export function subscribeQueues(topic: string, route: TopicRouteData): MessageQueue[] {
  const out: MessageQueue[] = [];
  for (const q of route.queueDatas) {
    if (!isReadable(q.perm)) continue;
    for (let i = 0; i < q.readQueueNums; i++) out.push({ topic, brokerName: q.brokerName, queueId: i });
  }
  return out.sort(compareQueues);
}

/**
 * RocketMQ's AllocateMessageQueueAveragely ("AVG"): the sorted queues are cut into contiguous
 * runs, one per sorted member; the first `queues % members` members get one extra. A member not
 * in the list gets nothing.
 */
export function allocateAveragely<T>(queues: readonly T[], members: readonly string[], me: string): T[] {
  const index = members.indexOf(me);
  if (index < 0 || queues.length === 0) return [];
  const n = members.length;
  const mod = queues.length % n;
  const size = queues.length <= n ? 1 : mod > 0 && index < mod ? Math.floor(queues.length / n) + 1 : Math.floor(queues.length / n);
  const start = mod > 0 && index < mod ? index * size : index * size + mod;
  const range = Math.min(size, queues.length - start);
  const out: T[] = [];
  for (let i = 0; i < range; i++) out.push(queues[(start + i) % queues.length]!);
  return out;
}

/**
 * RocketMQ's AllocateMessageQueueAveragelyByCircle ("AVG_BY_CIRCLE"): queue i goes to member
 * i % members, dealt like cards.
 */
export function allocateAveragelyByCircle<T>(queues: readonly T[], members: readonly string[], me: string): T[] {
  const index = members.indexOf(me);
  if (index < 0) return [];
  const out: T[] = [];
  for (let i = index; i < queues.length; i += members.length) out.push(queues[i]!);
  return out;
}
