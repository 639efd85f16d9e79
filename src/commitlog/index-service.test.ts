import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AssertionError } from "../common/assert.ts";
import { nodeDisk, type SegmentFile, type StoreDisk } from "./disk.ts";
import { INDEX_NUM_DEFAULT, INDEX_SLOT_NUM_DEFAULT, IndexFile, indexFileSizeBytes } from "./index-file.ts";
import { type IndexDispatch, IndexService, indexFileName } from "./index-service.ts";

const T0 = 1_700_000_000_000;
const ALL = Number.MAX_SAFE_INTEGER;

let root: string;
let dir: string;
let open: IndexService[];
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "rocketbun-indexservice-"));
  dir = join(root, "index");
  open = [];
});
afterEach(() => {
  for (const s of open) {
    try {
      s.close();
    } catch {
      // A test that broke the service on purpose; the directory goes anyway.
    }
  }
  rmSync(root, { recursive: true, force: true });
});

/** A loaded service with tiny files; `now` is fixed so file names collide unless bumped. */
function service(opts: { slotNum?: number; indexNum?: number; now?: () => number; checkpoint?: number } = {}): {
  svc: IndexService;
  problems: string[];
} {
  const svc = new IndexService({ dir, slotNum: opts.slotNum ?? 64, indexNum: opts.indexNum ?? 256, now: opts.now ?? (() => T0) });
  open.push(svc);
  const problems = svc.load(opts.checkpoint);
  return { svc, problems };
}

function rec(phyOffset: number, fields: Partial<IndexDispatch> = {}): IndexDispatch {
  return { topic: "TopicA", keys: undefined, uniqKey: undefined, phyOffset, storeTimestamp: T0 + phyOffset, sysFlag: 0, ...fields };
}

describe("IndexService", () => {
  test("defaults are RocketMQ's", () => {
    const svc = new IndexService({ dir });
    expect([svc.slotNum, svc.indexNum]).toEqual([INDEX_SLOT_NUM_DEFAULT, INDEX_NUM_DEFAULT]);
    expect(() => new IndexService({ dir, slotNum: 0 })).toThrow(AssertionError);
  });

  test("file names are yyyyMMddHHmmssSSS in local time", () => {
    expect(indexFileName(new Date(2024, 0, 2, 3, 4, 5, 6).getTime())).toBe("20240102030405006");
    expect(indexFileName(new Date(1999, 11, 31, 23, 59, 59, 999).getTime())).toBe("19991231235959999");
  });

  test("indexes UNIQ_KEY and every KEYS token, scoped by topic", () => {
    const { svc, problems } = service();
    expect(problems).toEqual([]);
    expect(existsSync(dir)).toBe(true);
    svc.buildIndex(rec(100, { uniqKey: "U1", keys: "order-1  order-2 " }));
    svc.buildIndex(rec(200, { uniqKey: "U2", keys: "order-1" }));
    svc.buildIndex(rec(300, { topic: "TopicB", keys: "order-1" }));
    expect(svc.queryOffset("TopicA", "U1", 32, 0, ALL).phyOffsets).toEqual([100]);
    expect(svc.queryOffset("TopicA", "order-2", 32, 0, ALL).phyOffsets).toEqual([100]);
    expect(svc.queryOffset("TopicA", "order-1", 32, 0, ALL).phyOffsets).toEqual([200, 100]);
    expect(svc.queryOffset("TopicB", "order-1", 32, 0, ALL).phyOffsets).toEqual([300]);
    expect(svc.queryOffset("TopicA", "", 32, 0, ALL).phyOffsets).toEqual([]);
    const r = svc.queryOffset("TopicA", "nope", 32, 0, ALL);
    expect(r).toEqual({ phyOffsets: [], indexLastUpdateTimestamp: T0 + 300, indexLastUpdatePhyoffset: 300 });
    expect(svc.maxPhyOffsetIndexed()).toBe(300);
  });

  test("a key repeated in one record is indexed once", () => {
    const { svc } = service();
    svc.buildIndex(rec(100, { uniqKey: "k", keys: "k k" }));
    expect(svc.queryOffset("TopicA", "k", 32, 0, ALL).phyOffsets).toEqual([100]);
  });

  test("a record without keys creates no file", () => {
    const { svc } = service();
    svc.buildIndex(rec(100));
    svc.buildIndex(rec(200, { keys: "  " }));
    expect(readdirSync(dir)).toEqual([]);
  });

  test("prepared and rolled-back transaction records are not indexed; committed ones are", () => {
    const { svc } = service();
    svc.buildIndex(rec(100, { keys: "k", sysFlag: 0x4 })); // prepared
    svc.buildIndex(rec(200, { keys: "k", sysFlag: 0xc | 0x1 })); // rolled back (compressed bit set too)
    svc.buildIndex(rec(300, { keys: "k", sysFlag: 0x8 })); // committed
    svc.buildIndex(rec(400, { keys: "k", sysFlag: 0x1 })); // normal, compressed
    expect(svc.queryOffset("TopicA", "k", 32, 0, ALL).phyOffsets).toEqual([400, 300]);
  });

  test("re-dispatching already indexed records: each offset is returned once", () => {
    const { svc } = service();
    for (const off of [100, 200, 300]) svc.buildIndex(rec(off, { keys: "k" }));
    for (const off of [100, 200, 300]) svc.buildIndex(rec(off, { keys: "k" }));
    // The newest record (== endPhyOffset) is indexed again, as in RocketMQ; the query answers it once.
    expect(svc.queryOffset("TopicA", "k", 32, 0, ALL).phyOffsets).toEqual([300, 200, 100]);
  });

  test("rolls to a new file when full; queries run across files, newest first; maxNum", () => {
    // indexNum 4 → 3 keys per file; the clock never moves, so names must be bumped to stay unique.
    const { svc } = service({ indexNum: 4 });
    for (let i = 1; i <= 10; i++) svc.buildIndex(rec(i * 100, { keys: "k" }));
    const names = svc.fileNames();
    expect(names.length).toBe(4);
    expect(readdirSync(dir).sort()).toEqual(names);
    expect([...names].sort()).toEqual(names);
    expect(new Set(names).size).toBe(4);
    for (const n of names) expect(n).toMatch(/^\d{17}$/);
    expect(names[0]).toBe(indexFileName(T0));
    expect(svc.queryOffset("TopicA", "k", 32, 0, ALL).phyOffsets).toEqual([1000, 900, 800, 700, 600, 500, 400, 300, 200, 100]);
    expect(svc.queryOffset("TopicA", "k", 4, 0, ALL).phyOffsets).toEqual([1000, 900, 800, 700]);
    // A record whose keys straddle two files.
    svc.buildIndex(rec(1100, { uniqKey: "u", keys: "a b" }));
    expect(svc.fileNames().length).toBe(5);
    for (const k of ["u", "a", "b"]) expect(svc.queryOffset("TopicA", k, 32, 0, ALL).phyOffsets).toEqual([1100]);
  });

  test("time range across files", () => {
    const { svc } = service({ indexNum: 4 });
    // Store times 1 s apart: T0+1000 .. T0+9000, three per file.
    for (let i = 1; i <= 9; i++) svc.buildIndex(rec(i * 100, { keys: "k", storeTimestamp: T0 + i * 1000 }));
    expect(svc.queryOffset("TopicA", "k", 32, T0 + 3000, T0 + 7000).phyOffsets).toEqual([700, 600, 500, 400, 300]);
    expect(svc.queryOffset("TopicA", "k", 32, T0 + 8500, ALL).phyOffsets).toEqual([900]);
    expect(svc.queryOffset("TopicA", "k", 32, 0, T0 + 1000).phyOffsets).toEqual([100]);
  });

  test("reopen after close finds everything", () => {
    const { svc } = service({ indexNum: 8 });
    for (let i = 1; i <= 30; i++) svc.buildIndex(rec(i * 100, { keys: `k${i % 3}`, uniqKey: `U${i}` }));
    const before = [0, 1, 2].map((k) => svc.queryOffset("TopicA", `k${k}`, 64, 0, ALL));
    const names = svc.fileNames();
    svc.flush();
    svc.close();

    const { svc: again, problems } = service({ indexNum: 8 });
    expect(problems).toEqual([]);
    expect(again.fileNames()).toEqual(names);
    expect([0, 1, 2].map((k) => again.queryOffset("TopicA", `k${k}`, 64, 0, ALL))).toEqual(before);
    expect(again.queryOffset("TopicA", "U17", 64, 0, ALL).phyOffsets).toEqual([1700]);
    expect(again.maxPhyOffsetIndexed()).toBe(3000);
    // It continues in the newest file, or a new one with a name after all the old ones.
    again.buildIndex(rec(3100, { keys: "k0" }));
    expect(again.queryOffset("TopicA", "k0", 1, 0, ALL).phyOffsets).toEqual([3100]);
  });

  test("load reports and handles bad directory entries", () => {
    const { svc } = service({ indexNum: 8 });
    for (let i = 1; i <= 10; i++) svc.buildIndex(rec(i * 100, { keys: "k" }));
    svc.close();
    const [good] = readdirSync(dir).sort();
    writeFileSync(join(dir, "README"), "not an index file");
    writeFileSync(join(dir, "20000101000000000"), new Uint8Array(10)); // torn create
    writeFileSync(join(dir, "20000101000000001"), new Uint8Array(0)); // empty: Bun cannot map it
    mkdirSync(join(dir, "20000101000000002")); // cannot be opened as a file
    const bad = new Uint8Array(indexFileSizeBytes({ slotNum: 64, indexNum: 8 })); // indexCount 0
    writeFileSync(join(dir, "20000101000000003"), bad);

    const { svc: again, problems } = service({ indexNum: 8 });
    expect(problems.length).toBe(5);
    expect(problems).toContain("README: not an index file name; ignored");
    expect(problems.find((p) => p.startsWith("20000101000000000:"))).toMatch(/size 10 bytes.*; deleted$/);
    expect(problems.find((p) => p.startsWith("20000101000000001:"))).toMatch(/size 0 bytes.*; deleted$/);
    expect(problems.find((p) => p.startsWith("20000101000000002:"))).toMatch(/cannot open.*; skipped$/);
    expect(problems.find((p) => p.startsWith("20000101000000003:"))).toMatch(/indexCount 0 .*; deleted$/);
    expect(readdirSync(dir).sort()).toEqual(["20000101000000002", good!, ...again.fileNames().slice(1), "README"].sort());
    expect(again.queryOffset("TopicA", "k", 32, 0, ALL).phyOffsets.length).toBe(10);
  });

  test("after an unclean shutdown, files newer than the index checkpoint are deleted", () => {
    const { svc } = service({ indexNum: 4 });
    // Files: [T0+100..T0+300], [T0+400..T0+600], [T0+700..T0+800].
    for (let i = 1; i <= 8; i++) svc.buildIndex(rec(i * 100, { keys: "k" }));
    svc.close();
    const { svc: again, problems } = service({ indexNum: 4, checkpoint: T0 + 600 });
    expect(problems.length).toBe(1);
    expect(problems[0]).toMatch(/endTimestamp 1700000000800 is after the checkpoint's index timestamp 1700000000600.*; deleted$/);
    expect(again.fileNames().length).toBe(2);
    expect(readdirSync(dir).length).toBe(2);
    expect(again.maxPhyOffsetIndexed()).toBe(600);
    // Recovery re-dispatches from the checkpoint; records below 600 are skipped, later ones indexed.
    for (let i = 5; i <= 8; i++) again.buildIndex(rec(i * 100, { keys: "k" }));
    expect(again.queryOffset("TopicA", "k", 32, 0, ALL).phyOffsets).toEqual([800, 700, 600, 500, 400, 300, 200, 100]);
  });

  test("deleteExpiredFiles deletes whole files below the CommitLog's min offset, never the newest", () => {
    const { svc } = service({ indexNum: 4 });
    for (let i = 1; i <= 9; i++) svc.buildIndex(rec(i * 100, { keys: "k" }));
    // Files end at 300, 600, 900.
    expect(svc.deleteExpiredFiles(300)).toBe(0);
    expect(svc.deleteExpiredFiles(301)).toBe(1);
    expect(readdirSync(dir).length).toBe(2);
    expect(svc.queryOffset("TopicA", "k", 32, 0, ALL).phyOffsets).toEqual([900, 800, 700, 600, 500, 400]);
    expect(svc.deleteExpiredFiles(10_000)).toBe(1);
    expect(svc.fileNames().length).toBe(1);
    expect(readdirSync(dir)).toEqual(svc.fileNames());
    expect(svc.queryOffset("TopicA", "k", 32, 0, ALL).phyOffsets).toEqual([900, 800, 700]);
    svc.buildIndex(rec(1000, { keys: "k" }));
    expect(svc.queryOffset("TopicA", "k", 1, 0, ALL).phyOffsets).toEqual([1000]);
  });

  test("dropFilesAbove deletes files past a recovery cut and lets re-dispatch index again", () => {
    const { svc } = service({ indexNum: 4 });
    for (let i = 1; i <= 9; i++) svc.buildIndex(rec(i * 100, { keys: "k" }));
    // CommitLog recovered to 450: the file beginning at 700 goes, the one spanning 400..600 stays.
    expect(svc.dropFilesAbove(450)).toBe(1);
    expect(svc.fileNames().length).toBe(2);
    expect(readdirSync(dir).length).toBe(2);
    expect(svc.maxPhyOffsetIndexed()).toBe(450);
    // New records at offsets the dropped ones used are indexed, not skipped as already seen.
    svc.buildIndex(rec(450, { keys: "k", storeTimestamp: T0 + 10_000 }));
    svc.buildIndex(rec(550, { keys: "new", storeTimestamp: T0 + 11_000 }));
    expect(svc.queryOffset("TopicA", "new", 32, 0, ALL).phyOffsets).toEqual([550]);
    // 500 and 600 are stale entries above the cut: the caller's CommitLog check discards them.
    expect(svc.queryOffset("TopicA", "k", 32, 0, ALL).phyOffsets).toEqual([450, 600, 500, 400, 300, 200, 100]);
    // The lowered end is persisted.
    svc.close();
    const { svc: again } = service({ indexNum: 4 });
    expect(again.maxPhyOffsetIndexed()).toBe(550);
    expect(again.fileNames().length).toBe(3);
    expect(again.dropFilesAbove(0)).toBe(3); // every file begins above 0
    expect(again.fileNames()).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);
    expect(again.maxPhyOffsetIndexed()).toBe(0);
  });

  test("flush returns the end of the newest finished file (the index checkpoint)", () => {
    const { svc } = service({ indexNum: 4 });
    expect(svc.flush()).toBe(0);
    for (let i = 1; i <= 2; i++) svc.buildIndex(rec(i * 100, { keys: "k" }));
    expect(svc.flush()).toBe(0); // the only file is still being written
    svc.buildIndex(rec(300, { keys: "k" }));
    expect(svc.flush()).toBe(T0 + 300); // full
    svc.buildIndex(rec(400, { keys: "k" }));
    expect(svc.flush()).toBe(T0 + 300); // a new file is being written
  });

  test("the periodic flushAsync syncs finished files once and leaves the file being written alone", async () => {
    // The file still taking puts is deleted after an unclean shutdown whatever was synced, so an
    // fsync of it buys nothing and write-protects its hash slots (a fault per put afterwards).
    const syncs: string[] = [];
    const counting = (f: SegmentFile, path: string): SegmentFile => ({
      size: f.size,
      map: () => f.map(),
      pwrite: (d, p) => f.pwrite(d, p),
      syncSync: () => (syncs.push(path), f.syncSync()),
      sync: (done) => (syncs.push(path), f.sync(done)),
      close: () => f.close(),
    });
    const disk: StoreDisk = {
      ...nodeDisk,
      createSegment: (path, size) => counting(nodeDisk.createSegment(path, size), path),
      openSegment: (path) => counting(nodeDisk.openSegment(path), path),
    };
    const svc = new IndexService({ dir, slotNum: 64, indexNum: 4, now: () => T0, disk });
    open.push(svc);
    svc.load();
    for (let i = 1; i <= 2; i++) svc.buildIndex(rec(i * 100, { keys: "k" }));
    expect(await svc.flushAsync()).toBe(0);
    expect(syncs).toEqual([]);
    svc.buildIndex(rec(300, { keys: "k" })); // full now: synced, once
    expect(await svc.flushAsync()).toBe(T0 + 300);
    svc.buildIndex(rec(400, { keys: "k" })); // rolls to a second file
    expect(await svc.flushAsync()).toBe(T0 + 300);
    const [first, second] = svc.fileNames().map((n) => join(dir, n));
    expect(syncs).toEqual([first!]);
    // A clean stop still makes the file being written durable.
    svc.flush();
    expect(syncs).toEqual([first!, second!]);
  });

  test("a roll syncs the directory off the event loop; the next checkpoint flush waits for it, a stop's flush syncs it itself", async () => {
    const calls: string[] = [];
    let release = () => {};
    const disk: StoreDisk = {
      ...nodeDisk,
      syncDir: (d) => (calls.push(`sync ${d}`), nodeDisk.syncDir(d)),
      syncDirAsync: (d) => {
        calls.push(`async ${d}`);
        return new Promise<void>((r) => (release = r));
      },
    };
    const svc = new IndexService({ dir, slotNum: 64, indexNum: 4, now: () => T0, disk });
    open.push(svc);
    svc.load();
    svc.buildIndex(rec(100, { keys: "k" })); // the first file: a roll
    expect(calls).toEqual([`async ${dir}`]);
    let flushed = false;
    const f = svc.flushAsync().then(() => (flushed = true));
    await Bun.sleep(20);
    expect(flushed).toBe(false);
    release();
    await f;
    expect(flushed).toBe(true);
    // Another roll, then a stop's synchronous flush before the thread pool answered.
    for (let i = 2; i <= 5; i++) svc.buildIndex(rec(i * 100, { keys: "k" }));
    expect(calls).toEqual([`async ${dir}`, `async ${dir}`]);
    svc.flush();
    expect(calls).toEqual([`async ${dir}`, `async ${dir}`, `sync ${dir}`]);
  });

  test("a file left by a create that a crash interrupted is removed at load, not reported", () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "20240102030405006.creating"), new Uint8Array(100));
    writeFileSync(join(dir, "notes.txt"), "someone else's");
    const { problems } = service();
    expect(problems).toEqual(["notes.txt: not an index file name; ignored"]);
    expect(readdirSync(dir)).toEqual(["notes.txt"]);
  });

  test("checkpoint round trip: crash, load(checkpoint), re-dispatch from it rebuilds everything", () => {
    const { svc } = service({ indexNum: 4 });
    for (let i = 1; i <= 4; i++) svc.buildIndex(rec(i * 100, { keys: "k" }));
    const checkpoint = svc.flush();
    svc.buildIndex(rec(500, { keys: "k" }));
    svc.close(); // stands in for the crash: the second file's end (T0+500) is past the checkpoint
    const { svc: again, problems } = service({ indexNum: 4, checkpoint });
    expect(problems.length).toBe(1);
    // Recovery re-dispatches every record stored at or after the checkpoint time.
    for (let i = 1; i <= 5; i++) if (T0 + i * 100 >= checkpoint) again.buildIndex(rec(i * 100, { keys: "k" }));
    expect(again.queryOffset("TopicA", "k", 32, 0, ALL).phyOffsets).toEqual([500, 400, 300, 200, 100]);
  });

  test("flush writes the bytes to disk", () => {
    const { svc } = service();
    svc.buildIndex(rec(100, { keys: "k", storeTimestamp: T0 + 5 }));
    svc.flush();
    const [name] = svc.fileNames();
    const bytes = readFileSync(join(dir, name!));
    expect(new DataView(bytes.buffer, bytes.byteOffset).getInt32(36)).toBe(2);
    const f = IndexFile.open(join(dir, name!), { slotNum: 64, indexNum: 256 });
    if (!(f instanceof IndexFile)) throw new Error(f.invalid);
    expect(f.selectPhyOffsets("TopicA#k", 10, 0, ALL)).toEqual([100]);
    f.close();
  });

  test("use before load is a bug", () => {
    const svc = new IndexService({ dir, slotNum: 64, indexNum: 256 });
    expect(() => svc.buildIndex(rec(100, { keys: "k" }))).toThrow(/before load/);
    expect(() => svc.queryOffset("TopicA", "k", 1, 0, ALL)).toThrow(/before load/);
    svc.load();
    expect(() => svc.load()).toThrow(/twice/);
  });

  test("a write error is sticky", () => {
    const { svc } = service();
    rmSync(dir, { recursive: true }); // the next roll cannot create its file
    expect(() => svc.buildIndex(rec(100, { keys: "k" }))).toThrow();
    const err = svc.writeError;
    expect(err).toBeInstanceOf(Error);
    mkdirSync(dir);
    // Even with the directory back, indexing stays stopped until a restart runs recovery.
    expect(() => svc.buildIndex(rec(200, { keys: "k" }))).toThrow(err!.message);
    expect(() => svc.flush()).toThrow(err!.message);
    expect(readdirSync(dir)).toEqual([]);
    expect(svc.queryOffset("TopicA", "k", 1, 0, ALL).phyOffsets).toEqual([]);
  });
});
