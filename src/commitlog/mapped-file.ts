/**
 * One segment file of a log (CommitLog or ConsumeQueue), mapped with `Bun.mmap` (shared), so
 * appends are memory copies into the page cache and reads are views, not copies.
 *
 *   file name  = 20-digit, zero-padded global offset of the file's first byte
 *   file size  = fixed per log (created full size, sparse: unwritten bytes read as zero)
 *   [0, flushedPosition)   durable (fdatasync returned after these bytes were written)
 *   [0, wrotePosition)     written, visible to readers
 *   [wrotePosition, size)  zero
 *
 * Write-behind staging (the CommitLog's appends): bytes [wrotePosition − stagedBytes,
 * wrotePosition) may still sit in an in-memory stage instead of the file. `commit()` writes them
 * with one pwrite(); every reader path (`buf`, `view`, the flushes, close) commits first, so a
 * reader can never see a hole. Why not store through the mapping: on ext4 each first store to a
 * page of a shared mapping takes a page fault plus page_mkwrite (block allocation, journal),
 * measured here at ~4 µs per 1 KiB message (≈ 230 MiB/s); staging and one pwrite per batch of
 * appends runs at ≈ 2.3 GiB/s on the same file (bench/store). Reads still go through the mapping:
 * write() and the mapping share the page cache.
 *
 * IO goes through a `SegmentFile` of the store's `StoreDisk` (./disk.ts): node:fs and Bun.mmap in
 * production, an in-memory disk in test/sim. The append path calls it once per commit.
 *
 * Invariants: flushedPosition ≤ wrotePosition ≤ fileSize; stagedBytes ≤ wrotePosition −
 * flushedPosition. The file is never truncated while mapped (Bun crashes on access past a
 * shrunk mapping); recovery zeroes a torn tail instead.
 *
 * Least-pages flushing (RocketMQ's MappedFile.isAbleToFlush): a periodic flush may pass
 * `leastPages` > 0 and then skips a file that has fewer than that many 4 KiB pages dirty, unless
 * the file is full (it will never be written again, so waiting gains nothing). Each fdatasync is
 * a device flush, so with thousands of queues a 20-byte ConsumeQueue unit must not cost one.
 */
import { basename } from "node:path";
import { assert } from "../common/assert.ts";
import { nodeDisk, type SegmentFile, type StoreDisk } from "./disk.ts";

export const FILE_NAME_DIGITS = 20;
/** The page size the least-pages rule counts in (RocketMQ's OS_PAGE_SIZE). */
export const OS_PAGE_BYTES = 4096;

const EMPTY = new Uint8Array(0);
const EMPTY_VIEW = new DataView(EMPTY.buffer);

export function offsetToFileName(offset: number): string {
  return String(offset).padStart(FILE_NAME_DIGITS, "0");
}

/** The start offset encoded in a segment file name, or null if the name is not one. */
export function fileNameToOffset(name: string): number | null {
  if (!/^\d{20}$/.test(name)) return null;
  const n = Number(name);
  return Number.isSafeInteger(n) ? n : null;
}

/**
 * A segment whose size is not the configured one: the store was created with other settings
 * (commitLogSegmentBytes, consumeQueueUnitsPerFile). Thrown, not reported: loading around it
 * would hide the data in it and in every later file, and the next roll would collide with it.
 */
export class SegmentSizeError extends Error {
  override name = "SegmentSizeError";
  constructor(
    readonly path: string,
    readonly actualBytes: number,
    readonly configuredBytes: number,
  ) {
    super(`${path} is ${actualBytes} bytes, but the configured segment size is ${configuredBytes}`);
  }
}

export class MappedFile {
  readonly path: string;
  readonly fileFromOffset: number;
  readonly fileSize: number;
  wrotePosition = 0;
  flushedPosition = 0;
  readonly #file: SegmentFile;
  readonly #disk: StoreDisk;
  #closed = false;
  #buf: Uint8Array | null = null;
  #view: DataView | null = null;
  /** Write-behind stage: its first `#stagedBytes` bytes belong at wrotePosition − #stagedBytes. */
  #stage: Uint8Array | null = null;
  #stageView: DataView | null = null;
  #stagedBytes = 0;
  /** Cuts so far (truncateTo): a flush that started before a cut cannot vouch for bytes after it. */
  #cuts = 0;
  /**
   * Set on every use of the mapping; the release sweep clears it and unmaps a file found
   * untouched on two sweeps in a row (a flag, not a clock read: this is on the hot path).
   */
  touched = true;

  private constructor(path: string, file: SegmentFile, fileSize: number, disk: StoreDisk) {
    this.path = path;
    this.fileSize = fileSize;
    const start = fileNameToOffset(basename(path));
    if (start === null) throw new Error(`not a segment file name: ${path}`);
    this.fileFromOffset = start;
    this.#file = file;
    this.#disk = disk;
    this.#map();
  }

  #map(): Uint8Array {
    const buf = this.#file.map();
    this.#buf = buf;
    this.#view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    return buf;
  }

  /**
   * The mapping. Writers encode straight into it; readers get views. A released (cold) segment
   * is mapped again on first use.
   */
  get buf(): Uint8Array {
    this.touched = true;
    if (this.#stagedBytes !== 0) this.commit();
    return this.#buf ?? (this.#closed ? EMPTY : this.#map());
  }

  get view(): DataView {
    this.touched = true;
    if (this.#stagedBytes !== 0) this.commit();
    if (this.#view) return this.#view;
    if (this.#closed) return EMPTY_VIEW;
    this.#map();
    return this.#view!;
  }

  get mapped(): boolean {
    return this.#buf !== null;
  }

  /**
   * Drops this process's mapping so its resident pages stop counting against RSS (the page cache
   * keeps them while memory allows). Bun unmaps once the array is collected; views handed out
   * earlier (e.g. a pull response still being written) keep it alive until they are done.
   */
  release(): void {
    this.#buf = null;
    this.#view = null;
  }

  /**
   * Creates a new zero-filled (sparse) segment of `fileSize` bytes (never under its real name
   * with the wrong size: see StoreDisk.createSegment).
   */
  static create(path: string, fileSize: number, disk: StoreDisk = nodeDisk): MappedFile {
    const file = disk.createSegment(path, fileSize);
    try {
      return new MappedFile(path, file, fileSize, disk);
    } catch (e) {
      file.close();
      throw e;
    }
  }

  /** Opens an existing segment; its size must be `fileSize`, else SegmentSizeError (input check, not an assertion). */
  static open(path: string, fileSize: number, disk: StoreDisk = nodeDisk): MappedFile {
    const file = disk.openSegment(path);
    if (file.size !== fileSize) {
      file.close();
      throw new SegmentSizeError(path, file.size, fileSize);
    }
    let f: MappedFile;
    try {
      f = new MappedFile(path, file, fileSize, disk);
    } catch (e) {
      file.close();
      throw e;
    }
    // Positions are set by recovery; until then the whole file counts as written and durable.
    f.wrotePosition = fileSize;
    f.flushedPosition = fileSize;
    return f;
  }

  get remaining(): number {
    return this.fileSize - this.wrotePosition;
  }

  get isFull(): boolean {
    return this.wrotePosition >= this.fileSize;
  }

  /** Global offset just past the last written byte. */
  get writeOffset(): number {
    return this.fileFromOffset + this.wrotePosition;
  }

  /**
   * Writes through the file descriptor instead of the mapping (readers still see the bytes: the
   * mapping and write() share the page cache). Used by SYNC_FLUSH: a store through a shared
   * mapping dirties whole large folios (up to 2 MiB on ext4), so each fdatasync would write
   * megabytes for a few KiB of messages; write() dirties only the pages it touches.
   */
  pwrite(data: Uint8Array, position: number): void {
    this.#file.pwrite(data, position);
  }

  /** Bytes appended to the stage and not yet written to the file. */
  get stagedBytes(): number {
    return this.#stagedBytes;
  }

  /**
   * Reserves `length` bytes at the write position in the stage and advances wrotePosition; the
   * caller fills `[at, at + length)` of `buf` before anything else runs (the stage is written as
   * is by the next commit). `stageBytes` is the stage's usual size: when the reservation does not
   * fit behind what is already staged, that is committed first.
   */
  reserve(length: number, stageBytes: number): { buf: Uint8Array; view: DataView; at: number } {
    if (this.wrotePosition + length > this.fileSize) throw new Error(`${this.path}: ${length} bytes do not fit at ${this.wrotePosition}`);
    if (this.#stage !== null && this.#stagedBytes + length > this.#stage.length) this.commit();
    if (this.#stage === null || this.#stage.length < length) {
      this.#stage = new Uint8Array(Math.max(stageBytes, length));
      this.#stageView = new DataView(this.#stage.buffer);
    }
    const at = this.#stagedBytes;
    this.#stagedBytes += length;
    this.wrotePosition += length;
    return { buf: this.#stage, view: this.#stageView!, at };
  }

  /** Takes back the last `length` reserved bytes (an encode failed half way). */
  unreserve(length: number): void {
    // Called right after a reserve of `length`, before anything could commit it.
    assert(length <= this.#stagedBytes, "{}: {} bytes taken back, {} staged", this.path, length, this.#stagedBytes);
    const n = Math.min(length, this.#stagedBytes);
    this.#stagedBytes -= n;
    this.wrotePosition -= n;
  }

  /** Writes the staged bytes to the file (one pwrite). Throws on an IO error; the bytes stay staged. */
  commit(): void {
    const n = this.#stagedBytes;
    if (n === 0 || this.#closed) return;
    // Staged bytes were never flushed (every flush and cut commits first): the header's invariant.
    assert(n <= this.wrotePosition - this.flushedPosition, "{}: {} staged bytes below the flushed position {}", this.path, n, this.flushedPosition);
    this.pwrite(this.#stage!.subarray(0, n), this.wrotePosition - n);
    this.#stagedBytes = 0;
  }

  /** Frees the stage (a segment that is full keeps no buffer). */
  dropStage(): void {
    if (this.#stagedBytes === 0) {
      this.#stage = null;
      this.#stageView = null;
    }
  }

  /**
   * Whether a flush with `leastPages` would sync this file: something is unflushed and either the
   * file is full, `leastPages` is 0, or the written and flushed positions lie at least `leastPages`
   * pages apart (counted in whole pages, as RocketMQ does).
   */
  isAbleToFlush(leastPages: number): boolean {
    const write = this.wrotePosition;
    const flushed = this.flushedPosition;
    if (flushed >= write || this.#closed) return false;
    if (this.isFull || leastPages <= 0) return true;
    return Math.floor(write / OS_PAGE_BYTES) - Math.floor(flushed / OS_PAGE_BYTES) >= leastPages;
  }

  /** Makes everything written so far durable (blocking); with `leastPages` > 0 only if isAbleToFlush. */
  flushSync(leastPages = 0): number {
    if (this.#stagedBytes !== 0) this.commit();
    if (this.isAbleToFlush(leastPages)) {
      const upTo = this.wrotePosition;
      this.#file.syncSync();
      this.flushedPosition = upTo;
    }
    return this.flushedPosition;
  }

  /**
   * Durable flush on the thread pool, so the event loop keeps taking appends while the disk
   * works (group commit: whatever arrives meanwhile rides on the next flush).
   */
  flushAsync(leastPages = 0): Promise<number> {
    if (this.#stagedBytes !== 0) this.commit();
    const upTo = this.wrotePosition;
    const cuts = this.#cuts;
    if (!this.isAbleToFlush(leastPages)) return Promise.resolve(this.flushedPosition);
    return new Promise((resolve, reject) => {
      this.#file.sync((err) => {
        if (err) return reject(err);
        // A cut while the sync ran (a replica's truncateTail) moved the write position back and
        // the flushed one with it; bytes written at those positions since were not part of this
        // sync, so it vouches for nothing (the cut synced what it kept).
        if (cuts === this.#cuts && upTo > this.flushedPosition) this.flushedPosition = upTo;
        resolve(this.flushedPosition);
      });
    });
  }

  /**
   * Moves the write position back to `position` (recovery of a torn tail, a replica's cut) and
   * zeroes the non-zero bytes after it — only those: zero-filling the rest of a 1 GiB segment
   * would touch every page of it. The garbage ends at the first 4 KiB block that is all zero.
   * The zeroes are made durable at once: a power cut after a replica's cut would otherwise bring
   * the cut records back, whole and valid (found by the HA simulation, seeds 4, 8 and 14).
   */
  truncateTo(position: number): void {
    // A cut moves the end back, never forward (MappedFileQueue.truncateDirty caps it at the written end).
    assert(position >= 0 && position <= this.wrotePosition, "{}: cut at {} with the written end at {}", this.path, position, this.wrotePosition);
    if (this.#stagedBytes !== 0) this.commit();
    const end = Math.min(this.wrotePosition, this.fileSize);
    let zeroed = false;
    if (position < end) {
      const buf = this.buf;
      const BLOCK = 4096;
      let p = position;
      while (p < end) {
        const blockEnd = Math.min(end, (Math.floor(p / BLOCK) + 1) * BLOCK);
        let dirty = false;
        for (let i = p; i < blockEnd; i++) {
          if (buf[i] !== 0) {
            dirty = true;
            break;
          }
        }
        if (!dirty && p !== position) break;
        if (dirty) buf.fill(0, p, blockEnd);
        zeroed ||= dirty;
        p = blockEnd;
      }
    }
    if (zeroed) this.#file.syncSync();
    this.#cuts++;
    this.wrotePosition = position;
    if (this.flushedPosition > position) this.flushedPosition = position;
  }

  close(): void {
    if (this.#closed) return;
    try {
      if (this.#stagedBytes !== 0) this.commit();
    } catch {
      // Staged bytes that cannot be written are records nobody was told were stored (a put is
      // answered only after its commit), and the CommitLog already refuses writes after the
      // first failed commit: closing must still release the file.
    } finally {
      this.#closed = true;
      this.#file.close();
      // Drop the mapping; Bun unmaps it when the array is collected.
      this.release();
      this.#stage = null;
      this.#stageView = null;
    }
  }

  /** Closes and deletes the file. */
  destroy(): void {
    this.close();
    this.#disk.unlink(this.path);
  }
}
