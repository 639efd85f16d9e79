/**
 * Regression (found by test/sim, seed 4): the checkpoint's dispatchedOffset must never pass the
 * CommitLog's flushed offset. Recovery after a crash verifies the CommitLog only from the segment
 * holding dispatchedOffset; when the checkpoint claimed records whose CommitLog bytes were still
 * unflushed (ASYNC_FLUSH, ConsumeQueues flushed first), a torn record in an earlier segment was
 * kept unverified and served.
 */
import { afterEach, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { readCheckpoint } from "./checkpoint.ts";
import { MessageStore } from "./message-store.ts";
import { message, tempStoreDir, testStoreOptions } from "./test-support.ts";

const dirs: string[] = [];
const stores: MessageStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.shutdown();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

test("the checkpoint claims nothing dispatched past the CommitLog's flushed offset", async () => {
  const dir = tempStoreDir("checkpoint-claim-");
  dirs.push(dir);
  // ASYNC_FLUSH with a flush interval that never comes: the CommitLog stays unflushed.
  const store = MessageStore.open(
    testStoreOptions(dir, { flushIntervalMs: 1_000_000_000, checkpointIntervalMs: 1_000_000_000, flushCommitLogLeastPages: 4 }),
  );
  stores.push(store);
  for (let i = 0; i < 20; i++) expect((await store.putMessage(message("T", 0, `m${i}`.padEnd(300, "x")))).status).toBe("PUT_OK");
  expect(store.commitLog.flushedOffset).toBeLessThan(store.maxPhyOffset);
  // A thorough tick flushes every ConsumeQueue: they are durable, the CommitLog is not.
  await store.checkpoint(true);
  const cp = readCheckpoint(join(dir, "checkpoint"));
  if (cp === null || "invalid" in cp) throw new Error("no valid checkpoint");
  expect(cp.dispatchedOffset).toBeLessThanOrEqual(store.commitLog.flushedOffset);
  expect(cp.dispatchedOffset).toBeLessThanOrEqual(cp.commitLogFlushedOffset);
});
