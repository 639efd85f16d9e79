/**
 * The SEND_BATCH_MESSAGE request body (docs/PROTOCOL.md §4.8): entries back to back, each laid out
 * as Java's MessageDecoder.encodeMessage writes it. Big-endian, signed.
 *
 *   offset size
 *   +----+----+-------------------------------------------------------+
 *   |  0 |  4 | TOTALSIZE          this entry, this field included     |
 *   |  4 |  4 | MAGICCODE          0, unused (not checked)             |
 *   |  8 |  4 | BODYCRC            0, unused (the broker computes it)  |
 *   | 12 |  4 | FLAG               message user flag                  |
 *   | 16 |  4 | BODY length n                                         |
 *   | 20 |  n | BODY                                                  |
 *   |    |  2 | PROPERTIES length p  signed short, so p <= 32767      |
 *   |    |  p | PROPERTIES         the message's own property string   |
 *   +----+----+-------------------------------------------------------+
 *
 * Invariants (checked on decode, which never throws):
 *   - TOTALSIZE = 22 + n + p (BATCH_ENTRY_FIXED_SIZE + lengths) and the entry lies inside the body;
 *   - the entries cover the body exactly: no trailing bytes, and at least one entry.
 * The batch-level properties (header field `i`) and CLUSTER are merged by the send processor, not here.
 */
import { PROPERTIES_SIZE_MAX_BYTES, readInt32 } from "./message-record.ts";
import { type Invalid } from "./invalid.ts";
import { allocUninitialized } from "./bytes.ts";

export const BATCH_ENTRY_FIXED_SIZE = 4 + 4 + 4 + 4 + 4 + 2;
const OFFSET_FLAG = 12;
const OFFSET_BODY_LENGTH = 16;
const OFFSET_BODY = 20;

export interface BatchEntry {
  flag: number;
  /** Decoded entries: a view into the request body, not a copy. */
  body: Uint8Array;
  properties: string;
}

const utf8Decoder = new TextDecoder("utf-8");
const utf8Encoder = new TextEncoder();

/** Splits a batch body into its messages, or says why it is malformed. An empty body is invalid. */
export function decodeMessageBatch(body: Uint8Array): BatchEntry[] | Invalid {
  if (body.length === 0) return { invalid: "empty batch" };
  const out: BatchEntry[] = [];
  let pos = 0;
  while (pos < body.length) {
    const left = body.length - pos;
    const at = `batch entry ${out.length} at ${pos}`;
    if (left < BATCH_ENTRY_FIXED_SIZE) return { invalid: `${at}: truncated (${left} bytes left)` };
    const totalSize = readInt32(body, pos);
    if (totalSize < BATCH_ENTRY_FIXED_SIZE || totalSize > left) return { invalid: `${at}: size ${totalSize} out of range (${left} bytes left)` };
    const bodyLength = readInt32(body, pos + OFFSET_BODY_LENGTH);
    if (bodyLength < 0 || bodyLength > totalSize - BATCH_ENTRY_FIXED_SIZE) return { invalid: `${at}: body length ${bodyLength} out of range` };
    const p = pos + OFFSET_BODY + bodyLength;
    const propertiesLength = (((body[p]! << 8) | body[p + 1]!) << 16) >> 16; // signed short
    if (propertiesLength < 0 || BATCH_ENTRY_FIXED_SIZE + bodyLength + propertiesLength !== totalSize) {
      return { invalid: `${at}: lengths add up to ${BATCH_ENTRY_FIXED_SIZE + bodyLength + propertiesLength}, size ${totalSize}` };
    }
    out.push({
      flag: readInt32(body, pos + OFFSET_FLAG),
      body: body.subarray(pos + OFFSET_BODY, p),
      properties: utf8Decoder.decode(body.subarray(p + 2, pos + totalSize)),
    });
    pos += totalSize;
  }
  return out;
}

/** Builds a batch body (client side and tests). Properties over 32767 bytes are a caller bug. */
export function encodeMessageBatch(msgs: readonly BatchEntry[]): Uint8Array {
  const props = msgs.map((m) => utf8Encoder.encode(m.properties));
  let size = 0;
  msgs.forEach((m, i) => {
    const p = props[i]!;
    if (p.length > PROPERTIES_SIZE_MAX_BYTES) throw new Error("message-batch: properties longer than 32767 bytes");
    size += BATCH_ENTRY_FIXED_SIZE + m.body.length + p.length;
  });
  const out = allocUninitialized(size);
  const view = new DataView(out.buffer);
  let pos = 0;
  msgs.forEach((m, i) => {
    const p = props[i]!;
    const entrySize = BATCH_ENTRY_FIXED_SIZE + m.body.length + p.length;
    view.setInt32(pos, entrySize);
    // MAGICCODE and BODYCRC are 0, as Java sends them.
    view.setInt32(pos + 4, 0);
    view.setInt32(pos + 8, 0);
    view.setInt32(pos + OFFSET_FLAG, m.flag);
    view.setInt32(pos + OFFSET_BODY_LENGTH, m.body.length);
    out.set(m.body, pos + OFFSET_BODY);
    view.setInt16(pos + OFFSET_BODY + m.body.length, p.length);
    out.set(p, pos + OFFSET_BODY + m.body.length + 2);
    pos += entrySize;
  });
  return out;
}
