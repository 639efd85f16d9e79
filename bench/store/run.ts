/**
 * bench/store: append and read throughput of the MessageStore beside the disk's own ceilings,
 * measured in the same run, and the process RSS after storing several GiB. A benchmark, not a test.
 *
 *   npx bun bench/store/run.ts [--gib N] [--quick] [--only a,b] [--cpu-prof] [--keep]
 *
 *   --gib N      GiB stored by the RSS workload (default 4; --quick 0.5)
 *   --quick      200 MiB append workloads instead of 2 GiB, fewer sync puts (under 2 minutes)
 *   --only       run only the named workloads (see WORKLOADS below; ceilings always run)
 *   --cpu-prof   profile every child (bun --cpu-prof-md) into bench/results/profiles-<stamp>/
 *   --keep       keep the temp folder (default: removed at the end and on failure)
 *   BENCH_DIR    where the temp folder goes (default os.tmpdir(); use the disk the broker will use)
 *
 * Each workload runs in a fresh child process (bench/store/workload.ts) so that its RSS and heap
 * are its own. Results: a table on stdout, and bench/results/store-<stamp>.json and .md.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { parseHostAddress, recordSize } from "../../src/commitlog/index.ts";
import {
  BODY_BYTES,
  fmt,
  fmtInt,
  GiB,
  MiB,
  parseJsonLine,
  round,
  TAG,
  TOPIC,
  type AppendParams,
  type AppendResult,
  type CpuDelta,
  type MemSample,
  type RawSyncResult,
  type RawWriteResult,
  type ReadResult,
  type WorkloadResult,
} from "./common.ts";

const HERE = import.meta.dir;
const PROJECT = resolve(HERE, "../..");
const RESULTS = join(PROJECT, "bench/results");

// ---------------------------------------------------------------- arguments

interface Args {
  gib: number;
  quick: boolean;
  only: Set<string> | null;
  cpuProf: boolean;
  keep: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { gib: NaN, quick: false, only: null, cpuProf: false, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i]!;
    if (x === "--quick") a.quick = true;
    else if (x === "--cpu-prof") a.cpuProf = true;
    else if (x === "--keep") a.keep = true;
    else if (x === "--gib" || x.startsWith("--gib=")) {
      const v = Number(x.includes("=") ? x.split("=")[1] : argv[++i]);
      if (!(v > 0)) throw new Error(`--gib needs a positive number`);
      a.gib = v;
    } else if (x === "--only" || x.startsWith("--only=")) {
      a.only = new Set((x.includes("=") ? x.split("=")[1]! : (argv[++i] ?? "")).split(",").filter(Boolean));
    } else if (x === "--help" || x === "-h") {
      console.log("usage: bun bench/store/run.ts [--gib N] [--quick] [--only a,b] [--cpu-prof] [--keep]");
      process.exit(0);
    } else throw new Error(`unknown argument ${x}`);
  }
  if (Number.isNaN(a.gib)) a.gib = a.quick ? 0.5 : 4;
  return a;
}

// ---------------------------------------------------------------- helpers

function sh(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "";
  }
}

function hasCommand(cmd: string): boolean {
  return sh("sh", ["-c", `command -v ${cmd}`]) !== "";
}

function stamp(d = new Date()): string {
  return d
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
}

function say(line = ""): void {
  process.stdout.write(`${line}\n`);
}

/** The stored size of one benchmark record (1 KiB body, TAGS=TagA, optionally KEYS). */
function benchRecordBytes(): number {
  const enc = new TextEncoder();
  try {
    return recordSize({
      topic: enc.encode(TOPIC),
      queueId: 0,
      flag: 0,
      body: new Uint8Array(BODY_BYTES),
      properties: enc.encode(`TAGS\u0001${TAG}`),
      sysFlag: 0,
      bornTimestamp: 0,
      bornHost: parseHostAddress("127.0.0.1:50000"),
      storeHost: parseHostAddress("127.0.0.1:10911"),
      reconsumeTimes: 0,
      preparedTransactionOffset: 0,
    });
  } catch {
    return 1134;
  }
}

// ---------------------------------------------------------------- children

let currentChild: { pid: number; kill: (sig?: number | NodeJS.Signals) => void } | null = null;

interface ChildOutcome<T> {
  result: T | null;
  error: string | null;
  wall_s: number;
}

async function runChild<T extends WorkloadResult>(
  label: string,
  name: string,
  dir: string,
  params: object,
  timeoutS: number,
  profDir: string | null,
): Promise<ChildOutcome<T>> {
  const args = [process.execPath];
  if (profDir) args.push("--cpu-prof-md", `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${label}.md`);
  args.push(join(HERE, "workload.ts"), name, dir, JSON.stringify(params));
  process.stderr.write(`\n▶ ${label}\n`);
  const t0 = performance.now();
  const proc = Bun.spawn(args, { stdout: "pipe", stderr: "inherit", cwd: PROJECT });
  currentChild = proc;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill("SIGKILL");
  }, timeoutS * 1000);
  const out = await new Response(proc.stdout).text();
  const code = await proc.exited;
  clearTimeout(timer);
  currentChild = null;
  const wall = (performance.now() - t0) / 1000;
  let result: T | null = null;
  try {
    result = parseJsonLine<T>(out);
  } catch (e) {
    return { result: null, error: `unparsable result: ${String(e)}`, wall_s: wall };
  }
  if (timedOut) return { result: null, error: `killed after ${timeoutS} s`, wall_s: wall };
  if (code !== 0 || !result) return { result: null, error: `exit code ${code}${result ? "" : ", no result line"}`, wall_s: wall };
  return { result, error: null, wall_s: wall };
}

interface FioSeq {
  tool: string;
  mib_per_s: number;
  runtime_s: number;
}

interface FioSync {
  tool: string;
  iops: number;
  fdatasync_p50_ms: number | null;
  fdatasync_p99_ms: number | null;
}

function fio(dir: string, args: string[]): Record<string, unknown> | null {
  const d = mkdtempSync(join(dir, "fio-"));
  try {
    const out = execFileSync("fio", [`--directory=${d}`, "--output-format=json", ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      maxBuffer: 64 * MiB,
    });
    const json = JSON.parse(out.slice(out.indexOf("{"))) as { jobs: Record<string, unknown>[] };
    return json.jobs[0] ?? null;
  } catch (e) {
    process.stderr.write(`  fio failed: ${String(e)}\n`);
    return null;
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
}

function fioSeq(dir: string, bytes: number): FioSeq | null {
  process.stderr.write(`\n▶ fio: sequential 1 MiB buffered writes + end_fsync, ${round(bytes / MiB, 0)} MiB\n`);
  const j = fio(dir, ["--name=seq1m", "--rw=write", "--bs=1M", `--size=${Math.ceil(bytes / MiB)}M`, "--ioengine=psync", "--end_fsync=1"]) as {
    write?: { bw_bytes: number };
    job_runtime?: number;
  } | null;
  if (!j?.write) return null;
  return { tool: sh("fio", ["--version"]), mib_per_s: round(j.write.bw_bytes / MiB, 1), runtime_s: round((j.job_runtime ?? 0) / 1000, 2) };
}

function fioSync(dir: string, seconds: number): FioSync | null {
  process.stderr.write(`\n▶ fio: 4 KiB writes + fdatasync each, ${seconds} s\n`);
  const j = fio(dir, [
    "--name=sync4k",
    "--rw=write",
    "--bs=4k",
    "--size=1G",
    "--ioengine=psync",
    "--fdatasync=1",
    `--runtime=${seconds}`,
    "--time_based",
  ]) as {
    write?: { iops: number };
    sync?: { lat_ns?: { percentile?: Record<string, number> } };
  } | null;
  if (!j?.write) return null;
  const pct = j.sync?.lat_ns?.percentile;
  const ms = (k: string) => (pct?.[k] !== undefined ? round(pct[k]! / 1e6, 3) : null);
  return { tool: sh("fio", ["--version"]), iops: Math.round(j.write.iops), fdatasync_p50_ms: ms("50.000000"), fdatasync_p99_ms: ms("99.000000") };
}

// ---------------------------------------------------------------- tables

function table(head: string[], rows: string[][]): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(w[i]!)).join(" | ")} |`;
  return [line(head), `|${w.map((n) => "-".repeat(n + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

const lat = (l: { p50_ms: number; p99_ms: number; max_ms: number }) => `${fmt(l.p50_ms)} / ${fmt(l.p99_ms)} / ${fmt(l.max_ms)}`;
const cpuCell = (c: CpuDelta) => `${fmt(c.cpu)} (${fmt(c.user)} usr + ${fmt(c.sys)} sys) / ${c.machine_busy === null ? "?" : fmt(c.machine_busy)}`;
const mem = (m: MemSample) =>
  `${fmtInt(m.rss_mib)} MiB (${m.rss_anon_mib === null ? "?" : fmtInt(m.rss_anon_mib)} anon + ${m.rss_file_mib === null ? "?" : fmtInt(m.rss_file_mib)} file)`;

// ---------------------------------------------------------------- main

interface Plan {
  appendBytes: number;
  recordBytes: number;
  appendMsgs: number;
  syncSingleMsgs: number;
  syncBatchMsgs: number;
  keysMsgs: number;
  rssMsgs: number;
  rssGib: number;
  fdatasyncSeconds: number;
  maxSeconds: number;
  rssMaxSeconds: number;
  idleAfterMs: number;
}

const WORKLOADS = [
  "append-async-single",
  "read-warm",
  "read-cold",
  "append-async-batch",
  "append-sync-single",
  "append-sync-batch",
  "keys-baseline",
  "keys",
  "rss",
] as const;
type WorkloadName = (typeof WORKLOADS)[number];

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const started = new Date();
  const st = stamp(started);
  const warnings: string[] = [];
  const base = process.env.BENCH_DIR ?? tmpdir();
  mkdirSync(base, { recursive: true });
  const root = mkdtempSync(join(base, "rocketbun-bench-store-"));
  let cleaned = false;
  const cleanup = () => {
    if (cleaned) return;
    cleaned = true;
    if (args.keep) process.stderr.write(`kept ${root}\n`);
    else rmSync(root, { recursive: true, force: true });
  };
  const onSignal = (sig: NodeJS.Signals) => {
    process.stderr.write(`\n${sig}: stopping\n`);
    if (currentChild) currentChild.kill("SIGKILL");
    cleanup();
    process.exit(130);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    // ---------------------------------------------------------- where and what
    const df = sh("df", ["-hT", root]).split("\n").at(-1) ?? "";
    const findmnt = sh("findmnt", ["-no", "SOURCE,FSTYPE,OPTIONS", "-T", root]);
    const sameFs = statSync(root).dev === statSync(PROJECT).dev;
    const git = sh("git", ["-C", PROJECT, "rev-parse", "--short", "HEAD"]);
    const dirty = sh("git", ["-C", PROJECT, "status", "--porcelain", "src/commitlog"]).split("\n").filter(Boolean).length;
    const cpuModel = cpus()[0]?.model ?? "?";
    const load = loadavg().map((x) => round(x, 2));
    const busy = sh("ps", ["-eo", "pcpu,comm", "--sort=-pcpu", "--no-headers"])
      .split("\n")
      .map((l) => l.trim().split(/\s+/))
      .filter((f) => Number(f[0]) >= 10)
      .map((f) => `${f[1]} ${f[0]}%`)
      .slice(0, 5);
    const meta = {
      started: started.toISOString(),
      command: `bun bench/store/run.ts ${process.argv.slice(2).join(" ")}`.trim(),
      machine: `${cpus().length} vCPU (${cpuModel}), ${round(totalmem() / GiB, 1)} GiB RAM, kernel ${sh("uname", ["-r"])}`,
      bun: Bun.version,
      git: `${git}${dirty ? ` + ${dirty} uncommitted change(s) in src/commitlog` : ""}`,
      dir: root,
      same_filesystem_as_project: sameFs,
      df,
      mount: findmnt,
      loadavg_at_start: load,
    };
    if (load[0]! > 0.5 * cpus().length) {
      warnings.push(
        `the machine was busy at start (load average ${load.join(" ")}${busy.length ? `; ${busy.join(", ")}` : ""}): figures are lower and noisier than on an idle machine`,
      );
    }

    // ---------------------------------------------------------- sizes, scaled to free space
    const recordBytes = benchRecordBytes();
    let appendBytes = args.quick ? 200 * MiB : 2 * GiB;
    let rssGib = args.gib;
    const fs = statfsSync(root);
    const free = fs.bavail * fs.bsize;
    const headroom = 5 * GiB;
    // Peak use: the largest of the append store (kept for the reads) and the RSS store, plus the
    // 1 GiB segment being preallocated (sparse) and the IndexFile of the keys workload.
    const need = () => Math.max(appendBytes, rssGib * GiB) * 1.1 + 1 * GiB;
    if (free - headroom < need()) {
      const f = (free - headroom - 1 * GiB) / (Math.max(appendBytes, rssGib * GiB) * 1.1);
      if (f < 0.05) throw new Error(`only ${round(free / GiB, 1)} GiB free in ${base}: not enough for this benchmark`);
      appendBytes = Math.floor(appendBytes * Math.min(1, f));
      rssGib = round(rssGib * Math.min(1, f), 2);
      warnings.push(`only ${round(free / GiB, 1)} GiB free: scaled down to ${round(appendBytes / MiB, 0)} MiB appends and a ${rssGib} GiB RSS run`);
    }
    const appendMsgs = Math.floor(appendBytes / recordBytes);
    const plan: Plan = {
      appendBytes: appendMsgs * recordBytes,
      recordBytes,
      appendMsgs,
      syncSingleMsgs: args.quick ? 20_000 : 100_000,
      syncBatchMsgs: args.quick ? 50_000 : 300_000,
      keysMsgs: Math.min(appendMsgs, args.quick ? 100_000 : 500_000),
      rssMsgs: Math.floor((rssGib * GiB) / recordBytes),
      rssGib,
      fdatasyncSeconds: 3,
      maxSeconds: args.quick ? 30 : 120,
      rssMaxSeconds: args.quick ? 45 : 240,
      idleAfterMs: args.quick ? 0 : 16_000,
    };
    const want = (w: WorkloadName) => !args.only || args.only.has(w);
    const profDir = args.cpuProf ? join(RESULTS, `profiles-${st}`) : null;
    if (profDir) mkdirSync(profDir, { recursive: true });

    say(`RocketBun bench/store — ${meta.started}`);
    say(`command:  ${meta.command}${args.quick ? " (quick)" : ""}`);
    say(`machine:  ${meta.machine}; bun ${meta.bun}; git ${meta.git}`);
    say(`dir:      ${root} (${sameFs ? "same filesystem as the project" : "NOT the project's filesystem"})`);
    say(`df:       ${df}`);
    say(`mount:    ${findmnt}`);
    say(
      `sizes:    ${fmtInt(plan.appendMsgs)} × ${recordBytes} B records = ${round(plan.appendBytes / MiB, 0)} MiB per async append workload; ` +
        `RSS workload ${plan.rssGib} GiB (${fmtInt(plan.rssMsgs)} msgs); ${round(free / GiB, 1)} GiB free`,
    );
    for (const w of warnings) say(`WARNING:  ${w}`);
    if (!sameFs) warnings.push("the temp folder is not on the project's filesystem (set BENCH_DIR)");

    // ---------------------------------------------------------- ceilings
    const errors: Record<string, string> = {};
    const results: Record<string, WorkloadResult> = {};
    const note = (label: string, o: ChildOutcome<WorkloadResult>) => {
      if (o.result) results[label] = o.result;
      else {
        errors[label] = o.error ?? "failed";
        process.stderr.write(`  ✗ ${label}: ${errors[label]}\n`);
      }
    };
    note("raw-write", await runChild<RawWriteResult>("raw-write", "raw-write", root, { bytes: plan.appendBytes }, 600, null));
    const hasFio = hasCommand("fio");
    const fioSeqRes = hasFio ? fioSeq(root, plan.appendBytes) : null;
    note("raw-fdatasync", await runChild<RawSyncResult>("raw-fdatasync", "raw-fdatasync", root, { seconds: plan.fdatasyncSeconds }, 60, null));
    const fioSyncRes = hasFio ? fioSync(root, plan.fdatasyncSeconds) : null;
    if (!hasFio) warnings.push("fio is not installed: the disk ceiling is Bun's own writer only (apt-get install fio to cross-check)");

    // ---------------------------------------------------------- store workloads
    const appendParams = (over: Partial<AppendParams>): AppendParams => ({
      flush: "ASYNC_FLUSH",
      batch: 1,
      inflight: 32,
      messages: plan.appendMsgs,
      keys: false,
      rssEveryBytes: 256 * MiB,
      yieldEvery: 1,
      maxSeconds: plan.maxSeconds,
      idleAfterMs: 0,
      keepStore: false,
      ...over,
    });
    const timeout = (p: AppendParams) => p.maxSeconds + p.idleAfterMs / 1000 + 180;
    const append = async (label: WorkloadName, p: AppendParams) => {
      if (!want(label)) return;
      note(label, await runChild<AppendResult>(label, "append", join(root, label), p, timeout(p), profDir));
    };

    const mainStore = join(root, "append-async-single");
    const needMainStore = want("read-warm") || want("read-cold");
    if (want("append-async-single") || needMainStore) {
      const p = appendParams({ keepStore: needMainStore });
      note("append-async-single", await runChild<AppendResult>("append-async-single", "append", mainStore, p, timeout(p), profDir));
    }
    const written = (results["append-async-single"] as AppendResult | undefined)?.messages ?? 0;
    for (const [label, cold] of [
      ["read-warm", false],
      ["read-cold", true],
    ] as const) {
      if (!want(label) || written === 0) continue;
      note(label, await runChild<ReadResult>(label, "read", mainStore, { expected: written, cold }, 600, profDir));
    }
    rmSync(mainStore, { recursive: true, force: true });

    await append("append-async-batch", appendParams({ batch: 32 }));
    await append("append-sync-single", appendParams({ flush: "SYNC_FLUSH", messages: plan.syncSingleMsgs }));
    await append("append-sync-batch", appendParams({ flush: "SYNC_FLUSH", batch: 32, messages: plan.syncBatchMsgs }));
    await append("keys-baseline", appendParams({ messages: plan.keysMsgs }));
    await append("keys", appendParams({ messages: plan.keysMsgs, keys: true }));
    await append("rss", appendParams({ messages: plan.rssMsgs, maxSeconds: plan.rssMaxSeconds, idleAfterMs: plan.idleAfterMs }));
    // The disk ceiling once more: on a shared VM it drifts, so the run is bracketed by two measurements.
    note("raw-write-end", await runChild<RawWriteResult>("raw-write-end", "raw-write", root, { bytes: plan.appendBytes }, 600, null));

    // ---------------------------------------------------------- report
    const finished = new Date();
    const raw = results["raw-write"] as RawWriteResult | undefined;
    const rawEnd = results["raw-write-end"] as RawWriteResult | undefined;
    const rawSync = results["raw-fdatasync"] as RawSyncResult | undefined;
    // The best the disk showed in this run (the store's target is relative to what the disk can do).
    const ceiling = Math.max(raw?.mib_per_s ?? NaN, rawEnd?.mib_per_s ?? NaN, fioSeqRes?.mib_per_s ?? NaN);
    const pct = (mibs: number) => (Number.isFinite(ceiling) ? `${Math.round((mibs / ceiling) * 100)}%` : "–");

    const md: string[] = [];
    const out = (s = "") => {
      md.push(s);
      say(s);
    };
    say();
    out(`## Disk ceilings (same run, ${root.replace(/\/[^/]+$/, "")})`);
    out();
    const ceilRows: string[][] = [];
    const rawRow = (r: RawWriteResult, when: string) =>
      ceilRows.push([
        `sequential 1 MiB buffered writes + 1 fdatasync, ${fmt(r.bytes / GiB)} GiB (Bun writeSync), ${when}`,
        `${fmt(r.mib_per_s)} MiB/s`,
        `writes ${fmt(r.write_s)} s (page cache ${fmt(r.mib_per_s_page_cache)} MiB/s) + fdatasync ${fmt(r.fdatasync_s)} s; CPU ${cpuCell(r.cpu)}`,
      ]);
    if (raw) rawRow(raw, "start of run");
    if (fioSeqRes)
      ceilRows.push([
        `same, fio psync --end_fsync=1, start of run`,
        `${fmt(fioSeqRes.mib_per_s)} MiB/s`,
        `${fioSeqRes.tool}, ${fmt(fioSeqRes.runtime_s)} s`,
      ]);
    if (rawEnd) rawRow(rawEnd, "end of run");
    if (rawSync) {
      ceilRows.push([
        `4 KiB write + fdatasync, QD1, ${rawSync.seconds} s (Bun) — sync-mode ceiling`,
        `${fmtInt(rawSync.ops_per_s)} fdatasync/s`,
        `fdatasync p50 / p99 / max ${lat(rawSync.latency)} ms`,
      ]);
    }
    if (fioSyncRes) {
      ceilRows.push([
        `same, fio --fdatasync=1`,
        `${fmtInt(fioSyncRes.iops)} fdatasync/s`,
        `fdatasync p50 / p99 ${fioSyncRes.fdatasync_p50_ms ?? "?"} / ${fioSyncRes.fdatasync_p99_ms ?? "?"} ms`,
      ]);
    }
    out(table(["ceiling", "value", "detail"], ceilRows));
    out();
    out(`% of seq ceiling below = MiB/s / ${fmt(ceiling)} MiB/s, the best sequential figure above.`);
    out();

    out(`## Store workloads (1 topic × 8 queues, ${BODY_BYTES} B random bodies, ${recordBytes} B records, 32 calls in flight)`);
    out();
    const rows: string[][] = [];
    const ap = (k: string) => results[k] as AppendResult | undefined;
    const appendRow = (label: string, desc: string, r: AppendResult, extra: string[] = []) => {
      const notes = [...extra];
      if (r.cut_by_time_limit) notes.push(`CUT at the ${r.params.maxSeconds} s limit`);
      if (r.failures) notes.push(`${fmtInt(r.failures)} failed: ${r.first_failure}`);
      notes.push(`durable incl. closing flush ${fmt(r.mib_per_s_durable)} MiB/s`);
      if (r.proc_io)
        notes.push(
          `this process wrote ${fmtInt(r.proc_io.mib_written)} MiB (${fmt(r.proc_io.mib_written / (r.stored_bytes / MiB))}× the CommitLog bytes)`,
        );
      if (r.disk) notes.push(`device (machine-wide) wrote ${fmtInt(r.disk.mib_written)} MiB`);
      if (r.stored_bytes > 0) notes.push(`${fmtInt(r.cpu.minor_faults / (r.stored_bytes / MiB))} page faults per MiB`);
      const syncs = r.fdatasyncs ? `${fmtInt(r.fdatasyncs.commitlog)}` : "?";
      rows.push([
        label,
        desc,
        fmtInt(r.messages),
        fmtInt(r.msgs_per_s),
        fmt(r.mib_per_s),
        pct(r.mib_per_s),
        lat(r.latency),
        syncs,
        cpuCell(r.cpu),
        mem(r.rss_final),
        notes.join("; "),
      ]);
    };
    const a1 = ap("append-async-single");
    if (a1) appendRow("append-async-single", "ASYNC_FLUSH, putMessage", a1);
    for (const k of ["read-warm", "read-cold"] as const) {
      const r = results[k] as ReadResult | undefined;
      if (!r) continue;
      const notes: string[] = [];
      if (r.messages !== r.expected) notes.push(`READ ${fmtInt(r.messages)} OF ${fmtInt(r.expected)}`);
      if (r.header_mismatches) notes.push(`${r.header_mismatches} bad headers`);
      if (Object.keys(r.unexpected_statuses).length) notes.push(`statuses ${JSON.stringify(r.unexpected_statuses)}`);
      notes.push(r.views_not_copies ? "views into the mapping" : "COPIES");
      if (r.disk) notes.push(`device read ${fmtInt(r.disk.mib_read)} MiB while draining`);
      if (r.cold) notes.push(`page cache of ${r.evicted_files} files dropped before open`);
      notes.push(
        `open ${fmt(r.open_ms)} ms` +
          (r.disk_open ? ` (device read ${fmtInt(r.disk_open.mib_read)} / wrote ${fmtInt(r.disk_open.mib_written)} MiB)` : "") +
          `, RSS after open ${mem(r.rss_after_open)}`,
      );
      rows.push([
        k,
        `reopen, getMessage(…, 32) per queue${r.cold ? ", cold cache" : ""}`,
        fmtInt(r.messages),
        fmtInt(r.msgs_per_s),
        fmt(r.mib_per_s),
        "–",
        lat(r.latency),
        "–",
        cpuCell(r.cpu),
        mem(r.rss_final),
        notes.join("; "),
      ]);
    }
    const a2 = ap("append-async-batch");
    if (a2) appendRow("append-async-batch", "ASYNC_FLUSH, putMessages 32 × 1 KiB", a2, ["a batch goes to one queue"]);
    for (const k of ["append-sync-single", "append-sync-batch"] as const) {
      const r = ap(k);
      if (!r) continue;
      const extra: string[] = [];
      if (r.fdatasyncs && r.fdatasyncs.commitlog > 0) {
        const perSec = r.fdatasyncs.commitlog / r.elapsed_s;
        extra.push(
          `${fmt(r.messages / r.fdatasyncs.commitlog)} msgs per CommitLog fdatasync, ${fmtInt(perSec)} fdatasync/s${rawSync ? ` (${Math.round((perSec / rawSync.ops_per_s) * 100)}% of the raw rate)` : ""}`,
        );
      }
      appendRow(k, k.endsWith("single") ? "SYNC_FLUSH, putMessage" : "SYNC_FLUSH, putMessages 32 × 1 KiB", r, extra);
    }
    const kb = ap("keys-baseline");
    const kk = ap("keys");
    if (kb) appendRow("keys-baseline", "as append-async-single, fewer msgs", kb);
    if (kk)
      appendRow(
        "keys",
        "same with KEYS=key-<i> (IndexFile)",
        kk,
        kb ? [`${round((1 - kk.msgs_per_s / kb.msgs_per_s) * 100, 1)}% slower than keys-baseline`] : [],
      );
    const rs = ap("rss");
    if (rs) appendRow("rss", `ASYNC_FLUSH, putMessage, ${rs.params.messages === plan.rssMsgs ? plan.rssGib : "?"} GiB`, rs);
    out(
      table(
        [
          "workload",
          "what",
          "msgs",
          "msgs/s",
          "MiB/s",
          "% of seq ceiling",
          "latency p50 / p99 / max ms",
          "CommitLog fdatasyncs",
          "CPU ours (usr + sys) / machine",
          "RSS at end",
          "notes",
        ],
        rows,
      ),
    );
    out();
    out(
      "MiB/s = CommitLog bytes (records incl. headers) per second until the last put was acknowledged; % of seq ceiling = that / the Bun sequential-write ceiling above. " +
        "Latency = one putMessage(s)/getMessage call, awaited. CPU = the workload process's CPU-seconds per wall second (2 = both vCPUs busy), user + system, then the whole machine's over the same interval (the difference is other processes). " +
        "RSS at end = right after the last put (before shutdown): anon (JS heap, malloc) + file (mapped segments). " +
        "The 32 in-flight loops yield to the event loop together after every call (one shared setImmediate turn), as the requests of one socket read do in a broker.",
    );
    out();

    // RSS series
    let verdict = "";
    if (rs) {
      out(`## RSS while storing ${fmt(rs.stored_bytes / GiB)} GiB (rss workload: sampled every 256 MiB stored)`);
      out();
      const series = [...rs.rss_series, rs.rss_final];
      const srows = series.map((m, i) => [
        i === series.length - 1 ? `${fmt(m.stored_mib / 1024)} (end)` : fmt(m.stored_mib / 1024),
        fmt(m.t_s),
        fmtInt(m.rss_mib),
        m.rss_anon_mib === null ? "?" : fmtInt(m.rss_anon_mib),
        m.rss_file_mib === null ? "?" : fmtInt(m.rss_file_mib),
        fmtInt(m.heap_used_mib),
      ]);
      if (rs.rss_after_idle) {
        const m = rs.rss_after_idle;
        srows.push([
          `after ${rs.params.idleAfterMs / 1000} s idle`,
          fmt(m.t_s),
          fmtInt(m.rss_mib),
          m.rss_anon_mib === null ? "?" : fmtInt(m.rss_anon_mib),
          m.rss_file_mib === null ? "?" : fmtInt(m.rss_file_mib),
          fmtInt(m.heap_used_mib),
        ]);
      }
      out(table(["stored GiB", "t s", "RSS MiB", "anon MiB", "file MiB", "heapUsed MiB"], srows));
      out();
      // Growth over the second half of the run (the store may keep a couple of 1 GiB segments
      // mapped by design; what must not happen is RSS still climbing once those are full).
      const last = rs.rss_final;
      const peak = series.reduce((a, m) => (m.rss_mib > a.rss_mib ? m : a), series[0]!);
      const first = series.find((m) => m.stored_mib >= last.stored_mib / 2) ?? series[0]!;
      const dGiB = (last.stored_mib - first.stored_mib) / 1024;
      const per = (a: number | null, b: number | null) => (a !== null && b !== null && dGiB > 0 ? (b - a) / dGiB : NaN);
      const slope = per(first.rss_mib, last.rss_mib);
      const idle = rs.rss_after_idle
        ? `; after ${rs.params.idleAfterMs / 1000} s idle: ${fmtInt(rs.rss_after_idle.rss_mib)} MiB (${fmtInt(rs.rss_after_idle.rss_file_mib ?? NaN)} file-backed)`
        : "";
      const numbers =
        `${fmtInt(first.rss_mib)} MiB at ${fmt(first.stored_mib / 1024)} GiB stored → ${fmtInt(last.rss_mib)} MiB at ${fmt(last.stored_mib / 1024)} GiB ` +
        `(${slope >= 0 ? "+" : ""}${fmtInt(slope)} MiB per GiB stored: anon ${fmtInt(per(first.rss_anon_mib, last.rss_anon_mib))}, ` +
        `file-backed ${fmtInt(per(first.rss_file_mib, last.rss_file_mib))}); peak ${fmtInt(peak.rss_mib)} MiB at ${fmt(peak.stored_mib / 1024)} GiB; ` +
        `heapUsed ${fmtInt(last.heap_used_mib)} MiB (Bun counts mapped segments in it)${idle}`;
      if (last.stored_mib < 2048 || dGiB < 0.5) {
        verdict = `inconclusive with ${fmt(rs.stored_bytes / GiB)} GiB stored (segments are 1 GiB; run with --gib 4 or more): ${numbers}`;
      } else {
        verdict = `RSS ${slope > 100 ? "GROWS" : "does not grow"} with stored size over the second half of the run: ${numbers}`;
      }
      out(`Verdict: ${verdict}`);
      out();
    }
    if (Object.keys(errors).length) {
      out("## Failed workloads");
      out();
      for (const [k, e] of Object.entries(errors)) out(`- ${k}: ${e}`);
      out();
    }
    if (warnings.length) {
      out("## Warnings");
      out();
      for (const w of warnings) out(`- ${w}`);
      out();
    }
    const others = Object.entries(results)
      .map(([k, r]) => [k, "cpu" in r && r.cpu.machine_busy !== null ? r.cpu.machine_busy - r.cpu.cpu : 0] as const)
      .filter(([, o]) => o > 0.3);
    if (others.length) {
      out(`Other processes used CPU during: ${others.map(([k, o]) => `${k} (${fmt(o)} CPUs)`).join(", ")} — those figures are disturbed.`);
      out();
    }
    const elapsed = (finished.getTime() - started.getTime()) / 1000;
    out(`Total run time ${fmt(elapsed)} s.${profDir ? ` CPU profiles: ${profDir}` : ""}`);

    mkdirSync(RESULTS, { recursive: true });
    if (!existsSync(join(RESULTS, ".gitignore"))) writeFileSync(join(RESULTS, ".gitignore"), "*\n!.gitignore\n");
    const header = [
      `# bench/store — ${meta.started}`,
      "",
      `- command: \`${meta.command}\``,
      `- machine: ${meta.machine}; bun ${meta.bun}; git ${meta.git}`,
      `- dir: ${root} (${sameFs ? "same filesystem as the project" : "not the project's filesystem"}); \`${df}\`; mount \`${findmnt}\``,
      `- sizes: ${fmtInt(plan.appendMsgs)} × ${recordBytes} B per async append workload (${round(plan.appendBytes / MiB, 0)} MiB); sync single ${fmtInt(plan.syncSingleMsgs)}, sync batch ${fmtInt(plan.syncBatchMsgs)}, keys ${fmtInt(plan.keysMsgs)}; RSS run ${plan.rssGib} GiB`,
      `- store options: 1 GiB CommitLog segments, 300,000 ConsumeQueue units per file, index 5,000,000 slots × 20,000,000 entries, flushIntervalMs 500, checkpointIntervalMs 1000 (bench/store/workload.ts benchStoreOptions)`,
      "",
    ];
    const base_ = join(RESULTS, `store-${st}`);
    writeFileSync(`${base_}.md`, `${[...header, ...md].join("\n")}\n`);
    writeFileSync(
      `${base_}.json`,
      `${JSON.stringify({ meta: { ...meta, finished: finished.toISOString(), elapsed_s: round(elapsed, 1) }, plan, ceilings: { raw_write: raw ?? null, fio_seq: fioSeqRes, raw_fdatasync: rawSync ?? null, fio_fdatasync: fioSyncRes }, workloads: results, rss_verdict: verdict, errors, warnings }, null, 2)}\n`,
    );
    say(`\nwrote ${base_}.json and .md`);
    return Object.keys(errors).length ? 1 : 0;
  } finally {
    cleanup();
  }
}

process.exitCode = await main().catch((e) => {
  process.stderr.write(`bench/store failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  return 1;
});
