import { describe, expect, test } from "bun:test";
import { BrokerStats } from "./stats.ts";

describe("BrokerStats", () => {
  test("rates over whole seconds: 10 s, 60 s, 600 s windows", () => {
    const boot = new Date(2026, 0, 10, 12, 0, 0, 0).getTime();
    let now = boot;
    const s = new BrokerStats({ now: () => now });
    // 5 messages per second for 20 seconds, 100 bytes each.
    for (let sec = 0; sec < 20; sec++) {
      now = boot + sec * 1000 + 300;
      s.recordPut(5, 500);
      s.recordGet(2, 200);
      s.recordGet(0, 0);
    }
    now = boot + 20_000 + 10;
    const snap = s.snapshot();
    expect(snap.putTotal).toBe(100);
    expect(snap.putBytesTotal).toBe(10_000);
    expect(snap.getTransferredTotal).toBe(40);
    expect(snap.putTps).toEqual([5, 5, 5]);
    expect(snap.getTransferredTps).toEqual([2, 2, 2]);
    expect(snap.getFoundTps).toEqual([1, 1, 1]);
    expect(snap.getMissTps).toEqual([1, 1, 1]);
    expect(snap.getTotalTps).toEqual([2, 2, 2]);
    // Quiet for 30 s: the 10 s rate drops to 0, the 60 s one spreads 100 over 50 s.
    now = boot + 50_000;
    expect(s.snapshot().putTps).toEqual([0, 2, 2]);
    // Records within the current second are not counted yet.
    s.recordPut(1000, 1);
    expect(s.snapshot().putTps[0]).toBe(0);
    now += 1000;
    expect(s.snapshot().putTps[0]).toBe(100);
  });

  test("totals at local midnight today and yesterday", () => {
    const day1 = new Date(2026, 0, 10, 23, 0, 0, 0).getTime();
    let now = day1;
    const s = new BrokerStats({ now: () => now });
    s.recordPut(7, 70);
    s.recordGet(3, 30);
    now = new Date(2026, 0, 11, 9, 0, 0, 0).getTime();
    s.recordPut(2, 20);
    let snap = s.snapshot();
    expect([snap.putTotalYesterdayMorning, snap.putTotalTodayMorning, snap.putTotal]).toEqual([0, 7, 9]);
    expect([snap.getTotalYesterdayMorning, snap.getTotalTodayMorning, snap.getTransferredTotal]).toEqual([0, 3, 3]);
    now = new Date(2026, 0, 12, 0, 0, 1, 0).getTime();
    snap = s.snapshot();
    expect([snap.putTotalYesterdayMorning, snap.putTotalTodayMorning, snap.putTotal]).toEqual([7, 9, 9]);
    // Several days without activity: both mornings equal the totals.
    now = new Date(2026, 0, 20, 8, 0, 0, 0).getTime();
    snap = s.snapshot();
    expect([snap.putTotalYesterdayMorning, snap.putTotalTodayMorning]).toEqual([9, 9]);
  });
});
