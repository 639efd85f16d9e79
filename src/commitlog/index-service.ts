/**
 * The index files of one store (RocketMQ store/index/IndexService.java): builds the key index as
 * the dispatcher follows the CommitLog, and answers QUERY_MESSAGE lookups (docs/PROTOCOL.md §3.12).
 *
 *   <dir>/                     normally <storeDir>/index/
 *     yyyyMMddHHmmssSSS        one IndexFile (see index-file.ts), named by its creation time in
 *     yyyyMMddHHmmssSSS        local time, as RocketMQ names them; oldest first
 *
 * Invariants:
 *   - The file list is sorted by name, and name order is creation order: a new file's name is
 *     always greater than every name in the directory (bumped past them when the clock repeats a
 *     millisecond or steps back), and it is created exclusively, so a file is never reused.
 *   - Only the newest file takes puts; every older file is full (or was cut by dropFilesAbove).
 *   - Offsets grow across files: file i's endPhyOffset <= file i+1's beginPhyOffset, except for an
 *     empty newest file, which starts at its predecessor's end.
 *   - A record below the newest file's endPhyOffset was already indexed (re-dispatch after a
 *     restart) and is skipped, as RocketMQ does. The record AT endPhyOffset is indexed again, as in
 *     RocketMQ: the header cannot tell "indexed" from "cut back to here by recovery" (see
 *     dropFilesAbove), and a missed record is worse than a duplicate entry. queryOffset returns
 *     each offset once.
 *
 * Failure handling: an IO error while writing (create, fsync) is sticky (docs/CONVENTIONS.md §5): it is
 * rethrown by every later buildIndex/flush, and the caller stops indexing until restart.
 * Files that fail validation at load are input (docs/CONVENTIONS.md §2): they are deleted and reported.
 */
import { assert } from "../common/assert.ts";
import { join } from "node:path";
import { MessageConst } from "../protocol/message-const.ts";
import { SysFlag, transactionType } from "../protocol/sys-flag.ts";
import { nodeDisk, removeInterruptedCreates, type StoreDisk } from "./disk.ts";
import { assertIndexGeometry, INDEX_NUM_DEFAULT, INDEX_SLOT_NUM_DEFAULT, IndexFile, indexKey, topicKeyHash } from "./index-file.ts";

/** yyyyMMddHHmmssSSS: 17 digits. */
export const INDEX_FILE_NAME_DIGITS = 17;

/** `epochMs` as yyyyMMddHHmmssSSS in local time (RocketMQ `UtilAll.timeMillisToHumanString`). */
export function indexFileName(epochMs: number): string {
  const d = new Date(epochMs);
  const p = (n: number, w: number) => String(n).padStart(w, "0");
  return (
    p(d.getFullYear(), 4) +
    p(d.getMonth() + 1, 2) +
    p(d.getDate(), 2) +
    p(d.getHours(), 2) +
    p(d.getMinutes(), 2) +
    p(d.getSeconds(), 2) +
    p(d.getMilliseconds(), 3)
  );
}

function isIndexFileName(name: string): boolean {
  return name.length === INDEX_FILE_NAME_DIGITS && /^\d+$/.test(name);
}

/** The next 17-digit name after `name`. It may not be a real date; only the order matters. */
function nextName(name: string): string {
  return (BigInt(name) + 1n).toString().padStart(INDEX_FILE_NAME_DIGITS, "0");
}

export interface IndexServiceOptions {
  /** The index directory itself (normally `<storeDir>/index`); created by load(). */
  dir: string;
  slotNum?: number;
  indexNum?: number;
  /** Clock for file names (ms since the epoch); injected so tests control it. */
  now?: () => number;
  /** Default: the real disk. */
  disk?: StoreDisk;
}

/** What the dispatcher knows about one CommitLog record. */
export interface IndexDispatch {
  topic: string;
  /** The KEYS property: space-separated keys. */
  keys: string | undefined;
  /** The UNIQ_KEY property (client message id). */
  uniqKey: string | undefined;
  phyOffset: number;
  storeTimestamp: number;
  sysFlag: number;
}

export interface QueryOffsetResult {
  /** Candidate offsets, newest first; hash collisions included, so verify against the CommitLog. */
  phyOffsets: number[];
  /** The newest file's endTimestamp: how far the index has got (QUERY_MESSAGE response field). */
  indexLastUpdateTimestamp: number;
  /** The newest file's endPhyOffset. */
  indexLastUpdatePhyoffset: number;
}

interface Entry {
  name: string;
  file: IndexFile;
}

export class IndexService {
  #rebuildFrom: number | undefined = undefined;
  readonly dir: string;
  readonly slotNum: number;
  readonly indexNum: number;
  #now: () => number;
  readonly #disk: StoreDisk;
  /** Oldest first. */
  #files: Entry[] = [];
  #loaded = false;
  #writeError: Error | undefined;
  /** The directory fsync of the newest roll while it runs on the thread pool (see #roll). */
  #dirSync: Promise<void> | null = null;

  constructor(opts: IndexServiceOptions) {
    this.dir = opts.dir;
    this.slotNum = opts.slotNum ?? INDEX_SLOT_NUM_DEFAULT;
    this.indexNum = opts.indexNum ?? INDEX_NUM_DEFAULT;
    assertIndexGeometry(this);
    this.#now = opts.now ?? Date.now;
    this.#disk = opts.disk ?? nodeDisk;
  }

  /** The first IO error met while writing; once set, buildIndex and flush refuse to run. */
  get writeError(): Error | undefined {
    return this.#writeError;
  }

  /** Names of the loaded files, oldest first. */
  fileNames(): string[] {
    return this.#files.map((e) => e.name);
  }

  /**
   * Opens every index file in the directory. Returns one line per problem (nothing is thrown for
   * bad files):
   *   - `<name>.creating`, left by a create a crash interrupted: removed (it never held data);
   *   - another name that is not 17 digits: ignored and left alone (we did not create it);
   *   - a file that cannot be opened: skipped and left alone (the cause is outside the store);
   *   - a file that fails validation: deleted (it cannot be read, and nothing else would ever
   *     delete it; the index is derived data);
   *   - with `lastCheckpointTimestamp` (after an unclean shutdown, as RocketMQ does when
   *     `lastExitOK` is false; the value a past flush() returned): a file whose endTimestamp is
   *     later may hold unflushed, torn pages; it is deleted, and recovery must re-dispatch from a
   *     CommitLog record stored no later than that timestamp to rebuild it.
   */
  /**
   * After load(): the lowest CommitLog offset whose index entries were in files dropped at load
   * (unfinished or damaged), so recovery re-dispatches from there; undefined if none were dropped.
   */
  get rebuildFromOffset(): number | undefined {
    return this.#rebuildFrom;
  }

  load(lastCheckpointTimestamp?: number): string[] {
    if (this.#loaded) throw new Error("IndexService.load called twice");
    this.#loaded = true;
    this.#disk.mkdirs(this.dir);
    removeInterruptedCreates(this.#disk, this.dir);
    const problems: string[] = [];
    for (const name of this.#disk.list(this.dir).sort()) {
      if (!isIndexFileName(name)) {
        problems.push(`${name}: not an index file name; ignored`);
        continue;
      }
      const path = join(this.dir, name);
      let opened: IndexFile | { invalid: string };
      try {
        opened = IndexFile.open(path, this, this.#disk);
      } catch (e) {
        problems.push(`${name}: cannot open (${errorMessage(e)}); skipped`);
        continue;
      }
      if (!(opened instanceof IndexFile)) {
        problems.push(`${name}: ${opened.invalid}; ${tryUnlink(this.#disk, path)}`);
        // Unknown coverage: everything must be indexed again.
        this.#rebuildFrom = 0;
        continue;
      }
      if (lastCheckpointTimestamp !== undefined && opened.endTimestamp > lastCheckpointTimestamp) {
        problems.push(
          `${name}: endTimestamp ${opened.endTimestamp} is after the checkpoint's index timestamp ${lastCheckpointTimestamp}` +
            " after an unclean shutdown",
        );
        this.#rebuildFrom = Math.min(this.#rebuildFrom ?? Number.MAX_SAFE_INTEGER, opened.beginPhyOffset);
        opened.close();
        problems[problems.length - 1] += `; ${tryUnlink(this.#disk, path)}`;
        continue;
      }
      this.#files.push({ name, file: opened });
    }
    return problems;
  }

  /**
   * Indexes one CommitLog record under its UNIQ_KEY and each KEYS token (each once, even if
   * repeated). Prepared (half) and rolled-back transaction records are skipped: only what a
   * consumer can see is worth finding. Rolls to a new file when the newest is full.
   */
  buildIndex(rec: IndexDispatch): void {
    this.#assertWritable();
    const tx = transactionType(rec.sysFlag);
    if (tx === SysFlag.TRANSACTION_PREPARED_TYPE || tx === SysFlag.TRANSACTION_ROLLBACK_TYPE) return;
    // Most messages carry only a UNIQ_KEY: no set, no split for them.
    let keys: Iterable<string>;
    if (rec.keys === undefined) {
      if (rec.uniqKey === undefined || rec.uniqKey.length === 0) return;
      keys = [rec.uniqKey];
    } else {
      const set = new Set<string>();
      if (rec.uniqKey !== undefined && rec.uniqKey.length > 0) set.add(rec.uniqKey);
      for (const k of rec.keys.split(MessageConst.PROPERTY_KEY_SEPARATOR)) if (k.length > 0) set.add(k);
      if (set.size === 0) return;
      keys = set;
    }

    try {
      let file = this.#writableFile();
      if (rec.phyOffset < file.endPhyOffset) return;
      for (const k of keys) {
        const hash = topicKeyHash(rec.topic, k);
        if (file.putHash(hash, rec.phyOffset, rec.storeTimestamp)) continue;
        file = this.#roll();
        // A fresh file holds indexNum - 1 >= 1 keys, so this cannot fail unless the code is wrong.
        const taken = file.putHash(hash, rec.phyOffset, rec.storeTimestamp);
        assert(taken, "fresh index file {} refused a key", file.path);
      }
    } catch (e) {
      throw this.#fail(e);
    }
  }

  /**
   * Offsets of records in `topic` with `key` stored in [begin, end] ms, newest first, across
   * files, at most maxNum. The caller caps maxNum (RocketMQ: maxMsgsNumBatch, 64) and verifies
   * every offset against the CommitLog (hash collisions and entries above a recovery cut).
   */
  queryOffset(topic: string, key: string, maxNum: number, begin: number, end: number): QueryOffsetResult {
    this.#assertLoaded();
    const newest = this.#files.at(-1)?.file;
    const result: QueryOffsetResult = {
      phyOffsets: [],
      indexLastUpdateTimestamp: newest?.endTimestamp ?? 0,
      indexLastUpdatePhyoffset: newest?.endPhyOffset ?? 0,
    };
    const k = indexKey(topic, key);
    const seen = new Set<number>();
    for (let i = this.#files.length - 1; i >= 0 && result.phyOffsets.length < maxNum; i--) {
      const f = this.#files[i]!.file;
      // An empty file's begin is inherited (or 0), so it says nothing about older files.
      if (f.indexCount <= 1) continue;
      if (f.isTimeMatched(begin, end)) {
        for (const off of f.selectPhyOffsets(k, maxNum - result.phyOffsets.length, begin, end)) {
          // Re-dispatch can index the same record twice (see the invariants); one answer is enough.
          if (!seen.has(off)) result.phyOffsets.push(off);
          seen.add(off);
        }
      }
      // Older files end no later than this one begins.
      if (f.beginTimestamp < begin) break;
    }
    return result;
  }

  /**
   * Deletes whole files, oldest first, whose endPhyOffset < minCommitLogOffset (every record they
   * point to is gone). The newest file is never deleted: it carries the dispatch position.
   * Returns how many were deleted.
   */
  deleteExpiredFiles(minCommitLogOffset: number): number {
    this.#assertLoaded();
    let deleted = 0;
    while (this.#files.length > 1) {
      const first = this.#files[0]!;
      if (first.file.endPhyOffset >= minCommitLogOffset) break;
      this.#delete(first);
      this.#files.shift();
      deleted++;
    }
    return deleted;
  }

  /**
   * Recovery support: the CommitLog was cut back to `phyOffset` (the next write position). Deletes
   * files whose beginPhyOffset > phyOffset, and lowers the endPhyOffset of kept files so records
   * re-dispatched from there are indexed rather than skipped as already seen. Entries above
   * phyOffset left in the last kept file are harmless: lookups verify against the CommitLog.
   * Returns how many files were deleted.
   */
  dropFilesAbove(phyOffset: number): number {
    this.#assertLoaded();
    let deleted = 0;
    // Newest first, removing each entry only once its file is gone, so an unlink error leaves
    // the list consistent with the directory.
    for (let i = this.#files.length - 1; i >= 0; i--) {
      const e = this.#files[i]!;
      if (e.file.beginPhyOffset > phyOffset) {
        this.#delete(e);
        this.#files.splice(i, 1);
        deleted++;
      } else {
        e.file.clampEndPhyOffset(phyOffset);
      }
    }
    // Files starting past the cut went, the rest end at it: nothing indexed claims a record past it.
    assert(this.maxPhyOffsetIndexed() <= Math.max(phyOffset, 0), "index ends at {} after a cut at {}", this.maxPhyOffsetIndexed(), phyOffset);
    return deleted;
  }

  /**
   * The periodic checkpoint's flush, on the thread pool: the finished files only (each once; a
   * clean file's flush is a no-op). The file still taking puts is left to the kernel until it is
   * full or the store shuts down: after an unclean shutdown load() deletes it whatever was
   * flushed (its endTimestamp is past the checkpoint's) and recovery rebuilds it, so syncing it
   * every second bought nothing. It cost the W3 tail: writeback write-protects the pages of the
   * mapping, so the puts after each fsync took a fault per random hash slot they touched
   * (measured: ack p99 3.9 → 2.2 ms, max 20 → 8 ms at 5,000 msgs/s).
   */
  async flushAsync(): Promise<number> {
    this.#assertWritable();
    const last = this.#files.length - 1;
    try {
      if (this.#dirSync !== null) await this.#dirSync;
      await Promise.all(this.#files.filter((e, i) => i < last || e.file.isFull()).map((e) => e.file.flushAsync()));
    } catch (e) {
      throw this.#fail(e);
    }
    return this.#checkpointTimestamp();
  }

  #checkpointTimestamp(): number {
    for (let i = this.#files.length - 1; i >= 0; i--) {
      const f = this.#files[i]!.file;
      if (i < this.#files.length - 1 || f.isFull()) return f.endTimestamp;
    }
    return 0;
  }

  /**
   * Makes every put so far durable. Returns the index checkpoint timestamp, as RocketMQ records it:
   * the endTimestamp of the newest *finished* file (full, or followed by a newer one), 0 if none.
   * Not the newest file's end: after a crash, load(checkpoint) deletes the file still being
   * written as a whole, and re-dispatch from this timestamp must cover all of it.
   */
  flush(): number {
    this.#assertWritable();
    try {
      // A roll's directory sync still on the thread pool: done here too, so a stop's flush covers it.
      if (this.#dirSync !== null) {
        this.#disk.syncDir(this.dir);
        this.#dirSync = null;
      }
      for (const e of this.#files) e.file.flush();
    } catch (e) {
      throw this.#fail(e);
    }
    for (let i = this.#files.length - 1; i >= 0; i--) {
      const f = this.#files[i]!.file;
      if (i < this.#files.length - 1 || f.isFull()) return f.endTimestamp;
    }
    return 0;
  }

  /** Offset of the newest indexed record (the newest file's endPhyOffset), 0 without files. */
  maxPhyOffsetIndexed(): number {
    return this.#files.at(-1)?.file.endPhyOffset ?? 0;
  }

  /** Flushes (unless a write already failed) and closes every file. */
  close(): void {
    let flushError: unknown;
    if (this.#writeError === undefined && this.#loaded) {
      try {
        this.flush();
      } catch (e) {
        flushError = e;
      }
    }
    for (const e of this.#files) e.file.close();
    this.#files = [];
    if (flushError !== undefined) throw flushError;
  }

  #assertLoaded(): void {
    // Using the service before load() would create files that shadow the ones on disk.
    assert(this.#loaded, "IndexService used before load()");
  }

  #assertWritable(): void {
    this.#assertLoaded();
    if (this.#writeError !== undefined) throw this.#writeError;
  }

  #fail(e: unknown): Error {
    const err = e instanceof Error ? e : new Error(String(e));
    this.#writeError ??= err;
    return err;
  }

  #writableFile(): IndexFile {
    const last = this.#files.at(-1)?.file;
    return last !== undefined && !last.isFull() ? last : this.#roll();
  }

  /** Creates the next file; an empty successor starts where the previous file ended. */
  #roll(): IndexFile {
    const prev = this.#files.at(-1)?.file;
    const name = this.#newName();
    const opts: { slotNum: number; indexNum: number; beginTimestamp?: number; beginPhyOffset?: number } = {
      slotNum: this.slotNum,
      indexNum: this.indexNum,
    };
    if (prev !== undefined) {
      opts.beginTimestamp = prev.endTimestamp;
      opts.beginPhyOffset = prev.endPhyOffset;
    }
    const file = IndexFile.create(join(this.dir, name), opts, this.#disk);
    // Names sort in creation order (#newName goes past every name in the directory): queries walk
    // the files newest first and load() orders them by name.
    assert(this.#files.length === 0 || this.#files.at(-1)!.name < name, "index file {} created after {}", name, this.#files.at(-1)?.name);
    this.#files.push({ name, file });
    // The new name made durable off the event loop; the next checkpoint flush waits for it.
    const synced = this.#disk.syncDirAsync(this.dir).then(() => {
      if (this.#dirSync === synced) this.#dirSync = null;
    });
    this.#dirSync = synced;
    return file;
  }

  /** The clock's name, or one past the greatest name in the directory (loaded or not). */
  #newName(): string {
    let name = indexFileName(this.#now());
    for (const other of this.#disk.list(this.dir)) if (isIndexFileName(other) && name <= other) name = nextName(other);
    return name;
  }

  #delete(e: Entry): void {
    // Unlink before close: if unlinking fails the entry is still usable and the error propagates.
    // Unlinking a mapped file is safe; only truncation is not.
    this.#disk.unlink(e.file.path);
    e.file.close();
  }
}

/** Deletes a file that load() rejected; says what happened, for the problem line. */
function tryUnlink(disk: StoreDisk, path: string): string {
  try {
    disk.unlink(path);
    return "deleted";
  } catch (e) {
    return `could not delete (${errorMessage(e)})`;
  }
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
