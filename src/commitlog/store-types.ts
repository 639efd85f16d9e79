/**
 * The message store's shapes: its options, the put and get requests and results, the recovery
 * report. Callers import them through ./index.ts; the store's parts (./message-store.ts and the
 * files it composes) share them from here.
 */
import type { Clock } from "../common/clock.ts";
import type { Logger } from "../common/log.ts";
import { type HostAddress } from "../common/message-record.ts";
import { MessageConst } from "../protocol/message-const.ts";
import type { FlushDiskType } from "../protocol/broker-config.ts";
import type { AppendResult } from "./commit-log.ts";
import type { StoreDisk } from "./disk.ts";
import type { CorruptRange } from "./recovery.ts";

export interface MessageStoreOptions {
  dir: string;
  segmentBytes: number;
  flushDiskType: FlushDiskType;
  flushIntervalMs: number;
  syncFlushTimeoutMs: number;
  consumeQueueUnitsPerFile: number;
  indexSlotNum: number;
  indexNum: number;
  maxMessageSizeBytes: number;
  checkCrcOnRecover: boolean;
  fileReservedTimeHours: number;
  /** Hours of the day ("04" or "04;16") when expired files are deleted. */
  deleteWhen: string;
  diskMaxUsedSpaceRatio: number;
  diskCriticalRatio: number;
  deleteCommitLogFilesIntervalMs: number;
  maxTransferBytesOnMessageInMemory: number;
  maxTransferCountOnMessageInMemory: number;
  maxTransferBytesOnMessageInDisk: number;
  maxTransferCountOnMessageInDisk: number;
  accessMessageInMemoryMaxRatio: number;
  /** When > 0, replaces accessMessageInMemoryMaxRatio × physical RAM as the "in memory" distance (bytes). */
  accessMessageInMemoryMaxBytes?: number;
  /** The broker's advertised address, written into every record as STOREHOST. */
  storeHost: HostAddress;
  /** A slave's store refuses puts (it only takes replicated bytes). */
  readOnly?: boolean;
  now?: () => number;
  /** Timers and (unless `now` is given) the time; default the system clock (test/sim passes a simulated one). */
  clock?: Clock;
  /** Where the store's files live; default the real disk (test/sim passes an in-memory one). */
  disk?: StoreDisk;
  /** Tag code override, e.g. the due time for SCHEDULE_TOPIC_XXXX units. */
  tagsCodeFor?: (topic: string, properties: Record<string, string> | null, storeTimestamp: number, tags: string | undefined) => number;
  /** Interval of the ConsumeQueue/index flush + checkpoint; default 1000 ms (RocketMQ's flushIntervalConsumeQueue). */
  checkpointIntervalMs?: number;
  /** A ConsumeQueue file with fewer dirty 4 KiB pages is not flushed on a normal tick (default 2). */
  flushConsumeQueueLeastPages?: number;
  /** At least this often the tick flushes every ConsumeQueue regardless of pages (default 60 s). */
  flushConsumeQueueThoroughIntervalMs?: number;
  /** ASYNC_FLUSH CommitLog: see CommitLogOptions.flushLeastPages (default 4). */
  flushCommitLogLeastPages?: number;
  /** ASYNC_FLUSH CommitLog: see CommitLogOptions.flushThoroughIntervalMs (default 10 s). */
  flushCommitLogThoroughIntervalMs?: number;
  /** How often idle mappings are looked for (default 5000 ms); a file untouched for a whole interval is unmapped. */
  releaseColdIntervalMs?: number;
  /** Where the store logs a halt and replaced units; default scope("store"). */
  log?: Logger;
  /**
   * store.diskReserveBytes: a file of this size (RESERVE_FILE) kept in the store directory while
   * the disk has room for it, and deleted when the store opens on a disk with less than that
   * free, so recovery can write its ConsumeQueue and index units (CockroachDB's "emergency
   * ballast"). Default 0: none.
   */
  diskReserveBytes?: number;
  /**
   * Told of every message that reached a ConsumeQueue, whoever wrote it (a put of any kind, or
   * replicated bytes on a slave): the one place that wakes the pulls parked for it. Not told of
   * what recovery dispatches (nothing is parked before the store serves).
   */
  messageArriving?: MessageArrivingListener;
  /**
   * The broker's replication (../broker/replica-role.ts), asked with every put: told of each
   * append, asked how long a put waits for replicas and whether a write is fenced. One object for
   * the store's life; its answers follow the broker's role. Absent: no replication.
   */
  replication?: StoreReplication;
}

/** RocketMQ's MessageArrivingListener: a message can be pulled from `topic`/`queueId` at `queueOffset`. */
export interface MessageArrivingListener {
  arriving(topic: string, queueId: number, queueOffset: number, tagsCode: number): void;
}

export type PutMessageStatus =
  | "PUT_OK"
  | "FLUSH_DISK_TIMEOUT"
  | "FLUSH_SLAVE_TIMEOUT"
  | "SLAVE_NOT_AVAILABLE"
  | "MESSAGE_ILLEGAL"
  | "PROPERTIES_SIZE_EXCEEDED"
  | "SERVICE_NOT_AVAILABLE"
  | "UNKNOWN_ERROR";

/** What the store asks of replication with every put (MessageStoreOptions.replication). */
export interface StoreReplication {
  /** After every successful append (a master's HA service streams the new bytes to slaves). */
  appended(): void;
  /** SYNC_MASTER: settles once replicas hold everything below `end`; undefined when a put waits for none. */
  waitReplicas(end: number): Promise<"OK" | "TIMEOUT" | "NO_SLAVE"> | undefined;
  /** Automatic failover: why this store must not take a write now (a master whose lease is not renewed), or null. */
  fence(): string | null;
}

export interface PutMessageRequest {
  topic: string;
  queueId: number;
  flag: number;
  body: Uint8Array;
  /** The final property string, as stored. */
  properties: string;
  sysFlag: number;
  bornTimestamp: number;
  bornHost: HostAddress;
  reconsumeTimes: number;
  preparedTransactionOffset: number;
  /** Known to the caller already (saves re-parsing the property string); else parsed. */
  tags?: string;
  keys?: string;
  uniqKey?: string;
  /** True when tags/keys/uniqKey above were taken from the properties: undefined means absent. */
  propertiesParsed?: boolean;
  /** False when the producer set WAIT=false: do not wait for the flush. */
  waitStoreMsgOK?: boolean;
}

/** Sets a request's tags, keys and uniqKey (what the store indexes) from its parsed properties. */
export function setIndexedFields(req: PutMessageRequest, props: Record<string, string>): void {
  const tags = props[MessageConst.TAGS];
  if (tags !== undefined) req.tags = tags;
  const keys = props[MessageConst.KEYS];
  if (keys !== undefined) req.keys = keys;
  const uniq = props[MessageConst.UNIQ_KEY];
  if (uniq !== undefined) req.uniqKey = uniq;
}

export interface PutMessageResult {
  status: PutMessageStatus;
  remark?: string;
  /** One per message (several for a batch); empty unless stored. */
  appended: AppendResult[];
}

export type GetMessageStatus =
  | "FOUND"
  | "NO_MATCHED_MESSAGE"
  | "MESSAGE_WAS_REMOVING"
  | "OFFSET_FOUND_NULL"
  | "OFFSET_OVERFLOW_BADLY"
  | "OFFSET_OVERFLOW_ONE"
  | "OFFSET_TOO_SMALL"
  | "NO_MATCHED_LOGIC_QUEUE"
  | "NO_MESSAGE_IN_QUEUE";

export interface GetMessageResult {
  status: GetMessageStatus;
  nextBeginOffset: number;
  minOffset: number;
  maxOffset: number;
  /** Stored records, byte for byte, as views into the mapped CommitLog (no copies). */
  messages: Uint8Array[];
  bufferTotalBytes: number;
  /** The data read is "cold" (far behind the log's tail): a slave could serve it. */
  suggestPullingFromSlave: boolean;
}

/** Matches a ConsumeQueue tag code; undefined = everything. */
export type TagCodeFilter = ((tagsCode: number) => boolean) | undefined;

export interface RecoveryReport {
  abnormal: boolean;
  checkpoint: "valid" | "missing" | string;
  scannedFrom: number;
  endOffset: number;
  recordsScanned: number;
  truncatedBytes: number;
  corruptRanges: CorruptRange[];
  /**
   * After a crash: where the last record wholly below the checkpoint's flushed offset ends
   * (undefined after a clean stop, or when every record was flushed). What lies from here on may
   * have lived only in the page cache and been torn where no CRC looks (topic, properties), so a
   * replica cuts it and fetches it from its master again (../broker/replica-epochs.ts).
   */
  unsyncedFrom?: number;
  problems: string[];
}


export const FLUSH_CONSUME_QUEUE_LEAST_PAGES_DEFAULT = 2;
export const FLUSH_CONSUME_QUEUE_THOROUGH_INTERVAL_MS_DEFAULT = 60_000;

/** The options MessageStore.reconfigure can change while the store runs. */
export type StoreRuntimeOptions = Partial<
  Pick<
    MessageStoreOptions,
    | "flushIntervalMs"
    | "flushCommitLogLeastPages"
    | "flushCommitLogThoroughIntervalMs"
    | "flushConsumeQueueLeastPages"
    | "flushConsumeQueueThoroughIntervalMs"
    | "syncFlushTimeoutMs"
    | "fileReservedTimeHours"
    | "deleteWhen"
    | "deleteCommitLogFilesIntervalMs"
    | "diskMaxUsedSpaceRatio"
    | "diskCriticalRatio"
    | "maxTransferBytesOnMessageInMemory"
    | "maxTransferCountOnMessageInMemory"
    | "maxTransferBytesOnMessageInDisk"
    | "maxTransferCountOnMessageInDisk"
    | "accessMessageInMemoryMaxRatio"
    | "accessMessageInMemoryMaxBytes"
    | "maxMessageSizeBytes"
  >
>;
