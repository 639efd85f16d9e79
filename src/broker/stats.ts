/**
 * BrokerStats: message put/get counters since boot, per-second rates over the last 10, 60 and
 * 600 seconds, and the totals at local midnight today and yesterday — what RocketMQ's
 * StoreStatsService and BrokerStats report in GET_BROKER_RUNTIME_INFO (wire reference §3.15) and
 * what `mqadmin clusterList` turns into "InTPS/OutTPS" and "#Yesterday/#Today" columns.
 *
 * Feeding it (the only two calls):
 *   recordPut(n, bytes)  after a send (single or batch) was stored: n messages, their body bytes.
 *   recordGet(n, bytes)  after a pull was answered: n messages handed out (0 = a miss), their bytes.
 *
 * Sampling without a timer: the first call (record or snapshot) in a new wall-clock second saves
 * the totals as they stood at the start of that second. Totals only change inside record calls, so
 * the totals at any earlier second boundary T are those of the first sample at or after T (or the
 * current totals when there is none), which makes every rate exact over whole seconds.
 *
 * Invariants: samples are in strictly increasing second order, at most RATE_WINDOW_MAX_S + 2 are
 * kept; totals never decrease; a clock that steps back adds no sample (its records count toward
 * the newest one).
 */

/** Longest rate window (RocketMQ reports 10 s, 60 s and 600 s). */
export const RATE_WINDOW_MAX_S = 600;
const RATE_WINDOWS_S = [10, 60, RATE_WINDOW_MAX_S] as const;

interface Totals {
  put: number;
  putBytes: number;
  /** Pull requests that returned at least one message / none. */
  getFound: number;
  getMiss: number;
  /** Messages handed out by pulls. */
  getTransferred: number;
  getBytes: number;
}

interface Sample extends Totals {
  sec: number;
}

/** Rates in messages (or requests) per second over the last 10 s, 60 s and 600 s. */
export type Rates = readonly [number, number, number];

export interface BrokerStatsSnapshot {
  bootTimestamp: number;
  putTotal: number;
  putBytesTotal: number;
  getTransferredTotal: number;
  getBytesTotal: number;
  putTps: Rates;
  getFoundTps: Rates;
  getMissTps: Rates;
  getTotalTps: Rates;
  getTransferredTps: Rates;
  /** Totals at the most recent local midnight, and at the one before (0 if the broker was not up). */
  putTotalTodayMorning: number;
  putTotalYesterdayMorning: number;
  getTotalTodayMorning: number;
  getTotalYesterdayMorning: number;
}

function zero(): Totals {
  return { put: 0, putBytes: 0, getFound: 0, getMiss: 0, getTransferred: 0, getBytes: 0 };
}

/** The first local midnight strictly after `ms`. */
function nextLocalMidnight(ms: number): number {
  const d = new Date(ms);
  d.setHours(24, 0, 0, 0);
  return d.getTime();
}

export class BrokerStats {
  readonly #now: () => number;
  readonly #boot: number;
  readonly #t: Totals = zero();
  readonly #samples: Sample[] = [];
  #nextMidnight: number;
  #todayMorning: Totals = zero();
  #yesterdayMorning: Totals = zero();

  constructor(opts: { now?: () => number } = {}) {
    this.#now = opts.now ?? Date.now;
    this.#boot = this.#now();
    this.#nextMidnight = nextLocalMidnight(this.#boot);
  }

  recordPut(n: number, bytes: number): void {
    this.#roll(this.#now());
    this.#t.put += Math.max(0, n);
    this.#t.putBytes += Math.max(0, bytes);
  }

  recordGet(n: number, bytes: number): void {
    this.#roll(this.#now());
    if (n > 0) {
      this.#t.getFound++;
      this.#t.getTransferred += n;
      this.#t.getBytes += Math.max(0, bytes);
    } else {
      this.#t.getMiss++;
    }
  }

  snapshot(): BrokerStatsSnapshot {
    const now = this.#now();
    this.#roll(now);
    const rates = (pick: (t: Totals) => number): Rates => {
      const [a, b, c] = RATE_WINDOWS_S.map((w) => this.#rate(now, w, pick));
      return [a!, b!, c!];
    };
    const t = this.#t;
    return {
      bootTimestamp: this.#boot,
      putTotal: t.put,
      putBytesTotal: t.putBytes,
      getTransferredTotal: t.getTransferred,
      getBytesTotal: t.getBytes,
      putTps: rates((x) => x.put),
      getFoundTps: rates((x) => x.getFound),
      getMissTps: rates((x) => x.getMiss),
      getTotalTps: rates((x) => x.getFound + x.getMiss),
      getTransferredTps: rates((x) => x.getTransferred),
      putTotalTodayMorning: this.#todayMorning.put,
      putTotalYesterdayMorning: this.#yesterdayMorning.put,
      getTotalTodayMorning: this.#todayMorning.getTransferred,
      getTotalYesterdayMorning: this.#yesterdayMorning.getTransferred,
    };
  }

  /** Saves the totals at the start of a new second and at each local midnight passed. */
  #roll(now: number): void {
    if (now >= this.#nextMidnight) {
      // Nothing was recorded since the last call, so the totals at every midnight passed since
      // then are the current ones; two or more midnights make both mornings equal.
      const passedTwo = now >= nextLocalMidnight(this.#nextMidnight);
      this.#yesterdayMorning = passedTwo ? { ...this.#t } : this.#todayMorning;
      this.#todayMorning = { ...this.#t };
      this.#nextMidnight = nextLocalMidnight(now);
    }
    const sec = Math.floor(now / 1000);
    const last = this.#samples.at(-1);
    if (last && sec <= last.sec) return;
    this.#samples.push({ sec, ...this.#t });
    while (this.#samples.length > 0 && this.#samples[0]!.sec < sec - RATE_WINDOW_MAX_S - 1) this.#samples.shift();
  }

  /** Totals as they stood at the start of second `sec` (sec ≤ the current second). */
  #totalsAt(sec: number): Totals {
    for (const s of this.#samples) if (s.sec >= sec) return s;
    return this.#t;
  }

  /** Rate over the last `windowS` whole seconds (fewer right after boot; 0 in the first second). */
  #rate(now: number, windowS: number, pick: (t: Totals) => number): number {
    const end = Math.floor(now / 1000);
    const start = Math.max(end - windowS, Math.floor(this.#boot / 1000));
    if (end <= start) return 0;
    return (pick(this.#totalsAt(end)) - pick(this.#totalsAt(start))) / (end - start);
  }
}
