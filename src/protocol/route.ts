/**
 * Topic routes as the name server serves them (GET_ROUTEINFO_BY_TOPIC's TopicRouteData JSON,
 * docs/PROTOCOL.md §3.1, §5) and the message queue a client addresses. One definition for the name
 * server that builds routes and the clients that read them.
 *
 *   {"orderTopicConf":"broker-a:4", "filterServerTable":{},
 *    "queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],
 *    "brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}}]}
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

export interface TopicRouteData {
  /** Ordered topics: "brokerName:queueNums;…" from the name server's ORDER_TOPIC_CONFIG namespace. */
  orderTopicConf?: string;
  queueDatas: QueueData[];
  brokerDatas: BrokerData[];
  /** brokerAddr → filter server addresses (always empty here; kept for clients that read it). */
  filterServerTable: Record<string, string[]>;
}

/** A queue as clients and the broker's rebalance locks name it (Java `MessageQueue`). */
export interface MessageQueue {
  topic: string;
  brokerName: string;
  queueId: number;
}
