/**
 * The seeded simulation of automatic failover (the run itself is ./failover-world.ts): a group of
 * three replicas on one in-memory etcd, crashed, paused and cut off one at a time. Every run prints
 * its seed; `SEED=<n> npx bun test test/sim/failover-sim.test.ts` replays it, `SIM_SEEDS=<k>` runs k
 * random seeds (`SIM_STEPS=<n>` makes each longer), `SIM_TRACE=1` prints the event trace.
 */
import { expect, test } from "bun:test";
import { fuzzSeed } from "../harness/fuzz.ts";
import { runFailoverSimulation, runLostTailScenario } from "./failover-world.ts";

const STEPS = Number(process.env.SIM_STEPS ?? 1500);
// Seed 6 was an open finding until SYNC_MASTER counted only the sync state set's acks: r0,
// outside the set {r1, r2}, was the only slave connected to the master r1 when message 647 was
// written; its ack counted, r2 never had it; r1 crashed before flushing it and was elected again
// without it. Now replicas name themselves on the HA stream (src/ha/transfer.ts) and
// BrokerFailover.countsAck admits only members of the set.
// Seed 12 found that a replica's own torn range, kept by crash recovery in the middle of its log,
// was never repaired: r0 crashed at 214132, recovered keeping [212482, 212992) damaged, replicated
// on from 213501 and stayed byte-different from the master (F4); with a hole counted in its
// confirmed offset it could also have been elected without the messages the hole held. Now a
// replica cuts its log at such a range before it joins the election (BrokerFailover #join).
const PASSING = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 30, 2941746478, 2519189422];
// 2941746478 (a replica kept a record torn where no CRC looks, topic/properties, and stayed
// byte-different from the master) passes since a replica cuts what its crash left unflushed at its
// first reconcile (src/broker/replica-epochs.ts). 2519189422, from a random sweep, was the checker:
// a power cut left garbage in a BLANK marker's padding, which nothing reads (recovery checks only
// the marker's size and magic), and F4 compared padding bytes; F4 now looks past padding as the HA
// simulation's I1 does (the replica also cuts from the end of its last wholly flushed record now,
// padding included).
const OPEN: Record<number, string> = {};

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
  for (const [seed, why] of Object.entries(OPEN)) test.skip(`failover simulation, SEED=${seed} — open: ${why}`, () => runSeed(Number(seed)));
}

test("the lost tail of the HA simulation's open seeds, with failover: the replicas cut what the re-elected master lost, and end byte-identical to it", async () => {
  const r = await runLostTailScenario(Number(process.env.SEED ?? 1) >>> 0);
  process.stderr.write(`failover sim: lost tail: ${JSON.stringify(r)}\n`);
  expect(r.masterRecoveredEnd).toBeLessThan(r.masterEndBeforeCrash);
  for (const end of r.replicaEnds) expect(end).toBe(r.masterEndBeforeCrash);
  expect(r.epoch).toBe(2);
  // Each replica cut exactly the tail the master lost, then took the new records written over it.
  expect(r.cuts.map((c) => [c.from, c.to]).sort()).toEqual([
    [r.masterRecoveredEnd, r.masterEndBeforeCrash],
    [r.masterRecoveredEnd, r.masterEndBeforeCrash],
  ]);
  expect(r.end).toBeGreaterThan(r.masterEndBeforeCrash);
}, 120_000);
