/**
 * The recovery decision table (recovery.ts), one test per row, on real mapped segments.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { CommitLog, type StoreRecordInput } from "./commit-log.ts";
import { parseHostAddress } from "../common/message-record.ts";
import { scanCommitLog } from "./recovery.ts";
import { tempStoreDir } from "./test-support.ts";

const SEG = 4096;
const dirs: string[] = [];
const logs: CommitLog[] = [];
afterEach(() => {
  logs.splice(0).forEach((l) => l.close());
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});

const enc = new TextEncoder();
function rec(i: number, bytes = 500): StoreRecordInput {
  return {
    topicName: "T",
    topic: enc.encode("T"),
    queueId: 0,
    flag: 0,
    body: new Uint8Array(bytes).fill(i),
    properties: enc.encode(""),
    sysFlag: 0,
    bornTimestamp: 1,
    bornHost: parseHostAddress("127.0.0.1:1"),
    storeHost: parseHostAddress("127.0.0.1:2"),
    reconsumeTimes: 0,
    preparedTransactionOffset: 0,
  };
}

/** Writes `n` records, then reopens the log the way recovery sees it (every segment mapped in full). */
function build(n: number): { cl: CommitLog; offsets: number[]; sizes: number[] } {
  const dir = tempStoreDir("recovery-");
  dirs.push(dir);
  const w = new CommitLog({ dir, segmentBytes: SEG, flushDiskType: "ASYNC_FLUSH", flushIntervalMs: 1000 });
  const rs = Array.from({ length: n }, (_, i) => w.append(rec(i + 1)));
  w.flushSync();
  w.close();
  const cl = new CommitLog({ dir, segmentBytes: SEG, flushDiskType: "ASYNC_FLUSH", flushIntervalMs: 1000 });
  expect(cl.load()).toEqual([]);
  logs.push(cl);
  return { cl, offsets: rs.map((r) => r.physicalOffset), sizes: rs.map((r) => r.size) };
}

function scan(cl: CommitLog, from = 0) {
  const seen: number[] = [];
  const r = scanCommitLog(cl.segments, from, true, (_rec, off) => seen.push(off));
  return { ...r, seen };
}

function corrupt(cl: CommitLog, offset: number, fill?: number): void {
  const f = cl.segmentFor(offset)!;
  const pos = offset - f.fileFromOffset;
  if (fill === undefined) f.buf[pos + 100]! ^= 0xff;
  else f.buf.fill(fill, pos, pos + 4);
}

describe("recovery decision table", () => {
  test("valid records and BLANK markers: every record kept; end = after the last one", () => {
    const { cl, offsets, sizes } = build(12);
    const r = scan(cl);
    expect(r.seen).toEqual(offsets);
    expect(r.endOffset).toBe(offsets.at(-1)! + sizes.at(-1)!);
    expect(r).toMatchObject({ truncatedBytes: 0, corruptRanges: [] });
    expect(offsets.some((o) => o % SEG === 0 && o > 0)).toBe(true); // crossed a BLANK marker
  });

  test("BLANK marker in the last segment: end = that segment's end", () => {
    const { cl, offsets } = build(7); // 7 × 591 bytes: the 7th record opens segment 2
    const seg2 = cl.segments[1]!;
    seg2.buf.fill(0);
    // Turn segment 2 into an all-blank segment: its first bytes are a BLANK marker of the whole file.
    new DataView(seg2.buf.buffer).setInt32(0, SEG);
    new DataView(seg2.buf.buffer).setInt32(4, -875286124);
    const r = scan(cl);
    expect(r.seen).toEqual(offsets.slice(0, 6));
    expect(r.endOffset).toBe(2 * SEG);
  });

  test("zero TOTALSIZE with nothing after: clean end", () => {
    const { cl, offsets, sizes } = build(3);
    const r = scan(cl);
    expect(r.endOffset).toBe(offsets[2]! + sizes[2]!);
    expect(r.truncatedBytes).toBe(0);
  });

  test("zero TOTALSIZE with a good record later: corrupt range, later records kept", () => {
    const { cl, offsets } = build(5);
    corrupt(cl, offsets[2]!, 0);
    const r = scan(cl);
    expect(r.seen).toEqual([offsets[0]!, offsets[1]!, offsets[3]!, offsets[4]!]);
    expect(r.corruptRanges).toEqual([{ from: offsets[2]!, to: offsets[3]!, reason: "unwritten (zero) space" }]);
  });

  test("invalid record with nothing good after: torn tail truncated and measured", () => {
    const { cl, offsets, sizes } = build(5);
    corrupt(cl, offsets[4]!);
    const r = scan(cl);
    expect(r.seen).toEqual(offsets.slice(0, 4));
    expect(r.endOffset).toBe(offsets[4]!);
    // Measured up to the last non-zero byte: this record ends in a zero properties length.
    expect(r.truncatedBytes).toBeGreaterThan(sizes[4]! - 8);
    expect(r.truncatedBytes).toBeLessThanOrEqual(sizes[4]!);
    expect(r.corruptRanges).toEqual([]);
  });

  test("invalid record with a good record later: corrupt range, later records kept", () => {
    const { cl, offsets } = build(5);
    corrupt(cl, offsets[1]!);
    const r = scan(cl);
    expect(r.seen).toEqual([offsets[0]!, offsets[2]!, offsets[3]!, offsets[4]!]);
    expect(r.corruptRanges[0]).toMatchObject({ from: offsets[1], to: offsets[2] });
  });

  test("damage at the end of a full segment resumes in the next segment", () => {
    const { cl, offsets } = build(12);
    const lastInSeg0 = offsets.filter((o) => o < SEG).at(-1)!;
    corrupt(cl, lastInSeg0);
    const r = scan(cl);
    expect(r.seen).toEqual(offsets.filter((o) => o !== lastInSeg0));
    expect(r.corruptRanges[0]).toMatchObject({ from: lastInSeg0, to: SEG });
  });

  test("a well-formed record copied to the wrong place is treated as damage", () => {
    const { cl, offsets, sizes } = build(4);
    const f = cl.segments[0]!;
    f.buf.copyWithin(offsets[2]!, offsets[1]!, offsets[1]! + sizes[1]!);
    const r = scan(cl);
    expect(r.seen).toEqual([offsets[0]!, offsets[1]!, offsets[3]!]);
    expect(r.corruptRanges[0]!.reason).toContain("claims offset");
  });

  test("starting mid-log (from a checkpoint) sees only the later records", () => {
    const { cl, offsets } = build(6);
    expect(scan(cl, offsets[3]!).seen).toEqual(offsets.slice(3));
  });
});
