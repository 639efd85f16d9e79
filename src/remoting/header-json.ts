/**
 * Serialize type 0 (JSON): the header is a UTF-8 JSON object
 * `{"code":310,"language":"JAVA","version":121,"opaque":7,"flag":0,"remark":..,"extFields":{..}}`.
 *
 * Input is validated into a typed header or a reason string; nothing here throws on bad bytes.
 * extFields values may be any JSON scalar (ali-ons sends numbers and booleans): they become their
 * decimal / "true"/"false" string form, which is also what ACL signatures are computed over.
 */
import type { ExtFields } from "./command.ts";

export interface DecodedHeader {
  code: number;
  language: string;
  version: number;
  opaque: number;
  flag: number;
  remark?: string;
  extFields?: ExtFields;
}

export type HeaderResult = DecodedHeader | { invalid: string };

const utf8Decoder = new TextDecoder("utf-8", { fatal: true });
const utf8Encoder = new TextEncoder();

function isInt32(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= -0x80000000 && v <= 0xffffffff;
}

export function decodeJsonHeader(bytes: Uint8Array, extFieldsMax: number): HeaderResult {
  let text: string;
  try {
    text = utf8Decoder.decode(bytes);
  } catch {
    return { invalid: "JSON header is not valid UTF-8" };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { invalid: "JSON header does not parse" };
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return { invalid: "JSON header is not an object" };
  }
  const h = raw as Record<string, unknown>;
  if (!isInt32(h.code)) return { invalid: "JSON header: code is not an integer" };
  const opaque = h.opaque ?? 0;
  const flag = h.flag ?? 0;
  const version = h.version ?? 0;
  if (!isInt32(opaque)) return { invalid: "JSON header: opaque is not an integer" };
  if (!isInt32(flag)) return { invalid: "JSON header: flag is not an integer" };
  if (!isInt32(version)) return { invalid: "JSON header: version is not an integer" };
  const out: DecodedHeader = {
    code: h.code,
    language: typeof h.language === "string" ? h.language : "OTHER",
    version,
    opaque: opaque | 0,
    flag,
  };
  if (typeof h.remark === "string") out.remark = h.remark;
  if (h.extFields !== undefined && h.extFields !== null) {
    if (typeof h.extFields !== "object" || Array.isArray(h.extFields)) {
      return { invalid: "JSON header: extFields is not an object" };
    }
    // The parsed object is ours: it becomes extFields in place when every value is already a
    // string (Java peers, our client); only other scalars are rewritten (for-in: no entry arrays
    // on this per-request path).
    const ext = h.extFields as Record<string, unknown>;
    let count = 0;
    for (const k in ext) {
      const v = ext[k];
      if (v === null || v === undefined) {
        delete ext[k];
        continue;
      }
      if (++count > extFieldsMax) return { invalid: `JSON header: more than ${extFieldsMax} extFields` };
      if (typeof v === "string") continue;
      if (typeof v === "number" || typeof v === "boolean") ext[k] = String(v);
      else return { invalid: `JSON header: extFields.${k} is not a scalar` };
    }
    out.extFields = ext as ExtFields;
  }
  return out;
}

export function encodeJsonHeader(h: DecodedHeader): Uint8Array {
  return utf8Encoder.encode(encodeJsonHeaderText(h));
}

/** The JSON header as text; the frame encoder writes it into the frame with no intermediate bytes. */
export function encodeJsonHeaderText(h: DecodedHeader): string {
  // Key order does not matter to any reader; fastjson's alphabetical order is kept for familiarity.
  const obj: Record<string, unknown> = {
    code: h.code,
    extFields: h.extFields,
    flag: h.flag,
    language: h.language,
    opaque: h.opaque,
    remark: h.remark,
    serializeTypeCurrentRPC: "JSON",
    version: h.version,
  };
  return JSON.stringify(obj);
}
