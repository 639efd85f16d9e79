/**
 * The seeded broker simulation (docs/CONVENTIONS.md §6; the run itself is ./broker-world.ts):
 * producers and long-polling consumers against a whole BrokerController on simulated time, an
 * in-memory disk that can crash, and in-memory sockets. Every run prints its seed;
 * `SEED=<n> bun test test/sim/broker-sim.test.ts` replays it, `SIM_SEEDS=<k>` runs k random seeds
 * (`SIM_STEPS=<n>` makes each longer); `SIM_NO_CRASH=1` / `SIM_NO_RESTART=1` leave out broker crashes or
 * clean restarts (same draws otherwise), to tell a finding's cause apart. Each passing seed runs
 * twice: as before, and registering with an in-process name server on the same clock (N1; another
 * interleaving, so another run of the seed); `SIM_NAMESRV=1` does the latter for SEED / SIM_SEEDS.
 * And once more with POP consumers beside the PULL ones (./pop-consumers.ts: P0–P3, P5; P4, FIFO
 * pops, is listed as a todo until the broker pops orderly); `SIM_POP=1` does that for SEED / SIM_SEEDS.
 *
 * CI runs the fixed seeds in PASSING; open findings are listed in OPEN, skipped by name with the reason.
 */
import { expect, test } from "bun:test";
import { fuzzSeed } from "../harness/fuzz.ts";
import { runBrokerSimulation } from "./broker-world.ts";

const STEPS = Number(process.env.SIM_STEPS ?? 500);
const PASSING = [1, 2, 3, 4, 5, 6];
const OPEN: Record<number, string> = {};
// 632456037 and 1469671959 found offsets persisted past a queue's end after an ASYNC_FLUSH crash
// (copies stored there again were skipped): PopService.start brings them back to the end.
const PASSING_POP = [1, 2, 3, 4, 5, 6, 632456037, 1469671959];
const OPEN_POP: Record<number, string> = {
  // Random sweep (base 1948372615), all ASYNC_FLUSH with crashes; as of the revive-log batching:
  68490760:
    "P1: GP-pop-B message 196 popped again from the retry topic while an earlier delivery is in flight: two retry copies " +
    "(a crash between a revive's copy and its bAck revives it again, RocketMQ's window too; the model does not excuse it yet)",
  455767717: "P1: as 68490760 (GP-pop-B message 195, reconsumeTimes 2)",
  3110203486:
    "B1: GP-pop-B got message 314 with no TAGS after a crash that lost its retry checkpoint: a record torn where no CRC looks " +
    "(properties) in the unflushed tail, which the PULL checks excuse for ASYNC_FLUSH and the POP model does not yet",
};

// P4: FIFO pops exist now (POP_MESSAGE with order=true); an orderly POP group joins the simulation
// with this check next (tested in process in src/broker/processors/pop-message.test.ts until then).
test.todo("P4 (pending in the simulation): a FIFO queue never has two popped batches in flight");

async function runSeed(seed: number, namesrv = process.env.SIM_NAMESRV !== undefined, pop = process.env.SIM_POP !== undefined): Promise<void> {
  const env = `${namesrv ? "SIM_NAMESRV=1 " : ""}${pop ? "SIM_POP=1 " : ""}SEED=${seed}`;
  process.stderr.write(`broker sim: ${env} (replay: ${env} npx bun test test/sim/broker-sim.test.ts)\n`);
  const r = await runBrokerSimulation(seed, { steps: STEPS, trace: true, namesrv, pop });
  process.stderr.write(`broker sim: ${env} ok: ${JSON.stringify(r)}\n`);
  expect(r.acked).toBeGreaterThan(0);
  expect(r.delivered).toBeGreaterThan(0);
  if (pop) {
    expect(r.pop!.delivered).toBeGreaterThan(0);
    expect(r.pop!.acked).toBeGreaterThan(0);
    expect(r.pop!.redelivered).toBeGreaterThan(0);
  }
}

if (process.env.SEED !== undefined) {
  const seed = Number(process.env.SEED) >>> 0;
  test(`broker simulation, SEED=${seed}`, () => runSeed(seed), 600_000);
} else if (process.env.SIM_SEEDS !== undefined) {
  const base = fuzzSeed();
  const count = Number(process.env.SIM_SEEDS);
  test(`broker simulation: ${count} random seeds from ${base}`, async () => {
    for (let i = 0; i < count; i++) await runSeed((base + i * 0x9e3779b9) >>> 0);
  }, 3_600_000);
} else {
  for (const seed of PASSING) test(`broker simulation, SEED=${seed}`, () => runSeed(seed), 600_000);
  for (const seed of PASSING) test(`broker simulation with a name server, SEED=${seed}`, () => runSeed(seed, true), 600_000);
  for (const seed of PASSING_POP) test(`broker simulation with POP consumers, SEED=${seed}`, () => runSeed(seed, false, true), 600_000);
  for (const [seed, why] of Object.entries(OPEN_POP)) test.skip(`broker simulation with POP consumers, SEED=${seed} — open: ${why}`, () => runSeed(Number(seed), false, true));
  for (const [seed, why] of Object.entries(OPEN)) test.skip(`broker simulation, SEED=${seed} — open: ${why}`, () => runSeed(Number(seed)));
}

test("the same seed gives the same broker run", async () => {
  const seed = process.env.SEED !== undefined ? Number(process.env.SEED) >>> 0 : PASSING[0]!;
  const a = await runBrokerSimulation(seed, { steps: 150 });
  const b = await runBrokerSimulation(seed, { steps: 150 });
  expect(b).toEqual(a);
  const withNamesrv = await runBrokerSimulation(seed, { steps: 150, namesrv: true });
  expect(await runBrokerSimulation(seed, { steps: 150, namesrv: true })).toEqual(withNamesrv);
  const withPop = await runBrokerSimulation(seed, { steps: 150, pop: true });
  expect(await runBrokerSimulation(seed, { steps: 150, pop: true })).toEqual(withPop);
}, 600_000);
