/**
 * Simulated time for test/sim: one event queue for the whole run, and a `Clock` view per process
 * incarnation. Killing a view (a crash) cancels its timers and every timer it sets later, so code
 * of a crashed store or HA service can never run again, even though its objects still exist.
 *
 * A view can also be paused (SIGSTOP): its events are held, in order, and run when it resumes.
 *
 * Determinism: events run in (time, sequence) order; after each one the microtask queue is
 * drained (a setImmediate is the only real event-loop hop, and nothing else is pending), so the
 * same seed gives the same interleaving of timers, promise continuations and link deliveries.
 */
import type { Clock, TimerHandle } from "./clock.ts";

interface SimEvent {
  at: number;
  seq: number;
  fn: () => void;
  owner: ClockView | null;
  cancelled: boolean;
  /** Repeat period for an interval timer. */
  every: number;
}

export const SIM_EPOCH_MS = 1_700_000_000_000;

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

export class SimClock {
  now = SIM_EPOCH_MS;
  #seq = 0;
  readonly #heap: SimEvent[] = [];

  schedule(delayMs: number, fn: () => void, owner: ClockView | null, every = 0): SimEvent {
    const ev: SimEvent = { at: this.now + Math.max(0, delayMs), seq: this.#seq++, fn, owner, cancelled: false, every };
    this.#push(ev);
    return ev;
  }

  /** Runs every event due up to `now + ms`, in order, then sets the time to that point. */
  async advance(ms: number): Promise<void> {
    const until = this.now + ms;
    await settle();
    for (;;) {
      const top = this.#heap[0];
      if (!top || top.at > until) break;
      this.#pop();
      if (top.cancelled || (top.owner !== null && top.owner.dead)) continue;
      if (top.owner?.paused) {
        // A stopped process (SIGSTOP): its events wait, in order, until it resumes.
        top.owner.deferred.push(top);
        continue;
      }
      this.now = top.at;
      if (top.every > 0) {
        top.at += top.every;
        top.seq = this.#seq++;
        this.#push(top);
      }
      top.fn();
      await settle();
    }
    this.now = until;
  }

  /** Runs until `cond()` holds or `maxMs` of simulated time passed; returns whether it held. */
  async until(cond: () => boolean, maxMs: number, stepMs = 10): Promise<boolean> {
    for (let t = 0; t <= maxMs; t += stepMs) {
      if (cond()) return true;
      await this.advance(stepMs);
    }
    return cond();
  }

  view(): ClockView {
    return new ClockView(this);
  }

  /** A paused view's events, due again now (each once, as a woken process runs what it missed), in their order. */
  requeue(events: SimEvent[]): void {
    for (const ev of events) {
      ev.at = this.now;
      ev.seq = this.#seq++;
      this.#push(ev);
    }
  }

  #less(a: SimEvent, b: SimEvent): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #push(ev: SimEvent): void {
    const h = this.#heap;
    h.push(ev);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.#less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.#less(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}

/** One process incarnation's clock. */
export class ClockView implements Clock {
  readonly #sim: SimClock;
  dead = false;
  /** Stopped (SIGSTOP): time goes on, but none of its events runs until `resume`. */
  paused = false;
  /** Events that came due while paused. */
  readonly deferred: SimEvent[] = [];

  constructor(sim: SimClock) {
    this.#sim = sim;
  }

  now(): number {
    return this.#sim.now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    return this.#sim.schedule(ms, fn, this);
  }

  clearTimeout(t: TimerHandle): void {
    (t as SimEvent).cancelled = true;
  }

  setInterval(fn: () => void, ms: number): TimerHandle {
    return this.#sim.schedule(ms, fn, this, Math.max(1, ms));
  }

  clearInterval(t: TimerHandle): void {
    (t as SimEvent).cancelled = true;
  }

  pause(): void {
    this.paused = true;
  }

  /** SIGCONT: what came due meanwhile runs now, in order; intervals go on from here. */
  resume(): void {
    this.paused = false;
    this.#sim.requeue(this.deferred.splice(0));
  }

  /** Schedules on behalf of this incarnation (disk and link completions die with it). */
  after(ms: number, fn: () => void): void {
    this.#sim.schedule(ms, fn, this);
  }
}
