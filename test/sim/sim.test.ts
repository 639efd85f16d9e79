/**
 * The seeded HA simulation (docs/CONVENTIONS.md §6; the run itself is ./world.ts). Every run prints its
 * seed; `SEED=<n> bun test test/sim` replays exactly that run, `SIM_SEEDS=<k>` runs k seeds drawn
 * at random (`SIM_STEPS=<n>` makes each longer), `SIM_TRACE=1` prints every run's event trace.
 *
 * CI runs the fixed seeds in PASSING. Random seeds still find the open violations listed in
 * OPEN: each is a real finding not yet fixed (or not yet told apart from a checker gap); they are
 * skipped by name with the reason, and replay with their seed.
 */
import { expect, test } from "bun:test";
import { fuzzSeed } from "../harness/fuzz.ts";
import { runSimulation } from "./world.ts";

const STEPS = Number(process.env.SIM_STEPS ?? 600);
// 1866555592 and 4077211474 held two records of one queue offset on the slave until its dispatch
// learned to supersede the earlier one; 3098228001 hung in a clean restart until the run drove
// time while a store shut down (world.ts shutdownStore). Later they met the lost tail (below).
const PASSING = [1, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 3098228001, 2, 17, 3203262370, 4077211474, 1866555592, 3381240769];
// Seeds replay runs, not findings: a product change redraws every later choice. Since the slave
// stores the master's damaged ranges (record-stream.ts), seeds 3 and 6 (damage the slave refused
// for good) pass; seed 10's first finding (after a crash, a ConsumeQueue unit, never flushed and
// torn, of a record lost to damage past the checkpoint is neither rewritten nor dropped when a
// later unit is good, so it points at garbage) is handled where it would hurt: the pull path
// serves a unit only when the bytes it points at are its own record (isRecordOfUnit), and I4
// checks that such a unit is never served.
//
// The former open seeds now pass (session 9), with fixed-role epochs (src/broker/replica-epochs.ts,
// docs/STORAGE.md §10.6):
//   - 17, 3203262370, 4077211474, 1866555592 — "the lost tail": the master crashed and recovered a
//     shorter log than the slave already had, then wrote new records over that tail, and the slave
//     kept the old bytes (as RocketMQ 4.x does, until an operator rebuilds it). Now the master
//     begins an epoch at each start and the slave cuts where the two logs part before it connects;
//     random sweeps see such cuts in about one run in five (result.slaveCuts), and I1 holds.
//   - 2 — a slave's recovery kept a record whose unflushed topic/properties were torn (no CRC
//     covers them): a slave now cuts what its crash left unflushed and fetches it again. A master
//     keeps such a record (KNOWN under I3, counted in tornTailsAccepted): I1 looks past it.
//   - 4, 8, 14 met, on the way, cut records coming back after a power cut (the cut's zeroes were not
//     synced: MappedFile.truncateTo now syncs them); 3381240769, a slave stuck at a segment end
//     after a damaged range (record-stream.ts #process).
const OPEN: Record<number, string> = {};

async function runSeed(seed: number): Promise<void> {
  process.stderr.write(`sim: SEED=${seed} (replay: SEED=${seed} npx bun test test/sim)\n`);
  const r = await runSimulation(seed, { steps: STEPS, trace: true });
  process.stderr.write(`sim: SEED=${seed} ok: ${JSON.stringify(r)}\n`);
  expect(r.masterEnd).toBeGreaterThan(0);
}

if (process.env.SEED !== undefined) {
  const seed = Number(process.env.SEED) >>> 0;
  test(`HA simulation, SEED=${seed}`, () => runSeed(seed), 600_000);
} else if (process.env.SIM_SEEDS !== undefined) {
  const base = fuzzSeed();
  const count = Number(process.env.SIM_SEEDS);
  test(`HA simulation: ${count} random seeds from ${base}`, async () => {
    for (let i = 0; i < count; i++) await runSeed((base + i * 0x9e3779b9) >>> 0);
  }, 3_600_000);
} else {
  for (const seed of PASSING) test(`HA simulation, SEED=${seed}`, () => runSeed(seed), 600_000);
  for (const [seed, why] of Object.entries(OPEN)) test.skip(`HA simulation, SEED=${seed} — open: ${why}`, () => runSeed(Number(seed)));
}

test("the same seed gives the same run", async () => {
  const seed = process.env.SEED !== undefined ? Number(process.env.SEED) >>> 0 : PASSING[0]!;
  const a = await runSimulation(seed, { steps: 200 });
  const b = await runSimulation(seed, { steps: 200 });
  expect(b).toEqual(a);
}, 600_000);
