/**
 * What the broker's request processors share: the store, the metadata managers, the client
 * registries, and a few settings. Built once by BrokerController and handed to each processor,
 * so no processor reaches through another object to find its collaborators.
 */
import type { Logger } from "../common/log.ts";
import type { HostAddress, MessageStore } from "../commitlog/index.ts";
import type { ConsumerOffsetManager, DelayOffsetManager, SubscriptionGroupManager, TopicConfigManager } from "./metadata.ts";
import type { TopicConfig } from "../protocol/topics.ts";
import type { ConsumerManager, ProducerManager } from "./client-manager.ts";
import type { PullRequestHoldService } from "./long-polling.ts";
import type { BrokerStats } from "./stats.ts";
import type { BrokerRole } from "../protocol/broker-config.ts";
import type { BrokerRoleView } from "./replica-role.ts";
import type { MessageRequestModeManager } from "./message-request-mode.ts";
import type { MessageRequestMode } from "../protocol/message-request-mode.ts";

export interface BrokerSettings {
  clusterName: string;
  brokerName: string;
  /** ip:port clients use for this broker (also the STOREHOST of every record). */
  brokerAddr: string;
  storeHost: HostAddress;
  autoCreateTopicEnable: boolean;
  autoCreateSubscriptionGroup: boolean;
  defaultTopicQueueNums: number;
  maxMessageSizeBytes: number;
  regionId: string;
  traceOn: boolean;
  /** Upper bound for a long-polling hold, whatever the client asks. */
  pullHoldMaxMs: number;
  slaveReadEnable: boolean;
  /** SQL92 subscriptions are accepted and matched on message properties (RocketMQ's enablePropertyFilter). */
  enablePropertyFilter: boolean;
  /** QUERY_ASSIGNMENT: the consume mode of a (topic, group) with no SET_MESSAGE_REQUEST_MODE entry. */
  defaultMessageRequestMode: MessageRequestMode;
  /** QUERY_ASSIGNMENT: popShareQueueNum of such a (topic, group) when the default mode is POP. */
  defaultPopShareQueueNum: number;
  /** QUERY_ASSIGNMENT allocates a clustering group's queues among its members; off, every member gets every queue. */
  serverLoadBalancerEnable: boolean;
  /** The farthest a delivery time may lie ahead (broker.timerMaxDelaySec), in ms: also a pop's largest invisible time. */
  timerMaxDelayMs: number;
}

/** The settings with the role in force (BrokerInfo.settings(): the admin API's GET /broker, the dashboard). */
export type BrokerSettingsInfo = BrokerSettings & { brokerId: number; brokerRole: BrokerRole };

/**
 * What kind of refusal an admin operation answered, for callers that are not the wire (the HTTP
 * admin API maps it to a status): bad input, an unknown topic/group/message, a state that forbids
 * it (a slave takes no writes, a system topic), or a store that takes no writes now.
 */
export type RefusalKind = "invalid" | "not_found" | "conflict" | "unavailable";

/** An operation shared by a processor and the admin API, refused: the wire answer and its kind. */
export interface OpRefusal {
  refused: RefusalKind;
  /** The wire response code the processor answers with. */
  code: number;
  remark: string;
}

export interface BrokerContext {
  settings: BrokerSettings;
  /** The role in force and the brokerId registered under (./replica-role.ts owns them). */
  role: BrokerRoleView;
  store: MessageStore;
  topics: TopicConfigManager;
  consumerOffsets: ConsumerOffsetManager;
  delayOffsets: DelayOffsetManager;
  groups: SubscriptionGroupManager;
  /** config/messageRequestMode.json: PULL or POP per (topic, group). */
  requestModes: MessageRequestModeManager;
  consumers: ConsumerManager;
  producers: ProducerManager;
  hold: PullRequestHoldService;
  /** Put/get counters behind GET_BROKER_RUNTIME_INFO (putTps, msgPutTotalTodayNow, …). */
  stats: BrokerStats;
  log: Logger;
  now: () => number;
  /** Topic configs changed: persist is done by the manager; this re-registers with name servers. */
  topicsChanged: () => void;
  /** Creates (or returns) a topic the broker needs internally (retry, DLQ, …). */
  createTopicIfAbsent: (topic: string, queueNums: number, perm: number) => TopicConfig;
  /**
   * Settles once the name servers route `topic` (and `other`) if just created (bounded); null when
   * neither waits for its registration. A request that made a topic for a client awaits it before
   * answering (./namesrv-registration.ts PendingRoutes).
   */
  untilRoutable: (topic: string, other?: string) => Promise<void> | null;
}
