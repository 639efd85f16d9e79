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
