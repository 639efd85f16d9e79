/**
 * Shared test helpers for seeded fuzzing and golden fixtures. Every fuzz test prints its seed;
 * `SEED=<n> bun test <file>` replays the same run, `FUZZ_ITERATIONS=<n>` makes it longer.
 */

/** The run's seed: SEED from the environment, else a random one. */
export function fuzzSeed(): number {
  return process.env.SEED !== undefined ? Number(process.env.SEED) >>> 0 : (Math.random() * 0x100000000) >>> 0;
}

export function fuzzIterations(fallback: number): number {
  return Number(process.env.FUZZ_ITERATIONS ?? fallback);
}

/** mulberry32: small, fast, good enough to drive a fuzzer reproducibly. */
export function prng(seed: number) {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number): number => lo + Math.floor(next() * (hi - lo + 1));
  return {
    next,
    int,
    bool: (p = 0.5) => next() < p,
    pick: <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]!,
    bytes: (n: number) => Uint8Array.from({ length: n }, () => int(0, 255)),
  };
}

export type Rng = ReturnType<typeof prng>;

/** The generator of item `n` of a run (a connection, a request): the same whatever ran before it. */
export function connectionRng(seed: number, n: number): Rng {
  return prng((seed ^ Math.imul(n + 1, 0x9e3779b1)) >>> 0);
}

/** Parses an annotated hex fixture (src/remoting/test-support.ts, where the in-process fixtures can reach it). */
export { parseHexFixture } from "../../src/remoting/test-support.ts";
