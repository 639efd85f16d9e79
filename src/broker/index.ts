export { BrokerController, type BrokerOptions, type BrokerInfo, type BrokerRuntimeOptions, type BrokerConfigAccess } from "./broker.ts";
export type { BrokerSettings } from "./context.ts";
export type { TransactionStats } from "./transaction/transactional-message-service.ts";
