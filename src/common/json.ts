/**
 * JSON as RocketMQ peers write it. Java's fastjson emits maps with integer keys unquoted
 * (`{"brokerAddrs":{0:"10.0.0.1:10911"}}`, consumer offset tables), which JSON.parse rejects.
 * `parseJsonLenient` first tries the fast path, then quotes bare numeric keys outside strings and
 * tries again. Anything else malformed stays an error for the caller to report.
 */
export function parseJsonLenient(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (first) {
    const fixed = quoteNumericKeys(text);
    if (fixed === text) throw first;
    return JSON.parse(fixed);
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

export function parseJsonBytes(bytes: Uint8Array): unknown {
  return parseJsonLenient(utf8.decode(bytes));
}

const encoder = new TextEncoder();

export function jsonBytes(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/**
 * A bare integer key can only follow `{` or `,` (and blanks): text without that shape is returned
 * as it is without a walk. Garbage that merely fails JSON.parse (a fuzzer's or a reconnect storm's
 * heartbeat body) used to be copied a character at a time with two regex tests each; it was a
 * fifth of a broker's CPU under a storm of malformed heartbeats (bench/abuse/connections.ts).
 */
const MAYBE_NUMERIC_KEY = /[{,][ \t\r\n]*-?[0-9]/;
const NUMERIC_KEY = /-?[0-9]+(?=[ \t\r\n]*:)/y;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const COMMA = 0x2c;

function isBlank(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** `text` with every bare integer key outside strings quoted; the same string when there is none. */
export function quoteNumericKeys(text: string): string {
  if (!MAYBE_NUMERIC_KEY.test(text)) return text;
  let out = "";
  let copiedTo = 0;
  let inString = false;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) {
      inString = true;
      expectKey = false;
    } else if (c === OPEN_BRACE || c === COMMA) {
      expectKey = true;
    } else if (expectKey && (c === 0x2d || (c >= 0x30 && c <= 0x39))) {
      NUMERIC_KEY.lastIndex = i;
      const m = NUMERIC_KEY.exec(text);
      expectKey = false;
      if (m) {
        out += `${text.slice(copiedTo, i)}"${m[0]}"`;
        i += m[0].length - 1;
        copiedTo = i + 1;
      }
    } else if (!isBlank(c)) {
      expectKey = false;
    }
  }
  return copiedTo === 0 ? text : out + text.slice(copiedTo);
}
