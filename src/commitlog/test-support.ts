/**
 * Helpers shared by the store's tests, the crash test's child writer and bench/store: option
 * presets and message builders. Not part of the store's surface.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseHostAddress } from "../common/message-record.ts";
import type { MessageStoreOptions, PutMessageRequest } from "./message-store.ts";

export function tempStoreDir(prefix = "store-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Small segments and queue files, so tests cross every rollover quickly. */
export function testStoreOptions(dir: string, overrides: Partial<MessageStoreOptions> = {}): MessageStoreOptions {
  return {
    dir,
    segmentBytes: 64 * 1024,
    flushDiskType: "ASYNC_FLUSH",
    flushIntervalMs: 50,
    syncFlushTimeoutMs: 5000,
    consumeQueueUnitsPerFile: 64,
    indexSlotNum: 64,
    indexNum: 256,
    maxMessageSizeBytes: 16 * 1024,
    checkCrcOnRecover: true,
    fileReservedTimeHours: 72,
    deleteWhen: "04",
    diskMaxUsedSpaceRatio: 0.99,
    diskCriticalRatio: 0.999,
    deleteCommitLogFilesIntervalMs: 60_000,
    maxTransferBytesOnMessageInMemory: 256 * 1024,
    maxTransferCountOnMessageInMemory: 32,
    maxTransferBytesOnMessageInDisk: 64 * 1024,
    maxTransferCountOnMessageInDisk: 8,
    accessMessageInMemoryMaxRatio: 40,
    storeHost: parseHostAddress("127.0.0.1:10911"),
    checkpointIntervalMs: 100,
    ...overrides,
  };
}

const enc = new TextEncoder();

export function message(topic: string, queueId: number, body: string | Uint8Array, props: Record<string, string> = {}): PutMessageRequest {
  const properties = Object.entries(props)
    .map(([k, v]) => `${k}\u0001${v}`)
    .join("\u0002");
  return {
    topic,
    queueId,
    flag: 0,
    body: typeof body === "string" ? enc.encode(body) : body,
    properties,
    sysFlag: 0,
    bornTimestamp: Date.now(),
    bornHost: parseHostAddress("127.0.0.1:50000"),
    reconsumeTimes: 0,
    preparedTransactionOffset: 0,
  };
}
