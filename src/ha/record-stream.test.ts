/**
 * RecordStream against real CommitLog bytes (a MessageStore with 64 KiB segments, so the stream
 * crosses BLANK markers and segment starts): cut anywhere, it rebuilds the master's log exactly;
 * anything that does not continue the log, or does not hold verifiable records, is refused before
 * a byte of it is appended. Fuzz cases print their seed (replay with SEED=…).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { HA_CHUNK_MAX_BYTES as CONFIG_HA_CHUNK_MAX_BYTES } from "../config/schema.ts";
import { MessageStore } from "../commitlog/index.ts";
import { message, tempStoreDir, testStoreOptions } from "../commitlog/test-support.ts";
import { fuzzIterations, fuzzSeed, prng } from "../../test/harness/fuzz.ts";
import { RecordStream, type RecordAppend } from "./record-stream.ts";
import { HA_CHUNK_MAX_BYTES } from "./transfer.ts";

const SEGMENT = 64 * 1024;
let dir = "";
/** The master's whole CommitLog, as one array (offset 0 = byte 0). */
let log = new Uint8Array(0);
/** Where each record starts, and where the BLANK markers are. */
const recordStarts: number[] = [];
const blanks: number[] = [];

beforeAll(async () => {
  dir = tempStoreDir("ha-records-");
  const store = MessageStore.open(testStoreOptions(dir, { segmentBytes: SEGMENT }));
  for (let i = 0; i < 40; i++) {
    const body = `m${i}`.padEnd(3000 + (i % 5) * 1500, "x");
    const r = await store.putMessage(message(`T${i % 3}`, i % 2, body, { KEYS: `k${i}`, TAGS: "a" }));
    recordStarts.push(r.appended[0]!.physicalOffset);
  }
  log = new Uint8Array(store.maxPhyOffset);
  for (const seg of store.commitLog.segments) {
    log.set(seg.buf.subarray(0, seg.wrotePosition), seg.fileFromOffset);
    if (seg.wrotePosition === seg.fileSize) {
      const last = recordStarts.filter((s) => s < seg.fileFromOffset + seg.fileSize).at(-1)!;
      const v = new DataView(seg.buf.buffer, seg.buf.byteOffset);
      blanks.push(last + v.getInt32(last - seg.fileFromOffset));
    }
  }
  await store.shutdown();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The master's chunks: at most `batch` bytes, never across a segment end. */
function chunks(from: number, to: number, batch: number): { offset: number; data: Uint8Array }[] {
  const out: { offset: number; data: Uint8Array }[] = [];
  for (let off = from; off < to;) {
    const segEnd = off - (off % SEGMENT) + SEGMENT;
    const end = Math.min(to, segEnd, off + batch);
    out.push({ offset: off, data: log.slice(off, end) });
    off = end;
  }
  return out;
}

/** Applies appends to an image of the slave's log, checking they continue it. */
class Image {
  readonly bytes = new Uint8Array(log.length + SEGMENT);
  end: number;
  constructor(start: number) {
    this.end = start;
  }
  apply(appends: RecordAppend[]): void {
    for (const a of appends) {
      expect(a.offset).toBe(this.end);
      this.bytes.set(a.data, a.offset);
      this.end += a.data.length;
    }
  }
}

function feedAll(rs: RecordStream, img: Image, parts: { offset: number; data: Uint8Array }[]): void {
  for (const p of parts) {
    const r = rs.feed(p.offset, p.data);
    if (r.invalid !== undefined) throw new Error(r.invalid);
    img.apply(r.appends);
  }
}

describe("RecordStream", () => {
  test("the fixture crosses segment ends (BLANK markers)", () => {
    expect(blanks.length).toBeGreaterThanOrEqual(2);
    expect(log.length).toBeGreaterThan(2 * SEGMENT);
  });

  test("HA_CHUNK_MAX_BYTES is the same in config and ha", () => {
    expect(CONFIG_HA_CHUNK_MAX_BYTES).toBe(HA_CHUNK_MAX_BYTES);
  });

  test("chunks of many sizes rebuild the master's log byte for byte, ending at record boundaries", () => {
    for (const batch of [3, 100, 4096, 32 * 1024, SEGMENT]) {
      const rs = new RecordStream(SEGMENT, null);
      const img = new Image(0);
      let records = 0;
      for (const p of chunks(0, log.length, batch)) {
        const r = rs.feed(p.offset, p.data);
        if (r.invalid !== undefined) throw new Error(`batch ${batch}: ${r.invalid}`);
        img.apply(r.appends);
        records += r.records.length;
        // The log end is always a record start, a BLANK marker, a segment start, or the end of the data.
        expect(recordStarts.includes(img.end) || blanks.includes(img.end) || img.end % SEGMENT === 0 || img.end === log.length).toBe(true);
      }
      expect(records).toBe(recordStarts.length);
      expect(img.end).toBe(log.length);
      expect(Buffer.from(img.bytes.subarray(0, log.length)).equals(Buffer.from(log))).toBe(true);
      expect(rs.carriedBytes).toBe(0);
    }
  });

  test("one cut at every offset around record heads, BLANK markers and segment starts", () => {
    const points = new Set<number>();
    for (const s of [...recordStarts.slice(0, 3), ...blanks, SEGMENT, 2 * SEGMENT]) {
      for (let d = -120; d <= 120; d++) if (s + d > 0 && s + d < log.length) points.add(s + d);
    }
    for (const cut of points) {
      const rs = new RecordStream(SEGMENT, null);
      const img = new Image(0);
      const segEnd = cut - (cut % SEGMENT) + SEGMENT;
      // Up to the cut, then the rest of that segment, then the following segments whole.
      feedAll(rs, img, [...chunks(0, cut, SEGMENT), ...chunks(cut, Math.min(segEnd, log.length), SEGMENT)]);
      feedAll(rs, img, chunks(Math.min(segEnd, log.length), log.length, SEGMENT));
      expect(img.end).toBe(log.length);
      expect(Buffer.from(img.bytes.subarray(0, log.length)).equals(Buffer.from(log))).toBe(true);
    }
  });

  test("resumes from a non-empty log at a record boundary", () => {
    const from = recordStarts[5]!;
    const rs = new RecordStream(SEGMENT, from);
    const img = new Image(from);
    img.bytes.set(log.subarray(0, from));
    feedAll(rs, img, chunks(from, log.length, 5000));
    expect(Buffer.from(img.bytes.subarray(0, log.length)).equals(Buffer.from(log))).toBe(true);
  });

  test("a chunk at the wrong offset is refused, with both offsets named", () => {
    const rs = new RecordStream(SEGMENT, recordStarts[2]!);
    const r = rs.feed(recordStarts[3]!, log.slice(recordStarts[3]!, recordStarts[4]!));
    expect(r).toEqual({ appends: [], records: [], invalid: `chunk at offset ${recordStarts[3]}, expected ${recordStarts[2]}` });
    // A broken stream stays broken.
    expect(rs.feed(recordStarts[2]!, log.slice(recordStarts[2]!, recordStarts[3]!)).invalid).toMatch(/chunk at offset/);
    // Also after a partial record: the next chunk must continue exactly where the last one ended.
    const rs2 = new RecordStream(SEGMENT, 0);
    expect(rs2.feed(0, log.slice(0, 50)).invalid).toBeUndefined();
    expect(rs2.feed(51, log.slice(51, 200)).invalid).toBe("chunk at offset 51, expected 50");
  });

  test("an empty store takes only a segment start as its first offset", () => {
    expect(new RecordStream(SEGMENT, null).feed(recordStarts[1]!, log.slice(recordStarts[1]!, recordStarts[2]!)).invalid).toBe(
      `first chunk for an empty store at ${recordStarts[1]}, which is not a segment start (segment size ${SEGMENT})`,
    );
    const rs = new RecordStream(SEGMENT, null);
    const img = new Image(SEGMENT);
    img.bytes.set(log.subarray(0, SEGMENT));
    feedAll(rs, img, chunks(SEGMENT, log.length, 9999));
    expect(Buffer.from(img.bytes.subarray(0, log.length)).equals(Buffer.from(log))).toBe(true);
  });

  /** Feeds copy[from, to) in chunks of `cut` (never across a segment end); collects what comes out. */
  const run = (rs: RecordStream, copy: Uint8Array, img: Image, from: number, to: number, cut: number) => {
    const damaged: { from: number; to: number; why: string }[] = [];
    const records: number[] = [];
    let invalid: string | undefined;
    let damageAt: number | undefined;
    for (let off = from; off < to;) {
      const segEnd = off - (off % SEGMENT) + SEGMENT;
      const end = Math.min(off + cut, to, segEnd);
      const r = rs.feed(off, copy.slice(off, end));
      img.apply(r.appends);
      for (const a of r.appends) if (a.damaged !== undefined) damaged.push({ from: a.offset, to: a.offset + a.data.length, why: a.damaged });
      for (const rec of r.records) records.push(rec.physicalOffset);
      if (r.invalid !== undefined) {
        invalid = r.invalid;
        damageAt = r.damageAt;
        break;
      }
      off = end;
    }
    return { damaged, records, invalid, damageAt };
  };

  test("bad bytes (CRC, misplaced, zeros, garbage, torn size) break the stream once; sent bad again at the same offset they become a damaged range and verification resumes after it", () => {
    const r3 = recordStarts[3]!;
    const r4 = recordStarts[4]!;
    const stop = recordStarts[6]!;
    const damagedRun = (mutate: (b: Uint8Array) => void, reason: RegExp, cut: number) => {
      const copy = log.slice();
      mutate(copy);
      const img = new Image(0);
      // First pass: refused (a retransmission may cure bytes damaged on the way), records before kept.
      const first = run(new RecordStream(SEGMENT, 0), copy, img, 0, stop, cut);
      expect(first.invalid).toMatch(reason);
      expect(first.damageAt).toBe(r3);
      expect(first.damaged).toEqual([]);
      expect(img.end).toBe(r3);
      // The same offset bad again: the master's own damage.
      const again = run(new RecordStream(SEGMENT, r3, r3), copy, img, r3, stop, cut);
      expect(again.invalid).toBeUndefined();
      // The stored bytes are exactly what was streamed, damage included (the slave mirrors the master).
      expect(img.end).toBe(stop);
      expect(Buffer.from(img.bytes.subarray(0, stop)).equals(Buffer.from(copy.subarray(0, stop)))).toBe(true);
      // One damaged range, [r3, r4) in however many parts, with the fault's reason.
      expect(again.damaged[0]!.from).toBe(r3);
      expect(again.damaged.at(-1)!.to).toBe(r4);
      for (let i = 1; i < again.damaged.length; i++) expect(again.damaged[i]!.from).toBe(again.damaged[i - 1]!.to);
      expect(again.damaged[0]!.why).toMatch(reason);
      // Every other record was verified and handed out.
      expect([...first.records, ...again.records]).toEqual(recordStarts.slice(0, 6).filter((o) => o !== r3));
    };
    for (const cut of [3000, 97, 1 << 20]) {
      damagedRun((b) => (b[r3 + 200] = b[r3 + 200]! ^ 0xff), /body crc mismatch/, cut);
      damagedRun((b) => new DataView(b.buffer).setUint32(r3 + 32, 12345), /says it belongs at/, cut);
      damagedRun((b) => b.fill(0, r3, r3 + 8), /no record at .*TOTALSIZE 0/, cut);
      damagedRun((b) => b.fill(0x41, r3, r4), /no record at/, cut);
      damagedRun((b) => new DataView(b.buffer).setInt32(r3, 10_000_000), /impossible before the segment end/, cut);
    }
  });

  test("bad bytes at another offset than the accepted one still break the stream", () => {
    const copy = log.slice();
    copy[recordStarts[3]! + 200] = copy[recordStarts[3]! + 200]! ^ 0xff;
    const r = run(new RecordStream(SEGMENT, 0, recordStarts[2]!), copy, new Image(0), 0, recordStarts[6]!, 5000);
    expect(r.invalid).toMatch(/body crc mismatch/);
    expect(r.damageAt).toBe(recordStarts[3]!);
  });

  test("a damaged range that runs to the segment end is handed out up to it; the next segment verifies again", () => {
    // Garbage from a record in the first segment to that segment's end (its BLANK marker torn too).
    const lastInSeg = recordStarts.filter((o) => o < SEGMENT).at(-1)!;
    const copy = log.slice();
    copy.fill(0x55, lastInSeg, SEGMENT);
    const img = new Image(0);
    const first = run(new RecordStream(SEGMENT, 0), copy, img, 0, log.length, 5000);
    expect(first.damageAt).toBe(lastInSeg);
    const again = run(new RecordStream(SEGMENT, lastInSeg, lastInSeg), copy, img, lastInSeg, log.length, 5000);
    expect(again.invalid).toBeUndefined();
    expect(again.damaged[0]!.from).toBe(lastInSeg);
    expect(again.damaged.at(-1)!.to).toBe(SEGMENT);
    expect(img.end).toBe(log.length);
    expect(Buffer.from(img.bytes.subarray(0, log.length)).equals(Buffer.from(copy))).toBe(true);
  });

  test("a damaged range to the segment end, then the master's last record in the next segment: that record is handed out without waiting for more", () => {
    // The carry holds the damaged bytes not yet judged; the next segment's bytes join them in one
    // buffer. Resync stops at the segment end, and the search must go on in what follows at once:
    // a master with nothing more to send never feeds again (HA simulation seed 3381240769).
    const lastInSeg = recordStarts.filter((o) => o < SEGMENT).at(-1)!;
    const next = recordStarts.find((o) => o >= SEGMENT)!;
    const end = recordStarts.find((o) => o > next)!;
    const copy = log.slice();
    copy.fill(0x55, lastInSeg, SEGMENT);
    const img = new Image(0);
    run(new RecordStream(SEGMENT, 0), copy, img, 0, end, 5000);
    for (const cut of [5000, 97]) {
      const img2 = new Image(0);
      img2.bytes.set(img.bytes.subarray(0, lastInSeg));
      img2.end = lastInSeg;
      const again = run(new RecordStream(SEGMENT, lastInSeg, lastInSeg), copy, img2, lastInSeg, end, cut);
      expect(again.invalid).toBeUndefined();
      expect(again.damaged.at(-1)!.to).toBe(SEGMENT);
      expect(again.records).toEqual([next]);
      expect(img2.end).toBe(end);
    }
  });

  test("a master with bigger segments is caught at the first record that crosses this store's segment end", () => {
    const rs = new RecordStream(SEGMENT / 2, 0);
    let why = "";
    for (const p of chunks(0, SEGMENT, 4096)) {
      const r = rs.feed(p.offset, p.data);
      expect(r.appends.every((a) => a.damaged === undefined)).toBe(true);
      if (r.invalid !== undefined) {
        why = r.invalid;
        break;
      }
    }
    expect(why).toMatch(/impossible before the segment end.*commitLogSegmentBytes 32768/);
  });

  test("a master with another segment size is caught at its first BLANK marker", () => {
    const rs = new RecordStream(SEGMENT * 2, 0);
    let why = "";
    for (const p of chunks(0, log.length, 32 * 1024)) {
      const r = rs.feed(p.offset, p.data);
      if (r.invalid !== undefined) {
        why = r.invalid;
        break;
      }
    }
    expect(why).toMatch(/BLANK marker at \d+ says \d+ bytes to the segment end.*commitLogSegmentBytes 131072/);
  });

  test("fuzz: random cuts and one mutated byte never throw, and only the mutated byte can differ", () => {
    const seed = fuzzSeed();
    console.log(`record-stream fuzz SEED=${seed}`);
    const rng = prng(seed);
    for (let it = 0; it < fuzzIterations(200); it++) {
      const copy = log.slice();
      const at = rng.int(0, log.length - 1);
      copy[at] = rng.int(0, 255);
      const rs = new RecordStream(SEGMENT, null);
      const img = new Image(0);
      let off = 0;
      while (off < log.length) {
        const segEnd = off - (off % SEGMENT) + SEGMENT;
        const end = Math.min(log.length, segEnd, off + rng.int(1, 40_000));
        const r = rs.feed(off, copy.slice(off, end));
        img.apply(r.appends);
        if (r.invalid !== undefined) break;
        off = end;
      }
      for (let i = 0; i < img.end; i++) {
        if (img.bytes[i] !== log[i] && i !== at) throw new Error(`SEED=${seed} iteration ${it}: byte ${i} differs (mutated ${at})`);
      }
    }
  });
});
