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

function quoteNumericKeys(text: string): string {
  let out = "";
  let i = 0;
  let inString = false;
  let expectKey = false;
  while (i < text.length) {
    const c = text[i]!;
    if (inString) {
      out += c;
      if (c === "\\") {
        out += text[i + 1] ?? "";
        i += 2;
        continue;
      }
      if (c === '"') inString = false;
      i++;
      continue;
    }
    if (c === '"') {
      inString = true;
      expectKey = false;
      out += c;
      i++;
      continue;
    }
    if (c === "{" || c === ",") {
      expectKey = true;
      out += c;
      i++;
      continue;
    }
    if (expectKey && /[-0-9]/.test(c)) {
      const m = /^-?\d+(?=\s*:)/.exec(text.slice(i, i + 32));
      if (m) {
        out += `"${m[0]}"`;
        i += m[0].length;
        expectKey = false;
        continue;
      }
    }
    if (!/\s/.test(c)) expectKey = false;
    out += c;
    i++;
  }
  return out;
}
