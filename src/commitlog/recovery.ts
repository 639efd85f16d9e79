/**
 * CommitLog recovery scan: walk records from a start offset, verify them, report what was lost,
 * and find where the log really ends. Pure over the mapped segments (no writes here); the store
 * applies the result (truncate, re-dispatch).
 *
 * Decision table for what the scan meets at offset X (tested case by case in recovery.test.ts):
 *
 *   | at X                                   | later valid record found? | decision                              |
 *   |----------------------------------------|---------------------------|---------------------------------------|
 *   | valid record (magic, sizes, CRC)       | –                         | keep, dispatch, continue after it     |
 *   | BLANK marker                           | –                         | continue at the next segment's start  |
 *   | BLANK marker in the last segment       | –                         | end = end of that segment             |
 *   | zero TOTALSIZE (never written)         | no                        | end = X (clean end or torn tail)      |
 *   | zero TOTALSIZE                         | yes                       | corrupt range [X, Y) reported, resume at Y |
 *   | invalid record (bad magic/size/CRC)    | no                        | torn tail: end = X, bytes reported    |
 *   | invalid record                         | yes, at Y                 | corrupt range [X, Y) reported, resume at Y |
 *
 * "Later valid record" means: at some Y > X (same or later segment), a record with the right
 * magic, consistent sizes, a matching CRC and a PHYSICALOFFSET field equal to Y — the last check
 * makes a false match in garbage practically impossible. A record found that way was stored
 * after the damage, so dropping it would lose acknowledged data; the damaged range is reported
 * and never dispatched, so it is never served.
 */
import type { MappedFile } from "./mapped-file.ts";
import {
  BLANK_MAGIC_CODE,
  BLANK_MARKER_SIZE,
  decodeRecordAt,
  MESSAGE_MAGIC_CODE,
  OFFSET_PHYSICAL_OFFSET,
  readInt32,
  readPhysicalOffset,
  RECORD_FIXED_SIZE_V4,
  SIZE_PHYSICAL_OFFSET,
  type DecodedRecord,
} from "../common/message-record.ts";

export interface CorruptRange {
  from: number;
  to: number;
  reason: string;
}

export interface ScanResult {
  /** Offset just past the last good record (where the next append goes). */
  endOffset: number;
  records: number;
  /** Bytes of a torn tail dropped after the last good record (0 after a clean stop). */
  truncatedBytes: number;
  corruptRanges: CorruptRange[];
}

// The magic's first byte: a fast memchr-style skip over zero space while resynchronising.
const MAGIC_FIRST_BYTE = (MESSAGE_MAGIC_CODE >>> 24) & 0xff;

/**
 * Scans `segments` (contiguous, in order) from `startOffset`, which must be a record boundary
 * or a segment start. `onRecord` is called for every good record in order.
 */
export function scanCommitLog(
  segments: readonly MappedFile[],
  startOffset: number,
  checkCrc: boolean,
  onRecord: (rec: DecodedRecord, offset: number) => void,
  /**
   * Resynchronisation looks for later good records only below this offset. Data can only exist
   * where it was written, so recovery passes what the checkpoint says was durable (plus a
   * margin): searching the zero tail of a 1 GiB segment would read every page of it.
   */
  resyncLimit = Number.MAX_SAFE_INTEGER,
): ScanResult {
  const result: ScanResult = { endOffset: startOffset, records: 0, truncatedBytes: 0, corruptRanges: [] };
  if (segments.length === 0) return result;
  let i = segments.findIndex((s) => startOffset >= s.fileFromOffset && startOffset < s.fileFromOffset + s.fileSize);
  if (i < 0) {
    // Start before the first segment (files deleted) or after the last: clamp.
    if (startOffset < segments[0]!.fileFromOffset) i = 0;
    else {
      const last = segments.at(-1)!;
      result.endOffset = last.fileFromOffset + last.fileSize;
      return result;
    }
  }
  let seg = segments[i]!;
  let pos = Math.max(0, startOffset - seg.fileFromOffset);
  for (;;) {
    const here = seg.fileFromOffset + pos;
    const r = pos >= seg.fileSize ? ({ blank: 0 } as const) : decodeRecordAt(seg.buf, pos, { checkCrc, readBody: true });
    if ("totalSize" in r) {
      if (r.physicalOffset !== here) {
        // A well-formed record at the wrong place: treat exactly like damage.
        const next = resync(segments, i, pos + 1, resyncLimit);
        if (!handleDamage(result, here, next, `record claims offset ${r.physicalOffset}`, seg, pos)) return result;
        ({ i, pos } = next!);
        seg = segments[i]!;
        continue;
      }
      onRecord(r, here);
      result.records++;
      pos += r.totalSize;
      result.endOffset = seg.fileFromOffset + pos;
      continue;
    }
    if ("blank" in r) {
      if (i + 1 >= segments.length) {
        result.endOffset = seg.fileFromOffset + seg.fileSize;
        return result;
      }
      seg = segments[++i]!;
      pos = 0;
      result.endOffset = seg.fileFromOffset;
      continue;
    }
    const reason = "end" in r ? "unwritten (zero) space" : r.invalid;
    const next = resync(segments, i, pos + 1, resyncLimit);
    if (!handleDamage(result, here, next, reason, seg, pos, "end" in r)) return result;
    ({ i, pos } = next!);
    seg = segments[i]!;
  }
}

/** Records the damage; returns false when the log ends here (no later good record). */
function handleDamage(
  result: ScanResult,
  here: number,
  next: { i: number; pos: number; offset: number } | null,
  reason: string,
  seg: MappedFile,
  pos: number,
  cleanEnd = false,
): boolean {
  if (next === null) {
    result.endOffset = here;
    if (!cleanEnd) result.truncatedBytes = garbageLength(seg, pos);
    return false;
  }
  result.corruptRanges.push({ from: here, to: next.offset, reason });
  result.endOffset = next.offset;
  return true;
}

/**
 * Whether buf[p], at log offset `at` in a segment ending at `segEnd`, is where a scan resumes after
 * damage: "record" for a record with the v1 magic, consistent sizes, a matching CRC and a
 * PHYSICALOFFSET equal to `at`; "blank" for a BLANK marker reaching exactly the segment end;
 * "more" when buf ends before that can be judged. The one rule for recovery (here) and for a
 * slave that meets a master's damage in the HA stream (../ha/record-stream.ts), so both resume at
 * the same offset.
 */
export function resyncPointAt(buf: Uint8Array, p: number, at: number, segEnd: number): "record" | "blank" | "more" | false {
  const left = buf.length - p;
  if (left < BLANK_MARKER_SIZE) return "more"; // TOTALSIZE + MAGICCODE
  const total = readInt32(buf, p);
  const magic = readInt32(buf, p + 4);
  if (magic === BLANK_MAGIC_CODE) return total === segEnd - at ? "blank" : false;
  if (magic !== MESSAGE_MAGIC_CODE) return false;
  if (total < RECORD_FIXED_SIZE_V4 || at + total > segEnd - BLANK_MARKER_SIZE) return false;
  if (left < PHYSICAL_OFFSET_END) return "more";
  if (readPhysicalOffset(buf, p) !== at) return false;
  if (left < total) return "more";
  return "totalSize" in decodeRecordAt(buf.subarray(p, p + total), 0, { checkCrc: true, readBody: false }) ? "record" : false;
}

const PHYSICAL_OFFSET_END = OFFSET_PHYSICAL_OFFSET + SIZE_PHYSICAL_OFFSET;

/** Finds the next position that holds a verified record stored at its own offset. */
function resync(segments: readonly MappedFile[], i: number, from: number, limit: number): { i: number; pos: number; offset: number } | null {
  for (let s = i; s < segments.length; s++) {
    const seg = segments[s]!;
    if (seg.fileFromOffset >= limit) return null;
    const end = Math.min(seg.fileSize, limit - seg.fileFromOffset + 8);
    let p = s === i ? from : 0;
    while (p + 8 <= end) {
      // Jump to the next byte that could start a magic word (offset 4 in a record).
      const m = seg.buf.subarray(0, end).indexOf(MAGIC_FIRST_BYTE, p + 4);
      if (m < 0) break;
      p = m - 4;
      const judged = p >= 0 ? resyncPointAt(seg.buf, p, seg.fileFromOffset + p, seg.fileFromOffset + seg.fileSize) : false;
      if (judged === "record") return { i: s, pos: p, offset: seg.fileFromOffset + p };
      if (judged === "blank" && s + 1 < segments.length) return { i: s + 1, pos: 0, offset: segments[s + 1]!.fileFromOffset };
      p = m - 3;
    }
  }
  return null;
}

/** Length of the garbage at `pos`: up to its last non-zero byte before a run of 64 zero bytes. */
function garbageLength(seg: MappedFile, pos: number): number {
  const ZERO_RUN = 64;
  let p = pos;
  while (p < seg.fileSize) {
    const end = Math.min(seg.fileSize, p + ZERO_RUN);
    let zero = true;
    for (let k = p; k < end; k++) {
      if (seg.buf[k] !== 0) {
        zero = false;
        break;
      }
    }
    if (zero) break;
    p = end;
  }
  // Back up to just after the last non-zero byte before the zero run.
  while (p > pos && seg.buf[p - 1] === 0) p--;
  return p - pos;
}
