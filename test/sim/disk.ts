/**
 * An in-memory `StoreDisk` for test/sim with a crash model.
 *
 * Each file has its page-cache bytes (`data`: what the mapping shows and pwrite changes) and its
 * durable bytes (what the last completed fdatasync saw). `crash()` replaces every file of a
 * directory by its durable bytes plus a prefix of the unflushed ones — any prefix, chosen by the
 * PRNG — possibly followed by garbage: the torn write of a power cut. An fdatasync completes after a
 * random delay (in call order per file) and makes durable what was in the page cache when it was
 * called; a crash before it completes loses that guarantee.
 *
 * Simplifications, stated: directory operations (create, unlink, rename) and the small files
 * (checkpoint, corrupt.json written with writeFileAtomic; abort and lock markers) are durable at
 * once — the store relies on atomic replace for the former, and the markers are tiny.
 *
 * Every incarnation of a store gets its own `view`; after its crash the view refuses all IO, so a
 * crashed store can never write again.
 */
import { dirname } from "node:path";
import type { SegmentFile, StoreDisk } from "../../src/commitlog/disk.ts";
import type { Rng } from "../harness/fuzz.ts";
import type { ClockView } from "../../src/common/sim-clock.ts";

interface MemFile {
  data: Uint8Array;
  durable: Uint8Array;
  /** When the last fdatasync issued on it completes (they complete in order). */
  syncDoneAt: number;
}

const enc = new TextEncoder();

export interface CrashReport {
  files: number;
  tornFiles: number;
  garbageBytes: number;
}

export class MemDisk {
  readonly files = new Map<string, MemFile>();
  readonly dirs = new Set<string>(["/"]);
  readonly #rng: Rng;
  readonly #syncDelayMaxMs: number;

  constructor(rng: Rng, syncDelayMaxMs = 5) {
    this.#rng = rng;
    this.#syncDelayMaxMs = syncDelayMaxMs;
  }

  view(clock: ClockView): MemDiskView {
    return new MemDiskView(this, clock, this.#rng, this.#syncDelayMaxMs);
  }

  /** Power cut for every file under `root`: durable bytes plus a torn prefix of the rest. */
  crash(root: string, rng: Rng, garbageProbability = 0.5): CrashReport {
    const report: CrashReport = { files: 0, tornFiles: 0, garbageBytes: 0 };
    for (const [path, f] of this.files) {
      if (!path.startsWith(root + "/")) continue;
      report.files++;
      const d = f.data;
      const o = f.durable;
      let first = -1;
      let last = -1;
      for (let i = 0; i < d.length; i++) {
        if (d[i] !== o[i]) {
          if (first < 0) first = i;
          last = i;
        }
      }
      const next = o.slice();
      if (first >= 0) {
        report.tornFiles++;
        const keep = rng.int(first, last + 1);
        next.set(d.subarray(first, keep), first);
        if (rng.bool(garbageProbability)) {
          const n = Math.min(rng.int(1, 48), next.length - keep);
          for (let i = 0; i < n; i++) next[keep + i] = rng.int(0, 255);
          report.garbageBytes += n;
        }
      }
      f.data = next;
      f.durable = next.slice();
      f.syncDoneAt = 0;
    }
    return report;
  }

  /** Deletes everything under `root` (an operator rebuilding a slave). */
  wipe(root: string): void {
    for (const p of [...this.files.keys()]) if (p.startsWith(root + "/")) this.files.delete(p);
    for (const p of [...this.dirs]) if (p === root || p.startsWith(root + "/")) this.dirs.delete(p);
  }
}

class MemSegment implements SegmentFile {
  readonly #disk: MemDiskView;
  readonly #path: string;
  readonly #file: MemFile;
  readonly size: number;

  constructor(disk: MemDiskView, path: string, file: MemFile) {
    this.#disk = disk;
    this.#path = path;
    this.#file = file;
    this.size = file.data.length;
  }

  map(): Uint8Array {
    this.#disk.alive();
    return this.#file.data;
  }

  pwrite(data: Uint8Array, position: number): void {
    this.#disk.alive();
    if (position + data.length > this.size) throw new Error(`${this.#path}: pwrite past the end`);
    this.#file.data.set(data, position);
  }

  syncSync(): void {
    this.#disk.alive();
    this.#file.durable.set(this.#file.data);
  }

  sync(done: (err: Error | null) => void): void {
    this.#disk.alive();
    const f = this.#file;
    const snapshot = f.data.slice();
    const now = this.#disk.clock.now();
    const at = Math.max(f.syncDoneAt, now + this.#disk.rng.int(0, this.#disk.syncDelayMaxMs));
    f.syncDoneAt = at;
    // Completion dies with the incarnation: a crash before it means the bytes were not synced.
    this.#disk.clock.after(at - now, () => {
      if (f.data.length === snapshot.length) f.durable.set(snapshot);
      done(null);
    });
  }

  close(): void {}
}

export class MemDiskView implements StoreDisk {
  readonly #disk: MemDisk;
  readonly clock: ClockView;
  readonly rng: Rng;
  readonly syncDelayMaxMs: number;

  constructor(disk: MemDisk, clock: ClockView, rng: Rng, syncDelayMaxMs: number) {
    this.#disk = disk;
    this.clock = clock;
    this.rng = rng;
    this.syncDelayMaxMs = syncDelayMaxMs;
  }

  alive(): void {
    if (this.clock.dead) throw new Error("simulated process is dead: no more IO");
  }

  #file(path: string): MemFile {
    const f = this.#disk.files.get(path);
    if (!f) throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
    return f;
  }

  #put(path: string, data: Uint8Array): void {
    this.mkdirs(dirname(path));
    this.#disk.files.set(path, { data, durable: data.slice(), syncDoneAt: 0 });
  }

  createSegment(path: string, size: number): SegmentFile {
    this.alive();
    if (this.#disk.files.has(path)) throw new Error(`segment ${path} already exists`);
    this.#put(path, new Uint8Array(size));
    return new MemSegment(this, path, this.#file(path));
  }

  openSegment(path: string): SegmentFile {
    this.alive();
    return new MemSegment(this, path, this.#file(path));
  }

  mkdirs(dir: string): void {
    this.alive();
    for (let d = dir; d !== "/" && d !== "."; d = dirname(d)) this.#disk.dirs.add(d);
  }

  list(dir: string): string[] {
    this.alive();
    const prefix = dir.endsWith("/") ? dir : dir + "/";
    const names = new Set<string>();
    for (const p of [...this.#disk.files.keys(), ...this.#disk.dirs]) {
      if (p.startsWith(prefix) && p.length > prefix.length) names.add(p.slice(prefix.length).split("/")[0]!);
    }
    return [...names].sort();
  }

  exists(path: string): boolean {
    this.alive();
    return this.#disk.files.has(path) || this.#disk.dirs.has(path);
  }

  isDirectory(path: string): boolean {
    this.alive();
    return this.#disk.dirs.has(path);
  }

  fileSize(path: string): number {
    this.alive();
    return this.#file(path).data.length;
  }

  mtimeMs(_path: string): number {
    return this.clock.now();
  }

  unlink(path: string): void {
    this.alive();
    this.#file(path);
    this.#disk.files.delete(path);
  }

  remove(path: string): void {
    this.alive();
    this.#disk.files.delete(path);
    for (const p of [...this.#disk.files.keys()]) if (p.startsWith(path + "/")) this.#disk.files.delete(p);
    for (const p of [...this.#disk.dirs]) if (p === path || p.startsWith(path + "/")) this.#disk.dirs.delete(p);
  }

  readFile(path: string): Uint8Array | null {
    this.alive();
    const f = this.#disk.files.get(path);
    return f ? f.data.slice() : null;
  }

  writeFile(path: string, data: string): void {
    this.alive();
    this.#put(path, enc.encode(data));
  }

  writeFileAtomic(path: string, data: string | Uint8Array): void {
    this.alive();
    const old = this.#disk.files.get(path);
    if (old) this.#put(`${path}.bak`, old.data.slice());
    this.#put(path, typeof data === "string" ? enc.encode(data) : data.slice());
  }

  async writeFileAtomicAsync(path: string, data: string | Uint8Array): Promise<void> {
    this.writeFileAtomic(path, data);
  }

  syncDir(_dir: string): void {
    this.alive();
  }

  async syncDirAsync(dir: string): Promise<void> {
    this.syncDir(dir);
  }

  usedRatio(_dir: string): number {
    return 0.1;
  }

  freeBytes(_dir: string): number {
    return 2 ** 40;
  }
}
