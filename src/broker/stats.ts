/**
 * BrokerStats: message put/get counters since boot, per-second rates over the last 10, 60 and
 * 600 seconds, and the totals at local midnight today and yesterday — what RocketMQ's
 * StoreStatsService and BrokerStats report in GET_BROKER_RUNTIME_INFO (docs/PROTOCOL.md §3.15) and
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
 *
 * Per topic and group (RocketMQ's BrokerStatsManager items, read by VIEW_BROKER_STATS_DATA and the
 * consume TPS of GET_CONSUME_STATS): the optional `topic`/`group` arguments of the record calls
 * count into named items (StatsName below) keyed "topic" or "topic@group"; recordSendBack counts
 * CONSUMER_SEND_MSG_BACK. One map lookup per request, never per message. Each item keeps Java
 * StatsItem's sample lists (every 10 s for the last minute, every 10 min for the last hour,
 * every hour for the last day), taken lazily on the first call after each period, and answers
 * {sum, tps, avgpt} over each list as Java's computeStatsData does, with the current totals as
 * the newest sample (BrokerStatsData, the shape VIEW_BROKER_STATS_DATA answers with).
 */
import type { BrokerStatsData, BrokerStatsItem } from "../protocol/admin-bodies.ts";

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
  /** Per topic / topic@group items (StatsName). */
  readonly items: KeyedStats;

  constructor(opts: { now?: () => number } = {}) {
    this.#now = opts.now ?? Date.now;
    this.#boot = this.#now();
    this.#nextMidnight = nextLocalMidnight(this.#boot);
    this.items = new KeyedStats(this.#now);
  }

  /** `n` messages of `bytes` body bytes stored (into `topic`, when the caller names it). */
  recordPut(n: number, bytes: number, topic?: string): void {
    const now = this.#now();
    this.#roll(now);
    this.#t.put += Math.max(0, n);
    this.#t.putBytes += Math.max(0, bytes);
    if (topic !== undefined && n > 0) {
      this.items.add(StatsName.TOPIC_PUT_NUMS, topic, n, 1, now);
      this.items.add(StatsName.TOPIC_PUT_SIZE, topic, Math.max(0, bytes), 1, now);
      this.items.add(StatsName.BROKER_PUT_NUMS, "", n, 1, now);
    }
  }

  /** A pull answered with `n` messages (0 = a miss) of `bytes`, for `group` on `topic` when named. */
  recordGet(n: number, bytes: number, topic?: string, group?: string): void {
    const now = this.#now();
    this.#roll(now);
    if (n > 0) {
      this.#t.getFound++;
      this.#t.getTransferred += n;
      this.#t.getBytes += Math.max(0, bytes);
      if (topic !== undefined && group !== undefined) {
        const key = `${topic}@${group}`;
        this.items.add(StatsName.GROUP_GET_NUMS, key, n, 1, now);
        this.items.add(StatsName.GROUP_GET_SIZE, key, Math.max(0, bytes), 1, now);
        this.items.add(StatsName.BROKER_GET_NUMS, "", n, 1, now);
      }
    } else {
      this.#t.getMiss++;
    }
  }

  /** A CONSUMER_SEND_MSG_BACK of `group` for a message of `topic` (Java incSendBackNums). */
  recordSendBack(topic: string, group: string): void {
    this.items.add(StatsName.SNDBCK_PUT_NUMS, `${topic}@${group}`, 1, 1, this.#now());
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

/** The stats names of RocketMQ's BrokerStatsManager that this broker keeps (VIEW_BROKER_STATS_DATA statsName). */
export const StatsName = {
  TOPIC_PUT_NUMS: "TOPIC_PUT_NUMS",
  TOPIC_PUT_SIZE: "TOPIC_PUT_SIZE",
  GROUP_GET_NUMS: "GROUP_GET_NUMS",
  GROUP_GET_SIZE: "GROUP_GET_SIZE",
  SNDBCK_PUT_NUMS: "SNDBCK_PUT_NUMS",
  BROKER_PUT_NUMS: "BROKER_PUT_NUMS",
  BROKER_GET_NUMS: "BROKER_GET_NUMS",
} as const;
export type StatsName = (typeof StatsName)[keyof typeof StatsName];

interface CallSnapshot {
  at: number;
  times: number;
  value: number;
}

/** [sample period ms, samples kept] per window, as Java StatsItem samples them. */
const ITEM_WINDOWS: readonly (readonly [number, number])[] = [
  [10_000, 7],
  [600_000, 7],
  [3_600_000, 25],
];

/** One counter (value and number of adds) with its three sample lists. */
class StatsItem {
  value = 0;
  times = 0;
  readonly #lists: CallSnapshot[][];
  readonly #next: number[];

  constructor(now: number) {
    // Java seeds each list with a zero one period back, so the first minute already has a rate.
    this.#lists = ITEM_WINDOWS.map(([period]) => [{ at: now - period, times: 0, value: 0 }]);
    this.#next = ITEM_WINDOWS.map(() => now);
  }

  add(value: number, times: number, now: number): void {
    this.roll(now);
    this.value += value;
    this.times += times;
  }

  roll(now: number): void {
    for (let i = 0; i < ITEM_WINDOWS.length; i++) {
      if (now < this.#next[i]!) continue;
      const [period, keep] = ITEM_WINDOWS[i]!;
      const list = this.#lists[i]!;
      list.push({ at: now, times: this.times, value: this.value });
      if (list.length > keep) list.shift();
      this.#next[i] = now + period;
    }
  }

  view(now: number): BrokerStatsData {
    this.roll(now);
    const cur: CallSnapshot = { at: now, times: this.times, value: this.value };
    const w = (i: number): BrokerStatsItem => {
      const first = this.#lists[i]![0]!;
      const sum = cur.value - first.value;
      const span = cur.at - first.at;
      const timesDiff = cur.times - first.times;
      return { sum, tps: span > 0 ? (sum * 1000) / span : 0, avgpt: timesDiff > 0 ? sum / timesDiff : 0 };
    };
    return { statsMinute: w(0), statsHour: w(1), statsDay: w(2) };
  }
}

/**
 * The named, keyed items (Java StatsItemSet per name). Items are created on first record and
 * live as long as the broker (Java drops idle ones after a while; topics and groups are few).
 */
export class KeyedStats {
  readonly #now: () => number;
  readonly #sets = new Map<StatsName, Map<string, StatsItem>>();

  constructor(now: () => number) {
    this.#now = now;
  }

  /** `now` is the caller's clock reading: the send and pull paths read the clock once per request. */
  add(name: StatsName, key: string, value: number, times: number, now: number): void {
    let set = this.#sets.get(name);
    if (!set) this.#sets.set(name, (set = new Map()));
    let item = set.get(key);
    if (!item) set.set(key, (item = new StatsItem(now)));
    item.add(value, times, now);
  }

  /** The item's windows, or undefined when nothing was ever recorded under it. */
  view(name: StatsName, key: string): BrokerStatsData | undefined {
    return this.#sets.get(name)?.get(key)?.view(this.#now());
  }

  /** Each item of `name`: its key, its total since boot and its last minute (the metrics scrape). */
  forEach(name: StatsName, visit: (key: string, total: number, minute: BrokerStatsItem) => void): void {
    const set = this.#sets.get(name);
    if (!set) return;
    const now = this.#now();
    for (const [key, item] of set) visit(key, item.value, item.view(now).statsMinute);
  }

  /** Messages per second over the last minute (Java tpsGroupGetNums and friends); 0 if unknown. */
  minuteTps(name: StatsName, key: string): number {
    return this.view(name, key)?.statsMinute.tps ?? 0;
  }
}
