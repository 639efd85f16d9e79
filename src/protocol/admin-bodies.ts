/**
 * The per-item shapes inside the broker's admin answers, defined once for the broker that writes
 * them (broker/admin-bodies.ts, processors/admin.ts) and `rocketbun admin` that reads them
 * (admin-cli/bodies.ts), from RocketBun or from Apache RocketMQ (docs/PROTOCOL.md §3.15, §2.1).
 * Members are listed in fastjson's order (alphabetical), the order the broker writes them; `{mq}`
 * is a MessageQueue object used as a map key (docs/PROTOCOL.md §3.17).
 *
 *   GET_TOPIC_STATS_INFO (202)           {"offsetTable":{{mq}:TopicOffset}}
 *     TopicOffset                        {"lastUpdateTimestamp":ms,"maxOffset":n,"minOffset":n}
 *   GET_CONSUME_STATS (208)              {"consumeTps":x,"offsetTable":{{mq}:OffsetWrapper}}
 *     OffsetWrapper                      {"brokerOffset":n,"consumerOffset":n,"lastTimestamp":ms,"pullOffset":n}
 *   GET_CONSUMER_CONNECTION_LIST (203),
 *   GET_PRODUCER_CONNECTION_LIST (204)   {"connectionSet":[ClientConnection,…],…}
 *     ClientConnection                   {"clientAddr":"ip:port","clientId":s,"language":s,"version":n}
 *   VIEW_BROKER_STATS_DATA (315)         BrokerStatsData {"statsDay","statsHour","statsMinute"}
 *     BrokerStatsItem                    {"avgpt":x,"sum":n,"tps":x}
 *
 * Offsets are ConsumeQueue offsets (units, not bytes); timestamps are message store times in
 * epoch ms.
 */

/** One queue of GET_TOPIC_STATS_INFO's TopicStatsTable (Java `TopicOffset`). */
export interface TopicOffset {
  lastUpdateTimestamp: number;
  maxOffset: number;
  minOffset: number;
}

/** One queue of GET_CONSUME_STATS's ConsumeStats (Java `OffsetWrapper`). */
export interface OffsetWrapper {
  brokerOffset: number;
  consumerOffset: number;
  lastTimestamp: number;
  /**
   * RocketMQ 5.x: mqadmin 5.3.3 consumerProgress prints pullOffset − consumerOffset as #Inflight.
   * RocketBun: consumerOffset plus the queue's POP messages in flight (docs/PROTOCOL.md §3.15).
   * Absent from a 4.x broker.
   */
  pullOffset?: number;
}

/** A client connection in a `connectionSet` (Java `Connection`). */
export interface ClientConnection {
  clientAddr: string;
  clientId: string;
  language: string;
  version: number;
}

/** One window of a stats item: the sum counted, per second, and per call (Java `BrokerStatsItem`). */
export interface BrokerStatsItem {
  avgpt: number;
  sum: number;
  tps: number;
}

/** The last minute, hour and day of one stats item (Java `BrokerStatsData`). */
export interface BrokerStatsData {
  statsDay: BrokerStatsItem;
  statsHour: BrokerStatsItem;
  statsMinute: BrokerStatsItem;
}
