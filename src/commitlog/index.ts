/**
 * The message store's public surface. The broker uses only what is exported here; the store
 * never imports remoting/ (it knows bytes and offsets, not requests).
 */
export { CommitLog, CommitLogError, type AppendResult, type CommitLogOptions, type StoreRecordInput } from "./commit-log.ts";
export { ConsumeQueue, CQ_FILLER_SIZE, CQ_UNITS_PER_FILE_DEFAULT, type CqUnit } from "./consume-queue.ts";
export { CQ_UNIT_SIZE } from "../protocol/store-layout.ts";
export * from "../common/message-record.ts";
export { decodeMessageBatch, encodeMessageBatch, type BatchEntry } from "../common/message-batch.ts";
export { IndexService, type IndexServiceOptions, type IndexDispatch, type QueryOffsetResult } from "./index-service.ts";
export {
  MessageStore,
  setIndexedFields,
  type MessageStoreOptions,
  type PutMessageRequest,
  type PutMessageResult,
  type PutMessageStatus,
  type GetMessageResult,
  type GetMessageStatus,
  type TagCodeFilter,
  type RecoveryReport,
  type StoreReplication,
  type StoreRuntimeOptions,
} from "./message-store.ts";
export type { CorruptRange } from "./recovery.ts";
export { resyncPointAt } from "./recovery.ts";
