/**
 * Topic routes as the name server returns them (TopicRouteData) and the queue views clients
 * derive from them: writable queues of brokers that have a master (publishing) and readable
 * queues of every broker (subscribing), sorted the way every RocketMQ client sorts them, so
 * members of a group agree on who owns what.
 */
import { isReadable, isWriteable } from "../protocol/permission.ts";
import { MASTER_ID, type MessageQueue, type TopicRouteData } from "../protocol/route.ts";

export function mqKey(mq: MessageQueue): string {
  return `${mq.topic}@${mq.brokerName}@${mq.queueId}`;
}

export function compareQueues(a: MessageQueue, b: MessageQueue): number {
  if (a.topic !== b.topic) return a.topic < b.topic ? -1 : 1;
  if (a.brokerName !== b.brokerName) return a.brokerName < b.brokerName ? -1 : 1;
  return a.queueId - b.queueId;
}

/** Validates a route body (from JSON) into a typed route or a reason. */
export function parseRoute(raw: unknown): TopicRouteData | { invalid: string } {
  if (typeof raw !== "object" || raw === null) return { invalid: "route is not an object" };
  const r = raw as Record<string, unknown>;
  if (!Array.isArray(r.queueDatas) || !Array.isArray(r.brokerDatas)) return { invalid: "route has no queueDatas/brokerDatas arrays" };
  const route: TopicRouteData = { queueDatas: [], brokerDatas: [], filterServerTable: {} };
  for (const q of r.queueDatas as Record<string, unknown>[]) {
    if (typeof q?.brokerName !== "string") return { invalid: "queueData without brokerName" };
    route.queueDatas.push({
      brokerName: q.brokerName,
      readQueueNums: Number(q.readQueueNums ?? 0),
      writeQueueNums: Number(q.writeQueueNums ?? 0),
      perm: Number(q.perm ?? 0),
      topicSysFlag: Number(q.topicSysFlag ?? 0),
    });
  }
  for (const b of r.brokerDatas as Record<string, unknown>[]) {
    if (typeof b?.brokerName !== "string") return { invalid: "brokerData without brokerName" };
    const addrs: Record<string, string> = {};
    for (const [k, v] of Object.entries((b.brokerAddrs ?? {}) as Record<string, unknown>)) if (typeof v === "string") addrs[k] = v;
    route.brokerDatas.push({ cluster: String(b.cluster ?? ""), brokerName: b.brokerName, brokerAddrs: addrs });
  }
  if (typeof r.orderTopicConf === "string" && r.orderTopicConf !== "") route.orderTopicConf = r.orderTopicConf;
  route.queueDatas.sort((a, b) => (a.brokerName < b.brokerName ? -1 : a.brokerName > b.brokerName ? 1 : 0));
  route.brokerDatas.sort((a, b) => (a.brokerName < b.brokerName ? -1 : a.brokerName > b.brokerName ? 1 : 0));
  return route;
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

/** Queues a consumer may read: readable queues of every broker named in the route. */
export function subscribeQueues(topic: string, route: TopicRouteData): MessageQueue[] {
  const out: MessageQueue[] = [];
  for (const q of route.queueDatas) {
    if (!isReadable(q.perm)) continue;
    for (let i = 0; i < q.readQueueNums; i++) out.push({ topic, brokerName: q.brokerName, queueId: i });
  }
  return out.sort(compareQueues);
}

/**
 * RocketMQ's AllocateMessageQueueAveragely: the sorted queues are cut into contiguous runs, one
 * per sorted member; the first `queues % members` members get one extra.
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
