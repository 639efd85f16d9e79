/**
 * The HA replication stream (RocketMQ 4.x master/slave, non-DLedger), raw TCP on the master's
 * HA port (listen port + 1). Big-endian. Compatible with Java masters and slaves.
 *
 * Slave → master, repeatedly (its CommitLog max offset: where it wants data from / what it has):
 *   +--------------------------------+
 *   | slave max physical offset (8)  |
 *   +--------------------------------+
 *
 * Master → slave, repeatedly:
 *   +--------------------------------+----------------+------------------------------+
 *   | physical offset of data (8)    | data size n (4)| n raw CommitLog bytes        |
 *   +--------------------------------+----------------+------------------------------+
 *   n = 0 is a heartbeat. A chunk never crosses a CommitLog segment end.
 *
 * Invariants the slave checks: each chunk starts exactly at its own max offset (unless its store
 * is empty); n ≤ HA_CHUNK_MAX_BYTES. A violation means the stream is broken: disconnect and
 * resume from the slave's offset.
 */
export const HA_REPORT_SIZE = 8;
export const HA_HEADER_SIZE = 8 + 4;
/** Upper bound on a chunk we accept (a Java master sends ≤ 32 KiB; ours ≤ haTransferBatchBytes). */
export const HA_CHUNK_MAX_BYTES = 16 * 1024 * 1024;

const TWO_32 = 2 ** 32;

export function encodeReport(offset: number): Uint8Array {
  const b = new Uint8Array(HA_REPORT_SIZE);
  const v = new DataView(b.buffer);
  v.setUint32(0, Math.floor(offset / TWO_32));
  v.setUint32(4, offset >>> 0);
  return b;
}

export function encodeChunkHeader(offset: number, size: number): Uint8Array {
  const b = new Uint8Array(HA_HEADER_SIZE);
  const v = new DataView(b.buffer);
  v.setUint32(0, Math.floor(offset / TWO_32));
  v.setUint32(4, offset >>> 0);
  v.setInt32(8, size);
  return b;
}

/** Accumulates bytes and cuts them into fixed-size units or chunks; pure (no IO). */
class Accumulator {
  protected buf = new Uint8Array(0);

  protected append(chunk: Uint8Array): void {
    if (this.buf.length === 0) {
      this.buf = chunk.slice();
      return;
    }
    const n = new Uint8Array(this.buf.length + chunk.length);
    n.set(this.buf);
    n.set(chunk, this.buf.length);
    this.buf = n;
  }
}

/** Master side: the slave's 8-byte reports. Only the newest complete one matters. */
export class ReportDecoder extends Accumulator {
  /** Returns the last complete offset in the input so far, or undefined. */
  feed(chunk: Uint8Array): number | undefined {
    this.append(chunk);
    const whole = this.buf.length - (this.buf.length % HA_REPORT_SIZE);
    if (whole === 0) return undefined;
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + whole - HA_REPORT_SIZE, HA_REPORT_SIZE);
    const offset = v.getUint32(0) * TWO_32 + v.getUint32(4);
    this.buf = this.buf.slice(whole);
    return offset;
  }
}

export interface Chunk {
  offset: number;
  data: Uint8Array;
}

/** Slave side: the master's chunks, in any TCP split. */
export class ChunkDecoder extends Accumulator {
  #broken: string | null = null;

  feed(chunk: Uint8Array): Chunk[] | { invalid: string } {
    if (this.#broken) return { invalid: this.#broken };
    this.append(chunk);
    const out: Chunk[] = [];
    let pos = 0;
    while (this.buf.length - pos >= HA_HEADER_SIZE) {
      const v = new DataView(this.buf.buffer, this.buf.byteOffset + pos, HA_HEADER_SIZE);
      const offset = v.getUint32(0) * TWO_32 + v.getUint32(4);
      const size = v.getInt32(8);
      if (size < 0 || size > HA_CHUNK_MAX_BYTES) {
        this.#broken = `HA chunk size ${size} out of range`;
        return { invalid: this.#broken };
      }
      if (offset > Number.MAX_SAFE_INTEGER) {
        this.#broken = "HA chunk offset out of range";
        return { invalid: this.#broken };
      }
      if (this.buf.length - pos - HA_HEADER_SIZE < size) break;
      out.push({ offset, data: this.buf.subarray(pos + HA_HEADER_SIZE, pos + HA_HEADER_SIZE + size) });
      pos += HA_HEADER_SIZE + size;
    }
    // Chunks handed out are views of the old buffer; keep the rest in a fresh one.
    this.buf = this.buf.slice(pos);
    return out;
  }
}
