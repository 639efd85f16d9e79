import { expect, test } from "bun:test";
import { Progress } from "./progress.ts";

function run(tty: boolean, ticksAt: number[]): string[] {
  let now = 0;
  const written: string[] = [];
  const p = new Progress("statsAll", ticksAt.length, { tty, now: () => now, write: (t) => written.push(t) });
  for (const at of ticksAt) {
    now = at;
    p.tick();
  }
  p.end();
  return written;
}

test("work that ends within the first second prints no progress", () => {
  expect(run(false, [10, 200, 900])).toEqual([]);
  expect(run(true, [10, 200, 900])).toEqual([]);
});

test("a log gets a plain line at most every two seconds", () => {
  expect(run(false, [500, 1000, 1500, 2500, 3100, 3200, 5200])).toEqual(["statsAll: 2/7 (29%)\n", "statsAll: 5/7 (71%)\n", "statsAll: 7/7 (100%)\n"]);
});

test("a terminal gets one line rewritten in place, cleared at the end", () => {
  expect(run(true, [1000, 1050, 1200])).toEqual(["\rstatsAll: 1/3 (33%)\x1b[K", "\rstatsAll: 3/3 (100%)\x1b[K", "\r\x1b[K"]);
});
