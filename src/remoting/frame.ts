/**
 * The remoting frame, the same in both directions (docs/PROTOCOL.md §1.1). Big-endian.
 *
 *   +------------+-----------------------------+----------------------+------------------+
 *   | length     | serializeType | headerLength| header               | body             |
 *   | 4 B        | 1 B           | 3 B         | headerLength B       | rest of length   |
 *   +------------+-----------------------------+----------------------+------------------+
 *   length = 4 + headerLength + bodyLength (it does not count itself)
 *
 * Invariants checked before anything else is read:
 *   4 <= length <= frameSizeMaxBytes - 4, headerLength <= length - 4, serializeType ∈ {0, 1}.
 *
 * FrameDecoder is pure (no IO): feed it whatever TCP delivered, in any split, and it returns the
 * commands completed so far, or the reason the stream is broken. A broken stream cannot be
 * resynchronised (there is no magic number), so the caller closes that one connection.
 */
import { type RemotingCommand, SerializeType } from "./command.ts";
import { decodeJsonHeader, encodeJsonHeaderText, type DecodedHeader } from "./header-json.ts";
import { decodeRocketmqHeader, encodeRocketmqHeader } from "./header-rocketmq.ts";
import { assert } from "../common/assert.ts";
import { allocUninitialized } from "../common/bytes.ts";
import type { Invalid } from "../common/invalid.ts";

export const FRAME_LENGTH_FIELD_SIZE = 4;
export const FRAME_HEADER_LENGTH_FIELD_SIZE = 4;
/** Bytes before the header: the length word and the serialize-type/header-length word. */
export const FRAME_PREFIX_SIZE = FRAME_LENGTH_FIELD_SIZE + FRAME_HEADER_LENGTH_FIELD_SIZE;
export const FRAME_SIZE_MAX_BYTES_DEFAULT = 16 * 1024 * 1024;
/** A header longer than this is refused even inside a large frame (3-byte field allows 16 MiB). */
export const HEADER_SIZE_MAX_BYTES = 1024 * 1024;
/** The largest header length the 3-byte field can carry. */
const HEADER_LENGTH_FIELD_MAX = 0xffffff;
export const EXT_FIELDS_MAX = 1024;
/**
 * How far beyond the bytes received a partial frame's buffer is sized in advance: as many bytes as
 * arrived, at least 64 KiB. It was a flat 1 MiB, which let a peer that announces a 16 MiB frame
 * and stalls hold 1 MiB of the broker for every few bytes it sent (the stalled-frame abuse); now
 * a stalled peer holds at most twice what it sent (or 64 KiB), and a frame that keeps arriving
 * still grows by doubling, so a large pull response is copied about once as it assembles.
 */
const PREALLOCATE_AHEAD_MIN_BYTES = 64 * 1024;

export interface FrameLimits {
  frameSizeMaxBytes: number;
  /**
   * The chunks fed are the decoder's to keep (the runtime never reuses them: true on Bun, see
   * transport.ts). Complete frames then stay views into the chunk instead of being copied out.
   */
  chunksOwned?: boolean;
}

export function decodeCommand(frame: Uint8Array): RemotingCommand | Invalid {
  // frame starts at the header-length word (the length word is already consumed). Read by hand:
  // a DataView would need frame.buffer, which makes JSC materialise the ArrayBuffer.
  const word = readUint32(frame, 0);
  const type = word >>> 24;
  const headerLength = word & 0xffffff;
  if (headerLength > frame.length - FRAME_HEADER_LENGTH_FIELD_SIZE) return { invalid: "header length exceeds frame length" };
  if (headerLength > HEADER_SIZE_MAX_BYTES) return { invalid: `header length ${headerLength} exceeds ${HEADER_SIZE_MAX_BYTES}` };
  const headerBytes = frame.subarray(FRAME_HEADER_LENGTH_FIELD_SIZE, FRAME_HEADER_LENGTH_FIELD_SIZE + headerLength);
  let header;
  if (type === SerializeType.JSON) header = decodeJsonHeader(headerBytes, EXT_FIELDS_MAX);
  else if (type === SerializeType.ROCKETMQ) header = decodeRocketmqHeader(headerBytes, EXT_FIELDS_MAX);
  else return { invalid: `unknown serialize type ${type}` };
  if ("invalid" in header) return header;
  const cmd = header as RemotingCommand;
  cmd.serializeType = type;
  const bodyStart = FRAME_HEADER_LENGTH_FIELD_SIZE + headerLength;
  assert(bodyStart <= frame.length, "a validated header of {} bytes ends past its frame of {}", headerLength, frame.length);
  if (bodyStart < frame.length) cmd.body = frame.subarray(bodyStart);
  return cmd;
}

/** A command ready to be written: its header encoded (JSON as text), its size known. */
export interface PreparedFrame {
  cmd: RemotingCommand;
  binaryHeader: Uint8Array | null;
  jsonHeader: string;
  headerLength: number;
  bodyLength: number;
  /** Bytes of the whole frame, length field included. */
  size: number;
}

/** Encodes the header (JSON as text, measured; ROCKETMQ as bytes) and sizes the frame. */
export function prepareFrame(cmd: RemotingCommand): PreparedFrame {
  const h: DecodedHeader = {
    code: cmd.code,
    language: cmd.language,
    version: cmd.version,
    opaque: cmd.opaque,
    flag: cmd.flag,
  };
  if (cmd.remark !== undefined) h.remark = cmd.remark;
  if (cmd.extFields !== undefined) h.extFields = cmd.extFields;
  const binaryHeader = cmd.serializeType === SerializeType.ROCKETMQ ? encodeRocketmqHeader(h) : null;
  const jsonHeader = binaryHeader === null ? encodeJsonHeaderText(h) : "";
  const headerLength = binaryHeader !== null ? binaryHeader.length : Buffer.byteLength(jsonHeader, "utf8");
  let bodyLength = cmd.body?.length ?? 0;
  if (!cmd.body && cmd.bodyParts) for (const p of cmd.bodyParts) bodyLength += p.length;
  return { cmd, binaryHeader, jsonHeader, headerLength, bodyLength, size: FRAME_PREFIX_SIZE + headerLength + bodyLength };
}

/**
 * Writes a prepared frame at out[pos, pos + f.size); returns the position after it. `out` is a
 * Buffer so the JSON header is written in place (Buffer.write): no separate header array.
 */
export function writeFrame(out: Buffer, pos: number, f: PreparedFrame): number {
  const { cmd, headerLength, bodyLength } = f;
  // Wider, it would run into the serialize-type byte and the peer would read another frame.
  assert(headerLength <= HEADER_LENGTH_FIELD_MAX, "request code {}: a header of {} bytes does not fit its length field", cmd.code, headerLength);
  writeUint32(out, pos, FRAME_HEADER_LENGTH_FIELD_SIZE + headerLength + bodyLength);
  writeUint32(out, pos + 4, (((cmd.serializeType & 0xff) << 24) | headerLength) >>> 0);
  let p = pos + FRAME_PREFIX_SIZE;
  if (f.binaryHeader !== null) out.set(f.binaryHeader, p);
  else {
    const written = out.write(f.jsonHeader, p, headerLength, "utf8");
    // prepareFrame measured the text (Buffer.byteLength); the length word says as much.
    assert(written === headerLength, "a JSON header measured {} bytes was written as {}", headerLength, written);
  }
  p += headerLength;
  if (cmd.body) {
    out.set(cmd.body, p);
    p += cmd.body.length;
  } else if (cmd.bodyParts) {
    for (const part of cmd.bodyParts) {
      out.set(part, p);
      p += part.length;
    }
  }
  // The length word went out before the body: what was copied must be what prepareFrame counted.
  assert(p - pos === f.size, "request code {}: a frame sized {} bytes was written as {}", cmd.code, f.size, p - pos);
  return p;
}

/** Encodes the header in the command's serialize type, followed by the body, into a new array. */
export function encodeCommand(cmd: RemotingCommand): Uint8Array {
  const f = prepareFrame(cmd);
  // Uninitialised memory is fine: writeFrame writes every byte (prefix, header, body).
  const out = Buffer.allocUnsafe(f.size);
  writeFrame(out, 0, f);
  return out;
}

/** The big-endian unsigned word at `p` (a frame's length, its serialize-type/header-length word): writeUint32's reader. */
function readUint32(b: Uint8Array, p: number): number {
  return ((b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!) >>> 0;
}

/** Big-endian, by hand: no DataView (and so no ArrayBuffer materialised) per frame. */
function writeUint32(b: Uint8Array, p: number, n: number): void {
  b[p] = n >>> 24;
  b[p + 1] = n >>> 16;
  b[p + 2] = n >>> 8;
  b[p + 3] = n;
}

/**
 * Incremental frame splitter. Holds at most one partial frame. Completed frames are returned as
 * commands whose `body` the caller may keep after the next feed (a view into a private copy, or
 * into the chunk itself when chunks are owned).
 */
export class FrameDecoder {
  #pending: Uint8Array | null = null;
  #pendingLength = 0;
  #broken: string | null = null;
  readonly #frameSizeMaxBytes: number;
  readonly #chunksOwned: boolean;

  constructor(limits: FrameLimits = { frameSizeMaxBytes: FRAME_SIZE_MAX_BYTES_DEFAULT }) {
    this.#frameSizeMaxBytes = limits.frameSizeMaxBytes;
    this.#chunksOwned = limits.chunksOwned ?? false;
  }

  /** Bytes buffered waiting for the rest of a frame. */
  get bufferedBytes(): number {
    return this.#pendingLength;
  }

  /** Bytes held for the partial frame (its buffer's size, at least bufferedBytes). */
  get reservedBytes(): number {
    return this.#pendingLength > 0 ? this.#pending!.length : 0;
  }

  feed(chunk: Uint8Array): RemotingCommand[] | Invalid {
    if (this.#broken !== null) return { invalid: this.#broken };
    let buf: Uint8Array;
    if (this.#pending !== null && this.#pendingLength > 0) {
      buf = this.#append(chunk);
    } else {
      buf = chunk;
    }
    const out: RemotingCommand[] = [];
    let pos = 0;
    while (buf.length - pos >= FRAME_LENGTH_FIELD_SIZE) {
      const length = readUint32(buf, pos);
      if (length < FRAME_HEADER_LENGTH_FIELD_SIZE) return this.#fail(`frame length ${length} < 4`);
      if (length + FRAME_LENGTH_FIELD_SIZE > this.#frameSizeMaxBytes) {
        return this.#fail(`frame length ${length + FRAME_LENGTH_FIELD_SIZE} exceeds frameSizeMaxBytes ${this.#frameSizeMaxBytes}`);
      }
      if (buf.length - pos - FRAME_LENGTH_FIELD_SIZE < length) break;
      const start = pos + FRAME_LENGTH_FIELD_SIZE;
      assert(start + length <= buf.length, "a complete frame ends at {}, past the {} bytes read", start + length, buf.length);
      const cmd = decodeCommand(buf.subarray(start, start + length));
      if ("invalid" in cmd) return this.#fail(cmd.invalid);
      out.push(cmd);
      pos = start + length;
    }
    // Bodies were decoded as views of `buf`, which belongs to the socket layer (or is #pending,
    // reused): copy the complete frames out in one piece and re-point the bodies at the copy.
    // One allocation per read instead of one per frame.
    if (pos > 0) {
      let owned: Uint8Array | null = null;
      for (const cmd of out) {
        const b = cmd.body;
        if (b === undefined) continue;
        owned ??= this.#own(buf, pos);
        const at = b.byteOffset - buf.byteOffset;
        assert(at >= 0 && at + b.length <= pos, "a body at {} of {} bytes lies outside the {} bytes of complete frames", at, b.length, pos);
        cmd.body = owned.subarray(at, at + b.length);
      }
    }
    this.#keepTail(buf, pos);
    return out;
  }

  /**
   * A private copy of buf[0, pos). When buf is #pending and every byte of it was consumed (a
   * large frame assembled from many reads, e.g. a 256-message pull response), the buffer itself
   * is handed over instead of copied, and a new one is made for the next partial frame.
   */
  #own(buf: Uint8Array, pos: number): Uint8Array {
    const isPending = this.#pending !== null && buf.buffer === this.#pending.buffer;
    if (isPending && pos === buf.length) {
      this.#pending = null;
      this.#pendingLength = 0;
      return buf;
    }
    if (!isPending && this.#chunksOwned) return buf.subarray(0, pos);
    // Not buf.slice: on a Buffer (tests, Node) that is a view, not a copy.
    return Uint8Array.prototype.slice.call(buf, 0, pos);
  }

  #append(chunk: Uint8Array): Uint8Array {
    const pending = this.#pending!;
    const need = this.#pendingLength + chunk.length;
    if (need <= pending.length) {
      pending.set(chunk, this.#pendingLength);
      this.#pendingLength = need;
      return pending.subarray(0, need);
    }
    // Doubling, but never past the end of the frame being assembled when its length is in.
    const len = this.#pendingLength;
    const frameEnd = len >= FRAME_LENGTH_FIELD_SIZE ? FRAME_LENGTH_FIELD_SIZE + readUint32(pending, 0) : Infinity;
    // What #keepTail kept is a frame not yet complete (checked there too).
    assert(len < frameEnd, "{} bytes held for a partial frame of {}", len, frameEnd);
    const grown = allocUninitialized(Math.max(need, Math.min(pending.length * 2, frameEnd)));
    grown.set(pending.subarray(0, this.#pendingLength));
    grown.set(chunk, this.#pendingLength);
    this.#pending = grown;
    this.#pendingLength = need;
    return grown.subarray(0, need);
  }

  #keepTail(buf: Uint8Array, pos: number): void {
    const rest = buf.length - pos;
    if (rest === 0) {
      // Drop big buffers once drained so one large frame does not pin memory for the connection's life.
      if (this.#pending !== null && this.#pending.length > 64 * 1024) this.#pending = null;
      this.#pendingLength = 0;
      return;
    }
    // The partial frame's whole size is known once its length word is in: size the buffer for
    // it at once, so the reads that complete it are appended without regrowing (and copying).
    // Never more ahead than PREALLOCATE_AHEAD_MIN_BYTES or what arrived (see there).
    let want = Math.max(rest, 4096);
    if (rest >= FRAME_LENGTH_FIELD_SIZE) {
      const length = readUint32(buf, pos);
      // feed consumes every complete frame (its length validated) before it keeps the rest.
      assert(rest < FRAME_LENGTH_FIELD_SIZE + length, "a tail of {} bytes kept holds a whole frame of {}", rest, length);
      want = Math.max(want, Math.min(FRAME_LENGTH_FIELD_SIZE + length, rest + Math.max(rest, PREALLOCATE_AHEAD_MIN_BYTES)));
    }
    // Already in #pending (which holds it): kept there, moved to the front. #append doubles the
    // buffer when the next read does not fit, so a frame larger than the first read's estimate is
    // copied O(log n) times; reallocating here to keep the estimate ahead of every read (as this
    // did) copied a frame over 1 MiB once per read.
    if (this.#pending !== null && buf.buffer === this.#pending.buffer) {
      this.#pending.copyWithin(0, pos, buf.length);
    } else {
      const next = this.#pending === null || this.#pending.length < want ? allocUninitialized(want) : this.#pending;
      next.set(buf.subarray(pos));
      this.#pending = next;
    }
    this.#pendingLength = rest;
    assert(rest <= this.#pending.length, "{} bytes of a partial frame kept in a buffer of {}", rest, this.#pending.length);
  }

  #fail(reason: string): Invalid {
    this.#broken = reason;
    this.#pending = null;
    this.#pendingLength = 0;
    return { invalid: reason };
  }
}
