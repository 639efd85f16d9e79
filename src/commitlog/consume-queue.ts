/**
 * ConsumeQueue: the per topic/queue index into the CommitLog, one fixed-size unit per message.
 *
 *   +---------------------------+----------------+---------------------------+
 *   | commit-log offset (8 B)   | size (4 B)     | tag hash code (8 B)       |
 *   +---------------------------+----------------+---------------------------+
 *   unit n (the message with queue offset n) is at byte n × 20 of the queue's logical space,
 *   which is cut into files of `unitsPerFile` units named by their first byte offset.
 *
 * Invariants: units are written in queue-offset order with no holes — a queue that starts past 0
 * (its earlier files were deleted, or a dispatch skipped ahead) is padded with FILLER units
 * (offset 0, size 0x7FFFFFFF, tag 0) as RocketMQ does; a unit with size 0 is unwritten space.
 * Tag code: Java String.hashCode of TAGS (sign-extended); for SCHEDULE_TOPIC_XXXX the due time.
 *
 * Durability: units are flushed lazily (see MessageStore.checkpoint: least pages, thorough
 * interval), so units past `firstUnflushedPhyOffset()` may be lost in a power cut; the checkpoint
 * never claims them, and recovery rewrites them from the CommitLog.
 */
import { join } from "node:path";
import { assert } from "../common/assert.ts";
import { setInt64 } from "../common/message-record.ts";
import type { StoreDisk } from "./disk.ts";
import { MappedFileQueue } from "./mapped-file-queue.ts";
import { OS_PAGE_BYTES } from "./mapped-file.ts";
import { CQ_UNIT_SIZE } from "../protocol/store-layout.ts";

export const CQ_UNITS_PER_FILE_DEFAULT = 300_000;
export const CQ_FILLER_SIZE = 0x7fffffff;

/** Who knows a unit's queue offset (see ConsumeQueue.putUnit). */
export type PutUnitSource = "put" | "log" | "rewrite";
/** "replaced": a different unit was there (a "log" dispatch), the caller reports it. */
export type PutUnitResult = "written" | "present" | "replaced" | "below-min";

export interface CqUnit {
  phyOffset: number;
  size: number;
  tagsCode: number;
}

const TWO_32 = 2 ** 32;
/** One unit, encoded here and written with pwrite (see #writeUnit). */
const UNIT = new Uint8Array(CQ_UNIT_SIZE);
const UNIT_VIEW = new DataView(UNIT.buffer);

function readLong(view: DataView, pos: number): number {
  return view.getInt32(pos) * TWO_32 + view.getUint32(pos + 4);
}

export class ConsumeQueue {
  readonly topic: string;
  readonly queueId: number;
  readonly #files: MappedFileQueue;
  /** Byte offset of the first unit whose message still exists in the CommitLog. */
  #minLogicOffset = 0;
  /** End (offset + size) of the last CommitLog record indexed here; -1 when empty. */
  maxPhysicOffset = -1;
  /**
   * First queue offset whose unit this process wrote (set by the store after recovery; 0 for a
   * queue created since): units from here on name records it appended or verified itself, so
   * one that does not match its record is a bug, not damage left by a crash.
   */
  writtenHereFrom = 0;

  constructor(rootDir: string, topic: string, queueId: number, unitsPerFile = CQ_UNITS_PER_FILE_DEFAULT, disk?: StoreDisk) {
    this.topic = topic;
    this.queueId = queueId;
    this.#files = new MappedFileQueue(join(rootDir, topic, String(queueId)), unitsPerFile * CQ_UNIT_SIZE, disk);
  }

  /** Maps existing files and finds the last written unit. Returns problems found. */
  load(): string[] {
    const problems = this.#files.load();
    this.#recover();
    return problems;
  }

  /** Scans the last file(s) for the end of the written units (size 0 = unwritten). */
  #recover(): void {
    const files = this.#files.files;
    for (const f of files) f.wrotePosition = f.flushedPosition = f.fileSize;
    const last = files.at(-1);
    if (!last) return;
    let pos = 0;
    while (pos + CQ_UNIT_SIZE <= last.fileSize && last.view.getInt32(pos + 8) !== 0) pos += CQ_UNIT_SIZE;
    last.wrotePosition = last.flushedPosition = pos;
    this.#minLogicOffset = this.#files.minOffset;
    const lastUnit = this.maxOffset > this.minOffset ? this.get(this.maxOffset - 1) : undefined;
    this.maxPhysicOffset = lastUnit && lastUnit.size !== CQ_FILLER_SIZE ? lastUnit.phyOffset + lastUnit.size : -1;
  }

  /** Queue offset after the last unit (= number of messages ever written). */
  get maxOffset(): number {
    return this.#files.maxOffset / CQ_UNIT_SIZE;
  }

  /** First queue offset whose message is still readable. */
  get minOffset(): number {
    return Math.max(this.#minLogicOffset, this.#files.minOffset) / CQ_UNIT_SIZE;
  }

  /**
   * Writes the unit for queue offset `cqOffset`. `from` says who knows the offset, which decides
   * what a unit behind or ahead of the queue's end means:
   *
   *   "put"      the send path: the CommitLog's counter assigned `cqOffset` a moment ago, and the
   *              counter starts each queue at its end (recovery) and moves with it, so anything
   *              but the end is a bug in this process: asserted.
   *   "log"      dispatch from CommitLog bytes (replication, recovery below the checkpoint). A
   *              unit already there is re-dispatched after a restart: nothing to do if it is the
   *              same unit (checked, not assumed). A different one means the log holds two records
   *              with one queue offset (a master re-used the offsets of records its recovery
   *              lost, which this slave already held) or the queue file was damaged; input, so
   *              the record dispatched last, the CommitLog's word, replaces the unit and what
   *              follows it, and the caller reports the conflict. A jump forward (records lost to damage) is
   *              padded with filler units (docs/STORAGE.md §3).
   *   "rewrite"  recovery past the checkpoint: units there were never flushed and may be torn, so
   *              the CommitLog's word replaces them unread.
   *
   * Units below the first file still on disk (deleted by retention) are left alone.
   */
  putUnit(cqOffset: number, phyOffset: number, size: number, tagsCode: number, from: PutUnitSource): PutUnitResult {
    const expected = cqOffset * CQ_UNIT_SIZE;
    let at = this.#files.maxOffset;
    if (from === "put") {
      // The counter and the queue moving apart is how one queue offset ends up with two records
      // (or a record with none): stop before the unit is written.
      const end = at / CQ_UNIT_SIZE;
      assert(expected === at, "queue {}-{}: the send path put queue offset {}, but the queue ends at {}", this.topic, this.queueId, cqOffset, end);
    }
    let result: PutUnitResult = "written";
    if (expected < at) {
      if (expected < this.#files.minOffset) return "below-min";
      if (from === "log") {
        if (this.#unitEquals(expected, phyOffset, size, tagsCode)) return "present";
        result = "replaced";
      }
      this.#files.truncateDirty(expected);
      at = this.#files.maxOffset;
    }
    if (this.#files.files.length === 0) {
      // A queue starting past 0: the first file begins at the file holding `expected`, padded.
      const f = this.#files.lastWritable(expected);
      at = f.fileFromOffset;
      if (this.#minLogicOffset < expected) this.#minLogicOffset = expected;
    }
    while (at < expected) {
      this.#writeUnit(0, CQ_FILLER_SIZE, 0);
      at += CQ_UNIT_SIZE;
    }
    this.#writeUnit(phyOffset, size, tagsCode);
    // The unit went to its queue offset (fillers padded up to it, a stale tail cut back to it):
    // the queue now ends right after it. A compare on the send path, nothing allocated.
    assert(
      this.#files.maxOffset === expected + CQ_UNIT_SIZE,
      "queue {}-{}: unit {} written, but the queue ends at byte {}",
      this.topic,
      this.queueId,
      cqOffset,
      this.#files.maxOffset,
    );
    if (from === "rewrite") {
      // Recovery (a cold path): read back what was just written, the check a reader makes later.
      assert(
        this.#unitEquals(expected, phyOffset, size, tagsCode),
        "queue {}-{}: unit {} does not read back as written",
        this.topic,
        this.queueId,
        cqOffset,
      );
    }
    this.maxPhysicOffset = phyOffset + size;
    return result;
  }

  #unitEquals(byteOffset: number, phyOffset: number, size: number, tagsCode: number): boolean {
    const f = this.#files.findByOffset(byteOffset);
    if (!f) return false;
    const pos = byteOffset - f.fileFromOffset;
    return readLong(f.view, pos) === phyOffset && f.view.getInt32(pos + 8) === size && readLong(f.view, pos + 12) === tagsCode;
  }

  /**
   * A unit that reaches into a page no earlier unit touched is written with pwrite; the rest are
   * stores into the mapping (one page cache, so readers see both). The first store into a hole of
   * a sparse file through a shared mapping faults in a whole large folio (readahead-sized,
   * zero-filled, then dirty as a whole): with W6's 10,000 fresh queues that cost ~1 ms of kernel
   * time per queue and grew super-linearly (3,000 first puts: 9.8-18.6 s, vs 2.3 s this way).
   * pwrite for every unit instead would cost ~9 µs per put on a busy queue (50,000 puts to one
   * queue: 0.87-1.02 s vs 0.40-0.42 s).
   */
  #writeUnit(phyOffset: number, size: number, tagsCode: number): void {
    const f = this.#files.lastWritable(0);
    const pos = f.wrotePosition;
    // Files hold whole units (unitsPerFile × 20 bytes) and lastWritable has room: a unit never straddles two files.
    assert(
      pos % CQ_UNIT_SIZE === 0 && pos + CQ_UNIT_SIZE <= f.fileSize,
      "queue {}-{}: a unit at byte {} of a {}-byte file",
      this.topic,
      this.queueId,
      pos,
      f.fileSize,
    );
    const freshPage = pos === 0 || Math.floor((pos + CQ_UNIT_SIZE - 1) / OS_PAGE_BYTES) !== Math.floor((pos - 1) / OS_PAGE_BYTES);
    const v = freshPage ? UNIT_VIEW : f.view;
    const at = freshPage ? 0 : pos;
    setInt64(v, at, phyOffset);
    v.setInt32(at + 8, size);
    setInt64(v, at + 12, tagsCode);
    if (freshPage) f.pwrite(UNIT, pos);
    f.wrotePosition = pos + CQ_UNIT_SIZE;
  }

  /** The unit at queue offset `cqOffset`, or undefined if outside [minOffset, maxOffset). */
  get(cqOffset: number): CqUnit | undefined {
    if (cqOffset < this.minOffset || cqOffset >= this.maxOffset) return undefined;
    const byteOffset = cqOffset * CQ_UNIT_SIZE;
    const f = this.#files.findByOffset(byteOffset);
    if (!f) return undefined;
    const pos = byteOffset - f.fileFromOffset;
    return { phyOffset: readLong(f.view, pos), size: f.view.getInt32(pos + 8), tagsCode: readLong(f.view, pos + 12) };
  }

  /**
   * Visits units from `cqOffset` on, in order, until `visit` returns false (that unit is not
   * counted) or `maxUnits`/the queue end is reached; returns the number of units accepted. Reads
   * straight from the mapping without allocating per unit.
   */
  scan(cqOffset: number, maxUnits: number, visit: (cqOffset: number, phyOffset: number, size: number, tagsCode: number) => boolean): number {
    let n = 0;
    let off = Math.max(cqOffset, this.minOffset);
    const end = Math.min(this.maxOffset, off + maxUnits);
    while (off < end) {
      const byteOffset = off * CQ_UNIT_SIZE;
      const f = this.#files.findByOffset(byteOffset);
      if (!f) break;
      const fileEnd = Math.min(end, (f.fileFromOffset + f.wrotePosition) / CQ_UNIT_SIZE);
      if (fileEnd <= off) break;
      const v = f.view;
      for (; off < fileEnd; off++, n++) {
        const pos = off * CQ_UNIT_SIZE - f.fileFromOffset;
        if (!visit(off, readLong(v, pos), v.getInt32(pos + 8), readLong(v, pos + 12))) return n;
      }
    }
    return n;
  }

  /** Moves the min offset past units whose messages were deleted from the CommitLog. */
  correctMinOffset(commitLogMinOffset: number): void {
    let off = this.minOffset;
    const max = this.maxOffset;
    while (off < max) {
      const u = this.get(off);
      if (!u || (u.size !== CQ_FILLER_SIZE && u.phyOffset >= commitLogMinOffset)) break;
      off++;
    }
    // The walk starts at the min offset and only moves forward: a consumer's readable range never grows back.
    assert(off * CQ_UNIT_SIZE >= this.#minLogicOffset, "queue {}-{}: min offset moved back to {}", this.topic, this.queueId, off);
    this.#minLogicOffset = off * CQ_UNIT_SIZE;
  }

  /**
   * Recovery: drops units from the end until one points below `phyOffset` (the CommitLog was
   * truncated there) and, when `verify` is given, names its record in the CommitLog. Without the
   * check a torn unit (never flushed, garbage after a crash) whose offset happened to fall below
   * the end survived recovery and pointed consumers at a wrong record (found by test/sim).
   */
  truncateDirty(phyOffset: number, verify?: (cqOffset: number, phyOffset: number, size: number) => boolean): void {
    let off = this.maxOffset;
    while (off > this.minOffset) {
      const u = this.get(off - 1);
      if (u && u.size === CQ_FILLER_SIZE) break;
      if (u && u.phyOffset >= 0 && u.phyOffset + u.size <= phyOffset && (!verify || verify(off - 1, u.phyOffset, u.size))) break;
      off--;
    }
    this.#files.truncateDirty(off * CQ_UNIT_SIZE);
    const lastUnit = off > this.minOffset ? this.get(off - 1) : undefined;
    this.maxPhysicOffset = lastUnit && lastUnit.size !== CQ_FILLER_SIZE ? lastUnit.phyOffset + lastUnit.size : -1;
    // The walk stopped at a unit ending at or below the cut (or a filler, or the queue's start):
    // no unit left points past the CommitLog's new end.
    assert(
      this.maxPhysicOffset <= phyOffset,
      "queue {}-{}: a unit ends at {} after a cut at {}",
      this.topic,
      this.queueId,
      this.maxPhysicOffset,
      phyOffset,
    );
  }

  /** Deletes whole files whose every unit points below `commitLogMinOffset`. */
  deleteExpiredFiles(commitLogMinOffset: number): number {
    const n = this.#files.deleteFromFront((f) => {
      const lastPos = f.fileSize - CQ_UNIT_SIZE;
      const phy = readLong(f.view, lastPos);
      const size = f.view.getInt32(lastPos + 8);
      return size !== 0 && (size === CQ_FILLER_SIZE || phy + size <= commitLogMinOffset);
    });
    this.correctMinOffset(commitLogMinOffset);
    return n;
  }

  /** Flushes files with at least `leastPages` dirty pages (full files always; 0 = everything). */
  flushSync(leastPages = 0): void {
    this.#files.flushSync(leastPages);
  }

  flushAsync(leastPages = 0): Promise<void> {
    return this.#files.flushAsync(leastPages);
  }

  isAbleToFlush(leastPages: number): boolean {
    return this.#files.isAbleToFlush(leastPages);
  }

  /**
   * CommitLog offset of the first record whose unit is not yet durable, or undefined when every
   * unit is flushed. Filler units carry no record and are skipped (one is always followed by the
   * real unit it pads for, written in the same put).
   */
  firstUnflushedPhyOffset(): number | undefined {
    const from = this.#files.flushedOffset;
    const to = this.#files.maxOffset;
    for (let byteOffset = from - (from % CQ_UNIT_SIZE); byteOffset < to; byteOffset += CQ_UNIT_SIZE) {
      const f = this.#files.findByOffset(byteOffset);
      if (!f) return undefined;
      const pos = byteOffset - f.fileFromOffset;
      if (f.view.getInt32(pos + 8) !== CQ_FILLER_SIZE) return readLong(f.view, pos);
    }
    return undefined;
  }

  /** Unmaps idle files except the one being written. */
  releaseCold(): number {
    return this.#files.releaseCold(1);
  }

  /** True when some unit is written but not yet flushed. */
  get dirty(): boolean {
    return this.#files.flushedOffset < this.#files.maxOffset;
  }

  close(): void {
    this.#files.close();
  }

  destroy(): void {
    this.#files.destroy();
  }
}
