import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock, type Clock } from "../common/clock.ts";
import { CommitLog, type CommitLogOptions, type StoreRecordInput } from "./commit-log.ts";
import { BLANK_MAGIC_CODE, decodeRecordAt, parseHostAddress } from "../common/message-record.ts";

const dirs: string[] = [];
const logs: CommitLog[] = [];
afterEach(() => {
  for (const l of logs.splice(0)) l.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(
  segmentBytes = 4096,
  flushDiskType: "ASYNC_FLUSH" | "SYNC_FLUSH" = "ASYNC_FLUSH",
  dir?: string,
  extra: Partial<CommitLogOptions> = {},
): CommitLog {
  const d = dir ?? mkdtempSync(join(tmpdir(), "cl-test-"));
  if (!dir) dirs.push(d);
  const cl = new CommitLog({ dir: d, segmentBytes, flushDiskType, flushIntervalMs: 50, now: () => 1_700_000_000_000, ...extra });
  logs.push(cl);
  return cl;
}

const enc = new TextEncoder();
function rec(i: number, bodyBytes = 1000, topic = "TopicA", queueId = 0): StoreRecordInput {
  const body = new Uint8Array(bodyBytes).fill(i & 0xff);
  return {
    topicName: topic,
    topic: enc.encode(topic),
    queueId,
    flag: 0,
    body,
    properties: enc.encode(`TAGS\u0001T${i}\u0002KEYS\u0001k${i}`),
    sysFlag: 0,
    bornTimestamp: 1_700_000_000_000 - i,
    bornHost: parseHostAddress("10.0.0.9:51000"),
    storeHost: parseHostAddress("10.0.0.1:10911"),
    reconsumeTimes: 0,
    preparedTransactionOffset: 0,
  };
}

describe("CommitLog", () => {
  test("append assigns dense physical offsets and per-queue offsets; records read back intact", () => {
    const cl = open();
    const a = cl.append(rec(1, 100));
    const b = cl.append(rec(2, 100, "TopicA", 1));
    const c = cl.append(rec(3, 100));
    expect(a.physicalOffset).toBe(0);
    expect(b.physicalOffset).toBe(a.size);
    expect(c.physicalOffset).toBe(a.size + b.size);
    expect([a.queueOffset, b.queueOffset, c.queueOffset]).toEqual([0, 0, 1]);
    const r = cl.readRecord(c.physicalOffset, true)!;
    expect(r.queueOffset).toBe(1);
    expect(r.physicalOffset).toBe(c.physicalOffset);
    expect(r.topic).toBe("TopicA");
    expect(r.body[0]).toBe(3);
    expect(cl.maxOffset).toBe(a.size + b.size + c.size);
  });

  test("segments roll over with a BLANK marker; no record spans two segments", () => {
    const cl = open(4096);
    const results = Array.from({ length: 20 }, (_, i) => cl.append(rec(i, 1000)));
    expect(cl.segments.length).toBeGreaterThan(4);
    for (const r of results) {
      expect(Math.floor(r.physicalOffset / 4096)).toBe(Math.floor((r.physicalOffset + r.size - 1) / 4096));
      const back = cl.readRecord(r.physicalOffset, true)!;
      expect(back.physicalOffset).toBe(r.physicalOffset);
    }
    const first = cl.segments[0]!;
    let pos = 0;
    let blank = -1;
    for (;;) {
      const d = decodeRecordAt(first.buf, pos, { checkCrc: true });
      if ("blank" in d) {
        blank = pos;
        expect(first.view.getInt32(pos + 4)).toBe(BLANK_MAGIC_CODE);
        expect(pos + d.blank).toBe(4096);
        break;
      }
      if (!("totalSize" in d)) throw new Error(`unexpected ${JSON.stringify(d)}`);
      pos += d.totalSize;
    }
    expect(blank).toBeGreaterThan(0);
    expect(results[3]!.physicalOffset).toBe(4096);
  });

  test("a batch is stored contiguously in one segment with consecutive queue offsets", () => {
    const cl = open(8192);
    cl.append(rec(0, 3000));
    const batch = cl.appendBatch([rec(1, 1500), rec(2, 1500), rec(3, 1500)]);
    expect(batch.map((b) => b.queueOffset)).toEqual([1, 2, 3]);
    expect(batch[1]!.physicalOffset).toBe(batch[0]!.physicalOffset + batch[0]!.size);
    const seg = (o: number) => Math.floor(o / 8192);
    expect(seg(batch[0]!.physicalOffset)).toBe(seg(batch[2]!.physicalOffset + batch[2]!.size - 1));
  });

  test("a record larger than a segment is refused without damaging the log", () => {
    const cl = open(4096);
    cl.append(rec(0, 100));
    expect(() => cl.append(rec(1, 5000))).toThrow(/do not fit/);
    expect(cl.writeError).toBeNull();
    expect(cl.append(rec(2, 100)).queueOffset).toBe(1);
  });

  test("SYNC_FLUSH: concurrent waiters all resolve after one group commit", async () => {
    const cl = open(1 << 20, "SYNC_FLUSH");
    const waits = Array.from({ length: 50 }, (_, i) => {
      const r = cl.append(rec(i, 200));
      return cl.waitForFlush(r.physicalOffset + r.size, 5000);
    });
    expect(await Promise.all(waits)).toEqual(Array(50).fill(true));
    expect(cl.flushedOffset).toBe(cl.maxOffset);
  });

  test("SYNC_FLUSH: the background flush makes appends durable that nobody waits for (a slave's, WAIT=false)", async () => {
    const ticks: (() => void)[] = [];
    // A clock whose interval ticks only when the test says so.
    const clock: Clock = {
      now: () => 1_700_000_000_000,
      setInterval: (fn) => (ticks.push(fn), {}),
      clearInterval: () => {},
      setTimeout: systemClock.setTimeout,
      clearTimeout: systemClock.clearTimeout,
    };
    const cl = open(1 << 20, "SYNC_FLUSH", undefined, { clock, flushLeastPages: 4 });
    cl.startFlushService();
    expect(ticks.length).toBe(1);
    cl.append(rec(0, 200));
    await cl.whenCommitted();
    ticks[0]!();
    await cl.flush();
    // Not held back by flushLeastPages: that is an ASYNC_FLUSH rule.
    expect(cl.flushedOffset).toBe(cl.maxOffset);
  });

  test("ASYNC_FLUSH: a tick flushes only with flushLeastPages dirty pages; the thorough tick flushes any", async () => {
    const clock = { t: 1_700_000_000_000 };
    const cl = open(1 << 20, "ASYNC_FLUSH", undefined, { now: () => clock.t, flushLeastPages: 4, flushThoroughIntervalMs: 10_000 });
    cl.append(rec(0, 200));
    await cl.periodicFlush();
    expect(cl.flushedOffset).toBe(0);
    // Four more 4 KiB pages: the segment now has pages 0..4 dirty.
    for (let i = 1; i <= 4; i++) cl.append(rec(i, 4096));
    await cl.periodicFlush();
    expect(cl.flushedOffset).toBe(cl.maxOffset);
    const flushed = cl.flushedOffset;
    cl.append(rec(5, 200));
    clock.t += 9_999;
    await cl.periodicFlush();
    expect(cl.flushedOffset).toBe(flushed);
    clock.t += 1;
    await cl.periodicFlush();
    expect(cl.flushedOffset).toBe(cl.maxOffset);
    // A SYNC-style waiter never waits for pages to accumulate.
    const r = cl.append(rec(6, 200));
    expect(await cl.waitForFlush(r.physicalOffset + r.size, 5000)).toBe(true);
  });

  test("ASYNC_FLUSH: the background service flushes", async () => {
    const cl = open(1 << 20, "ASYNC_FLUSH", undefined, { flushThoroughIntervalMs: 0 });
    cl.startFlushService();
    cl.append(rec(1, 200));
    const deadline = Date.now() + 3000;
    while (cl.flushedOffset < cl.maxOffset && Date.now() < deadline) await Bun.sleep(10);
    expect(cl.flushedOffset).toBe(cl.maxOffset);
  });

  test("truncateTo drops the tail; appends continue there; reload maps the same segments", () => {
    const dir = mkdtempSync(join(tmpdir(), "cl-test-"));
    dirs.push(dir);
    const cl = open(4096, "ASYNC_FLUSH", dir);
    const rs = Array.from({ length: 10 }, (_, i) => cl.append(rec(i, 500)));
    const cut = rs[6]!.physicalOffset;
    cl.truncateTo(cut);
    expect(cl.maxOffset).toBe(cut);
    expect(cl.readRecord(cut)).toBeUndefined();
    cl.setNextQueueOffset("TopicA", 0, 6);
    const again = cl.append(rec(99, 500));
    expect(again.physicalOffset).toBe(cut);
    expect(again.queueOffset).toBe(6);
    cl.flushSync();
    cl.close();
    logs.pop();
    const re = open(4096, "ASYNC_FLUSH", dir);
    expect(re.load()).toEqual([]);
    expect(re.segments.length).toBe(Math.floor(cut / 4096) + 1);
    expect(re.readRecord(again.physicalOffset, true)!.body[0]).toBe(99);
  });

  test("cold segments are unmapped and mapped again on the next read", () => {
    const cl = open(4096);
    const rs = Array.from({ length: 30 }, (_, i) => cl.append(rec(i, 1000)));
    cl.flushSync();
    const segs = cl.segments.length;
    cl.releaseCold(); // first sweep: everything was just touched
    expect(cl.releaseCold()).toBe(segs - 2);
    expect(cl.segments.filter((f) => f.mapped).length).toBe(2);
    const back = cl.readRecord(rs[0]!.physicalOffset, true)!;
    expect(back.body[0]).toBe(0);
    expect(cl.segments[0]!.mapped).toBe(true);
    // Unflushed segments are never released (their bytes must reach the disk first).
    for (let i = 0; i < 30; i++) cl.append(rec(i, 1000));
    cl.releaseCold();
    cl.releaseCold();
    const unflushed = cl.segments.filter((f) => f.flushedPosition < f.wrotePosition);
    expect(unflushed.length).toBeGreaterThan(2);
    expect(unflushed.every((f) => f.mapped)).toBe(true);
    expect(cl.segments[0]!.mapped).toBe(false);
  });

  test("write-behind stage: one pwrite per turn; a read before the commit commits first; the file has it after the turn", async () => {
    const d = mkdtempSync(join(tmpdir(), "cl-test-"));
    dirs.push(d);
    const cl = open(1 << 20, "ASYNC_FLUSH", d);
    const seg = () => cl.segments.at(-1)!;
    const a = cl.append(rec(1, 500));
    const b = cl.append(rec(2, 500));
    // Both staged, nothing in the file yet.
    expect(seg().stagedBytes).toBe(a.size + b.size);
    const fileBytes = () => readFileSync(join(d, seg().path.split("/").at(-1)!));
    expect([...fileBytes().subarray(0, 4)]).toEqual([0, 0, 0, 0]);
    // The turn's commit writes both with one pwrite.
    await cl.whenCommitted();
    expect(seg().stagedBytes).toBe(0);
    expect(decodeRecordAt(fileBytes(), b.physicalOffset, { checkCrc: true })).toMatchObject({ queueOffset: 1, physicalOffset: b.physicalOffset });
    // A read in the same turn as the append sees the record: the read commits first.
    const c = cl.append(rec(3, 500));
    expect(seg().stagedBytes).toBe(c.size);
    expect(cl.readRecord(c.physicalOffset, true)!.body[0]).toBe(3);
    expect(seg().stagedBytes).toBe(0);
    // Close commits what is staged.
    const e = cl.append(rec(4, 500));
    cl.close();
    logs.splice(logs.indexOf(cl), 1);
    expect(decodeRecordAt(fileBytes(), e.physicalOffset, { checkCrc: true })).toMatchObject({ physicalOffset: e.physicalOffset });
  });

  test("a failed commit makes the log refuse later appends (sticky write error) and whenCommitted still settles", async () => {
    const cl = open(1 << 20, "ASYNC_FLUSH");
    cl.append(rec(1, 100));
    // Close the segment's file under the stage: the turn's pwrite fails.
    const seg = cl.segments.at(-1)!;
    (seg as unknown as { pwrite: () => void }).pwrite = () => {
      throw new Error("EIO (injected)");
    };
    await cl.whenCommitted();
    expect(cl.writeError?.message).toContain("EIO (injected)");
    expect(() => cl.append(rec(2, 100))).toThrow(/not writable/);
  });

  test("pwrite mode (the SYNC_FLUSH default): same records, readable through the mapping, same rollover", () => {
    const a = open(4096, "ASYNC_FLUSH");
    const b = open(4096, "SYNC_FLUSH");
    const ra = Array.from({ length: 20 }, (_, i) => a.append(rec(i, 700)));
    const rb = Array.from({ length: 20 }, (_, i) => b.append(rec(i, 700)));
    expect(rb.map((r) => [r.physicalOffset, r.size, r.queueOffset])).toEqual(ra.map((r) => [r.physicalOffset, r.size, r.queueOffset]));
    for (const r of rb) expect(b.readRecord(r.physicalOffset, true)!.physicalOffset).toBe(r.physicalOffset);
    const batch = b.appendBatch([rec(1, 100), rec(2, 100)]);
    expect(b.readRecord(batch[1]!.physicalOffset, true)!.body[0]).toBe(2);
  });
});
