/**
 * A replica's cut (MessageStore.truncateTail: a diverged tail, or what its crash left unflushed)
 * keeps the log below the cut point. Before the fix, the cut counted everything it kept as
 * flushed without syncing it: the next checkpoint claimed those bytes durable, and a power cut
 * then tore records that recovery trusted (found reading the code after failover simulation seed
 * 2519189422). Also: the bytes cut do not come back after the power cut (their zeroes are synced).
 *
 * Seeded (SEED=n replays; the seed picks the torn prefixes of the power cut).
 */
import { expect, test } from "bun:test";
import { MessageStore } from "../../src/commitlog/message-store.ts";
import { message, testStoreOptions } from "../../src/commitlog/test-support.ts";
import { fuzzSeed, prng } from "../harness/fuzz.ts";
import { SimClock } from "../../src/common/sim-clock.ts";
import { MemDisk } from "./disk.ts";
import { equalRange, logBytes } from "./store-checks.ts";

const SEGMENT = 4096;

test("what a replica keeps below its cut is durable once the cut is checkpointed, and what it cut stays cut", async () => {
  const base = fuzzSeed();
  for (let round = 0; round < 8; round++) {
    const seed = (base + round * 0x9e3779b9) >>> 0;
    process.stderr.write(`cut-durable: SEED=${seed}\n`);
    const rng = prng(seed);
    const sim = new SimClock();
    const disk = new MemDisk(rng, 2);
    const open = (dir: string, readOnly: boolean) => {
      const clock = sim.view();
      // Never flushes by itself within the test: what it wrote stays in the page cache.
      const opts = { segmentBytes: SEGMENT, flushIntervalMs: 600_000, flushCommitLogThoroughIntervalMs: 600_000, checkpointIntervalMs: 600_000, clock, disk: disk.view(clock) };
      return { clock, store: MessageStore.open({ ...testStoreOptions(dir, opts), readOnly }) };
    };

    // The master's log: 40 records over several segments.
    const m = open("/m", false);
    const starts: number[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await m.store.putMessage(message("T", i % 2, `m${i}-${"x".repeat(rng.int(50, 400))}`));
      expect(r.status).toBe("PUT_OK");
      starts.push(r.appended[0]!.physicalOffset);
    }
    const log = logBytes(m.store);

    // A replica copies it (chunks never cross a segment end), unflushed, then cuts in the middle.
    const r = open("/r", true);
    for (let off = 0; off < log.length; ) {
      const end = Math.min(log.length, off - (off % SEGMENT) + SEGMENT, off + rng.int(100, 3000));
      expect(r.store.appendReplicated(off, log.subarray(off, end))).toBeNull();
      off = end;
    }
    r.store.reput();
    const cut = starts[rng.int(5, 35)]!;
    r.store.truncateTail(cut);
    const checkpointed = r.store.checkpoint(true);
    await sim.advance(5000);
    await checkpointed;

    // Power cut; the replica restarts on what survived.
    r.clock.dead = true;
    disk.crash("/r", rng, 0.5);
    const again = open("/r", true);
    const got = logBytes(again.store);
    expect(again.store.recovery?.corruptRanges).toEqual([]);
    expect(got.length).toBe(cut);
    expect(equalRange(log, got, 0, cut)).toBe(-1);
    m.clock.dead = again.clock.dead = true;
  }
});
