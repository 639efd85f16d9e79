/**
 * The real disk's segment files (./disk.ts): a file closed while an fdatasync of it is queued on
 * the thread pool (retention deleting a segment the flush service is syncing; found by the soak)
 * finishes that sync, and closes after it.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { nodeDisk } from "./disk.ts";
import { tempStoreDir } from "./test-support.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("segment files closed while being synced", () => {
  test("close() right after sync(): the sync succeeds (no EBADF), every time", async () => {
    const dir = tempStoreDir("disk-close-");
    dirs.push(dir);
    const results: (Error | null)[] = [];
    for (let i = 0; i < 20; i++) {
      const f = nodeDisk.createSegment(join(dir, `seg-${i}`), 64 * 1024);
      f.pwrite(new Uint8Array(4096).fill(i), 0);
      const done = new Promise<Error | null>((resolve) => f.sync(resolve));
      f.close();
      results.push(await done);
    }
    expect(results.map((e) => e?.message ?? null)).toEqual(Array(20).fill(null));
  });
});
