/**
 * The store's disk as a collaborator (docs/CONVENTIONS.md §6): every file the store touches — segment
 * files (CommitLog, ConsumeQueue, IndexFile) and the small files around them (checkpoint, abort
 * marker, lock, corrupt.json) — is reached through a `StoreDisk`, so test/sim can run the store on
 * an in-memory disk that tears unflushed writes at a simulated crash. Production uses `nodeDisk`:
 * `Bun.mmap` and node:fs, exactly the calls the store made before this seam existed.
 *
 * Hot path: MappedFile holds its `SegmentFile` and calls it once per commit (one pwrite per
 * event-loop turn) and once per flush; reads go through the mapping `map()` returned, never
 * through the interface. Nothing here allocates per message.
 *
 * Semantics every implementation keeps (the simulation's crash model is built on them):
 *   - `map()` is a shared mapping: stores into it and `pwrite` land in the same bytes (the page
 *     cache) and are visible at once; neither is durable until `sync`/`syncSync` returns after them;
 *   - `createSegment` never leaves a file of the wrong size under the real name, and fails if the
 *     name exists; small files written with `writeFileAtomic` are either old or new, never torn.
 */
import {
  close,
  closeSync,
  existsSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  fsync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  open,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statfsSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { writeFileAtomic, writeFileAtomicAsync } from "../common/atomic-file.ts";

/** One open segment file of fixed size. */
export interface SegmentFile {
  readonly size: number;
  /** A shared mapping of the whole file (called again after a release: a cold file is remapped). */
  map(): Uint8Array;
  /** Writes all of `data` at `position` (through the descriptor, not the mapping). */
  pwrite(data: Uint8Array, position: number): void;
  /** fdatasync, blocking. */
  syncSync(): void;
  /** fdatasync on the thread pool; `done` runs once the bytes written before the call are durable. */
  sync(done: (err: Error | null) => void): void;
  close(): void;
}

/** Suffix of a segment file while createSegment sizes it; a crash can leave one behind. */
export const CREATING_SUFFIX = ".creating";

/**
 * Removes what creates interrupted by a crash left in `dir` (they never held data). Every loader
 * of a directory of segments calls it first: a leftover is neither a segment nor a problem.
 */
export function removeInterruptedCreates(disk: StoreDisk, dir: string): void {
  for (const n of disk.list(dir)) if (n.endsWith(CREATING_SUFFIX)) disk.remove(join(dir, n));
}

export interface StoreDisk {
  /** A new zero-filled file of `size` bytes; throws if `path` exists. */
  createSegment(path: string, size: number): SegmentFile;
  openSegment(path: string): SegmentFile;
  mkdirs(dir: string): void;
  /** Entry names in `dir` ([] when it does not exist). */
  list(dir: string): string[];
  exists(path: string): boolean;
  isDirectory(path: string): boolean;
  fileSize(path: string): number;
  mtimeMs(path: string): number;
  unlink(path: string): void;
  /** Removes a file or a directory tree; nothing if absent. */
  remove(path: string): void;
  /** The whole file, or null if it does not exist. */
  readFile(path: string): Uint8Array | null;
  /** A plain write (marker files whose content does not matter for correctness). */
  writeFile(path: string, data: string): void;
  /** Temp file + fsync + rename (the old version kept as `<path>.bak`): never torn. */
  writeFileAtomic(path: string, data: string | Uint8Array): void;
  writeFileAtomicAsync(path: string, data: string | Uint8Array): Promise<void>;
  /** Makes a new directory entry durable (best effort). */
  syncDir(dir: string): void;
  /**
   * syncDir on the thread pool: a directory's fsync commits the filesystem's journal and waited
   * 50–140 ms on the event loop under the soak's write load (bench/soak, strace of the master).
   */
  syncDirAsync(dir: string): Promise<void>;
  /** Fraction (0..1) of the filesystem holding `dir` in use. */
  usedRatio(dir: string): number;
  /** Bytes an unprivileged writer may still allocate on the filesystem holding `dir` (statfs bavail). */
  freeBytes(dir: string): number;
}

class NodeSegmentFile implements SegmentFile {
  readonly #path: string;
  readonly #fd: number;
  readonly size: number;

  constructor(path: string, fd: number, size: number) {
    this.#path = path;
    this.#fd = fd;
    this.size = size;
  }

  map(): Uint8Array {
    return Bun.mmap(this.#path, { shared: true });
  }

  pwrite(data: Uint8Array, position: number): void {
    let done = 0;
    while (done < data.length) done += writeSync(this.#fd, data, done, data.length - done, position + done);
  }

  syncSync(): void {
    fdatasyncSync(this.#fd);
  }

  /** fdatasyncs queued on the thread pool and not yet done: close() waits for them (see close). */
  #syncing = 0;
  #closeWhenSynced = false;

  sync(done: (err: Error | null) => void): void {
    this.#syncing++;
    fdatasync(this.#fd, (err) => {
      this.#syncing--;
      if (this.#closeWhenSynced && this.#syncing === 0) closeSync(this.#fd);
      done(err);
    });
  }

  /**
   * Closes the descriptor, or, while an fdatasync of it is still queued, once that is done.
   * Retention deletes segments (and index and queue files) while the flush services may be
   * syncing them: closing at once failed the sync with EBADF, which stopped the store's writes
   * (found by the soak, bench/soak), and a number reused by a new file meanwhile would have been
   * synced in its place.
   */
  close(): void {
    if (this.#syncing > 0) this.#closeWhenSynced = true;
    else closeSync(this.#fd);
  }
}

/** The real disk: node:fs and Bun.mmap. */
export const nodeDisk: StoreDisk = {
  createSegment(path, size) {
    // Sized under a temporary name and then renamed, so a crash can never leave a real segment
    // name with the wrong size.
    const tmp = `${path}${CREATING_SUFFIX}`;
    rmSync(tmp, { force: true });
    const tfd = openSync(tmp, "wx+");
    try {
      ftruncateSync(tfd, size);
    } finally {
      closeSync(tfd);
    }
    if (existsSync(path)) {
      rmSync(tmp, { force: true });
      throw new Error(`segment ${path} already exists`);
    }
    renameSync(tmp, path);
    return new NodeSegmentFile(path, openSync(path, "r+"), size);
  },
  openSegment(path) {
    const fd = openSync(path, "r+");
    try {
      return new NodeSegmentFile(path, fd, fstatSync(fd).size);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  },
  mkdirs: (dir) => void mkdirSync(dir, { recursive: true }),
  list: (dir) => (existsSync(dir) ? readdirSync(dir) : []),
  exists: (path) => existsSync(path),
  isDirectory: (path) => statSync(path).isDirectory(),
  fileSize: (path) => statSync(path).size,
  mtimeMs: (path) => statSync(path).mtimeMs,
  unlink: (path) => unlinkSync(path),
  remove: (path) => rmSync(path, { recursive: true, force: true }),
  readFile: (path) => (existsSync(path) ? new Uint8Array(readFileSync(path)) : null),
  writeFile: (path, data) => writeFileSync(path, data),
  writeFileAtomic: (path, data) => writeFileAtomic(path, data),
  writeFileAtomicAsync: (path, data) => writeFileAtomicAsync(path, data),
  syncDirAsync(dir) {
    // Best effort, as syncDir: a filesystem that refuses it still has the files' own fsyncs.
    return new Promise((resolve) => {
      open(dir, "r", (err, fd) => {
        if (err) return resolve();
        fsync(fd, () => close(fd, () => resolve()));
      });
    });
  },
  syncDir(dir) {
    try {
      const fd = openSync(dir, "r");
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch {
      // Some filesystems refuse fsync on a directory; the files' own fsyncs still cover their data.
    }
  },
  usedRatio(dir) {
    const s = statfsSync(dir);
    return s.blocks > 0 ? (s.blocks - s.bavail) / s.blocks : 0;
  },
  freeBytes(dir) {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  },
};
