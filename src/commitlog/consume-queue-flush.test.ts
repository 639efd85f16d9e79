/**
 * Lazy ConsumeQueue flushing (RocketMQ's FlushConsumeQueueService: flushConsumeQueueLeastPages,
 * flushConsumeQueueThoroughInterval) and what it means for the checkpoint and for recovery.
 *
 * A power cut is simulated without one: the checkpoint file as it stood after the last tick is
 * kept aside, the store is stopped, the checkpoint is put back with `abort`, and the ConsumeQueue
 * units the checkpoint did not claim are zeroed (lost pages) or replaced by plausible stale units
 * (torn pages). The CommitLog stays intact, as if it had been flushed.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { decodeRecordAt } from "../common/message-record.ts";
import { readCheckpoint, type Checkpoint } from "./checkpoint.ts";
import { ConsumeQueue } from "./consume-queue.ts";
import { CQ_UNIT_SIZE } from "../protocol/store-layout.ts";
import { OS_PAGE_BYTES } from "./mapped-file.ts";
import { MessageStore, type MessageStoreOptions } from "./message-store.ts";
import { message, tempStoreDir, testStoreOptions } from "./test-support.ts";

const dirs: string[] = [];
const stores: MessageStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.shutdown();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A store whose ticks run only when the test calls checkpoint(), on a clock the test moves. */
function open(dir: string, clock: { t: number }, o: Partial<MessageStoreOptions> = {}): MessageStore {
  const store = MessageStore.open(
    testStoreOptions(dir, {
      now: () => clock.t,
      // The CommitLog is flushed with every put: the checkpoint never claims past its flushed end,
      // and these tests are about the ConsumeQueues.
      flushDiskType: "SYNC_FLUSH",
      checkpointIntervalMs: 1_000_000_000,
      consumeQueueUnitsPerFile: 1000,
      flushConsumeQueueLeastPages: 2,
      flushConsumeQueueThoroughIntervalMs: 60_000,
      ...o,
    }),
  );
  stores.push(store);
  return store;
}

async function close(store: MessageStore): Promise<void> {
  stores.splice(stores.indexOf(store), 1);
  await store.shutdown();
}

function checkpointOf(dir: string): Checkpoint {
  const cp = readCheckpoint(join(dir, "checkpoint"));
  if (cp === null || "invalid" in cp) throw new Error(`no valid checkpoint in ${dir}`);
  return cp;
}

const dec = new TextDecoder();
function bodiesOf(store: MessageStore, topic: string, queueId: number): string[] {
  return store.getMessage(topic, queueId, 0, 1000).messages.map((m) => {
    const r = decodeRecordAt(m, 0, { checkCrc: true });
    if (!("totalSize" in r)) throw new Error("bad record in pull result");
    return dec.decode(r.body);
  });
}

/** Units of 2 pages: what a queue needs before a normal tick flushes it. */
const UNITS_FOR_TWO_PAGES = Math.ceil((2 * OS_PAGE_BYTES) / CQ_UNIT_SIZE);

describe("ConsumeQueue least-pages flushing", () => {
  test("isAbleToFlush: dirty pages counted in whole pages; a full file always; nothing dirty never", () => {
    const root = tempStoreDir("cq-flush-");
    dirs.push(root);
    const cq = new ConsumeQueue(root, "T", 0, 1000);
    cq.putUnit(0, 0, 10, 0, "log");
    expect([cq.isAbleToFlush(0), cq.isAbleToFlush(1), cq.isAbleToFlush(2)]).toEqual([true, false, false]);
    for (let i = 1; i < UNITS_FOR_TWO_PAGES; i++) cq.putUnit(i, i * 10, 10, 0, "log");
    expect(cq.isAbleToFlush(2)).toBe(true);
    cq.flushSync(2);
    expect([cq.dirty, cq.isAbleToFlush(0)]).toEqual([false, false]);
    // A full file (64 units = 1280 bytes, under one page) is flushed whatever the page count.
    const small = new ConsumeQueue(root, "S", 0, 64);
    for (let i = 0; i < 63; i++) small.putUnit(i, i * 10, 10, 0, "log");
    expect(small.isAbleToFlush(2)).toBe(false);
    small.putUnit(63, 630, 10, 0, "log");
    expect(small.isAbleToFlush(2)).toBe(true);
    small.flushSync(2);
    expect(small.dirty).toBe(false);
    expect(small.firstUnflushedPhyOffset()).toBeUndefined();
    small.putUnit(64, 640, 10, 0, "log");
    expect(small.firstUnflushedPhyOffset()).toBe(640);
    cq.close();
    small.close();
  });

  test("a file with fewer than least pages dirty is not flushed on a normal tick, but on the thorough tick and at shutdown; the checkpoint claims only flushed units", async () => {
    const dir = tempStoreDir();
    dirs.push(dir);
    const clock = { t: 1_700_000_000_000 };
    const store = open(dir, clock);
    await store.putMessage(message("T", 0, "a0"));
    // Not yet 60 s since the store started: a normal tick, and one unit is far from 2 pages.
    await store.checkpoint();
    expect(store.unflushedConsumeQueues).toBe(1);
    expect(checkpointOf(dir).dispatchedOffset).toBe(0);

    // Queue 1 gets a single unit; queue 0 gets 2 pages' worth: only queue 0 is flushed.
    const lone = await store.putMessage(message("T", 1, "b0"));
    for (let i = 1; i <= UNITS_FOR_TWO_PAGES; i++) await store.putMessage(message("T", 0, `a${i}`));
    clock.t += 59_999;
    await store.checkpoint();
    expect(store.unflushedConsumeQueues).toBe(1);
    expect(checkpointOf(dir).dispatchedOffset).toBe(lone.appended[0]!.physicalOffset);

    // 60 s after the last thorough flush: everything is flushed and claimed.
    clock.t += 1;
    await store.checkpoint();
    expect(store.unflushedConsumeQueues).toBe(0);
    expect(checkpointOf(dir).dispatchedOffset).toBe(store.maxPhyOffset);

    // A unit written after that waits again, until shutdown flushes it.
    const late = await store.putMessage(message("T", 2, "c0"));
    clock.t += 1000;
    await store.checkpoint();
    expect(store.unflushedConsumeQueues).toBe(1);
    expect(checkpointOf(dir).dispatchedOffset).toBe(late.appended[0]!.physicalOffset);
    const max = store.maxPhyOffset;
    await close(store);
    expect(checkpointOf(dir).dispatchedOffset).toBe(max);
    const again = open(dir, clock);
    expect(again.recovery).toMatchObject({ abnormal: false, endOffset: max, recordsScanned: 0 });
    expect(bodiesOf(again, "T", 2)).toEqual(["c0"]);
  });

  for (const damage of ["lost (zeroed)", "torn (stale units)"] as const) {
    test(`power cut: units the checkpoint did not claim are ${damage} on disk and rebuilt from the CommitLog`, async () => {
      const dir = tempStoreDir();
      dirs.push(dir);
      const clock = { t: 1_700_000_000_000 };
      const store = open(dir, clock);
      const queues = 4;
      const sent = (q: number, i: number) => `q${q}-m${i}`;
      const first = await store.putMessage(message("T", 0, sent(0, 0)));
      for (let q = 0; q < queues; q++) for (let i = q === 0 ? 1 : 0; i < 5; i++) await store.putMessage(message("T", q, sent(q, i)));
      clock.t += 60_000;
      await store.checkpoint();
      const claimedBefore = checkpointOf(dir).dispatchedOffset;
      expect(claimedBefore).toBe(store.maxPhyOffset);
      for (let q = 0; q < queues; q++) for (let i = 5; i < 10; i++) await store.putMessage(message("T", q, sent(q, i)));
      clock.t += 1000;
      await store.checkpoint();
      expect(store.unflushedConsumeQueues).toBe(queues);
      // What the disk holds at the "power cut": this checkpoint, and no later one.
      expect(checkpointOf(dir).dispatchedOffset).toBe(claimedBefore);
      copyFileSync(join(dir, "checkpoint"), join(dir, "checkpoint.at-crash"));
      await close(store);
      copyFileSync(join(dir, "checkpoint.at-crash"), join(dir, "checkpoint"));
      rmSync(join(dir, "checkpoint.bak"), { force: true });
      writeFileSync(join(dir, "abort"), "1");
      const stale = first.appended[0]!;
      let damaged = 0;
      for (let q = 0; q < queues; q++) {
        const qdir = join(dir, "consumequeue", "T", String(q));
        for (const name of readdirSync(qdir)) {
          const path = join(qdir, name);
          const bytes = new Uint8Array(readFileSync(path));
          const v = new DataView(bytes.buffer);
          for (let pos = 0; pos + CQ_UNIT_SIZE <= bytes.length && v.getInt32(pos + 8) !== 0; pos += CQ_UNIT_SIZE) {
            if (Number(v.getBigInt64(pos)) < claimedBefore) continue;
            if (damage === "lost (zeroed)") bytes.fill(0, pos, pos + CQ_UNIT_SIZE);
            else {
              // A plausible unit that points at the wrong record (an old page's content).
              v.setBigInt64(pos, BigInt(stale.physicalOffset));
              v.setInt32(pos + 8, stale.size);
              v.setBigInt64(pos + 12, 0n);
            }
            damaged++;
          }
          writeFileSync(path, bytes);
        }
      }
      expect(damaged).toBe(queues * 5);

      const again = open(dir, clock);
      expect(again.recovery).toMatchObject({ abnormal: true, checkpoint: "valid", corruptRanges: [] });
      for (let q = 0; q < queues; q++) {
        expect(again.getMaxOffsetInQueue("T", q)).toBe(10);
        expect(bodiesOf(again, "T", q)).toEqual(Array.from({ length: 10 }, (_, i) => sent(q, i)));
      }
      // And the next send continues each queue densely.
      expect((await again.putMessage(message("T", 3, "next"))).appended[0]!.queueOffset).toBe(10);
    });
  }
});
