/**
 * The store settings both simulated worlds use (./world.ts, ./failover-world.ts): tiny index
 * files, no retention and no cold-mapping release within a run, RocketMQ's pull limits. Each
 * world adds its directory, flush mode, host, tuning, clock, disk and log.
 */
import type { MessageStoreOptions } from "../../src/commitlog/index.ts";
import { type FlushDiskType } from "../../src/protocol/broker-config.ts";
import { parseHostAddress } from "../../src/common/message-record.ts";

export function simStoreBase(o: {
  dir: string;
  segmentBytes: number;
  flushDiskType: FlushDiskType;
  storeHost: string;
}): Omit<MessageStoreOptions, "flushIntervalMs" | "consumeQueueUnitsPerFile"> {
  return {
    dir: o.dir,
    segmentBytes: o.segmentBytes,
    flushDiskType: o.flushDiskType,
    syncFlushTimeoutMs: 5000,
    indexSlotNum: 16,
    indexNum: 64,
    maxMessageSizeBytes: 2048,
    checkCrcOnRecover: true,
    fileReservedTimeHours: 72,
    deleteWhen: "04",
    diskMaxUsedSpaceRatio: 0.99,
    diskCriticalRatio: 0.999,
    deleteCommitLogFilesIntervalMs: 3_600_000,
    maxTransferBytesOnMessageInMemory: 256 * 1024,
    maxTransferCountOnMessageInMemory: 32,
    maxTransferBytesOnMessageInDisk: 64 * 1024,
    maxTransferCountOnMessageInDisk: 8,
    accessMessageInMemoryMaxRatio: 40,
    accessMessageInMemoryMaxBytes: 1 << 30,
    storeHost: parseHostAddress(o.storeHost),
    releaseColdIntervalMs: 3_600_000,
  };
}
