/**
 * Slave side: turns the master's CommitLog byte stream — chunks cut anywhere, even inside a record
 * header — into appends of whole, verified records. Pure (no IO): `feed(offset, bytes)` returns
 * the appends to make, in order, or the reason the stream is broken.
 *
 * What a CommitLog segment holds (docs/PROTOCOL.md §4.1, docs/STORAGE.md §2), and what is checked:
 *
 *   segment start                                                          segment end
 *   +-----------+-----------+-----+-----------+--------------------------------------+
 *   | record    | record    | ... | record    | BLANK marker (8) | rest of the file  |
 *   +-----------+-----------+-----+-----------+--------------------------------------+
 *   record:  TOTALSIZE (4) | MAGICCODE v1 (4) | BODYCRC (4) | ... | PHYSICALOFFSET (8) @28 | ...
 *   BLANK:   TOTALSIZE = bytes to the segment end (4) | BLANK MAGICCODE (4)
 *
 * Damage: a master whose recovery found a damaged range in the middle of its log (recovery.ts:
 * torn pages of a crash, kept because valid records follow) streams those bytes like any other,
 * and the slave must hold the same bytes at the same offsets. Bytes that fail the record checks
 * below first break the stream (`damageAt` says where); the caller reconnects with
 * `acceptDamageAt` = that offset, and if the master sends bad bytes there again they start a
 * damaged range: handed out as `damaged` appends (stored as they are, never dispatched or
 * served), and verification resumes at the first
 * offset Y where the master's recovery would resume too — a record with the v1 magic, consistent
 * sizes, a matching CRC and PHYSICALOFFSET = Y, or a BLANK marker reaching exactly the segment
 * end. Not damage, still fatal: a BLANK marker of the wrong size or a valid-looking record that
 * crosses the segment end (a master with another segment size), and v2 records.
 *
 * Invariants (a violation = a broken stream: the verified records before the fault are still
 * handed out, nothing from the fault on is; the caller reconnects and resumes from its log end):
 *   - every chunk starts at `expectedOffset` (for an empty store: at a segment start);
 *   - a record has the v1 magic, its lengths add up, its body CRC matches, its PHYSICALOFFSET
 *     field equals the offset it arrives at, and it ends at least 8 bytes before the segment end
 *     (room for a BLANK marker, as the writer guarantees);
 *   - a BLANK marker's size is exactly the distance to the segment end — the only way a master
 *     with another segment size is noticed before it corrupts the log;
 *   - the local log end only ever moves to a record boundary: bytes of an incomplete record wait
 *     here (`carry`, at most one record) until the record is whole and verified.
 *
 * A BLANK marker is appended at once as the whole rest of the segment (the marker and zeros, as
 * the master's file holds), and the stream bytes that follow it up to the segment end are skipped.
 */
import {
  BLANK_MAGIC_CODE,
  BLANK_MARKER_SIZE,
  decodeRecordAt,
  MESSAGE_MAGIC_CODE,
  MESSAGE_MAGIC_CODE_V2,
  OFFSET_PHYSICAL_OFFSET,
  readPhysicalOffset,
  RECORD_FIXED_SIZE_V4,
  SIZE_PHYSICAL_OFFSET,
  type DecodedRecord,
} from "../common/message-record.ts";
import { resyncPointAt } from "../commitlog/index.ts";
import { assert } from "../common/assert.ts";

const HEADER = 8;
const PHYSICAL_OFFSET_END = OFFSET_PHYSICAL_OFFSET + SIZE_PHYSICAL_OFFSET;
/**
 * A record that crosses the segment end is a master with bigger segments (fatal) only if it looks
 * real: stored at its own offset and no bigger than any message could be (RocketMQ's default
 * maxMessageSize is 4 MiB); a torn TOTALSIZE is damage.
 */
const PLAUSIBLE_RECORD_MAX_BYTES = 8 * 1024 * 1024;

export interface RecordAppend {
  /** Where `data` goes in the CommitLog (the log end at that moment). */
  offset: number;
  /** Whole records, or one BLANK region, or damaged bytes; a view valid until the next `feed`. */
  data: Uint8Array;
  /** Set for bytes of a damaged range (why the range started): store them, never serve them. */
  damaged?: string;
}

export interface FeedResult {
  appends: RecordAppend[];
  /** The records that became whole (body left out), in log order. */
  records: DecodedRecord[];
  /**
   * Set when the stream broke: `appends` then holds only the verified records before the fault
   * (write them), and this stream takes nothing more (reconnect).
   */
  invalid?: string;
  /**
   * With `invalid`: the offset of bytes that failed the record checks (damage, not a fatal
   * mismatch). A new stream built with `acceptDamageAt` = this offset takes them as a damaged
   * range if the master sends the same offset bad again.
   */
  damageAt?: number;
}

export class RecordStream {
  readonly #segmentBytes: number;
  /** Local log end (a record boundary); -1 = empty store, start not known yet. */
  #end: number;
  /** Bytes after #end received but not yet a whole record. */
  #carry: Uint8Array = new Uint8Array(0);
  /**
   * The carry lives in one of two reused buffers (allocating a zeroed array per chunk costs more
   * than the copy): a record completed from one buffer may still be in this feed's appends while
   * the next partial record is kept in the other.
   */
  readonly #carryBuffers: Uint8Array[] = [new Uint8Array(0), new Uint8Array(0)];
  #carryIndex = 0;
  /** Stream bytes below this offset belong to a BLANK region already appended: dropped. */
  #skipUntil = -1;
  /** Absolute offset of the next stream byte. */
  #pos: number;
  #broken: string | null = null;
  /**
   * Inside a damaged range: why it started, and from where in the carry to look for the resync
   * point (1 right after the fault: the bytes at the fault are known bad). The carry then holds
   * the bytes from #end not yet judged (at most one candidate record that is still incomplete).
   */
  #damage: { reason: string; searchFrom: number } | null = null;

  readonly #acceptDamageAt: number;

  /**
   * `end`: the local CommitLog's end, or null for an empty store. `acceptDamageAt`: the offset
   * where the previous stream met bad bytes (its `damageAt`); only there is damage taken.
   */
  constructor(segmentBytes: number, end: number | null, acceptDamageAt = -1) {
    // The caller's own log end (HAClient): where every check below starts counting.
    assert(end === null || (Number.isSafeInteger(end) && end >= 0), "record stream from log end {}", end);
    assert(Number.isInteger(segmentBytes) && segmentBytes > 0, "record stream with segments of {} bytes", segmentBytes);
    this.#segmentBytes = segmentBytes;
    this.#end = end ?? -1;
    this.#pos = this.#end;
    this.#acceptDamageAt = acceptDamageAt;
  }

  /** Where the next chunk must start (-1 while the store is empty and nothing arrived). */
  get expectedOffset(): number {
    return this.#pos;
  }

  /** The local log end after the appends returned so far. */
  get end(): number {
    return this.#end;
  }

  /** Bytes held back because their record is not complete yet. */
  get carriedBytes(): number {
    return this.#carry.length;
  }

  feed(offset: number, data: Uint8Array): FeedResult {
    const out: FeedResult = { appends: [], records: [] };
    const fail = (why: string): FeedResult => {
      this.#broken = why;
      out.invalid = why;
      return out;
    };
    if (this.#broken) return fail(this.#broken);
    if (this.#end < 0) {
      if (data.length === 0) return out;
      if (offset % this.#segmentBytes !== 0) {
        return fail(`first chunk for an empty store at ${offset}, which is not a segment start (segment size ${this.#segmentBytes})`);
      }
      this.#end = this.#pos = offset;
    }
    if (offset !== this.#pos) return fail(`chunk at offset ${offset}, expected ${this.#pos}`);
    const from = this.#end;
    let rest = data;
    while (rest.length > 0) {
      if (this.#skipUntil > this.#pos) {
        const k = Math.min(rest.length, this.#skipUntil - this.#pos);
        rest = rest.subarray(k);
        this.#pos += k;
        continue;
      }
      let buf: Uint8Array;
      if (this.#damage !== null) {
        // Inside a damaged range everything not yet judged stays together until the resync
        // point is found (a candidate record may need many more bytes before it can be judged).
        buf = this.#carry.length > 0 ? this.#carryAppend(rest) : rest;
        this.#pos += rest.length;
        rest = rest.subarray(rest.length);
      } else if (this.#carry.length > 0) {
        // Complete the carried record first, copying only the bytes it still needs.
        const take = Math.min(this.#wanted(), rest.length);
        buf = this.#carryAppend(rest.subarray(0, take));
        rest = rest.subarray(take);
        this.#pos += take;
      } else {
        buf = rest;
        rest = rest.subarray(rest.length);
        this.#pos += buf.length;
      }
      const used = this.#process(buf, out);
      if (typeof used !== "number") return fail(used.invalid);
      // What is left is the start of one record (or BLANK marker), or damaged bytes not yet judged: keep a copy.
      this.#carry = buf === this.#carry && used === 0 ? buf : this.#carryKeep(buf.subarray(used));
    }
    this.#checkBookkeeping(from, out);
    return out;
  }

  /**
   * After a feed that did not break: the appends handed out continue the log from `from` with no
   * gap or overlap and end at #end (the caller writes each at its log's end), and every stream
   * byte is accounted for: appended, carried (#end + carry = #pos), or inside a BLANK region
   * appended whole whose stream bytes are still to be skipped (then nothing is carried).
   */
  #checkBookkeeping(from: number, out: FeedResult): void {
    let at = from;
    for (const a of out.appends) {
      assert(a.offset === at, "record stream: an append at {} where the previous one ended at {}", a.offset, at);
      at += a.data.length;
    }
    assert(at === this.#end, "record stream: appends end at {}, but the log end is {}", at, this.#end);
    if (this.#skipUntil > this.#pos) {
      assert(
        this.#carry.length === 0 && this.#end === this.#skipUntil,
        "record stream: skipping to {} from {} with end {}",
        this.#skipUntil,
        this.#pos,
        this.#end,
      );
    } else {
      assert(
        this.#end + this.#carry.length === this.#pos,
        "record stream: end {} + {} carried bytes is not the stream position {}",
        this.#end,
        this.#carry.length,
        this.#pos,
      );
    }
  }

  /** The carry with `more` added, in the carry's buffer (grown if needed). */
  #carryAppend(more: Uint8Array): Uint8Array {
    const len = this.#carry.length + more.length;
    let b = this.#carryBuffers[this.#carryIndex]!;
    if (b.length < len) {
      const grown = new Uint8Array(Math.max(len, 2 * b.length));
      grown.set(this.#carry);
      this.#carryBuffers[this.#carryIndex] = b = grown;
    }
    b.set(more, this.#carry.length);
    this.#carry = b.subarray(0, len);
    return this.#carry;
  }

  /** Keeps a copy of `bytes` as the new carry, in the other buffer than the last one. */
  #carryKeep(bytes: Uint8Array): Uint8Array {
    if (bytes.length === 0) return new Uint8Array(0);
    this.#carryIndex = 1 - this.#carryIndex;
    let b = this.#carryBuffers[this.#carryIndex]!;
    if (b.length < bytes.length) this.#carryBuffers[this.#carryIndex] = b = new Uint8Array(Math.max(bytes.length, 2 * b.length));
    b.set(bytes);
    return b.subarray(0, bytes.length);
  }

  /** Bytes the carried partial record still needs before #scan can judge it. */
  #wanted(): number {
    const c = this.#carry;
    if (c.length < HEADER) return HEADER - c.length;
    const v = new DataView(c.buffer, c.byteOffset, c.length);
    const total = v.getInt32(0);
    const magic = v.getInt32(4);
    if (magic !== MESSAGE_MAGIC_CODE || total <= c.length || total > this.#segmentBytes) return 0;
    return total - c.length;
  }

  /**
   * Runs buf (which starts at #end) through the record checks and, inside a damaged range, the
   * resync search, switching between the two as often as the bytes require. Returns how many
   * bytes were used (the rest waits for more), or why the stream cannot go on.
   */
  #process(buf: Uint8Array, out: FeedResult): number | { invalid: string } {
    let off = 0;
    for (;;) {
      if (this.#damage !== null) {
        const used = this.#resync(buf.subarray(off), out);
        off += used;
        // The damage reached a segment end and bytes of the next segment are here: search on in
        // them now. Returning would leave them waiting for a feed that may never come — a master
        // with nothing more to send (a slave stuck 150 bytes short: HA simulation seed 3381240769).
        if (this.#damage !== null && !(used > 0 && this.#end % this.#segmentBytes === 0 && off < buf.length)) return off;
        if (this.#damage !== null) continue;
      }
      const used = this.#scan(buf.subarray(off), out);
      if (typeof used !== "number") return used;
      off += used;
      if (this.#damage === null) return off;
    }
  }

  /**
   * Inside a damaged range (buf starts at #end): looks for the resync point, handing out the bytes
   * ruled out as a `damaged` append. Returns the bytes used; #damage is cleared when buf[used] is
   * the resync point, and stays set when more bytes are needed to judge buf[used].
   */
  #resync(buf: Uint8Array, out: FeedResult): number {
    const damage = this.#damage!;
    let p = damage.searchFrom;
    let found = false;
    while (p < buf.length) {
      const at = this.#end + p;
      const segEnd = at - (at % this.#segmentBytes) + this.#segmentBytes;
      if (at % this.#segmentBytes === 0 && p > 0) {
        // The damage reached the segment end: what lies before is handed out in its own append
        // (an append never crosses a segment end); the search goes on in the next segment.
        break;
      }
      // The same rule the master's recovery resumed by (recovery.ts), so both resume at one offset.
      const judged = resyncPointAt(buf, p, at, segEnd);
      if (judged === "more") break;
      if (judged !== false) {
        found = true;
        break;
      }
      p++;
    }
    if (p > 0) {
      // A copy: buf may be a carry buffer that this same feed reuses (damage is rare; records are
      // handed out as views, which the carry's two-buffer rotation keeps valid).
      out.appends.push({ offset: this.#end, data: Uint8Array.prototype.slice.call(buf, 0, p), damaged: damage.reason });
      this.#end += p;
    }
    // Bytes at buf[p] are judged afresh next time (the only known-bad offset is the fault itself).
    damage.searchFrom = 0;
    if (found) this.#damage = null;
    return p;
  }

  /**
   * Consumes whole records from buf (which starts at #end), appending them to `out`. Returns how
   * many bytes were used (the rest is an incomplete record), or why the bytes at #end are wrong
   * (then `out` holds the records before them).
   */
  #scan(buf: Uint8Array, out: FeedResult): number | { invalid: string } {
    const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
    let p = 0;
    let runStart = 0;
    const flushRun = () => {
      if (p > runStart) out.appends.push({ offset: this.#end - (p - runStart), data: buf.subarray(runStart, p) });
      runStart = p;
    };
    // The records before a fault are good: hand them out with the reason.
    const bad = (invalid: string) => {
      flushRun();
      return { invalid };
    };
    // Bad bytes: the first time at an offset they break the stream (a retransmission cures bytes
    // damaged on the way); if the master sends the same offset bad again, they are its own damage:
    // a damaged range starts here, the records before it are handed out, the search takes over.
    const damaged = (reason: string) => {
      flushRun();
      if (this.#end !== this.#acceptDamageAt) {
        out.damageAt = this.#end;
        return { invalid: reason };
      }
      this.#damage = { reason, searchFrom: 1 };
      return p;
    };
    while (buf.length - p >= HEADER) {
      const at = this.#end;
      const segEnd = at - (at % this.#segmentBytes) + this.#segmentBytes;
      const total = view.getInt32(p);
      const magic = view.getInt32(p + 4);
      if (magic === BLANK_MAGIC_CODE) {
        if (total !== segEnd - at) {
          return bad(
            `BLANK marker at ${at} says ${total} bytes to the segment end, but this store's segment ends ${segEnd - at} bytes later ` +
              `(is the master's commitLogSegmentBytes ${this.#segmentBytes}?)`,
          );
        }
        flushRun();
        const region = new Uint8Array(total);
        region.set(buf.subarray(p, p + BLANK_MARKER_SIZE));
        out.appends.push({ offset: at, data: region });
        this.#end = segEnd;
        // The stream still carries the rest of the region: drop what is here, skip the rest.
        const inBuf = Math.min(total, buf.length - p);
        p += inBuf;
        runStart = p;
        if (inBuf < total) this.#skipUntil = segEnd;
        continue;
      }
      if (magic === MESSAGE_MAGIC_CODE_V2) return bad(`record at ${at} has the v2 magic code (RocketMQ 5.x), which this store does not read`);
      if (magic !== MESSAGE_MAGIC_CODE) return damaged(`no record at ${at}: magic code 0x${(magic >>> 0).toString(16)}, TOTALSIZE ${total}`);
      if (total < RECORD_FIXED_SIZE_V4 || at + total > segEnd - BLANK_MARKER_SIZE) {
        const why = `record at ${at} has TOTALSIZE ${total}, impossible before the segment end at ${segEnd}`;
        // A record that looks right (stored at this very offset) but crosses the segment end is a
        // master with bigger segments, not damage.
        if (
          total >= RECORD_FIXED_SIZE_V4 &&
          total <= PLAUSIBLE_RECORD_MAX_BYTES &&
          buf.length - p >= PHYSICAL_OFFSET_END &&
          readPhysicalOffset(buf, p) === at
        ) {
          return bad(`${why} (is the master's commitLogSegmentBytes ${this.#segmentBytes}?)`);
        }
        return damaged(why);
      }
      if (buf.length - p < total) break;
      const r = decodeRecordAt(buf.subarray(p, p + total), 0, { checkCrc: true, readBody: false });
      if (!("totalSize" in r)) return damaged(`record at ${at}: ${"invalid" in r ? r.invalid : "not a record"}`);
      if (r.physicalOffset !== at) return damaged(`record at ${at} says it belongs at ${r.physicalOffset}`);
      out.records.push(r);
      p += total;
      this.#end = at + total;
    }
    flushRun();
    return p;
  }
}
