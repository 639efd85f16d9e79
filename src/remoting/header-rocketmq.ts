/**
 * Serialize type 1 (ROCKETMQ binary header). Big-endian throughout.
 *
 *   +--------+--------+---------+--------+--------+-----------+--------+-----------+-----------+
 *   | code   | lang   | version | opaque | flag   | remarkLen | remark | extLen    | ext ...   |
 *   | 2 B    | 1 B    | 2 B     | 4 B    | 4 B    | 4 B (R)   | R B    | 4 B (X)   | X B       |
 *   +--------+--------+---------+--------+--------+-----------+--------+-----------+-----------+
 *   ext entry: keyLen (2 B) | key | valueLen (4 B) | value
 *
 * Invariant: header length = ROCKETMQ_HEADER_FIXED_SIZE + R + X.
 * Java decodes a zero-length string as null, so empty remarks/values are omitted when encoding.
 */
import { assert } from "../common/assert.ts";
import type { ExtFields } from "./command.ts";
import type { DecodedHeader, HeaderResult } from "./header-json.ts";
import { languageFromByte, languageToByte } from "./language.ts";

/** code 2 + language 1 + version 2 + opaque 4 + flag 4 + remark length 4 + ext length 4. */
export const ROCKETMQ_HEADER_FIXED_SIZE = 21;

const utf8Decoder = new TextDecoder("utf-8", { fatal: true });
const utf8Encoder = new TextEncoder();

export function decodeRocketmqHeader(bytes: Uint8Array, extFieldsMax: number): HeaderResult {
  if (bytes.length < ROCKETMQ_HEADER_FIXED_SIZE) return { invalid: "ROCKETMQ header shorter than 21 bytes" };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  const code = view.getInt16(pos);
  pos += 2;
  const language = languageFromByte(view.getUint8(pos));
  pos += 1;
  const version = view.getInt16(pos);
  pos += 2;
  const opaque = view.getInt32(pos);
  pos += 4;
  const flag = view.getInt32(pos);
  pos += 4;
  const remarkLen = view.getInt32(pos);
  pos += 4;
  if (remarkLen < 0 || remarkLen > bytes.length - pos - 4) return { invalid: "ROCKETMQ header: remark length out of range" };
  const out: DecodedHeader = { code, language, version, opaque, flag };
  try {
    if (remarkLen > 0) out.remark = utf8Decoder.decode(bytes.subarray(pos, pos + remarkLen));
    pos += remarkLen;
    const extLen = view.getInt32(pos);
    pos += 4;
    if (extLen < 0 || extLen !== bytes.length - pos) return { invalid: "ROCKETMQ header: extFields length does not match header length" };
    if (extLen > 0) {
      const ext: ExtFields = {};
      const end = pos + extLen;
      let count = 0;
      while (pos < end) {
        if (end - pos < 2) return { invalid: "ROCKETMQ header: truncated extFields key length" };
        const keyLen = view.getUint16(pos);
        pos += 2;
        if (keyLen > end - pos - 4) return { invalid: "ROCKETMQ header: extFields key overruns the header" };
        const key = utf8Decoder.decode(bytes.subarray(pos, pos + keyLen));
        pos += keyLen;
        const valLen = view.getInt32(pos);
        pos += 4;
        if (valLen < 0 || valLen > end - pos) return { invalid: "ROCKETMQ header: extFields value overruns the header" };
        const val = utf8Decoder.decode(bytes.subarray(pos, pos + valLen));
        pos += valLen;
        if (++count > extFieldsMax) return { invalid: `ROCKETMQ header: more than ${extFieldsMax} extFields` };
        if (keyLen > 0 && valLen > 0) ext[key] = val;
      }
      out.extFields = ext;
    }
  } catch {
    return { invalid: "ROCKETMQ header: string is not valid UTF-8" };
  }
  // extLen was checked to reach the header's end, and every entry was bounds-checked within it.
  assert(pos === bytes.length, "a ROCKETMQ header of {} bytes was read to {}", bytes.length, pos);
  return out;
}

export function encodeRocketmqHeader(h: DecodedHeader): Uint8Array {
  const remark = h.remark ? utf8Encoder.encode(h.remark) : undefined;
  const entries: [Uint8Array, Uint8Array][] = [];
  let extLen = 0;
  if (h.extFields) {
    for (const [k, v] of Object.entries(h.extFields)) {
      if (k.length === 0 || v.length === 0) continue;
      const kb = utf8Encoder.encode(k);
      const vb = utf8Encoder.encode(v);
      entries.push([kb, vb]);
      extLen += 2 + kb.length + 4 + vb.length;
    }
  }
  const total = ROCKETMQ_HEADER_FIXED_SIZE + (remark?.length ?? 0) + extLen;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let pos = 0;
  view.setInt16(pos, h.code);
  pos += 2;
  view.setUint8(pos, languageToByte(h.language));
  pos += 1;
  view.setInt16(pos, h.version);
  pos += 2;
  view.setInt32(pos, h.opaque);
  pos += 4;
  view.setInt32(pos, h.flag);
  pos += 4;
  view.setInt32(pos, remark?.length ?? 0);
  pos += 4;
  if (remark) {
    out.set(remark, pos);
    pos += remark.length;
  }
  view.setInt32(pos, extLen);
  pos += 4;
  for (const [kb, vb] of entries) {
    view.setUint16(pos, kb.length);
    pos += 2;
    out.set(kb, pos);
    pos += kb.length;
    view.setInt32(pos, vb.length);
    pos += 4;
    out.set(vb, pos);
    pos += vb.length;
  }
  assert(pos === total, "a ROCKETMQ header sized {} bytes was written as {}", total, pos);
  return out;
}
