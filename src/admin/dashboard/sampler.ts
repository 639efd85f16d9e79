/**
 * The dashboard's last hour, kept in memory: every SAMPLE_INTERVAL_MS the sampler reads the
 * broker's message counters and consumer offsets and keeps one point per topic (messages in and
 * out per second since the previous point) and per consumer group (messages behind the queues'
 * ends). SAMPLES_KEPT points are kept, oldest dropped first; nothing is written to disk, so a
 * restart starts an empty history.
 *
 * Rates come from differences of counters that only grow while the broker runs (TrafficCounters),
 * divided by the time between the two readings, so a late timer tick gives a correct rate over a
 * longer span rather than a spike. Lag is a reading, not a rate. Invariants: points are in
 * increasing time order; every series has exactly one value per point (null where the topic or
 * group did not exist yet).
 */
import type { BrokerInfo, TrafficCounters } from "../../broker/index.ts";

export const SAMPLE_INTERVAL_MS = 10_000;
/** One hour at one point per SAMPLE_INTERVAL_MS. */
export const SAMPLES_KEPT = 360;

interface Point {
  at: number;
  inTps: Map<string, number>;
  outTps: Map<string, number>;
  lag: Map<string, number>;
}

/** The history as columns, the shape uPlot draws: `times` in seconds, one value per time in each series. */
export interface SampleHistory {
  intervalMs: number;
  times: number[];
  inTps: Record<string, (number | null)[]>;
  outTps: Record<string, (number | null)[]>;
  lag: Record<string, (number | null)[]>;
}

/** The broker readings a sample needs (a BrokerInfo provides them). */
export type SampledInfo = Pick<BrokerInfo, "traffic" | "consumerGroups" | "groupOffsets">;

export class TrafficSampler {
  readonly #info: SampledInfo;
  readonly #points: Point[] = [];
  #last: { at: number; counters: TrafficCounters } | null = null;

  constructor(info: SampledInfo) {
    this.#info = info;
  }

  /** Takes one point at `now` (ms). The first call only records the counters: a rate needs two readings. */
  sample(now: number): void {
    const counters = this.#info.traffic();
    const last = this.#last;
    this.#last = { at: now, counters };
    if (!last || now <= last.at) return;
    const seconds = (now - last.at) / 1000;
    const inTps = new Map<string, number>();
    for (const [topic, n] of Object.entries(counters.putByTopic)) inTps.set(topic, rate(n, last.counters.putByTopic[topic], seconds));
    const outTps = new Map<string, number>();
    for (const [key, n] of Object.entries(counters.getByTopicGroup)) {
      const topic = key.slice(0, key.lastIndexOf("@"));
      outTps.set(topic, (outTps.get(topic) ?? 0) + rate(n, last.counters.getByTopicGroup[key], seconds));
    }
    const lag = new Map<string, number>();
    for (const group of this.#info.consumerGroups()) {
      const queues = this.#info.groupOffsets(group);
      if (queues.length > 0)
        lag.set(
          group,
          queues.reduce((sum, q) => sum + q.lag, 0),
        );
    }
    this.#points.push({ at: now, inTps, outTps, lag });
    if (this.#points.length > SAMPLES_KEPT) this.#points.shift();
  }

  history(): SampleHistory {
    const column = (pick: (p: Point) => Map<string, number>): Record<string, (number | null)[]> => {
      const names = new Set<string>();
      for (const p of this.#points) for (const k of pick(p).keys()) names.add(k);
      const out: Record<string, (number | null)[]> = {};
      for (const name of [...names].sort()) out[name] = this.#points.map((p) => pick(p).get(name) ?? null);
      return out;
    };
    return {
      intervalMs: SAMPLE_INTERVAL_MS,
      times: this.#points.map((p) => Math.round(p.at / 1000)),
      inTps: column((p) => p.inTps),
      outTps: column((p) => p.outTps),
      lag: column((p) => p.lag),
    };
  }

  /** Samples now and then every SAMPLE_INTERVAL_MS; the timer does not keep the process alive. Returns its stop. */
  start(now: () => number = Date.now): () => void {
    const tick = () => {
      try {
        this.sample(now());
      } catch {
        // The broker is not started yet, or is stopping: this point is skipped, the next one counts.
      }
    };
    tick();
    const timer = setInterval(tick, SAMPLE_INTERVAL_MS);
    timer.unref();
    return () => clearInterval(timer);
  }
}

/** Per-second rate of a counter between two readings; a counter new since the last reading counts from 0. */
function rate(now: number, before: number | undefined, seconds: number): number {
  return Math.max(0, now - (before ?? 0)) / seconds;
}
