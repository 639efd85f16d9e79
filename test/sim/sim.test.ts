/**
 * The seeded HA simulation (STYLE practice 6; the run itself is ./world.ts). Every run prints its
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
const PASSING = [1, 3, 9, 14];
const OPEN: Record<number, string> = {
  2: "slave ends past the recovered master without a lost tail on record (checker or HA; unanalysed)",
  4: "slave keeps a record that fails its length check at a segment start after a crash (unanalysed)",
  5: "recovered master log differs from what it wrote outside topic/properties (unanalysed)",
  6: "slave ConsumeQueue keeps units past its last record after a crash (unanalysed)",
  10: "master ConsumeQueue keeps a torn unit in the middle of a queue after a crash",
  12: "slave diverges from the master after the master lost a tail the slave had (RocketMQ 4.x has no slave truncation)",
  15: "slave never catches up in the quiet period (liveness; unanalysed)",
  17: "slave ConsumeQueue unit 0 is torn after a clean restart (unanalysed)",
};

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
