/**
 * RocketMQ's `messageDelayLevel` (docs/STORAGE.md §6): whitespace-separated durations, one per
 * delay level, level 1 first. Level n parks its messages in queue n − 1 of SCHEDULE_TOPIC_XXXX.
 *
 *   "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"   (the default, 18 levels)
 *    └ level 1 = 1000 ms                                    └ level 18 = 7200000 ms
 *
 * A duration is a positive integer followed by its unit: s, m, h, d as in RocketMQ, plus `ms`
 * (an extension: Java would read "100ms" as the number "100m" and fail), e.g. "100ms 1s".
 *
 * Limits (input is validated into levels or a reason, never asserted):
 *   - 1..DELAY_LEVELS_MAX levels: queue 18 of SCHEDULE_TOPIC_XXXX is the timer queue (arbitrary
 *     delivery times, see schedule-message-service.ts), so a 19th level would collide with it.
 *   - each duration 1 ms..DELAY_LEVEL_MAX_MS, so every due time stays an exact integer.
 *
 * The one parser of the setting: config/schema.ts validates `broker.messageDelayLevel` with it and
 * the broker's schedule service runs on what it returns.
 */

export const DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

/** Levels use queues 0..17; queue 18 is the timer queue. */
export const DELAY_LEVELS_MAX = 18;

/** 365 days: far beyond any sensible level, and due times stay exact integers. */
export const DELAY_LEVEL_MAX_MS = 365 * 24 * 3_600_000;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

const TOKEN = /^([0-9]{1,12})(ms|s|m|h|d)$/;

/** Delay in ms of each level (index 0 = level 1), or the reason the text is not a level list. */
export function parseDelayLevels(text: string): number[] | { invalid: string } {
  const tokens = text.split(/\s+/).filter((t) => t !== "");
  if (tokens.length === 0) return { invalid: 'no delay levels: expected durations like "1s 5s 10s"' };
  if (tokens.length > DELAY_LEVELS_MAX) {
    return { invalid: `${tokens.length} delay levels, at most ${DELAY_LEVELS_MAX} (queue ${DELAY_LEVELS_MAX} is the timer queue)` };
  }
  const out: number[] = [];
  for (const [i, t] of tokens.entries()) {
    const m = TOKEN.exec(t);
    if (!m) return { invalid: `level ${i + 1}: ${JSON.stringify(t)} is not a duration (a positive integer + ms, s, m, h or d)` };
    const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
    if (ms < 1 || ms > DELAY_LEVEL_MAX_MS) return { invalid: `level ${i + 1}: ${JSON.stringify(t)} must be between 1ms and 365d` };
    out.push(ms);
  }
  return out;
}

/**
 * The DELAY property as a level: Java's Integer.parseInt (optional sign, decimal digits), else 0.
 * 0 or less means "not delayed".
 */
export function parseDelayLevelProperty(value: string | undefined): number {
  if (value === undefined || !/^[+-]?[0-9]{1,10}$/.test(value)) return 0;
  const n = Number(value);
  return n > 0x7fffffff ? 0 : n;
}
