import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appendEpoch, consistentPoint, readEpochs, writeEpochs } from "./replica-files.ts";

const dir = mkdtempSync(join(tmpdir(), "rb-epochs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the epoch file grows by epoch, refuses to go back, and refuses damage with its line", () => {
  expect(readEpochs(dir)).toEqual([]);
  appendEpoch(dir, { epoch: 1, startOffset: 0 });
  appendEpoch(dir, { epoch: 1, startOffset: 0 }); // the same epoch again: nothing to add
  appendEpoch(dir, { epoch: 3, startOffset: 500 });
  expect(readEpochs(dir)).toEqual([{ epoch: 1, startOffset: 0 }, { epoch: 3, startOffset: 500 }]);
  expect(() => appendEpoch(dir, { epoch: 2, startOffset: 600 })).toThrow("cannot follow epoch 3");
  writeEpochs(dir, [{ epoch: 1, startOffset: 0 }]);
  expect(readEpochs(dir)).toEqual([{ epoch: 1, startOffset: 0 }]);
  writeFileSync(join(dir, "epochs"), "1 0\n2 x\n");
  expect(() => readEpochs(dir)).toThrow(":2: expected");
  writeFileSync(join(dir, "epochs"), "2 100\n1 200\n");
  expect(() => readEpochs(dir)).toThrow("does not follow epoch 2");
});

test("consistent point: the newest shared epoch ends at the earlier of its two ends", () => {
  const e = (epoch: number, startOffset: number) => ({ epoch, startOffset });
  // The old master wrote 100 bytes of epoch 1 the new master (elected at 800) never got.
  expect(consistentPoint([e(1, 0)], 900, [e(1, 0), e(2, 800)], 1500)).toBe(800);
  // A replica that was behind: nothing to cut.
  expect(consistentPoint([e(1, 0)], 700, [e(1, 0), e(2, 800)], 1500)).toBe(700);
  // Both went through epoch 2; the replica had taken epoch 3 (from a master that died) the new master never saw.
  expect(consistentPoint([e(1, 0), e(2, 800), e(3, 1200)], 1400, [e(1, 0), e(2, 800), e(4, 1100)], 2000)).toBe(1100);
  // The same epoch number with another start is not the same epoch.
  expect(consistentPoint([e(1, 0), e(2, 900)], 1000, [e(1, 0), e(2, 800)], 1500)).toBe(800);
  // No epoch in common: data before the master's first epoch is shared.
  expect(consistentPoint([], 400, [e(1, 300)], 900)).toBe(300);
  expect(consistentPoint([], 200, [e(1, 300)], 900)).toBe(200);
  expect(consistentPoint([], 0, [e(1, 0)], 900)).toBe(0);
});
