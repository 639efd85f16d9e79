import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MappedFile, offsetToFileName } from "./mapped-file.ts";

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function fileWith(bytes: number): MappedFile {
  dir = mkdtempSync(join(tmpdir(), "mapped-file-"));
  const f = MappedFile.create(join(dir, offsetToFileName(0)), 64 * 1024);
  const r = f.reserve(bytes, 4096);
  r.buf.fill(7, r.at, r.at + bytes);
  return f;
}

test("a cut while an async flush is on the thread pool: the flush does not count the bytes written after the cut as durable", async () => {
  const f = fileWith(3000);
  const flushing = f.flushAsync();
  // A replica's cut (MessageStore.truncateTail) lands while the fdatasync runs.
  f.truncateTo(1000);
  expect(f.flushedPosition).toBeLessThanOrEqual(1000);
  // New bytes below the old flush target, never synced.
  const r = f.reserve(1500, 4096);
  r.buf.fill(9, r.at, r.at + 1500);
  f.commit();
  await flushing;
  expect(f.flushedPosition).toBeLessThanOrEqual(1000);
  expect(f.flushedPosition).toBeLessThanOrEqual(f.wrotePosition);
  expect(f.isAbleToFlush(0)).toBe(true);
  f.close();
});

test("an async flush that nothing interrupted makes what it synced durable", async () => {
  const f = fileWith(3000);
  expect(await f.flushAsync()).toBe(3000);
  expect(f.flushedPosition).toBe(3000);
  f.close();
});
