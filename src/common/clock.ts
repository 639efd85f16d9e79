/**
 * Time as a collaborator (docs/CONVENTIONS.md §6): the store and the HA service read the time and set
 * timers only through a `Clock`, so test/sim can run them on simulated time (no real timers, the
 * same run for the same seed). Production passes `systemClock`, which is Date.now and the global
 * timers themselves: a handle is the runtime's own timer object, nothing is wrapped or allocated.
 */

/** Opaque: whatever the clock's setTimeout/setInterval returned. */
export type TimerHandle = object;

export const HOUR_MS = 3_600_000;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(t: TimerHandle): void;
  setInterval(fn: () => void, ms: number): TimerHandle;
  clearInterval(t: TimerHandle): void;
}

type RuntimeTimer = ReturnType<typeof setTimeout>;

export const systemClock: Clock = {
  now: Date.now,
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (t) => clearTimeout(t as RuntimeTimer),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (t) => clearInterval(t as RuntimeTimer),
};

/** `clock.now` as a plain function to hand around (the system clock's is Date.now itself). */
export function nowOf(clock: Clock): () => number {
  return clock === systemClock ? Date.now : () => clock.now();
}

/**
 * A reading for measuring elapsed time (deadlines, latencies), in ms: on the system clock
 * performance.now, which a step of the wall clock (NTP, an operator) does not move, so a request
 * timeout neither fires at once nor waits an hour when the date is set; any other clock's `now`.
 */
export function elapsedNowOf(clock: Clock): () => number {
  return clock === systemClock ? () => performance.now() : () => clock.now();
}
