import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConsumeQueue, CQ_FILLER_SIZE } from "./consume-queue.ts";
import { CQ_UNIT_SIZE } from "../protocol/store-layout.ts";
import { AssertionError } from "../common/assert.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), "cq-test-"));
  dirs.push(d);
  return d;
}

describe("ConsumeQueue", () => {
  test("unit layout: 8 + 4 + 8 = 20 bytes, big-endian, golden bytes", () => {
    expect(8 + 4 + 8).toBe(CQ_UNIT_SIZE);
    const root = tmp();
    const cq = new ConsumeQueue(root, "T", 0, 4);
    cq.putUnit(0, 0x1_0000_0002, 300, -5, "log");
    cq.flushSync();
    const bytes = readFileSync(join(root, "T", "0", "00000000000000000000")).subarray(0, 20);
    expect(Buffer.from(bytes).toString("hex")).toBe("0000000100000002" + "0000012c" + "fffffffffffffffb");
    cq.close();
  });

  test("put, get, scan across file rollover; reload finds the end", () => {
    const root = tmp();
    const cq = new ConsumeQueue(root, "T", 1, 4);
    for (let i = 0; i < 10; i++) cq.putUnit(i, i * 100, 100, i, "log");
    expect(cq.maxOffset).toBe(10);
    expect(cq.minOffset).toBe(0);
    expect(readdirSync(join(root, "T", "1")).sort()).toEqual(["00000000000000000000", "00000000000000000080", "00000000000000000160"]);
    expect(cq.get(7)).toEqual({ phyOffset: 700, size: 100, tagsCode: 7 });
    expect(cq.get(10)).toBeUndefined();
    const seen: number[] = [];
    expect(cq.scan(2, 5, (off, phy) => (seen.push(off * 1000 + phy), true))).toBe(5);
    expect(seen).toEqual([2200, 3300, 4400, 5500, 6600]);
    expect(cq.scan(8, 32, (off) => off < 9)).toBe(1);
    cq.flushSync();
    cq.close();

    const again = new ConsumeQueue(root, "T", 1, 4);
    expect(again.load()).toEqual([]);
    expect(again.maxOffset).toBe(10);
    expect(again.maxPhysicOffset).toBe(1000);
    expect(again.get(9)).toEqual({ phyOffset: 900, size: 100, tagsCode: 9 });
    again.putUnit(10, 1000, 50, 0, "log");
    expect(again.maxOffset).toBe(11);
    again.close();
  });

  test("re-dispatch of the same unit is a no-op; a jump forward pads with fillers", () => {
    const cq = new ConsumeQueue(tmp(), "T", 0, 8);
    expect(cq.putUnit(0, 0, 10, 7, "log")).toBe("written");
    expect(cq.putUnit(0, 0, 10, 7, "log")).toBe("present");
    expect(cq.get(0)).toEqual({ phyOffset: 0, size: 10, tagsCode: 7 });
    cq.putUnit(3, 30, 10, 0, "log");
    expect(cq.get(1)).toEqual({ phyOffset: 0, size: CQ_FILLER_SIZE, tagsCode: 0 });
    expect(cq.get(3)!.phyOffset).toBe(30);
    cq.close();
  });

  test("a different unit dispatched from the log behind the end replaces it and what follows (the later record wins)", () => {
    const cq = new ConsumeQueue(tmp(), "T", 0, 8);
    for (let i = 0; i < 5; i++) cq.putUnit(i, i * 10, 10, 0, "log");
    // Offset 2 again, for a record further on in the log: the master re-used the offset.
    expect(cq.putUnit(2, 500, 10, 0, "log")).toBe("replaced");
    expect(cq.maxOffset).toBe(3);
    expect(cq.get(2)).toEqual({ phyOffset: 500, size: 10, tagsCode: 0 });
    expect(cq.get(1)!.phyOffset).toBe(10);
    // A unit differing only in size or tag code is a different unit too.
    expect(cq.putUnit(2, 500, 11, 0, "log")).toBe("replaced");
    expect(cq.putUnit(2, 500, 11, 1, "log")).toBe("replaced");
    expect(cq.putUnit(2, 500, 11, 1, "log")).toBe("present");
    cq.close();
  });

  test("the send path puts only at the queue's end: a unit behind it or past it is a bug (AssertionError), nothing written", () => {
    const cq = new ConsumeQueue(tmp(), "T", 0, 8);
    expect(cq.putUnit(0, 0, 10, 0, "put")).toBe("written");
    expect(cq.putUnit(1, 10, 10, 0, "put")).toBe("written");
    expect(() => cq.putUnit(1, 10, 10, 0, "put")).toThrow(AssertionError);
    expect(() => cq.putUnit(0, 20, 10, 0, "put")).toThrow("queue T-0: the send path put queue offset 0, but the queue ends at 2");
    expect(() => cq.putUnit(3, 20, 10, 0, "put")).toThrow(AssertionError);
    expect(cq.maxOffset).toBe(2);
    expect(cq.get(1)).toEqual({ phyOffset: 10, size: 10, tagsCode: 0 });
    const fresh = new ConsumeQueue(tmp(), "T", 1, 8);
    expect(() => fresh.putUnit(5, 0, 10, 0, "put")).toThrow(AssertionError);
    expect(fresh.maxOffset).toBe(0);
    fresh.close();
    cq.close();
  });

  test("a rewrite replaces units from its offset on without reading them", () => {
    const cq = new ConsumeQueue(tmp(), "T", 0, 8);
    for (let i = 0; i < 4; i++) cq.putUnit(i, i * 10, 10, 0, "log");
    expect(cq.putUnit(1, 10, 10, 0, "rewrite")).toBe("written");
    expect(cq.maxOffset).toBe(2);
    cq.close();
  });

  test("a queue that starts past 0 has its min offset there", () => {
    const cq = new ConsumeQueue(tmp(), "T", 0, 4);
    cq.putUnit(6, 600, 10, 0, "log");
    expect(cq.minOffset).toBe(6);
    expect(cq.maxOffset).toBe(7);
    expect(cq.get(5)).toBeUndefined();
    cq.close();
  });

  test("truncateDirty drops units past a CommitLog offset; deleteExpiredFiles follows the CommitLog min", () => {
    const root = tmp();
    const cq = new ConsumeQueue(root, "T", 0, 4);
    for (let i = 0; i < 10; i++) cq.putUnit(i, i * 100, 100, 0, "log");
    cq.truncateDirty(650);
    expect(cq.maxOffset).toBe(6);
    expect(cq.maxPhysicOffset).toBe(600);
    cq.putUnit(6, 600, 100, 0, "log");
    expect(cq.maxOffset).toBe(7);
    expect(cq.deleteExpiredFiles(450)).toBe(1);
    expect(cq.minOffset).toBe(5);
    expect(cq.get(4)).toBeUndefined();
    cq.close();
  });

  test("regression (test/sim seeds 1, 3): recovery drops a torn unit whose garbage offset lies below the CommitLog end", () => {
    const cq = new ConsumeQueue(tmp(), "T", 0, 8);
    cq.putUnit(0, 0, 100, 0, "log");
    cq.putUnit(1, 100, 100, 0, "log");
    // A unit never flushed before the crash, left as garbage that happens to point low.
    cq.putUnit(2, 17, 3, 0, "log");
    const records = new Map([
      [0, 0],
      [1, 100],
    ]);
    cq.truncateDirty(200, (off, phy) => records.get(off) === phy);
    expect(cq.maxOffset).toBe(2);
    expect(cq.get(1)?.phyOffset).toBe(100);
    cq.close();
  });
});
