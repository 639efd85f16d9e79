/**
 * An ordered run of equally sized MappedFiles in one directory: the CommitLog's segments, or one
 * ConsumeQueue's. Offsets are global: file k holds [k·fileSize + base, (k+1)·fileSize + base).
 *
 * Invariants: files are contiguous (each starts where the previous ends); only the last file is
 * written; a file name equals its start offset. A gap found at load time is reported, not
 * repaired silently; a wrong-sized file stops the load (SegmentSizeError).
 */
import { join } from "node:path";
import { assert } from "../common/assert.ts";
import { nodeDisk, removeInterruptedCreates, type StoreDisk } from "./disk.ts";
import { fileNameToOffset, MappedFile, offsetToFileName } from "./mapped-file.ts";

export class MappedFileQueue {
  readonly dir: string;
  readonly fileSize: number;
  readonly files: MappedFile[] = [];
  readonly #disk: StoreDisk;

  constructor(dir: string, fileSize: number, disk: StoreDisk = nodeDisk) {
    this.dir = dir;
    this.fileSize = fileSize;
    this.#disk = disk;
  }

  /** Maps every segment in the directory. Returns problems; files after a gap are not loaded. */
  load(): string[] {
    const disk = this.#disk;
    disk.mkdirs(this.dir);
    const problems: string[] = [];
    removeInterruptedCreates(disk, this.dir);
    const names = disk
      .list(this.dir)
      .filter((n) => fileNameToOffset(n) !== null)
      .sort();
    for (const name of names) {
      const start = fileNameToOffset(name)!;
      const prev = this.files.at(-1);
      if (prev && start !== prev.fileFromOffset + this.fileSize) {
        problems.push(`${join(this.dir, name)}: expected a segment starting at ${prev.fileFromOffset + this.fileSize}; ignoring it and later files`);
        break;
      }
      if (start % this.fileSize !== 0) {
        problems.push(`${join(this.dir, name)}: start offset is not a multiple of the segment size ${this.fileSize}; ignoring it and later files`);
        break;
      }
      const path = join(this.dir, name);
      if (name === names.at(-1) && disk.fileSize(path) === 0) {
        // An empty last file (an older version could leave one when killed while creating it)
        // never held data: remove it so the next roll can create it properly.
        disk.unlink(path);
        problems.push(`${path}: empty segment left by an interrupted create removed`);
        break;
      }
      this.files.push(MappedFile.open(path, this.fileSize, disk));
    }
    return problems;
  }

  get last(): MappedFile | undefined {
    return this.files.at(-1);
  }

  get first(): MappedFile | undefined {
    return this.files[0];
  }

  /** The last file if it has room, else a new one starting at `startOffset` (or right after the last). */
  lastWritable(startOffset = 0): MappedFile {
    const last = this.last;
    if (last && !last.isFull) return last;
    const from = last ? last.fileFromOffset + this.fileSize : startOffset - (startOffset % this.fileSize);
    this.#disk.mkdirs(this.dir);
    const f = MappedFile.create(join(this.dir, offsetToFileName(from)), this.fileSize, this.#disk);
    this.files.push(f);
    return f;
  }

  /** The file holding `offset`, or undefined if it was deleted or not yet written. */
  findByOffset(offset: number): MappedFile | undefined {
    const first = this.files[0];
    if (!first || offset < first.fileFromOffset) return undefined;
    const idx = Math.floor((offset - first.fileFromOffset) / this.fileSize);
    const f = this.files[idx];
    return f && offset < f.fileFromOffset + this.fileSize ? f : undefined;
  }

  /** Smallest offset still on disk. */
  get minOffset(): number {
    return this.files[0]?.fileFromOffset ?? 0;
  }

  /** Offset just past the last written byte. */
  get maxOffset(): number {
    const last = this.last;
    return last ? last.writeOffset : 0;
  }

  /**
   * Offset of the first byte not yet durable (= maxOffset when everything is flushed). With
   * least-pages flushing any file may lag, not only the last, so every file is looked at.
   */
  get flushedOffset(): number {
    for (const f of this.files) {
      // MappedFile's invariant (flushed ≤ written), which a flush racing a cut once broke: the
      // durable end, and the checkpoint built on it, would then claim bytes never synced.
      assert(f.flushedPosition <= f.wrotePosition, "{}: flushed to {}, past the written end {}", f.path, f.flushedPosition, f.wrotePosition);
      if (f.flushedPosition < f.wrotePosition) return f.fileFromOffset + f.flushedPosition;
    }
    return this.maxOffset;
  }

  /**
   * Recovery: everything at or past `offset` is dropped — files starting there or later are
   * deleted, the file holding `offset` gets its tail zeroed. The next append recreates files.
   */
  truncateDirty(offset: number): void {
    while (this.files.length > 0 && this.files.at(-1)!.fileFromOffset >= offset) this.files.pop()!.destroy();
    const last = this.last;
    if (last) last.truncateTo(Math.min(offset - last.fileFromOffset, last.wrotePosition));
    // Nothing at or past the cut is left (the next append starts there, or earlier).
    assert(this.maxOffset <= Math.max(offset, 0), "{}: cut at {} leaves the end at {}", this.dir, offset, this.maxOffset);
  }

  /** Deletes whole files from the front while `canDelete(file)` holds, never the last one. */
  deleteFromFront(canDelete: (f: MappedFile) => boolean, maxFiles = Number.MAX_SAFE_INTEGER): number {
    let n = 0;
    while (this.files.length > 1 && n < maxFiles && canDelete(this.files[0]!)) {
      this.files.shift()!.destroy();
      n++;
    }
    return n;
  }

  /** Blocking flush of every file that isAbleToFlush(leastPages) (0 = everything unflushed). */
  flushSync(leastPages = 0): void {
    for (const f of this.files) f.flushSync(leastPages);
  }

  /**
   * Unmaps files other than the last `keepLast` that nobody touched since the previous sweep
   * (and are fully flushed). Returns how many were released. Called periodically, so "idle"
   * means "untouched for one sweep interval".
   */
  releaseCold(keepLast: number): number {
    let n = 0;
    for (let i = 0; i < this.files.length - keepLast; i++) {
      const f = this.files[i]!;
      if (!f.mapped) continue;
      if (f.touched) {
        f.touched = false;
        continue;
      }
      if (f.flushedPosition >= f.wrotePosition) {
        f.release();
        n++;
      }
    }
    return n;
  }

  /** True when some file could be flushed with `leastPages` (see MappedFile.isAbleToFlush). */
  isAbleToFlush(leastPages: number): boolean {
    for (const f of this.files) if (f.isAbleToFlush(leastPages)) return true;
    return false;
  }

  /** Flushes dirty files on the thread pool (the event loop keeps serving meanwhile); see flushSync. */
  async flushAsync(leastPages = 0): Promise<void> {
    const due = this.files.filter((f) => f.isAbleToFlush(leastPages));
    await Promise.all(due.map((f) => f.flushAsync(leastPages)));
  }

  close(): void {
    for (const f of this.files) f.close();
  }

  /** Closes and deletes every file (topic deletion). */
  destroy(): void {
    for (const f of this.files.splice(0)) f.destroy();
  }
}
