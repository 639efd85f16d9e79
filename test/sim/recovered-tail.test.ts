/**
 * Found while building the crash loop (test/harness/crash-loop.ts), whose power cuts follow a
 * process crash and a restart: a case the HA simulation does not make (its crashes are all power
 * cuts). A process crash keeps the page cache, so the restarted store recovers records that may
 * never have reached the disk; it must not count them durable without syncing them. Before the
 * fix, recovery marked every recovered segment flushed: the restarted store (SYNC_FLUSH here) then
 * only ever synced the segment it was writing, its checkpoint claimed the earlier segments'
 * unflushed tails durable, and a later power cut lost them: damaged ranges in the middle of the
 * log, below records acknowledged since (the next recovery reported and skipped them, e.g. SEED=1:
 * [2000, 4096) and [7915, 8192), 11 of 61 records gone).
 *
 * Seeded (SEED=n replays; the seed picks the torn prefixes of the power cut).
 */
import { expect, test } from "bun:test";
import { decodeRecordAt } from "../../src/common/message-record.ts";
import { MessageStore } from "../../src/commitlog/message-store.ts";
import { message, testStoreOptions } from "../../src/commitlog/test-support.ts";
import type { FlushDiskType } from "../../src/protocol/broker-config.ts";
import { fuzzSeed, prng } from "../harness/fuzz.ts";
import { SimClock } from "../../src/common/sim-clock.ts";
import { MemDisk } from "./disk.ts";
import { checkStoreQueues } from "./store-checks.ts";

const DIR = "/store";
const TOPIC = "T";

test("records recovered after a process crash survive a power cut after the restart", async () => {
  const seed = fuzzSeed();
  process.stderr.write(`recovered-tail: SEED=${seed}\n`);
  const rng = prng(seed);
  const sim = new SimClock();
  const disk = new MemDisk(rng, 2);
  const open = (mode: FlushDiskType) => {
    const clock = sim.view();
    // ASYNC_FLUSH that never flushes by itself within the test: what it wrote stays in the page cache.
    const store = MessageStore.open(
      testStoreOptions(DIR, { segmentBytes: 4096, flushDiskType: mode, flushIntervalMs: 600_000, flushCommitLogThoroughIntervalMs: 600_000, clock, disk: disk.view(clock) }),
    );
    return { clock, store };
  };

  // 1. An ASYNC_FLUSH master writes across several segments, then dies (kill -9: page cache kept).
  const a = open("ASYNC_FLUSH");
  const bodies: string[] = [];
  for (let i = 0; i < 60; i++) {
    bodies.push(`async-${i}-${"x".repeat(100)}`);
    const r = await a.store.putMessage(message(TOPIC, 0, bodies.at(-1)!));
    expect(r.status).toBe("PUT_OK");
  }
  expect(a.store.commitLog.segments.length).toBeGreaterThan(1);
  a.clock.dead = true;

  // 2. Restarted as SYNC_FLUSH on the same files; one acknowledged (flushed) put, checkpoints.
  const b = open("SYNC_FLUSH");
  expect(b.store.getMaxOffsetInQueue(TOPIC, 0)).toBe(60);
  bodies.push("sync-0");
  const put = b.store.putMessage(message(TOPIC, 0, "sync-0"));
  await sim.advance(5000);
  expect((await put).status).toBe("PUT_OK");

  // 3. Power cut: only what was synced survives (plus torn prefixes of the rest).
  b.clock.dead = true;
  disk.crash(DIR, rng, 0.5);

  // 4. Everything the second store counted durable is there, whole, and its queue agrees.
  const c = open("SYNC_FLUSH");
  checkStoreQueues(c.store, "after the power cut", (m) => {
    throw new Error(m);
  });
  expect(c.store.recovery?.corruptRanges).toEqual([]);
  const got: string[] = [];
  for (let off = 0; off < c.store.getMaxOffsetInQueue(TOPIC, 0); ) {
    const r = c.store.getMessage(TOPIC, 0, off, 32);
    for (const m of r.messages) {
      const rec = decodeRecordAt(m, 0, { checkCrc: true });
      got.push("body" in rec ? new TextDecoder().decode(rec.body) : JSON.stringify(rec));
    }
    if (r.nextBeginOffset <= off) break;
    off = r.nextBeginOffset;
  }
  expect(got).toEqual(bodies);
  c.clock.dead = true;
});
