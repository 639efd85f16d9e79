/**
 * MessageStore: the storage engine behind one broker — the CommitLog, a ConsumeQueue per
 * topic/queue, the IndexFile set, the checkpoint, recovery, flushing and retention — behind the
 * small facade the broker uses (RocketMQ's DefaultMessageStore, without the 100 methods). The
 * facade opens, wires and stops the parts, each in a file of its own; replication and the
 * arrival listener are given at open (MessageStoreOptions), never set from outside afterwards:
 *
 *   ./store-recovery.ts     the recovery run at open
 *   ./message-put.ts        the put path (admission, append, dispatch, settle)
 *   ./dispatch.ts           ConsumeQueue units and index entries for every stored record
 *   ./store-reads.ts        pulls, offsets, times, lookups
 *   ./write-admission.ts    whether a write is taken now; halting
 *   ./disk-guard.ts         the disk floor and the reserve; ./retention.ts: expired files
 *   ./log-cut.ts            cutting the log's tail (recovery, a replica)
 *   ./index-rebuild.ts      the index's catch-up after a crash
 *   ./consume-queue-table.ts, ./corrupt-ranges.ts, ./store-lock.ts
 *
 * Directory layout (under `dir`, RocketMQ's):
 *   commitlog/<20-digit offset>                 CommitLog segments
 *   consumequeue/<topic>/<queueId>/<20-digit>   ConsumeQueue files
 *   index/<yyyyMMddHHmmssSSS>                   IndexFiles
 *   checkpoint                                   ./checkpoint.ts (atomic, with CRC)
 *   corrupt.json                                 ./corrupt-ranges.ts
 *   abort                                        present while running: its presence at start = crash
 *   lock                                         pid of the process using this store
 */
import { totalmem } from "node:os";
import { join } from "node:path";
import { assert } from "../common/assert.ts";
import { systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import { scope, type Logger } from "../common/log.ts";
import type { DecodedRecord } from "../common/message-record.ts";
import { writeCheckpoint, writeCheckpointAsync, type Checkpoint } from "./checkpoint.ts";
import { CommitLog } from "./commit-log.ts";
import { ConsumeQueueTable } from "./consume-queue-table.ts";
import { CorruptRanges } from "./corrupt-ranges.ts";
import { Dispatcher } from "./dispatch.ts";
import { DiskGuard, releaseReserveIfFull } from "./disk-guard.ts";
import { nodeDisk, type StoreDisk } from "./disk.ts";
import { IndexRebuild } from "./index-rebuild.ts";
import { IndexService } from "./index-service.ts";
import { truncateReplicaTail, type LogCutParts } from "./log-cut.ts";
import { MessagePut } from "./message-put.ts";
import type { CorruptRange } from "./recovery.ts";
import { cleanExpiredFiles } from "./retention.ts";
import { acquireLock, releaseLock } from "./store-lock.ts";
import { MessageReader } from "./store-reads.ts";
import { recoverStore } from "./store-recovery.ts";
import {
  FLUSH_CONSUME_QUEUE_LEAST_PAGES_DEFAULT,
  FLUSH_CONSUME_QUEUE_THOROUGH_INTERVAL_MS_DEFAULT,
  type GetMessageResult,
  type MessageStoreOptions,
  type PutMessageRequest,
  type PutMessageResult,
  type RecoveryReport,
  type StoreRuntimeOptions,
  type TagCodeFilter,
} from "./store-types.ts";
import { WriteAdmission } from "./write-admission.ts";

export * from "./store-types.ts";
export { RESERVE_FILE } from "./disk-guard.ts";

export class MessageStore {
  readonly #o: MessageStoreOptions;
  readonly #now: () => number;
  readonly #clock: Clock;
  readonly #disk: StoreDisk;
  readonly #log: Logger;
  readonly commitLog: CommitLog;
  readonly #index: IndexService;
  readonly #queues: ConsumeQueueTable;
  readonly #corrupt: CorruptRanges;
  readonly #dispatcher: Dispatcher;
  readonly #rebuild: IndexRebuild;
  readonly #guard: DiskGuard;
  readonly #admission: WriteAdmission;
  readonly #put: MessagePut;
  readonly #reader: MessageReader;
  #timers: TimerHandle[] = [];
  /** The retention check's timer (also in #timers), restarted when its interval changes. */
  #cleanTimer: TimerHandle | null = null;
  #checkpointing: Promise<void> | null = null;
  #lastThoroughFlushAt = 0;
  /** The last checkpoint written; an unchanged one is not written again. */
  #lastCheckpoint: Checkpoint | null = null;
  recovery: RecoveryReport | null = null;

  private constructor(o: MessageStoreOptions) {
    // A copy: reconfigure() changes it, and the caller's object is not ours to change.
    const opts = (this.#o = { ...o });
    const clock = (this.#clock = o.clock ?? systemClock);
    const disk = (this.#disk = o.disk ?? nodeDisk);
    this.#now = o.now ?? (clock === systemClock ? Date.now : () => clock.now());
    const log = (this.#log = o.log ?? scope("store"));
    const commitLog = (this.commitLog = newCommitLog(o, this.#now, clock, disk));
    const index = (this.#index = new IndexService({ dir: join(o.dir, "index"), slotNum: o.indexSlotNum, indexNum: o.indexNum, now: this.#now, disk }));
    const queues = (this.#queues = new ConsumeQueueTable(o.dir, o.consumeQueueUnitsPerFile, disk));
    const corrupt = (this.#corrupt = new CorruptRanges(o.dir, disk));
    const rebuild = (this.#rebuild = new IndexRebuild({
      clock,
      log,
      source: {
        segmentFor: (offset) => commitLog.segmentFor(offset),
        minOffset: () => commitLog.minOffset,
        dispatchedEnd: () => this.#dispatcher.reputOffset,
        damageAt: (offset) => corrupt.at(offset),
        index: (rec) => index.buildIndex(rec),
      },
      running: () => !this.#admission.stopped && this.#admission.halted === null,
      halt: (e) => this.#admission.halt(e, "index rebuild"),
    }));
    const dispatcher = (this.#dispatcher = new Dispatcher({ commitLog, queues, index, corrupt, options: opts, indexing: () => !rebuild.active, log }));
    const guard = (this.#guard = new DiskGuard(opts, disk, this.#now, log));
    const admission = (this.#admission = new WriteAdmission(commitLog, guard, o.replication, o.readOnly === true, log));
    this.#put = new MessagePut({ options: opts, commitLog, dispatcher, admission, guard });
    this.#reader = new MessageReader({ commitLog, queues, corrupt, index, options: opts, halt: (e) => admission.halt(e, "pull") });
    this.#reader.memoryHotBytes = memoryHotBytes(o);
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
    this.#reader.memoryHotBytes = memoryHotBytes(o);
    if (deleteIntervalChanged && this.#cleanTimer && !this.#admission.stopped) {
      this.#clock.clearInterval(this.#cleanTimer);
      this.#cleanTimer = this.#clock.setInterval(() => this.cleanExpiredFiles(false), o.deleteCommitLogFilesIntervalMs);
      this.#timers.push(this.#cleanTimer);
    }
    if (!this.#admission.stopped) this.#guard.check();
  }

  /**
   * Opens (creating if needed) the store at `o.dir`, recovers it, and starts its background
   * services. Throws if another live process holds the store's lock.
   */
  static open(o: MessageStoreOptions): MessageStore {
    const disk = o.disk ?? nodeDisk;
    disk.mkdirs(o.dir);
    acquireLock(disk, join(o.dir, "lock"));
    releaseReserveIfFull(disk, o, o.log ?? scope("store"));
    const s = new MessageStore(o);
    try {
      s.recovery = recoverStore({ ...s.#cutParts(), dir: o.dir, disk, corrupt: s.#corrupt, checkCrcOnRecover: o.checkCrcOnRecover });
      disk.writeFile(join(o.dir, "abort"), String(process.pid));
      s.#startServices();
    } catch (e) {
      s.#closeFiles();
      releaseLock(disk, join(o.dir, "lock"));
      throw e;
    }
    return s;
  }

  #cutParts(): LogCutParts {
    return { commitLog: this.commitLog, queues: this.#queues, index: this.#index, rebuild: this.#rebuild, dispatcher: this.#dispatcher };
  }

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
    this.#guard.start(clock, () => !this.#admission.stopped);
    this.#rebuild.start();
  }

  /** After a crash: how far the index's catch-up has come (./index-catch-up.ts); undefined when the index is complete. */
  get indexCatchUp(): { from: number; at: number; end: number } | undefined {
    return this.#rebuild.progress;
  }

  /** Resolves once every dispatched record is indexed (at once unless the index is catching up after a crash). */
  whenIndexed(): Promise<void> {
    return this.#rebuild.whenIndexed(this.#admission.stopped);
  }

  /**
   * One tick of RocketMQ's FlushConsumeQueueService, then the checkpoint. A ConsumeQueue file is
   * flushed only once it has flushConsumeQueueLeastPages dirty pages (or is full), and every one
   * once per flushConsumeQueueThoroughIntervalMs (and at shutdown): with 10,000 queues each taking
   * a unit now and then, flushing every dirty file each second cost one device flush per message.
   */
  checkpoint(thorough?: boolean): Promise<void> {
    if (this.#checkpointing || this.#admission.stopped) return this.#checkpointing ?? Promise.resolve();
    const now = this.#now();
    const o = this.#o;
    if (thorough === undefined) {
      thorough = now >= this.#lastThoroughFlushAt + (o.flushConsumeQueueThoroughIntervalMs ?? FLUSH_CONSUME_QUEUE_THOROUGH_INTERVAL_MS_DEFAULT);
    }
    if (thorough) this.#lastThoroughFlushAt = now;
    const leastPages = thorough ? 0 : (o.flushConsumeQueueLeastPages ?? FLUSH_CONSUME_QUEUE_LEAST_PAGES_DEFAULT);
    this.#checkpointing = this.#flushAndCheckpoint(leastPages, this.#dispatcher.reputOffset, now).finally(() => {
      this.#checkpointing = null;
    });
    return this.#checkpointing;
  }

  /**
   * The checkpoint claims only what is durable: dispatchedOffset is at most the CommitLog's
   * flushed offset, and at most the lowest CommitLog offset whose unit is still unflushed in some
   * queue (units of one queue are in CommitLog order, so every record below it has a durable
   * unit), or everything dispatched when none is. Only the queues written since their last full
   * flush are looked at, not all of them.
   */
  async #flushAndCheckpoint(leastPages: number, dispatched: number, now: number): Promise<void> {
    const unflushed = this.#queues.unflushed;
    const due: Promise<void>[] = [];
    for (const q of unflushed) if (q.isAbleToFlush(leastPages)) due.push(q.flushAsync(leastPages));
    await Promise.all(due);
    const indexTs = await this.#index.flushAsync();
    if (this.#admission.stopped) return;
    // Never past the CommitLog's durable end: recovery verifies only from the segment holding
    // dispatchedOffset on, so a claim past unflushed CommitLog bytes would let a torn record
    // in an earlier segment through unverified (found by test/sim).
    let durable = Math.min(dispatched, this.commitLog.flushedOffset);
    for (const q of unflushed) {
      const phy = q.firstUnflushedPhyOffset();
      if (phy === undefined) unflushed.delete(q);
      else if (phy < durable) durable = phy;
    }
    const flushed = this.commitLog.flushedOffset;
    const cp: Checkpoint = { commitLogFlushedOffset: flushed, dispatchedOffset: durable, indexCheckpointTimestamp: indexTs, writtenAt: now };
    const last = this.#lastCheckpoint;
    if (
      last &&
      last.commitLogFlushedOffset === cp.commitLogFlushedOffset &&
      last.dispatchedOffset === cp.dispatchedOffset &&
      last.indexCheckpointTimestamp === cp.indexCheckpointTimestamp
    )
      return;
    // Checked before the write, as recovery trusts it after the read: never a claim past the log.
    assert(flushed <= this.commitLog.maxOffset, "checkpoint claims {} flushed past the log's end {}", flushed, this.commitLog.maxOffset);
    await writeCheckpointAsync(join(this.#o.dir, "checkpoint"), cp, this.#disk);
    this.#lastCheckpoint = cp;
  }

  // ---------------------------------------------------------------- put (./message-put.ts)

  putMessage(req: PutMessageRequest): Promise<PutMessageResult> {
    return this.#put.putMessages([req]);
  }

  /**
   * Stores messages contiguously (a batch); all or nothing. The arrival listener hears of each
   * message that reached a ConsumeQueue when the put settles.
   */
  putMessages(reqs: readonly PutMessageRequest[]): Promise<PutMessageResult> {
    return this.#put.putMessages(reqs);
  }

  // ---------------------------------------------------------------- replication

  /**
   * A replica whose log went past the point it shares with its master cuts it there
   * (./log-cut.ts). Only a read-only store (a replica) is cut.
   */
  truncateTail(offset: number, keep = true): { records: number; bytes: number; file: string | null } {
    assert(this.#admission.readOnly, "only a replica's store is truncated (the store takes writes)");
    return truncateReplicaTail({ ...this.#cutParts(), dir: this.#o.dir, disk: this.#disk, log: this.#log }, offset, keep);
  }

  /**
   * Automatic failover: a slave promoted to master takes writes from now on; a master stepping
   * down stops. Promoted, the replicated records are dispatched first, and each queue's next
   * offset (the put path's counter) continues from its ConsumeQueue, which replication filled.
   */
  setReadOnly(readOnly: boolean): void {
    if (!readOnly && this.#admission.readOnly) {
      this.#dispatcher.reput();
      for (const cq of this.#queues.all()) this.commitLog.setNextQueueOffset(cq.topic, cq.queueId, cq.maxOffset);
    }
    this.#admission.readOnly = readOnly;
  }

  /** Why the write path halted (./write-admission.ts), or null while it takes writes. */
  get halted(): string | null {
    return this.#admission.halted?.message ?? null;
  }

  /**
   * Replication (slave): stores bytes copied from the master's CommitLog at the same offset,
   * then dispatches every record they complete. Returns a reason when the bytes do not continue
   * this store's log (the caller reconnects and resumes from maxPhyOffset).
   */
  appendReplicated(offset: number, data: Uint8Array, damaged?: string): { invalid: string } | null {
    const refused = this.#admission.replicaRefusal();
    if (refused) return { invalid: refused };
    const wasEmpty = this.commitLog.segments.length === 0;
    const bad = this.commitLog.appendRaw(offset, data);
    if (bad) return bad;
    const dispatcher = this.#dispatcher;
    if (wasEmpty) dispatcher.reputOffset = offset;
    dispatcher.replicating = true;
    try {
      if (damaged !== undefined) this.#replicatedDamage(offset, offset + data.length, damaged);
      dispatcher.reput();
    } catch (e) {
      // As on the put path: bytes stored but not dispatched (or a bug) stop the writes.
      this.#admission.halt(e, "replicated dispatch");
      return { invalid: this.#admission.replicaRefusal() ?? "message store halted" };
    } finally {
      dispatcher.replicating = false;
    }
    return null;
  }

  /**
   * Bytes of a range the master's own recovery found damaged (../ha/record-stream.ts): stored as
   * they are, so both logs stay byte-for-byte equal, but recorded like damage this store found
   * itself: never dispatched, never served.
   */
  #replicatedDamage(from: number, to: number, reason: string): void {
    this.#dispatcher.reput(); // whole records before the range (there is never a partial one: see RecordStream)
    if (this.#dispatcher.reputOffset === from) this.#dispatcher.reputOffset = to;
    this.#corrupt.appendStreamed(from, to, reason);
  }

  /** Dispatches records written to the CommitLog but not yet indexed (replicated bytes). */
  reput(): number {
    return this.#dispatcher.reput();
  }

  // ---------------------------------------------------------------- get (./store-reads.ts)

  /**
   * Reads up to `maxMsgNums` messages of one queue from `offset`, as stored bytes. Status and
   * nextBeginOffset follow RocketMQ's DefaultMessageStore.getMessage (docs/PROTOCOL.md §3.5).
   * `recordFilter`: a second stage on the stored record (RocketMQ's isMatchedByCommitLog: SQL92
   * on properties).
   */
  getMessage(
    topic: string,
    queueId: number,
    offset: number,
    maxMsgNums: number,
    filter?: TagCodeFilter,
    recordFilter?: (record: Uint8Array) => boolean,
  ): GetMessageResult {
    return this.#reader.getMessage(topic, queueId, offset, maxMsgNums, filter, recordFilter);
  }

  getMaxOffsetInQueue(topic: string, queueId: number): number {
    return this.#reader.getMaxOffsetInQueue(topic, queueId);
  }

  getMinOffsetInQueue(topic: string, queueId: number): number {
    return this.#reader.getMinOffsetInQueue(topic, queueId);
  }

  /** CommitLog offset of the message at `cqOffset`, or -1. */
  getCommitLogOffsetInQueue(topic: string, queueId: number, cqOffset: number): number {
    return this.#reader.getCommitLogOffsetInQueue(topic, queueId, cqOffset);
  }

  /** The first queue offset whose message was stored at or after `timestamp` (maxOffset if all are older; 0 for an unknown queue). */
  getOffsetInQueueByTime(topic: string, queueId: number, timestamp: number): number {
    return this.#reader.getOffsetInQueueByTime(topic, queueId, timestamp);
  }

  /** Store time of the first message still in the queue, or -1. */
  getEarliestMessageTime(topic: string, queueId: number): number {
    return this.#reader.getEarliestMessageTime(topic, queueId);
  }

  /** Store time of the oldest message in the whole CommitLog, or -1. */
  getEarliestMessageTimeOverall(): number {
    return this.#reader.getEarliestMessageTimeOverall();
  }

  /** The stored record at a CommitLog offset (the offset message id), raw bytes. */
  selectOneMessageByOffset(phyOffset: number): Uint8Array | undefined {
    return this.#reader.selectOneMessageByOffset(phyOffset);
  }

  lookMessageByOffset(phyOffset: number): DecodedRecord | undefined {
    return this.#reader.lookMessageByOffset(phyOffset);
  }

  /** Messages of `topic` whose KEYS contain `key` or whose UNIQ_KEY is `key`, newest first. */
  queryMessage(
    topic: string,
    key: string,
    maxNum: number,
    begin: number,
    end: number,
  ): { messages: Uint8Array[]; indexLastUpdateTimestamp: number; indexLastUpdatePhyoffset: number } {
    return this.#reader.queryMessage(topic, key, maxNum, begin, end);
  }

  /** Topics with at least one ConsumeQueue on disk, with their queue ids. */
  queues(): Map<string, number[]> {
    return this.#queues.queueIds();
  }

  /** Drops the ConsumeQueues of deleted topics (their CommitLog bytes expire with retention). */
  deleteTopics(topics: Iterable<string>): void {
    for (const topic of topics) if (this.#queues.deleteTopic(topic)) this.commitLog.removeQueueOffsets(topic);
  }

  /**
   * Keeps RSS independent of the stored size: segments and ConsumeQueue files that nobody used
   * for a while are unmapped (their pages stay in the kernel's page cache while memory allows).
   * Collection is forced once something was released, because mapped bytes are invisible to the
   * garbage collector's heuristics and would otherwise linger.
   */
  releaseColdMappings(): number {
    let n = this.commitLog.releaseCold();
    for (const cq of this.#queues.all()) n += cq.releaseCold();
    if (n > 0) Bun.gc(true);
    return n;
  }

  // ---------------------------------------------------------------- retention (./retention.ts, ./disk-guard.ts)

  /** Fraction of the store's filesystem in use (0..1). */
  diskUsageRatio(): number {
    return this.#guard.usageRatio();
  }

  /** One retention pass (`force`: as if the hour were one of deleteWhen); the segments deleted. */
  cleanExpiredFiles(force: boolean): number {
    if (this.#admission.stopped) return 0;
    const parts = { commitLog: this.commitLog, queues: this.#queues, index: this.#index, guard: this.#guard, disk: this.#disk, options: this.#o };
    return cleanExpiredFiles(parts, this.#now(), force);
  }

  get isDiskFull(): boolean {
    return this.#guard.isFull;
  }

  // ---------------------------------------------------------------- status and shutdown

  get maxPhyOffset(): number {
    return this.commitLog.maxOffset;
  }

  get minPhyOffset(): number {
    return this.commitLog.minOffset;
  }

  get dispatchedOffset(): number {
    return this.#dispatcher.reputOffset;
  }

  /** Below this every record is in its ConsumeQueue and the index: dispatchedOffset, or less while the index catches up. */
  get indexedOffset(): number {
    return this.#rebuild.progress?.at ?? this.#dispatcher.reputOffset;
  }

  /** ConsumeQueue units skipped by getMessage because the bytes they point at are not their record (torn units). */
  get unitsNotMatchingRecord(): number {
    return this.#reader.unitsNotMatchingRecord;
  }

  /** Units replaced by a later record with the same queue offset, found in CommitLog bytes (./dispatch.ts). */
  get unitsReplaced(): number {
    return this.#dispatcher.unitsReplaced;
  }

  /** Damaged CommitLog ranges that recovery found and excluded from reads. */
  get corruptRanges(): readonly CorruptRange[] {
    return this.#corrupt.list;
  }

  /** ConsumeQueues holding units not yet flushed (they wait for least pages or the thorough tick). */
  get unflushedConsumeQueues(): number {
    return this.#queues.unflushed.size;
  }

  /**
   * Clean stop: flush everything, write the checkpoint, remove the abort marker, unlock. After a
   * write error (or one while flushing here) the stop is not clean: the files are still closed
   * and the lock released, but the abort marker stays (the next start runs recovery) and the
   * error is thrown to the caller.
   */
  async shutdown(): Promise<void> {
    if (this.#admission.stopped) return;
    for (const t of this.#timers) this.#clock.clearInterval(t);
    this.#timers = [];
    this.#guard.stop(this.#clock);
    this.#rebuild.stop();
    await this.#checkpointing;
    this.#admission.stopped = true;
    let failure: unknown = this.commitLog.writeError ?? this.#admission.halted;
    try {
      if (failure === null) this.#flushAll();
    } catch (e) {
      failure = e;
    } finally {
      this.#closeFiles();
      this.#rebuild.release();
      if (failure === null) this.#disk.remove(join(this.#o.dir, "abort"));
      releaseLock(this.#disk, join(this.#o.dir, "lock"));
    }
    if (failure !== null) throw new Error(`message store stopped after a write error (recovery runs at the next start): ${errText(failure)}`);
  }

  /** The clean stop's writes: a complete index (the catch-up finished now), every file flushed, the checkpoint. */
  #flushAll(): void {
    this.#rebuild.finish();
    this.commitLog.flushSync();
    for (const cq of this.#queues.all()) cq.flushSync();
    const indexTs = this.#index.flush();
    const cp: Checkpoint = {
      commitLogFlushedOffset: this.commitLog.flushedOffset,
      dispatchedOffset: this.#dispatcher.reputOffset,
      indexCheckpointTimestamp: indexTs,
      writtenAt: this.#now(),
    };
    writeCheckpoint(join(this.#o.dir, "checkpoint"), cp, this.#disk);
  }

  #closeFiles(): void {
    this.commitLog.close();
    this.#queues.close();
    this.#index.close();
  }
}

function newCommitLog(o: MessageStoreOptions, now: () => number, clock: Clock, disk: StoreDisk): CommitLog {
  return new CommitLog({
    dir: join(o.dir, "commitlog"),
    segmentBytes: o.segmentBytes,
    flushDiskType: o.flushDiskType,
    flushIntervalMs: o.flushIntervalMs,
    ...(o.flushCommitLogLeastPages !== undefined ? { flushLeastPages: o.flushCommitLogLeastPages } : {}),
    ...(o.flushCommitLogThoroughIntervalMs !== undefined ? { flushThoroughIntervalMs: o.flushCommitLogThoroughIntervalMs } : {}),
    now,
    clock,
    disk,
  });
}

/** How far behind the CommitLog tail data still counts as in memory (bytes). */
function memoryHotBytes(o: Pick<MessageStoreOptions, "accessMessageInMemoryMaxBytes" | "accessMessageInMemoryMaxRatio">): number {
  const hotBytes = o.accessMessageInMemoryMaxBytes ?? 0;
  return hotBytes > 0 ? hotBytes : (totalmem() * o.accessMessageInMemoryMaxRatio) / 100;
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
