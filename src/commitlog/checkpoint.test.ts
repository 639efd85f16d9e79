import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHECKPOINT_SIZE, decodeCheckpoint, encodeCheckpoint, readCheckpoint, writeCheckpoint } from "./checkpoint.ts";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const cp = { commitLogFlushedOffset: 2 ** 40 + 5, dispatchedOffset: 1234, indexCheckpointTimestamp: 1_700_000_000_000, writtenAt: 1_700_000_000_123 };

test("field widths sum to CHECKPOINT_SIZE", () => {
  expect(4 + 4 + 8 + 8 + 8 + 8 + 4).toBe(CHECKPOINT_SIZE);
});

test("golden bytes", () => {
  const b = encodeCheckpoint(cp);
  const hex = Buffer.from(b).toString("hex");
  expect(hex.slice(0, 16)).toBe("5242435000000001");
  expect(hex.slice(16, 32)).toBe("0000010000000005");
  expect(hex.slice(32, 48)).toBe("00000000000004d2");
  expect(hex.slice(80, 88)).toBe((Bun.hash.crc32(b.subarray(0, 40)) >>> 0).toString(16).padStart(8, "0"));
});

test("round trip; any flipped byte or wrong size is invalid", () => {
  const b = encodeCheckpoint(cp);
  expect(decodeCheckpoint(b)).toEqual(cp);
  for (let i = 0; i < b.length; i++) {
    const x = b.slice();
    x[i]! ^= 0x40;
    expect(decodeCheckpoint(x)).toHaveProperty("invalid");
  }
  expect(decodeCheckpoint(b.subarray(0, 20))).toHaveProperty("invalid");
});

test("atomic file: write, read back; missing → null; garbage → invalid", () => {
  const d = mkdtempSync(join(tmpdir(), "cp-"));
  dirs.push(d);
  const p = join(d, "checkpoint");
  expect(readCheckpoint(p)).toBeNull();
  writeCheckpoint(p, cp);
  expect(readCheckpoint(p)).toEqual(cp);
  writeFileSync(p, "garbage");
  expect(readCheckpoint(p)).toHaveProperty("invalid");
});
