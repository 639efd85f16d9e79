/**
 * StoreCheckpoint: how far the store is known to be durable, so recovery knows where to start.
 * Unlike RocketMQ's, it carries a CRC and is replaced atomically (temp file + rename).
 *
 *   +-----------+-----------+---------------------------+---------------------------+
 *   | magic 4 B | version 4 | commitLogFlushedOffset 8  | dispatchedOffset 8        |
 *   +-----------+-----------+---------------------------+---------------------------+
 *   | indexCheckpointTimestamp 8 | writtenAt 8          | crc32 of the bytes before 4 |
 *   +----------------------------+----------------------+-----------------------------+
 *
 * Invariants:
 *   - every CommitLog byte below commitLogFlushedOffset survived an fdatasync;
 *   - ConsumeQueue units (and index entries) for every record below dispatchedOffset are durable;
 *     dispatchedOffset is a record boundary, so recovery can start decoding there;
 *   - index files finished before indexCheckpointTimestamp are complete (see IndexService.load).
 * A checkpoint whose magic, version, size or CRC is wrong is treated as absent: recovery then
 * scans the whole CommitLog, which is slower but never wrong.
 */
import { nodeDisk, type StoreDisk } from "./disk.ts";
import { assert } from "../common/assert.ts";

export const CHECKPOINT_MAGIC = 0x52424350; // "RBCP"
export const CHECKPOINT_VERSION = 1;
export const CHECKPOINT_SIZE = 4 + 4 + 8 + 8 + 8 + 8 + 4;

export interface Checkpoint {
  commitLogFlushedOffset: number;
  dispatchedOffset: number;
  indexCheckpointTimestamp: number;
  writtenAt: number;
}

const TWO_32 = 2 ** 32;

function setLong(v: DataView, pos: number, n: number): void {
  v.setUint32(pos, Math.floor(n / TWO_32));
  v.setUint32(pos + 4, n >>> 0);
}

function isLong(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

function getLong(v: DataView, pos: number): number {
  return v.getUint32(pos) * TWO_32 + v.getUint32(pos + 4);
}

export function encodeCheckpoint(c: Checkpoint): Uint8Array {
  // The store's own positions and times: whole and non-negative, or the words below would write
  // another number than the one meant (decodeCheckpoint checks the bytes, not the meaning).
  assert(
    isLong(c.commitLogFlushedOffset) && isLong(c.dispatchedOffset),
    "checkpoint of flushed {}, dispatched {}",
    c.commitLogFlushedOffset,
    c.dispatchedOffset,
  );
  assert(
    isLong(c.indexCheckpointTimestamp) && isLong(c.writtenAt),
    "checkpoint of index time {}, written at {}",
    c.indexCheckpointTimestamp,
    c.writtenAt,
  );
  const out = new Uint8Array(CHECKPOINT_SIZE);
  const v = new DataView(out.buffer);
  v.setUint32(0, CHECKPOINT_MAGIC);
  v.setUint32(4, CHECKPOINT_VERSION);
  setLong(v, 8, c.commitLogFlushedOffset);
  setLong(v, 16, c.dispatchedOffset);
  setLong(v, 24, c.indexCheckpointTimestamp);
  setLong(v, 32, c.writtenAt);
  v.setUint32(40, Bun.hash.crc32(out.subarray(0, 40)) >>> 0);
  return out;
}

export function decodeCheckpoint(bytes: Uint8Array): Checkpoint | { invalid: string } {
  if (bytes.length !== CHECKPOINT_SIZE) return { invalid: `checkpoint is ${bytes.length} bytes, expected ${CHECKPOINT_SIZE}` };
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (v.getUint32(0) !== CHECKPOINT_MAGIC) return { invalid: "checkpoint magic is wrong" };
  if (v.getUint32(4) !== CHECKPOINT_VERSION) return { invalid: `checkpoint version ${v.getUint32(4)} is not ${CHECKPOINT_VERSION}` };
  if (v.getUint32(40) !== Bun.hash.crc32(bytes.subarray(0, 40)) >>> 0) return { invalid: "checkpoint CRC mismatch" };
  return {
    commitLogFlushedOffset: getLong(v, 8),
    dispatchedOffset: getLong(v, 16),
    indexCheckpointTimestamp: getLong(v, 24),
    writtenAt: getLong(v, 32),
  };
}

export function readCheckpoint(path: string, disk: StoreDisk = nodeDisk): Checkpoint | { invalid: string } | null {
  const bytes = disk.readFile(path);
  return bytes === null ? null : decodeCheckpoint(bytes);
}

export function writeCheckpoint(path: string, c: Checkpoint, disk: StoreDisk = nodeDisk): void {
  disk.writeFileAtomic(path, encodeCheckpoint(c));
}

/** writeCheckpoint off the event loop (the periodic checkpoint; shutdown uses the sync one). */
export function writeCheckpointAsync(path: string, c: Checkpoint, disk: StoreDisk = nodeDisk): Promise<void> {
  return disk.writeFileAtomicAsync(path, encodeCheckpoint(c));
}
