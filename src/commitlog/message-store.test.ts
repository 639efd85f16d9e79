import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SysFlag } from "../protocol/sys-flag.ts";
import { decodeRecordAt, javaStringHashCode } from "../common/message-record.ts";
import { nodeDisk } from "./disk.ts";
import { MessageStore, type MessageStoreOptions } from "./message-store.ts";
import { message, tempStoreDir, testStoreOptions } from "./test-support.ts";

const dirs: string[] = [];
const stores: MessageStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.shutdown();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(dir?: string, o: Partial<MessageStoreOptions> = {}): { store: MessageStore; dir: string } {
  const d = dir ?? tempStoreDir();
  if (!dir) dirs.push(d);
  const store = MessageStore.open(testStoreOptions(d, o));
  stores.push(store);
  return { store, dir: d };
}

async function close(store: MessageStore): Promise<void> {
  await store.shutdown();
  stores.splice(stores.indexOf(store), 1);
}

const dec = new TextDecoder();
function bodies(res: { messages: Uint8Array[] }): string[] {
  return res.messages.map((m) => {
    const r = decodeRecordAt(m, 0, { checkCrc: true });
    if (!("totalSize" in r)) throw new Error("bad record in pull result");
    return dec.decode(r.body);
  });
}

describe("MessageStore", () => {
  test("put then get: stored bytes come back, with RocketMQ's statuses and next offsets", async () => {
    const { store } = open();
    expect(store.getMessage("T", 0, 0, 32).status).toBe("NO_MATCHED_LOGIC_QUEUE");
    for (let i = 0; i < 5; i++) expect((await store.putMessage(message("T", 0, `m${i}`))).status).toBe("PUT_OK");
    const r = store.getMessage("T", 0, 1, 3);
    expect(r.status).toBe("FOUND");
    expect(bodies(r)).toEqual(["m1", "m2", "m3"]);
    expect(r.nextBeginOffset).toBe(4);
    expect([r.minOffset, r.maxOffset]).toEqual([0, 5]);
    expect(store.getMessage("T", 0, 5, 32)).toMatchObject({ status: "OFFSET_OVERFLOW_ONE", nextBeginOffset: 5 });
    expect(store.getMessage("T", 0, 9, 32)).toMatchObject({ status: "OFFSET_OVERFLOW_BADLY", nextBeginOffset: 5 });
    const rec = decodeRecordAt(r.messages[0]!, 0, { checkCrc: true });
    expect(rec).toMatchObject({ queueOffset: 1, topic: "T", queueId: 0 });
  });

  for (const [err, status, named] of [
    ["EIO: i/o error (injected)", "UNKNOWN_ERROR", "the CommitLog write failed, store stopped taking writes"],
    ["ENOSPC: no space left on device (injected)", "SERVICE_NOT_AVAILABLE", "is full"],
  ] as const) {
    test(`a put is answered only after its commit: a failed CommitLog write (${err.slice(0, 6)}) answers ${status}, not PUT_OK, and later puts are refused`, async () => {
      const { store, dir } = open();
      expect((await store.putMessage(message("T", 0, "before"))).status).toBe("PUT_OK");
      const seg = store.commitLog.segments.at(-1)!;
      (seg as unknown as { pwrite: () => void }).pwrite = () => {
        throw new Error(err);
      };
      const r = await store.putMessage(message("T", 0, "lost"));
      expect(r.status).toBe(status);
      expect(r.remark).toContain(err);
      expect(r.remark).toContain(named);
      expect(r.appended).toEqual([]);
      const again = await store.putMessage(message("T", 0, "after"));
      expect(again.status).toBe("SERVICE_NOT_AVAILABLE");
      expect(again.remark).toContain("not writable");
      // Not a clean stop: the error is reported, the abort marker stays (recovery at the next
      // start), the lock is released; the acknowledged message is there after reopening.
      await expect(close(store)).rejects.toThrow(/write error/);
      expect(existsSync(join(dir, "abort"))).toBe(true);
      const { store: reopened } = open(dir);
      expect(bodies(reopened.getMessage("T", 0, 0, 32))).toEqual(["before"]);
    });
  }

  test("tag filtering by ConsumeQueue tag code; filtered-out runs report NO_MATCHED_MESSAGE and move on", async () => {
    const { store } = open();
    for (let i = 0; i < 6; i++) await store.putMessage(message("T", 1, `m${i}`, { TAGS: i % 2 ? "B" : "A" }));
    const a = javaStringHashCode("A");
    const r = store.getMessage("T", 1, 0, 32, (code) => code === a);
    expect(bodies(r)).toEqual(["m0", "m2", "m4"]);
    expect(r.nextBeginOffset).toBe(6);
    const none = store.getMessage("T", 1, 0, 32, () => false);
    expect(none).toMatchObject({ status: "NO_MATCHED_MESSAGE", nextBeginOffset: 6 });
  });

  test("a batch is stored contiguously with consecutive queue offsets", async () => {
    const { store } = open();
    const res = await store.putMessages([message("T", 0, "a"), message("T", 0, "b"), message("T", 0, "c")]);
    expect(res.status).toBe("PUT_OK");
    expect(res.appended.map((a) => a.queueOffset)).toEqual([0, 1, 2]);
    expect(res.appended[1]!.physicalOffset).toBe(res.appended[0]!.physicalOffset + res.appended[0]!.size);
  });

  test("prepared and rolled-back transaction records get no ConsumeQueue unit; commits do", async () => {
    const { store } = open();
    await store.putMessage({ ...message("T", 0, "half"), sysFlag: SysFlag.TRANSACTION_PREPARED_TYPE });
    await store.putMessage({ ...message("T", 0, "rb"), sysFlag: SysFlag.TRANSACTION_ROLLBACK_TYPE });
    await store.putMessage({ ...message("T", 0, "commit"), sysFlag: SysFlag.TRANSACTION_COMMIT_TYPE });
    expect(store.getMaxOffsetInQueue("T", 0)).toBe(1);
    expect(bodies(store.getMessage("T", 0, 0, 32))).toEqual(["commit"]);
  });

  test("oversized body, long topic and huge properties are refused with a reason", async () => {
    const { store } = open();
    const big = await store.putMessage(message("T", 0, new Uint8Array(17 * 1024)));
    expect(big.status).toBe("MESSAGE_ILLEGAL");
    expect(big.remark).toContain("maximum");
    expect((await store.putMessage(message("x".repeat(128), 0, "a"))).status).toBe("MESSAGE_ILLEGAL");
    expect((await store.putMessage(message("T", 0, "a", { P: "v".repeat(40000) }))).status).toBe("PROPERTIES_SIZE_EXCEEDED");
    expect((await store.putMessage(message("T", 0, "ok"))).status).toBe("PUT_OK");
  });

  test("query by key and by unique key; look up by offset; offsets by time; earliest time", async () => {
    const { store } = open();
    const t0 = Date.now();
    const r1 = await store.putMessage(message("T", 0, "one", { KEYS: "k1 k2", UNIQ_KEY: "U1" }));
    await Bun.sleep(5);
    const mid = Date.now();
    await Bun.sleep(5);
    await store.putMessage(message("T", 0, "two", { KEYS: "k2" }));
    expect(bodies(store.queryMessage("T", "k2", 32, 0, Date.now() + 1000))).toEqual(["two", "one"]);
    expect(bodies(store.queryMessage("T", "U1", 32, 0, Date.now() + 1000))).toEqual(["one"]);
    expect(store.queryMessage("Other", "k2", 32, 0, Date.now() + 1000).messages).toEqual([]);
    expect(dec.decode(store.lookMessageByOffset(r1.appended[0]!.physicalOffset)!.body)).toBe("one");
    expect(store.getOffsetInQueueByTime("T", 0, t0 - 1000)).toBe(0);
    expect(store.getOffsetInQueueByTime("T", 0, mid)).toBe(1);
    expect(store.getOffsetInQueueByTime("T", 0, Date.now() + 1000)).toBe(2);
    const earliest = store.getEarliestMessageTime("T", 0);
    expect(earliest).toBeGreaterThanOrEqual(t0);
    expect(earliest).toBeLessThan(mid);
    expect(store.getEarliestMessageTime("T", 7)).toBe(-1);
  });

  test("SYNC_FLUSH: a put returns after the data is flushed", async () => {
    const { store } = open(undefined, { flushDiskType: "SYNC_FLUSH" });
    const puts = await Promise.all(Array.from({ length: 20 }, (_, i) => store.putMessage(message("T", i % 4, `s${i}`))));
    expect(puts.every((p) => p.status === "PUT_OK")).toBe(true);
    expect(store.commitLog.flushedOffset).toBe(store.maxPhyOffset);
  });

  test("clean restart: everything is back and queue offsets continue", async () => {
    const { store, dir } = open();
    for (let i = 0; i < 300; i++) await store.putMessage(message(`T${i % 3}`, i % 2, `m${i}`.padEnd(200, ".")));
    const max = store.maxPhyOffset;
    await close(store);
    expect(existsSync(join(dir, "abort"))).toBe(false);
    const { store: again } = open(dir);
    expect(again.recovery).toMatchObject({ abnormal: false, checkpoint: "valid", endOffset: max, truncatedBytes: 0, corruptRanges: [] });
    expect(again.getMaxOffsetInQueue("T1", 1)).toBe(50);
    const next = await again.putMessage(message("T1", 1, "after"));
    expect(next.appended[0]!.queueOffset).toBe(50);
    expect(bodies(again.getMessage("T1", 1, 49, 2)).map((b) => b.slice(0, 5))).toEqual(["m295.", "after"]);
  });

  test("abnormal start: ConsumeQueues are rebuilt from the CommitLog when they were lost", async () => {
    const { store, dir } = open();
    for (let i = 0; i < 100; i++) await store.putMessage(message("T", i % 4, `m${i}`.padEnd(300, ".")));
    await close(store);
    rmSync(join(dir, "consumequeue"), { recursive: true });
    rmSync(join(dir, "checkpoint"));
    writeFileSync(join(dir, "abort"), "1");
    const { store: again } = open(dir);
    expect(again.recovery).toMatchObject({ abnormal: true, checkpoint: "missing", recordsScanned: 100 });
    for (let q = 0; q < 4; q++) expect(again.getMaxOffsetInQueue("T", q)).toBe(25);
    expect(bodies(again.getMessage("T", 3, 24, 1))[0]!.startsWith("m99")).toBe(true);
  });

  test("disk admission: puts are refused with SERVICE_NOT_AVAILABLE naming the disk before the floor is reached, reads go on, writes resume once space is back", async () => {
    let capacity = 20 * 1024 * 1024;
    let ratio = 0.5;
    let time = 1_000_000;
    let store: MessageStore | undefined;
    const disk = { ...nodeDisk, freeBytes: () => capacity - (store?.commitLog.maxOffset ?? 0), usedRatio: () => ratio };
    const body = new Uint8Array(14 * 1024).fill(7);
    ({ store } = open(undefined, { disk, now: () => time }));
    let acked = 0;
    let refused: { status: string; remark?: string } | undefined;
    for (let i = 0; i < 2000 && refused === undefined; i++) {
      const r = await store.putMessage(message("T", i % 4, body));
      if (r.status === "PUT_OK") acked++;
      else refused = r;
    }
    // The floor: 4 MiB between looks + the slot table (64 × 4 B) + 8 MiB slack; 20 MiB of disk.
    expect(refused?.status).toBe("SERVICE_NOT_AVAILABLE");
    expect(refused?.remark).toMatch(/^the broker's disk is full: .* is 50\.0% used, [\d.]+ MiB free \(under the 12\.0 MiB the store keeps free\); writes are refused/);
    expect(store.isDiskFull).toBe(true);
    // Refused near the floor, long before the disk is full (this fake counts whole segments used,
    // blank ends included, which the store's estimate between looks does not).
    const used = store.commitLog.maxOffset;
    expect(used).toBeGreaterThan(capacity - 14 * 1024 * 1024);
    expect(used).toBeLessThan(capacity - 10 * 1024 * 1024);
    // Reads go on; nothing acknowledged is missing.
    let read = 0;
    for (let q = 0; q < 4; q++) for (let off = 0; ; ) {
      const r = store.getMessage("T", q, off, 32);
      if (r.messages.length === 0) break;
      read += r.messages.length;
      off = r.nextBeginOffset;
    }
    expect(read).toBe(acked);
    // Space is freed: a refused put looks again only once a second has passed.
    capacity += 100 * 1024 * 1024;
    expect((await store.putMessage(message("T", 0, body))).status).toBe("SERVICE_NOT_AVAILABLE");
    time += 1000;
    expect((await store.putMessage(message("T", 0, body))).status).toBe("PUT_OK");
    expect(store.isDiskFull).toBe(false);
    // Usage above diskCriticalRatio refuses too (a reconfigure looks at once).
    ratio = 0.95;
    store.reconfigure({ diskCriticalRatio: 0.9 });
    const r = await store.putMessage(message("T", 0, body));
    expect(r.status).toBe("SERVICE_NOT_AVAILABLE");
    expect(r.remark).toContain("95.0% used");
    expect(r.remark).toContain("above store.diskCriticalRatio 0.9");
  });

  test("byte flip in the last record: the torn tail is truncated and reported; writes continue there", async () => {
    const { store, dir } = open();
    const rs = [];
    for (let i = 0; i < 10; i++) rs.push(await store.putMessage(message("T", 0, `m${i}`.padEnd(100, "."))));
    await close(store);
    const last = rs[9]!.appended[0]!;
    flipByte(dir, last.physicalOffset + last.size - 10);
    writeFileSync(join(dir, "abort"), "1");
    const { store: again } = open(dir);
    expect(again.recovery!.endOffset).toBe(last.physicalOffset);
    expect(again.recovery!.truncatedBytes).toBeGreaterThan(0);
    expect(again.getMaxOffsetInQueue("T", 0)).toBe(9);
    expect((await again.putMessage(message("T", 0, "new"))).appended[0]).toMatchObject({ physicalOffset: last.physicalOffset, queueOffset: 9 });
  });

  test("byte flip in the middle: the damage is reported, never served, and later messages survive", async () => {
    const { store, dir } = open();
    const rs = [];
    for (let i = 0; i < 10; i++) rs.push(await store.putMessage(message("T", 0, `m${i}`.padEnd(100, "."))));
    await close(store);
    const bad = rs[4]!.appended[0]!;
    flipByte(dir, bad.physicalOffset + 95);
    writeFileSync(join(dir, "abort"), "1");
    const { store: again, dir: d2 } = open(dir);
    expect(again.recovery!.corruptRanges).toEqual([
      { from: bad.physicalOffset, to: bad.physicalOffset + bad.size, reason: expect.stringContaining("crc mismatch") },
    ]);
    expect(again.recovery!.problems.join("\n")).toContain("damaged bytes");
    const got = bodies(again.getMessage("T", 0, 0, 32)).map((b) => b.slice(0, 2));
    expect(got).toEqual(["m0", "m1", "m2", "m3", "m5", "m6", "m7", "m8", "m9"]);
    // The damage stays excluded after a clean restart too.
    await close(again);
    const { store: third } = open(d2);
    expect(bodies(third.getMessage("T", 0, 0, 32))).toHaveLength(9);
    expect(third.corruptRanges).toHaveLength(1);
  });

  test("a ConsumeQueue unit that does not point at its own record (torn by a crash) is skipped, never served", async () => {
    const { store, dir } = open();
    const rs = [];
    for (let i = 0; i < 8; i++) rs.push((await store.putMessage(message("T", 0, `m${i}`.padEnd(100, ".")))).appended[0]!);
    for (let i = 0; i < 3; i++) await store.putMessage(message("T", 1, `q1-${i}`.padEnd(100, ".")));
    await close(store);
    // Rewrite units in place, as torn pages would leave them: unit 2 points into the middle of a
    // record, unit 4 at the record of unit 5 (a whole, valid record, but not unit 4's), unit 6 at
    // queue 1's first record (same size, another queue).
    const cq = Bun.mmap(join(dir, "consumequeue", "T", "0", "0".repeat(20)), { shared: true });
    const unit = new DataView(cq.buffer, cq.byteOffset, cq.byteLength);
    const setPhy = (u: number, phy: number) => unit.setBigInt64(u * 20, BigInt(phy));
    const q1first = rs[7]!.physicalOffset + rs[7]!.size;
    setPhy(2, rs[2]!.physicalOffset + 8);
    setPhy(4, rs[5]!.physicalOffset);
    setPhy(6, q1first);
    const { store: again } = open(dir);
    const got = bodies(again.getMessage("T", 0, 0, 32)).map((b) => b.slice(0, 2));
    expect(got).toEqual(["m0", "m1", "m3", "m5", "m7"]);
    expect(again.unitsNotMatchingRecord).toBe(3);
    // The pull still moves past them.
    expect(again.getMessage("T", 0, 0, 32).nextBeginOffset).toBe(8);
  });

  test("retention deletes expired segments and their ConsumeQueue files; old offsets then read OFFSET_TOO_SMALL", async () => {
    const { store, dir } = open(undefined, { fileReservedTimeHours: 1 });
    for (let i = 0; i < 400; i++) await store.putMessage(message("T", 0, "x".repeat(1000)));
    const segs = readdirSync(join(dir, "commitlog")).sort();
    expect(segs.length).toBeGreaterThan(4);
    const old = (Date.now() - 2 * 3600_000) / 1000;
    for (const name of segs.slice(0, 3)) utimesSync(join(dir, "commitlog", name), old, old);
    expect(store.cleanExpiredFiles(true)).toBe(3);
    expect(store.minPhyOffset).toBe(3 * 64 * 1024);
    const min = store.getMinOffsetInQueue("T", 0);
    expect(min).toBeGreaterThan(0);
    expect(store.getMessage("T", 0, 0, 32)).toMatchObject({ status: "OFFSET_TOO_SMALL", nextBeginOffset: min });
    expect(store.getMessage("T", 0, min, 1).status).toBe("FOUND");
  });

  test("above the critical disk ratio, puts are refused with a clear reason", async () => {
    const { store } = open(undefined, { diskCriticalRatio: 0, diskMaxUsedSpaceRatio: 0 });
    const r = await store.putMessage(message("T", 0, "x"));
    expect(r.status).toBe("SERVICE_NOT_AVAILABLE");
    expect(r.remark).toContain("diskCriticalRatio");
  });

  test("a store locked by another live process is refused", () => {
    const d = tempStoreDir();
    dirs.push(d);
    writeFileSync(join(d, "lock"), "1");
    expect(() => MessageStore.open(testStoreOptions(d))).toThrow(/in use by process 1/);
  });
});

function flipByte(dir: string, offset: number): void {
  const segBytes = 64 * 1024;
  const name = String(Math.floor(offset / segBytes) * segBytes).padStart(20, "0");
  const path = join(dir, "commitlog", name);
  const f = Bun.mmap(path, { shared: true });
  f[offset % segBytes]! ^= 0xff;
}

describe("segment sizes of an existing store", () => {
  test("reopening with another consumeQueueUnitsPerFile or commitLogSegmentBytes fails with the value to set back, and changes nothing", async () => {
    const { store, dir } = open();
    for (let i = 0; i < 20; i++) expect((await store.putMessage(message("T", 0, `m${i}`))).status).toBe("PUT_OK");
    await close(store);
    expect(() => MessageStore.open(testStoreOptions(dir, { consumeQueueUnitsPerFile: 128 }))).toThrow(
      /store\.consumeQueueUnitsPerFile is 128, but .*consumequeue\/T\/0\/00000000000000000000 is 1280 bytes: the store was created with store\.consumeQueueUnitsPerFile 64; set it back/,
    );
    expect(() => MessageStore.open(testStoreOptions(dir, { segmentBytes: 128 * 1024 }))).toThrow(
      /store\.commitLogSegmentBytes is 131072, but .*commitlog\/00000000000000000000 is 65536 bytes: the store was created with store\.commitLogSegmentBytes 65536; set it back/,
    );
    // The failed opens released the lock and left the data alone: the right sizes open it as before.
    const again = MessageStore.open(testStoreOptions(dir));
    stores.push(again);
    expect(bodies(again.getMessage("T", 0, 0, 32))).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`));
  });
});
