import { AssertionError } from "../common/assert.ts";
import { javaStringHashCode } from "../common/message-record.ts";
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  INDEX_ENTRY_LAYOUT,
  INDEX_HEADER_LAYOUT,
  INDEX_NUM_DEFAULT,
  INDEX_SLOT_NUM_DEFAULT,
  IndexFile,
  indexFileSizeBytes,
  indexKey,
  indexKeyHash,
  topicKeyHash,
} from "./index-file.ts";
import { INDEX_ENTRY_SIZE_BYTES, INDEX_HEADER_SIZE_BYTES, INDEX_SLOT_SIZE_BYTES } from "../protocol/store-layout.ts";
import { nodeDisk, type SegmentFile, type StoreDisk } from "./disk.ts";

/** String.hashCode straight from its definition, in exact arithmetic reduced mod 2^32. */
function refHashCode(s: string): number {
  let h = 0n;
  for (let i = 0; i < s.length; i++) h = (h * 31n + BigInt(s.charCodeAt(i))) % (1n << 32n);
  return Number(BigInt.asIntN(32, h));
}
function refKeyHash(s: string): number {
  const h = refHashCode(s);
  return h === -0x80000000 ? 0 : Math.abs(h);
}

/** Deterministic PRNG (mulberry32) so corruption tests are reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Writes bytes into a (closed) file in place; never truncates. */
function patch(path: string, offset: number, bytes: Uint8Array): void {
  const fd = openSync(path, "r+");
  try {
    writeSync(fd, bytes, 0, bytes.length, offset);
  } finally {
    closeSync(fd);
  }
}
function int32Bytes(v: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setInt32(0, v);
  return b;
}
function int64Bytes(v: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, v);
  return b;
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "rocketbun-indexfile-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const T0 = 1_700_000_000_000;

describe("layout", () => {
  test("header fields tile 40 bytes, entry fields tile 20, slot is 4", () => {
    for (const [layout, size] of [
      [INDEX_HEADER_LAYOUT, INDEX_HEADER_SIZE_BYTES],
      [INDEX_ENTRY_LAYOUT, INDEX_ENTRY_SIZE_BYTES],
    ] as const) {
      let at = 0;
      for (const f of Object.values(layout)) {
        expect(f.offset).toBe(at);
        at += f.size;
      }
      expect(at).toBe(size);
    }
    expect(INDEX_HEADER_SIZE_BYTES).toBe(40);
    expect(INDEX_ENTRY_SIZE_BYTES).toBe(20);
    expect(INDEX_SLOT_SIZE_BYTES).toBe(4);
  });

  test("RocketMQ's default file size is 420,000,040 bytes", () => {
    expect(indexFileSizeBytes({ slotNum: INDEX_SLOT_NUM_DEFAULT, indexNum: INDEX_NUM_DEFAULT })).toBe(420_000_040);
  });
});

describe("Java String.hashCode", () => {
  test("known values", () => {
    expect(javaStringHashCode("TagA")).toBe(2598919);
    expect(javaStringHashCode("")).toBe(0);
    expect(javaStringHashCode("TopicA#k1")).toBe(refHashCode("TopicA#k1"));
    expect(javaStringHashCode("TopicA#k1")).toBe(-1903240649);
  });

  test("agrees with the definition on long and non-ASCII strings (UTF-16 code units)", () => {
    for (const s of ["a".repeat(1000), "héllo wörld", "😀 emoji", "\u0000\uffff", "AC8E2C1F00002A9F00000000000F4240"]) {
      expect(javaStringHashCode(s)).toBe(refHashCode(s));
    }
    // A surrogate pair is two code units, as in Java.
    expect(javaStringHashCode("😀")).toBe(0xd83d * 31 + 0xde00);
  });

  test("index hash is |hashCode|, and 0 for Integer.MIN_VALUE", () => {
    expect(refHashCode("polygenelubricants")).toBe(-0x80000000);
    expect(indexKeyHash("polygenelubricants")).toBe(0);
    expect(indexKeyHash("TopicA#k1")).toBe(1903240649);
    expect(indexKeyHash("TagA")).toBe(2598919);
  });

  test("the indexed string is topic#key", () => {
    expect(indexKey("TopicA", "k1")).toBe("TopicA#k1");
  });
});

describe("golden bytes", () => {
  test("two colliding keys: file equals the bytes built by hand", () => {
    const slotNum = 4;
    const indexNum = 4;
    const k1 = "TopicA#k1";
    const k2 = "TopicA#k5";
    const h1 = refKeyHash(k1);
    const h2 = refKeyHash(k2);
    const slot = h1 % slotNum;
    expect(h2 % slotNum).toBe(slot); // the two keys collide, so entry 2 must link to entry 1
    const p1 = 0x1234;
    const p2 = 0x1234 + 200;
    const t1 = T0;
    const t2 = T0 + 2500; // timeDiff = 2 s (rounded down)

    const path = join(dir, "golden");
    const f = IndexFile.create(path, { slotNum, indexNum });
    expect(f.putKey(k1, p1, t1)).toBe(true);
    expect(f.putKey(k2, p2, t2)).toBe(true);
    f.flush();
    f.close();

    const size = 40 + slotNum * 4 + indexNum * 20;
    const expected = new Uint8Array(size);
    const v = new DataView(expected.buffer);
    v.setBigInt64(0, BigInt(t1)); // beginTimestamp
    v.setBigInt64(8, BigInt(t2)); // endTimestamp
    v.setBigInt64(16, BigInt(p1)); // beginPhyOffset
    v.setBigInt64(24, BigInt(p2)); // endPhyOffset
    v.setInt32(32, 2); // hashSlotCount (RocketMQ counts puts)
    v.setInt32(36, 3); // indexCount: next entry number
    v.setInt32(40 + slot * 4, 2); // slot → newest entry
    const e1 = 40 + slotNum * 4 + 1 * 20;
    v.setInt32(e1, h1);
    v.setBigInt64(e1 + 4, BigInt(p1));
    v.setInt32(e1 + 12, 0);
    v.setInt32(e1 + 16, 0); // end of chain
    const e2 = 40 + slotNum * 4 + 2 * 20;
    v.setInt32(e2, h2);
    v.setBigInt64(e2 + 4, BigInt(p2));
    v.setInt32(e2 + 12, 2);
    v.setInt32(e2 + 16, 1); // previous entry in the same slot

    const actual = new Uint8Array(readFileSync(path));
    expect(actual.length).toBe(size);
    expect(Buffer.from(actual).toString("hex")).toBe(Buffer.from(expected).toString("hex"));
    // The same bytes frozen as a literal, so a change to both the code and the builder shows up.
    expect(Buffer.from(actual).toString("hex")).toBe(
      // header: beginTs, endTs, beginPhy, endPhy, hashSlotCount, indexCount
      "0000018bcfe56800" +
        "0000018bcfe571c4" +
        "0000000000001234" +
        "00000000000012fc" +
        "00000002" +
        "00000003" +
        // slots 0..3
        "00000000" +
        "00000002" +
        "00000000" +
        "00000000" +
        // entry 0 (never used)
        "00000000" +
        "0000000000000000" +
        "00000000" +
        "00000000" +
        // entry 1: hash 1903240649, offset 0x1234, 0 s, no previous
        "717125c9" +
        "0000000000001234" +
        "00000000" +
        "00000000" +
        // entry 2: hash 1903240645, offset 0x12fc, 2 s, previous = entry 1
        "717125c5" +
        "00000000000012fc" +
        "00000002" +
        "00000001" +
        // entry 3 (free)
        "00000000" +
        "0000000000000000" +
        "00000000" +
        "00000000",
    );
  });
});

describe("put and select", () => {
  test("colliding keys chain newest first, and each key sees only its own entries", () => {
    const f = IndexFile.create(join(dir, "f"), { slotNum: 1, indexNum: 64 }); // one slot: everything collides
    for (let i = 0; i < 10; i++) expect(f.putKey(i % 2 === 0 ? "T#even" : "T#odd", 100 * i, T0 + i * 1000)).toBe(true);
    expect(f.selectPhyOffsets("T#even", 100, 0, Number.MAX_SAFE_INTEGER)).toEqual([800, 600, 400, 200, 0]);
    expect(f.selectPhyOffsets("T#odd", 100, 0, Number.MAX_SAFE_INTEGER)).toEqual([900, 700, 500, 300, 100]);
    expect(f.selectPhyOffsets("T#none", 100, 0, Number.MAX_SAFE_INTEGER)).toEqual([]);
    expect(f.indexCount).toBe(11);
    f.close();
  });

  test("keys with equal hashes are both returned (the caller verifies against the CommitLog)", () => {
    expect(refHashCode("T#Aa")).toBe(refHashCode("T#BB"));
    const f = IndexFile.create(join(dir, "f"), { slotNum: 8, indexNum: 16 });
    f.putKey("T#Aa", 10, T0);
    f.putKey("T#BB", 20, T0);
    expect(f.selectPhyOffsets("T#Aa", 10, 0, Number.MAX_SAFE_INTEGER)).toEqual([20, 10]);
    f.close();
  });

  test("time range is inclusive, at whole-second resolution after beginTimestamp", () => {
    const f = IndexFile.create(join(dir, "f"), { slotNum: 8, indexNum: 16 });
    f.putKey("T#k", 1, T0); // time T0
    f.putKey("T#k", 2, T0 + 1500); // stored as T0 + 1000
    f.putKey("T#k", 3, T0 + 5000); // T0 + 5000
    const all = Number.MAX_SAFE_INTEGER;
    expect(f.selectPhyOffsets("T#k", 10, 0, all)).toEqual([3, 2, 1]);
    expect(f.selectPhyOffsets("T#k", 10, T0 + 1000, T0 + 5000)).toEqual([3, 2]);
    expect(f.selectPhyOffsets("T#k", 10, T0 + 1001, T0 + 5000)).toEqual([3]);
    expect(f.selectPhyOffsets("T#k", 10, T0, T0 + 4999)).toEqual([2, 1]);
    expect(f.selectPhyOffsets("T#k", 10, T0 + 6000, all)).toEqual([]);
    f.close();
  });

  test("maxNum limits the result to the newest matches", () => {
    const f = IndexFile.create(join(dir, "f"), { slotNum: 8, indexNum: 64 });
    for (let i = 0; i < 20; i++) f.putKey("T#k", i, T0 + i);
    expect(f.selectPhyOffsets("T#k", 3, 0, Number.MAX_SAFE_INTEGER)).toEqual([19, 18, 17]);
    expect(f.selectPhyOffsets("T#k", 0, 0, Number.MAX_SAFE_INTEGER)).toEqual([]);
    f.close();
  });

  test("header tracks begin (first put) and end (last put)", () => {
    const f = IndexFile.create(join(dir, "f"), { slotNum: 8, indexNum: 16 });
    expect([f.beginTimestamp, f.endTimestamp, f.beginPhyOffset, f.endPhyOffset, f.indexCount]).toEqual([0, 0, 0, 0, 1]);
    f.putKey("T#a", 500, T0);
    f.putKey("T#b", 700, T0 + 3000);
    expect([f.beginTimestamp, f.endTimestamp, f.beginPhyOffset, f.endPhyOffset, f.indexCount]).toEqual([T0, T0 + 3000, 500, 700, 3]);
    expect(f.isTimeMatched(0, T0)).toBe(true);
    expect(f.isTimeMatched(T0 + 3000, T0 + 9000)).toBe(true);
    expect(f.isTimeMatched(T0 + 1, T0 + 2)).toBe(true);
    expect(f.isTimeMatched(0, T0 - 1)).toBe(false);
    expect(f.isTimeMatched(T0 + 3001, T0 + 9000)).toBe(false);
    f.close();
  });

  test("a file created to continue a full one takes its begin from the first put", () => {
    const f = IndexFile.create(join(dir, "f"), { slotNum: 8, indexNum: 16, beginTimestamp: T0 - 60_000, beginPhyOffset: 400 });
    expect([f.beginTimestamp, f.endTimestamp, f.beginPhyOffset, f.endPhyOffset]).toEqual([T0 - 60_000, T0 - 60_000, 400, 400]);
    f.putKey("T#a", 450, T0);
    expect([f.beginTimestamp, f.beginPhyOffset]).toEqual([T0, 450]);
    // timeDiff of the first entry is 0, so its time is exactly its store time.
    expect(f.selectPhyOffsets("T#a", 10, T0, T0)).toEqual([450]);
    f.close();
  });

  test("full file: indexNum - 1 keys, then putKey returns false", () => {
    const f = IndexFile.create(join(dir, "f"), { slotNum: 4, indexNum: 4 });
    expect(f.putKey("T#a", 1, T0)).toBe(true);
    expect(f.putKey("T#b", 2, T0)).toBe(true);
    expect(f.isFull()).toBe(false);
    expect(f.putKey("T#c", 3, T0)).toBe(true);
    expect(f.isFull()).toBe(true);
    expect(f.putKey("T#d", 4, T0)).toBe(false);
    expect(f.indexCount).toBe(4);
    expect(f.selectPhyOffsets("T#c", 10, 0, Number.MAX_SAFE_INTEGER)).toEqual([3]);
    f.close();
  });

  test("reopen after close finds everything", () => {
    const path = join(dir, "f");
    const g = { slotNum: 16, indexNum: 128 };
    const f = IndexFile.create(path, g);
    for (let i = 0; i < 100; i++) f.putKey(`T#k${i % 7}`, i * 10, T0 + i * 100);
    const before = [f.beginTimestamp, f.endTimestamp, f.beginPhyOffset, f.endPhyOffset, f.indexCount];
    const lookups = Array.from({ length: 7 }, (_, k) => f.selectPhyOffsets(`T#k${k}`, 1000, 0, Number.MAX_SAFE_INTEGER));
    f.flush();
    f.close();
    expect(f.closed).toBe(true);

    const r = IndexFile.open(path, g);
    if (!(r instanceof IndexFile)) throw new Error(r.invalid);
    expect([r.beginTimestamp, r.endTimestamp, r.beginPhyOffset, r.endPhyOffset, r.indexCount]).toEqual(before);
    for (let k = 0; k < 7; k++) expect(r.selectPhyOffsets(`T#k${k}`, 1000, 0, Number.MAX_SAFE_INTEGER)).toEqual(lookups[k]!);
    expect(lookups[0]!.length).toBe(15);
    // And it keeps accepting puts where it left off.
    expect(r.putKey("T#k0", 5000, T0 + 20_000)).toBe(true);
    expect(r.selectPhyOffsets("T#k0", 1, 0, Number.MAX_SAFE_INTEGER)).toEqual([5000]);
    r.close();
  });

  test("create never clobbers an existing file; use after close throws", () => {
    const path = join(dir, "f");
    const f = IndexFile.create(path, { slotNum: 4, indexNum: 4 });
    expect(() => IndexFile.create(path, { slotNum: 4, indexNum: 4 })).toThrow();
    f.close();
    f.close(); // idempotent
    expect(() => f.putKey("T#a", 1, T0)).toThrow(/after close/);
    expect(() => f.selectPhyOffsets("T#a", 1, 0, 1)).toThrow(/after close/);
  });

  test("a bad geometry or bad put argument is a bug and throws", () => {
    expect(() => IndexFile.create(join(dir, "a"), { slotNum: 0, indexNum: 4 })).toThrow(AssertionError);
    expect(() => IndexFile.create(join(dir, "b"), { slotNum: 4, indexNum: 1 })).toThrow(AssertionError);
    const f = IndexFile.create(join(dir, "c"), { slotNum: 4, indexNum: 4 });
    expect(() => f.putKey("T#a", -1, T0)).toThrow(RangeError);
    expect(() => f.putKey("T#a", 1.5, T0)).toThrow(RangeError);
    f.close();
  });

  test("clampEndPhyOffset lowers endPhyOffset only, never below beginPhyOffset", () => {
    const f = IndexFile.create(join(dir, "f"), { slotNum: 4, indexNum: 16 });
    f.putKey("T#a", 100, T0);
    f.putKey("T#b", 300, T0);
    expect(f.clampEndPhyOffset(500)).toBe(false);
    expect(f.clampEndPhyOffset(200)).toBe(true);
    expect(f.endPhyOffset).toBe(200);
    expect(f.clampEndPhyOffset(50)).toBe(true);
    expect(f.endPhyOffset).toBe(100);
    f.close();
  });
});

describe("damaged files", () => {
  const g = { slotNum: 8, indexNum: 32 };
  const slotsAt = 40;
  const entriesAt = 40 + g.slotNum * 4;

  function build(path: string): void {
    const f = IndexFile.create(path, g);
    for (let i = 0; i < 20; i++) f.putKey(`T#k${i % 5}`, i * 10, T0 + i * 1000);
    f.flush();
    f.close();
  }
  function openOk(path: string): IndexFile {
    const r = IndexFile.open(path, g);
    if (!(r instanceof IndexFile)) throw new Error(r.invalid);
    return r;
  }

  test("a truncated header, an empty file or a wrong size is invalid", () => {
    const path = join(dir, "f");
    build(path);
    const bytes = readFileSync(path);
    const cases: Array<[string, Uint8Array]> = [
      ["empty", new Uint8Array(0)],
      ["half header", bytes.subarray(0, 20)],
      ["header only", bytes.subarray(0, 40)],
      ["one byte short", bytes.subarray(0, bytes.length - 1)],
      ["one byte long", Buffer.concat([bytes, new Uint8Array(1)])],
    ];
    for (const [name, content] of cases) {
      const p = join(dir, name.replaceAll(" ", "-"));
      writeFileSync(p, content);
      const r = IndexFile.open(p, g);
      expect(r instanceof IndexFile ? `${name}: opened` : r.invalid).toMatch(/^size \d+ bytes, expected 712/);
    }
    // The right bytes under a different geometry are rejected too.
    const r = IndexFile.open(path, { slotNum: 4, indexNum: 32 });
    expect(r instanceof IndexFile).toBe(false);
  });

  test("header values out of range are invalid", () => {
    const cases: Array<[string, number, Uint8Array, RegExp]> = [
      ["indexCount 0", 36, int32Bytes(0), /indexCount 0 not in/],
      ["indexCount > indexNum", 36, int32Bytes(33), /indexCount 33 not in/],
      ["indexCount negative", 36, int32Bytes(-5), /indexCount -5 not in/],
      ["hashSlotCount negative", 32, int32Bytes(-1), /hashSlotCount -1/],
      ["negative beginTimestamp", 0, int64Bytes(-1n), /beginTimestamp -1 out of range/],
      ["endPhyOffset beyond 2^53", 24, int64Bytes(1n << 60n), /endPhyOffset \d+ out of range/],
    ];
    for (const [name, at, bytes, reason] of cases) {
      const path = join(dir, name.replaceAll(" ", "-"));
      build(path);
      patch(path, at, bytes);
      const r = IndexFile.open(path, g);
      expect(r instanceof IndexFile ? `${name}: opened` : r.invalid).toMatch(reason);
    }
  });

  test("random slot values: lookups end cleanly, puts still work", () => {
    const rand = prng(42);
    for (let round = 0; round < 20; round++) {
      const path = join(dir, `f${round}`);
      build(path);
      const slots = new Uint8Array(g.slotNum * 4);
      const v = new DataView(slots.buffer);
      for (let s = 0; s < g.slotNum; s++) v.setInt32(s * 4, Math.floor(rand() * 2 ** 32) - 2 ** 31);
      // Mix in values that are in range but wrong, and the boundary indexCount itself.
      v.setInt32(0, 21);
      v.setInt32(4, 3);
      patch(path, slotsAt, slots);
      const f = openOk(path);
      for (let k = 0; k < 10; k++) {
        const got = f.selectPhyOffsets(`T#k${k}`, 100, 0, Number.MAX_SAFE_INTEGER);
        for (const off of got) expect(off % 10).toBe(0);
      }
      expect(f.putKey("T#new", 1000, T0 + 30_000)).toBe(true);
      expect(f.selectPhyOffsets("T#new", 10, 0, Number.MAX_SAFE_INTEGER)).toEqual([1000]);
      f.close();
    }
  });

  test("a prevIndex loop or forward pointer ends the walk", () => {
    const path = join(dir, "f");
    const f0 = IndexFile.create(path, g);
    for (let i = 0; i < 5; i++) f0.putKey("T#k", i * 10, T0 + i * 1000);
    f0.close();
    // Entries 1..5 chain 5→4→3→2→1. Make 3 point at 5 (a cycle), then at itself.
    for (const prev of [5, 3, 4, 1000, -7]) {
      patch(path, entriesAt + 3 * 20 + 16, int32Bytes(prev));
      const f = openOk(path);
      expect(f.selectPhyOffsets("T#k", 100, 0, Number.MAX_SAFE_INTEGER)).toEqual([40, 30, 20]);
      f.close();
    }
  });

  test("random garbage in every entry: never throws, never loops", () => {
    const rand = prng(7);
    for (let round = 0; round < 20; round++) {
      const path = join(dir, `f${round}`);
      build(path);
      const junk = new Uint8Array(g.indexNum * 20);
      for (let i = 0; i < junk.length; i++) junk[i] = Math.floor(rand() * 256);
      patch(path, entriesAt, junk);
      const f = openOk(path);
      for (let k = 0; k < 5; k++) {
        const got = f.selectPhyOffsets(`T#k${k}`, 1000, 0, Number.MAX_SAFE_INTEGER);
        expect(got.length).toBeLessThanOrEqual(f.indexCount);
        for (const off of got) expect(Number.isSafeInteger(off) && off >= 0).toBe(true);
      }
      f.close();
    }
  });
});

describe("topicKeyHash", () => {
  test("equals indexKeyHash(indexKey(topic, key)) for any strings, non-ASCII and MIN_VALUE folds included", () => {
    let seed = 12345;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    const alphabet = ["a", "Z", "0", "#", "%", "é", "中", "😀", "-", "_"];
    for (let i = 0; i < 2000; i++) {
      const word = (n: number) => Array.from({ length: n }, () => alphabet[rnd() % alphabet.length]).join("");
      const topic = word(1 + (rnd() % 12));
      const key = word(rnd() % 40);
      expect(topicKeyHash(topic, key)).toBe(indexKeyHash(indexKey(topic, key)));
    }
    // The same topic again (cached prefix) still agrees.
    expect(topicKeyHash("T", "k")).toBe(indexKeyHash("T#k"));
    expect(topicKeyHash("T", "")).toBe(indexKeyHash("T#"));
  });
});

describe("IndexFile block allocation (a full disk is an ENOSPC error, never a SIGBUS)", () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "index-alloc-"));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  /** nodeDisk whose segments record every pwrite range, or refuse them with ENOSPC once `full`. */
  function recordingDisk() {
    const writes: [number, number][] = [];
    const state = { full: false };
    const disk: StoreDisk = {
      ...nodeDisk,
      createSegment: (path, size) => wrap(nodeDisk.createSegment(path, size)),
      openSegment: (path) => wrap(nodeDisk.openSegment(path)),
    };
    function wrap(f: SegmentFile): SegmentFile {
      return {
        size: f.size,
        map: () => f.map(),
        pwrite: (data, position) => {
          if (state.full) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
          writes.push([position, position + data.length]);
          f.pwrite(data, position);
        },
        syncSync: () => f.syncSync(),
        sync: (done) => f.sync(done),
        close: () => f.close(),
      };
    }
    /** Whether [from, to) is covered by the recorded writes. */
    const covered = (from: number, to: number) => {
      let p = from;
      for (const [a, b] of [...writes].sort((x, y) => x[0] - y[0])) if (a <= p && b > p) p = b;
      return p >= to;
    };
    return { disk, writes, state, covered };
  }

  const g = { slotNum: 50_000, indexNum: 20_000 };
  const entriesStart = INDEX_HEADER_SIZE_BYTES + g.slotNum * INDEX_SLOT_SIZE_BYTES;

  test("create writes the header and slot table through the descriptor; entries are allocated ahead of every put", () => {
    const r = recordingDisk();
    const f = IndexFile.create(join(root, "i"), g, r.disk);
    expect(r.covered(0, entriesStart + INDEX_ENTRY_SIZE_BYTES)).toBe(true);
    for (let n = 1; n < 10_000; n++) {
      expect(f.putKey(`T#k${n}`, n * 100, 1_700_000_000_000)).toBe(true);
      if (n % 997 === 0) expect(r.covered(0, entriesStart + (n + 1) * INDEX_ENTRY_SIZE_BYTES)).toBe(true);
    }
    // Allocation is in 64 KiB steps, not one pwrite per key.
    expect(r.writes.length).toBeLessThan(30);
    expect(f.selectPhyOffsets("T#k777", 10, 0, Number.MAX_SAFE_INTEGER)).toEqual([77_700]);
    f.close();
  });

  test("after a restart the first put allocates the slot table (an older file may have holes) and keeps every key", () => {
    const path = join(root, "i");
    const f = IndexFile.create(path, g);
    for (let n = 1; n < 500; n++) f.putKey(`T#k${n}`, n, 1_700_000_000_000);
    f.flush();
    f.close();
    const r = recordingDisk();
    const g2 = IndexFile.open(path, g, r.disk);
    if ("invalid" in g2) throw new Error(g2.invalid);
    expect(r.writes).toEqual([]);
    expect(g2.putKey("T#new", 9999, 1_700_000_000_000)).toBe(true);
    // The slot table, and the entries from the first new one on (the 499 written ones have blocks).
    expect(r.covered(0, entriesStart)).toBe(true);
    expect(r.covered(entriesStart + 500 * INDEX_ENTRY_SIZE_BYTES, entriesStart + 501 * INDEX_ENTRY_SIZE_BYTES)).toBe(true);
    for (const n of [1, 250, 499]) expect(g2.selectPhyOffsets(`T#k${n}`, 10, 0, Number.MAX_SAFE_INTEGER)).toEqual([n]);
    expect(g2.selectPhyOffsets("T#new", 10, 0, Number.MAX_SAFE_INTEGER)).toEqual([9999]);
    g2.close();
  });

  test("no room for the slot table: create throws ENOSPC and leaves no file; no room ahead: the put throws, nothing is half written", () => {
    const r = recordingDisk();
    r.state.full = true;
    expect(() => IndexFile.create(join(root, "full"), g, r.disk)).toThrow(/ENOSPC/);
    expect(nodeDisk.exists(join(root, "full"))).toBe(false);
    r.state.full = false;
    const f = IndexFile.create(join(root, "i"), { slotNum: 16, indexNum: 20_000 }, r.disk);
    // Fill most of the first 64 KiB of entries, then the disk fills.
    for (let n = 1; n <= 3000; n++) expect(f.putKey(`T#k${n}`, n, 1_700_000_000_000)).toBe(true);
    r.state.full = true;
    let threw = false;
    for (let n = 3001; n < 6000 && !threw; n++) {
      try {
        f.putKey(`T#k${n}`, n, 1_700_000_000_000);
      } catch (e) {
        threw = /ENOSPC/.test(String(e));
      }
    }
    expect(threw).toBe(true);
    // Every key counted before the failure is still found; the failed one was never counted.
    const count = f.indexCount;
    for (const k of [1, Math.floor(count / 2), count - 1]) expect(f.selectPhyOffsets(`T#k${k}`, 10, 0, Number.MAX_SAFE_INTEGER)).toEqual([k]);
    f.close();
  });
});
