/**
 * The in-flight table on its own: matching acks to checkpoints by handle, what comes due and when,
 * the revive queues' progress and the per-group counts.
 */
import { describe, expect, test } from "bun:test";
import { InflightTable, type CheckPoint } from "./inflight.ts";

const ck = (o: Partial<CheckPoint> = {}): CheckPoint => ({
  topic: "T",
  group: "G",
  queueId: 0,
  startOffset: 10,
  popTime: 1_000,
  invisibleTime: 5_000,
  diffs: [0, 1, 3],
  reviveQid: 2,
  reviveOffset: 7,
  ...o,
});

describe("InflightTable", () => {
  test("acks match by topic, group, queue, start and pop time; a fully acked checkpoint leaves and never comes due", () => {
    const t = new InflightTable();
    expect(t.add(ck())).toBe(true);
    expect(t.add(ck())).toBe(false);
    expect(t.inflight("T", "G")).toBe(3);
    expect(t.ack("T", "OTHER", 0, 10, 1_000, [10])).toBe(0);
    expect(t.ack("T", "G", 0, 10, 999, [10])).toBe(0);
    expect(t.ack("T", "G", 0, 10, 1_000, [10, 12])).toBe(1); // 12 is not one of its messages
    expect(t.isInFlight("T", "G", 0, 10, 1_000, 10)).toBe(false);
    expect(t.isInFlight("T", "G", 0, 10, 1_000, 11)).toBe(true);
    expect(t.ack("T", "G", 0, 10, 1_000, [10, 11, 13])).toBe(2);
    expect(t.size).toBe(0);
    expect(t.inflight("T", "G")).toBe(0);
    expect(t.takeDue(10_000, 10)).toEqual([]);
  });

  test("due checkpoints come out in revive-time order, out of reach of acks; put back, they come due again", () => {
    const t = new InflightTable();
    t.add(ck({ startOffset: 20, popTime: 2_000, reviveOffset: 8 }));
    t.add(ck({ startOffset: 10, popTime: 1_000, reviveOffset: 7 }));
    t.add(ck({ startOffset: 30, popTime: 9_000, reviveOffset: 9 }));
    expect(t.takeDue(5_999, 10)).toEqual([]);
    const due = t.takeDue(7_000, 10);
    expect(due.map((c) => c.startOffset)).toEqual([10, 20]);
    // Taken: an ack now changes nothing (the revive stores the message again).
    expect(t.ack("T", "G", 0, 10, 1_000, [10])).toBe(0);
    t.done(due[0]!);
    t.putBack(due[1]!, 20_000);
    expect(t.takeDue(15_000, 10).map((c) => c.startOffset)).toEqual([30]);
    expect(t.takeDue(20_000, 10).map((c) => c.startOffset)).toEqual([20]);
  });

  test("a revive queue's progress is its oldest checkpoint still in the table", () => {
    const t = new InflightTable();
    expect(t.progress(2)).toBeUndefined();
    t.add(ck({ startOffset: 10, reviveOffset: 7 }));
    t.add(ck({ startOffset: 20, reviveOffset: 9 }));
    t.add(ck({ startOffset: 30, reviveOffset: 4, reviveQid: 3 }));
    expect(t.progress(2)).toBe(7);
    t.ack("T", "G", 0, 10, 1_000, [10, 11, 13]);
    expect(t.progress(2)).toBe(9);
    expect(t.progress(3)).toBe(4);
    expect([...t.entries()].map((c) => c.startOffset).sort()).toEqual([20, 30]);
  });

  test("a checkpoint acked away and added again under the same handle is a new one: the old heap entry never surfaces for it", () => {
    const t = new InflightTable();
    t.add(ck({ popTime: 1_000, invisibleTime: 1_000 }));
    t.ack("T", "G", 0, 10, 1_000, [10, 11, 13]);
    t.add(ck({ popTime: 1_000, invisibleTime: 9_000 }));
    expect(t.takeDue(5_000, 10)).toEqual([]);
    expect(t.takeDue(10_000, 10).map((c) => c.invisibleTime)).toEqual([9_000]);
  });
});
