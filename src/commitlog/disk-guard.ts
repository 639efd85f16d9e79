/**
 * The store's disk admission: writes are refused while the filesystem is above
 * store.diskCriticalRatio or has less than the floor free, so the store never meets ENOSPC itself
 * (Java's broker, writing through a mapping, dies of SIGBUS there). The disk is looked at (statfs)
 * every DISK_RECHECK_BYTES appended, by the retention timer, and at most once a second by a
 * refused put; between two looks a put tells the floor is near from the bytes appended since,
 * without a syscall. Also the disk reserve (store.diskReserveBytes): a file kept while there is
 * room, deleted when the store opens on a full disk so recovery can write.
 */
import { join } from "node:path";
import type { Clock, TimerHandle } from "../common/clock.ts";
import type { Logger } from "../common/log.ts";
import type { SegmentFile, StoreDisk } from "./disk.ts";
import type { MessageStoreOptions } from "./store-types.ts";

/** Appended bytes between two looks at the disk (statfs), and the slack kept free beyond them. */
const DISK_RECHECK_BYTES = 4 * 1024 * 1024;
const DISK_FLOOR_SLACK_BYTES = 8 * 1024 * 1024;
/** A put refused for want of disk looks again at most this often. */
const DISK_RECHECK_MS = 1000;
/** The disk reserve in the store directory (MessageStoreOptions.diskReserveBytes). */
export const RESERVE_FILE = "disk-reserve";
/** The reserve is written a little after start, not during start-up, whose time is measured. */
const RESERVE_DELAY_MS = 2000;

export const mib = (bytes: number): string => (bytes / 1048576).toFixed(1);

type GuardOptions = Pick<MessageStoreOptions, "dir" | "diskCriticalRatio" | "indexSlotNum" | "diskReserveBytes">;

export class DiskGuard {
  /** The store's options object: reconfigure changes diskCriticalRatio in place. */
  readonly #o: GuardOptions;
  readonly #disk: StoreDisk;
  readonly #now: () => number;
  readonly #log: Logger;
  /** Why writes are refused for want of disk, or null. */
  #full: string | null = null;
  #checkedAt = 0;
  #freeBytes = Number.POSITIVE_INFINITY;
  #appendedSinceCheck = 0;
  /** RESERVE_FILE is known to exist (checked on disk once, then kept here). */
  #reservePresent = false;
  #reserveTimer: TimerHandle | undefined;

  constructor(o: GuardOptions, disk: StoreDisk, now: () => number, log: Logger) {
    this.#o = o;
    this.#disk = disk;
    this.#now = now;
    this.#log = log;
  }

  get isFull(): boolean {
    return this.#full !== null;
  }

  /** Fraction of the store's filesystem in use (0..1). */
  usageRatio(): number {
    return this.#disk.usedRatio(this.#o.dir);
  }

  /** Bytes appended: past DISK_RECHECK_BYTES since the last look, look again. */
  appended(bytes: number): void {
    this.#appendedSinceCheck += bytes;
    if (this.#appendedSinceCheck >= DISK_RECHECK_BYTES) this.check();
  }

  /** Why a write must be refused for want of disk now, or null. */
  refusal(): string | null {
    if (this.#full === null && this.#freeBytes - this.#appendedSinceCheck >= this.#floorBytes()) return null;
    // Refusing: look again at most once a second (space freed by retention or an operator lets
    // writes resume by themselves); near the floor: look now, the last look may be stale.
    if (this.#full === null || this.#now() - this.#checkedAt >= DISK_RECHECK_MS) this.check();
    return this.#full;
  }

  /** Looks at the disk (statfs); the usage ratio. */
  check(): number {
    const dir = this.#o.dir;
    const ratio = this.usageRatio();
    const free = this.#disk.freeBytes(dir);
    this.#checkedAt = this.#now();
    this.#freeBytes = free;
    this.#appendedSinceCheck = 0;
    const floor = this.#floorBytes();
    const why =
      ratio > this.#o.diskCriticalRatio
        ? `above store.diskCriticalRatio ${this.#o.diskCriticalRatio}`
        : free < floor
          ? `under the ${mib(floor)} MiB the store keeps free`
          : null;
    const was = this.#full;
    this.#full =
      why === null
        ? null
        : `the broker's disk is full: ${dir} is ${(ratio * 100).toFixed(1)}% used, ${mib(free)} MiB free (${why}); ` +
          "writes are refused until retention or an operator frees space";
    if (this.#full !== null && was === null) this.#log.warn(this.#full);
    if (this.#full === null && was !== null) this.#log.info(`disk space is back (${mib(free)} MiB free on ${dir}): writes resume`);
    return ratio;
  }

  /** After start: the reserve a little later, then by every retention check (keepReserve). */
  start(clock: Clock, running: () => boolean): void {
    this.check();
    if ((this.#o.diskReserveBytes ?? 0) <= 0) return;
    this.#reserveTimer = clock.setTimeout(() => {
      this.#reserveTimer = undefined;
      if (running() && this.check() >= 0) this.keepReserve();
    }, RESERVE_DELAY_MS);
  }

  stop(clock: Clock): void {
    if (this.#reserveTimer !== undefined) clock.clearTimeout(this.#reserveTimer);
    this.#reserveTimer = undefined;
  }

  /**
   * Writes the reserve file when it is missing and the disk has room for it above the floor; its
   * blocks are allocated (written), so deleting it frees them. A failure (the disk filled
   * meanwhile) leaves no file.
   */
  keepReserve(): void {
    const size = this.#o.diskReserveBytes ?? 0;
    if (this.#full !== null || size <= 0 || this.#reservePresent || this.#freeBytes - this.#floorBytes() < size) return;
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
      this.#log.rateLimited("warn", "disk-reserve", `cannot keep the disk reserve ${path}: ${e instanceof Error ? e.message : String(e)}`, 600_000);
    }
  }

  /**
   * What must stay free for the writes between two looks at the disk: DISK_RECHECK_BYTES of
   * CommitLog, one new IndexFile's slot table (allocated at creation, ./index-file.ts) and room
   * for ConsumeQueue pages and the metadata files.
   */
  #floorBytes(): number {
    return DISK_RECHECK_BYTES + this.#o.indexSlotNum * 4 + DISK_FLOOR_SLACK_BYTES;
  }
}

/** Opening on a disk with less free than the reserve: delete it, so recovery can write. */
export function releaseReserveIfFull(disk: StoreDisk, o: Pick<MessageStoreOptions, "dir" | "diskReserveBytes">, log: Logger): void {
  const size = o.diskReserveBytes ?? 0;
  const path = join(o.dir, RESERVE_FILE);
  if (size <= 0 || !disk.exists(path)) return;
  const free = disk.freeBytes(o.dir);
  if (free >= size) return;
  disk.unlink(path);
  log.warn(
    `the disk of ${o.dir} is full (${mib(free)} MiB free): deleted the ${mib(size)} MiB reserve ${path} so recovery can write; ` +
      "writes stay refused until space is freed",
  );
}
