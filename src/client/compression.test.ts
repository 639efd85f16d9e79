/**
 * Compressed bodies against real compressor output: test/golden/compression/*.hex were written by
 * the RocketMQ 5.3.3 Java client's own compressors (GenVectors.java there) and, for the LZ4 frame
 * features lz4-java leaves out, by the lz4 command-line tool. Plus: every codec bit pattern, bad
 * bodies (cut at every byte, seeded mutations) that must become { invalid } and never throw, the
 * size limit, and decodeMessages handing a bad body over with bodyError.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as zlib from "node:zlib";
import { decompress as fzstdDecompress } from "fzstd";
import { CompressionFlag, SysFlag } from "../protocol/sys-flag.ts";
import { encodeRecord, recordSize, type RecordInput } from "../common/message-record.ts";
import { fuzzIterations, fuzzSeed, parseHexFixture, prng } from "../../test/harness/fuzz.ts";
import { decompressBody, lz4FrameDecompress, zstdDecompress } from "./compression.ts";
import { decodeMessages } from "./message.ts";

const DIR = join(import.meta.dir, "../../test/golden/compression");
const utf8 = (s: string) => new TextEncoder().encode(s);

const golden = (name: string): Uint8Array => parseHexFixture(readFileSync(join(DIR, name), "utf8"));

// The inputs GenVectors.java compressed, rebuilt byte for byte.
function lines(n: number): Uint8Array<ArrayBuffer> {
  let s = "";
  for (let i = 0; i < n; i++) s += `RocketBun body line ${String(i).padStart(4, "0")}: the quick brown fox jumps over the lazy dog\n`;
  return utf8(s);
}
function noise(): Uint8Array<ArrayBuffer> {
  const b = new Uint8Array(1200);
  let x = 1;
  for (let i = 0; i < b.length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) | 0;
    b[i] = (x >>> 16) & 0xff;
  }
  return b;
}
const INPUTS: Record<string, Uint8Array<ArrayBuffer>> = { text: lines(80), noise: noise(), small: utf8("hello") };

const flag = (codec: number) => SysFlag.COMPRESSED | (codec << CompressionFlag.TYPE_SHIFT);
const CODECS = [
  { name: "lz4", codec: CompressionFlag.LZ4 },
  { name: "zstd", codec: CompressionFlag.ZSTD },
  { name: "zlib", codec: CompressionFlag.ZLIB },
] as const;

describe("bodies written by the Java client's compressors", () => {
  for (const { name, codec } of CODECS) {
    for (const input of Object.keys(INPUTS)) {
      test(`${name}: ${input}`, () => {
        const out = decompressBody(golden(`${input}.${name}.hex`), flag(codec));
        expect(out).toEqual(INPUTS[input]!);
      });
    }
  }

  test("zlib with codec bits 0 (4.x producers, this library's Producer) is zlib too", () => {
    expect(decompressBody(golden("text.zlib.hex"), SysFlag.COMPRESSED)).toEqual(INPUTS.text!);
  });

  test("each zstd decoder the runtime may pick reads the Java frames (Bun, node:zlib, fzstd)", () => {
    const nodeZstd = (zlib as { zstdDecompressSync?: (b: Uint8Array) => Uint8Array }).zstdDecompressSync;
    for (const input of Object.keys(INPUTS)) {
      const z = golden(`${input}.zstd.hex`);
      expect(zstdDecompress(z, 1 << 20)).toEqual(INPUTS[input]!);
      expect(fzstdDecompress(z)).toEqual(INPUTS[input]!);
      if (nodeZstd) expect(new Uint8Array(nodeZstd(z))).toEqual(INPUTS[input]!);
    }
  });

  test("lz4 frame with dependent 64 KiB blocks, block and content checksums, content size (lz4 CLI)", () => {
    const z = golden("lines.lz4-cli.hex");
    expect(z[4]).toBe(0x5c); // FLG: version 01, dependent blocks, block checksum, content size, content checksum
    expect(lz4FrameDecompress(z)).toEqual(lines(1000));
  });

  test("two lz4 frames back to back, with a skippable frame between them", () => {
    const a = golden("small.lz4.hex");
    const skip = Uint8Array.of(0x53, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3);
    const both = new Uint8Array([...a, ...skip, ...golden("text.lz4.hex")]);
    expect(lz4FrameDecompress(both)).toEqual(new Uint8Array([...INPUTS.small!, ...INPUTS.text!]));
  });
});

describe("bodies that do not decompress become { invalid }, never a throw", () => {
  test("unknown codec bits 4..7 name the bits", () => {
    for (const codec of [4, 5, 6, 7]) {
      const out = decompressBody(golden("text.lz4.hex"), flag(codec));
      expect(out).toEqual({ invalid: `unknown compression type ${codec} (sysFlag bits 8-10 = 0x${(codec << 8).toString(16)})` });
    }
  });

  test("each codec, its input cut at every byte", () => {
    for (const { name, codec } of CODECS) {
      const z = golden(`text.${name}.hex`);
      for (let cut = 0; cut < z.length; cut++) {
        const out = decompressBody(z.subarray(0, cut), flag(codec));
        // A zstd or zlib prefix can decode to a prefix without error; it must never be the whole body.
        if (out instanceof Uint8Array) expect(out.length).toBeLessThan(INPUTS.text!.length);
        else expect(out.invalid.length).toBeGreaterThan(0);
      }
    }
  });

  const SEED = fuzzSeed();
  test(`seeded mutations of the lz4 frames (seed ${SEED})`, () => {
    const rng = prng(SEED);
    const frames = [golden("text.lz4.hex"), golden("noise.lz4.hex"), golden("lines.lz4-cli.hex")];
    for (let n = 0; n < fuzzIterations(2000); n++) {
      const z = frames[n % frames.length]!.slice();
      for (let k = rng.int(1, 4); k > 0; k--) z[rng.int(0, z.length - 1)] = rng.int(0, 255);
      const out = lz4FrameDecompress(z, 1 << 20);
      if (out instanceof Uint8Array) expect(out.length).toBeLessThanOrEqual(1 << 20);
      else expect(out.invalid.startsWith("lz4: ")).toBe(true);
    }
  });

  test("a body decompressing past the limit is refused, for every codec", () => {
    const big = lines(1000); // 70000 bytes
    expect(decompressBody(golden("lines.lz4-cli.hex"), flag(CompressionFlag.LZ4), 65536)).toEqual({
      invalid: "lz4: content size exceeds 65536 bytes",
    });
    const lz4NoSize = golden("text.lz4.hex");
    expect(decompressBody(lz4NoSize, flag(CompressionFlag.LZ4), 4096)).toEqual({ invalid: "lz4: decompresses to more than 4096 bytes" });
    expect(decompressBody(Bun.zstdCompressSync(big), flag(CompressionFlag.ZSTD), 65536)).toEqual({
      invalid: "zstd body decompresses to more than 65536 bytes",
    });
    const z = decompressBody(new Uint8Array(zlib.deflateSync(big)), flag(CompressionFlag.ZLIB), 65536);
    expect("invalid" in z && z.invalid.startsWith("zlib body does not decompress")).toBe(true);
  });

  test("match offsets before the frame's first byte are refused", () => {
    // Frame: FLG 0x60 BD 0x70 HC; one block: token 0x10 (1 literal, match 4), 'a', offset 2.
    const z = Uint8Array.of(0x04, 0x22, 0x4d, 0x18, 0x60, 0x70, 0x73, 4, 0, 0, 0, 0x10, 0x61, 2, 0, 0, 0, 0, 0);
    expect(lz4FrameDecompress(z)).toEqual({ invalid: "lz4: match offset 2 out of range" });
    // Offset 1 repeats the literal (an overlapping copy of 4), then a last sequence of 'b'.
    const good = Uint8Array.of(0x04, 0x22, 0x4d, 0x18, 0x60, 0x70, 0x73, 6, 0, 0, 0, 0x10, 0x61, 1, 0, 0x10, 0x62, 0, 0, 0, 0);
    expect(lz4FrameDecompress(good)).toEqual(utf8("aaaaab"));
  });
});

describe("decodeMessages", () => {
  const host = { ip: Uint8Array.of(127, 0, 0, 1), port: 10911 };
  function record(body: Uint8Array, sysFlag: number): Uint8Array {
    const input: RecordInput = {
      topic: utf8("T"),
      queueId: 0,
      flag: 0,
      body,
      properties: utf8("UNIQ_KEY\u0001U1"),
      sysFlag,
      bornTimestamp: 1,
      bornHost: host,
      storeHost: host,
      reconsumeTimes: 0,
      preparedTransactionOffset: 0,
    };
    const dst = new Uint8Array(recordSize(input));
    encodeRecord(dst, 0, input, 0, 0, 2);
    return dst;
  }

  test("LZ4, ZSTD, zlib and plain bodies in one pull; an unknown codec is delivered with bodyError", () => {
    const parts = [
      record(golden("text.lz4.hex"), flag(CompressionFlag.LZ4)),
      record(golden("text.zstd.hex"), flag(CompressionFlag.ZSTD)),
      record(golden("text.zlib.hex"), SysFlag.COMPRESSED),
      record(utf8("plain"), 0),
      record(utf8("not compressed at all"), flag(6)),
    ];
    const body = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      body.set(p, at);
      at += p.length;
    }
    const msgs = decodeMessages(body, "b");
    expect(msgs.map((m) => m.body)).toEqual([INPUTS.text!, INPUTS.text!, INPUTS.text!, utf8("plain"), utf8("not compressed at all")]);
    expect(msgs.map((m) => m.bodyError)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      "unknown compression type 6 (sysFlag bits 8-10 = 0x600)",
    ]);
  });
});
