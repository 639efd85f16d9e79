/**
 * The report's target checks read the right yardstick: same-run peer figures when the peers' run
 * measured them, and for W1s Redis `appendfsync always` of this run, falling back to the
 * reference median (labelled) only when this run has none. No figure here is a measurement.
 */
import { describe, expect, test } from "bun:test";
import { STANDARD } from "./measure.ts";
import { buildReport, type ReportInput } from "./report.ts";

function input(peers: ReportInput["peers"]): ReportInput {
  return {
    stamp: "20990101T000000Z",
    started: "2099-01-01T00:00:00.000Z",
    finished: "2099-01-01T00:05:00.000Z",
    params: STANDARD,
    mode: "standard",
    machine: {},
    rocketbun: [{ peer: "rocketbun", workload: "W1s", msgs: 200_000, msgs_per_s: 30_000, device_flushes: 12_000, server_cpu_s: 5 }],
    peers,
    peersNote: "test",
    profileDir: null,
  };
}

const w1sTarget = (peers: ReportInput["peers"]) => {
  const r = buildReport(input(peers));
  const targets = r.json.targets as { target: string; value: string; met: boolean | null; by: string }[];
  return { target: targets.find((t) => t.target.startsWith("W1s"))!, markdown: r.markdown };
};

describe("report: W1s against Redis appendfsync always", () => {
  test("a same-run Redis `always` figure is the yardstick, and the W1s row says so", () => {
    const { target, markdown } = w1sTarget([
      { peer: "redis-streams-fsync-always", workload: "W1", msgs: 200_000, msgs_per_s: 20_000, server_cpu_s: 4, device_flushes: 12_500 },
    ]);
    expect(target.target).toContain("(20,000, same run)");
    expect(target.met).toBe(false);
    expect(target.by).toContain("0.75× of the goal (40,000)");
    expect(markdown).toContain("Redis appendfsync always, same run: 20,000 (1.50×), 20.0 µs server CPU/msg, 62.5 device flushes / 1k msgs");
  });

  test("without one, the reference median is used and labelled as not from this run", () => {
    const { target, markdown } = w1sTarget([]);
    expect(target.target).toMatch(/\(\d[\d,]*, reference\)/);
    expect(markdown).toContain("not this run");
  });
});
