/**
 * Topic routes as the name server serves them (GET_ROUTEINFO_BY_TOPIC's TopicRouteData JSON), its
 * cluster view (GET_BROKER_CLUSTER_INFO's ClusterInfo), the KV namespace ordered topics' queues come
 * from and the message queue a client addresses (docs/PROTOCOL.md §3.1, §3.16, §5, §5.4). One
 * definition for the name server that builds them and the clients and `rocketbun admin` that read
 * them.
 *
 *   {"orderTopicConf":"broker-a:4", "filterServerTable":{},
 *    "queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],
 *    "brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}}]}
 *
 *   ClusterInfo: {"brokerAddrTable":{"broker-a":BrokerData},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}
 */

/** brokerId 0 is a broker name's master; slaves have ids ≥ 1. */
export const MASTER_ID = 0;

export interface QueueData {
  brokerName: string;
  readQueueNums: number;
  writeQueueNums: number;
  perm: number;
  topicSysFlag: number;
}

export interface BrokerData {
  cluster: string;
  brokerName: string;
  /** brokerId (decimal string, JSON object key) → ip:port. */
  brokerAddrs: Record<string, string>;
}

/**
 * The name server's KV namespace of ordered topics (Java `NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG`):
 * topic → "brokerName:queueNums;…", copied into routes as `orderTopicConf`.
 */
export const NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG";

export interface TopicRouteData {
  /** Ordered topics: "brokerName:queueNums;…" from the name server's ORDER_TOPIC_CONFIG namespace. */
  orderTopicConf?: string;
  queueDatas: QueueData[];
  brokerDatas: BrokerData[];
  /** brokerAddr → filter server addresses (always empty here; kept for clients that read it). */
  filterServerTable: Record<string, string[]>;
}

/** GET_BROKER_CLUSTER_INFO's body (Java `ClusterInfo`). */
export interface ClusterInfo {
  /** brokerName → its BrokerData. */
  brokerAddrTable: Record<string, BrokerData>;
  /** cluster → its broker names. */
  clusterAddrTable: Record<string, string[]>;
}

/** A queue as clients and the broker's rebalance locks name it (Java `MessageQueue`). */
export interface MessageQueue {
  topic: string;
  brokerName: string;
  queueId: number;
}

/**
 * Validates a GET_ROUTEINFO_BY_TOPIC body (from JSON) into a typed route or a reason: for the
 * clients, `rocketbun admin` and a broker that asks for routes (QUERY_ASSIGNMENT). Fields a
 * newer name server adds are ignored.
 */
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
