/**
 * Cutting the CommitLog's tail: recovery cuts a torn tail, and a replica whose log went past the
 * point it shares with its master (bytes the group never acknowledged, ../broker/replica-epochs.ts)
 * cuts it there. Either way the ConsumeQueue units and index entries past the cut go with it and
 * each queue's put counter continues from its queue.
 */
import { join } from "node:path";
import { assert } from "../common/assert.ts";
import type { Logger } from "../common/log.ts";
import { decodeRecordAt } from "../common/message-record.ts";
import type { CommitLog } from "./commit-log.ts";
import type { ConsumeQueueTable } from "./consume-queue-table.ts";
import { unitNamesRecord, type Dispatcher } from "./dispatch.ts";
import type { StoreDisk } from "./disk.ts";
import type { IndexRebuild } from "./index-rebuild.ts";
import type { IndexService } from "./index-service.ts";

export interface LogCutParts {
  commitLog: CommitLog;
  queues: ConsumeQueueTable;
  index: IndexService;
  rebuild: IndexRebuild;
  dispatcher: Dispatcher;
}

/**
 * The CommitLog ends at `offset` from now on. `verifyUnits`: a unit below the cut is kept only if
 * it names its record (after a crash, when units may be torn); `unsyncedFrom`: see
 * CommitLog.truncateTo.
 */
export function cutLogAt(p: LogCutParts, offset: number, verifyUnits: boolean, unsyncedFrom?: number): void {
  const commitLog = p.commitLog;
  commitLog.truncateTo(offset, unsyncedFrom);
  p.dispatcher.reputOffset = offset;
  p.index.dropFilesAbove(offset);
  p.rebuild.cut(offset);
  const clMin = commitLog.minOffset;
  for (const cq of p.queues.all()) {
    cq.truncateDirty(offset, verifyUnits ? (off, phy, size) => unitNamesRecord(commitLog, cq, off, phy, size) : undefined);
    cq.correctMinOffset(clMin);
    commitLog.setNextQueueOffset(cq.topic, cq.queueId, cq.maxOffset);
    cq.writtenHereFrom = cq.maxOffset;
  }
  assert(commitLog.maxOffset <= offset, "the log ends at {} after a cut at {}", commitLog.maxOffset, offset);
}

/**
 * A replica cuts its log at `offset`. With `keep`, the bytes cut are first kept whole in
 * `<dir>/truncated/<from>-<to>.commitlog` (CommitLog records, for inspection; never served);
 * without it (a failover replica's unflushed tail, which its master sends again) they are only
 * dropped. Then they are removed as recovery removes a torn tail.
 */
export function truncateReplicaTail(
  p: LogCutParts & { dir: string; disk: StoreDisk; log: Logger },
  offset: number,
  keep: boolean,
): { records: number; bytes: number; file: string | null } {
  p.dispatcher.reput();
  const max = p.commitLog.maxOffset;
  if (offset >= max) return { records: 0, bytes: 0, file: null };
  assert(offset >= p.commitLog.minOffset, "truncation point {} is below the log's start {}", offset, p.commitLog.minOffset);
  const { parts, records } = tailBytes(p.commitLog, offset, max);
  let file: string | null = null;
  if (keep) {
    const dir = join(p.dir, "truncated");
    p.disk.mkdirs(dir);
    file = join(dir, `${offset}-${max}.commitlog`);
    p.disk.writeFileAtomic(file, Buffer.concat(parts));
  }
  // What lies below the cut but past the flushed end is synced by the cut: truncateTo counts
  // everything it keeps as flushed, and the next checkpoint would claim it durable.
  cutLogAt(p, offset, false, p.commitLog.flushedOffset);
  const where = file !== null ? `kept in ${file}` : "not kept (the master sends them again)";
  p.log.warn(`truncated the CommitLog at ${offset}: ${max - offset} bytes, ${records} records, ${where}`);
  return { records, bytes: max - offset, file };
}

/** The bytes of [offset, max), copied per segment, and the whole records among them. */
function tailBytes(commitLog: CommitLog, offset: number, max: number): { parts: Uint8Array[]; records: number } {
  const parts: Uint8Array[] = [];
  let records = 0;
  for (let pos = offset; pos < max; ) {
    const seg = commitLog.segmentFor(pos);
    if (!seg) break;
    const from = pos - seg.fileFromOffset;
    const to = Math.min(seg.wrotePosition, max - seg.fileFromOffset);
    const bytes = seg.buf.slice(from, to);
    for (let q = 0; q < bytes.length; ) {
      const r = decodeRecordAt(bytes, q, { checkCrc: false, readBody: false });
      if (!("totalSize" in r)) break;
      records++;
      q += r.totalSize;
    }
    parts.push(bytes);
    pos = seg.fileFromOffset + seg.fileSize;
  }
  return { parts, records };
}
