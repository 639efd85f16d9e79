/**
 * Reading typed values out of extFields. Peers send every value as a string (Java) or as a JSON
 * scalar that the header codec already stringified (ali-ons), so parsing happens by field name,
 * as Java's CommandCustomHeader does. A missing or malformed required field is input, not a bug:
 * it becomes a HeaderError that the processor turns into an error response.
 */
import type { ExtFields } from "./command.ts";

export class HeaderError extends Error {
  override name = "HeaderError";
}

export function reqString(ext: ExtFields | undefined, key: string): string {
  const v = ext?.[key];
  if (v === undefined || v === "") throw new HeaderError(`the custom field <${key}> is null`);
  return v;
}

export function optString(ext: ExtFields | undefined, key: string): string | undefined {
  const v = ext?.[key];
  return v === undefined || v === "" ? undefined : v;
}

/**
 * Parses one field's text as Java's parseInt/parseLong would: decimal digits with an optional
 * sign (Number() alone would also take " ", "0x10", "1e3"). `key` names it in the error. A
 * character loop, not a regex: this runs for every integer field of every request.
 */
export function toInt(key: string, s: string): number {
  let i = s.length > 0 && (s.charCodeAt(0) === 43 || s.charCodeAt(0) === 45) ? 1 : 0;
  let ok = i < s.length;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) {
      ok = false;
      break;
    }
  }
  const n = ok ? Number(s) : NaN;
  if (!Number.isInteger(n)) throw new HeaderError(`the custom field <${key}> is not an integer: ${quoted(s)}`);
  return n;
}

/** The longest piece of a client's value an error quotes (the remark and the log line). */
const QUOTE_MAX_CHARS = 64;

/** A client's value as an error quotes it: a 200 KB field must not become a 200 KB remark and log line. */
function quoted(s: string): string {
  return s.length <= QUOTE_MAX_CHARS ? s : `${s.slice(0, QUOTE_MAX_CHARS)}… (${s.length} chars)`;
}

export function reqInt(ext: ExtFields | undefined, key: string): number {
  return toInt(key, reqString(ext, key));
}

export function optInt(ext: ExtFields | undefined, key: string): number | undefined {
  const s = optString(ext, key);
  if (s === undefined) return undefined;
  return toInt(key, s);
}

export function optBool(ext: ExtFields | undefined, key: string): boolean | undefined {
  const s = optString(ext, key);
  if (s === undefined) return undefined;
  return s === "true";
}
