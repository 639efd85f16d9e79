export {
  BrokerController,
  type BrokerOptions,
  type BrokerInfo,
  type BrokerRuntimeOptions,
  type BrokerConfigAccess,
  type ReplicationInfo,
} from "./broker.ts";
export type { BrokerSettings } from "./context.ts";
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
