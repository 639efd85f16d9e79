/**
 * Dispatch (RocketMQ's CommitLogDispatcher and ReputMessageService): a record in the CommitLog
 * gets its ConsumeQueue unit and its index entries. Three writers come here: a put, in the same
 * turn as its append (so a message is pullable as soon as the send returns); recovery, scanning
 * from the checkpoint; and replication on a slave, for every record the copied bytes complete.
 * The dispatched end (`reputOffset`) is where the next record to dispatch begins.
 *
 * A dispatch from CommitLog bytes may meet a queue offset that already has a unit: the rules of
 * #resolveSecondRecord (docs/STORAGE.md §9.3) decide which record keeps it.
 */
import { assert } from "../common/assert.ts";
import type { Logger } from "../common/log.ts";
import { decodeRecordAt, parseProperties, tagsHashCode, type DecodedRecord } from "../common/message-record.ts";
import { MessageConst } from "../protocol/message-const.ts";
import { SysFlag, transactionType } from "../protocol/sys-flag.ts";
import type { CommitLog } from "./commit-log.ts";
import { CQ_FILLER_SIZE, type ConsumeQueue, type PutUnitSource } from "./consume-queue.ts";
import type { ConsumeQueueTable } from "./consume-queue-table.ts";
import type { CorruptRanges } from "./corrupt-ranges.ts";
import type { IndexService } from "./index-service.ts";
import type { CorruptRange } from "./recovery.ts";
import type { MessageStoreOptions } from "./store-types.ts";

/** One stored record as dispatch sees it. */
export interface DispatchUnit {
  topic: string;
  queueId: number;
  phyOffset: number;
  size: number;
  queueOffset: number;
  storeTimestamp: number;
  sysFlag: number;
  tagsCode: number;
  keys: string | undefined;
  uniqKey: string | undefined;
}

export interface DispatcherParts {
  commitLog: CommitLog;
  queues: ConsumeQueueTable;
  index: IndexService;
  corrupt: CorruptRanges;
  options: Pick<MessageStoreOptions, "tagsCodeFor" | "messageArriving">;
  /** False while the index catches up after a crash (./index-rebuild.ts): dispatches skip the index. */
  indexing: () => boolean;
  log: Logger;
}

export class Dispatcher {
  readonly #p: DispatcherParts;
  /** Where the next record to dispatch begins. */
  reputOffset = 0;
  /** Units replaced by a later record with the same queue offset (see #unitReplaced). */
  unitsReplaced = 0;
  /** Inside a replicated append: what is dispatched is announced to the arrival listener. */
  replicating = false;
  /** While recovery runs: where replaced units are reported (the recovery report), else the log. */
  recoveryProblems: string[] | null = null;
  /** While recovery runs: records found superseded, merged into the damage list at its end. */
  recoverySuperseded: CorruptRange[] = [];
  /** Filled by the put path for each record (one object per store, no allocation per message). */
  readonly scratch: DispatchUnit = {
    topic: "",
    queueId: 0,
    phyOffset: 0,
    size: 0,
    queueOffset: 0,
    storeTimestamp: 0,
    sysFlag: 0,
    tagsCode: 0,
    keys: undefined,
    uniqKey: undefined,
  };

  constructor(parts: DispatcherParts) {
    this.#p = parts;
  }

  tagsCode(topic: string, props: Record<string, string> | null, storeTimestamp: number, tags: string | undefined): number {
    const custom = this.#p.options.tagsCodeFor;
    return custom ? custom(topic, props, storeTimestamp, tags) : tagsHashCode(tags);
  }

  /** The unit (unless a half message, which gets none until committed) and the index entries; whether a unit was written. */
  dispatch(u: DispatchUnit, from: PutUnitSource): boolean {
    const t = transactionType(u.sysFlag);
    let unit = false;
    if (t === SysFlag.TRANSACTION_NOT_TYPE || t === SysFlag.TRANSACTION_COMMIT_TYPE) {
      const cq = this.#p.queues.getOrCreate(u.topic, u.queueId);
      if (from === "log" && u.queueOffset < cq.maxOffset && this.#resolveSecondRecord(cq, u.queueOffset, u.phyOffset, u.size)) {
        // This record is the superseded one: recorded as damage, no unit.
      } else {
        const put = cq.putUnit(u.queueOffset, u.phyOffset, u.size, u.tagsCode, from);
        if (put === "replaced") this.#unitReplaced(cq, u.queueOffset, u.phyOffset);
        unit = true;
      }
      this.#p.queues.unflushed.add(cq);
    }
    if ((u.keys !== undefined || u.uniqKey !== undefined) && this.#p.indexing()) {
      const { topic, keys, uniqKey, phyOffset, storeTimestamp, sysFlag } = u;
      this.#p.index.buildIndex({ topic, keys, uniqKey, phyOffset, storeTimestamp, sysFlag });
    }
    return unit;
  }

  /** Dispatch of a record decoded from CommitLog bytes (recovery, replication); `rewrite`: see ConsumeQueue.putUnit. */
  dispatchRecord(rec: DecodedRecord, offset: number, rewrite = false): void {
    const inOrder = offset >= this.reputOffset || rewrite || this.recoveryProblems !== null;
    assert(inOrder, "record at {} dispatched again below the dispatched end {}", offset, this.reputOffset);
    const props = parseProperties(rec.properties);
    const tagsCode = this.tagsCode(rec.topic, props, rec.storeTimestamp, props[MessageConst.TAGS]);
    const u = this.scratch;
    u.topic = rec.topic;
    u.queueId = rec.queueId;
    u.phyOffset = offset;
    u.size = rec.totalSize;
    u.queueOffset = rec.queueOffset;
    u.storeTimestamp = rec.storeTimestamp;
    u.sysFlag = rec.sysFlag;
    u.tagsCode = tagsCode;
    u.keys = props[MessageConst.KEYS];
    u.uniqKey = props[MessageConst.UNIQ_KEY];
    const unit = this.dispatch(u, rewrite ? "rewrite" : "log");
    this.reputOffset = offset + rec.totalSize;
    // Replicated bytes are in the CommitLog already: their readers can come.
    if (unit && this.replicating) this.#p.options.messageArriving?.arriving(rec.topic, rec.queueId, rec.queueOffset, tagsCode);
  }

  /** Dispatches records written to the CommitLog but not yet dispatched (replicated bytes); how many. */
  reput(): number {
    const commitLog = this.#p.commitLog;
    let n = 0;
    const max = commitLog.maxOffset;
    while (this.reputOffset < max) {
      const seg = commitLog.segmentFor(this.reputOffset);
      if (!seg) break;
      const pos = this.reputOffset - seg.fileFromOffset;
      const r = decodeRecordAt(seg.buf.subarray(0, seg.wrotePosition), pos, { checkCrc: false, readBody: false });
      if ("totalSize" in r) {
        this.dispatchRecord(r, this.reputOffset);
        n++;
        continue;
      }
      if ("blank" in r) {
        this.reputOffset = seg.fileFromOffset + seg.fileSize;
        continue;
      }
      // An incomplete record (the rest of it is still on its way) or the end of the data.
      break;
    }
    return n;
  }

  /**
   * A dispatch from CommitLog bytes for a queue offset that already has a unit (rare). When that
   * unit names a real record too, the log holds two records with one queue offset: a master
   * re-used the offsets of records its recovery lost (it cut them into a damaged range, or lost
   * them with its tail) after this slave had received them whole. The record later in the log is
   * the master's word; the earlier one, and every record this queue holds past it, is what the
   * master lost: each is recorded as a damaged range ("superseded"), never served, as the master
   * never serves its own damage (docs/STORAGE.md §9.3). Returns true when the record being
   * dispatched is the superseded one (it gets no unit); otherwise putUnit then replaces the unit.
   * A unit naming no such record (a damaged queue file) is simply replaced by putUnit.
   */
  #resolveSecondRecord(cq: ConsumeQueue, queueOffset: number, phy: number, size: number): boolean {
    const commitLog = this.#p.commitLog;
    const old = cq.get(queueOffset);
    if (!old || old.size === CQ_FILLER_SIZE || old.phyOffset === phy) return false;
    if (!unitNamesRecord(commitLog, cq, queueOffset, old.phyOffset, old.size)) return false;
    if (old.phyOffset > phy) {
      this.#supersede(phy, size, cq, queueOffset, old.phyOffset);
      return true;
    }
    for (let off = queueOffset; off < cq.maxOffset; off++) {
      const u = cq.get(off);
      if (u && u.size !== CQ_FILLER_SIZE && u.phyOffset < phy && unitNamesRecord(commitLog, cq, off, u.phyOffset, u.size)) {
        this.#supersede(u.phyOffset, u.size, cq, off, phy);
      }
    }
    return false;
  }

  #supersede(phy: number, size: number, cq: ConsumeQueue, queueOffset: number, laterPhy: number): void {
    assert(phy < laterPhy, "superseded record at {} is not before the record {} that replaces it", phy, laterPhy);
    if (this.#p.corrupt.has(phy)) return;
    const range: CorruptRange = {
      from: phy,
      to: phy + size,
      reason: `superseded: queue offset ${queueOffset} of ${cq.topic}-${cq.queueId} was given again to the record at ${laterPhy} (the master lost this one)`,
    };
    if (this.recoveryProblems) {
      if (!this.recoverySuperseded.some((r) => r.from === phy)) this.recoverySuperseded.push(range);
      return;
    }
    this.#p.corrupt.insert(range);
  }

  /**
   * CommitLog bytes hold a second record with a queue offset that already has a unit: input (a
   * master re-used the offsets of records its recovery lost, or the queue file was damaged), so
   * it is reported, not asserted; the record being dispatched took the unit (ConsumeQueue.putUnit,
   * after #resolveSecondRecord found it the later of two real records, or the unit garbage).
   */
  #unitReplaced(cq: ConsumeQueue, queueOffset: number, phyOffset: number): void {
    this.unitsReplaced++;
    const msg =
      `consumequeue ${cq.topic}-${cq.queueId}: queue offset ${queueOffset} already named another record; ` +
      `the record at ${phyOffset}, dispatched from the CommitLog, replaced it and the units after it`;
    if (this.recoveryProblems) this.recoveryProblems.push(msg);
    else this.#p.log.rateLimited("warn", "unit-replaced", msg);
  }
}

/** Whether the CommitLog holds, at `phy`, the record a unit of `cq` at `cqOffset` describes. */
export function unitNamesRecord(commitLog: CommitLog, cq: ConsumeQueue, cqOffset: number, phy: number, size: number): boolean {
  const f = commitLog.segmentFor(phy);
  if (!f) return false;
  const pos = phy - f.fileFromOffset;
  if (pos + size > f.wrotePosition || size < 8) return false;
  const r = decodeRecordAt(f.buf.subarray(0, pos + size), pos, { checkCrc: false, readBody: false });
  return (
    "totalSize" in r &&
    r.totalSize === size &&
    r.physicalOffset === phy &&
    r.queueId === cq.queueId &&
    r.queueOffset === cqOffset &&
    r.topic === cq.topic
  );
}
