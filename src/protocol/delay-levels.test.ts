import { describe, expect, test } from "bun:test";
import { DEFAULT_MESSAGE_DELAY_LEVEL, DELAY_LEVEL_MAX_MS, DELAY_LEVELS_MAX, parseDelayLevelProperty, parseDelayLevels } from "./delay-levels.ts";

const S = 1000;
const M = 60 * S;
const H = 60 * M;

describe("parseDelayLevels", () => {
  test("RocketMQ's default: 18 levels, 1s … 2h", () => {
    expect(parseDelayLevels(DEFAULT_MESSAGE_DELAY_LEVEL)).toEqual([
      1 * S,
      5 * S,
      10 * S,
      30 * S,
      1 * M,
      2 * M,
      3 * M,
      4 * M,
      5 * M,
      6 * M,
      7 * M,
      8 * M,
      9 * M,
      10 * M,
      20 * M,
      30 * M,
      1 * H,
      2 * H,
    ]);
  });

  test("units s m h d, and ms as an extension; any whitespace separates", () => {
    expect(parseDelayLevels("100ms 1s 2m 3h 1d")).toEqual([100, 1000, 120_000, 3 * H, 24 * H]);
    expect(parseDelayLevels("  1s\t\t5s\n10s ")).toEqual([1000, 5000, 10_000]);
    expect(parseDelayLevels("365d")).toEqual([DELAY_LEVEL_MAX_MS]);
  });

  test("invalid text → a reason naming the level", () => {
    const cases: [string, string][] = [
      ["", "no delay levels"],
      ["   ", "no delay levels"],
      ["1s 5x", 'level 2: "5x" is not a duration'],
      ["1s s", 'level 2: "s" is not a duration'],
      ["1.5s", 'level 1: "1.5s" is not a duration'],
      ["-1s", 'level 1: "-1s" is not a duration'],
      ["1S", 'level 1: "1S" is not a duration'],
      ["0s", 'level 1: "0s" must be between 1ms and 365d'],
      ["366d", 'level 1: "366d" must be between 1ms and 365d'],
      ["1s 1234567890123s", 'level 2: "1234567890123s" is not a duration'],
      [Array(19).fill("1s").join(" "), `19 delay levels, at most ${DELAY_LEVELS_MAX}`],
    ];
    for (const [text, reason] of cases) {
      const r = parseDelayLevels(text);
      expect({ text, r: "invalid" in r ? r.invalid : r }).toEqual({ text, r: expect.stringContaining(reason) });
    }
  });
});

describe("parseDelayLevelProperty (the DELAY property)", () => {
  test("Java Integer.parseInt forms; anything else is 0 (not delayed)", () => {
    const cases: [string | undefined, number][] = [
      [undefined, 0],
      ["3", 3],
      ["+3", 3],
      ["007", 7],
      ["0", 0],
      ["-2", -2],
      ["99", 99],
      ["2147483647", 2147483647],
      ["2147483648", 0],
      ["", 0],
      ["1.5", 0],
      ["null", 0],
      [" 3", 0],
    ];
    for (const [v, n] of cases) expect({ v, n: parseDelayLevelProperty(v) }).toEqual({ v, n });
  });
});
