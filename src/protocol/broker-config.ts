/**
 * RocketMQ's enum-valued broker and store settings, as the config file, GET_BROKER_CONFIG,
 * the runtime info and the store use them (docs/STORAGE.md §10.1, §10.3).
 */

/** A master acknowledges a send without (ASYNC_MASTER) or after (SYNC_MASTER) a slave has it. */
export type BrokerRole = "ASYNC_MASTER" | "SYNC_MASTER" | "SLAVE";
export const BROKER_ROLES: readonly BrokerRole[] = ["ASYNC_MASTER", "SYNC_MASTER", "SLAVE"];

/** A send is acknowledged before (ASYNC_FLUSH) or after (SYNC_FLUSH) its bytes are fdatasync'ed. */
export type FlushDiskType = "ASYNC_FLUSH" | "SYNC_FLUSH";
export const FLUSH_DISK_TYPES: readonly FlushDiskType[] = ["ASYNC_FLUSH", "SYNC_FLUSH"];
