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

describe("report: the --rocketmq section", () => {
  const rows = (peer: string, k: number): ReportInput["peers"] => [
    { peer, workload: "J1", msgs: 1000, msgs_per_s: 30_000 * k, ack_p50_ms: 1 / k, ack_p99_ms: 4 / k, ack_max_ms: 9 / k, server_cpu_us_per_msg: 20 / k },
    { peer, workload: "J1s", msgs: 1000, msgs_per_s: 10_000 * k, ack_p50_ms: 3, ack_p99_ms: 8, ack_max_ms: 20 },
    { peer, workload: "J2", msgs: 1000, msgs_per_s: 50_000 * k },
    { peer, workload: "process", server_rss_idle_bytes: 400 * 1048576 / k, server_rss_load_bytes: 600 * 1048576 / k, broker_ready_ms: 3000 / k },
  ];
  const withJava = (r: ReportInput["peers"], note = "test note") => buildReport({ ...input([]), rocketmq: r as ReportInput["rocketbun"], rocketmqNote: note });

  test("each figure beside Apache's, with the ratio RocketBun / Apache and the issue's targets", () => {
    const r = withJava([...rows("rocketbun-java", 2), ...rows("apache-rocketmq-4.9.7", 1)]);
    expect(r.markdown).toContain("| RocketBun | RocketMQ 4.9.7 | RB / 4.9.7 |");
    expect(r.markdown).toContain("| J1 | msgs/s (send 1 KiB, ASYNC_FLUSH) | 60,000 | 30,000 | 2.00× |");
    expect(r.markdown).toContain("| J1 | RT p99 (ms) | 2.00 | 4.00 | 0.50× |");
    expect(r.markdown).toContain("| memory | broker RSS under load (peak during J1) | 300 MiB | 600 MiB | 0.50× |");
    const targets = r.json.rocketmq_targets as { target: string; met: boolean | null; by: string }[];
    const t = (prefix: string) => targets.find((x) => x.target.startsWith(prefix))!;
    expect(t("send msgs/s, ASYNC_FLUSH").met).toBe(true);
    expect(t("send RT p99, SYNC_FLUSH").met).toBe(true);
    expect(t("broker RSS under load").met).toBe(false);
    expect(t("broker RSS under load").by).toContain("missed: 0.40× of the goal (0.20×)");
    expect(t("broker start to ready").met).toBe(false);
    expect(r.summary).toContain("java J1 msgs/s (send 1 KiB, ASYNC_FLUSH): RocketBun 60,000  RocketMQ 4.9.7 30,000");
  });

  test("skipped (no java): the section says why; without the flag there is no section", () => {
    expect(withJava([], "skipped: java not on the PATH").markdown).toContain("Not run: skipped: java not on the PATH.");
    const plain = buildReport(input([]));
    expect(plain.markdown).not.toContain("--rocketmq");
    expect(plain.json.rocketmq_table).toBeUndefined();
  });
});

describe("report: our client against Apache RocketMQ (--rocketmq)", () => {
  test("an Apache column and ratio beside the peers, W1s included; absent without its rows", () => {
    const apache = [
      { peer: "apache-rocketmq-4.9.7", workload: "W1", msgs: 200_000, msgs_per_s: 20_000, ack_p99_ms: 8 },
      { peer: "apache-rocketmq-4.9.7", workload: "W1s", msgs: 200_000, msgs_per_s: 15_000, ack_p99_ms: 6 },
    ];
    const r = buildReport(input(apache));
    expect(r.markdown).toContain("| RocketMQ 4.9.7 | RB / 4.9.7 |");
    expect(r.markdown).toContain("| W1s | msgs/s (SYNC_FLUSH) | 30,000 | 15,000 | 2.00× |");
    expect(r.markdown).not.toContain("RocketMQ 5.3.3");
    expect(r.svg).toContain("RocketMQ 4.9.7");
    expect(buildReport(input([])).svg).not.toContain("RocketMQ");
  });
});

describe("report: the POP workloads (W2p, W3p) beside Apache RocketMQ 5.3.3", () => {
  const pop = (peer: string, k: number) => [
    { peer, workload: "W2p", msgs: 200_000, msgs_per_s: 10_000 * k, pop_p99_ms: 8 / k, server_cpu_us_per_msg: 40 / k },
    { peer, workload: "W3p", sent: 50_000, received: 50_000, e2e_p50_ms: 1 / k, e2e_p99_ms: 6 / k, e2e_max_ms: 20 / k },
  ];
  const report = (rb: number) =>
    buildReport({ ...input([...pop("apache-rocketmq-5.3.3", 1), { peer: "nats-jetstream", workload: "W2p", msgs_per_s: 99_999 }]), rocketbun: pop("rocketbun", rb) });
  const target = (r: ReturnType<typeof report>, prefix: string) =>
    (r.json.targets as { target: string; met: boolean | null; by: string }[]).find((t) => t.target.startsWith(prefix))!;

  test("each figure in the 5.3.3 column with its ratio; NATS's own \"W2p\" (pipelined consume) is not a POP figure", () => {
    const r = report(2);
    expect(r.markdown).toContain("| RocketBun | NATS JetStream | RocketMQ 5.3.3 | RB / NATS | RB / 5.3.3 |");
    expect(r.markdown).toContain("| W2p | msgs/s (pop + ack) | 20,000 | – | 10,000 | – | 2.00× |");
    expect(r.markdown).toContain("| W3p | e2e p99 (ms) | 3.00 | – | 6.00 | – | 0.50× |");
    expect(r.markdown).not.toMatch(/\| W2p \|[^\n]*99,999/);
  });

  test("the targets: 1.5× Apache's pop + ack throughput and a p99 no higher than Apache's, same run", () => {
    expect(target(report(2), "W2p pop + ack ≥ 1.5×").met).toBe(true);
    expect(target(report(1.2), "W2p pop + ack ≥ 1.5×").by).toContain("missed: 0.80× of the goal (15,000)");
    expect(target(report(2), "W3p e2e p99").met).toBe(true);
    expect(target(report(0.5), "W3p e2e p99").met).toBe(false);
    expect(target(buildReport(input([])), "W2p pop + ack").by).toBe("not measured");
  });
});
