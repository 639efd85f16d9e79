/**
 * Topic routes as the name server returns them (TopicRouteData) and the queue views clients
 * derive from them: writable queues of brokers that have a master (publishing) and readable
 * queues of every broker (subscribing), sorted the way every RocketMQ client sorts them, so
 * members of a group agree on who owns what.
 */
import { isWriteable } from "../protocol/permission.ts";
import { MASTER_ID, type MessageQueue, type TopicRouteData } from "../protocol/route.ts";

// The split and the order it depends on are the broker's too (QUERY_ASSIGNMENT): one home in protocol/.
export { allocateAveragely, compareQueues, subscribeQueues } from "../protocol/allocate.ts";
export { parseRoute } from "../protocol/route.ts";

export function mqKey(mq: MessageQueue): string {
  return `${mq.topic}@${mq.brokerName}@${mq.queueId}`;
}

/** Queues a producer may send to: writable queues of brokers with a live master. */
export function publishQueues(topic: string, route: TopicRouteData): MessageQueue[] {
  const out: MessageQueue[] = [];
  if (route.orderTopicConf) {
    for (const part of route.orderTopicConf.split(";")) {
      const [brokerName, n] = part.split(":");
      if (!brokerName) continue;
      for (let i = 0; i < Number(n ?? 0); i++) out.push({ topic, brokerName, queueId: i });
    }
    return out;
  }
  for (const q of route.queueDatas) {
    if (!isWriteable(q.perm)) continue;
    const bd = route.brokerDatas.find((b) => b.brokerName === q.brokerName);
    if (!bd || bd.brokerAddrs[String(MASTER_ID)] === undefined) continue;
    for (let i = 0; i < q.writeQueueNums; i++) out.push({ topic, brokerName: q.brokerName, queueId: i });
  }
  return out;
}
