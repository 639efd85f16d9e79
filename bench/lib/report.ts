/**
 * The report: RocketBun's figures beside each peer's from the same invocation, RocketBun/peer ratios,
 * RocketBun as a fraction of the machine's ceilings (disk, fdatasync rate, loopback), the issue's
 * targets with how far each is met or missed, and an SVG bar chart.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { int, mib, ms, num, one, pct, ratio } from "./format.ts";
import type { WorkloadParams } from "./measure.ts";
import { peersHarness } from "./peers.ts";
import { POP_POLLERS } from "./pop.ts";
import { rocketmqSection } from "./report-rocketmq.ts";
import { apachePeerId, ROCKETMQ_VERSIONS } from "./rocketmq-peer.ts";
import type { Result } from "./workloads.ts";

type Row = Record<string, unknown>;

export interface ReportInput {
  stamp: string;
  started: string;
  finished: string;
  params: WorkloadParams;
  mode: string;
  machine: Record<string, unknown>;
  rocketbun: Result[];
  peers: Row[];
  peersNote: string;
  /** --rocketmq rows (bench/lib/rocketmq-peer.ts): the Java client against RocketBun and Apache RocketMQ. */
  rocketmq?: Result[];
  rocketmqNote?: string;
  profileDir: string | null;
}

export interface Report {
  json: Record<string, unknown>;
  markdown: string;
  svg: string;
  summary: string;
}

/** The peers' columns; the Apache ones only when `--rocketmq` ran our client against them (rocketmq-ourclient.ts). */
const PEERS = [
  { id: "nats-jetstream", label: "NATS JetStream", short: "NATS", optional: false },
  { id: "redis-streams", label: "Redis Streams", short: "Redis", optional: false },
  ...ROCKETMQ_VERSIONS.map((v) => ({ id: apachePeerId(v), label: `RocketMQ ${v}`, short: v, optional: true })),
] as const;

/** NATS and Redis always (a run without them shows dashes), the Apache columns only when measured. */
function activePeers(rows: Row[]): (typeof PEERS)[number][] {
  return PEERS.filter((p) => !p.optional || rows.some((r) => r.peer === p.id));
}


/**
 * Redis `appendfsync always` W1, the yardstick for W1s: this run's figure when the peers' run measured it
 * (it depends on this run's fdatasync rate, which drifts 2× on this VM between hours); otherwise the
 * median in the peers' RESULTS.md.
 */
function redisAlwaysW1(sameRun: number): { value: number; source: string; sameRun: boolean } {
  if (Number.isFinite(sameRun) && sameRun > 0) return { value: sameRun, source: "same run", sameRun: true };
  return { ...referenceRedisAlwaysW1(), sameRun: false };
}

/** Reference medians from the peers' RESULTS.md for figures this run does not measure (Redis `appendfsync always`). */
function referenceRedisAlwaysW1(): { value: number; source: string } {
  const f = join(peersHarness(), "RESULTS.md");
  try {
    if (existsSync(f)) {
      const line = readFileSync(f, "utf8")
        .split("\n")
        .find((l) => l.startsWith("| redis-streams-fsync-always |"));
      const cell = line?.split("|")[3]?.trim().replace(/,/g, "");
      if (cell && Number(cell) > 0) return { value: Number(cell), source: "median in ../shared/bench-peers/RESULTS.md" };
    }
  } catch {
    /* fall through */
  }
  return { value: 43_002, source: "median quoted in the issue" };
}

interface Metric {
  workload: string;
  metric: string;
  /** true when more is better (throughput), false for latency, CPU, memory, time. */
  higherBetter: boolean;
  fmt: (v: number) => string;
  rb: number;
  peers: Record<string, number>;
  ceiling?: { name: string; value: number; fraction: number };
  note?: string;
}

/**
 * W2p and W3p (bench/lib/pop.ts) beside the Apache columns only: the peers' harness calls NATS's
 * pipelined consume "W2p" too, which is not a POP figure.
 */
function popMetrics(
  add: (x: Metric) => void,
  rb: (w: string, k: string) => number,
  apacheVals: (w: string, k: string) => Record<string, number>,
): void {
  const row = (workload: string, metric: string, key: string, higherBetter: boolean, fmt: (v: number) => string, note?: string) =>
    add({ workload, metric, higherBetter, fmt, rb: rb(workload, key), peers: apacheVals(workload, key), ...(note ? { note } : {}) });
  row("W2p", "msgs/s (pop + ack)", "msgs_per_s", true, int, `POP drain of a backlog: ${POP_POLLERS} pollers, pops of up to 32 from every queue, one ACK_MESSAGE per message`);
  row("W2p", "pop round trip p99 (ms)", "pop_p99_ms", false, ms);
  row("W2p", "server CPU µs/msg", "server_cpu_us_per_msg", false, one);
  row("W3p", "e2e p50 (ms)", "e2e_p50_ms", false, ms, "send stamp → pop answer; long-polling pops (pollTime 15 s), W3's rate");
  row("W3p", "e2e p99 (ms)", "e2e_p99_ms", false, ms);
  row("W3p", "e2e max (ms)", "e2e_max_ms", false, ms);
  row("W3p", "server CPU µs/msg", "server_cpu_us_per_msg", false, one);
}

export function buildReport(input: ReportInput): Report {
  const rbRow = (w: string) => input.rocketbun.find((r) => r.workload === w) as Row | undefined;
  const peerRow = (peer: string, w: string) => input.peers.find((r) => r.peer === peer && r.workload === w);
  const rb = (w: string, k: string) => num(rbRow(w)?.[k]);
  const pr = (peer: string, w: string, k: string) => num(peerRow(peer, w)?.[k]);
  const machine = (w: string, k: string) => num(input.peers.find((r) => r.peer === "machine" && r.workload === w)?.[k]);
  const peers = activePeers(input.peers);
  const peerVals = (w: string, k: string) => Object.fromEntries(peers.map((p) => [p.id, pr(p.id, w, k)]));
  const apacheVals = (w: string, k: string) => Object.fromEntries(peers.filter((p) => p.optional).map((p) => [p.id, pr(p.id, w, k)]));

  const seqMiB = machine("fio-seq-1m-buffered", "mib_per_s");
  const fsyncIops = machine("fio-4k-fdatasync", "iops");
  const bunStreamGbit = machine("bun-tcp-stream", "gbit_per_s");
  const pingP50us = machine("bun-tcp-pingpong", "rtt_p50_ms") * 1000;
  const inflight = input.params.inflight;
  const groupCommitCeiling = fsyncIops * inflight;
  const proc = rbRow("process") ?? {};

  const ceilDisk = (w: string) => {
    const v = rb(w, "mib_per_s") / seqMiB;
    return Number.isFinite(v) ? { name: `disk seq. write ${int(seqMiB)} MiB/s`, value: seqMiB, fraction: v } : undefined;
  };
  const m: Metric[] = [];
  const add = (x: Metric) => m.push(x);
  add({
    workload: "W1",
    metric: "msgs/s",
    higherBetter: true,
    fmt: int,
    rb: rb("W1", "msgs_per_s"),
    peers: peerVals("W1", "msgs_per_s"),
    ceiling: ceilDisk("W1"),
  });
  add({ workload: "W1", metric: "ack p50 (ms)", higherBetter: false, fmt: ms, rb: rb("W1", "ack_p50_ms"), peers: peerVals("W1", "ack_p50_ms") });
  add({ workload: "W1", metric: "ack p99 (ms)", higherBetter: false, fmt: ms, rb: rb("W1", "ack_p99_ms"), peers: peerVals("W1", "ack_p99_ms") });
  add({ workload: "W1", metric: "ack max (ms)", higherBetter: false, fmt: ms, rb: rb("W1", "ack_max_ms"), peers: peerVals("W1", "ack_max_ms") });
  const cpuUs = (peer: string | null, w: string) => {
    const r = peer === null ? rbRow(w) : peerRow(peer, w);
    const n = num(r?.msgs ?? r?.received);
    return (num(r?.server_cpu_s) * 1e6) / n;
  };
  const clientUs = (peer: string | null, w: string) => {
    const r = peer === null ? rbRow(w) : peerRow(peer, w);
    return (num(r?.client_cpu_s) * 1e6) / num(r?.msgs);
  };
  const cpuPeers = (w: string, f: (peer: string | null, w: string) => number) => Object.fromEntries(peers.map((p) => [p.id, f(p.id, w)]));
  add({ workload: "W1", metric: "server CPU µs/msg", higherBetter: false, fmt: one, rb: cpuUs(null, "W1"), peers: cpuPeers("W1", cpuUs) });
  add({ workload: "W1", metric: "client CPU µs/msg", higherBetter: false, fmt: one, rb: clientUs(null, "W1"), peers: cpuPeers("W1", clientUs) });
  const redisAlways = redisAlwaysW1(pr("redis-streams-fsync-always", "W1", "msgs_per_s"));
  const w1sFrac = rb("W1s", "msgs_per_s") / groupCommitCeiling;
  add({
    workload: "W1s",
    metric: "msgs/s (SYNC_FLUSH)",
    higherBetter: true,
    fmt: int,
    rb: rb("W1s", "msgs_per_s"),
    peers: apacheVals("W1s", "msgs_per_s"),
    ...(Number.isFinite(w1sFrac)
      ? { ceiling: { name: `${inflight} × ${int(fsyncIops)} fdatasync/s`, value: groupCommitCeiling, fraction: w1sFrac } }
      : {}),
    note: redisAlways.sameRun
      ? `Redis appendfsync always, same run: ${int(redisAlways.value)} (${ratio(rb("W1s", "msgs_per_s") / redisAlways.value)}), ${one(cpuUs("redis-streams-fsync-always", "W1"))} µs server CPU/msg, ${one((pr("redis-streams-fsync-always", "W1", "device_flushes") * 1000) / pr("redis-streams-fsync-always", "W1", "msgs"))} device flushes / 1k msgs`
      : `Redis appendfsync always: ${int(redisAlways.value)} (${redisAlways.source}, not this run)`,
  });
  add({ workload: "W1s", metric: "ack p99 (ms)", higherBetter: false, fmt: ms, rb: rb("W1s", "ack_p99_ms"), peers: apacheVals("W1s", "ack_p99_ms") });
  add({
    workload: "W1s",
    metric: "device flushes / 1k msgs",
    higherBetter: false,
    fmt: one,
    rb: (rb("W1s", "device_flushes") * 1000) / rb("W1s", "msgs"),
    peers: {},
  });
  // The broker's fdatasync rate against what the disk did just before W1s (bench/run.ts probes it:
  // the rate drifts 2× within an hour here, so the peers' fio figure minutes later is a weak yardstick).
  const w1sFlushRate = (rb("W1s", "device_flushes") / rb("W1s", "msgs")) * rb("W1s", "msgs_per_s");
  const probe = rb("W1s", "disk_fdatasync_per_s_before");
  add({
    workload: "W1s",
    metric: "device flushes/s",
    higherBetter: true,
    fmt: int,
    rb: w1sFlushRate,
    peers: {},
    ...(Number.isFinite(probe) && probe > 0
      ? { ceiling: { name: `${int(probe)} fdatasync/s probed just before W1s`, value: probe, fraction: w1sFlushRate / probe } }
      : {}),
  });
  const w2MiB = rb("W2", "mib_per_s");
  const loopMiB = (bunStreamGbit * 1e9) / 8 / 1048576;
  add({
    workload: "W2",
    metric: "msgs/s",
    higherBetter: true,
    fmt: int,
    rb: rb("W2", "msgs_per_s"),
    peers: peerVals("W2", "msgs_per_s"),
    ...(Number.isFinite(w2MiB / loopMiB)
      ? { ceiling: { name: `Bun loopback ${one(bunStreamGbit)} Gbit/s`, value: loopMiB, fraction: w2MiB / loopMiB } }
      : {}),
    note: Number.isFinite(pr("nats-jetstream", "W2p", "msgs_per_s"))
      ? `NATS pipelined consume(): ${int(pr("nats-jetstream", "W2p", "msgs_per_s"))}`
      : "",
  });
  add({ workload: "W2", metric: "server CPU µs/msg", higherBetter: false, fmt: one, rb: cpuUs(null, "W2"), peers: cpuPeers("W2", cpuUs) });
  add({
    workload: "W2",
    metric: "msgs/s, no collection first (W2nc)",
    higherBetter: true,
    fmt: int,
    rb: rb("W2nc", "msgs_per_s"),
    peers: peerVals("W2", "msgs_per_s"),
    note: "right after W1, W1's body pool still on the client's heap, as the peers' harness runs W2",
  });
  add({
    workload: "W3",
    metric: "e2e p50 (ms)",
    higherBetter: false,
    fmt: ms,
    rb: rb("W3", "e2e_p50_ms"),
    peers: peerVals("W3", "e2e_p50_ms"),
    note: Number.isFinite(pingP50us) ? `Bun ping-pong RTT p50 ${int(pingP50us)} µs` : "",
  });
  add({ workload: "W3", metric: "e2e p99 (ms)", higherBetter: false, fmt: ms, rb: rb("W3", "e2e_p99_ms"), peers: peerVals("W3", "e2e_p99_ms") });
  add({ workload: "W3", metric: "e2e max (ms)", higherBetter: false, fmt: ms, rb: rb("W3", "e2e_max_ms"), peers: peerVals("W3", "e2e_max_ms") });
  popMetrics(add, rb, apacheVals);
  add({
    workload: "W4",
    metric: "msgs/s (128 B)",
    higherBetter: true,
    fmt: int,
    rb: rb("W4", "msgs_per_s"),
    peers: peerVals("W4", "msgs_per_s"),
    ceiling: ceilDisk("W4"),
  });
  add({ workload: "W4", metric: "ack p99 (ms)", higherBetter: false, fmt: ms, rb: rb("W4", "ack_p99_ms"), peers: peerVals("W4", "ack_p99_ms") });
  add({ workload: "W4", metric: "server CPU µs/msg", higherBetter: false, fmt: one, rb: cpuUs(null, "W4"), peers: cpuPeers("W4", cpuUs) });
  add({
    workload: "W5",
    metric: `msgs/s (batches of ${input.params.sendBatch})`,
    higherBetter: true,
    fmt: int,
    rb: rb("W5", "msgs_per_s"),
    peers: {},
    ceiling: ceilDisk("W5"),
  });
  add({ workload: "W5", metric: "batch ack p99 (ms)", higherBetter: false, fmt: ms, rb: rb("W5", "ack_p99_ms"), peers: {} });
  const q6 = rb("W6-send", "queues");
  add({
    workload: "W6",
    metric: "first send to each queue, msgs/s",
    higherBetter: true,
    fmt: int,
    rb: rb("W6-first", "msgs_per_s"),
    peers: {},
    note: `creates each queue's ConsumeQueue file; broker ${one(rb("W6-first", "server_cpu_us_per_msg"))} µs CPU per message`,
  });
  add({
    workload: "W6",
    metric: `send msgs/s (${int(q6)} queues)`,
    higherBetter: true,
    fmt: int,
    rb: rb("W6-send", "msgs_per_s"),
    peers: {},
    ceiling: ceilDisk("W6-send"),
  });
  add({ workload: "W6", metric: "send ack p99 (ms)", higherBetter: false, fmt: ms, rb: rb("W6-send", "ack_p99_ms"), peers: {} });
  add({ workload: "W6", metric: "consume msgs/s", higherBetter: true, fmt: int, rb: rb("W6-consume", "msgs_per_s"), peers: {} });
  add({ workload: "W6", metric: "broker RSS after W6", higherBetter: false, fmt: mib, rb: num(rbRow("W6-consume")?.server_rss_bytes), peers: {} });
  add({
    workload: "memory",
    metric: "server RSS after W1",
    higherBetter: false,
    fmt: mib,
    rb: rb("W1", "server_rss_bytes"),
    peers: peerVals("W1", "server_rss_bytes"),
    note: Number.isFinite(rb("W1", "server_rss_anon_bytes"))
      ? `RocketBun: ${mib(rb("W1", "server_rss_anon_bytes"))} anonymous (heap) + ${mib(rb("W1", "server_rss_file_bytes"))} file-backed ` +
        `(of which ${Number.isFinite(rb("W1", "server_rss_store_bytes")) ? mib(rb("W1", "server_rss_store_bytes")) : "?"} mapped store files; ` +
        `the rest is mostly the executable's own pages)`
      : "",
  });
  add({ workload: "memory", metric: "server RSS idle (fresh start)", higherBetter: false, fmt: mib, rb: num(proc.server_rss_idle_bytes), peers: {} });
  add({
    workload: "memory",
    metric: "server RSS idle after W1–W5",
    higherBetter: false,
    fmt: mib,
    rb: num(proc.server_rss_end_idle_bytes),
    peers: {},
  });
  add({
    workload: "disk",
    metric: "data folder after W1 (allocated)",
    higherBetter: false,
    fmt: mib,
    rb: rb("W1", "data_dir_alloc_bytes"),
    peers: peerVals("W1", "data_dir_alloc_bytes"),
    note: `apparent size ${mib(rb("W1", "data_dir_bytes"))} (files are created full size, sparse)`,
  });
  add({ workload: "start", metric: "master start → accepting (ms)", higherBetter: false, fmt: one, rb: num(proc.master_ready_ms), peers: {} });
  add({
    workload: "start",
    metric: "master restart on W1–W5 data (ms)",
    higherBetter: false,
    fmt: one,
    rb: num(proc.master_restart_ready_ms),
    peers: {},
  });
  add({ workload: "start", metric: "name server start → accepting (ms)", higherBetter: false, fmt: one, rb: num(proc.namesrv_ready_ms), peers: {} });

  // ---- targets (issue 7) ----
  const targets: { target: string; value: string; met: boolean | null; by: string }[] = [];
  const tgt = (target: string, value: number, goal: number, fmt: (v: number) => string, higher: boolean) => {
    if (!Number.isFinite(value) || !Number.isFinite(goal)) {
      targets.push({ target, value: fmt(value), met: null, by: "not measured" });
      return;
    }
    const met = higher ? value >= goal : value <= goal;
    const by = higher ? value / goal : goal / value;
    targets.push({ target, value: fmt(value), met, by: met ? `met (${ratio(by)} of the goal)` : `missed: ${ratio(by)} of the goal (${fmt(goal)})` });
  };
  const w1 = rb("W1", "msgs_per_s");
  tgt("W1 ≥ 1.0× Redis Streams (same run)", w1, pr("redis-streams", "W1", "msgs_per_s"), int, true);
  tgt("W1 ≥ 4× NATS JetStream (same run)", w1, 4 * pr("nats-jetstream", "W1", "msgs_per_s"), int, true);
  tgt(
    `W1s ≥ 2× Redis appendfsync always (${int(redisAlways.value)}, ${redisAlways.sameRun ? "same run" : "reference"})`,
    rb("W1s", "msgs_per_s"),
    2 * redisAlways.value,
    int,
    true,
  );
  const w2 = rb("W2", "msgs_per_s");
  tgt("W2 ≥ 1.0× Redis Streams (same run)", w2, pr("redis-streams", "W2", "msgs_per_s"), int, true);
  tgt("W2 ≥ 3× NATS JetStream (same run)", w2, 3 * pr("nats-jetstream", "W2", "msgs_per_s"), int, true);
  // Issue 19: the client must not halve its speed while its process holds a large heap.
  tgt("W2 without collecting first (W2nc) ≥ 1.0× Redis Streams (same run)", rb("W2nc", "msgs_per_s"), pr("redis-streams", "W2", "msgs_per_s"), int, true);
  tgt("W3 e2e p99 ≤ 1 ms", rb("W3", "e2e_p99_ms"), 1, ms, false);
  tgt("W4 ≥ 1.0× Redis Streams (same run)", rb("W4", "msgs_per_s"), pr("redis-streams", "W4", "msgs_per_s"), int, true);
  const apache5 = apachePeerId("5.3.3");
  tgt("W2p pop + ack ≥ 1.5× Apache 5.3.3 (same run)", rb("W2p", "msgs_per_s"), 1.5 * pr(apache5, "W2p", "msgs_per_s"), int, true);
  tgt("W3p e2e p99 ≤ Apache 5.3.3's (same run)", rb("W3p", "e2e_p99_ms"), pr(apache5, "W3p", "e2e_p99_ms"), ms, false);
  tgt("broker RSS after W1 ≤ 100 MiB", rb("W1", "server_rss_bytes"), 100 * 1048576, mib, false);
  tgt("start to ready ≤ 200 ms", num(proc.master_ready_ms), 200, (v) => `${one(v)} ms`, false);

  // ---- markdown ----
  const out: string[] = [];
  const p = (s = "") => out.push(s);
  const prm = input.params;
  p(`# RocketBun benchmark ${input.stamp}`);
  p();
  p(
    `Mode **${input.mode}**: ${int(prm.msgs)} messages per workload, ${prm.inflight} in flight, ${prm.body} B bodies (W4 ${prm.smallBody} B), ` +
      `W3 at ${int(prm.e2eRate)} msgs/s for ${prm.e2eSecs} s (after 1 s of un-timed warm-up at the same rate), W5 batches of ${prm.sendBatch}, W6 ${int(prm.w6Topics)} topics × ${prm.w6Queues} queues, ` +
      `${int(prm.warmup)} un-timed warm-up sends. Run ${input.started} → ${input.finished}.`,
  );
  const mc = input.machine;
  p(`Machine: ${mc.cpus} vCPU (${mc.cpu_model}), ${mc.ram_gib} GiB RAM, ${mc.os}; bun ${mc.bun}. Client and servers share the CPUs.`);
  p(`Peers: ${input.peersNote}.`);
  p();
  p(
    "RocketBun: name server and master as separate processes of the compiled binary on 127.0.0.1, 1 GiB CommitLog segments, " +
      `pulls of up to ${prm.batch} messages; the project's own client (Producer, PushConsumer) in one Bun process. ` +
      "W1–W5 run on a fresh ASYNC_FLUSH master; W1s on the same store after a restart as SYNC_FLUSH; W6 on a fresh ASYNC_FLUSH master; " +
      "W2p and W3p (POP: a hand-built 5.3.3-style POP consumer, bench/lib/pop.ts) on another fresh one. " +
      (prm.collectBetween === false
        ? "The client process's garbage is not collected between workloads (--no-collect), as in the peers' harness. "
        : "The client process collects its garbage (Bun.gc(true)) before each timed window, so that one workload's 200 MB body pool is not " +
          "collected inside the next one's window; the peers' harness does not do this (`--no-collect` measures without it). ") +
      "Ratios are RocketBun / peer (for latency, CPU, memory and time, below 1× is better).",
  );
  p();
  const peerCols = PEERS.filter((x) => input.peers.some((r) => r.peer === x.id));
  p(
    `| workload | metric | RocketBun | ${peerCols.map((x) => x.label).join(" | ")}${peerCols.length ? " | " : ""}${peerCols.map((x) => `RB / ${x.short}`).join(" | ")}${peerCols.length ? " | " : ""}RB vs ceiling | notes |`,
  );
  p(`|---|---|---:|${peerCols.map(() => "---:|").join("")}${peerCols.map(() => "---:|").join("")}---|---|`);
  for (const x of m) {
    const cells = peerCols.map((pc) => x.fmt(x.peers[pc.id] ?? NaN));
    const ratios = peerCols.map((pc) => ratio(x.rb / (x.peers[pc.id] ?? NaN)));
    const ceil = x.ceiling ? `${pct(x.ceiling.fraction)} of ${x.ceiling.name}` : "";
    p(
      `| ${x.workload} | ${x.metric} | ${x.fmt(x.rb)} | ${cells.join(" | ")}${peerCols.length ? " | " : ""}${ratios.join(" | ")}${peerCols.length ? " | " : ""}${ceil} | ${x.note ?? ""} |`,
    );
  }
  p();
  const java = input.rocketmq === undefined ? null : rocketmqSection(input.rocketmq, input.rocketmqNote ?? "not run");
  if (java) out.push(...java.markdown);
  p("## Targets (issue 7)");
  p();
  p("| target | RocketBun | result |");
  p("|---|---:|---|");
  for (const t of targets) p(`| ${t.target} | ${t.value} | ${t.met === null ? "–" : t.met ? "✅ " : "❌ "}${t.by} |`);
  p();
  p("## Machine ceilings (this run)");
  p();
  const ceilRows = input.peers.filter((r) => r.peer === "machine");
  if (ceilRows.length === 0) p("Not measured (peers not run).");
  else {
    p("| what | figure |");
    p("|---|---|");
    for (const r of ceilRows) {
      const fig =
        r.mib_per_s !== undefined && r.iops === undefined
          ? `${one(num(r.mib_per_s))} MiB/s`
          : r.iops !== undefined
            ? `${int(num(r.iops))} writes+fdatasync/s (fdatasync p50 ${one(num(r.fdatasync_p50_us))} µs)`
            : r.gbit_per_s !== undefined
              ? `${num(r.gbit_per_s)} Gbit/s`
              : r.rtt_p50_ms !== undefined
                ? `1 KiB round trip p50 ${int(num(r.rtt_p50_ms) * 1000)} µs, p99 ${int(num(r.rtt_p99_ms) * 1000)} µs (${int(num(r.round_trips_per_s))}/s)`
                : JSON.stringify(r);
      p(`| ${String(r.workload)} | ${fig} |`);
    }
  }
  p();
  p("## RocketBun detail");
  p();
  p(
    "| workload | msgs/s | latency p50 / p99 / p99.9 / max (ms) | server CPU s | client CPU s | server µs/msg | client µs/msg | device flushes | notes |",
  );
  p("|---|---:|---|---:|---:|---:|---:|---:|---|");
  for (const r of input.rocketbun) {
    if (r.workload === "process") continue;
    const lat =
      r.ack_p50_ms !== undefined
        ? `${ms(num(r.ack_p50_ms))} / ${ms(num(r.ack_p99_ms))} / ${ms(num(r.ack_p999_ms))} / ${ms(num(r.ack_max_ms))} (ack)`
        : r.e2e_p50_ms !== undefined
          ? `${ms(num(r.e2e_p50_ms))} / ${ms(num(r.e2e_p99_ms))} / ${ms(num(r.e2e_p999_ms))} / ${ms(num(r.e2e_max_ms))} (e2e)`
          : "–";
    const notes: string[] = [];
    if (r.failures) notes.push(`${String(r.failures)} failures`);
    if (r.not_send_ok) notes.push(`${String(r.not_send_ok)} not SEND_OK`);
    if (r.stored_msgs !== undefined) notes.push(`stored ${int(num(r.stored_msgs))}`);
    if (r.complete === false) notes.push("INCOMPLETE");
    if (r.dups) notes.push(`${String(r.dups)} duplicates`);
    if (r.consumer_start_ms !== undefined) notes.push(`consumer start() ${one(num(r.consumer_start_ms))} ms`);
    if (r.pops !== undefined)
      notes.push(
        `${int(num(r.pops))} pops (${one(num(r.msgs_per_pop))} msgs per answer, answer p50 ${ms(num(r.pop_p50_ms))} p99 ${ms(num(r.pop_p99_ms))}), ${int(num(r.empty_pops))} empty; ${int(num(r.ack_failures))} acks failed`,
      );
    if (r.workload === "W3" || r.workload === "W3p")
      notes.push(
        `sent ${int(num(r.sent))} at ${int(num(r.achieved_rate))}/s, received ${int(num(r.received))}; publish-ack p50 ${ms(num(r.pub_ack_p50_ms))} p99 ${ms(num(r.pub_ack_p99_ms))}`,
      );
    if (r.workload === "W6-send")
      notes.push(
        `${int(num(r.queues))} queues created in ${int(num(r.topic_create_ms))} ms; RSS ${mib(num(r.server_rss_before_bytes))} → ${mib(num(r.server_rss_bytes))}`,
      );
    if (r.server_rss_bytes !== undefined && r.workload !== "W6-send") notes.push(`RSS ${mib(num(r.server_rss_bytes))}`);
    if (r.loadavg_1m !== undefined) notes.push(`load avg ${one(num(r.loadavg_1m))}`);
    const msgs = num(r.msgs_per_s ?? r.achieved_rate);
    p(
      `| ${r.workload} | ${int(msgs)} | ${lat} | ${one(num(r.server_cpu_s))} | ${one(num(r.client_cpu_s))} | ${one(num(r.server_cpu_us_per_msg))} | ${one(num(r.client_cpu_us_per_msg))} | ${int(num(r.device_flushes))} | ${notes.join("; ")} |`,
    );
  }
  p();
  if (input.profileDir) p(`Broker CPU profiles (bun --cpu-prof-md): \`${input.profileDir}\`.`);
  p(
    "Figures are single runs on a shared 2-vCPU VM: expect ±10 % between runs (tail latencies more). " +
      "W2 reads from the page cache (it runs right after W1). Server CPU is user+sys of the broker process from /proc/<pid>/stat (10 ms ticks).",
  );
  const markdown = out.join("\n") + "\n";

  const json = {
    stamp: input.stamp,
    started: input.started,
    finished: input.finished,
    mode: input.mode,
    params: input.params,
    machine: input.machine,
    peers_note: input.peersNote,
    table: m.map((x) => ({
      workload: x.workload,
      metric: x.metric,
      higher_is_better: x.higherBetter,
      rocketbun: Number.isFinite(x.rb) ? x.rb : null,
      peers: Object.fromEntries(Object.entries(x.peers).map(([k, v]) => [k, Number.isFinite(v) ? v : null])),
      ratios: Object.fromEntries(Object.entries(x.peers).map(([k, v]) => [k, Number.isFinite(x.rb / v) ? x.rb / v : null])),
      ceiling: x.ceiling ?? null,
      note: x.note ?? null,
    })),
    targets,
    rocketbun: input.rocketbun,
    peers: input.peers,
    ...(java ? { rocketmq_note: input.rocketmqNote ?? null, rocketmq_table: java.table, rocketmq_targets: java.targets, rocketmq: input.rocketmq } : {}),
  };
  const svg = chart(input, m);
  const summary = [
    `RocketBun ${input.stamp} (${input.mode}):`,
    ...m
      .filter((x) => x.higherBetter || x.workload === "W3" || x.workload === "W3p")
      .map((x) => `  ${x.workload} ${x.metric}: ${x.fmt(x.rb)}${peerCols.map((pc) => `  ${pc.label} ${x.fmt(x.peers[pc.id] ?? NaN)}`).join("")}`),
    ...targets.map((t) => `  target ${t.met === null ? "?" : t.met ? "ok" : "MISSED"}: ${t.target}: ${t.value} (${t.by})`),
    ...(java?.summary ?? []),
  ].join("\n");
  return { json, markdown, svg, summary };
}

// ---------------------------------------------------------------- SVG chart

const COLORS: Record<string, string> = {
  rocketbun: "#d9480f",
  "nats-jetstream": "#1971c2",
  "redis-streams": "#2f9e44",
  [apachePeerId("4.9.7")]: "#6741d9",
  [apachePeerId("5.3.3")]: "#ae3ec9",
};
const LABELS: Record<string, string> = { rocketbun: "RocketBun", ...Object.fromEntries(PEERS.map((p) => [p.id, p.label])) };

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

interface Panel {
  title: string;
  unit: string;
  fmt: (v: number) => string;
  groups: { label: string; bars: { series: string; value: number }[] }[];
  scale?: number;
}

/** Horizontal grouped bars, one panel per unit (throughput, latency, CPU, memory). */
function chart(input: ReportInput, m: Metric[]): string {
  const find = (w: string, metric: string) => m.find((x) => x.workload === w && x.metric.startsWith(metric));
  const groupOf = (label: string, x: Metric | undefined, scale = 1) => ({
    label,
    bars: [
      { series: "rocketbun", value: (x?.rb ?? NaN) / scale },
      ...activePeers(input.peers).map((p) => ({ series: p.id as string, value: (x?.peers[p.id] ?? NaN) / scale })),
    ].filter((b) => Number.isFinite(b.value)),
  });
  const k = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1)) + "k";
  const panels: Panel[] = [
    {
      title: "Throughput (msgs/s, more is better)",
      unit: "k msgs/s",
      fmt: k,
      groups: [
        groupOf("W1 publish 1 KiB", find("W1", "msgs/s"), 1000),
        groupOf("W1s SYNC_FLUSH", find("W1s", "msgs/s"), 1000),
        groupOf("W2 drain", find("W2", "msgs/s"), 1000),
        groupOf("W2p POP drain (pop + ack)", find("W2p", "msgs/s"), 1000),
        groupOf("W4 publish 128 B", find("W4", "msgs/s"), 1000),
        groupOf("W5 batch send", find("W5", "msgs/s"), 1000),
        groupOf("W6 send, 10k queues", find("W6", "send msgs/s"), 1000),
        groupOf("W6 consume", find("W6", "consume msgs/s"), 1000),
      ],
    },
    {
      title: `W3 (pull) and W3p (POP) end-to-end latency at ${int(input.params.e2eRate)} msgs/s (ms, less is better)`,
      unit: "ms",
      fmt: ms,
      groups: [
        groupOf("W3 p50", find("W3", "e2e p50")),
        groupOf("W3 p99", find("W3", "e2e p99")),
        groupOf("W3p p50", find("W3p", "e2e p50")),
        groupOf("W3p p99", find("W3p", "e2e p99")),
      ],
    },
    {
      title: "Broker CPU per message (µs, less is better)",
      unit: "µs",
      fmt: one,
      groups: [groupOf("W1", find("W1", "server CPU")), groupOf("W2", find("W2", "server CPU")), groupOf("W4", find("W4", "server CPU"))],
    },
    {
      title: "Broker RSS after W1 (MiB, less is better)",
      unit: "MiB",
      fmt: (v) => v.toFixed(0),
      groups: [groupOf("after W1", find("memory", "server RSS after W1"), 1048576)],
    },
  ];
  const W = 900;
  const labelW = 170;
  const barH = 14;
  const gap = 3;
  const groupGap = 10;
  const right = 70;
  let y = 0;
  const parts: string[] = [];
  y += 28;
  parts.push(
    `<text x="${W / 2}" y="20" font-size="16" font-weight="bold" text-anchor="middle">RocketBun vs peers — ${esc(input.stamp)} (${esc(input.mode)})</text>`,
  );
  // legend
  let lx = 20;
  y += 6;
  for (const s of ["rocketbun", ...activePeers(input.peers).map((p) => p.id)]) {
    parts.push(`<rect x="${lx}" y="${y}" width="12" height="12" fill="${COLORS[s]}"/>`);
    parts.push(`<text x="${lx + 16}" y="${y + 10}" font-size="12">${esc(LABELS[s] ?? s)}</text>`);
    lx += 150;
  }
  y += 26;
  for (const panel of panels) {
    const groups = panel.groups.filter((g) => g.bars.length > 0);
    if (groups.length === 0) continue;
    parts.push(`<text x="10" y="${y + 12}" font-size="13" font-weight="bold">${esc(panel.title)}</text>`);
    y += 20;
    const max = Math.max(...groups.flatMap((g) => g.bars.map((b) => b.value)), 1e-9);
    const plotW = W - labelW - right - 10;
    const top = y;
    for (const g of groups) {
      const h = g.bars.length * (barH + gap);
      parts.push(`<text x="${labelW - 8}" y="${y + h / 2 + 4}" font-size="12" text-anchor="end">${esc(g.label)}</text>`);
      for (const b of g.bars) {
        const w = Math.max(1, (b.value / max) * plotW);
        parts.push(
          `<rect x="${labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${COLORS[b.series] ?? "#888"}"><title>${esc(LABELS[b.series] ?? b.series)}: ${esc(panel.fmt(b.value))} ${esc(panel.unit)}</title></rect>`,
        );
        parts.push(`<text x="${(labelW + w + 4).toFixed(1)}" y="${y + barH - 3}" font-size="11">${esc(panel.fmt(b.value))}</text>`);
        y += barH + gap;
      }
      y += groupGap;
    }
    parts.push(`<line x1="${labelW}" y1="${top - 2}" x2="${labelW}" y2="${y - groupGap + 2}" stroke="#333" stroke-width="1"/>`);
    y += 12;
  }
  const H = y + 10;
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n` +
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="DejaVu Sans, Arial, sans-serif">\n` +
    `<rect x="0" y="0" width="${W}" height="${H}" fill="#ffffff"/>\n` +
    parts.join("\n") +
    `\n</svg>\n`
  );
}
