/**
 * The SEND_BATCH_MESSAGE body (docs/PROTOCOL.md §4.8): hand-built bytes decode, encode/decode round
 * trips, and truncated, inconsistent or random input is `invalid` without throwing.
 * Seeded; `SEED=<n> bun test src/commitlog/message-batch.test.ts` replays a run.
 */
import { fuzzSeed, prng } from "../../test/harness/fuzz.ts";
import { describe, expect, test } from "bun:test";
import { BATCH_ENTRY_FIXED_SIZE, type BatchEntry, decodeMessageBatch, encodeMessageBatch } from "./message-batch.ts";

const SEED = fuzzSeed();
const utf8 = (s: string) => new TextEncoder().encode(s);


/** One entry from the docs/PROTOCOL.md §4.8 table, field by field (not by the encoder). */
function handEntry(flag: number, body: Uint8Array, properties: Uint8Array, magic = 0, crc = 0): Uint8Array {
  const size = 4 + 4 + 4 + 4 + 4 + body.length + 2 + properties.length;
  const out = new Uint8Array(size);
  const v = new DataView(out.buffer);
  v.setInt32(0, size); // TOTALSIZE
  v.setInt32(4, magic); // MAGICCODE (unused)
  v.setInt32(8, crc); // BODYCRC (unused)
  v.setInt32(12, flag); // FLAG
  v.setInt32(16, body.length); // BODY length
  out.set(body, 20); // BODY
  v.setInt16(20 + body.length, properties.length); // PROPERTIES length
  out.set(properties, 22 + body.length); // PROPERTIES
  return out;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

const PROPS_A = "TAGS\u0001TagA\u0002KEYS\u0001k1\u0002UNIQ_KEY\u00017F0000010001";
const HAND = concat(
  handEntry(0, utf8("hello"), utf8(PROPS_A)),
  handEntry(-1, new Uint8Array(0), new Uint8Array(0), 0x12345678, 0x7fffffff), // magic/crc ignored
  handEntry(42, Uint8Array.of(0, 1, 2, 255), utf8("K\u0001é")),
);

function invalid(body: Uint8Array): string {
  const r = decodeMessageBatch(body);
  if (!("invalid" in r)) throw new Error(`expected invalid, got ${r.length} entries`);
  expect(r.invalid.length).toBeGreaterThan(0);
  return r.invalid;
}

describe("batch body", () => {
  test("fixed part is 22 bytes", () => {
    expect(BATCH_ENTRY_FIXED_SIZE).toBe(4 + 4 + 4 + 4 + 4 + 2);
  });

  test("hand-built bytes decode; bodies are views into the request body", () => {
    const r = decodeMessageBatch(HAND);
    if ("invalid" in r) throw new Error(r.invalid);
    expect(r).toEqual([
      { flag: 0, body: utf8("hello"), properties: PROPS_A },
      { flag: -1, body: new Uint8Array(0), properties: "" },
      { flag: 42, body: Uint8Array.of(0, 1, 2, 255), properties: "K\u0001é" },
    ]);
    expect(r[0]!.body.buffer).toBe(HAND.buffer);
  });

  test("the encoder writes the hand-built bytes (magic and crc 0)", () => {
    const msgs: BatchEntry[] = [
      { flag: 7, body: utf8("hello"), properties: PROPS_A },
      { flag: 42, body: Uint8Array.of(0, 1, 2, 255), properties: "K\u0001é" },
    ];
    expect(encodeMessageBatch(msgs)).toEqual(concat(handEntry(7, utf8("hello"), utf8(PROPS_A)), handEntry(42, Uint8Array.of(0, 1, 2, 255), utf8("K\u0001é"))));
  });

  test(`random round trips (seed ${SEED})`, () => {
    const rng = prng(SEED);
    for (let i = 0; i < 200; i++) {
      const msgs: BatchEntry[] = Array.from({ length: rng.int(1, 10) }, () => ({
        flag: rng.int(-(2 ** 31), 2 ** 31 - 1),
        body: rng.bytes(rng.int(0, 300)),
        properties: Array.from({ length: rng.int(0, 5) }, (_, k) => `k${k}\u0001v${rng.int(0, 1e6)}中`).join("\u0002"),
      }));
      expect(decodeMessageBatch(encodeMessageBatch(msgs))).toEqual(msgs);
    }
  });

  test("empty, truncated at every length, or trailing bytes → invalid", () => {
    expect(invalid(new Uint8Array(0))).toContain("empty");
    const one = handEntry(0, utf8("hello"), utf8(PROPS_A));
    for (let cut = 1; cut < one.length; cut++) invalid(one.subarray(0, cut));
    // a whole first entry followed by a partial second one
    const secondEnd = one.length + BATCH_ENTRY_FIXED_SIZE; // the second entry is empty: 22 bytes
    for (let cut = HAND.length - 1; cut > one.length; cut--) if (cut !== secondEnd) invalid(HAND.subarray(0, cut));
    invalid(concat(one, Uint8Array.of(0)));
  });

  test("inconsistent entries → invalid", () => {
    const cases: [string, (v: DataView) => void][] = [
      ["size too small", (v) => v.setInt32(0, 21)],
      ["size negative", (v) => v.setInt32(0, -1)],
      ["size +1", (v) => v.setInt32(0, 28)],
      ["size -1", (v) => v.setInt32(0, 26)],
      ["body length +1", (v) => v.setInt32(16, 4)],
      ["body length -1", (v) => v.setInt32(16, 2)],
      ["body length negative", (v) => v.setInt32(16, -3)],
      ["properties length +1", (v) => v.setInt16(23, 3)],
      ["properties length negative", (v) => v.setInt16(23, -2)],
    ];
    for (const [name, mutate] of cases) {
      // one 27-byte entry (body "abc", properties "xy") inside a longer body
      const buf = concat(handEntry(1, utf8("abc"), utf8("xy")), handEntry(2, utf8("d"), utf8("")));
      mutate(new DataView(buf.buffer));
      const r = decodeMessageBatch(buf);
      expect({ name, invalid: "invalid" in r }).toEqual({ name, invalid: true });
    }
  });

  test(`fuzz: random and mutated bodies never throw (seed ${SEED})`, () => {
    const rng = prng(SEED ^ 0xba7c);
    for (let i = 0; i < 3000; i++) {
      let buf: Uint8Array;
      if (rng.bool()) buf = rng.bytes(rng.int(0, 80));
      else {
        buf = HAND.slice(0, rng.int(0, HAND.length));
        for (let f = rng.int(1, 3); f > 0 && buf.length > 0; f--) buf[rng.int(0, buf.length - 1)] = rng.int(0, 255);
      }
      let r: ReturnType<typeof decodeMessageBatch>;
      try {
        r = decodeMessageBatch(buf);
      } catch (e) {
        throw new Error(`iteration ${i}, SEED=${SEED}: threw ${String(e)}`);
      }
      if (!("invalid" in r)) {
        // a decoded batch covers the body exactly
        const covered = r.reduce((n, m) => n + BATCH_ENTRY_FIXED_SIZE + m.body.length + utf8(m.properties).length, 0);
        if (r.every((m) => !m.properties.includes("\ufffd"))) expect(covered).toBe(buf.length);
      }
    }
  });

  test("encoding properties over 32767 bytes is a bug and throws", () => {
    expect(() => encodeMessageBatch([{ flag: 0, body: new Uint8Array(0), properties: "x".repeat(32768) }])).toThrow();
  });
});
