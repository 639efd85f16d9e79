export {
  BrokerController,
  type BrokerOptions,
  type BrokerInfo,
  type BrokerRuntimeOptions,
  type BrokerConfigAccess,
} from "./broker.ts";
export type { BrokerRoleView, ReplicationInfo } from "./replica-role.ts";
export type { BrokerSettings, BrokerSettingsInfo } from "./context.ts";
export type { TransactionStats } from "./transaction/transactional-message-service.ts";
export type {
  BrokerMetricsState,
  GroupTopicMetrics,
  TopicMetrics,
  ItemTotals,
  ClientCount,
  ConsumerGroupMetrics,
  TopicKind,
} from "./metrics-state.ts";
export type { BrokerStatsSnapshot } from "./stats.ts";
export type { PopConsumption, PopCheckpointView } from "./pop/pop-view.ts";
export type { ClientsView, ClientConnectionView, ConsumerGroupView, TrafficCounters } from "./dashboard-info.ts";
export { AUTO_CREATE_TOPIC, DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, isNotAllowedSendTopic } from "../protocol/topics.ts";
export type { TopicConfig } from "../protocol/topics.ts";
export {
  QUEUE_READ_MAX_NUM,
  type AdminResetOffset,
  type AdminSend,
  type AdminSendResult,
  type BrokerAdmin,
  type OpRefusal,
  type RefusalKind,
  type StoredMessage,
  type TopicInput,
} from "./admin-api.ts";
export { GROUP_NAME_MAX_CHARS, GROUP_NAME_PATTERN, type SubscriptionGroupConfig } from "./metadata.ts";
export { TOPIC_NAME_MAX_CHARS, TOPIC_NAME_PATTERN } from "../protocol/topics.ts";
export { MessageConst } from "../protocol/message-const.ts";
export type { BrokerMessaging, MessagingSend, MessagingStored, MessagingRefusal } from "./messaging-api.ts";
export type { PutMessageStatus } from "../commitlog/index.ts";
