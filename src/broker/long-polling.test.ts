/**
 * PullRequestHoldService with fake connections and an injected clock: a parked pull is re-run
 * when a message at or past its offset arrives (and passes its tag filter), when its hold time
 * ends, or at stop(); never after its connection closed (it is dropped instead, once); and a
 * connection can park only so many.
 */
import { describe, expect, test } from "bun:test";
import type { RemotingConnection } from "../remoting/index.ts";
import { PullRequestHoldService, type HoldOptions } from "./long-polling.ts";

class FakeConn {
  closed = false;
  listeners: ((c: RemotingConnection) => void)[] = [];
  onClose(l: (c: RemotingConnection) => void): void {
    if (this.closed) l(this.asConn);
    else this.listeners.push(l);
  }
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const l of this.listeners.splice(0)) l(this.asConn);
  }
  get asConn(): RemotingConnection {
    return this as unknown as RemotingConnection;
  }
}

function setup(o: Partial<HoldOptions> = {}) {
  const clock = { t: 1_000_000 };
  const svc = new PullRequestHoldService({ holdMaxMs: 20_000, checkIntervalMs: 1000, maxHeldPerConnection: 100, now: () => clock.t, ...o });
  const runs: string[] = [];
  const drops: string[] = [];
  const park = (
    name: string,
    conn: FakeConn,
    p: { topic?: string; queueId?: number; offset?: number; suspendMs?: number; matches?: (code: number) => boolean } = {},
  ): boolean =>
    svc.hold(
      p.topic ?? "T",
      p.queueId ?? 0,
      { conn: conn.asConn, offset: p.offset ?? 0, matches: p.matches, run: () => runs.push(name), drop: () => drops.push(name) },
      p.suspendMs ?? 15_000,
    );
  return { clock, svc, runs, drops, park };
}

describe("PullRequestHoldService", () => {
  test("a message at or past the pull's offset wakes it once; earlier offsets and other queues do not", () => {
    const { svc, runs, park } = setup();
    const c = new FakeConn();
    expect(park("a", c, { offset: 5 })).toBe(true);
    expect(park("other-queue", c, { queueId: 1, offset: 5 })).toBe(true);
    expect(park("other-topic", c, { topic: "U", offset: 5 })).toBe(true);
    expect(svc.heldCount).toBe(3);
    svc.notifyMessageArriving("T", 0, 4, 0);
    expect(runs).toEqual([]);
    svc.notifyMessageArriving("T", 0, 5, 0);
    expect(runs).toEqual(["a"]);
    svc.notifyMessageArriving("T", 0, 6, 0);
    expect(runs).toEqual(["a"]);
    expect(svc.heldCount).toBe(2);
  });

  test("every pull of a queue that the message satisfies wakes, in arrival order", () => {
    const { runs, park, svc } = setup();
    const c1 = new FakeConn();
    const c2 = new FakeConn();
    park("a", c1, { offset: 3 });
    park("b", c2, { offset: 3 });
    park("later", c2, { offset: 9 });
    svc.notifyMessageArriving("T", 0, 3, 0);
    expect(runs).toEqual(["a", "b"]);
    expect(svc.heldCount).toBe(1);
  });

  test("tag filter: a message the subscription does not match leaves the pull parked", () => {
    const { runs, park, svc } = setup();
    const c = new FakeConn();
    park("tagA", c, { matches: (code) => code === 111 });
    park("all", c);
    svc.notifyMessageArriving("T", 0, 0, 222);
    expect(runs).toEqual(["all"]);
    svc.notifyMessageArriving("T", 0, 1, 111);
    expect(runs).toEqual(["all", "tagA"]);
    expect(svc.heldCount).toBe(0);
  });

  test("timeout: re-run at min(suspend, holdMaxMs) by checkTimeouts, not before", () => {
    const { clock, runs, park, svc } = setup({ holdMaxMs: 5000 });
    const c = new FakeConn();
    park("short", c, { suspendMs: 1000 });
    park("capped", c, { suspendMs: 60_000 });
    clock.t += 999;
    svc.checkTimeouts();
    expect(runs).toEqual([]);
    clock.t += 1;
    svc.checkTimeouts();
    expect(runs).toEqual(["short"]);
    clock.t += 3999;
    svc.checkTimeouts();
    expect(runs).toEqual(["short"]);
    clock.t += 1;
    svc.checkTimeouts();
    expect(runs).toEqual(["short", "capped"]);
    expect(svc.heldCount).toBe(0);
  });

  test("the timer started by start() answers a parked pull after its hold time", async () => {
    const svc = new PullRequestHoldService({ holdMaxMs: 20_000, checkIntervalMs: 5, maxHeldPerConnection: 10 });
    const c = new FakeConn();
    let ran = false;
    svc.hold("T", 0, { conn: c.asConn, offset: 0, matches: undefined, run: () => (ran = true) }, 20);
    svc.start();
    try {
      const deadline = Date.now() + 2000;
      while (!ran && Date.now() < deadline) await Bun.sleep(5);
      expect(ran).toBe(true);
    } finally {
      svc.stop();
    }
  });

  test("connection close drops its parked pulls: never run, dropped once, no longer counted", () => {
    const { clock, runs, drops, park, svc } = setup();
    const gone = new FakeConn();
    const stays = new FakeConn();
    park("gone-1", gone);
    park("gone-2", gone, { queueId: 3 });
    park("stays", stays);
    gone.close();
    expect(svc.heldCount).toBe(1);
    svc.notifyMessageArriving("T", 0, 0, 0);
    svc.notifyMessageArriving("T", 3, 0, 0);
    clock.t += 60_000;
    svc.checkTimeouts();
    expect(runs).toEqual(["stays"]);
    expect(drops).toEqual(["gone-1", "gone-2"]);
  });

  test("a pull whose connection is closed (but not yet reported) is dropped, not run, when due", () => {
    const { runs, drops, park, svc } = setup();
    const c = new FakeConn();
    park("a", c);
    c.closed = true; // closed flag set, close listeners not (yet) called
    svc.notifyMessageArriving("T", 0, 0, 0);
    expect(runs).toEqual([]);
    expect(drops).toEqual(["a"]);
    expect(svc.heldCount).toBe(0);
  });

  test("per-connection cap: refused beyond maxHeldPerConnection, other connections unaffected, freed on wake", () => {
    const { runs, park, svc } = setup({ maxHeldPerConnection: 2 });
    const c = new FakeConn();
    const d = new FakeConn();
    expect(park("1", c)).toBe(true);
    expect(park("2", c, { queueId: 1 })).toBe(true);
    expect(park("3", c, { queueId: 2 })).toBe(false);
    expect(park("d", d)).toBe(true);
    expect(svc.heldCount).toBe(3);
    svc.notifyMessageArriving("T", 0, 0, 0);
    expect(runs).toEqual(["1", "d"]);
    expect(park("4", c, { queueId: 2 })).toBe(true);
    expect(park("5", c, { queueId: 2 })).toBe(false);
    // d's pull was answered, so its budget is whole again.
    expect(park("e1", d)).toBe(true);
    expect(park("e2", d)).toBe(true);
    expect(park("e3", d)).toBe(false);
  });

  test("one close listener per connection, however often it parks", () => {
    const { park, svc, runs } = setup();
    const c = new FakeConn();
    for (let i = 0; i < 50; i++) {
      park(`p${i}`, c);
      svc.notifyMessageArriving("T", 0, 0, 0);
    }
    expect(runs.length).toBe(50);
    expect(c.listeners.length).toBe(1);
  });

  test("stop() answers everything still parked (drops those on closed connections) and forgets it", () => {
    const { runs, drops, park, svc } = setup();
    const c = new FakeConn();
    const closed = new FakeConn();
    park("a", c);
    park("b", c, { topic: "U" });
    park("x", closed);
    closed.closed = true;
    svc.stop();
    expect(runs.sort()).toEqual(["a", "b"]);
    expect(drops).toEqual(["x"]);
    expect(svc.heldCount).toBe(0);
    svc.notifyMessageArriving("T", 0, 0, 0);
    expect(runs.length).toBe(2);
  });

  test("a run() that parks again (re-entrancy) during a wake-up is kept", () => {
    const { clock, svc } = setup();
    const c = new FakeConn();
    const runs: string[] = [];
    svc.hold(
      "T",
      0,
      {
        conn: c.asConn,
        offset: 0,
        matches: undefined,
        run: () => {
          runs.push("first");
          svc.hold("T", 0, { conn: c.asConn, offset: 1, matches: undefined, run: () => runs.push("second") }, 1000);
        },
      },
      1000,
    );
    svc.notifyMessageArriving("T", 0, 0, 0);
    expect(runs).toEqual(["first"]);
    expect(svc.heldCount).toBe(1);
    clock.t += 1000;
    svc.checkTimeouts();
    expect(runs).toEqual(["first", "second"]);
  });
});
