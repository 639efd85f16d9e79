/**
 * The HA stream layouts (./transfer.ts): field widths, golden bytes, and the two decoders fed
 * every split of a captured stream and random input (docs/CONVENTIONS.md §1 and §3).
 */
import { describe, expect, test } from "bun:test";
import { fuzzIterations, fuzzSeed, parseHexFixture, prng } from "../../test/harness/fuzz.ts";
import {
  ChunkDecoder,
  encodeChunkHeader,
  encodeEpochFrame,
  encodeIdentity,
  encodeReport,
  HA_CHUNK_MAX_BYTES,
  HA_HEADER_SIZE,
  HA_REPORT_SIZE,
  ReportDecoder,
  type Chunk,
} from "./transfer.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("HA layouts", () => {
  test("field widths add up: report = offset (8); chunk header = offset (8) + size (4)", () => {
    expect(HA_REPORT_SIZE).toBe(8);
    expect(HA_HEADER_SIZE).toBe(8 + 4);
  });

  test("golden bytes: big-endian, offsets above 2^32", () => {
    expect(hex(encodeReport(0x1_2345_6789))).toBe(hex(parseHexFixture("00000001 23456789")));
    expect(hex(encodeChunkHeader(0x2_0000_0010, 0x40000))).toBe(hex(parseHexFixture("00000002 00000010 # offset\n 00040000 # size")));
    expect(hex(encodeChunkHeader(5, 0))).toBe("000000000000000500000000");
  });
});

/** A stream of three chunks (one a heartbeat) as a master would send it. */
function stream(): { bytes: Uint8Array; chunks: { offset: number; data: string }[] } {
  const chunks = [
    { offset: 0x1_0000_0000, data: "a".repeat(300) },
    { offset: 0x1_0000_012c, data: "" },
    { offset: 0x1_0000_012c, data: "bcdefghij".repeat(7) },
  ];
  const parts = chunks.flatMap((c) => [encodeChunkHeader(c.offset, c.data.length), new TextEncoder().encode(c.data)]);
  return { bytes: Buffer.concat(parts), chunks };
}

const asText = (cs: Chunk[]) => cs.map((c) => ({ offset: c.offset, data: new TextDecoder().decode(c.data) }));

describe("ChunkDecoder", () => {
  test("every cut into two and three pieces yields the same chunks", () => {
    const { bytes, chunks } = stream();
    for (let i = 0; i <= bytes.length; i++) {
      for (let j = i; j <= bytes.length; j += i % 7 === 0 ? 1 : 13) {
        const d = new ChunkDecoder();
        const got: { offset: number; data: string }[] = [];
        for (const piece of [bytes.slice(0, i), bytes.slice(i, j), bytes.slice(j)]) {
          const r = d.feed(piece);
          if (!Array.isArray(r)) throw new Error(r.invalid);
          got.push(...asText(r)); // chunks are valid until the next feed: read them now
        }
        expect(got).toEqual(chunks);
      }
    }
  });

  test("a size out of range breaks the stream for good", () => {
    const d = new ChunkDecoder();
    expect(d.feed(encodeChunkHeader(0, HA_CHUNK_MAX_BYTES + 1))).toEqual({ invalid: `HA chunk size ${HA_CHUNK_MAX_BYTES + 1} out of range` });
    expect(d.feed(encodeChunkHeader(0, 0))).toEqual({ invalid: `HA chunk size ${HA_CHUNK_MAX_BYTES + 1} out of range` });
    const neg = encodeChunkHeader(0, 0);
    neg.set([0xff, 0xff, 0xff, 0xff], 8);
    expect(new ChunkDecoder().feed(neg)).toEqual({ invalid: "HA chunk size -1 out of range" });
  });

  test("fuzz: random bytes in random pieces never throw", () => {
    const seed = fuzzSeed();
    console.log(`transfer fuzz SEED=${seed}`);
    const rng = prng(seed);
    for (let it = 0; it < fuzzIterations(300); it++) {
      const d = new ChunkDecoder();
      const { bytes } = stream();
      const input = rng.bool() ? rng.bytes(rng.int(0, 400)) : bytes.map((b) => (rng.bool(0.02) ? rng.int(0, 255) : b));
      for (let p = 0; p < input.length;) {
        const n = rng.int(1, 64);
        const r = d.feed(input.slice(p, p + n));
        if (!Array.isArray(r)) break;
        p += n;
      }
    }
  });
});

describe("epoch frames (automatic failover)", () => {
  test("an epoch frame before the chunks is decoded in any split, its low word intact", () => {
    expect(hex(encodeEpochFrame(7))).toBe("ffffffff0000000700000000");
    const bytes = Buffer.concat([encodeEpochFrame(0xfffffffe), encodeChunkHeader(100, 3), Buffer.from("abc")]);
    for (let i = 0; i <= bytes.length; i++) {
      const d = new ChunkDecoder();
      const got: Chunk[] = [];
      for (const part of [bytes.subarray(0, i), bytes.subarray(i)]) {
        const r = d.feed(part);
        if (!Array.isArray(r)) throw new Error(r.invalid);
        for (const c of r) got.push({ ...c, data: c.data.slice() });
      }
      expect(got.map((c) => [c.offset, c.epoch, Buffer.from(c.data).toString()])).toEqual([
        [-1, 0xfffffffe, ""],
        [100, undefined, "abc"],
      ]);
    }
  });
});

describe("ReportDecoder", () => {
  test("the newest complete report wins, in any split", () => {
    const bytes = Buffer.concat([encodeReport(7), encodeReport(0x1_0000_0001), encodeReport(42)]);
    for (let i = 0; i <= bytes.length; i++) {
      const d = new ReportDecoder();
      const a = d.feed(bytes.subarray(0, i));
      const b = d.feed(bytes.subarray(i));
      const expectFirst = i >= 24 ? 42 : i >= 16 ? 0x1_0000_0001 : i >= 8 ? 7 : undefined;
      expect(a).toBe(expectFirst);
      expect(b).toBe(i === 24 ? undefined : 42);
    }
  });

  test("an identity report (automatic failover) names the replica, in any split, and is never taken for an offset", () => {
    expect(hex(encodeIdentity(3))).toBe("ffffffff00000003");
    const bytes = Buffer.concat([encodeIdentity(3), encodeReport(100), encodeReport(200)]);
    for (let i = 0; i <= bytes.length; i++) {
      const d = new ReportDecoder();
      const got = [d.feed(bytes.subarray(0, i)), d.feed(bytes.subarray(i))].filter((x) => x !== undefined);
      expect(d.replicaId).toBe(3);
      expect(got.at(-1)).toBe(200);
      expect(got.every((x) => x === 100 || x === 200)).toBe(true);
    }
    // A plain (Java) slave never names itself.
    const plain = new ReportDecoder();
    expect(plain.feed(encodeReport(5))).toBe(5);
    expect(plain.replicaId).toBeUndefined();
  });
});
