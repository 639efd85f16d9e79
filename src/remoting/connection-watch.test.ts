/**
 * ConnectionWatch by hand: fake connections whose counters the test moves, sweeps called with
 * their elapsed time (no timers). Deadlines are met in whole sweeps, never early.
 */
import { describe, expect, test } from "bun:test";
import { systemClock } from "../common/clock.ts";
import { ConnectionWatch, type WatchedConnection } from "./connection-watch.ts";
import { recordingLogger } from "./test-support.ts";

class FakeConn implements WatchedConnection {
  readonly remoteAddress: string;
  activity = 0;
  framesReceived = 0;
  bufferedBytes = 0;
  closed = false;
  constructor(name: string) {
    this.remoteAddress = name;
  }
  close(): void {
    this.closed = true;
  }
}

function watch(idleTimeoutMs: number, frameTimeoutMs: number) {
  const log = recordingLogger();
  // sweep() is called by hand; the interval it would start is stopped at the end of each test.
  const w = new ConnectionWatch({ idleTimeoutMs, frameTimeoutMs, clock: systemClock, log, sweepMs: 100 });
  return { w, log };
}

describe("ConnectionWatch", () => {
  test("idle: closed once no read or write moved its counter for idleTimeoutMs, never earlier", () => {
    const { w, log } = watch(300, 0);
    const idle = new FakeConn("idle:1");
    const busy = new FakeConn("busy:1");
    w.add(idle);
    w.add(busy);
    for (let i = 0; i < 2; i++) {
      busy.activity++;
      w.sweep(100);
    }
    expect(idle.closed).toBe(false);
    busy.activity++;
    w.sweep(100);
    expect(idle.closed).toBe(true);
    expect(busy.closed).toBe(false);
    for (let i = 0; i < 10; i++) {
      busy.activity++;
      w.sweep(100);
    }
    expect(busy.closed).toBe(false);
    expect(log.lines.map((l) => l.msg)).toEqual(["closing idle:1: no traffic for 300 ms (remoting.idleTimeoutMs 300)"]);
    w.stop();
  });

  test("partial frame: a slow sender (bytes arrive, no frame completes) is closed after frameTimeoutMs", () => {
    const { w, log } = watch(0, 300);
    const slow = new FakeConn("slow:1");
    w.add(slow);
    slow.bufferedBytes = 1;
    // A byte per sweep keeps it active, but no frame completes: the first sweep that sees the
    // partial frame starts its time, so it is closed at the fourth.
    for (let i = 0; i < 3; i++) {
      slow.activity++;
      slow.bufferedBytes++;
      w.sweep(100);
      expect(slow.closed).toBe(false);
    }
    slow.activity++;
    w.sweep(100);
    expect(slow.closed).toBe(true);
    expect(log.lines[0]!.msg).toContain("a frame begun 300 ms ago is not complete (4 bytes; remoting.frameTimeoutMs 300)");
    w.stop();
  });

  test("partial frame: frames that keep completing (a busy pipelined peer) are never closed", () => {
    const { w } = watch(0, 200);
    const busy = new FakeConn("busy:2");
    w.add(busy);
    for (let i = 0; i < 20; i++) {
      busy.bufferedBytes = 100 + i;
      busy.framesReceived++;
      busy.activity++;
      w.sweep(100);
    }
    expect(busy.closed).toBe(false);
    // A frame completes and nothing is buffered: no partial time is carried over.
    busy.bufferedBytes = 0;
    w.sweep(100);
    busy.bufferedBytes = 10;
    w.sweep(100);
    w.sweep(100);
    expect(busy.closed).toBe(false);
    w.sweep(100);
    expect(busy.closed).toBe(true);
    w.stop();
  });

  test("a removed connection is not watched; no deadline means nothing is watched", () => {
    const { w } = watch(100, 100);
    const c = new FakeConn("gone:1");
    w.add(c);
    w.remove(c);
    for (let i = 0; i < 5; i++) w.sweep(100);
    expect(c.closed).toBe(false);
    w.stop();
    const { w: none } = watch(0, 0);
    expect(none.active).toBe(false);
    const d = new FakeConn("free:1");
    none.add(d);
    for (let i = 0; i < 5; i++) none.sweep(1_000_000);
    expect(d.closed).toBe(false);
    none.stop();
  });
});
