/**
 * The message record: one layout for a CommitLog entry, each message in a PULL_MESSAGE /
 * QUERY_MESSAGE / VIEW_MESSAGE_BY_ID body, and CHECK_TRANSACTION_STATE bodies (docs/PROTOCOL.md §4.1).
 * Every integer is big-endian and signed (Java). Offsets below are for IPv4 hosts and v1 magic.
 *
 *   offset size
 *   +----+----+--------------------------------------------------------------+
 *   |  0 |  4 | TOTALSIZE            whole record, this field included        |
 *   |  4 |  4 | MAGICCODE            0xDAA320A7 (v1) | BLANK 0xCBD43194        |
 *   |  8 |  4 | BODYCRC              crc32(body as stored) & 0x7FFFFFFF        |
 *   | 12 |  4 | QUEUEID                                                       |
 *   | 16 |  4 | FLAG                 producer's user flag                     |
 *   | 20 |  8 | QUEUEOFFSET          consume-queue offset (filled at append)  |
 *   | 28 |  8 | PHYSICALOFFSET       commit-log offset of this record         |
 *   | 36 |  4 | SYSFLAG              SysFlag bits (docs/PROTOCOL.md §4.2)     |
 *   | 40 |  8 | BORNTIMESTAMP        producer clock, ms                       |
 *   | 48 |  8 | BORNHOST             ip 4 + port 4   (16 + 4 if BORNHOST_V6)  |
 *   | 56 |  8 | STORETIMESTAMP       broker clock at append, ms               |
 *   | 64 |  8 | STOREHOST            ip 4 + port 4   (16 + 4 if STOREHOST_V6) |
 *   | 72 |  4 | RECONSUMETIMES                                                |
 *   | 76 |  8 | PREPARED TX OFFSET   half-message offset of a commit, else 0  |
 *   | 84 |  4 | BODY length n                                                 |
 *   | 88 |  n | BODY                 compressed if SYSFLAG & COMPRESSED        |
 *   |    |  1 | TOPIC length t       signed byte, so t <= 127                 |
 *   |    |  t | TOPIC                UTF-8                                    |
 *   |    |  2 | PROPERTIES length p  signed short, so p <= 32767              |
 *   |    |  p | PROPERTIES           property string (docs/PROTOCOL.md §4.3)  |
 *   +----+----+--------------------------------------------------------------+
 *   Each IPv6 host adds 12 bytes and shifts every later offset by 12.
 *
 *   BLANK marker (end of a segment file): TOTALSIZE = bytes left in the file, MAGICCODE = BLANK.
 *   +----+----+
 *   |  0 |  4 | TOTALSIZE = remaining
 *   |  4 |  4 | MAGICCODE = 0xCBD43194 (-875286124)
 *   +----+----+
 *
 * Invariants:
 *   - TOTALSIZE = 91 + n + t + p for IPv4 hosts and v1 magic (RECORD_FIXED_SIZE_V4 + lengths), plus
 *     12 per IPv6 host; decodeRecordAt rejects a record whose inner lengths do not add up exactly.
 *   - A record never spans two segment files. The commit log writes a record only when at least
 *     BLANK_MARKER_SIZE bytes remain after it, and otherwise ends the file with a BLANK marker.
 *   - Unwritten space is zero; TOTALSIZE 0 means "end of written data".
 *   - BODYCRC = CRC-32 (zlib/IEEE) of the body bytes as stored (i.e. compressed), & 0x7FFFFFFF.
 *   - SYSFLAG's BORNHOST_V6 / STOREHOST_V6 bits always match the stored host widths: encodeRecord
 *     derives them from the ip lengths and ignores those bits in RecordInput.sysFlag.
 *   - Only v1 magic is written or read. 5.x v2 records (2-byte topic length) are reported invalid,
 *     as are records that ali-ons could not read anyway (it also assumes v1).
 *
 * Failures: bytes read from disk or the network are input, so decodeRecordAt never throws and
 * answers `{ invalid: reason }`. Encoding from a RecordInput that breaks a documented limit is a
 * caller bug (the send path must have validated it), so the encoders assert (./assert.ts:
 * an AssertionError, which stops the store's writes).
 */
import type { Invalid } from "./invalid.ts";
import { assert } from "./assert.ts";

// ---------------------------------------------------------------------------------------------
// Magic codes and sizes

/** 0xDAA320A7 as a Java int: a v1 message record. */
export const MESSAGE_MAGIC_CODE = -626843481;
/** 0xDAA320AB as a Java int: a 5.x v2 record (2-byte topic length). Recognised only to reject it. */
export const MESSAGE_MAGIC_CODE_V2 = -626843477;
/** 0xCBD43194 as a Java int: the end-of-file marker. */
export const BLANK_MAGIC_CODE = -875286124;
/** TOTALSIZE + MAGICCODE of a BLANK marker; also the room the commit log keeps free after a record. */
export const BLANK_MARKER_SIZE = 8;

export const SIZE_TOTAL_SIZE = 4;
export const SIZE_MAGIC_CODE = 4;
export const SIZE_BODY_CRC = 4;
export const SIZE_QUEUE_ID = 4;
export const SIZE_FLAG = 4;
export const SIZE_QUEUE_OFFSET = 8;
export const SIZE_PHYSICAL_OFFSET = 8;
export const SIZE_SYS_FLAG = 4;
export const SIZE_BORN_TIMESTAMP = 8;
/** A host is address bytes + a 4-byte int port. */
export const SIZE_HOST_V4 = 4 + 4;
export const SIZE_HOST_V6 = 16 + 4;
export const SIZE_STORE_TIMESTAMP = 8;
export const SIZE_RECONSUME_TIMES = 4;
export const SIZE_PREPARED_TRANSACTION_OFFSET = 8;
export const SIZE_BODY_LENGTH = 4;
export const SIZE_TOPIC_LENGTH = 1;
export const SIZE_PROPERTIES_LENGTH = 2;

/** Every field except the variable bytes of body, topic and properties, with IPv4 hosts. */
export const RECORD_FIXED_SIZE_V4 = 91;
/** Extra bytes per IPv6 host. */
export const HOST_V6_EXTRA_SIZE = SIZE_HOST_V6 - SIZE_HOST_V4;

export const OFFSET_TOTAL_SIZE = 0;
export const OFFSET_MAGIC_CODE = 4;
export const OFFSET_BODY_CRC = 8;
export const OFFSET_QUEUE_ID = 12;
export const OFFSET_FLAG = 16;
export const OFFSET_QUEUE_OFFSET = 20;
export const OFFSET_PHYSICAL_OFFSET = 28;
export const OFFSET_SYS_FLAG = 36;
export const OFFSET_BORN_TIMESTAMP = 40;
export const OFFSET_BORN_HOST = 48;
// From here on the offsets hold for IPv4 hosts only (each IPv6 host before a field shifts it by 12).
export const OFFSET_STORE_TIMESTAMP = 56;
export const OFFSET_STORE_HOST = 64;
export const OFFSET_RECONSUME_TIMES = 72;
export const OFFSET_PREPARED_TRANSACTION_OFFSET = 76;
export const OFFSET_BODY_LENGTH = 84;
export const OFFSET_BODY = 88;

/** Topic bytes a v1 record can hold (signed byte length). The broker's own limit is the same. */
export const TOPIC_SIZE_MAX_BYTES = 127;
/** Property-string bytes a record can hold (signed short length). */
export const PROPERTIES_SIZE_MAX_BYTES = 32767;
/** TOTALSIZE is a Java int. */
export const RECORD_SIZE_MAX_BYTES = 0x7fffffff;

// ---------------------------------------------------------------------------------------------
// SYSFLAG host bits (the rest of the bits: SysFlag, src/protocol/sys-flag.ts)

// These two decide the widths of BORNHOST and STOREHOST, so they belong to this layout; SysFlag
// takes them from here (common/ cannot import protocol/).
/** SysFlag.BORNHOST_V6: BORNHOST holds a 16-byte IPv6 address. */
export const BORNHOST_V6_FLAG = 0x10;
/** SysFlag.STOREHOST_V6: STOREHOST holds a 16-byte IPv6 address. */
export const STOREHOST_V6_FLAG = 0x20;

// ---------------------------------------------------------------------------------------------
// Host addresses

export interface HostAddress {
  /** 4 bytes (IPv4) or 16 bytes (IPv6), network order. */
  ip: Uint8Array;
  port: number;
}

/**
 * An ip in text form → its bytes. IPv4-mapped IPv6 (`::ffff:a.b.c.d`) becomes 4 bytes, as Java
 * does, so a dual-stack listener stores such peers as IPv4 and ali-ons can still read the record.
 * An IPv6 zone (`%eth0`) is dropped: the record has no room for it.
 */
export function parseIpAddress(text: string): Uint8Array | Invalid {
  if (text.includes(":")) {
    const v6 = parseIpv6(text);
    if (v6 === null) return { invalid: `bad IPv6 address "${text}"` };
    return isIpv4Mapped(v6) ? v6.slice(12) : v6;
  }
  const v4 = parseIpv4(text);
  return v4 === null ? { invalid: `bad IPv4 address "${text}"` } : v4;
}

/** `"1.2.3.4:10911"` or `"[::1]:10911"` → HostAddress, or the reason it is not one. */
export function tryParseHostAddress(text: string): HostAddress | Invalid {
  let host: string;
  let portText: string;
  if (text.startsWith("[")) {
    const close = text.indexOf("]:");
    if (close < 0) return { invalid: `bad host address "${text}": expected [ipv6]:port` };
    host = text.slice(1, close);
    portText = text.slice(close + 2);
  } else {
    const colon = text.lastIndexOf(":");
    if (colon < 0) return { invalid: `bad host address "${text}": no port` };
    host = text.slice(0, colon);
    portText = text.slice(colon + 1);
    if (host.includes(":")) return { invalid: `bad host address "${text}": IPv6 needs brackets` };
  }
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 0xffff) return { invalid: `bad port in "${text}"` };
  const ip = parseIpAddress(host);
  if ("invalid" in ip) return ip;
  return { ip, port: Number(portText) };
}

/**
 * Like tryParseHostAddress, for strings already known to be good (validated config, addresses
 * reported by the runtime); a bad one is a bug and throws. Validate untrusted text with the try form.
 */
export function parseHostAddress(text: string): HostAddress {
  const h = tryParseHostAddress(text);
  if ("invalid" in h) throw new RangeError(h.invalid);
  return h;
}

/** `a.b.c.d:port` or `[v6]:port` (RFC 5952 compressed form); parseHostAddress reads it back. */
export function formatHostAddress(h: HostAddress): string {
  const ip = h.ip;
  if (ip.length === 4) return `${ip[0]}.${ip[1]}.${ip[2]}.${ip[3]}:${h.port}`;
  assert(ip.length === 16, "host ip must be 4 or 16 bytes");
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((ip[i]! << 8) | ip[i + 1]!);
  // The longest run of two or more zero groups becomes "::" (the first one on a tie).
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (g: number[]) => g.map((x) => x.toString(16)).join(":");
  const text = bestStart < 0 ? hex(groups) : `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLen))}`;
  return `[${text}]:${h.port}`;
}

function parseIpv4(s: string): Uint8Array | null {
  const parts = s.split(".");
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    out[i] = Number(p);
  }
  return out;
}

function parseIpv6(text: string): Uint8Array | null {
  let s = text;
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  // A dotted IPv4 tail stands for the last two groups.
  let tail: Uint8Array | null = null;
  const lastColon = s.lastIndexOf(":");
  if (s.includes(".", lastColon)) {
    tail = parseIpv4(s.slice(lastColon + 1));
    if (tail === null) return null;
    s = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const groupsOf = (h: string | undefined): string[] => (h === undefined || h === "" ? [] : h.split(":"));
  const head = groupsOf(halves[0]);
  const rest = groupsOf(halves[1]);
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...rest];
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    const g = all[i]!;
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    const v = parseInt(g, 16);
    out[2 * i] = v >>> 8;
    out[2 * i + 1] = v & 0xff;
  }
  if (tail !== null) out.set(tail, 12);
  return out;
}

function isIpv4Mapped(ip: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (ip[i] !== 0) return false;
  return ip[10] === 0xff && ip[11] === 0xff;
}

// ---------------------------------------------------------------------------------------------
// Encoding

export interface RecordInput {
  /** UTF-8, at most TOPIC_SIZE_MAX_BYTES. */
  topic: Uint8Array;
  queueId: number;
  flag: number;
  /** As stored: already compressed when sysFlag has COMPRESSED. */
  body: Uint8Array;
  /** UTF-8 property string, at most PROPERTIES_SIZE_MAX_BYTES. */
  properties: Uint8Array;
  /** The v6 bits are ignored: encodeRecord sets them from the host ip lengths. */
  sysFlag: number;
  bornTimestamp: number;
  bornHost: HostAddress;
  storeHost: HostAddress;
  reconsumeTimes: number;
  preparedTransactionOffset: number;
  /** Precomputed BODYCRC (e.g. computed off the append lock); masked with 0x7FFFFFFF when written. */
  bodyCrc?: number;
}

/** BODYCRC of a body as stored: CRC-32 (IEEE) & 0x7FFFFFFF, as Java's UtilAll.crc32. */
export function bodyCrc(body: Uint8Array): number {
  return Bun.hash.crc32(body) & 0x7fffffff;
}

function hostSize(h: HostAddress): number {
  if (h.ip.length === 4) return SIZE_HOST_V4;
  assert(h.ip.length === 16, "host ip must be 4 or 16 bytes");
  return SIZE_HOST_V6;
}

/** The record's TOTALSIZE; each IPv6 host (16-byte ip) adds 12 bytes, as its v6 SYSFLAG bit says. */
export function recordSize(input: RecordInput): number {
  return (
    RECORD_FIXED_SIZE_V4 -
    2 * SIZE_HOST_V4 +
    hostSize(input.bornHost) +
    hostSize(input.storeHost) +
    input.body.length +
    input.topic.length +
    input.properties.length
  );
}

/**
 * Writes one record at dst[pos] and returns its size. QUEUEOFFSET, PHYSICALOFFSET and
 * STORETIMESTAMP are the values the commit log assigns at append time. `view`, if given, must be
 * a DataView over exactly dst's bytes (callers that append many records cache one per segment).
 *
 * This is the append hot path, so it writes straight into dst: no intermediate buffer and, with a
 * cached view and a precomputed bodyCrc, no allocation. Breaking a limit (topic or properties too
 * long, host ip not 4/16 bytes, record not fitting in dst) is a caller bug and throws before any
 * byte is written.
 */
export function encodeRecord(
  dst: Uint8Array,
  pos: number,
  input: RecordInput,
  queueOffset: number,
  physicalOffset: number,
  storeTimestamp: number,
  view?: DataView,
): number {
  const size = recordSize(input);
  const { topic, body, properties, bornHost, storeHost } = input;
  assert(topic.length <= TOPIC_SIZE_MAX_BYTES, "topic longer than 127 bytes");
  assert(properties.length <= PROPERTIES_SIZE_MAX_BYTES, "properties longer than 32767 bytes");
  assert(size <= RECORD_SIZE_MAX_BYTES, "record larger than a Java int");
  assert(Number.isInteger(pos) && pos >= 0 && pos + size <= dst.length, "record does not fit in dst");
  const v = view ?? new DataView(dst.buffer, dst.byteOffset, dst.byteLength);
  assert(v.buffer === dst.buffer && v.byteOffset === dst.byteOffset, "view must cover dst");

  let sysFlag = input.sysFlag & ~(BORNHOST_V6_FLAG | STOREHOST_V6_FLAG);
  if (bornHost.ip.length === 16) sysFlag |= BORNHOST_V6_FLAG;
  if (storeHost.ip.length === 16) sysFlag |= STOREHOST_V6_FLAG;
  const crc = input.bodyCrc !== undefined ? input.bodyCrc & 0x7fffffff : bodyCrc(body);

  // TOTALSIZE is written last (below): until then the record reads as unwritten space, so a
  // process killed mid-encode leaves nothing a recovery scan could mistake for a record.
  v.setInt32(pos + OFFSET_MAGIC_CODE, MESSAGE_MAGIC_CODE);
  v.setInt32(pos + OFFSET_BODY_CRC, crc);
  v.setInt32(pos + OFFSET_QUEUE_ID, input.queueId);
  v.setInt32(pos + OFFSET_FLAG, input.flag);
  setInt64(v, pos + OFFSET_QUEUE_OFFSET, queueOffset);
  setInt64(v, pos + OFFSET_PHYSICAL_OFFSET, physicalOffset);
  v.setInt32(pos + OFFSET_SYS_FLAG, sysFlag);
  setInt64(v, pos + OFFSET_BORN_TIMESTAMP, input.bornTimestamp);
  let p = writeHost(dst, v, pos + OFFSET_BORN_HOST, bornHost);
  setInt64(v, p, storeTimestamp);
  p = writeHost(dst, v, p + SIZE_STORE_TIMESTAMP, storeHost);
  v.setInt32(p, input.reconsumeTimes);
  p += SIZE_RECONSUME_TIMES;
  setInt64(v, p, input.preparedTransactionOffset);
  p += SIZE_PREPARED_TRANSACTION_OFFSET;
  v.setInt32(p, body.length);
  p += SIZE_BODY_LENGTH;
  dst.set(body, p);
  p += body.length;
  v.setInt8(p, topic.length);
  p += SIZE_TOPIC_LENGTH;
  dst.set(topic, p);
  p += topic.length;
  v.setInt16(p, properties.length);
  p += SIZE_PROPERTIES_LENGTH;
  dst.set(properties, p);
  assert(p + properties.length === pos + size, "encodeRecord wrote a different size than recordSize");
  v.setInt32(pos + OFFSET_TOTAL_SIZE, size);
  return size;
}

/** Ends a segment: TOTALSIZE = bytes left in the file from pos, MAGICCODE = BLANK. */
export function writeBlankMarker(dst: Uint8Array, pos: number, remaining: number): void {
  assert(Number.isInteger(remaining) && remaining >= BLANK_MARKER_SIZE && remaining <= RECORD_SIZE_MAX_BYTES, "blank size out of range");
  assert(Number.isInteger(pos) && pos >= 0 && pos + BLANK_MARKER_SIZE <= dst.length, "blank marker does not fit in dst");
  writeInt32(dst, pos + OFFSET_MAGIC_CODE, BLANK_MAGIC_CODE);
  writeInt32(dst, pos + OFFSET_TOTAL_SIZE, remaining);
}

function writeHost(dst: Uint8Array, v: DataView, p: number, h: HostAddress): number {
  dst.set(h.ip, p);
  v.setInt32(p + h.ip.length, h.port);
  return p + h.ip.length + 4;
}

/** Java long from a safe integer, as two 32-bit halves (faster than BigInt). */
export function setInt64(v: DataView, p: number, n: number): void {
  v.setInt32(p, Math.floor(n / 0x100000000));
  v.setUint32(p + 4, n >>> 0);
}

function writeInt32(dst: Uint8Array, p: number, n: number): void {
  dst[p] = n >>> 24;
  dst[p + 1] = n >>> 16;
  dst[p + 2] = n >>> 8;
  dst[p + 3] = n;
}

// ---------------------------------------------------------------------------------------------
// Decoding

export interface DecodedRecord {
  totalSize: number;
  magic: number;
  bodyCrc: number;
  queueId: number;
  flag: number;
  queueOffset: number;
  physicalOffset: number;
  sysFlag: number;
  bornTimestamp: number;
  /** ip is a copy (small, and often kept after the segment is released). */
  bornHost: HostAddress;
  storeTimestamp: number;
  storeHost: HostAddress;
  reconsumeTimes: number;
  preparedTransactionOffset: number;
  /** A view into the decoded buffer, not a copy; empty when opts.readBody is false. */
  body: Uint8Array;
  topic: string;
  properties: string;
}

export interface DecodeOptions {
  /** Verify BODYCRC (recovery does; the pull path need not). */
  checkCrc: boolean;
  /** Default true. False skips making the body view (the CRC is still checked if asked). */
  readBody?: boolean;
  /**
   * Host ips as views into `buf` instead of copies: only where `buf` is private heap memory that
   * outlives the result (a pull response on the client), never a mapped segment that may be
   * released. Saves two small ArrayBuffers per record on the consumer's hot path.
   */
  hostViews?: boolean;
}

const EMPTY = new Uint8Array(0);
// Not fatal: bad UTF-8 becomes U+FFFD, as Java's new String(bytes, UTF_8) does.
const utf8Decoder = new TextDecoder("utf-8");

/**
 * Reads the entry at buf[pos]. `buf` should run to the end of the segment (or of the response
 * body): a size that overruns it is reported invalid, including a BLANK marker's.
 *   { end: true }   TOTALSIZE 0 (zero-filled, unwritten space) or pos at the end of buf
 *   { blank: n }    BLANK marker; n bytes to the end of the file
 *   { invalid }     anything else that is not a consistent v1 record
 * Never throws on any byte content. 8-byte fields beyond 2^53 come back rounded (never written by us).
 */
export function decodeRecordAt(buf: Uint8Array, pos: number, opts: DecodeOptions): DecodedRecord | { blank: number } | { end: true } | Invalid {
  if (!Number.isInteger(pos) || pos < 0 || pos > buf.length) return { invalid: `position ${pos} outside buffer of ${buf.length}` };
  const left = buf.length - pos;
  if (left === 0) return { end: true };
  if (left < SIZE_TOTAL_SIZE) return { invalid: `truncated: ${left} bytes left, TOTALSIZE needs 4` };
  const totalSize = readInt32(buf, pos + OFFSET_TOTAL_SIZE);
  if (totalSize === 0) return { end: true };
  if (left < SIZE_TOTAL_SIZE + SIZE_MAGIC_CODE) return { invalid: `truncated: ${left} bytes left, need 8 for TOTALSIZE and MAGICCODE` };
  const magic = readInt32(buf, pos + OFFSET_MAGIC_CODE);
  if (magic === BLANK_MAGIC_CODE) {
    if (totalSize < BLANK_MARKER_SIZE || totalSize > left) return { invalid: `blank marker size ${totalSize} out of range (${left} bytes left)` };
    return { blank: totalSize };
  }
  if (magic === MESSAGE_MAGIC_CODE_V2) return { invalid: "magic v2 (5.x record) not supported" };
  if (magic !== MESSAGE_MAGIC_CODE) return { invalid: `bad magic 0x${(magic >>> 0).toString(16)}` };
  if (totalSize < RECORD_FIXED_SIZE_V4) return { invalid: `total size ${totalSize} < ${RECORD_FIXED_SIZE_V4}` };
  if (totalSize > left) return { invalid: `total size ${totalSize} overruns buffer (${left} bytes left)` };

  const sysFlag = readInt32(buf, pos + OFFSET_SYS_FLAG);
  const bornHostSize = sysFlag & BORNHOST_V6_FLAG ? SIZE_HOST_V6 : SIZE_HOST_V4;
  const storeHostSize = sysFlag & STOREHOST_V6_FLAG ? SIZE_HOST_V6 : SIZE_HOST_V4;
  const fixed = RECORD_FIXED_SIZE_V4 - 2 * SIZE_HOST_V4 + bornHostSize + storeHostSize;
  if (totalSize < fixed) return { invalid: `total size ${totalSize} < ${fixed} (IPv6 hosts)` };
  // From here every read below stays inside [pos, pos + totalSize): fixed <= totalSize bounds the
  // fixed fields, and each length is checked against what is left before the next field is read.
  const variable = totalSize - fixed;
  const end = pos + totalSize;
  let p = pos + OFFSET_BORN_HOST;
  const views = opts.hostViews === true;
  const bornHost = readHost(buf, p, bornHostSize, views);
  p += bornHostSize;
  const storeTimestamp = readInt64(buf, p);
  p += SIZE_STORE_TIMESTAMP;
  const storeHost = readHost(buf, p, storeHostSize, views);
  p += storeHostSize;
  const reconsumeTimes = readInt32(buf, p);
  p += SIZE_RECONSUME_TIMES;
  const preparedTransactionOffset = readInt64(buf, p);
  p += SIZE_PREPARED_TRANSACTION_OFFSET;
  const bodyLength = readInt32(buf, p);
  p += SIZE_BODY_LENGTH;
  if (bodyLength < 0 || bodyLength > variable) return { invalid: `body length ${bodyLength} out of range` };
  const bodyStart = p;
  p += bodyLength;
  const topicLength = (buf[p]! << 24) >> 24; // signed byte
  p += SIZE_TOPIC_LENGTH;
  if (topicLength < 0 || topicLength > variable - bodyLength) return { invalid: `topic length ${topicLength} out of range` };
  const topicStart = p;
  p += topicLength;
  const propertiesLength = (((buf[p]! << 8) | buf[p + 1]!) << 16) >> 16; // signed short
  p += SIZE_PROPERTIES_LENGTH;
  if (propertiesLength < 0) return { invalid: `properties length ${propertiesLength} out of range` };
  if (p + propertiesLength !== end) {
    return { invalid: `lengths add up to ${fixed + bodyLength + topicLength + propertiesLength}, total size ${totalSize}` };
  }
  const storedCrc = readInt32(buf, pos + OFFSET_BODY_CRC);
  if (opts.checkCrc) {
    const crc = bodyCrc(buf.subarray(bodyStart, bodyStart + bodyLength));
    if (crc !== storedCrc) return { invalid: `body crc mismatch: stored ${storedCrc}, computed ${crc}` };
  }
  return {
    totalSize,
    magic,
    bodyCrc: storedCrc,
    queueId: readInt32(buf, pos + OFFSET_QUEUE_ID),
    flag: readInt32(buf, pos + OFFSET_FLAG),
    queueOffset: readInt64(buf, pos + OFFSET_QUEUE_OFFSET),
    physicalOffset: readInt64(buf, pos + OFFSET_PHYSICAL_OFFSET),
    sysFlag,
    bornTimestamp: readInt64(buf, pos + OFFSET_BORN_TIMESTAMP),
    bornHost,
    storeTimestamp,
    storeHost,
    reconsumeTimes,
    preparedTransactionOffset,
    body: opts.readBody === false ? EMPTY : buf.subarray(bodyStart, bodyStart + bodyLength),
    topic: decodeTopic(buf, topicStart, topicLength),
    properties: utf8Decoder.decode(buf.subarray(p, end)),
  };
}

/**
 * Topic names repeat record after record (a pull body holds one queue's messages): the last one
 * decoded is kept and reused when the bytes match, instead of a TextDecoder call per record.
 */
let lastTopicBytes = new Uint8Array(0);
let lastTopic = "";

function decodeTopic(buf: Uint8Array, start: number, length: number): string {
  if (length === lastTopicBytes.length && bytesEqualAt(buf, start, lastTopicBytes)) return lastTopic;
  // A copy even when buf is a Buffer (whose slice() is a view): the bytes are kept for comparing.
  const bytes = Uint8Array.prototype.slice.call(buf, start, start + length);
  lastTopic = utf8Decoder.decode(bytes);
  lastTopicBytes = bytes;
  return lastTopic;
}

// Single-field readers for the pull path. They do not validate: pos must be the start of a record
// that was decoded (or written) before, e.g. a position taken from a ConsumeQueue unit.

export function readTotalSize(buf: Uint8Array, pos: number): number {
  return readInt32(buf, pos + OFFSET_TOTAL_SIZE);
}

export function readQueueOffset(buf: Uint8Array, pos: number): number {
  return readInt64(buf, pos + OFFSET_QUEUE_OFFSET);
}

export function readPhysicalOffset(buf: Uint8Array, pos: number): number {
  return readInt64(buf, pos + OFFSET_PHYSICAL_OFFSET);
}

/** Honours BORNHOST_V6, which moves STORETIMESTAMP from 56 to 68. */
export function readStoreTimestamp(buf: Uint8Array, pos: number): number {
  const v6 = readInt32(buf, pos + OFFSET_SYS_FLAG) & BORNHOST_V6_FLAG;
  return readInt64(buf, pos + (v6 ? OFFSET_STORE_TIMESTAMP + HOST_V6_EXTRA_SIZE : OFFSET_STORE_TIMESTAMP));
}

/** Big-endian int32 at buf[p], by hand (no DataView per read). */
export function readInt32(buf: Uint8Array, p: number): number {
  return (buf[p]! << 24) | (buf[p + 1]! << 16) | (buf[p + 2]! << 8) | buf[p + 3]!;
}

function readInt64(buf: Uint8Array, p: number): number {
  return readInt32(buf, p) * 0x100000000 + (readInt32(buf, p + 4) >>> 0);
}

/**
 * True when `bytes` are the whole record that a ConsumeQueue unit (queue `queueId`, queue offset
 * `queueOffset`, CommitLog offset `phy`, size bytes.length) says is there: TOTALSIZE, a message
 * MAGICCODE, and the QUEUEID, QUEUEOFFSET and PHYSICALOFFSET fields the writer stamped. A unit
 * torn by a crash can point anywhere, into the middle of a record or at another queue's, and the
 * pull path must not serve that. Four integer reads, no CRC: the CommitLog's recovery checks those.
 */
export function isRecordOfUnit(bytes: Uint8Array, phy: number, queueId: number, queueOffset: number): boolean {
  if (bytes.length < OFFSET_BODY) return false;
  if (readInt32(bytes, OFFSET_TOTAL_SIZE) !== bytes.length) return false;
  const magic = readInt32(bytes, OFFSET_MAGIC_CODE);
  if (magic !== MESSAGE_MAGIC_CODE && magic !== MESSAGE_MAGIC_CODE_V2) return false;
  return (
    readInt32(bytes, OFFSET_QUEUE_ID) === queueId &&
    readInt64(bytes, OFFSET_QUEUE_OFFSET) === queueOffset &&
    readInt64(bytes, OFFSET_PHYSICAL_OFFSET) === phy
  );
}

function readHost(buf: Uint8Array, p: number, size: number, view: boolean): HostAddress {
  const ipLength = size - 4;
  const ip = view ? buf.subarray(p, p + ipLength) : Uint8Array.prototype.slice.call(buf, p, p + ipLength);
  return { ip, port: readInt32(buf, p + ipLength) };
}

// ---------------------------------------------------------------------------------------------
// Property string (docs/PROTOCOL.md §4.3, §4.4)

export const NAME_VALUE_SEPARATOR = "\u0001";
export const PROPERTY_SEPARATOR = "\u0002";

/**
 * Java form: `k\u0001v` entries joined with `\u0002`, no trailing separator. Written as given:
 * keys and values containing a separator are the caller's to reject.
 */
export function encodeProperties(map: Record<string, string>): string {
  let out = "";
  for (const key of Object.keys(map)) {
    const value = map[key];
    if (value === undefined || value === null) continue; // Java skips null values
    if (out.length > 0) out += PROPERTY_SEPARATOR;
    out += key + NAME_VALUE_SEPARATOR + value;
  }
  return out;
}

/**
 * Parses as Java 4.9 does: split on 0x02, cut each entry at its first 0x01, keep entries whose
 * key and value are both non-empty (later duplicates win). So ali-ons' trailing 0x02 is harmless.
 * ali-ons' `TAGS\u0001null` is kept as the string "null", as the Java broker does. The result has
 * no prototype, so a key such as "__proto__" from the wire is an ordinary entry.
 */
export function parseProperties(s: string): Record<string, string> {
  const map = Object.create(null) as Record<string, string>;
  let index = 0;
  while (index < s.length) {
    let next = s.indexOf(PROPERTY_SEPARATOR, index);
    if (next < 0) next = s.length;
    const sep = s.indexOf(NAME_VALUE_SEPARATOR, index);
    if (sep > index && sep < next - 1) map[s.slice(index, sep)] = s.slice(sep + 1, next);
    index = next + 1;
  }
  return map;
}

// ---------------------------------------------------------------------------------------------
// Tag hash (docs/PROTOCOL.md §4.5)

/** Java String.hashCode: h = 31*h + c over UTF-16 code units, wrapping as an int. */
export function javaStringHashCode(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

/** The consume-queue tag code: hash of TAGS, 0 when there is no tag. */
export function tagsHashCode(tags: string | undefined): number {
  return tags === undefined || tags === "" ? 0 : javaStringHashCode(tags);
}

// ---------------------------------------------------------------------------------------------
// Offset message id (docs/PROTOCOL.md §4.6): hex(store ip + int port + long commit-log offset)

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).toUpperCase().padStart(2, "0"));

/** The last store host's hex (ip + port): a pull body's records all come from one broker. */
let lastHostIp: Uint8Array = new Uint8Array(0);
let lastHostPort = -1;
let lastHostHex = "";

/** Uppercase hex: 32 characters for an IPv4 store host, 56 for IPv6. */
export function createOffsetMsgId(storeHost: HostAddress, commitLogOffset: number): string {
  const ip = storeHost.ip;
  let prefix: string;
  if (storeHost.port === lastHostPort && ip.length === lastHostIp.length && bytesEqualAt(ip, 0, lastHostIp)) {
    prefix = lastHostHex;
  } else {
    hostSize(storeHost); // asserts 4 or 16 bytes
    prefix = "";
    for (let i = 0; i < ip.length; i++) prefix += HEX[ip[i]!]!;
    prefix += hex32(storeHost.port);
    lastHostIp = Uint8Array.prototype.slice.call(ip); // a copy even of a Buffer view
    lastHostPort = storeHost.port;
    lastHostHex = prefix;
  }
  return prefix + hex32(Math.floor(commitLogOffset / 0x100000000)) + hex32(commitLogOffset >>> 0);
}

/** Whether buf[start, start + bytes.length) equals `bytes` (the caller checked the room). */
function bytesEqualAt(buf: Uint8Array, start: number, bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) if (buf[start + i] !== bytes[i]) return false;
  return true;
}

function hex32(n: number): string {
  return HEX[(n >>> 24) & 0xff]! + HEX[(n >>> 16) & 0xff]! + HEX[(n >>> 8) & 0xff]! + HEX[n & 0xff]!;
}

/** Reads an offset msg id (either case, as Java does); the length decides IPv4 (32) or IPv6 (56). */
export function decodeOffsetMsgId(id: string): { host: HostAddress; offset: number } | Invalid {
  if (id.length !== 32 && id.length !== 56) return { invalid: `msg id length ${id.length}, expected 32 or 56` };
  if (!/^[0-9A-Fa-f]*$/.test(id)) return { invalid: "msg id is not hex" };
  const bytes = new Uint8Array(id.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(id.slice(2 * i, 2 * i + 2), 16);
  const ipLength = bytes.length - 12;
  const port = readInt32(bytes, ipLength);
  if (port < 0 || port > 0xffff) return { invalid: `msg id port ${port} out of range` };
  const hi = readInt32(bytes, ipLength + 4);
  // Offsets are non-negative and, in any store we can hold, below 2^53.
  if (hi < 0 || hi >= 0x200000) return { invalid: "msg id offset out of range" };
  return { host: { ip: bytes.slice(0, ipLength), port }, offset: readInt64(bytes, ipLength + 4) };
}
