/**
 * The store's recovery run at open (docs/STORAGE.md §9): load the files, decide from the abort
 * marker and the checkpoint where to scan and what to trust, scan the CommitLog with
 * ./recovery.ts's decision table (dispatching what the checkpoint did not cover), then cut the log
 * at its real end. What it found goes into the RecoveryReport.
 */
import { join } from "node:path";
import { readCheckpoint, type Checkpoint } from "./checkpoint.ts";
import type { CommitLog } from "./commit-log.ts";
import type { ConsumeQueueTable } from "./consume-queue-table.ts";
import type { CorruptRanges } from "./corrupt-ranges.ts";
import type { Dispatcher } from "./dispatch.ts";
import type { StoreDisk } from "./disk.ts";
import { cutLogAt, type LogCutParts } from "./log-cut.ts";
import { SegmentSizeError } from "./mapped-file.ts";
import { scanCommitLog } from "./recovery.ts";
import { CQ_UNIT_SIZE } from "../protocol/store-layout.ts";
import type { RecoveryReport } from "./store-types.ts";

/** After a crash, how far past the checkpoint's flushed offset good records may still lie. */
const RESYNC_MARGIN_BYTES = 16 * 1024 * 1024;

export interface RecoveryParts extends LogCutParts {
  dir: string;
  disk: StoreDisk;
  corrupt: CorruptRanges;
  queues: ConsumeQueueTable;
  dispatcher: Dispatcher;
  checkCrcOnRecover: boolean;
}

/** Where the scan starts and which of its records are trusted, from the abort marker and the checkpoint. */
interface RecoveryPlan {
  abnormal: boolean;
  cp: Checkpoint | { invalid: string } | null;
  /** Where dispatch resumes: the checkpoint says what is durable in the ConsumeQueues. */
  dispatchFrom: number;
  scanFrom: number;
  checkCrc: boolean;
  /** After a clean stop nothing lies past the end; after a crash, good records only below this. */
  resyncLimit: number;
  /** After a crash, units of records from here on may be lost or torn: rewritten, not trusted. */
  rewriteFrom: number;
  /** After a crash, what lies from here on may exist only in the page cache. */
  unsyncedAt: number;
}

export function recoverStore(p: RecoveryParts): RecoveryReport {
  const problems: string[] = [...loadSized("store.commitLogSegmentBytes", 1, () => p.commitLog.load())];
  p.dispatcher.recoveryProblems = problems;
  const abnormal = p.disk.exists(join(p.dir, "abort"));
  const cp = readCheckpoint(join(p.dir, "checkpoint"), p.disk);
  const cpValid = cp !== null && !("invalid" in cp);
  problems.push(...p.index.load(cpValid && abnormal ? cp.indexCheckpointTimestamp : undefined));
  problems.push(...loadSized("store.consumeQueueUnitsPerFile", CQ_UNIT_SIZE, () => p.queues.loadAll()));
  const plan = planRecovery(p, abnormal, cp);
  // Where the last record wholly below the flushed offset ends: what follows may be torn, BLANK
  // padding included (recovery reads a BLANK marker's size and magic, never the zeros after it:
  // a power cut left garbage there in failover sim seed 2519189422, and the replica's bytes then
  // differed from its master's).
  let syncedEnd = plan.scanFrom;
  const scan = scanCommitLog(
    p.commitLog.segments,
    plan.scanFrom,
    plan.checkCrc,
    (rec, offset) => {
      if (offset + rec.totalSize <= plan.unsyncedAt && offset + rec.totalSize > syncedEnd) syncedEnd = offset + rec.totalSize;
      if (offset >= plan.dispatchFrom) p.dispatcher.dispatchRecord(rec, offset, offset >= plan.rewriteFrom);
    },
    plan.resyncLimit,
  );
  for (const r of scan.corruptRanges) problems.push(`commitlog: damaged bytes [${r.from}, ${r.to}) skipped: ${r.reason}`);
  p.corrupt.load([...scan.corruptRanges, ...p.dispatcher.recoverySuperseded], scan.endOffset, p.commitLog.minOffset);
  p.dispatcher.recoverySuperseded = [];
  if (scan.truncatedBytes > 0) problems.push(`commitlog: torn tail of ${scan.truncatedBytes} bytes at ${scan.endOffset} truncated`);
  // Apply: cut the log at its real end, drop index units that point past it.
  cutLogAt(p, scan.endOffset, abnormal, plan.unsyncedAt);
  p.dispatcher.recoveryProblems = null;
  return {
    abnormal,
    checkpoint: cp === null ? "missing" : "invalid" in cp ? cp.invalid : "valid",
    scannedFrom: plan.scanFrom,
    endOffset: scan.endOffset,
    recordsScanned: scan.records,
    truncatedBytes: scan.truncatedBytes,
    corruptRanges: scan.corruptRanges,
    ...(abnormal && syncedEnd < scan.endOffset ? { unsyncedFrom: syncedEnd } : {}),
    problems,
  };
}

function planRecovery(p: RecoveryParts, abnormal: boolean, cp: Checkpoint | { invalid: string } | null): RecoveryPlan {
  const valid = cp !== null && !("invalid" in cp) ? cp : null;
  const segments = p.commitLog.segments;
  const firstOffset = segments[0]?.fileFromOffset ?? 0;
  let dispatchFrom = valid ? Math.max(valid.dispatchedOffset, firstOffset) : firstOffset;
  const last = segments.at(-1);
  const lastEnd = last ? last.fileFromOffset + last.fileSize : 0;
  if (dispatchFrom > lastEnd) dispatchFrom = firstOffset;
  // Index files dropped at load (unfinished at the crash) are rebuilt from where they began,
  // after the store opens (./index-rebuild.ts): dispatches until then skip the index.
  const indexRedo = p.index.rebuildFromOffset;
  if (indexRedo !== undefined) p.rebuild.begin(Math.max(firstOffset, Math.min(dispatchFrom, indexRedo)));
  // A crash can leave damage anywhere in the segment being written: verify it from its start.
  const seg = segments.find((f) => dispatchFrom >= f.fileFromOffset && dispatchFrom < f.fileFromOffset + f.fileSize);
  return {
    abnormal,
    cp,
    dispatchFrom,
    scanFrom: abnormal && seg ? seg.fileFromOffset : dispatchFrom,
    checkCrc: abnormal ? p.checkCrcOnRecover : false,
    resyncLimit: !abnormal ? 0 : valid ? valid.commitLogFlushedOffset + RESYNC_MARGIN_BYTES : Number.MAX_SAFE_INTEGER,
    rewriteFrom: !abnormal ? Number.MAX_SAFE_INTEGER : valid ? valid.dispatchedOffset : firstOffset,
    unsyncedAt: !abnormal ? Number.MAX_SAFE_INTEGER : valid ? valid.commitLogFlushedOffset : firstOffset,
  };
}

/**
 * Runs a load that maps segments; a segment of another size than configured means the store was
 * created with another value of `key` (it cannot change for an existing store, as in RocketMQ,
 * which refuses to start too): the open fails with the value to set back. Nothing is touched.
 */
function loadSized(key: string, bytesPerUnit: number, load: () => string[]): string[] {
  try {
    return load();
  } catch (e) {
    if (!(e instanceof SegmentSizeError)) throw e;
    const was = e.actualBytes % bytesPerUnit === 0 && e.actualBytes > 0 ? e.actualBytes / bytesPerUnit : null;
    throw new Error(
      `${key} is ${e.configuredBytes / bytesPerUnit}, but ${e.path} is ${e.actualBytes} bytes` +
        (was === null ? "" : `: the store was created with ${key} ${was}; set it back`) +
        " (a store's segment sizes cannot change; nothing was changed on disk)",
    );
  }
}
