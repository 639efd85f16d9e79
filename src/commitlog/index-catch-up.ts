/**
 * The index's catch-up after a crash (docs/STORAGE.md §4.1). After an unclean shutdown,
 * IndexService.load deletes the index file that was still taking puts (its pages were never
 * synced and may be torn), so its keys must be indexed again from the CommitLog, from where that
 * file began. One file holds up to indexNum − 1 keys (20 M by default: ~10 GB of 1 KiB messages
 * with one key each). Doing that before the store opened made every restart after a crash as
 * slow as the file was large: the crash loop measured 3.5 ms per MiB of store, 7.5 s at 2 GiB.
 *
 * So the store opens with its ConsumeQueues recovered (what sends and pulls need) and the index
 * behind: MessageStore dispatches new records to the ConsumeQueues only, and this walks the
 * CommitLog from where the index stops, a slice of records at a time between the broker's other
 * work, until it reaches the records dispatched so far; from then on every dispatch indexes again.
 * The index's entries stay in CommitLog order (IndexFile's invariant), because nothing else puts
 * keys while this runs. Until then a query by key may miss a key stored before the crash; Apache
 * RocketMQ 4.9 by default never indexes those again (messageIndexSafe = false).
 *
 * Records are read as the ConsumeQueue dispatch read them: no CRC (recovery verified the segment
 * it could have torn), ranges recovery found damaged skipped, BLANK padding to the next segment.
 * Segments deleted by retention meanwhile are skipped too (their keys would point at nothing).
 */
import type { CorruptRange } from "./recovery.ts";
import type { MappedFile } from "./mapped-file.ts";
import { MessageConst } from "../protocol/message-const.ts";
import { decodeRecordAt, parseProperties } from "../common/message-record.ts";
import type { IndexDispatch } from "./index-service.ts";

/** What the catch-up reads and where it puts keys: the store's CommitLog, damage list and index. */
export interface IndexCatchUpSource {
  segmentFor(offset: number): MappedFile | undefined;
  /** The CommitLog's first offset still stored. */
  minOffset(): number;
  /** The end of the records dispatched to the ConsumeQueues: where the catch-up is complete. */
  dispatchedEnd(): number;
  /** A range recovery found damaged that holds `offset`, if any. */
  damageAt(offset: number): CorruptRange | undefined;
  /** IndexService.buildIndex. */
  index(rec: IndexDispatch): void;
}

export type CatchUpStep = "more" | "done" | { invalid: string };

export class IndexCatchUp {
  /** Where the catch-up began. */
  readonly from: number;
  #at: number;
  /** Records read so far (with keys or not). */
  records = 0;
  readonly #source: IndexCatchUpSource;

  constructor(from: number, source: IndexCatchUpSource) {
    this.from = from;
    this.#at = from;
    this.#source = source;
  }

  /** The CommitLog offset indexed up to. */
  get at(): number {
    return this.#at;
  }

  /** The CommitLog was cut at `offset` (a replica's cut): what lies past it is gone. */
  cut(offset: number): void {
    if (this.#at > offset) this.#at = offset;
  }

  /**
   * Indexes up to `maxRecords` records. "done" once it has reached the dispatched end (then the
   * store indexes every dispatch itself); an invalid record where the ConsumeQueues found a good
   * one ends the catch-up with the reason (the keys past it stay unindexed). Index IO errors are
   * thrown, as IndexService throws them to a put.
   */
  step(maxRecords: number): CatchUpStep {
    const src = this.#source;
    let n = 0;
    while (this.#at < src.dispatchedEnd()) {
      if (n >= maxRecords) return "more";
      const at = this.#at;
      const min = src.minOffset();
      if (at < min) {
        this.#at = min;
        continue;
      }
      const damage = src.damageAt(at);
      if (damage !== undefined) {
        this.#at = damage.to;
        continue;
      }
      const seg = src.segmentFor(at);
      if (seg === undefined) return { invalid: `no CommitLog segment holds offset ${at}` };
      const pos = at - seg.fileFromOffset;
      const r = decodeRecordAt(seg.buf.subarray(0, seg.wrotePosition), pos, { checkCrc: false, readBody: false });
      if ("totalSize" in r) {
        const props = parseProperties(r.properties);
        const keys = props[MessageConst.KEYS];
        const uniqKey = props[MessageConst.UNIQ_KEY];
        if (keys !== undefined || uniqKey !== undefined) {
          src.index({ topic: r.topic, keys, uniqKey, phyOffset: at, storeTimestamp: r.storeTimestamp, sysFlag: r.sysFlag });
        }
        this.#at = at + r.totalSize;
        this.records++;
        n++;
        continue;
      }
      if ("blank" in r || "end" in r) {
        // Padding, or the end of a segment before the dispatched end: the next segment goes on.
        this.#at = seg.fileFromOffset + seg.fileSize;
        continue;
      }
      return { invalid: `the record at ${at} does not decode (${r.invalid})` };
    }
    return "done";
  }
}
