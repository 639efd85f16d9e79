/**
 * The HA replication stream (RocketMQ 4.x master/slave, non-DLedger), raw TCP on the master's
 * HA port (listen port + 1). Big-endian. Compatible with Java masters and slaves.
 *
 * Slave → master, repeatedly (its CommitLog max offset: where it wants data from / what it has):
 *   +--------------------------------+
 *   | slave max physical offset (8)  |
 *   +--------------------------------+
 *
 * With automatic failover (RocketBun's own; no Java broker sends or expects it) a slave first
 * names itself, so a SYNC_MASTER counts only the acknowledgements of its sync state set:
 *   +----------------+----------------+
 *   | 0xFFFFFFFF (4) | replica id (4) |      an offset no log reaches (2^64 − 2^32 + id)
 *   +----------------+----------------+
 *
 * Master → slave, repeatedly:
 *   +--------------------------------+----------------+------------------------------+
 *   | physical offset of data (8)    | data size n (4)| n raw CommitLog bytes        |
 *   +--------------------------------+----------------+------------------------------+
 *   n = 0 is a heartbeat. A chunk never crosses a CommitLog segment end.
 *
 * With automatic failover, to a slave that named itself, first: its epoch (a slave refuses the
 * stream of a master of an older epoch than the one it follows):
 *   +----------------+----------------+----------+
 *   | 0xFFFFFFFF (4) | epoch (4)      | 0 (4)    |
 *   +----------------+----------------+----------+
 *
 * Invariants the slave checks: n ≤ HA_CHUNK_MAX_BYTES (here); each chunk continues the stream
 * exactly and holds verifiable records (./record-stream.ts). A violation means the stream is
 * broken: disconnect and resume from the slave's offset.
 *
 * The decoders are pure (no IO) and take any TCP split (transfer.test.ts cuts at every offset).
 */
import { assert } from "../common/assert.ts";

export const HA_REPORT_SIZE = 8;
export const HA_HEADER_SIZE = 8 + 4;
/** Upper bound on a chunk we accept (a Java master sends ≤ 32 KiB; ours ≤ haTransferBatchBytes). */
export const HA_CHUNK_MAX_BYTES = 16 * 1024 * 1024;

const TWO_32 = 2 ** 32;

export function encodeReport(offset: number): Uint8Array {
  // Our own log end: a whole, non-negative number (the words below would silently wrap anything else).
  assert(Number.isSafeInteger(offset) && offset >= 0, "HA report of offset {}", offset);
  const b = new Uint8Array(HA_REPORT_SIZE);
  const v = new DataView(b.buffer);
  v.setUint32(0, Math.floor(offset / TWO_32));
  v.setUint32(4, offset >>> 0);
  return b;
}

export function encodeChunkHeader(offset: number, size: number): Uint8Array {
  // The master streams its own log: a real offset, and a size that fits the field (a slave refuses
  // more than HA_CHUNK_MAX_BYTES; the tests build such headers to see it do so).
  assert(Number.isSafeInteger(offset) && offset >= 0, "HA chunk header at offset {}", offset);
  assert(Number.isInteger(size) && size >= 0 && size <= 0x7fffffff, "HA chunk of {} bytes at {}", size, offset);
  const b = new Uint8Array(HA_HEADER_SIZE);
  const v = new DataView(b.buffer);
  v.setUint32(0, Math.floor(offset / TWO_32));
  v.setUint32(4, offset >>> 0);
  v.setInt32(8, size);
  return b;
}

/** Master side: the slave's 8-byte reports, in any TCP split. Only the newest complete one matters. */
/** The identity report of replica `replicaId` (layout at the top of this file). */
export function encodeIdentity(replicaId: number): Uint8Array {
  // A replica id that does not fit the word would name another replica.
  assert(Number.isInteger(replicaId) && replicaId >= 0 && replicaId < TWO_32, "HA identity of replica {}", replicaId);
  const b = new Uint8Array(HA_REPORT_SIZE);
  const v = new DataView(b.buffer);
  v.setUint32(0, IDENTITY_MARK);
  v.setUint32(4, replicaId >>> 0);
  return b;
}

const IDENTITY_MARK = 0xffffffff;

export class ReportDecoder {
  readonly #partial = new Uint8Array(HA_REPORT_SIZE);
  #partialLen = 0;
  /** The replica id of the last identity report seen (undefined: none). */
  replicaId: number | undefined;

  /** Returns the last complete offset in the input so far, or undefined (identity reports set `replicaId`). */
  feed(chunk: Uint8Array): number | undefined {
    let last: number | undefined;
    let p = 0;
    if (this.#partialLen > 0) {
      const take = Math.min(HA_REPORT_SIZE - this.#partialLen, chunk.length);
      this.#partial.set(chunk.subarray(0, take), this.#partialLen);
      this.#partialLen += take;
      p = take;
      if (this.#partialLen < HA_REPORT_SIZE) return undefined;
      last = this.#report(this.#partial, 0) ?? last;
      this.#partialLen = 0;
    }
    const whole = p + Math.floor((chunk.length - p) / HA_REPORT_SIZE) * HA_REPORT_SIZE;
    // Every report is looked at (an identity may share a read with offsets); the last offset wins.
    for (let at = p; at < whole; at += HA_REPORT_SIZE) last = this.#report(chunk, at) ?? last;
    this.#partial.set(chunk.subarray(whole));
    this.#partialLen = chunk.length - whole;
    // Whole reports were taken above: at most a report's worth minus one byte waits for the next read.
    assert(this.#partialLen < HA_REPORT_SIZE, "HA report decoder kept {} bytes", this.#partialLen);
    return last;
  }

  #report(b: Uint8Array, at: number): number | undefined {
    const v = new DataView(b.buffer, b.byteOffset + at, 8);
    if (v.getUint32(0) === IDENTITY_MARK) {
      this.replicaId = v.getUint32(4);
      return undefined;
    }
    return v.getUint32(0) * TWO_32 + v.getUint32(4);
  }
}

export interface Chunk {
  offset: number;
  /** A view into the input when the chunk arrived in one piece: use it before the next feed. */
  data: Uint8Array;
  /** An epoch frame (automatic failover): the master's epoch; offset is -1 and data empty. */
  epoch?: number;
}

/** The epoch frame of a master of `epoch` (layout at the top of this file). */
export function encodeEpochFrame(epoch: number): Uint8Array {
  // Only a master streams, and an elected master's epoch is at least 1 (Election.#claim).
  assert(Number.isInteger(epoch) && epoch >= 1 && epoch < TWO_32, "HA epoch frame of epoch {}", epoch);
  const b = new Uint8Array(HA_HEADER_SIZE);
  const v = new DataView(b.buffer);
  v.setUint32(0, IDENTITY_MARK);
  v.setUint32(4, epoch >>> 0);
  return b;
}

const EMPTY = new Uint8Array(0);

/**
 * Slave side: the master's chunks, in any TCP split. A chunk that arrives within one input is
 * handed out as a view of it (no copy); one split across inputs is gathered, each byte copied
 * once, into one of two buffers that are reused (allocating a large zeroed array per chunk costs
 * more than the copy). Chunks handed out are valid until the next `feed`.
 */
export class ChunkDecoder {
  readonly #header = new Uint8Array(HA_HEADER_SIZE);
  #headerLen = 0;
  /** The chunk being gathered (its header read), or null between chunks. */
  #body: Uint8Array | null = null;
  #bodyLen = 0;
  /** Two gather buffers: one may hold a chunk handed out by this feed while the next one fills. */
  readonly #buffers: Uint8Array[] = [new Uint8Array(0), new Uint8Array(0)];
  #next = 0;
  #offset = 0;
  #broken: string | null = null;

  feed(chunk: Uint8Array): Chunk[] | { invalid: string } {
    if (this.#broken) return { invalid: this.#broken };
    const out: Chunk[] = [];
    let p = 0;
    while (p < chunk.length) {
      if (this.#body) {
        const take = Math.min(this.#body.length - this.#bodyLen, chunk.length - p);
        this.#body.set(chunk.subarray(p, p + take), this.#bodyLen);
        this.#bodyLen += take;
        p += take;
        if (this.#bodyLen === this.#body.length) {
          out.push({ offset: this.#offset, data: this.#body });
          this.#body = null;
        }
        continue;
      }
      let hdr: Uint8Array;
      let at: number;
      if (this.#headerLen === 0 && chunk.length - p >= HA_HEADER_SIZE) {
        hdr = chunk;
        at = p;
        p += HA_HEADER_SIZE;
      } else {
        const take = Math.min(HA_HEADER_SIZE - this.#headerLen, chunk.length - p);
        this.#header.set(chunk.subarray(p, p + take), this.#headerLen);
        this.#headerLen += take;
        p += take;
        if (this.#headerLen < HA_HEADER_SIZE) break;
        this.#headerLen = 0;
        hdr = this.#header;
        at = 0;
      }
      const offset = readOffset(hdr, at);
      const size = new DataView(hdr.buffer, hdr.byteOffset + at + 8, 4).getInt32(0);
      if (size === 0 && offset >= IDENTITY_MARK * TWO_32) {
        // Read as words: past 2^53 the offset as a number has lost its low bits.
        const v = new DataView(hdr.buffer, hdr.byteOffset + at, 8);
        if (v.getUint32(0) === IDENTITY_MARK) {
          out.push({ offset: -1, data: EMPTY, epoch: v.getUint32(4) });
          continue;
        }
      }
      if (size < 0 || size > HA_CHUNK_MAX_BYTES) {
        this.#broken = `HA chunk size ${size} out of range`;
        return { invalid: this.#broken };
      }
      if (offset > Number.MAX_SAFE_INTEGER) {
        this.#broken = "HA chunk offset out of range";
        return { invalid: this.#broken };
      }
      if (size === 0) {
        out.push({ offset, data: EMPTY });
      } else if (chunk.length - p >= size) {
        out.push({ offset, data: chunk.subarray(p, p + size) });
        p += size;
      } else {
        this.#offset = offset;
        this.#body = this.#gatherBuffer(size);
        this.#bodyLen = 0;
      }
    }
    this.#checkBetweenFeeds();
    return out;
  }

  /**
   * Between feeds at most one chunk is half read: its header (fewer than 12 bytes) or its body (a
   * chunk gathered whole was handed out), never both.
   */
  #checkBetweenFeeds(): void {
    assert(
      this.#body === null ? this.#headerLen < HA_HEADER_SIZE : this.#headerLen === 0 && this.#bodyLen < this.#body.length,
      "HA chunk decoder holds {} header bytes and {} body bytes",
      this.#headerLen,
      this.#bodyLen,
    );
  }

  #gatherBuffer(size: number): Uint8Array {
    const i = this.#next;
    this.#next = 1 - i;
    let b = this.#buffers[i]!;
    if (b.length < size) this.#buffers[i] = b = new Uint8Array(Math.max(size, Math.min(2 * b.length, HA_CHUNK_MAX_BYTES)));
    return b.subarray(0, size);
  }
}

function readOffset(b: Uint8Array, at: number): number {
  const v = new DataView(b.buffer, b.byteOffset + at, 8);
  return v.getUint32(0) * TWO_32 + v.getUint32(4);
}
