/**
 * Retention (RocketMQ's CleanCommitLogService and CleanConsumeQueueService): CommitLog segments
 * older than store.fileReservedTimeHours go at the hours of store.deleteWhen, and the oldest go
 * regardless of age while the disk is above store.diskMaxUsedSpaceRatio; then the ConsumeQueue
 * and index files that only point below the new minimum. The segment being written never goes.
 */
import { HOUR_MS } from "../common/clock.ts";
import type { CommitLog } from "./commit-log.ts";
import type { ConsumeQueueTable } from "./consume-queue-table.ts";
import type { DiskGuard } from "./disk-guard.ts";
import type { StoreDisk } from "./disk.ts";
import type { IndexService } from "./index-service.ts";
import type { MappedFile } from "./mapped-file.ts";
import type { MessageStoreOptions } from "./store-types.ts";

/** Segments deleted per pass under disk pressure. */
const DELETE_PER_PASS = 10;

export interface RetentionParts {
  commitLog: CommitLog;
  queues: ConsumeQueueTable;
  index: IndexService;
  guard: DiskGuard;
  disk: StoreDisk;
  /** The store's options object (reconfigure changes it in place). */
  options: Pick<MessageStoreOptions, "deleteWhen" | "diskMaxUsedSpaceRatio" | "fileReservedTimeHours">;
}

/** One retention pass at `now` (`force`: as if the hour were one of deleteWhen); the segments deleted. */
export function cleanExpiredFiles(p: RetentionParts, now: number, force: boolean): number {
  const o = p.options;
  const ratio = p.guard.check();
  // Here, not at start: writing it costs a few ms, and start-up time is measured.
  p.guard.keepReserve();
  const hours = o.deleteWhen.split(";").map((h) => Number(h));
  const timeUp = force || hours.includes(new Date(now).getHours());
  const diskPressure = ratio > o.diskMaxUsedSpaceRatio;
  if (!timeUp && !diskPressure) return 0;
  const reservedMs = o.fileReservedTimeHours * HOUR_MS;
  const expired = (f: MappedFile) => now - p.disk.mtimeMs(f.path) > reservedMs;
  // Under disk pressure, delete the oldest even if not expired, a few at a time.
  const n = p.commitLog.deleteSegments(
    (f) => (timeUp && expired(f)) || (diskPressure && p.guard.usageRatio() > o.diskMaxUsedSpaceRatio),
    DELETE_PER_PASS,
  );
  if (n === 0) return 0;
  const clMin = p.commitLog.minOffset;
  for (const cq of p.queues.all()) cq.deleteExpiredFiles(clMin);
  p.index.deleteExpiredFiles(clMin);
  // A deleted file's blocks are freed only once its mapping is gone, and Bun unmaps when the
  // array is collected: without a collection an idle broker under disk pressure deletes its
  // segments and frees nothing (found by test/integration/disk-full.test.ts). Only then: a full
  // collection stops the broker for as long as its heap takes to walk (200-280 ms of event-loop
  // lag every pass in the soak, bench/soak), and time-up deletion can wait for the next one.
  if (diskPressure || force) Bun.gc(true);
  p.guard.check();
  return n;
}
