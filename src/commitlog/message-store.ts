/**
 * MessageStore: the storage engine behind one broker — the CommitLog, a ConsumeQueue per
 * topic/queue, the IndexFile set, the checkpoint, recovery, flushing and retention — behind the
 * small facade the broker uses (RocketMQ's DefaultMessageStore, without the 100 methods).
 *
 * Directory layout (under `dir`, RocketMQ's):
 *   commitlog/<20-digit offset>                 CommitLog segments
 *   consumequeue/<topic>/<queueId>/<20-digit>   ConsumeQueue files
 *   index/<yyyyMMddHHmmssSSS>                   IndexFiles
 *   checkpoint                                   ./checkpoint.ts (atomic, with CRC)
 *   abort                                        present while running: its presence at start = crash
 *   lock                                         pid of the process using this store
 *
 * Dispatch: a put appends to the CommitLog and, in the same tick, writes the ConsumeQueue unit and
 * index entries (so a message is pullable as soon as the send returns). Recovery and (later) HA
 * replication dispatch by scanning CommitLog bytes from `dispatchedOffset` with the same code.
 */
import { totalmem } from "node:os";
import { join } from "node:path";
import { AssertionError, assert } from "../common/assert.ts";
import { systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import { scope, type Logger } from "../common/log.ts";
import { readCheckpoint, writeCheckpoint, writeCheckpointAsync, type Checkpoint } from "./checkpoint.ts";
import { CommitLog, type AppendResult, type StoreRecordInput } from "./commit-log.ts";
import { type FlushDiskType } from "../protocol/broker-config.ts";
import { ConsumeQueue, CQ_FILLER_SIZE, type PutUnitSource } from "./consume-queue.ts";
import { CQ_UNIT_SIZE } from "../protocol/store-layout.ts";
import { SegmentSizeError } from "./mapped-file.ts";
import { nodeDisk, type SegmentFile, type StoreDisk } from "./disk.ts";
import { IndexCatchUp } from "./index-catch-up.ts";
import { IndexService } from "./index-service.ts";
import type { MappedFile } from "./mapped-file.ts";
import {
  decodeRecordAt,
  isRecordOfUnit,
  MessageConst,
  OFFSET_STORE_TIMESTAMP,
  parseProperties,
  PROPERTIES_SIZE_MAX_BYTES,
  readTotalSize,
  recordSize,
  SysFlag,
  tagsHashCode,
  TOPIC_SIZE_MAX_BYTES,
  transactionType,
  type DecodedRecord,
  type HostAddress,
} from "../common/message-record.ts";
import { scanCommitLog, type CorruptRange } from "./recovery.ts";

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

const enc = new TextEncoder();
const HOUR_MS = 3_600_000;
/** Appended bytes between two looks at the disk (statfs), and the slack kept free beyond them. */
const DISK_RECHECK_BYTES = 4 * 1024 * 1024;
const DISK_FLOOR_SLACK_BYTES = 8 * 1024 * 1024;
/** A put refused for want of disk looks again at most this often. */
const DISK_RECHECK_MS = 1000;

const mib = (bytes: number): string => (bytes / 1048576).toFixed(1);
/** The disk reserve in the store directory (MessageStoreOptions.diskReserveBytes). */
export const RESERVE_FILE = "disk-reserve";
const RESERVE_DELAY_MS = 2000;
/**
 * Records the index's catch-up reads per turn of the event loop: ~3 µs each (decode, properties,
 * two keys), so a slice keeps requests waiting a few ms at most.
 */
const INDEX_CATCH_UP_SLICE_RECORDS = 2000;

/** An ENOSPC (or EDQUOT) from node:fs. */
function isNoSpace(e: Error): boolean {
  const code = (e as Error & { code?: unknown }).code;
  return code === "ENOSPC" || code === "EDQUOT" || /ENOSPC|no space left/i.test(e.message);
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

/**
 * Which requests get a queue offset: all (true, the common case, no allocation) unless a half
 * message is among them, which gets no ConsumeQueue unit until it is committed.
 */
function queueAssignment(reqs: readonly PutMessageRequest[]): boolean[] | boolean {
  for (const r of reqs) if (!takesUnit(r)) return reqs.map(takesUnit);
  return true;
}

function takesUnit(r: PutMessageRequest): boolean {
  const t = transactionType(r.sysFlag);
  return t === SysFlag.TRANSACTION_NOT_TYPE || t === SysFlag.TRANSACTION_COMMIT_TYPE;
}

/** How far behind the CommitLog tail data still counts as in memory (bytes). */
function memoryHotBytes(o: Pick<MessageStoreOptions, "accessMessageInMemoryMaxBytes" | "accessMessageInMemoryMaxRatio">): number {
  const hotBytes = o.accessMessageInMemoryMaxBytes ?? 0;
  return hotBytes > 0 ? hotBytes : (totalmem() * o.accessMessageInMemoryMaxRatio) / 100;
}

export class MessageStore {
  readonly #o: MessageStoreOptions;
  /** Inside appendReplicated: what is dispatched is announced to the arrival listener. */
  #replicating = false;
  readonly #now: () => number;
  readonly #clock: Clock;
  readonly #disk: StoreDisk;
  readonly commitLog: CommitLog;
  readonly #index: IndexService;
  readonly #queues = new Map<string, Map<number, ConsumeQueue>>();
  readonly #topicCache = new Map<string, Uint8Array>();
  #reputOffset = 0;
  #timers: TimerHandle[] = [];
  /** The retention check's timer (also in #timers), restarted when its interval changes. */
  #cleanTimer: TimerHandle | null = null;
  /**
   * Disk admission (see #checkDisk): why writes are refused for want of disk, or null; the last
   * statfs (when, and the free bytes then) and the bytes appended since, so a put can tell the
   * floor is near without a syscall.
   */
  #diskFull: string | null = null;
  #diskCheckedAt = 0;
  #diskFreeBytes = Number.POSITIVE_INFINITY;
  #appendedSinceDiskCheck = 0;
  /** RESERVE_FILE is known to exist (checked on disk once, then kept here). */
  #reservePresent = false;
  #reserveTimer: TimerHandle | undefined;
  /** CommitLog ranges found damaged by recovery: never served, kept across restarts. */
  #corrupt: CorruptRange[] = [];
  /** ConsumeQueue units skipped by getMessage because the bytes they point at are not their record. */
  #unitsNotMatchingRecord = 0;
  #shutdown = false;
  #checkpointing: Promise<void> | null = null;
  /** ConsumeQueues with units not yet flushed: the checkpoint tick looks only at these. */
  readonly #unflushedQueues = new Set<ConsumeQueue>();
  #lastThoroughFlushAt = 0;
  /** The last checkpoint written; an unchanged one is not written again. */
  #lastCheckpoint: Checkpoint | null = null;
  /**
   * Set once the write path failed in a way a retry cannot fix: a broken invariant (an
   * AssertionError: a bug) or a dispatch that threw (records in the CommitLog without their
   * units). Every later put is refused with SERVICE_NOT_AVAILABLE, replicated bytes too, while
   * reads go on; the stop leaves the abort marker, so the next start recovers the units from the
   * CommitLog. Logged once, at error level.
   */
  #halted: Error | null = null;
  /** Units a dispatch from CommitLog bytes found holding another record's place (see ConsumeQueue.putUnit). */
  #unitsReplaced = 0;
  /**
   * After a crash that cost the index its unfinished file: the walk that indexes the CommitLog
   * again while the store serves (./index-catch-up.ts); null when every dispatch is indexed.
   */
  #indexCatchUp: IndexCatchUp | null = null;
  #indexCatchUpTimer: TimerHandle | undefined;
  #indexCaughtUp: (() => void)[] = [];
  /** While #recover runs: where replaced units are reported (the recovery report), else the log. */
  #recoveryProblems: string[] | null = null;
  /** While #recover runs: records found superseded (see #resolveSecondRecord), merged into #corrupt at its end. */
  #recoverySuperseded: CorruptRange[] = [];
  readonly #log: Logger;
  #memoryHotBytes: number;
  recovery: RecoveryReport | null = null;

  private constructor(o: MessageStoreOptions) {
    // A copy: reconfigure() changes it, and the caller's object is not ours to change.
    this.#o = { ...o };
    const clock = o.clock ?? systemClock;
    this.#clock = clock;
    this.#disk = o.disk ?? nodeDisk;
    this.#now = o.now ?? (clock === systemClock ? Date.now : () => clock.now());
    this.commitLog = new CommitLog({
      dir: join(o.dir, "commitlog"),
      segmentBytes: o.segmentBytes,
      flushDiskType: o.flushDiskType,
      flushIntervalMs: o.flushIntervalMs,
      ...(o.flushCommitLogLeastPages !== undefined ? { flushLeastPages: o.flushCommitLogLeastPages } : {}),
      ...(o.flushCommitLogThoroughIntervalMs !== undefined ? { flushThoroughIntervalMs: o.flushCommitLogThoroughIntervalMs } : {}),
      now: this.#now,
      clock,
      disk: this.#disk,
    });
    this.#index = new IndexService({ dir: join(o.dir, "index"), slotNum: o.indexSlotNum, indexNum: o.indexNum, now: this.#now, disk: this.#disk });
    this.#memoryHotBytes = memoryHotBytes(o);
    this.#log = o.log ?? scope("store");
  }

  /**
   * Runtime change of the options that are read as the store runs (config reload): flushing,
   * retention, disk ratios, pull batch limits, the in-memory distance and the message size.
   * Timers whose interval changed are restarted; the disk is checked again at once, so a new
   * diskCriticalRatio decides the next put.
   */
  reconfigure(patch: StoreRuntimeOptions): void {
    const o = this.#o;
    const deleteIntervalChanged =
      patch.deleteCommitLogFilesIntervalMs !== undefined && patch.deleteCommitLogFilesIntervalMs !== o.deleteCommitLogFilesIntervalMs;
    Object.assign(o, patch);
    this.commitLog.reconfigure({
      flushIntervalMs: o.flushIntervalMs,
      ...(o.flushCommitLogLeastPages !== undefined ? { flushLeastPages: o.flushCommitLogLeastPages } : {}),
      ...(o.flushCommitLogThoroughIntervalMs !== undefined ? { flushThoroughIntervalMs: o.flushCommitLogThoroughIntervalMs } : {}),
    });
    this.#memoryHotBytes = memoryHotBytes(o);
    if (deleteIntervalChanged && this.#cleanTimer && !this.#shutdown) {
      this.#clock.clearInterval(this.#cleanTimer);
      this.#cleanTimer = this.#clock.setInterval(() => this.cleanExpiredFiles(false), o.deleteCommitLogFilesIntervalMs);
      this.#timers.push(this.#cleanTimer);
    }
    if (!this.#shutdown) this.#checkDisk();
  }

  /**
   * Opens (creating if needed) the store at `o.dir`, recovers it, and starts its background
   * services. Throws if another live process holds the store's lock.
   */
  static open(o: MessageStoreOptions): MessageStore {
    const disk = o.disk ?? nodeDisk;
    disk.mkdirs(o.dir);
    acquireLock(disk, join(o.dir, "lock"));
    releaseReserveIfFull(disk, o);
    const s = new MessageStore(o);
    try {
      s.#recover();
      disk.writeFile(join(o.dir, "abort"), String(process.pid));
      s.#startServices();
    } catch (e) {
      s.#closeFiles();
      releaseLock(disk, join(o.dir, "lock"));
      throw e;
    }
    return s;
  }

  // ---------------------------------------------------------------- recovery

  #recover(): void {
    const dir = this.#o.dir;
    const abnormal = this.#disk.exists(join(dir, "abort"));
    const problems: string[] = [...this.#loadSized("store.commitLogSegmentBytes", 1, () => this.commitLog.load())];
    this.#recoveryProblems = problems;
    const cp = readCheckpoint(join(dir, "checkpoint"), this.#disk);
    const cpValid = cp !== null && !("invalid" in cp);
    problems.push(...this.#index.load(cpValid && abnormal ? cp.indexCheckpointTimestamp : undefined));
    problems.push(...this.#loadSized("store.consumeQueueUnitsPerFile", CQ_UNIT_SIZE, () => this.#loadConsumeQueues()));

    const segments = this.commitLog.segments;
    const firstOffset = segments[0]?.fileFromOffset ?? 0;
    // Where dispatch must resume: the checkpoint says what is durable in the ConsumeQueues.
    let dispatchFrom = cpValid ? Math.max(cp.dispatchedOffset, firstOffset) : firstOffset;
    const lastEnd = segments.length ? segments.at(-1)!.fileFromOffset + segments.at(-1)!.fileSize : 0;
    if (dispatchFrom > lastEnd) dispatchFrom = firstOffset;
    // Index files dropped at load (unfinished at the crash) are rebuilt from where they began,
    // after the store opens (#indexCatchUp): dispatches until then skip the index.
    const indexRedo = this.#index.rebuildFromOffset;
    if (indexRedo !== undefined) this.#indexCatchUp = this.#newIndexCatchUp(Math.max(firstOffset, Math.min(dispatchFrom, indexRedo)));
    // A crash can leave damage anywhere in the segment being written: verify it from its start.
    const seg = segments.find((f) => dispatchFrom >= f.fileFromOffset && dispatchFrom < f.fileFromOffset + f.fileSize);
    const scanFrom = abnormal && seg ? seg.fileFromOffset : dispatchFrom;
    const checkCrc = abnormal ? this.#o.checkCrcOnRecover : false;
    // After a clean stop nothing lies past the end; after a crash, good records can only lie
    // below what the checkpoint saw flushed (plus a margin for writes flushed after it).
    const RESYNC_MARGIN_BYTES = 16 * 1024 * 1024;
    const resyncLimit = !abnormal ? 0 : cpValid ? cp.commitLogFlushedOffset + RESYNC_MARGIN_BYTES : Number.MAX_SAFE_INTEGER;
    // After a crash, units of records at or past what the checkpoint claimed durable may be lost
    // or torn (they are flushed lazily): the CommitLog rewrites them instead of trusting them.
    const rewriteFrom = !abnormal ? Number.MAX_SAFE_INTEGER : cpValid ? cp.dispatchedOffset : firstOffset;
    // After a crash, what lies past the checkpoint's flushed offset may exist only in the page cache.
    const unsyncedAt = !abnormal ? Number.MAX_SAFE_INTEGER : cpValid ? cp.commitLogFlushedOffset : firstOffset;
    // Where the last record wholly below the flushed offset ends: what follows may be torn, BLANK
    // padding included (recovery reads a BLANK marker's size and magic, never the zeros after it:
    // a power cut left garbage there in failover sim seed 2519189422, and the replica's bytes then
    // differed from its master's).
    let syncedEnd = scanFrom;
    const scan = scanCommitLog(
      segments,
      scanFrom,
      checkCrc,
      (rec, offset) => {
        if (offset + rec.totalSize <= unsyncedAt && offset + rec.totalSize > syncedEnd) syncedEnd = offset + rec.totalSize;
        if (offset >= dispatchFrom) this.#dispatchRecord(rec, offset, offset >= rewriteFrom);
      },
      resyncLimit,
    );
    for (const r of scan.corruptRanges) problems.push(`commitlog: damaged bytes [${r.from}, ${r.to}) skipped: ${r.reason}`);
    this.#loadCorruptRanges([...scan.corruptRanges, ...this.#recoverySuperseded], scan.endOffset);
    this.#recoverySuperseded = [];
    if (scan.truncatedBytes > 0) problems.push(`commitlog: torn tail of ${scan.truncatedBytes} bytes at ${scan.endOffset} truncated`);

    // Apply: cut the log at its real end, drop index units that point past it.
    this.#cutAt(scan.endOffset, abnormal, unsyncedAt);
    this.#recoveryProblems = null;
    this.recovery = {
      abnormal,
      checkpoint: cp === null ? "missing" : "invalid" in cp ? cp.invalid : "valid",
      scannedFrom: scanFrom,
      endOffset: scan.endOffset,
      recordsScanned: scan.records,
      truncatedBytes: scan.truncatedBytes,
      corruptRanges: scan.corruptRanges,
      ...(abnormal && syncedEnd < scan.endOffset ? { unsyncedFrom: syncedEnd } : {}),
      problems,
    };
  }

  /** Whether the CommitLog holds, at `phy`, the record a unit of `cq` at `cqOffset` describes. */
  #unitNamesRecord(cq: ConsumeQueue, cqOffset: number, phy: number, size: number): boolean {
    const f = this.commitLog.segmentFor(phy);
    if (!f) return false;
    const pos = phy - f.fileFromOffset;
    if (pos + size > f.wrotePosition || size < 8) return false;
    const r = decodeRecordAt(f.buf.subarray(0, pos + size), pos, { checkCrc: false, readBody: false });
    return (
      "totalSize" in r &&
      r.totalSize === size &&
      r.physicalOffset === phy &&
      r.queueId === cq.queueId &&
      r.queueOffset === cqOffset &&
      r.topic === cq.topic
    );
  }

  /** Merges newly found damage with what earlier runs recorded, and persists the list. */
  #loadCorruptRanges(found: CorruptRange[], endOffset: number): void {
    const path = join(this.#o.dir, "corrupt.json");
    const old = this.#readCorruptList(path);
    const keep = [...old, ...found].filter((r) => r.to <= endOffset && r.to > this.commitLog.minOffset);
    const unique = new Map(keep.map((r) => [`${r.from}-${r.to}`, r]));
    this.#corrupt = [...unique.values()].sort((a, b) => a.from - b.from);
    if (this.#corrupt.length > 0 || old.length > 0) this.#saveCorruptRanges();
  }

  #saveCorruptRanges(): void {
    this.#disk.writeFileAtomic(join(this.#o.dir, "corrupt.json"), JSON.stringify(this.#corrupt, null, 2));
  }

  /** corrupt.json, or its `.bak` when the main copy is missing or unparsable (readFileWithBackup's rule). */
  #readCorruptList(path: string): CorruptRange[] {
    let firstError: unknown = null;
    for (const p of [path, `${path}.bak`]) {
      const bytes = this.#disk.readFile(p);
      if (bytes === null) continue;
      try {
        return JSON.parse(new TextDecoder().decode(bytes)) as CorruptRange[];
      } catch (e) {
        firstError ??= e;
      }
    }
    if (firstError !== null) throw firstError;
    return [];
  }

  #isCorrupt(phy: number): boolean {
    for (const r of this.#corrupt) if (phy >= r.from && phy < r.to) return true;
    return false;
  }

  /**
   * Runs a load that maps segments; a segment of another size than configured means the store was
   * created with another value of `key` (it cannot change for an existing store, as in RocketMQ,
   * which refuses to start too): the open fails with the value to set back. Nothing is touched.
   */
  #loadSized(key: string, bytesPerUnit: number, load: () => string[]): string[] {
    try {
      return load();
    } catch (e) {
      if (!(e instanceof SegmentSizeError)) throw e;
      const was = e.actualBytes % bytesPerUnit === 0 && e.actualBytes > 0 ? e.actualBytes / bytesPerUnit : null;
      throw new Error(
        `${key} is ${e.configuredBytes / bytesPerUnit}, but ${e.path} is ${e.actualBytes} bytes` +
          (was === null ? "" : `: the store was created with ${key} ${was}; set it back`) +
          " (a store's segment sizes cannot change; nothing was changed on disk)",
      );
    }
  }

  #loadConsumeQueues(): string[] {
    const root = join(this.#o.dir, "consumequeue");
    const disk = this.#disk;
    if (!disk.exists(root)) return [];
    const problems: string[] = [];
    for (const topic of disk.list(root)) {
      if (!disk.isDirectory(join(root, topic))) continue;
      for (const qid of disk.list(join(root, topic))) {
        if (!/^\d+$/.test(qid)) continue;
        const cq = this.#consumeQueue(topic, Number(qid));
        problems.push(...cq.load());
      }
    }
    return problems;
  }

  // ---------------------------------------------------------------- services

  #startServices(): void {
    this.commitLog.startFlushService();
    this.#lastThoroughFlushAt = this.#now();
    const clock = this.#clock;
    this.#timers.push(
      clock.setInterval(() => {
        this.checkpoint().catch((e: unknown) => {
          // A full disk: the last checkpoint stays (recovery only starts earlier); once a minute.
          this.#log.rateLimited("warn", "checkpoint-write", `checkpoint not written: ${errText(e)}`, 60_000);
        });
      }, this.#o.checkpointIntervalMs ?? 1000),
    );
    this.#cleanTimer = clock.setInterval(() => this.cleanExpiredFiles(false), this.#o.deleteCommitLogFilesIntervalMs);
    this.#timers.push(this.#cleanTimer);
    this.#timers.push(clock.setInterval(() => this.releaseColdMappings(), this.#o.releaseColdIntervalMs ?? 5000));
    // The disk reserve a little after start (and then by every retention check): not during
    // start-up, whose time is measured.
    if ((this.#o.diskReserveBytes ?? 0) > 0) {
      this.#reserveTimer = clock.setTimeout(() => {
        this.#reserveTimer = undefined;
        if (!this.#shutdown && this.#checkDisk() >= 0 && this.#diskFull === null) this.#keepReserve(this.#diskFreeBytes - this.#diskFloorBytes());
      }, RESERVE_DELAY_MS);
    }
    this.#checkDisk();
    if (this.#indexCatchUp !== null) {
      const c = this.#indexCatchUp;
      this.#log.info(`index: rebuilding the keys of [${c.from}, ${this.#reputOffset}) after the unclean shutdown, while the store serves`);
      this.#scheduleIndexCatchUp();
    }
  }

  #newIndexCatchUp(from: number): IndexCatchUp {
    return new IndexCatchUp(from, {
      segmentFor: (offset) => this.commitLog.segmentFor(offset),
      minOffset: () => this.commitLog.minOffset,
      dispatchedEnd: () => this.#reputOffset,
      damageAt: (offset) => this.#corrupt.find((r) => offset >= r.from && offset < r.to),
      index: (rec) => this.#index.buildIndex(rec),
    });
  }

  #scheduleIndexCatchUp(): void {
    this.#indexCatchUpTimer = this.#clock.setTimeout(() => {
      this.#indexCatchUpTimer = undefined;
      this.#indexCatchUpSlice();
    }, 0);
  }

  /** One slice of the index's catch-up: INDEX_CATCH_UP_SLICE_RECORDS records, then the event loop's other work. */
  #indexCatchUpSlice(): void {
    const c = this.#indexCatchUp;
    if (c === null || this.#shutdown || this.#halted !== null) return;
    let step;
    try {
      step = c.step(INDEX_CATCH_UP_SLICE_RECORDS);
    } catch (e) {
      // The index failed to write (as a put would have found): the write path stops as for a put.
      this.#halt(e, "index rebuild");
      return;
    }
    if (step === "more") {
      this.#scheduleIndexCatchUp();
      return;
    }
    this.#endIndexCatchUp(step);
  }

  #endIndexCatchUp(step: "done" | { invalid: string }): void {
    const c = this.#indexCatchUp!;
    if (step === "done") {
      this.#log.info(`index: rebuilt the keys of [${c.from}, ${c.at}) (${c.records} records); every dispatch is indexed again`);
    } else {
      this.#log.warn(`index: rebuild stopped at ${c.at}: ${step.invalid}; keys stored from there to ${this.#reputOffset} are not indexed`);
    }
    this.#indexCatchUp = null;
    for (const resolve of this.#indexCaughtUp.splice(0)) resolve();
  }

  /** After a crash: how far the index's catch-up has come (./index-catch-up.ts); undefined when the index is complete. */
  get indexCatchUp(): { from: number; at: number; end: number } | undefined {
    const c = this.#indexCatchUp;
    return c === null ? undefined : { from: c.from, at: c.at, end: this.#reputOffset };
  }

  /** Resolves once every dispatched record is indexed (at once unless the index is catching up after a crash). */
  whenIndexed(): Promise<void> {
    if (this.#indexCatchUp === null || this.#shutdown) return Promise.resolve();
    return new Promise((resolve) => this.#indexCaughtUp.push(resolve));
  }

  /**
   * One tick of RocketMQ's FlushConsumeQueueService, then the checkpoint. A ConsumeQueue file is
   * flushed only once it has flushConsumeQueueLeastPages dirty pages (or is full), and every one
   * once per flushConsumeQueueThoroughIntervalMs (and at shutdown): with 10,000 queues each taking
   * a unit now and then, flushing every dirty file each second cost one device flush per message.
   *
   * The checkpoint then claims only what is durable: dispatchedOffset is at most the CommitLog's
   * flushed offset, and at most the lowest CommitLog offset whose unit is still unflushed in some queue (units of one queue are in CommitLog order,
   * so every record below it has a durable unit), or everything dispatched when none is. Only the
   * queues written since their last full flush are looked at, not all of them.
   */
  checkpoint(thorough?: boolean): Promise<void> {
    if (this.#checkpointing || this.#shutdown) return this.#checkpointing ?? Promise.resolve();
    const now = this.#now();
    const o = this.#o;
    if (thorough === undefined) {
      thorough = now >= this.#lastThoroughFlushAt + (o.flushConsumeQueueThoroughIntervalMs ?? FLUSH_CONSUME_QUEUE_THOROUGH_INTERVAL_MS_DEFAULT);
    }
    if (thorough) this.#lastThoroughFlushAt = now;
    const leastPages = thorough ? 0 : (o.flushConsumeQueueLeastPages ?? FLUSH_CONSUME_QUEUE_LEAST_PAGES_DEFAULT);
    const dispatched = this.#reputOffset;
    this.#checkpointing = (async () => {
      try {
        const due: Promise<void>[] = [];
        for (const q of this.#unflushedQueues) if (q.isAbleToFlush(leastPages)) due.push(q.flushAsync(leastPages));
        await Promise.all(due);
        const indexTs = await this.#index.flushAsync();
        if (this.#shutdown) return;
        // Never past the CommitLog's durable end: recovery verifies only from the segment holding
        // dispatchedOffset on, so a claim past unflushed CommitLog bytes would let a torn record
        // in an earlier segment through unverified (found by test/sim).
        let durable = Math.min(dispatched, this.commitLog.flushedOffset);
        for (const q of this.#unflushedQueues) {
          const phy = q.firstUnflushedPhyOffset();
          if (phy === undefined) this.#unflushedQueues.delete(q);
          else if (phy < durable) durable = phy;
        }
        const cp: Checkpoint = {
          commitLogFlushedOffset: this.commitLog.flushedOffset,
          dispatchedOffset: durable,
          indexCheckpointTimestamp: indexTs,
          writtenAt: now,
        };
        const last = this.#lastCheckpoint;
        if (
          last &&
          last.commitLogFlushedOffset === cp.commitLogFlushedOffset &&
          last.dispatchedOffset === cp.dispatchedOffset &&
          last.indexCheckpointTimestamp === cp.indexCheckpointTimestamp
        )
          return;
        await writeCheckpointAsync(join(o.dir, "checkpoint"), cp, this.#disk);
        this.#lastCheckpoint = cp;
      } finally {
        this.#checkpointing = null;
      }
    })();
    return this.#checkpointing;
  }

  // ---------------------------------------------------------------- put

  async putMessage(req: PutMessageRequest): Promise<PutMessageResult> {
    return this.putMessages([req]);
  }

  /**
   * Stores messages contiguously (a batch); all or nothing. The arrival listener hears of each
   * message that reached a ConsumeQueue when the put settles: after a SYNC_FLUSH or a slave's
   * acknowledgement, as the send path always woke parked pulls, and also when those waits fail
   * (the messages are stored).
   */
  async putMessages(reqs: readonly PutMessageRequest[]): Promise<PutMessageResult> {
    const listener = this.#o.messageArriving;
    if (listener === undefined) return this.#put(reqs, null);
    const codes: number[] = [];
    const result = await this.#put(reqs, codes);
    for (let i = 0; i < result.appended.length; i++) {
      const code = codes[i];
      // No code: a half message (no ConsumeQueue unit until it is committed).
      if (code !== undefined) listener.arriving(reqs[i]!.topic, reqs[i]!.queueId, result.appended[i]!.queueOffset, code);
    }
    return result;
  }

  /** putMessages without the listener; `codes[i]`: the tag code of request i's unit, when it got one. */
  async #put(reqs: readonly PutMessageRequest[], codes: number[] | null): Promise<PutMessageResult> {
    const refused = this.#refusal();
    if (refused) return { status: "SERVICE_NOT_AVAILABLE", remark: refused, appended: [] };
    const inputs: StoreRecordInput[] = [];
    const total = this.#recordInputs(reqs, inputs);
    if (typeof total !== "number") return total;
    let appended: AppendResult[];
    try {
      appended = this.commitLog.appendBatch(inputs, queueAssignment(reqs));
    } catch (e) {
      if (e instanceof AssertionError) return this.#haltedResult(e, "append");
      return { status: "UNKNOWN_ERROR", remark: e instanceof Error ? e.message : String(e), appended: [] };
    }
    const halted = this.#dispatchPut(reqs, appended, codes);
    if (halted) return halted;
    const last = appended.at(-1)!;
    this.#reputOffset = last.physicalOffset + last.size;
    this.#appendedSinceDiskCheck += total;
    if (this.#appendedSinceDiskCheck >= DISK_RECHECK_BYTES) this.#checkDisk();
    return this.#settle(reqs, appended, this.#reputOffset);
  }

  /** Checks each request's sizes and encodes it into `inputs`; the records' total size, or the refusal. */
  #recordInputs(reqs: readonly PutMessageRequest[], inputs: StoreRecordInput[]): number | PutMessageResult {
    let total = 0;
    for (const r of reqs) {
      if (r.body.length > this.#o.maxMessageSizeBytes) {
        return {
          status: "MESSAGE_ILLEGAL",
          remark: `message body is ${r.body.length} bytes, over the maximum ${this.#o.maxMessageSizeBytes}`,
          appended: [],
        };
      }
      const topic = this.#topicBytes(r.topic);
      if (topic.length > TOPIC_SIZE_MAX_BYTES)
        return { status: "MESSAGE_ILLEGAL", remark: `topic is longer than ${TOPIC_SIZE_MAX_BYTES} bytes`, appended: [] };
      const properties = enc.encode(r.properties);
      if (properties.length > PROPERTIES_SIZE_MAX_BYTES) {
        return {
          status: "PROPERTIES_SIZE_EXCEEDED",
          remark: `properties are ${properties.length} bytes, over ${PROPERTIES_SIZE_MAX_BYTES}`,
          appended: [],
        };
      }
      const input: StoreRecordInput = {
        topicName: r.topic,
        topic,
        queueId: r.queueId,
        flag: r.flag,
        body: r.body,
        properties,
        sysFlag: r.sysFlag,
        bornTimestamp: r.bornTimestamp,
        bornHost: r.bornHost,
        storeHost: this.#o.storeHost,
        reconsumeTimes: r.reconsumeTimes,
        preparedTransactionOffset: r.preparedTransactionOffset,
      };
      total += recordSize(input);
      inputs.push(input);
    }
    if (total + 8 > this.#o.segmentBytes) {
      return {
        status: "MESSAGE_ILLEGAL",
        remark: `messages of ${total} bytes do not fit in a ${this.#o.segmentBytes}-byte CommitLog segment`,
        appended: [],
      };
    }
    return total;
  }

  /**
   * The ConsumeQueue units and index entries of appended records (`codes[i]`: request i's tag code
   * when it got a unit). A failure halts the store: the result to answer, else null.
   */
  #dispatchPut(reqs: readonly PutMessageRequest[], appended: AppendResult[], codes: number[] | null): PutMessageResult | null {
    try {
      // One result per request, in request order: the send processor answers request i with
      // result i (msg ids, queue offset) and the records lie back to back in one segment.
      assert(appended.length === reqs.length, "a batch of {} requests got {} append results", reqs.length, appended.length);
      for (let i = 0; i < reqs.length; i++) {
        const r = reqs[i]!;
        const a = appended[i]!;
        if (i > 0) {
          const prev = appended[i - 1]!;
          const prevEnd = prev.physicalOffset + prev.size;
          assert(a.physicalOffset === prevEnd, "batch result {} at {} does not follow the one before, ending at {}", i, a.physicalOffset, prevEnd);
        }
        const known = r.propertiesParsed === true || (r.tags !== undefined && (r.keys !== undefined || r.uniqKey !== undefined));
        const props = known ? null : parseProperties(r.properties);
        const tags = r.tags ?? props?.[MessageConst.TAGS];
        const tagsCode = this.#tagsCode(r.topic, props, a.storeTimestamp, tags);
        const unit = this.#dispatch(
          r.topic,
          r.queueId,
          a.physicalOffset,
          a.size,
          a.queueOffset,
          a.storeTimestamp,
          r.sysFlag,
          tagsCode,
          r.keys ?? props?.[MessageConst.KEYS],
          r.uniqKey ?? props?.[MessageConst.UNIQ_KEY],
          "put",
        );
        if (unit && codes !== null) codes[i] = tagsCode;
      }
      return null;
    } catch (e) {
      // The records are in the CommitLog but (some) not indexed. Stop taking writes; a restart
      // re-dispatches them from the CommitLog.
      return this.#haltedResult(e, "dispatch");
    }
  }

  /** After the append: the commit, then the flush and replication waits the requests ask for (up to `end`). */
  async #settle(reqs: readonly PutMessageRequest[], appended: AppendResult[], end: number): Promise<PutMessageResult> {
    // The records sit in the CommitLog's write-behind stage until this turn's commit (one pwrite
    // for every append of the turn); nothing is acknowledged before they are in the page cache.
    await this.commitLog.whenCommitted();
    const werr = this.commitLog.writeError;
    if (werr) {
      // Only when the disk filled between two looks (another process wrote it full): the staged
      // records were never acknowledged, and the write path stays stopped until a restart.
      const full = isNoSpace(werr);
      const what = full ? ` (the disk of ${this.#o.dir} is full)` : "";
      const remark = `the CommitLog write failed${what}, store stopped taking writes until a restart: ${werr.message}`;
      return { status: full ? "SERVICE_NOT_AVAILABLE" : "UNKNOWN_ERROR", remark, appended: [] };
    }
    const replication = this.#o.replication;
    replication?.appended();
    if (!reqs.every((r) => r.waitStoreMsgOK !== false)) return { status: "PUT_OK", appended };
    // Flush and replication waits run together; as in RocketMQ, a replication failure wins.
    const flushed = this.#o.flushDiskType === "SYNC_FLUSH" ? this.commitLog.waitForFlush(end, this.#o.syncFlushTimeoutMs) : undefined;
    const replicated = replication?.waitReplicas(end);
    if (flushed === undefined && replicated === undefined) return { status: "PUT_OK", appended };
    const [ok, repl] = await Promise.all([flushed ?? true, replicated ?? "OK"]);
    if (repl === "TIMEOUT") return { status: "FLUSH_SLAVE_TIMEOUT", appended };
    if (repl === "NO_SLAVE") return { status: "SLAVE_NOT_AVAILABLE", appended };
    if (!ok) return { status: "FLUSH_DISK_TIMEOUT", appended };
    return { status: "PUT_OK", appended };
  }

  /** A topic's UTF-8 bytes, cached: the same few topics are encoded on every put. */
  #topicBytes(topic: string): Uint8Array {
    let b = this.#topicCache.get(topic);
    if (b === undefined) {
      if (this.#topicCache.size >= 65536) this.#topicCache.clear();
      b = enc.encode(topic);
      this.#topicCache.set(topic, b);
    }
    return b;
  }

  /**
   * Halts the write path (see #halted) and answers the put that found the failure. The first
   * failure is the one kept and logged; a broken invariant is named a bug.
   */
  #haltedResult(e: unknown, where: string): PutMessageResult {
    this.#halt(e, where);
    return { status: "SERVICE_NOT_AVAILABLE", remark: this.#refusal() ?? "message store halted", appended: [] };
  }

  #halt(e: unknown, where: string): void {
    if (this.#halted !== null) return;
    const err = e instanceof Error ? e : new Error(String(e));
    this.#halted = err;
    const what = err instanceof AssertionError ? "a broken invariant (a bug)" : "a failure";
    this.#log.error(`${where}: ${what}; the store takes no more writes, reads go on, a restart recovers: ${err.stack ?? err.message}`);
  }

  /**
   * The CommitLog ends at `offset` from now on: the queues' units and index entries past it go,
   * each queue's put counter continues from its queue. `verifyUnits`: a unit below the cut is
   * kept only if it names its record (after a crash, when units may be torn).
   */
  #cutAt(offset: number, verifyUnits: boolean, unsyncedFrom?: number): void {
    this.commitLog.truncateTo(offset, unsyncedFrom);
    this.#reputOffset = offset;
    this.#index.dropFilesAbove(offset);
    this.#indexCatchUp?.cut(offset);
    const clMin = this.commitLog.minOffset;
    for (const cq of this.#allQueues()) {
      cq.truncateDirty(offset, verifyUnits ? (off, phy, size) => this.#unitNamesRecord(cq, off, phy, size) : undefined);
      cq.correctMinOffset(clMin);
      this.commitLog.setNextQueueOffset(cq.topic, cq.queueId, cq.maxOffset);
      cq.writtenHereFrom = cq.maxOffset;
    }
  }

  /**
   * A replica whose log went past the point it shares with its master (bytes the group never
   * acknowledged) cuts it there (../broker/replica-epochs.ts). With `keep`, the bytes cut are first
   * kept whole in `<dir>/truncated/<from>-<to>.commitlog` (CommitLog records, for inspection; never
   * served); without it (a failover replica's unflushed tail, which its master sends again) they
   * are only dropped. Then they are removed as recovery removes a torn tail. Only a read-only store
   * (a replica) is cut.
   */
  truncateTail(offset: number, keep = true): { records: number; bytes: number; file: string | null } {
    assert(this.#o.readOnly === true, "only a replica's store is truncated (the store takes writes)");
    this.reput();
    const max = this.commitLog.maxOffset;
    if (offset >= max) return { records: 0, bytes: 0, file: null };
    assert(offset >= this.commitLog.minOffset, "truncation point {} is below the log's start {}", offset, this.commitLog.minOffset);
    const parts: Uint8Array[] = [];
    let records = 0;
    for (let pos = offset; pos < max; ) {
      const seg = this.commitLog.segmentFor(pos);
      if (!seg) break;
      const from = pos - seg.fileFromOffset;
      const to = Math.min(seg.wrotePosition, max - seg.fileFromOffset);
      const bytes = seg.buf.slice(from, to);
      for (let p = 0; p < bytes.length; ) {
        const r = decodeRecordAt(bytes, p, { checkCrc: false, readBody: false });
        if (!("totalSize" in r)) break;
        records++;
        p += r.totalSize;
      }
      parts.push(bytes);
      pos = seg.fileFromOffset + seg.fileSize;
    }
    let file: string | null = null;
    if (keep) {
      const dir = join(this.#o.dir, "truncated");
      this.#disk.mkdirs(dir);
      file = join(dir, `${offset}-${max}.commitlog`);
      this.#disk.writeFileAtomic(file, Buffer.concat(parts));
    }
    // What lies below the cut but past the flushed end is synced by the cut: truncateTo counts
    // everything it keeps as flushed, and the next checkpoint would claim it durable.
    this.#cutAt(offset, false, this.commitLog.flushedOffset);
    const where = file !== null ? `kept in ${file}` : "not kept (the master sends them again)";
    this.#log.warn(`truncated the CommitLog at ${offset}: ${max - offset} bytes, ${records} records, ${where}`);
    return { records, bytes: max - offset, file };
  }

  /**
   * Automatic failover: a slave promoted to master takes writes from now on; a master stepping
   * down stops. Promoted, the replicated records are dispatched first, and each queue's next
   * offset (the put path's counter) continues from its ConsumeQueue, which replication filled.
   */
  setReadOnly(readOnly: boolean): void {
    if (!readOnly && this.#o.readOnly) {
      this.reput();
      for (const cq of this.#allQueues()) this.commitLog.setNextQueueOffset(cq.topic, cq.queueId, cq.maxOffset);
    }
    this.#o.readOnly = readOnly;
  }

  /** Why the write path halted (see #halted), or null while it takes writes. */
  get halted(): string | null {
    return this.#halted === null ? null : this.#halted.message;
  }

  #refusal(): string | null {
    if (this.#shutdown) return "message store has shut down";
    if (this.#o.readOnly) return "message store is read-only (slave)";
    const fenced = this.#o.replication?.fence();
    if (fenced) return fenced;
    // Before the CommitLog's write error: an assertion inside an append sets that too, and the
    // answer should name the bug.
    if (this.#halted) {
      const what = this.#halted instanceof AssertionError ? "a broken invariant (a bug)" : "a dispatch failure";
      return `message store stopped taking writes after ${what} (restart to recover): ${this.#halted.message}`;
    }
    if (this.commitLog.writeError) return `message store is not writable: ${this.commitLog.writeError.message}`;
    if (this.#diskFull !== null || this.#diskFreeBytes - this.#appendedSinceDiskCheck < this.#diskFloorBytes()) {
      // Refusing: look again at most once a second (space freed by retention or an operator lets
      // writes resume by themselves); near the floor: look now, the last look may be stale.
      if (this.#diskFull === null || this.#now() - this.#diskCheckedAt >= DISK_RECHECK_MS) this.#checkDisk();
      if (this.#diskFull !== null) return this.#diskFull;
    }
    return null;
  }

  #tagsCode(topic: string, props: Record<string, string> | null, storeTimestamp: number, tags: string | undefined): number {
    if (this.#o.tagsCodeFor) return this.#o.tagsCodeFor(topic, props, storeTimestamp, tags);
    return tagsHashCode(tags);
  }

  /**
   * Replication (slave): stores bytes copied from the master's CommitLog at the same offset,
   * then dispatches every record they complete. Returns a reason when the bytes do not continue
   * this store's log (the caller reconnects and resumes from maxPhyOffset).
   */
  appendReplicated(offset: number, data: Uint8Array, damaged?: string): { invalid: string } | null {
    if (this.#shutdown) return { invalid: "message store has shut down" };
    if (this.#halted) return { invalid: this.#refusal() ?? "message store halted" };
    const wasEmpty = this.commitLog.segments.length === 0;
    const bad = this.commitLog.appendRaw(offset, data);
    if (bad) return bad;
    if (wasEmpty) this.#reputOffset = offset;
    this.#replicating = true;
    try {
      if (damaged !== undefined) this.#replicatedDamage(offset, offset + data.length, damaged);
      this.reput();
    } catch (e) {
      // As on the put path: bytes stored but not dispatched (or a bug) stop the writes.
      this.#halt(e, "replicated dispatch");
      return { invalid: this.#refusal() ?? "message store halted" };
    } finally {
      this.#replicating = false;
    }
    return null;
  }

  /**
   * Bytes of a range the master's own recovery found damaged (../ha/record-stream.ts): stored as
   * they are, so both logs stay byte-for-byte equal, but recorded in corrupt.json like damage this
   * store found itself: never dispatched, never served. Consecutive parts of one range merge.
   */
  #replicatedDamage(from: number, to: number, reason: string): void {
    this.reput(); // whole records before the range (there is never a partial one: see RecordStream)
    if (this.#reputOffset === from) this.#reputOffset = to;
    const last = this.#corrupt.at(-1);
    if (last !== undefined && last.to === from) last.to = to;
    else this.#corrupt.push({ from, to, reason: `streamed by the master: ${reason}` });
    this.#saveCorruptRanges();
  }

  /** Dispatches records written to the CommitLog but not yet indexed (replicated bytes). */
  reput(): number {
    let n = 0;
    const max = this.commitLog.maxOffset;
    while (this.#reputOffset < max) {
      const seg = this.commitLog.segmentFor(this.#reputOffset);
      if (!seg) break;
      const pos = this.#reputOffset - seg.fileFromOffset;
      const r = decodeRecordAt(seg.buf.subarray(0, seg.wrotePosition), pos, { checkCrc: false, readBody: false });
      if ("totalSize" in r) {
        this.#dispatchRecord(r, this.#reputOffset);
        n++;
        continue;
      }
      if ("blank" in r) {
        this.#reputOffset = seg.fileFromOffset + seg.fileSize;
        continue;
      }
      // An incomplete record (the rest of it is still on its way) or the end of the data.
      break;
    }
    return n;
  }

  /** Dispatch of a record decoded from CommitLog bytes (recovery, replication); `rewrite`: see ConsumeQueue.putUnit. */
  #dispatchRecord(rec: DecodedRecord, offset: number, rewrite = false): void {
    const props = parseProperties(rec.properties);
    const tags = props[MessageConst.TAGS];
    const tagsCode = this.#tagsCode(rec.topic, props, rec.storeTimestamp, tags);
    const unit = this.#dispatch(
      rec.topic,
      rec.queueId,
      offset,
      rec.totalSize,
      rec.queueOffset,
      rec.storeTimestamp,
      rec.sysFlag,
      tagsCode,
      props[MessageConst.KEYS],
      props[MessageConst.UNIQ_KEY],
      rewrite ? "rewrite" : "log",
    );
    this.#reputOffset = offset + rec.totalSize;
    // Replicated bytes (appendReplicated) are in the CommitLog already: their readers can come.
    if (unit && this.#replicating) this.#o.messageArriving?.arriving(rec.topic, rec.queueId, rec.queueOffset, tagsCode);
  }

  #dispatch(
    topic: string,
    queueId: number,
    phyOffset: number,
    size: number,
    queueOffset: number,
    storeTimestamp: number,
    sysFlag: number,
    tagsCode: number,
    keys: string | undefined,
    uniqKey: string | undefined,
    from: PutUnitSource,
  ): boolean {
    const t = transactionType(sysFlag);
    let unit = false;
    if (t === SysFlag.TRANSACTION_NOT_TYPE || t === SysFlag.TRANSACTION_COMMIT_TYPE) {
      const cq = this.#consumeQueue(topic, queueId);
      if (from === "log" && queueOffset < cq.maxOffset && this.#resolveSecondRecord(cq, queueOffset, phyOffset, size)) {
        // This record is the superseded one: recorded as damage, no unit.
      } else {
        if (cq.putUnit(queueOffset, phyOffset, size, tagsCode, from) === "replaced") this.#unitReplaced(cq, queueOffset, phyOffset);
        unit = true;
      }
      this.#unflushedQueues.add(cq);
    }
    if ((keys !== undefined || uniqKey !== undefined) && this.#indexCatchUp === null) {
      this.#index.buildIndex({ topic, keys, uniqKey, phyOffset, storeTimestamp, sysFlag });
    }
    return unit;
  }

  /**
   * A dispatch from CommitLog bytes for a queue offset that already has a unit (rare). When that
   * unit names a real record too, the log holds two records with one queue offset: a master
   * re-used the offsets of records its recovery lost (it cut them into a damaged range, or lost
   * them with its tail) after this slave had received them whole. The record later in the log is
   * the master's word; the earlier one, and every record this queue holds past it, is what the
   * master lost: each is recorded as a damaged range ("superseded"), never served, as the master
   * never serves its own damage (docs/STORAGE.md §9.3). Returns true when the record being
   * dispatched is the superseded one (it gets no unit); otherwise putUnit then replaces the unit.
   * A unit naming no such record (a damaged queue file) is simply replaced by putUnit.
   */
  #resolveSecondRecord(cq: ConsumeQueue, queueOffset: number, phy: number, size: number): boolean {
    const old = cq.get(queueOffset);
    if (!old || old.size === CQ_FILLER_SIZE || old.phyOffset === phy) return false;
    if (!this.#unitNamesRecord(cq, queueOffset, old.phyOffset, old.size)) return false;
    if (old.phyOffset > phy) {
      this.#supersede(phy, size, cq, queueOffset, old.phyOffset);
      return true;
    }
    for (let off = queueOffset; off < cq.maxOffset; off++) {
      const u = cq.get(off);
      if (u && u.size !== CQ_FILLER_SIZE && u.phyOffset < phy && this.#unitNamesRecord(cq, off, u.phyOffset, u.size)) {
        this.#supersede(u.phyOffset, u.size, cq, off, phy);
      }
    }
    return false;
  }

  #supersede(phy: number, size: number, cq: ConsumeQueue, queueOffset: number, laterPhy: number): void {
    if (this.#isCorrupt(phy)) return;
    const range: CorruptRange = {
      from: phy,
      to: phy + size,
      reason: `superseded: queue offset ${queueOffset} of ${cq.topic}-${cq.queueId} was given again to the record at ${laterPhy} (the master lost this one)`,
    };
    if (this.#recoveryProblems) {
      if (!this.#recoverySuperseded.some((r) => r.from === phy)) this.#recoverySuperseded.push(range);
      return;
    }
    const at = this.#corrupt.findIndex((r) => r.from > phy);
    this.#corrupt.splice(at < 0 ? this.#corrupt.length : at, 0, range);
    this.#saveCorruptRanges();
  }

  /**
   * CommitLog bytes hold a second record with a queue offset that already has a unit: input (a
   * master re-used the offsets of records its recovery lost, or the queue file was damaged), so
   * it is reported, not asserted; the record being dispatched took the unit (ConsumeQueue.putUnit,
   * after #resolveSecondRecord found it the later of two real records, or the unit garbage).
   */
  #unitReplaced(cq: ConsumeQueue, queueOffset: number, phyOffset: number): void {
    this.#unitsReplaced++;
    const msg =
      `consumequeue ${cq.topic}-${cq.queueId}: queue offset ${queueOffset} already named another record; ` +
      `the record at ${phyOffset}, dispatched from the CommitLog, replaced it and the units after it`;
    if (this.#recoveryProblems) this.#recoveryProblems.push(msg);
    else this.#log.rateLimited("warn", "unit-replaced", msg);
  }

  #consumeQueue(topic: string, queueId: number): ConsumeQueue {
    let byId = this.#queues.get(topic);
    if (!byId) this.#queues.set(topic, (byId = new Map()));
    let cq = byId.get(queueId);
    if (!cq) {
      cq = new ConsumeQueue(join(this.#o.dir, "consumequeue"), topic, queueId, this.#o.consumeQueueUnitsPerFile, this.#disk);
      byId.set(queueId, cq);
    }
    return cq;
  }

  *#allQueues(): Generator<ConsumeQueue> {
    for (const byId of this.#queues.values()) yield* byId.values();
  }

  // ---------------------------------------------------------------- get

  /**
   * Reads up to `maxMsgNums` messages of one queue from `offset`, as stored bytes. Status and
   * nextBeginOffset follow RocketMQ's DefaultMessageStore.getMessage (docs/PROTOCOL.md §3.5).
   */
  getMessage(
    topic: string,
    queueId: number,
    offset: number,
    maxMsgNums: number,
    filter?: TagCodeFilter,
    /** Second stage on the stored record (RocketMQ's isMatchedByCommitLog: SQL92 on properties). */
    recordFilter?: (record: Uint8Array) => boolean,
  ): GetMessageResult {
    const cq = this.#queues.get(topic)?.get(queueId);
    const res: GetMessageResult = {
      status: "NO_MATCHED_LOGIC_QUEUE",
      nextBeginOffset: 0,
      minOffset: 0,
      maxOffset: 0,
      messages: [],
      bufferTotalBytes: 0,
      suggestPullingFromSlave: false,
    };
    if (!cq) return res;
    const min = cq.minOffset;
    const max = cq.maxOffset;
    res.minOffset = min;
    res.maxOffset = max;
    if (max === 0) {
      res.status = "NO_MESSAGE_IN_QUEUE";
      return res;
    }
    if (offset < min) {
      res.status = "OFFSET_TOO_SMALL";
      res.nextBeginOffset = min;
      return res;
    }
    if (offset === max) {
      res.status = "OFFSET_OVERFLOW_ONE";
      res.nextBeginOffset = offset;
      return res;
    }
    if (offset > max) {
      res.status = "OFFSET_OVERFLOW_BADLY";
      res.nextBeginOffset = max;
      return res;
    }
    const clMin = this.commitLog.minOffset;
    const clMax = this.commitLog.maxOffset;
    // RocketMQ scans at most max(16000 bytes, 20 × maxMsgNums) of ConsumeQueue per pull.
    const maxScanUnits = Math.max(800, maxMsgNums);
    let status: GetMessageStatus = "NO_MATCHED_MESSAGE";
    let lastPhy = -1;
    const scanned = cq.scan(offset, maxScanUnits, (off, phy, size, tagsCode) => {
      if (size === CQ_FILLER_SIZE) return true;
      if (this.#corrupt.length > 0 && this.#isCorrupt(phy)) return true;
      if (phy < clMin) {
        status = "MESSAGE_WAS_REMOVING";
        return true;
      }
      const inDisk = clMax - phy > this.#memoryHotBytes;
      if (this.#batchFull(size, maxMsgNums, res.bufferTotalBytes, res.messages.length, inDisk)) return false;
      if (filter && !filter(tagsCode)) return true;
      const bytes = this.commitLog.read(phy, size);
      if (!bytes) {
        status = "MESSAGE_WAS_REMOVING";
        return true;
      }
      // A unit torn by a crash (never flushed, not rewritten because its record lies in damage)
      // can point anywhere; what it points at is skipped, never served (test/sim seed 10). Units
      // this process wrote itself name records it appended or verified: a mismatch there is a
      // bug in the write path, which halts it (still not served; reads go on).
      if (!isRecordOfUnit(bytes, phy, queueId, off)) {
        this.#unitsNotMatchingRecord++;
        if (off >= cq.writtenHereFrom) {
          const what = `unit ${off} of ${topic}-${queueId}, written by this process, points at ${phy}, which is not its record`;
          this.#halt(new AssertionError(`invariant violated: ${what}`), "pull");
        }
        return true;
      }
      if (recordFilter && !recordFilter(bytes)) return true;
      res.messages.push(bytes);
      res.bufferTotalBytes += size;
      lastPhy = phy;
      return true;
    });
    res.nextBeginOffset = offset + scanned;
    res.status = res.messages.length > 0 ? "FOUND" : status;
    if (lastPhy >= 0) res.suggestPullingFromSlave = clMax - lastPhy > this.#memoryHotBytes;
    return res;
  }

  #batchFull(size: number, maxMsgNums: number, bytes: number, count: number, inDisk: boolean): boolean {
    if (count === 0) return false;
    if (count >= maxMsgNums) return true;
    const o = this.#o;
    if (inDisk) return bytes + size > o.maxTransferBytesOnMessageInDisk || count >= o.maxTransferCountOnMessageInDisk;
    return bytes + size > o.maxTransferBytesOnMessageInMemory || count >= o.maxTransferCountOnMessageInMemory;
  }

  getMaxOffsetInQueue(topic: string, queueId: number): number {
    return this.#queues.get(topic)?.get(queueId)?.maxOffset ?? 0;
  }

  getMinOffsetInQueue(topic: string, queueId: number): number {
    return this.#queues.get(topic)?.get(queueId)?.minOffset ?? 0;
  }

  /** CommitLog offset of the message at `cqOffset`, or -1. */
  getCommitLogOffsetInQueue(topic: string, queueId: number, cqOffset: number): number {
    return this.#queues.get(topic)?.get(queueId)?.get(cqOffset)?.phyOffset ?? -1;
  }

  #storeTimeOf(phy: number): number {
    const f = this.commitLog.segmentFor(phy);
    if (!f) return -1;
    const pos = phy - f.fileFromOffset + OFFSET_STORE_TIMESTAMP;
    return f.view.getInt32(pos) * 2 ** 32 + f.view.getUint32(pos + 4);
  }

  /**
   * The first queue offset whose message was stored at or after `timestamp` (maxOffset if all
   * are older; 0 for an empty or unknown queue). Binary search over the ConsumeQueue.
   */
  getOffsetInQueueByTime(topic: string, queueId: number, timestamp: number): number {
    const cq = this.#queues.get(topic)?.get(queueId);
    if (!cq) return 0;
    let lo = cq.minOffset;
    let hi = cq.maxOffset;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const u = cq.get(mid);
      const t = u && u.size !== CQ_FILLER_SIZE ? this.#storeTimeOf(u.phyOffset) : -1;
      if (t >= 0 && t >= timestamp) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** Store time of the first message still in the queue, or -1. */
  getEarliestMessageTime(topic: string, queueId: number): number {
    const cq = this.#queues.get(topic)?.get(queueId);
    if (!cq) return -1;
    for (let off = cq.minOffset; off < cq.maxOffset; off++) {
      const u = cq.get(off);
      if (u && u.size !== CQ_FILLER_SIZE && u.phyOffset >= this.commitLog.minOffset) return this.#storeTimeOf(u.phyOffset);
    }
    return -1;
  }

  /** Store time of the oldest message in the whole CommitLog, or -1. */
  getEarliestMessageTimeOverall(): number {
    const first = this.commitLog.segments[0];
    if (!first || first.wrotePosition === 0) return -1;
    return this.#storeTimeOf(first.fileFromOffset);
  }

  /** The stored record at a CommitLog offset (the offset message id), raw bytes. */
  selectOneMessageByOffset(phyOffset: number): Uint8Array | undefined {
    const f = this.commitLog.segmentFor(phyOffset);
    if (!f) return undefined;
    const pos = phyOffset - f.fileFromOffset;
    if (pos + 4 > f.wrotePosition) return undefined;
    const size = readTotalSize(f.buf, pos);
    if (size <= 0) return undefined;
    return this.commitLog.read(phyOffset, size);
  }

  lookMessageByOffset(phyOffset: number): DecodedRecord | undefined {
    const bytes = this.selectOneMessageByOffset(phyOffset);
    if (!bytes) return undefined;
    const r = decodeRecordAt(bytes, 0, { checkCrc: false });
    return "totalSize" in r ? r : undefined;
  }

  /** Messages of `topic` whose KEYS contain `key` or whose UNIQ_KEY is `key`, newest first. */
  queryMessage(
    topic: string,
    key: string,
    maxNum: number,
    begin: number,
    end: number,
  ): { messages: Uint8Array[]; indexLastUpdateTimestamp: number; indexLastUpdatePhyoffset: number } {
    const q = this.#index.queryOffset(topic, key, maxNum, begin, end);
    const messages: Uint8Array[] = [];
    for (const phy of q.phyOffsets) {
      const bytes = this.selectOneMessageByOffset(phy);
      if (!bytes) continue;
      const r = decodeRecordAt(bytes, 0, { checkCrc: false, readBody: false });
      if (!("totalSize" in r) || r.topic !== topic) continue;
      const props = parseProperties(r.properties);
      const keys = props[MessageConst.KEYS]?.split(MessageConst.PROPERTY_KEY_SEPARATOR) ?? [];
      if (props[MessageConst.UNIQ_KEY] !== key && !keys.includes(key)) continue;
      messages.push(bytes);
      if (messages.length >= maxNum) break;
    }
    return { messages, indexLastUpdateTimestamp: q.indexLastUpdateTimestamp, indexLastUpdatePhyoffset: q.indexLastUpdatePhyoffset };
  }

  /** Topics with at least one ConsumeQueue on disk, with their queue ids. */
  queues(): Map<string, number[]> {
    const out = new Map<string, number[]>();
    for (const [topic, byId] of this.#queues)
      out.set(
        topic,
        [...byId.keys()].sort((a, b) => a - b),
      );
    return out;
  }

  /** Drops the ConsumeQueues of deleted topics (their CommitLog bytes expire with retention). */
  deleteTopics(topics: Iterable<string>): void {
    for (const topic of topics) {
      const byId = this.#queues.get(topic);
      if (!byId) continue;
      for (const cq of byId.values()) {
        cq.destroy();
        this.#unflushedQueues.delete(cq);
      }
      this.#queues.delete(topic);
      this.commitLog.removeQueueOffsets(topic);
      this.#disk.remove(join(this.#o.dir, "consumequeue", topic));
    }
  }

  /**
   * Keeps RSS independent of the stored size: segments and ConsumeQueue files that nobody used
   * for a while are unmapped (their pages stay in the kernel's page cache while memory allows).
   * Collection is forced once something was released, because mapped bytes are invisible to the
   * garbage collector's heuristics and would otherwise linger.
   */
  releaseColdMappings(): number {
    let n = this.commitLog.releaseCold();
    for (const cq of this.#allQueues()) n += cq.releaseCold();
    if (n > 0) Bun.gc(true);
    return n;
  }

  // ---------------------------------------------------------------- retention

  /** Fraction of the store's filesystem in use (0..1). */
  diskUsageRatio(): number {
    return this.#disk.usedRatio(this.#o.dir);
  }

  /**
   * Looks at the disk (statfs): writes are refused while its usage is above diskCriticalRatio
   * or fewer than #diskFloorBytes are free, so the store never meets ENOSPC itself (Java's
   * broker, writing through a mapping, dies of SIGBUS there). Run every DISK_RECHECK_BYTES
   * appended, by the retention timer, and at most once a second by a refused put.
   */
  #checkDisk(): number {
    const dir = this.#o.dir;
    const ratio = this.diskUsageRatio();
    const free = this.#disk.freeBytes(dir);
    this.#diskCheckedAt = this.#now();
    this.#diskFreeBytes = free;
    this.#appendedSinceDiskCheck = 0;
    const floor = this.#diskFloorBytes();
    const why =
      ratio > this.#o.diskCriticalRatio
        ? `above store.diskCriticalRatio ${this.#o.diskCriticalRatio}`
        : free < floor
          ? `under the ${mib(floor)} MiB the store keeps free`
          : null;
    const was = this.#diskFull;
    this.#diskFull =
      why === null
        ? null
        : `the broker's disk is full: ${dir} is ${(ratio * 100).toFixed(1)}% used, ${mib(free)} MiB free (${why}); ` +
          "writes are refused until retention or an operator frees space";
    if (this.#diskFull !== null && was === null) this.#log.warn(this.#diskFull);
    if (this.#diskFull === null && was !== null) this.#log.info(`disk space is back (${mib(free)} MiB free on ${dir}): writes resume`);
    return ratio;
  }

  /**
   * Writes the reserve file (store.diskReserveBytes) when it is missing and `spare` bytes above
   * the floor allow it; its blocks are allocated (written), so deleting it frees them. A failure
   * (the disk filled meanwhile) leaves no file.
   */
  #keepReserve(spare: number): void {
    const size = this.#o.diskReserveBytes ?? 0;
    if (size <= 0 || this.#reservePresent || spare < size) return;
    const path = join(this.#o.dir, RESERVE_FILE);
    if (this.#disk.exists(path)) {
      this.#reservePresent = true;
      return;
    }
    let file: SegmentFile | undefined;
    try {
      file = this.#disk.createSegment(path, size);
      const zeros = new Uint8Array(Math.min(size, 1024 * 1024));
      for (let p = 0; p < size; p += zeros.length) file.pwrite(zeros.subarray(0, Math.min(zeros.length, size - p)), p);
      file.syncSync();
      file.close();
      this.#reservePresent = true;
      this.#log.info(`kept ${mib(size)} MiB in ${path} (store.diskReserveBytes), released if the store opens on a full disk`);
    } catch (e) {
      file?.close();
      try {
        this.#disk.unlink(path);
      } catch {
        // Never created.
      }
      this.#log.rateLimited("warn", "disk-reserve", `cannot keep the disk reserve ${path}: ${errText(e)}`, 600_000);
    }
  }

  /**
   * What must stay free for the writes between two looks at the disk: DISK_RECHECK_BYTES of
   * CommitLog, one new IndexFile's slot table (allocated at creation, ./index-file.ts) and room
   * for ConsumeQueue pages and the metadata files.
   */
  #diskFloorBytes(): number {
    return DISK_RECHECK_BYTES + this.#o.indexSlotNum * 4 + DISK_FLOOR_SLACK_BYTES;
  }

  /**
   * Deletes CommitLog segments older than fileReservedTimeHours when the hour is one of
   * deleteWhen (or `force`), and the oldest segments regardless of age while the disk is above
   * diskMaxUsedSpaceRatio; then the ConsumeQueue and index files that only point below the new
   * minimum. Never deletes the segment being written. Returns the number of segments deleted.
   */
  cleanExpiredFiles(force: boolean): number {
    if (this.#shutdown) return 0;
    const now = this.#now();
    const ratio = this.#checkDisk();
    // Here, not at start: writing it costs a few ms, and start-up time is measured.
    if (this.#diskFull === null) this.#keepReserve(this.#diskFreeBytes - this.#diskFloorBytes());
    const hours = this.#o.deleteWhen.split(";").map((h) => Number(h));
    const timeUp = force || hours.includes(new Date(now).getHours());
    const diskPressure = ratio > this.#o.diskMaxUsedSpaceRatio;
    if (!timeUp && !diskPressure) return 0;
    const reservedMs = this.#o.fileReservedTimeHours * HOUR_MS;
    const expired = (f: MappedFile) => now - this.#disk.mtimeMs(f.path) > reservedMs;
    // Under disk pressure, delete the oldest even if not expired, a few at a time.
    const n = this.commitLog.deleteSegments(
      (f) => (timeUp && expired(f)) || (diskPressure && this.diskUsageRatio() > this.#o.diskMaxUsedSpaceRatio),
      10,
    );
    if (n > 0) {
      const clMin = this.commitLog.minOffset;
      for (const cq of this.#allQueues()) cq.deleteExpiredFiles(clMin);
      this.#index.deleteExpiredFiles(clMin);
      // A deleted file's blocks are freed only once its mapping is gone, and Bun unmaps when the
      // array is collected: without a collection an idle broker under disk pressure deletes its
      // segments and frees nothing (found by test/integration/disk-full.test.ts). Only then: a full
      // collection stops the broker for as long as its heap takes to walk (200-280 ms of event-loop
      // lag every pass in the soak, bench/soak), and time-up deletion can wait for the next one.
      if (diskPressure || force) Bun.gc(true);
      this.#checkDisk();
    }
    return n;
  }

  // ---------------------------------------------------------------- status and shutdown

  get maxPhyOffset(): number {
    return this.commitLog.maxOffset;
  }

  get minPhyOffset(): number {
    return this.commitLog.minOffset;
  }

  get dispatchedOffset(): number {
    return this.#reputOffset;
  }

  /** Below this every record is in its ConsumeQueue and the index: dispatchedOffset, or less while the index catches up. */
  get indexedOffset(): number {
    return this.#indexCatchUp?.at ?? this.#reputOffset;
  }

  /** ConsumeQueue units skipped by getMessage because the bytes they point at are not their record (torn units). */
  get unitsNotMatchingRecord(): number {
    return this.#unitsNotMatchingRecord;
  }

  /** Units replaced by a later record with the same queue offset, found in CommitLog bytes (see #unitReplaced). */
  get unitsReplaced(): number {
    return this.#unitsReplaced;
  }

  /** Damaged CommitLog ranges that recovery found and excluded from reads. */
  get corruptRanges(): readonly CorruptRange[] {
    return this.#corrupt;
  }

  /** ConsumeQueues holding units not yet flushed (they wait for least pages or the thorough tick). */
  get unflushedConsumeQueues(): number {
    return this.#unflushedQueues.size;
  }

  get isDiskFull(): boolean {
    return this.#diskFull !== null;
  }

  /**
   * Clean stop: flush everything, write the checkpoint, remove the abort marker, unlock. After a
   * write error (or one while flushing here) the stop is not clean: the files are still closed
   * and the lock released, but the abort marker stays (the next start runs recovery) and the
   * error is thrown to the caller.
   */
  async shutdown(): Promise<void> {
    if (this.#shutdown) return;
    for (const t of this.#timers) this.#clock.clearInterval(t);
    this.#timers = [];
    if (this.#reserveTimer !== undefined) this.#clock.clearTimeout(this.#reserveTimer);
    this.#reserveTimer = undefined;
    if (this.#indexCatchUpTimer !== undefined) this.#clock.clearTimeout(this.#indexCatchUpTimer);
    this.#indexCatchUpTimer = undefined;
    await this.#checkpointing;
    this.#shutdown = true;
    let failure: unknown = this.commitLog.writeError ?? this.#halted;
    try {
      if (failure === null && this.#indexCatchUp !== null) {
        // A clean stop leaves a complete index: the rest of the catch-up runs now, at the speed
        // recovery once ran it (hundreds of MB of CommitLog a second).
        const c = this.#indexCatchUp;
        this.#log.info(`index: finishing the rebuild of the keys of [${c.at}, ${this.#reputOffset}) before stopping`);
        const step = c.step(Number.MAX_SAFE_INTEGER);
        this.#endIndexCatchUp(step === "more" ? { invalid: "unfinished" } : step);
      }
      if (failure === null) {
        this.commitLog.flushSync();
        for (const cq of this.#allQueues()) cq.flushSync();
        const indexTs = this.#index.flush();
        writeCheckpoint(
          join(this.#o.dir, "checkpoint"),
          {
            commitLogFlushedOffset: this.commitLog.flushedOffset,
            dispatchedOffset: this.#reputOffset,
            indexCheckpointTimestamp: indexTs,
            writtenAt: this.#now(),
          },
          this.#disk,
        );
      }
    } catch (e) {
      failure = e;
    } finally {
      this.#closeFiles();
      for (const resolve of this.#indexCaughtUp.splice(0)) resolve();
      if (failure === null) this.#disk.remove(join(this.#o.dir, "abort"));
      releaseLock(this.#disk, join(this.#o.dir, "lock"));
    }
    if (failure !== null) throw new Error(`message store stopped after a write error (recovery runs at the next start): ${errText(failure)}`);
  }

  #closeFiles(): void {
    this.commitLog.close();
    for (const cq of this.#allQueues()) cq.close();
    this.#index.close();
  }
}

/** One process per store: the lock file holds the owner's pid; a dead owner's lock is taken over. */
/** Opening on a disk with less free than the reserve: delete it, so recovery can write. */
function releaseReserveIfFull(disk: StoreDisk, o: MessageStoreOptions): void {
  const size = o.diskReserveBytes ?? 0;
  const path = join(o.dir, RESERVE_FILE);
  if (size <= 0 || !disk.exists(path)) return;
  const free = disk.freeBytes(o.dir);
  if (free >= size) return;
  disk.unlink(path);
  (o.log ?? scope("store")).warn(
    `the disk of ${o.dir} is full (${mib(free)} MiB free): deleted the ${mib(size)} MiB reserve ${path} so recovery can write; ` +
      "writes stay refused until space is freed",
  );
}

function acquireLock(disk: StoreDisk, path: string): void {
  const held = disk.readFile(path);
  if (held !== null) {
    const pid = Number(new TextDecoder().decode(held).trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid)) {
      throw new Error(`store ${path.replace(/\/lock$/, "")} is in use by process ${pid}`);
    }
  }
  disk.writeFile(path, String(process.pid));
}

function releaseLock(disk: StoreDisk, path: string): void {
  try {
    const held = disk.readFile(path);
    if (held !== null && new TextDecoder().decode(held).trim() === String(process.pid)) disk.unlink(path);
  } catch {
    // Already gone.
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
