/**
 * The report's `--rocketmq` section: RocketBun and Apache RocketMQ under the same Java client
 * (bench/lib/rocketmq-peer.ts), one column per broker and the ratio RocketBun / each Apache version,
 * and the targets of issue 19 against the oldest version run (the 4.9 line).
 */
import { int, mib, ms, num, one, ratio } from "./format.ts";
import { apachePeerId, JAVA_LOAD_ROCKETBUN, ROCKETMQ_VERSIONS } from "./rocketmq-peer.ts";

type Row = Record<string, unknown>;

interface JavaMetric {
  workload: string;
  metric: string;
  /** The row (workload, or "process") and the figure in it. */
  row: string;
  key: string;
  higherBetter: boolean;
  fmt: (v: number) => string;
}

const METRICS: JavaMetric[] = [];
const metric = (workload: string, name: string, row: string, key: string, higherBetter: boolean, fmt: (v: number) => string) =>
  METRICS.push({ workload, metric: name, row, key, higherBetter, fmt });
for (const [w, what] of [
  ["J1", "send 1 KiB, ASYNC_FLUSH"],
  ["J1s", "send 1 KiB, SYNC_FLUSH"],
  ["J4", "send 128 B, ASYNC_FLUSH"],
] as const) {
  metric(w, `msgs/s (${what})`, w, "msgs_per_s", true, int);
  metric(w, "RT p50 (ms)", w, "ack_p50_ms", false, ms);
  metric(w, "RT p99 (ms)", w, "ack_p99_ms", false, ms);
  metric(w, "RT max (ms)", w, "ack_max_ms", false, ms);
  metric(w, "broker CPU µs/msg", w, "server_cpu_us_per_msg", false, one);
}
metric("J2", "consume msgs/s (drain of J1)", "J2", "msgs_per_s", true, int);
metric("J2", "broker CPU µs/msg", "J2", "server_cpu_us_per_msg", false, one);
metric("memory", "broker RSS idle (fresh start)", "process", "server_rss_idle_bytes", false, mib);
metric("memory", "broker RSS under load (peak during J1)", "process", "server_rss_load_bytes", false, mib);
metric("memory", "broker RSS idle after J1–J4", "process", "server_rss_end_idle_bytes", false, mib);
metric("start", "broker start → accepting (ms)", "process", "broker_ready_ms", false, one);
metric("start", "name server start → accepting (ms)", "process", "namesrv_ready_ms", false, one);
metric("disk", "data folder after J1–J4 (allocated)", "process", "data_dir_alloc_bytes", false, mib);
metric("disk", "data folder after J1–J4 (apparent)", "process", "data_dir_bytes", false, mib);

export interface RocketmqSection {
  markdown: string[];
  table: Record<string, unknown>[];
  targets: { target: string; value: string; met: boolean | null; by: string }[];
  summary: string[];
}

/** The section for `rows` (empty: a line saying why), with `note` naming the client and settings. */
export function rocketmqSection(rows: Row[], note: string): RocketmqSection {
  const out: string[] = ["## Apache RocketMQ and RocketBun under the same Java client (--rocketmq)", ""];
  if (rows.length === 0) return { markdown: [...out, `Not run: ${note}.`, ""], table: [], targets: [], summary: [] };
  const fig = (peer: string, m: JavaMetric) => num(rows.find((r) => r.peer === peer && r.workload === m.row)?.[m.key]);
  const versions = ROCKETMQ_VERSIONS.filter((v) => rows.some((r) => r.peer === apachePeerId(v)));
  const table = METRICS.map((m) => {
    const rb = fig(JAVA_LOAD_ROCKETBUN, m);
    const apache = Object.fromEntries(versions.map((v) => [v, fig(apachePeerId(v), m)]));
    return { workload: m.workload, metric: m.metric, higher_is_better: m.higherBetter, rocketbun: rb, apache, m };
  });
  out.push(
    `${note}. JavaLoad: a fixed count per workload, closed loop of W1 (each thread awaits SEND_OK), nearest-rank percentiles of every send; ` +
      "RocketMQ's example benchmark Producer/Consumer print only average and maximum RT over 10 s windows and run until stopped, so they are not used. " +
      "Ratios are RocketBun / Apache (for RT, CPU, memory and time, below 1× is better).",
    "",
    `| workload | metric | RocketBun | ${versions.map((v) => `RocketMQ ${v} | RB / ${v}`).join(" | ")} |`,
    `|---|---|---:|${versions.map(() => "---:|---:|").join("")}`,
  );
  for (const t of table) {
    const cells = versions.map((v) => `${t.m.fmt(t.apache[v] ?? NaN)} | ${ratio(t.rocketbun / (t.apache[v] ?? NaN))}`);
    out.push(`| ${t.workload} | ${t.metric} | ${t.m.fmt(t.rocketbun)} | ${cells.join(" | ")} |`);
  }
  out.push("");
  const targets = issueTargets(table, versions[0]);
  if (targets.length) {
    out.push(`### Targets (issue 19, against RocketMQ ${versions[0]})`, "", "| target | RocketBun / RocketMQ | result |", "|---|---:|---|");
    for (const t of targets) out.push(`| ${t.target} | ${t.value} | ${t.met === null ? "–" : t.met ? "✅ " : "❌ "}${t.by} |`);
    out.push("");
  }
  const json = table.map(({ m, ...rest }) => ({
    ...rest,
    rocketbun: Number.isFinite(rest.rocketbun) ? rest.rocketbun : null,
    apache: Object.fromEntries(versions.map((v) => [v, Number.isFinite(rest.apache[v]) ? rest.apache[v] : null])),
    ratios: Object.fromEntries(versions.map((v) => [v, Number.isFinite(rest.rocketbun / rest.apache[v]!) ? rest.rocketbun / rest.apache[v]! : null])),
    unit: m.key,
  }));
  const summary = table
    .filter((t) => t.m.higherBetter || t.m.key === "ack_p99_ms")
    .map((t) => `  java ${t.workload} ${t.metric}: RocketBun ${t.m.fmt(t.rocketbun)}${versions.map((v) => `  RocketMQ ${v} ${t.m.fmt(t.apache[v] ?? NaN)}`).join("")}`);
  summary.push(...targets.map((t) => `  target ${t.met === null ? "?" : t.met ? "ok" : "MISSED"}: ${t.target}: ${t.value} (${t.by})`));
  return { markdown: out, table: json, targets, summary };
}

type TableRow = { metric: string; workload: string; rocketbun: number; apache: Record<string, number>; m: JavaMetric };

/** Issue 19's targets as ratios RocketBun / Apache `v`: throughput at least `goal`×, the rest at most `goal`×. */
function issueTargets(table: TableRow[], v: string | undefined): RocketmqSection["targets"] {
  if (v === undefined) return [];
  const r = (w: string, key: string) => {
    const t = table.find((x) => x.workload === w && x.m.key === key);
    return t ? t.rocketbun / (t.apache[v] ?? NaN) : NaN;
  };
  const goals: [string, number, number, boolean][] = [
    ["send msgs/s, ASYNC_FLUSH (J1) ≥ 1.5×", r("J1", "msgs_per_s"), 1.5, true],
    ["send msgs/s, SYNC_FLUSH (J1s) ≥ 1.5×", r("J1s", "msgs_per_s"), 1.5, true],
    ["send RT p99, ASYNC_FLUSH (J1) ≤ 1×", r("J1", "ack_p99_ms"), 1, false],
    ["send RT p99, SYNC_FLUSH (J1s) ≤ 1×", r("J1s", "ack_p99_ms"), 1, false],
    ["consume msgs/s (J2) ≥ 1.5×", r("J2", "msgs_per_s"), 1.5, true],
    ["broker RSS under load ≤ 1/5", r("memory", "server_rss_load_bytes"), 0.2, false],
    ["broker RSS idle ≤ 1/10", r("memory", "server_rss_idle_bytes"), 0.1, false],
    ["broker start to ready ≤ 1/10", r("start", "broker_ready_ms"), 0.1, false],
  ];
  return goals.map(([target, value, goal, higher]) => {
    if (!Number.isFinite(value)) return { target, value: "–", met: null, by: "not measured" };
    const met = higher ? value >= goal : value <= goal;
    const by = higher ? value / goal : goal / value;
    return { target, value: ratio(value), met, by: met ? `met (${ratio(by)} of the goal)` : `missed: ${ratio(by)} of the goal (${ratio(goal)})` };
  });
}
