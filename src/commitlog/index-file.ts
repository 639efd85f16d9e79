/**
 * One IndexFile: a hash index from message key to commit-log offset (docs/STORAGE.md §4;
 * RocketMQ store/index/IndexFile.java and IndexHeader.java). Big-endian, byte-compatible with
 * RocketMQ 4.x.
 *
 *   +---------------------+---------------------------------+-----------------------------------+
 *   | header 40 B         | slotNum slots × 4 B             | indexNum entries × 20 B           |
 *   +---------------------+---------------------------------+-----------------------------------+
 *   file size = 40 + slotNum × 4 + indexNum × 20   (defaults 5,000,000 / 20,000,000 → 420,000,040)
 *
 *   header (offset 0):
 *   +----------------+--------------+----------------+--------------+---------------+------------+
 *   | beginTimestamp | endTimestamp | beginPhyOffset | endPhyOffset | hashSlotCount | indexCount |
 *   | 8 B, ms        | 8 B, ms      | 8 B            | 8 B          | 4 B           | 4 B        |
 *   +----------------+--------------+----------------+--------------+---------------+------------+
 *
 *   slot s (offset 40 + s × 4): int32 number of the newest entry whose key lands in slot s; 0 = empty
 *
 *   entry n (offset 40 + slotNum × 4 + n × 20):
 *   +---------+-----------+-----------------------------+-----------+
 *   | keyHash | phyOffset | timeDiff                    | prevIndex |
 *   | 4 B     | 8 B       | 4 B, s since beginTimestamp | 4 B       |
 *   +---------+-----------+-----------------------------+-----------+
 *
 *   keyHash = |String.hashCode(`${topic}#${key}`)| (0 for Integer.MIN_VALUE); slot = keyHash % slotNum.
 *
 * Invariants of what this class writes (a file read from disk is not trusted to keep them — see
 * below):
 *   - 1 <= indexCount <= indexNum. Entries 1 .. indexCount-1 are written; entry 0 is never used,
 *     so 0 can mean "no entry". Capacity is therefore indexNum - 1 keys; full ⇔ indexCount = indexNum.
 *   - hashSlotCount = indexCount - 1. RocketMQ increments it on every put despite its name (it
 *     does not count occupied slots); we do the same so files stay interchangeable.
 *   - slot[s] = 0, or 1 <= slot[s] < indexCount and entry slot[s] has keyHash % slotNum = s.
 *   - entry n: prevIndex = 0 or 1 <= prevIndex < n. Chains only point to older entries, so
 *     a walk from a slot strictly decreases and ends.
 *   - keyHash in [0, 2^31-1]; timeDiff in [0, 2^31-1]; an entry's time, beginTimestamp +
 *     timeDiff × 1000, is its store time rounded down to whole seconds after beginTimestamp.
 *   - beginTimestamp / beginPhyOffset come from the first put (or from `create`, for an empty file
 *     that continues a full one); endTimestamp / endPhyOffset from the newest put. Offsets never
 *     decrease along the entries, because the dispatcher indexes the CommitLog in order.
 *
 * Reading a file from disk (docs/CONVENTIONS.md §2): `open` validates the header (counts in range, size equal
 * to the geometry) and returns `{ invalid }` otherwise. Slots and prevIndex links are checked on
 * every step: a pointer outside the written entries or not strictly older ends the walk, and a
 * walk is capped at indexCount steps. Lookups never throw on corrupted entries and never loop.
 *
 * IO: the file is created at full size (ftruncate, sparse) and used through a shared mapping (a
 * `SegmentFile` of the store's disk, ./disk.ts), so writes go straight into the page cache;
 * `flush()` makes them durable with fdatasync (the size never changes, so no metadata to sync). Bun
 * cannot map an empty file, and truncating a mapped file crashes the process on the next access,
 * so this file is never truncated; `close()` closes the fd and drops the mapping (Bun unmaps it
 * when the array is collected). Unlinking a mapped file is safe on Linux.
 *
 * Blocks are allocated through the descriptor before the mapping writes to them: the header and
 * slot table when the file is created (or first written after a restart), the entries
 * ALLOCATE_AHEAD_BYTES at a time. A store of a mapping into a hole of a full filesystem is a
 * SIGBUS that kills the process; a pwrite there is an ENOSPC error the store can answer. (The
 * store keeps space free so that neither happens: MessageStore #checkDisk.)
 *
 * Write order inside `putKey`: entry, then header, then slot. A process killed between any two
 * steps leaves a file whose chains are intact: an entry not yet counted is unreachable, and a
 * counted entry not yet linked from its slot is merely unreachable too.
 */
import { assert } from "../common/assert.ts";
import { INT32_MAX } from "../common/int32.ts";
import { nodeDisk, type SegmentFile, type StoreDisk } from "./disk.ts";
import { javaStringHashCode, setInt64 } from "../common/message-record.ts";
import { INDEX_ENTRY_SIZE_BYTES, INDEX_HEADER_SIZE_BYTES, INDEX_SLOT_SIZE_BYTES } from "../protocol/store-layout.ts";

/** RocketMQ's `maxHashSlotNum`. */
export const INDEX_SLOT_NUM_DEFAULT = 5_000_000;
/** RocketMQ's `maxIndexNum`. */
export const INDEX_NUM_DEFAULT = 20_000_000;

/** Header fields: byte offset and width. A test checks they tile the 40-byte header. */
export const INDEX_HEADER_LAYOUT = {
  beginTimestamp: { offset: 0, size: 8 },
  endTimestamp: { offset: 8, size: 8 },
  beginPhyOffset: { offset: 16, size: 8 },
  endPhyOffset: { offset: 24, size: 8 },
  hashSlotCount: { offset: 32, size: 4 },
  indexCount: { offset: 36, size: 4 },
} as const;

/** Entry fields: byte offset within the entry and width. A test checks they tile 20 bytes. */
export const INDEX_ENTRY_LAYOUT = {
  keyHash: { offset: 0, size: 4 },
  phyOffset: { offset: 4, size: 8 },
  timeDiff: { offset: 12, size: 4 },
  prevIndex: { offset: 16, size: 4 },
} as const;

/** Entries allocated ahead of the next one (≈3,300 keys per pwrite). */
const ALLOCATE_AHEAD_BYTES = 64 * 1024;
/** The largest pwrite of an allocation (the slot table is 20 MB by default). */
const ALLOCATE_CHUNK_BYTES = 1024 * 1024;
const OPENED_UNCHECKED = -1;
const INT32_MIN = -0x80000000;
const H = INDEX_HEADER_LAYOUT;
const E = INDEX_ENTRY_LAYOUT;

/** RocketMQ's `indexKeyHashMethod`: |hashCode|, with Integer.MIN_VALUE (whose abs overflows) → 0. */
export function indexKeyHash(key: string): number {
  const h = javaStringHashCode(key);
  return h === INT32_MIN ? 0 : Math.abs(h);
}

const prefixHashes = new Map<string, number>();

/**
 * indexKeyHash(indexKey(topic, key)) without building the string (this runs for every stored
 * message): Java's String.hashCode folds left, so the `topic#` prefix is hashed once per topic and
 * the fold goes on over the key.
 */
export function topicKeyHash(topic: string, key: string): number {
  let h = prefixHashes.get(topic);
  if (h === undefined) {
    if (prefixHashes.size >= 65536) prefixHashes.clear();
    h = javaStringHashCode(`${topic}#`);
    prefixHashes.set(topic, h);
  }
  for (let i = 0; i < key.length; i++) h = (Math.imul(31, h) + key.charCodeAt(i)) | 0;
  return h === INT32_MIN ? 0 : Math.abs(h);
}

/** The string RocketMQ hashes for a lookup: the key is only unique within its topic. */
export function indexKey(topic: string, key: string): string {
  return `${topic}#${key}`;
}

export interface IndexGeometry {
  /** Number of hash slots (RocketMQ `maxHashSlotNum`). */
  slotNum: number;
  /** Number of entry positions, entry 0 unused (RocketMQ `maxIndexNum`). */
  indexNum: number;
}

export function indexFileSizeBytes(g: IndexGeometry): number {
  return INDEX_HEADER_SIZE_BYTES + g.slotNum * INDEX_SLOT_SIZE_BYTES + g.indexNum * INDEX_ENTRY_SIZE_BYTES;
}

/**
 * The geometry is configuration, validated before it reaches the store; a bad one here is a bug.
 * Entry numbers are stored in int32 fields, hence the int32 bounds; indexNum >= 2 so a fresh file
 * can take at least one key (otherwise rolling to a new file could never make progress).
 */
export function assertIndexGeometry(g: IndexGeometry): void {
  assert(Number.isInteger(g.slotNum) && g.slotNum >= 1 && g.slotNum <= INT32_MAX, "index slotNum {} not in [1, {}]", g.slotNum, INT32_MAX);
  assert(Number.isInteger(g.indexNum) && g.indexNum >= 2 && g.indexNum <= INT32_MAX, "index indexNum {} not in [2, {}]", g.indexNum, INT32_MAX);
}

export interface IndexFileCreateOptions extends IndexGeometry {
  /**
   * Initial begin/end timestamp of an empty file. The service passes the previous (full) file's
   * endTimestamp so the empty file's time range is meaningful; the first put overwrites begin.
   */
  beginTimestamp?: number;
  /** Same for the offsets: the dispatcher's "already indexed?" check reads endPhyOffset. */
  beginPhyOffset?: number;
}

export class IndexFile {
  readonly path: string;
  readonly slotNum: number;
  readonly indexNum: number;
  readonly #file: SegmentFile;
  #map: Uint8Array | null;
  #view: DataView;
  #entriesStart: number;
  // A copy of the header, so a stray write into the mapped header after open cannot steer the
  // bounds checks. Invariant: equal to the header bytes in the mapping.
  #beginTimestamp = 0;
  #endTimestamp = 0;
  #beginPhyOffset = 0;
  #endPhyOffset = 0;
  #hashSlotCount = 0;
  #indexCount = 1;
  #dirty = false;
  /**
   * Bytes [0, allocatedEnd) are known to have disk blocks (written through the descriptor).
   * OPENED_UNCHECKED after open: the written entries have blocks, the slot table may not (a file
   * of an older version, whose untouched slot pages are holes).
   */
  #allocatedEnd = 0;

  private constructor(path: string, g: IndexGeometry, file: SegmentFile) {
    this.path = path;
    this.slotNum = g.slotNum;
    this.indexNum = g.indexNum;
    this.#file = file;
    this.#map = file.map();
    this.#view = new DataView(this.#map.buffer, this.#map.byteOffset, this.#map.byteLength);
    this.#entriesStart = INDEX_HEADER_SIZE_BYTES + g.slotNum * INDEX_SLOT_SIZE_BYTES;
  }

  /** Creates a new, empty index file at full size. Fails if `path` exists (never clobbers). */
  static create(path: string, opts: IndexFileCreateOptions, disk: StoreDisk = nodeDisk): IndexFile {
    assertIndexGeometry(opts);
    const file = disk.createSegment(path, indexFileSizeBytes(opts));
    let f: IndexFile;
    try {
      f = new IndexFile(path, opts, file);
    } catch (e) {
      // Leave no zero-filled file behind: it would fail validation (indexCount 0) on every load.
      file.close();
      try {
        disk.unlink(path);
      } catch {
        // The original error is the one worth reporting.
      }
      throw e;
    }
    try {
      f.#allocate(f.#entriesStart + INDEX_ENTRY_SIZE_BYTES);
    } catch (e) {
      // No room for the slot table (disk full): no file, rather than one the mapping cannot write.
      f.close();
      try {
        disk.unlink(path);
      } catch {
        // The original error is the one worth reporting.
      }
      throw e;
    }
    const ts = opts.beginTimestamp ?? 0;
    const off = opts.beginPhyOffset ?? 0;
    f.#beginTimestamp = ts;
    f.#endTimestamp = ts;
    f.#beginPhyOffset = off;
    f.#endPhyOffset = off;
    f.#hashSlotCount = 0;
    f.#indexCount = 1;
    f.#writeHeader();
    return f;
  }

  /** Opens an existing index file; its header and size are input and are validated. */
  static open(path: string, g: IndexGeometry, disk: StoreDisk = nodeDisk): IndexFile | { invalid: string } {
    assertIndexGeometry(g);
    const file = disk.openSegment(path);
    const expected = indexFileSizeBytes(g);
    const size = file.size;
    if (size !== expected) {
      file.close();
      return { invalid: `size ${size} bytes, expected ${expected} for slotNum ${g.slotNum}, indexNum ${g.indexNum}` };
    }
    let f: IndexFile;
    try {
      f = new IndexFile(path, g, file);
    } catch (e) {
      file.close();
      throw e;
    }
    const problem = f.#loadHeader();
    if (problem !== null) {
      f.close();
      return { invalid: problem };
    }
    f.#allocatedEnd = OPENED_UNCHECKED;
    return f;
  }

  get beginTimestamp(): number {
    return this.#beginTimestamp;
  }
  get endTimestamp(): number {
    return this.#endTimestamp;
  }
  get beginPhyOffset(): number {
    return this.#beginPhyOffset;
  }
  get endPhyOffset(): number {
    return this.#endPhyOffset;
  }
  /** Next entry number; starts at 1, so the number of keys stored is indexCount - 1. */
  get indexCount(): number {
    return this.#indexCount;
  }
  get closed(): boolean {
    return this.#map === null;
  }

  isFull(): boolean {
    return this.#indexCount >= this.indexNum;
  }

  /**
   * Gives [allocatedEnd, upTo + ALLOCATE_AHEAD_BYTES) disk blocks by writing it through the
   * descriptor with the bytes it holds now (zeros in a new file; after a restart, what is
   * there): nothing changes but the allocation. Throws ENOSPC before the mapping touches it.
   */
  #allocate(upTo: number): void {
    const map = this.#map;
    if (map === null) return;
    if (this.#allocatedEnd === OPENED_UNCHECKED) {
      // Once per opened file: the slot table (20 MB by default), then the entries already
      // written count as allocated.
      this.#allocatedEnd = 0;
      this.#allocate(this.#entriesStart - ALLOCATE_AHEAD_BYTES);
      this.#allocatedEnd = Math.max(this.#allocatedEnd, this.#entriesStart + this.#indexCount * INDEX_ENTRY_SIZE_BYTES);
    }
    const end = Math.min(map.length, upTo + ALLOCATE_AHEAD_BYTES);
    for (let p = this.#allocatedEnd; p < end; p += ALLOCATE_CHUNK_BYTES) {
      const n = Math.min(ALLOCATE_CHUNK_BYTES, end - p);
      // A copy: a pwrite whose source is the mapping of the same bytes would fault on the page
      // it is writing.
      this.#file.pwrite(map.slice(p, p + n), p);
      this.#allocatedEnd = p + n;
    }
  }

  /** Whether [begin, end] (ms) overlaps the file's [beginTimestamp, endTimestamp]. */
  isTimeMatched(begin: number, end: number): boolean {
    return begin <= this.#endTimestamp && end >= this.#beginTimestamp;
  }

  /**
   * Adds `key` (already `topic#key`) → phyOffset. Returns false when the file is full; the caller
   * rolls to a new file.
   */
  putKey(key: string, phyOffset: number, storeTimestamp: number): boolean {
    return this.putHash(indexKeyHash(key), phyOffset, storeTimestamp);
  }

  /** putKey with the key's hash already computed (indexKeyHash / topicKeyHash). */
  putHash(hash: number, phyOffset: number, storeTimestamp: number): boolean {
    const view = this.#open();
    if (!Number.isSafeInteger(phyOffset) || phyOffset < 0) throw new RangeError(`phyOffset ${phyOffset} is not a valid offset`);
    if (!Number.isSafeInteger(storeTimestamp) || storeTimestamp < 0) throw new RangeError(`storeTimestamp ${storeTimestamp} is not valid`);
    if (this.isFull()) return false;

    const slotPos = INDEX_HEADER_SIZE_BYTES + (hash % this.slotNum) * INDEX_SLOT_SIZE_BYTES;
    const n = this.#indexCount;
    // A slot value that does not name a written entry is garbage (e.g. from a torn file); start a
    // fresh chain rather than link to it.
    let head = view.getInt32(slotPos);
    if (head < 1 || head >= n) head = 0;

    if (n === 1) {
      // First put: the file's time base is this record, so its own timeDiff is 0. (RocketMQ
      // computes the diff against the previous file's end first, then overwrites begin.)
      this.#beginTimestamp = storeTimestamp;
      this.#beginPhyOffset = phyOffset;
    }
    let timeDiff = Math.trunc((storeTimestamp - this.#beginTimestamp) / 1000);
    // A clock stepping back gives a negative diff; clamp as RocketMQ does so the field stays valid.
    if (timeDiff < 0) timeDiff = 0;
    if (timeDiff > INT32_MAX) timeDiff = INT32_MAX;

    const at = this.#entriesStart + n * INDEX_ENTRY_SIZE_BYTES;
    if (at + INDEX_ENTRY_SIZE_BYTES > this.#allocatedEnd) this.#allocate(at + INDEX_ENTRY_SIZE_BYTES);
    view.setInt32(at + E.keyHash.offset, hash);
    setInt64(view, at + E.phyOffset.offset, phyOffset);
    view.setInt32(at + E.timeDiff.offset, timeDiff);
    view.setInt32(at + E.prevIndex.offset, head);

    this.#endTimestamp = storeTimestamp;
    this.#endPhyOffset = phyOffset;
    this.#hashSlotCount += 1;
    this.#indexCount = n + 1;
    // The header as RocketMQ keeps it, updated on every put; only what a put changes is written
    // (the begin fields once, on the first put), with no BigInt on this per-message path.
    if (n === 1) {
      setInt64(view, H.beginTimestamp.offset, this.#beginTimestamp);
      setInt64(view, H.beginPhyOffset.offset, this.#beginPhyOffset);
    }
    setInt64(view, H.endTimestamp.offset, storeTimestamp);
    setInt64(view, H.endPhyOffset.offset, phyOffset);
    view.setInt32(H.hashSlotCount.offset, this.#hashSlotCount);
    view.setInt32(H.indexCount.offset, this.#indexCount);

    view.setInt32(slotPos, n);
    this.#dirty = true;
    return true;
  }

  /**
   * Commit-log offsets stored under `key` (already `topic#key`) whose entry time is in
   * [begin, end] ms, newest first, at most maxNum. Hash collisions are returned too: the caller
   * must check each record's topic and keys against the CommitLog.
   */
  selectPhyOffsets(key: string, maxNum: number, begin: number, end: number): number[] {
    const view = this.#open();
    const out: number[] = [];
    const count = this.#indexCount;
    if (maxNum <= 0 || count <= 1) return out;
    const hash = indexKeyHash(key);
    let n = view.getInt32(INDEX_HEADER_SIZE_BYTES + (hash % this.slotNum) * INDEX_SLOT_SIZE_BYTES);
    if (n < 1 || n >= count) return out;
    // prevIndex < n is checked on every step, so the walk already terminates; the cap is a second
    // guard that does not depend on that check being right.
    for (let steps = 0; steps < count; steps++) {
      const at = this.#entriesStart + n * INDEX_ENTRY_SIZE_BYTES;
      const keyHash = view.getInt32(at + E.keyHash.offset);
      const phyOffset = view.getBigInt64(at + E.phyOffset.offset);
      const timeDiff = view.getInt32(at + E.timeDiff.offset);
      const prev = view.getInt32(at + E.prevIndex.offset);
      if (timeDiff < 0 || phyOffset < 0n || phyOffset > BigInt(Number.MAX_SAFE_INTEGER)) break;
      const time = this.#beginTimestamp + timeDiff * 1000;
      if (keyHash === hash && time >= begin && time <= end) {
        out.push(Number(phyOffset));
        if (out.length >= maxNum) break;
      }
      // Entries are in store-time order, so once older than `begin` the rest of the chain is too.
      if (prev < 1 || prev >= n || time < begin) break;
      n = prev;
    }
    return out;
  }

  /**
   * Recovery support: the CommitLog was cut back to `maxPhyOffset`, and records will be written
   * again from there. Lower endPhyOffset so the dispatcher's "offset < endPhyOffset means already
   * indexed" check does not skip them. Entries above stay; lookups verify against the CommitLog.
   */
  clampEndPhyOffset(maxPhyOffset: number): boolean {
    this.#open();
    if (this.#endPhyOffset <= maxPhyOffset) return false;
    this.#endPhyOffset = Math.max(maxPhyOffset, this.#beginPhyOffset);
    this.#writeHeader();
    this.#dirty = true;
    return true;
  }

  /** Makes every write so far durable. Returns false when there was nothing to write. */
  flush(): boolean {
    if (this.#map === null || !this.#dirty) return false;
    // Clear first: nothing can write between here and fsync (single thread), and if fsync throws
    // the caller treats the store as failed anyway.
    this.#dirty = false;
    this.#file.syncSync();
    return true;
  }

  /**
   * flush() on the thread pool: the periodic checkpoint must not stall the event loop for the
   * length of an fsync (tens of ms on a busy disk, more for a file written through its mapping).
   */
  flushAsync(): Promise<boolean> {
    if (this.#map === null || !this.#dirty) return Promise.resolve(false);
    this.#dirty = false;
    return new Promise((resolve, reject) => this.#file.sync((err) => (err ? reject(err) : resolve(true))));
  }

  /** Closes the fd and drops the mapping. Does not fsync: call flush() first for durability. */
  close(): void {
    if (this.#map === null) return;
    this.#file.close();
    this.#map = null;
    this.#view = new DataView(new ArrayBuffer(0));
  }

  #open(): DataView {
    if (this.#map === null) throw new Error(`index file ${this.path} used after close`);
    return this.#view;
  }

  #writeHeader(): void {
    const v = this.#open();
    v.setBigInt64(H.beginTimestamp.offset, BigInt(this.#beginTimestamp));
    v.setBigInt64(H.endTimestamp.offset, BigInt(this.#endTimestamp));
    v.setBigInt64(H.beginPhyOffset.offset, BigInt(this.#beginPhyOffset));
    v.setBigInt64(H.endPhyOffset.offset, BigInt(this.#endPhyOffset));
    v.setInt32(H.hashSlotCount.offset, this.#hashSlotCount);
    v.setInt32(H.indexCount.offset, this.#indexCount);
  }

  /** Reads and validates the header; returns the reason it is unusable, or null. */
  #loadHeader(): string | null {
    const v = this.#open();
    const wide = ["beginTimestamp", "endTimestamp", "beginPhyOffset", "endPhyOffset"] as const;
    const values: number[] = [];
    for (const name of wide) {
      const x = v.getBigInt64(H[name].offset);
      if (x < 0n || x > BigInt(Number.MAX_SAFE_INTEGER)) return `header ${name} ${x} out of range`;
      values.push(Number(x));
    }
    const [beginTimestamp = 0, endTimestamp = 0, beginPhyOffset = 0, endPhyOffset = 0] = values;
    const hashSlotCount = v.getInt32(H.hashSlotCount.offset);
    const indexCount = v.getInt32(H.indexCount.offset);
    if (indexCount < 1 || indexCount > this.indexNum) return `header indexCount ${indexCount} not in [1, ${this.indexNum}]`;
    // Only a sanity bound: RocketMQ writes its header lazily, so the two counts may be a put apart.
    if (hashSlotCount < 0 || hashSlotCount > this.indexNum) return `header hashSlotCount ${hashSlotCount} not in [0, ${this.indexNum}]`;
    this.#beginTimestamp = beginTimestamp;
    this.#endTimestamp = endTimestamp;
    this.#beginPhyOffset = beginPhyOffset;
    this.#endPhyOffset = endPhyOffset;
    this.#hashSlotCount = hashSlotCount;
    this.#indexCount = indexCount;
    return null;
  }
}
