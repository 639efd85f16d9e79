/**
 * The store's read side: a queue's messages for a pull (status and nextBeginOffset as RocketMQ's
 * DefaultMessageStore.getMessage, docs/PROTOCOL.md §3.5), queue offsets and store times, and
 * lookups by CommitLog offset and by key. Reads never write: a unit that names the wrong record is
 * skipped, and only when this process wrote it does it halt the write path (a bug).
 */
import { AssertionError } from "../common/assert.ts";
import { decodeRecordAt, isRecordOfUnit, OFFSET_STORE_TIMESTAMP, parseProperties, readTotalSize, type DecodedRecord } from "../common/message-record.ts";
import { MessageConst } from "../protocol/message-const.ts";
import type { CommitLog } from "./commit-log.ts";
import { CQ_FILLER_SIZE, type ConsumeQueue } from "./consume-queue.ts";
import type { ConsumeQueueTable } from "./consume-queue-table.ts";
import type { CorruptRanges } from "./corrupt-ranges.ts";
import type { IndexService } from "./index-service.ts";
import type { GetMessageResult, GetMessageStatus, MessageStoreOptions, TagCodeFilter } from "./store-types.ts";

export interface ReadParts {
  commitLog: CommitLog;
  queues: ConsumeQueueTable;
  corrupt: CorruptRanges;
  index: IndexService;
  /** The store's options object (reconfigure changes the transfer limits in place). */
  options: Pick<
    MessageStoreOptions,
    "maxTransferBytesOnMessageInMemory" | "maxTransferCountOnMessageInMemory" | "maxTransferBytesOnMessageInDisk" | "maxTransferCountOnMessageInDisk"
  >;
  /** A read found a unit this process wrote naming the wrong record: the write path halts. */
  halt: (e: Error) => void;
}

export class MessageReader {
  readonly #p: ReadParts;
  /** How far behind the CommitLog tail data still counts as in memory (bytes); set by the store. */
  memoryHotBytes = 0;
  /** ConsumeQueue units skipped because the bytes they point at are not their record (torn units). */
  unitsNotMatchingRecord = 0;

  constructor(parts: ReadParts) {
    this.#p = parts;
  }

  /** Up to `maxMsgNums` messages of one queue from `offset`, as stored bytes (views into the mapped CommitLog). */
  getMessage(
    topic: string,
    queueId: number,
    offset: number,
    maxMsgNums: number,
    filter?: TagCodeFilter,
    recordFilter?: (record: Uint8Array) => boolean,
  ): GetMessageResult {
    const cq = this.#p.queues.get(topic, queueId);
    const res: GetMessageResult = {
      status: "NO_MATCHED_LOGIC_QUEUE",
      nextBeginOffset: 0,
      minOffset: 0,
      maxOffset: 0,
      messages: [],
      bufferTotalBytes: 0,
      suggestPullingFromSlave: false,
    };
    if (!cq) return res;
    if (!outOfRange(res, cq, offset)) this.#read(res, cq, offset, maxMsgNums, filter, recordFilter);
    return res;
  }

  /** The batch read of getMessage: scans the ConsumeQueue from `offset`, filling `res`. */
  #read(
    res: GetMessageResult,
    cq: ConsumeQueue,
    offset: number,
    maxMsgNums: number,
    filter: TagCodeFilter,
    recordFilter: ((record: Uint8Array) => boolean) | undefined,
  ): void {
    const commitLog = this.#p.commitLog;
    const corrupt = this.#p.corrupt;
    const clMin = commitLog.minOffset;
    const clMax = commitLog.maxOffset;
    // RocketMQ scans at most max(16000 bytes, 20 × maxMsgNums) of ConsumeQueue per pull.
    const maxScanUnits = Math.max(800, maxMsgNums);
    let status: GetMessageStatus = "NO_MATCHED_MESSAGE";
    let lastPhy = -1;
    const scanned = cq.scan(offset, maxScanUnits, (off, phy, size, tagsCode) => {
      if (size === CQ_FILLER_SIZE) return true;
      if (corrupt.size > 0 && corrupt.has(phy)) return true;
      if (phy < clMin) {
        status = "MESSAGE_WAS_REMOVING";
        return true;
      }
      if (this.#batchFull(size, maxMsgNums, res.bufferTotalBytes, res.messages.length, clMax - phy > this.memoryHotBytes)) return false;
      if (filter && !filter(tagsCode)) return true;
      const bytes = commitLog.read(phy, size);
      if (!bytes) {
        status = "MESSAGE_WAS_REMOVING";
        return true;
      }
      if (!this.#namesItsRecord(bytes, cq, off, phy)) return true;
      if (recordFilter && !recordFilter(bytes)) return true;
      res.messages.push(bytes);
      res.bufferTotalBytes += size;
      lastPhy = phy;
      return true;
    });
    res.nextBeginOffset = offset + scanned;
    res.status = res.messages.length > 0 ? "FOUND" : status;
    if (lastPhy >= 0) res.suggestPullingFromSlave = clMax - lastPhy > this.memoryHotBytes;
  }

  /**
   * A unit torn by a crash (never flushed, not rewritten because its record lies in damage) can
   * point anywhere; what it points at is skipped, never served (test/sim seed 10). Units this
   * process wrote itself name records it appended or verified: a mismatch there is a bug in the
   * write path, which halts it (still not served; reads go on).
   */
  #namesItsRecord(bytes: Uint8Array, cq: ConsumeQueue, off: number, phy: number): boolean {
    if (isRecordOfUnit(bytes, phy, cq.queueId, off)) return true;
    this.unitsNotMatchingRecord++;
    if (off >= cq.writtenHereFrom) {
      const what = `unit ${off} of ${cq.topic}-${cq.queueId}, written by this process, points at ${phy}, which is not its record`;
      this.#p.halt(new AssertionError(`invariant violated: ${what}`));
    }
    return false;
  }

  #batchFull(size: number, maxMsgNums: number, bytes: number, count: number, inDisk: boolean): boolean {
    if (count === 0) return false;
    if (count >= maxMsgNums) return true;
    const o = this.#p.options;
    if (inDisk) return bytes + size > o.maxTransferBytesOnMessageInDisk || count >= o.maxTransferCountOnMessageInDisk;
    return bytes + size > o.maxTransferBytesOnMessageInMemory || count >= o.maxTransferCountOnMessageInMemory;
  }

  getMaxOffsetInQueue(topic: string, queueId: number): number {
    return this.#p.queues.get(topic, queueId)?.maxOffset ?? 0;
  }

  getMinOffsetInQueue(topic: string, queueId: number): number {
    return this.#p.queues.get(topic, queueId)?.minOffset ?? 0;
  }

  getCommitLogOffsetInQueue(topic: string, queueId: number, cqOffset: number): number {
    return this.#p.queues.get(topic, queueId)?.get(cqOffset)?.phyOffset ?? -1;
  }

  #storeTimeOf(phy: number): number {
    const f = this.#p.commitLog.segmentFor(phy);
    if (!f) return -1;
    const pos = phy - f.fileFromOffset + OFFSET_STORE_TIMESTAMP;
    return f.view.getInt32(pos) * 2 ** 32 + f.view.getUint32(pos + 4);
  }

  /**
   * The first queue offset whose message was stored at or after `timestamp` (maxOffset if all
   * are older; 0 for an empty or unknown queue). Binary search over the ConsumeQueue.
   */
  getOffsetInQueueByTime(topic: string, queueId: number, timestamp: number): number {
    const cq = this.#p.queues.get(topic, queueId);
    if (!cq) return 0;
    let lo = cq.minOffset;
    let hi = cq.maxOffset;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const u = cq.get(mid);
      const t = u && u.size !== CQ_FILLER_SIZE ? this.#storeTimeOf(u.phyOffset) : -1;
      if (t >= 0 && t >= timestamp) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** Store time of the first message still in the queue, or -1. */
  getEarliestMessageTime(topic: string, queueId: number): number {
    const cq = this.#p.queues.get(topic, queueId);
    if (!cq) return -1;
    for (let off = cq.minOffset; off < cq.maxOffset; off++) {
      const u = cq.get(off);
      if (u && u.size !== CQ_FILLER_SIZE && u.phyOffset >= this.#p.commitLog.minOffset) return this.#storeTimeOf(u.phyOffset);
    }
    return -1;
  }

  /** Store time of the oldest message in the whole CommitLog, or -1. */
  getEarliestMessageTimeOverall(): number {
    const first = this.#p.commitLog.segments[0];
    if (!first || first.wrotePosition === 0) return -1;
    return this.#storeTimeOf(first.fileFromOffset);
  }

  /** The stored record at a CommitLog offset (the offset message id), raw bytes. */
  selectOneMessageByOffset(phyOffset: number): Uint8Array | undefined {
    const f = this.#p.commitLog.segmentFor(phyOffset);
    if (!f) return undefined;
    const pos = phyOffset - f.fileFromOffset;
    if (pos + 4 > f.wrotePosition) return undefined;
    const size = readTotalSize(f.buf, pos);
    if (size <= 0) return undefined;
    return this.#p.commitLog.read(phyOffset, size);
  }

  lookMessageByOffset(phyOffset: number): DecodedRecord | undefined {
    const bytes = this.selectOneMessageByOffset(phyOffset);
    if (!bytes) return undefined;
    const r = decodeRecordAt(bytes, 0, { checkCrc: false });
    return "totalSize" in r ? r : undefined;
  }

  /** Messages of `topic` whose KEYS contain `key` or whose UNIQ_KEY is `key`, newest first. */
  queryMessage(
    topic: string,
    key: string,
    maxNum: number,
    begin: number,
    end: number,
  ): { messages: Uint8Array[]; indexLastUpdateTimestamp: number; indexLastUpdatePhyoffset: number } {
    const q = this.#p.index.queryOffset(topic, key, maxNum, begin, end);
    const messages: Uint8Array[] = [];
    for (const phy of q.phyOffsets) {
      const bytes = this.selectOneMessageByOffset(phy);
      if (!bytes) continue;
      const r = decodeRecordAt(bytes, 0, { checkCrc: false, readBody: false });
      if (!("totalSize" in r) || r.topic !== topic) continue;
      const props = parseProperties(r.properties);
      const keys = props[MessageConst.KEYS]?.split(MessageConst.PROPERTY_KEY_SEPARATOR) ?? [];
      if (props[MessageConst.UNIQ_KEY] !== key && !keys.includes(key)) continue;
      messages.push(bytes);
      if (messages.length >= maxNum) break;
    }
    return { messages, indexLastUpdateTimestamp: q.indexLastUpdateTimestamp, indexLastUpdatePhyoffset: q.indexLastUpdatePhyoffset };
  }
}

/** The statuses of an offset outside [min, max) (or an empty queue), set in `res`; false when the offset is readable. */
function outOfRange(res: GetMessageResult, cq: ConsumeQueue, offset: number): boolean {
  const min = cq.minOffset;
  const max = cq.maxOffset;
  res.minOffset = min;
  res.maxOffset = max;
  if (max === 0) res.status = "NO_MESSAGE_IN_QUEUE";
  else if (offset < min) {
    res.status = "OFFSET_TOO_SMALL";
    res.nextBeginOffset = min;
  } else if (offset === max) {
    res.status = "OFFSET_OVERFLOW_ONE";
    res.nextBeginOffset = offset;
  } else if (offset > max) {
    res.status = "OFFSET_OVERFLOW_BADLY";
    res.nextBeginOffset = max;
  } else return false;
  return true;
}
