/**
 * CommitLog: the one append-only log of every message, in MappedFile segments named by their
 * start offset. Records use RocketMQ's stored layout (./message-record.ts), so a pull can hand
 * the bytes to a client untouched.
 *
 * Invariants:
 *   - a record never spans two segments: a record is written only if at least
 *     BLANK_MARKER_SIZE bytes remain after it; otherwise the rest of the segment gets a BLANK
 *     marker (TOTALSIZE = bytes left, MAGIC = BLANK) and writing continues in the next segment;
 *   - physical offsets are global and dense: maxOffset = last segment start + its write position;
 *   - flushedOffset ≤ maxOffset; everything below flushedOffset survived an fdatasync.
 *
 * Flush modes: ASYNC_FLUSH flushes in the background every `flushIntervalMs` — only segments with
 * at least `flushLeastPages` dirty pages (or full ones), and everything once per
 * `flushThoroughIntervalMs` (RocketMQ's FlushRealTimeService) — so a trickle of small messages
 * does not cost a device flush each tick; SYNC_FLUSH callers
 * await `waitForFlush(offset)`, and all waiters that arrive while one fdatasync runs share the
 * next one (group commit). Queue offsets per topic-queue are assigned here, at append time, so
 * that a record on disk always carries its final queue offset.
 */
import { systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import type { StoreDisk } from "./disk.ts";
import { MappedFileQueue } from "./mapped-file-queue.ts";
import type { MappedFile } from "./mapped-file.ts";
import { assert } from "../common/assert.ts";
import {
  BLANK_MARKER_SIZE,
  decodeRecordAt,
  encodeRecord,
  recordSize,
  writeBlankMarker,
  type DecodedRecord,
  type RecordInput,
} from "../common/message-record.ts";
import type { FlushDiskType } from "../protocol/broker-config.ts";

export interface CommitLogOptions {
  dir: string;
  segmentBytes: number;
  flushDiskType: FlushDiskType;
  flushIntervalMs: number;
  /** ASYNC_FLUSH: a periodic flush skips a segment with fewer dirty 4 KiB pages (default 4, RocketMQ's flushCommitLogLeastPages). */
  flushLeastPages?: number;
  /** ASYNC_FLUSH: at least this often a periodic flush ignores flushLeastPages (default 10 s, flushCommitLogThoroughInterval). */
  flushThoroughIntervalMs?: number;
  /**
   * How appends reach the page cache: "pwrite" (default: records are encoded into an in-memory
   * stage and written with one pwrite() per event-loop turn, see ./mapped-file.ts) or "mmap"
   * (stored straight into the shared mapping: a page fault per first touch of a page, about 10×
   * slower on ext4; kept for comparison in bench/store).
   */
  writeMode?: "mmap" | "pwrite";
  now?: () => number;
  /** Timers and (unless `now` is given) the time; default the system clock. */
  clock?: Clock;
  /** Default: the real disk (node:fs, Bun.mmap). */
  disk?: StoreDisk;
}

/** A record to append: the layout's input plus the topic as a string (for queue offsets). */
export type StoreRecordInput = RecordInput & { topicName: string };

export interface AppendResult {
  physicalOffset: number;
  size: number;
  queueOffset: number;
  storeTimestamp: number;
}

/** The usual size of a segment's write-behind stage (a bigger batch gets a bigger one). */
const STAGE_BYTES = 1024 * 1024;
export const FLUSH_LEAST_PAGES_DEFAULT = 4;
export const FLUSH_THOROUGH_INTERVAL_MS_DEFAULT = 10_000;

export class CommitLogError extends Error {
  override name = "CommitLogError";
}

export class CommitLog {
  readonly #opts: CommitLogOptions;
  readonly #files: MappedFileQueue;
  readonly #now: () => number;
  readonly #clock: Clock;
  /** `${topic}-${queueId}` → next queue offset. */
  readonly #queueOffsets = new Map<string, number>();
  #flushedOffset = 0;
  #flushing: Promise<void> | null = null;
  #waiters: { offset: number; resolve: (ok: boolean) => void; timer: TimerHandle | null }[] = [];
  #flushTimer: TimerHandle | null = null;
  #lastThoroughFlushAt = 0;
  readonly #staged: boolean;
  /** The commit of the current event-loop turn's appends, run as a microtask (one pwrite). */
  #commitRound: { promise: Promise<void>; resolve: () => void } | null = null;
  /** Sticky: once a write or flush failed, every later write is refused (NATS' mb.werr). */
  #writeError: Error | null = null;
  /** End of the last append (or where recovery cut the log): the next record starts at or past it. */
  #appendedEnd = 0;

  constructor(opts: CommitLogOptions) {
    // A copy: reconfigure() changes it, and the caller's object is not ours to change.
    this.#opts = { ...opts };
    const clock = opts.clock ?? systemClock;
    this.#clock = clock;
    this.#now = opts.now ?? (clock === systemClock ? Date.now : () => clock.now());
    this.#files = new MappedFileQueue(opts.dir, opts.segmentBytes, opts.disk);
    this.#lastThoroughFlushAt = this.#now();
    this.#staged = (opts.writeMode ?? "pwrite") === "pwrite";
  }

  /** Maps the segments found on disk (positions are set by `recover`). */
  load(): string[] {
    return this.#files.load();
  }

  /**
   * Both modes flush in the background. SYNC_FLUSH needs it too: only a waiting put asks for a
   * flush, so without the timer a slave (its appends are replicated, nobody waits) or a master
   * taking only WAIT=false sends never made anything durable, and a crash lost whole segments
   * (found by test/sim). RocketMQ's GroupCommitService does the same: flush(0) when no request.
   */
  startFlushService(): void {
    if (!this.#flushTimer) {
      this.#flushTimer = this.#clock.setInterval(() => void this.periodicFlush(), this.#opts.flushIntervalMs);
    }
  }

  /**
   * Runtime change of the ASYNC_FLUSH policy (config reload). A new interval restarts the timer;
   * least pages and the thorough interval are read on every tick anyway.
   */
  reconfigure(patch: Partial<Pick<CommitLogOptions, "flushIntervalMs" | "flushLeastPages" | "flushThoroughIntervalMs">>): void {
    const intervalChanged = patch.flushIntervalMs !== undefined && patch.flushIntervalMs !== this.#opts.flushIntervalMs;
    Object.assign(this.#opts, patch);
    if (intervalChanged && this.#flushTimer) {
      this.#clock.clearInterval(this.#flushTimer);
      this.#flushTimer = null;
      this.startFlushService();
    }
  }

  /** One background tick: SYNC_FLUSH flushes everything; ASYNC_FLUSH least-pages, or thorough once the thorough interval has passed. */
  periodicFlush(): Promise<void> {
    if (this.#opts.flushDiskType === "SYNC_FLUSH") return this.flush(0);
    const now = this.#now();
    let leastPages = this.#opts.flushLeastPages ?? FLUSH_LEAST_PAGES_DEFAULT;
    if (now >= this.#lastThoroughFlushAt + (this.#opts.flushThoroughIntervalMs ?? FLUSH_THOROUGH_INTERVAL_MS_DEFAULT)) {
      this.#lastThoroughFlushAt = now;
      leastPages = 0;
    }
    return this.flush(leastPages);
  }

  get minOffset(): number {
    return this.#files.minOffset;
  }

  get maxOffset(): number {
    return this.#files.maxOffset;
  }

  get flushedOffset(): number {
    return this.#flushedOffset;
  }

  get segmentBytes(): number {
    return this.#opts.segmentBytes;
  }

  get writeError(): Error | null {
    return this.#writeError;
  }

  get segments(): readonly MappedFile[] {
    return this.#files.files;
  }

  nextQueueOffset(topic: string, queueId: number): number {
    return this.#queueOffsets.get(`${topic}-${queueId}`) ?? 0;
  }

  setNextQueueOffset(topic: string, queueId: number, offset: number): void {
    const key = `${topic}-${queueId}`;
    // Recovery sets each counter once, to its queue's end; moving one back would hand out a queue
    // offset a stored record already has (two records with one queue offset).
    assert(offset >= (this.#queueOffsets.get(key) ?? 0), "queue {}: next queue offset moved back from {} to {}", key, this.#queueOffsets.get(key), offset);
    this.#queueOffsets.set(key, offset);
  }

  removeQueueOffsets(topic: string): void {
    for (const k of [...this.#queueOffsets.keys()])
      if (k.startsWith(`${topic}-`) && /^\d+$/.test(k.slice(topic.length + 1))) this.#queueOffsets.delete(k);
  }

  /**
   * Appends records contiguously (a batch is stored as its messages, back to back, in one
   * segment). `assignQueueOffset` false stores queue offset 0 and does not advance the queue
   * (prepared / rolled-back transaction records get no ConsumeQueue entry).
   */
  appendBatch(inputs: readonly StoreRecordInput[], assignQueueOffset: readonly boolean[] | boolean = true): AppendResult[] {
    if (this.#writeError) throw new CommitLogError(`commit log is not writable: ${this.#writeError.message}`);
    let total = 0;
    const sizes = inputs.map((i) => recordSize(i));
    for (const s of sizes) total += s;
    if (total + BLANK_MARKER_SIZE > this.#opts.segmentBytes) {
      throw new CommitLogError(`records of ${total} bytes do not fit in a ${this.#opts.segmentBytes}-byte segment`);
    }
    const staged = this.#staged;
    let file = this.#files.lastWritable(0);
    if (total + BLANK_MARKER_SIZE > file.remaining) {
      // Once per segment: the marker goes out at once, the rest of the file is already zero.
      const remaining = file.remaining;
      if (staged) {
        const r = file.reserve(BLANK_MARKER_SIZE, STAGE_BYTES);
        writeBlankMarker(r.buf, r.at, remaining);
        file.commit();
        file.dropStage();
      } else {
        writeBlankMarker(file.buf, file.wrotePosition, remaining);
      }
      file.wrotePosition = file.fileSize;
      file = this.#files.lastWritable(0);
    }
    const storeTimestamp = this.#now();
    const out: AppendResult[] = [];
    const base = file.wrotePosition;
    // Physical offsets only grow: a write position moved back (a stray unreserve or truncation)
    // would put these records over ones already acknowledged.
    const at = file.fileFromOffset + base;
    assert(at >= this.#appendedEnd, "append at {} is below the end {} of the previous one", at, this.#appendedEnd);
    const r = staged ? file.reserve(total, STAGE_BYTES) : null;
    try {
      const dst = r ? r.buf : file.buf;
      const view = r ? r.view : file.view;
      const start = r ? r.at : base;
      let pos = start;
      for (let i = 0; i < inputs.length; i++) {
        const input = inputs[i]!;
        const assign = typeof assignQueueOffset === "boolean" ? assignQueueOffset : (assignQueueOffset[i] ?? true);
        const key = `${input.topicName}-${input.queueId}`;
        const queueOffset = assign ? (this.#queueOffsets.get(key) ?? 0) : 0;
        const physicalOffset = file.fileFromOffset + base + (pos - start);
        const size = encodeRecord(dst, pos, input, queueOffset, physicalOffset, storeTimestamp, view);
        // The reservation was sized from `sizes`: a record of another size would shift every
        // later record off the PHYSICALOFFSET written into it.
        assert(size === sizes[i], "record {} encoded to {} bytes, {} were reserved", i, size, sizes[i]);
        pos += size;
        if (assign) this.#queueOffsets.set(key, queueOffset + 1);
        out.push({ physicalOffset, size, queueOffset, storeTimestamp });
      }
      assert(pos - start === total, "a batch filled {} of the {} bytes reserved", pos - start, total);
      if (!r) file.wrotePosition = base + total;
      this.#appendedEnd = file.fileFromOffset + base + total;
    } catch (e) {
      if (r) file.unreserve(total);
      this.#writeError = e instanceof Error ? e : new Error(String(e));
      throw e;
    }
    if (r) this.#scheduleCommit();
    return out;
  }

  /**
   * Resolves once everything appended so far is in the file (page cache), or the commit failed
   * (then `writeError` is set). The store answers a send only after this: an acknowledged
   * message survives the broker process being killed.
   */
  whenCommitted(): Promise<void> {
    return this.#commitRound?.promise ?? Promise.resolve();
  }

  #scheduleCommit(): void {
    if (this.#commitRound) return;
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.#commitRound = { promise, resolve };
    // A microtask, not a timer: it runs after every append of this turn (all requests of one
    // socket read land in one pwrite) and before any response of this turn reaches a socket.
    queueMicrotask(() => {
      const round = this.#commitRound!;
      this.#commitRound = null;
      try {
        this.commit();
      } catch (e) {
        this.#writeError ??= e instanceof Error ? e : new Error(String(e));
      }
      round.resolve();
    });
  }

  /** Writes every staged append to its file (only the last segment or two can have any). */
  commit(): void {
    const files = this.#files.files;
    for (let i = Math.max(0, files.length - 2); i < files.length; i++) files[i]!.commit();
  }

  append(input: StoreRecordInput, assignQueueOffset = true): AppendResult {
    return this.appendBatch([input], assignQueueOffset)[0]!;
  }

  /**
   * Replication (slave side): writes bytes copied from the master's CommitLog at the same
   * offset. `offset` must be this log's end (or anything, for an empty log, which then starts
   * there); the bytes must not cross a segment end (the master never sends such a chunk).
   */
  appendRaw(offset: number, data: Uint8Array): { invalid: string } | null {
    if (this.#writeError) return { invalid: `commit log is not writable: ${this.#writeError.message}` };
    const empty = this.#files.files.length === 0;
    if (!empty && offset !== this.maxOffset)
      return { invalid: `replicated data at ${offset} does not continue this log (it ends at ${this.maxOffset})` };
    const segStart = offset - (offset % this.#opts.segmentBytes);
    if (offset + data.length > segStart + this.#opts.segmentBytes) return { invalid: "replicated chunk crosses a segment end" };
    const file = this.#files.lastWritable(offset);
    if (empty) file.wrotePosition = file.flushedPosition = offset - segStart;
    this.#appendedEnd = offset + data.length;
    try {
      if (this.#staged) {
        const r = file.reserve(data.length, STAGE_BYTES);
        r.buf.set(data, r.at);
        this.#scheduleCommit();
      } else {
        file.buf.set(data, file.wrotePosition);
        file.wrotePosition += data.length;
      }
    } catch (e) {
      this.#writeError = e instanceof Error ? e : new Error(String(e));
      return { invalid: this.#writeError.message };
    }
    // Checked to continue the log and stay in one segment (above): the bytes end where the log now ends.
    assert(
      file.fileFromOffset + file.wrotePosition === this.#appendedEnd,
      "replicated bytes at {} end at {}, the segment at {}",
      offset,
      this.#appendedEnd,
      file.fileFromOffset + file.wrotePosition,
    );
    return null;
  }

  /**
   * Raw bytes at [offset, offset + size) — a view into the mapping, valid until the segment is
   * deleted. Undefined if the range is not (or no longer) stored or crosses a segment end.
   */
  read(offset: number, size: number): Uint8Array | undefined {
    const f = this.#files.findByOffset(offset);
    if (!f) return undefined;
    const pos = offset - f.fileFromOffset;
    if (pos + size > f.wrotePosition) return undefined;
    return f.buf.subarray(pos, pos + size);
  }

  /** Decodes the record starting at `offset`. */
  readRecord(offset: number, checkCrc = false): DecodedRecord | undefined {
    const f = this.#files.findByOffset(offset);
    if (!f) return undefined;
    const pos = offset - f.fileFromOffset;
    if (pos >= f.wrotePosition) return undefined;
    const r = decodeRecordAt(f.buf, pos, { checkCrc, readBody: true });
    return "totalSize" in r && pos + r.totalSize <= f.wrotePosition ? r : undefined;
  }

  /** The segment holding `offset` (for HA transfer and recovery scans). */
  segmentFor(offset: number): MappedFile | undefined {
    return this.#files.findByOffset(offset);
  }

  /** Resolves true once everything below `offset` is durable, false after `timeoutMs`. */
  waitForFlush(offset: number, timeoutMs: number): Promise<boolean> {
    if (offset <= this.#flushedOffset) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = { offset, resolve, timer: null as TimerHandle | null };
      w.timer = this.#clock.setTimeout(() => {
        this.#waiters = this.#waiters.filter((x) => x !== w);
        resolve(false);
      }, timeoutMs);
      this.#waiters.push(w);
      void this.flush();
    });
  }

  /**
   * One group-commit round: fdatasync every dirty segment (on the thread pool) — with `leastPages`
   * > 0 only those MappedFile.isAbleToFlush allows — then release the waiters it covered. Calls
   * made while a round runs are served by the next round (a waiter left over forces a full one).
   */
  flush(leastPages = 0): Promise<void> {
    if (this.#flushing) return this.#flushing;
    const target = this.maxOffset;
    if (target <= this.#flushedOffset) return Promise.resolve();
    const due = this.#files.files.filter((f) => f.isAbleToFlush(leastPages));
    if (due.length === 0) {
      // Nothing to sync (all skipped by least pages, or already durable): settle now. Not through
      // the async round below, which would finish before #flushing is even assigned.
      this.#settle(target, false);
      return Promise.resolve();
    }
    this.#flushing = (async () => {
      try {
        for (const f of due) await f.flushAsync();
      } catch (e) {
        this.#writeError ??= e instanceof Error ? e : new Error(String(e));
      } finally {
        this.#flushing = null;
      }
      this.#settle(target, true);
    })();
    return this.#flushing;
  }

  /**
   * After a round up to `target`: advance the durable end and release the waiters it covers.
   * `again`: waiters that arrived during an async round get a full round of their own (a waiter
   * calls flush() itself, so a round that synced nothing need not).
   */
  #settle(target: number, again: boolean): void {
    // A skipped segment (too few dirty pages) keeps the durable end where it starts lagging.
    const durable = Math.min(target, this.#files.flushedOffset);
    if (durable > this.#flushedOffset) this.#flushedOffset = durable;
    // Durable means written first: a round that a cut overtook must not leave the durable end past
    // the log's (the checkpoint would claim bytes that are not there).
    assert(this.#flushedOffset <= this.maxOffset, "durable end {} past the log's end {}", this.#flushedOffset, this.maxOffset);
    const done = this.#waiters.filter((w) => w.offset <= this.#flushedOffset);
    this.#waiters = this.#waiters.filter((w) => w.offset > this.#flushedOffset);
    for (const w of done) {
      if (w.timer) this.#clock.clearTimeout(w.timer);
      w.resolve(true);
    }
    if (again && this.#waiters.length > 0 && !this.#writeError) void this.flush();
  }

  /** Blocking flush of everything (shutdown). */
  flushSync(): void {
    this.#files.flushSync();
    this.#flushedOffset = this.maxOffset;
  }

  /**
   * Sets the write position after recovery: everything at or past `offset` is dropped (later
   * segments deleted, the tail of the last one zeroed) and the queue offset counters are cleared. Every segment before the last counts
   * as full; everything kept counts as flushed. After a crash that is only true once synced: a
   * killed process leaves its unflushed writes in the page cache, where recovery reads them, and
   * a power cut after the restart would still lose them — below records acknowledged since, and
   * below a checkpoint that claims them durable. So every segment holding bytes at or past
   * `unsyncedFrom` (what the last checkpoint saw flushed) is synced here, before anything is served.
   */
  truncateTo(offset: number, unsyncedFrom = Number.MAX_SAFE_INTEGER): void {
    this.#files.truncateDirty(offset);
    const files = this.#files.files;
    for (let i = 0; i < files.length - 1; i++) files[i]!.wrotePosition = files[i]!.flushedPosition = files[i]!.fileSize;
    const last = files.at(-1);
    if (last) last.flushedPosition = last.wrotePosition;
    for (const f of files) {
      if (f.fileFromOffset + f.wrotePosition <= unsyncedFrom) continue;
      f.flushedPosition = Math.max(0, unsyncedFrom - f.fileFromOffset);
      f.flushSync();
    }
    if (files.length === 0 && offset > 0) {
      // Everything was cut: the next segment starts where the data ended.
      this.#files.lastWritable(offset);
    }
    this.#flushedOffset = this.maxOffset;
    this.#appendedEnd = this.maxOffset;
    // Records past the cut took their queue offsets with them: the caller sets each counter
    // again from its queue (the only time a counter may move back).
    this.#queueOffsets.clear();
  }

  /** Unmaps idle segments except the last two (the one being written and its predecessor). */
  releaseCold(): number {
    return this.#files.releaseCold(2);
  }

  /** Deletes whole segments from the front while `canDelete` holds (never the last). */
  deleteSegments(canDelete: (f: MappedFile) => boolean, maxFiles?: number): number {
    return this.#files.deleteFromFront(canDelete, maxFiles);
  }

  close(): void {
    if (this.#flushTimer) this.#clock.clearInterval(this.#flushTimer);
    this.#flushTimer = null;
    for (const w of this.#waiters.splice(0)) {
      if (w.timer) this.#clock.clearTimeout(w.timer);
      w.resolve(false);
    }
    this.#files.close();
  }
}
