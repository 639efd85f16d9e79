/** ConnectRateLimiter (./connect-rate.ts) on a fake clock: the bucket, per host, its refill, and its memory bound. */
import { describe, expect, test } from "bun:test";
import { ConnectRateLimiter, TRACKED_MAX } from "./connect-rate.ts";

function limiter(rate: number) {
  const clock = { ms: 1000 };
  return { l: new ConnectRateLimiter(rate, () => clock.ms), clock };
}

function admitted(l: ConnectRateLimiter, host: string, n: number): number {
  let ok = 0;
  for (let i = 0; i < n; i++) if (l.admit(host)) ok++;
  return ok;
}

describe("ConnectRateLimiter", () => {
  test("a second's worth at once, then the rate; each host has its own bucket", () => {
    const { l, clock } = limiter(10);
    expect(admitted(l, "10.0.0.1", 25)).toBe(10);
    expect(admitted(l, "10.0.0.2", 3)).toBe(3);
    clock.ms += 100; // a tenth of a second: one token back
    expect(admitted(l, "10.0.0.1", 5)).toBe(1);
    clock.ms += 500;
    expect(admitted(l, "10.0.0.1", 10)).toBe(5);
    // Refilled to a second's worth, never more, however long the host was quiet.
    clock.ms += 60_000;
    expect(admitted(l, "10.0.0.1", 100)).toBe(10);
  });

  test("refused attempts take nothing: a steady storm gets exactly the rate", () => {
    const { l, clock } = limiter(100);
    admitted(l, "h", 100);
    let ok = 0;
    for (let ms = 0; ms < 10_000; ms++) {
      clock.ms += 1;
      ok += admitted(l, "h", 5); // 5,000 a second asked
    }
    expect(ok).toBeGreaterThanOrEqual(999);
    expect(ok).toBeLessThanOrEqual(1001);
  });

  test("hosts are forgotten once their bucket is full again; the map never passes TRACKED_MAX", () => {
    const { l, clock } = limiter(2);
    for (let i = 0; i < TRACKED_MAX; i++) l.admit(`h${i}`);
    expect(l.trackedHosts).toBe(TRACKED_MAX);
    // All still refilling: the next new host drops them all rather than grow.
    l.admit("new-1");
    expect(l.trackedHosts).toBe(1);
    for (let i = 0; i < TRACKED_MAX - 1; i++) l.admit(`g${i}`);
    clock.ms += 1000; // every bucket full again
    expect(l.admit("g0")).toBe(true); // known host: refilled, kept
    l.admit("new-2");
    expect(l.trackedHosts).toBe(2);
  });

  test("a rate that is not positive is refused", () => {
    expect(() => new ConnectRateLimiter(0)).toThrow(/must be > 0/);
    expect(() => new ConnectRateLimiter(Number.NaN)).toThrow(/must be > 0/);
  });
});
