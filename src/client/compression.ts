/**
 * Decompression of pulled message bodies. A producer that compresses a body sets SYSFLAG bit 0
 * (SysFlag.COMPRESSED) and names the codec in bits 8-10 (CompressionFlag, src/protocol/sys-flag.ts;
 * the 5.x Java client; 4.x and this library's Producer leave them 0, which means zlib):
 *
 *   SYSFLAG  31 ........ 11 | 10  9  8 | 7 .. 1 | 0
 *                           | codec    |        | COMPRESSED
 *   codec: 0 = ZLIB (pre-5.x), 1 = LZ4, 2 = ZSTD, 3 = ZLIB; 4..7 unknown → { invalid }
 *
 * The bodies are what the Java client's compressors write: ZLIB a zlib stream (RFC 1950); ZSTD a
 * zstd frame without content size (a zstd-jni stream); LZ4 one LZ4 *frame* (lz4-java's
 * LZ4FrameOutputStream: 4 MiB blocks, independent, no checksums, no content size), decoded here:
 *
 *   LZ4 frame (lz4 frame format 1.6.x, little-endian)
 *   +---------+-----+----+-----------------+--------+----+----------+----------+
 *   | MAGIC 4 | FLG | BD | CONTENT SIZE 0/8| DICT 0/4| HC | blocks.. | C.SUM 0/4|
 *   +---------+-----+----+-----------------+--------+----+----------+----------+
 *   MAGIC 0x184D2204.  FLG: 7-6 version (01), 5 block independence, 4 block checksum,
 *   3 content size, 2 content checksum, 1 reserved, 0 dictionary id.  BD: 6-4 block max size
 *   (4 = 64 KiB, 5 = 256 KiB, 6 = 1 MiB, 7 = 4 MiB).  HC: header checksum (not verified).
 *   block: SIZE 4 (bit 31 = stored uncompressed; 0 = end mark), DATA, [CHECKSUM 4]
 *   A frame may be preceded or followed by skippable frames (MAGIC 0x184D2A5x, SIZE 4, DATA).
 *
 *   LZ4 block: sequences of
 *   | TOKEN (lit:4 | match:4) | [lit len +255…] | literals | OFFSET 2 | [match len +255…] |
 *   match length = 4 + match nibble (+ extensions); the last sequence has literals only.
 *
 * The xxHash checksums are skipped, not checked: the stored record's body CRC already covers
 * these bytes, and the broker checks it on the way in. Everything else comes off the network
 * and is bounds-checked: a bad body becomes { invalid } for that message, never a throw.
 */
import * as zlib from "node:zlib";
import { decompress as fzstdDecompress } from "fzstd";
import { CompressionFlag } from "../protocol/sys-flag.ts";

/**
 * A decompressed body larger than this is refused (a zip bomb must not take the consumer down).
 * The broker caps a stored body at 4 MiB (maxMessageSize); 64 MiB leaves that body a 16:1 ratio.
 */
export const BODY_DECOMPRESSED_SIZE_MAX_BYTES = 64 * 1024 * 1024;

export type Decompressed = Uint8Array | { invalid: string };

/** The body of a record whose SYSFLAG has COMPRESSED, decompressed with the codec its bits 8-10 name. */
export function decompressBody(body: Uint8Array, sysFlag: number, maxBytes = BODY_DECOMPRESSED_SIZE_MAX_BYTES): Decompressed {
  const codec = (sysFlag & CompressionFlag.TYPE_MASK) >>> CompressionFlag.TYPE_SHIFT;
  try {
    switch (codec) {
      case CompressionFlag.ZLIB_LEGACY:
      case CompressionFlag.ZLIB:
        return new Uint8Array(zlib.inflateSync(body, { maxOutputLength: maxBytes }));
      case CompressionFlag.LZ4:
        return lz4FrameDecompress(body, maxBytes);
      case CompressionFlag.ZSTD: {
        const out = zstdDecompress(body, maxBytes);
        return out.length > maxBytes ? { invalid: `zstd body decompresses to more than ${maxBytes} bytes` } : out;
      }
      default:
        return { invalid: `unknown compression type ${codec} (sysFlag bits 8-10 = 0x${(sysFlag & CompressionFlag.TYPE_MASK).toString(16)})` };
    }
  } catch (e) {
    return { invalid: `${codecName(codec)} body does not decompress: ${e instanceof Error ? e.message : String(e)}` };
  }
}

function codecName(codec: number): string {
  return codec === CompressionFlag.LZ4 ? "lz4" : codec === CompressionFlag.ZSTD ? "zstd" : "zlib";
}

// ---------------------------------------------------------------------------------------------
// ZSTD: whatever the runtime has built in, else fzstd (pure JS).

type ZstdDecompress = (body: Uint8Array, maxBytes: number) => Uint8Array;

/**
 * Chosen once. Bun.zstdDecompressSync is several times faster than Bun's node:zlib zstd. Node has
 * zlib.zstdDecompressSync from 22.15 / 23.8 (it honours maxOutputLength); the client's Node bundle
 * targets Node 20, which has no zstd at all, so there fzstd (pure JS, bundled) decodes: without it
 * a 5.x producer with rocketmq.message.compressType=ZSTD would be unreadable on Node 20. Bun and
 * fzstd are bounded only afterwards (the caller checks the length).
 */
export const zstdDecompress: ZstdDecompress = pickZstd();

function pickZstd(): ZstdDecompress {
  if (typeof Bun !== "undefined" && typeof Bun.zstdDecompressSync === "function") return (b) => Bun.zstdDecompressSync(b);
  const nodeZstd = (zlib as { zstdDecompressSync?: (b: Uint8Array, o: { maxOutputLength: number }) => Uint8Array }).zstdDecompressSync;
  if (typeof nodeZstd === "function") return (b, maxBytes) => new Uint8Array(nodeZstd(b, { maxOutputLength: maxBytes }));
  return (b) => fzstdDecompress(b);
}

// ---------------------------------------------------------------------------------------------
// LZ4 frame (layout at the top of this file)

const LZ4_MAGIC = 0x184d2204;
const LZ4_SKIPPABLE_MAGIC_MASK = 0xfffffff0;
const LZ4_SKIPPABLE_MAGIC = 0x184d2a50;
const LZ4_FLG_VERSION_MASK = 0xc0;
const LZ4_FLG_VERSION = 0x40;
const LZ4_FLG_BLOCK_CHECKSUM = 0x10;
const LZ4_FLG_CONTENT_SIZE = 0x08;
const LZ4_FLG_CONTENT_CHECKSUM = 0x04;
const LZ4_FLG_RESERVED = 0x02;
const LZ4_FLG_DICT_ID = 0x01;
const LZ4_BLOCK_UNCOMPRESSED = 0x80000000;
const LZ4_MIN_MATCH = 4;
/** Block max size by BD bits 6-4; other values are reserved. */
const LZ4_BLOCK_MAX_BYTES: Record<number, number> = { 4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20 };
/** First output buffer when no content size is given: Java's bodies start at 4 KiB. */
const LZ4_INITIAL_OUTPUT_BYTES = 16 << 10;

class Lz4Invalid extends Error {}

function u32le(b: Uint8Array, i: number): number {
  if (i + 4 > b.length) throw new Lz4Invalid(`truncated at byte ${i}`);
  return (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;
}

/** A growable output buffer bounded by maxBytes. */
class Output {
  buf: Uint8Array;
  pos = 0;
  constructor(
    capacity: number,
    readonly maxBytes: number,
  ) {
    this.buf = new Uint8Array(capacity);
  }
  ensure(n: number): void {
    const need = this.pos + n;
    if (need <= this.buf.length) return;
    if (need > this.maxBytes) throw new Lz4Invalid(`decompresses to more than ${this.maxBytes} bytes`);
    const grown = new Uint8Array(Math.min(this.maxBytes, Math.max(need, this.buf.length * 2)));
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }
}

/** Decompresses LZ4 frames (one or more, skippable frames allowed), as lz4-java writes them. */
export function lz4FrameDecompress(src: Uint8Array, maxBytes = BODY_DECOMPRESSED_SIZE_MAX_BYTES): Decompressed {
  try {
    let out: Output | undefined;
    let i = 0;
    do {
      const magic = u32le(src, i);
      if ((magic & LZ4_SKIPPABLE_MAGIC_MASK) >>> 0 === LZ4_SKIPPABLE_MAGIC) {
        i += 8 + u32le(src, i + 4);
        if (i > src.length) throw new Lz4Invalid("truncated skippable frame");
        continue;
      }
      if (magic !== LZ4_MAGIC) throw new Lz4Invalid(`bad magic 0x${magic.toString(16)} at byte ${i}`);
      i += 4;
      if (i + 3 > src.length) throw new Lz4Invalid("truncated frame descriptor");
      const flg = src[i++]!;
      const bd = src[i++]!;
      if ((flg & LZ4_FLG_VERSION_MASK) !== LZ4_FLG_VERSION) throw new Lz4Invalid(`unsupported frame version in FLG 0x${flg.toString(16)}`);
      if ((flg & LZ4_FLG_RESERVED) !== 0 || (bd & 0x8f) !== 0) throw new Lz4Invalid("reserved descriptor bits set");
      if ((flg & LZ4_FLG_DICT_ID) !== 0) throw new Lz4Invalid("frames with a dictionary are not supported");
      const blockMax = LZ4_BLOCK_MAX_BYTES[(bd >>> 4) & 0x7];
      if (blockMax === undefined) throw new Lz4Invalid(`reserved block size in BD 0x${bd.toString(16)}`);
      let contentSize = -1;
      if ((flg & LZ4_FLG_CONTENT_SIZE) !== 0) {
        const lo = u32le(src, i);
        const hi = u32le(src, i + 4);
        i += 8;
        contentSize = hi === 0 ? lo : Number.MAX_SAFE_INTEGER;
        if (contentSize > maxBytes - (out?.pos ?? 0)) throw new Lz4Invalid(`content size exceeds ${maxBytes} bytes`);
      }
      i++; // HC
      out ??= new Output(contentSize >= 0 ? contentSize : Math.min(maxBytes, Math.max(LZ4_INITIAL_OUTPUT_BYTES, src.length * 4)), maxBytes);
      const frameStart = out.pos;
      for (;;) {
        const word = u32le(src, i);
        i += 4;
        if (word === 0) break;
        const size = (word & ~LZ4_BLOCK_UNCOMPRESSED) >>> 0;
        if (size > blockMax) throw new Lz4Invalid(`block of ${size} bytes exceeds the frame's ${blockMax}`);
        if (i + size > src.length) throw new Lz4Invalid(`truncated block at byte ${i}`);
        if ((word & LZ4_BLOCK_UNCOMPRESSED) !== 0) {
          out.ensure(size);
          out.buf.set(src.subarray(i, i + size), out.pos);
          out.pos += size;
        } else {
          decodeBlock(src, i, i + size, out, frameStart, blockMax);
        }
        i += size;
        if ((flg & LZ4_FLG_BLOCK_CHECKSUM) !== 0) i += 4;
      }
      if ((flg & LZ4_FLG_CONTENT_CHECKSUM) !== 0) i += 4;
      if (i > src.length) throw new Lz4Invalid("truncated checksum");
      if (contentSize >= 0 && out.pos - frameStart !== contentSize) {
        throw new Lz4Invalid(`frame holds ${out.pos - frameStart} bytes, its header says ${contentSize}`);
      }
    } while (i < src.length);
    if (out === undefined) return new Uint8Array(0);
    // Hand over exactly the bytes (a view would keep the spare capacity alive with the message).
    return out.pos === out.buf.length ? out.buf : out.buf.slice(0, out.pos);
  } catch (e) {
    if (e instanceof Lz4Invalid) return { invalid: `lz4: ${e.message}` };
    throw e;
  }
}

/**
 * One compressed block from src[i, end) appended to out. Matches may reach back into earlier
 * blocks of the same frame (dependent blocks), never before the frame's first byte.
 */
function decodeBlock(src: Uint8Array, i: number, end: number, out: Output, frameStart: number, blockMax: number): void {
  const blockStart = out.pos;
  for (;;) {
    if (i >= end) throw new Lz4Invalid("block ends inside a sequence");
    const token = src[i++]!;
    let literals = token >>> 4;
    if (literals === 15) {
      let b: number;
      do {
        if (i >= end) throw new Lz4Invalid("block ends inside a literal length");
        b = src[i++]!;
        literals += b;
      } while (b === 255);
    }
    if (i + literals > end) throw new Lz4Invalid("literals run past the block");
    if (out.pos - blockStart + literals > blockMax) throw new Lz4Invalid("block decompresses past its maximum size");
    out.ensure(literals);
    out.buf.set(src.subarray(i, i + literals), out.pos);
    out.pos += literals;
    i += literals;
    if (i === end) return; // the last sequence: literals only
    if (i + 2 > end) throw new Lz4Invalid("block ends inside a match offset");
    const offset = src[i]! | (src[i + 1]! << 8);
    i += 2;
    if (offset === 0 || offset > out.pos - frameStart) throw new Lz4Invalid(`match offset ${offset} out of range`);
    let length = token & 15;
    if (length === 15) {
      let b: number;
      do {
        if (i >= end) throw new Lz4Invalid("block ends inside a match length");
        b = src[i++]!;
        length += b;
      } while (b === 255);
    }
    length += LZ4_MIN_MATCH;
    if (out.pos - blockStart + length > blockMax) throw new Lz4Invalid("block decompresses past its maximum size");
    out.ensure(length);
    const buf = out.buf;
    let from = out.pos - offset;
    if (offset >= length) {
      buf.copyWithin(out.pos, from, from + length);
      out.pos += length;
    } else {
      // Overlapping: the copy repeats the last `offset` bytes, so it must go byte by byte.
      let to = out.pos;
      const stop = to + length;
      while (to < stop) buf[to++] = buf[from++]!;
      out.pos = stop;
    }
  }
}
