/**
 * Helpers shared by the remoting tests (imported only by *.test.ts and header-codec.suite.ts).
 *
 * The byte builders here write big-endian integers and UTF-8 strings by hand, so tests can build
 * frames straight from the documented layout (docs/PROTOCOL.md §1.1 and §1.7) without going through
 * the encoder they are meant to check.
 */
import { parseHexFixture } from "../../test/harness/fuzz.ts";
import type { Logger, LogLevel } from "../common/log.ts";

const utf8Encoder = new TextEncoder();

export function u8(n: number): Uint8Array {
  return Uint8Array.of(n & 0xff);
}

export function u16(n: number): Uint8Array {
  return Uint8Array.of((n >>> 8) & 0xff, n & 0xff);
}

/** 32-bit big-endian; negative numbers are written in two's complement (Java `int`). */
export function u32(n: number): Uint8Array {
  return Uint8Array.of((n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

export function utf8(s: string): Uint8Array {
  return utf8Encoder.encode(s);
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

/** A whole frame from the outer layout: length word, type|headerLength word, header, body. */
export function frameBytes(serializeType: number, header: Uint8Array, body: Uint8Array = new Uint8Array(0)): Uint8Array {
  return concat(u32(4 + header.length + body.length), u32(((serializeType & 0xff) << 24) | header.length), header, body);
}

/** A ROCKETMQ header from the docs/PROTOCOL.md §1.7 layout; entries are written in the given order, as given. */
export function rocketmqHeaderBytes(h: {
  code: number;
  languageByte: number;
  version: number;
  opaque: number;
  flag: number;
  remark?: Uint8Array;
  ext?: [Uint8Array, Uint8Array][];
}): Uint8Array {
  const remark = h.remark ?? new Uint8Array(0);
  const entries = (h.ext ?? []).map(([k, v]) => concat(u16(k.length), k, u32(v.length), v));
  const ext = concat(...entries);
  return concat(u16(h.code), u8(h.languageByte), u16(h.version), u32(h.opaque), u32(h.flag), u32(remark.length), remark, u32(ext.length), ext);
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}

export { parseHexFixture };

export const GOLDEN_PROTOCOL_DIR = new URL("../../test/golden/protocol/", import.meta.url);

export async function readGoldenHex(name: string): Promise<Uint8Array> {
  return parseHexFixture(await Bun.file(new URL(name, GOLDEN_PROTOCOL_DIR)).text());
}

export async function readGoldenJson(name: string): Promise<unknown> {
  return JSON.parse(await Bun.file(new URL(name, GOLDEN_PROTOCOL_DIR)).text());
}

export interface LogLine {
  level: LogLevel;
  msg: string;
}

/** A logger that prints nothing and keeps every line (rate limiting is not applied). */
export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    debug: (msg) => lines.push({ level: "debug", msg }),
    info: (msg) => lines.push({ level: "info", msg }),
    warn: (msg) => lines.push({ level: "warn", msg }),
    error: (msg) => lines.push({ level: "error", msg }),
    rateLimited: (level, _key, msg) => lines.push({ level, msg }),
  };
}
