/**
 * The seeded simulation of automatic failover (the run itself is ./failover-world.ts): a group of
 * three replicas on one in-memory etcd, crashed, paused and cut off one at a time. Every run prints
 * its seed; `SEED=<n> npx bun test test/sim/failover-sim.test.ts` replays it, `SIM_SEEDS=<k>` runs k
 * random seeds (`SIM_STEPS=<n>` makes each longer), `SIM_TRACE=1` prints the event trace.
 */
import { expect, test } from "bun:test";
import { fuzzSeed } from "../harness/fuzz.ts";
import { runFailoverSimulation } from "./failover-world.ts";

const STEPS = Number(process.env.SIM_STEPS ?? 800);
const PASSING = [1, 2, 3, 4, 5, 6];

async function runSeed(seed: number): Promise<void> {
  process.stderr.write(`failover sim: SEED=${seed} (replay: SEED=${seed} npx bun test test/sim/failover-sim.test.ts)\n`);
  const r = await runFailoverSimulation(seed, { steps: STEPS, trace: true });
  process.stderr.write(`failover sim: SEED=${seed} ok: ${JSON.stringify(r)}\n`);
  expect(r.elections).toBeGreaterThan(0);
  expect(r.end).toBeGreaterThan(0);
}

if (process.env.SEED !== undefined) {
  const seed = Number(process.env.SEED) >>> 0;
  test(`failover simulation, SEED=${seed}`, () => runSeed(seed), 600_000);
} else if (process.env.SIM_SEEDS !== undefined) {
  const base = fuzzSeed();
  const count = Number(process.env.SIM_SEEDS);
  test(`failover simulation: ${count} random seeds from ${base}`, async () => {
    for (let i = 0; i < count; i++) await runSeed((base + i * 0x9e3779b9) >>> 0);
  }, 3_600_000);
} else {
  for (const seed of PASSING) test(`failover simulation, SEED=${seed}`, () => runSeed(seed), 600_000);
}
