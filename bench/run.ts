/**
 * RocketBun's broker benchmark beside real peers, measured in the same invocation on the same machine.
 *
 *   npx bun run bench                     # everything: build, RocketBun W1–W6, Apache RocketMQ under the Java
 *                                         # client, then the peers (limits, NATS, Redis)
 *   npx bun run bench -- --quick          # MSGS=20000, E2E_SECS=2 for RocketBun and the peers
 *   npx bun run bench -- --no-peers       # RocketBun only
 *   npx bun bench/run.ts --smoke --no-peers   # a few thousand messages (the CI smoke test)
 *
 *   --quick        20,000 messages, W3 for 2 s (peers too; their fio runs shortened)
 *   --smoke        3,000 messages, W3 for 1 s, W6 on 50 topics (implies nothing about the peers)
 *   --no-peers     skip ../shared/bench-peers
 *   --peers-from F read the peers' figures from an existing all.jsonl instead of running them
 *   --cpu-prof     run the broker from the sources under `bun --cpu-prof-md` (profile in the results folder);
 *                  with --rocketmq also RocketBun's broker under the Java client (one profile per flush mode)
 *   --only LIST    RocketBun workloads to run, e.g. W1,W2 (default all: W1,W2,W3,W4,W5,W1s,W6,W2p,W3p);
 *                  with --rocketmq and only POP workloads (W2p,W3p), only those run against Apache 5.3.3
 *   --out DIR      results folder (default bench/results)
 *   --keep         keep the temp folder (binary, stores, logs)
 *   --acl          broker.aclEnable with one admin account; every client signs (the cost of ACL)
 *   --no-collect   do not collect the client's garbage before each timed window (the peers' harness does not)
 *   --binary FILE  use this rocketbun binary instead of building one into the temp folder
 *   --rocketmq[=V,V]  Apache RocketMQ (default 4.9.7,5.3.3): RocketBun and each version under the same
 *                  Java client (bench/lib/rocketmq-peer.ts: J1 J2 J4 J1s), then our client's W1–W4 and W1s
 *                  against each version and W2p, W3p against 5.3.3 (bench/lib/rocketmq-ourclient.ts,
 *                  columns beside NATS and Redis);
 *                  skipped with one line without java/mvn. On by default in a whole run with peers (also
 *                  --quick); off with --smoke, --no-peers, --only, --acl, --cpu-prof unless given
 *   --no-rocketmq  without Apache RocketMQ
 *   --rebuild F.json  re-render F's .md, .svg (and .png) from its figures, measuring nothing
 *   BENCH_DIR      where the temp folder goes (default the OS temp folder, the disk the peers use too)
 *   BENCH_PEERS    the peers' harness (default ../shared/bench-peers beside the project); it runs from a
 *                  writable copy, BENCH_PEERS_WORK (default <tmp>/bench-peers), never in the shared folder
 *
 * Order: name server; master #1 (ASYNC_FLUSH, fresh store): warm-up, W1, W2 without collecting the
 * client's garbage first (W2nc), W2 (drains W1 again, another group), W3, W4, W5;
 * master #2 (SYNC_FLUSH, restarted on #1's store): warm-up, W1s; master #3 (ASYNC_FLUSH, fresh
 * store): W6; master #4 (ASYNC_FLUSH, fresh store): the POP workloads W2p, W3p (bench/lib/pop.ts);
 * with Apache RocketMQ on (the default of a whole run), the Java-client runs (RocketBun, then each Apache version) and our client
 * against each Apache version; then the peers. Writes bench/results/<stamp>.json, .md and .svg.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import {
  Admin,
  BENCH_ACL_CREDENTIALS,
  BENCH_ACL_FILE,
  PROJECT,
  startMaster,
  startNamesrv,
  type FlushDiskType,
  type Launcher,
  type Proc,
} from "./lib/cluster.ts";
import { diskUsage, fdatasyncProbe, round, rssBytes, sleep, STANDARD, type WorkloadParams } from "./lib/measure.ts";
import { peersCommand, peersHarness, readJsonl, runPeers } from "./lib/peers.ts";
import { loadProfile, summarize, summaryMarkdown } from "./lib/profile.ts";
import { buildReport, type Report } from "./lib/report.ts";
import { popWorkloads, POP_WORKLOADS } from "./lib/pop.ts";
import { ourClientOnApache, popOnApache } from "./lib/rocketmq-ourclient.ts";
import { ROCKETMQ_VERSIONS, rocketmqMissing, runRocketmqPeers, type RocketmqVersion } from "./lib/rocketmq-peer.ts";
import {
  batchWorkload,
  drainWorkload,
  e2eWorkload,
  manyQueuesWorkload,
  newProducer,
  publishWorkload,
  result,
  warmup,
  type Ctx,
  type Result,
} from "./lib/workloads.ts";

export interface BenchArgs {
  quick: boolean;
  smoke: boolean;
  peers: boolean;
  peersFrom: string | null;
  cpuProf: boolean;
  only: Set<string> | null;
  out: string;
  keep: boolean;
  /** Use this binary instead of building one. */
  binary: string | null;
  /** Run the broker with ACL on (one admin account) and every client signing. */
  acl: boolean;
  /** Re-render the .md/.svg of an earlier run from its .json (no measuring). */
  rebuild: string | null;
  /** Collect the client's garbage before each timed window (default; --no-collect). */
  collect: boolean;
  /**
   * The Apache RocketMQ versions to run beside RocketBun under the Java client; null = off. On by
   * default in a whole run with peers (`npm run bench`, also --quick), off for --smoke, --no-peers,
   * --only, --acl and --cpu-prof runs (each measures something else); --rocketmq forces it on,
   * --no-rocketmq off.
   */
  rocketmq: RocketmqVersion[] | null;
}

const ALL = ["W1", "W2", "W3", "W4", "W5", "W1s", "W6", ...POP_WORKLOADS];

/** The `--acl` rules file, written once into the run's temp folder. */
function aclFile(tmp: string): string {
  const file = join(tmp, "plain_acl.yml");
  if (!existsSync(file)) writeFileSync(file, BENCH_ACL_FILE);
  return file;
}

export function parseBenchArgs(argv: string[]): BenchArgs {
  const a: BenchArgs = {
    quick: false,
    smoke: false,
    peers: true,
    peersFrom: null,
    cpuProf: false,
    only: null,
    out: join(PROJECT, "bench/results"),
    keep: false,
    binary: null,
    acl: false,
    rebuild: null,
    collect: true,
    rocketmq: null,
  };
  const value = (i: number, x: string) => (x.includes("=") ? x.slice(x.indexOf("=") + 1) : argv[i + 1]);
  /** undefined = not said: decided below from the kind of run. */
  let rocketmq: RocketmqVersion[] | null | undefined;
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i]!;
    const name = x.includes("=") ? x.slice(0, x.indexOf("=")) : x;
    if (x === "--quick") a.quick = true;
    else if (x === "--smoke") a.smoke = true;
    else if (x === "--no-peers") a.peers = false;
    else if (x === "--cpu-prof") a.cpuProf = true;
    else if (x === "--keep") a.keep = true;
    else if (x === "--acl") a.acl = true;
    else if (x === "--no-collect") a.collect = false;
    else if (name === "--rocketmq") rocketmq = parseVersions(x.includes("=") ? x.slice(x.indexOf("=") + 1) : null);
    else if (x === "--no-rocketmq") rocketmq = null;
    else if (name === "--only" || name === "--out" || name === "--peers-from" || name === "--binary" || name === "--rebuild") {
      const v = value(i, x);
      if (!v) throw new Error(`${name} needs a value`);
      if (!x.includes("=")) i++;
      if (name === "--only") {
        a.only = new Set(v.split(",").filter(Boolean));
        for (const w of a.only) if (!ALL.includes(w)) throw new Error(`--only: unknown workload ${w} (expected ${ALL.join(",")})`);
      } else if (name === "--out") a.out = resolve(v);
      else if (name === "--binary") a.binary = resolve(v);
      else if (name === "--rebuild") a.rebuild = resolve(v);
      else a.peersFrom = resolve(v);
    } else if (x === "--help" || x === "-h") {
      process.stdout.write(
        "usage: bun bench/run.ts [--quick|--smoke] [--no-peers] [--peers-from all.jsonl] [--cpu-prof] [--only W1,W2,...,W2p,W3p] [--out DIR] [--keep] [--no-collect] [--binary FILE] [--rocketmq[=4.9.7,5.3.3] | --no-rocketmq]\n",
      );
      process.exit(0);
    } else throw new Error(`unknown argument ${x}`);
  }
  const wholeRun = !a.smoke && a.peers && a.only === null && !a.acl && !a.cpuProf;
  a.rocketmq = rocketmq !== undefined ? rocketmq : wholeRun ? [...ROCKETMQ_VERSIONS] : null;
  return a;
}

/** `--rocketmq` alone: every version; `--rocketmq=4.9.7`: those named. */
function parseVersions(v: string | null): RocketmqVersion[] {
  if (v === null) return [...ROCKETMQ_VERSIONS];
  const out = v.split(",").filter(Boolean);
  for (const x of out) if (!(ROCKETMQ_VERSIONS as readonly string[]).includes(x)) throw new Error(`--rocketmq: unknown version ${x} (expected ${ROCKETMQ_VERSIONS.join(",")})`);
  return out as RocketmqVersion[];
}

export function paramsFor(a: BenchArgs): WorkloadParams {
  const base = { ...STANDARD, collectBetween: a.collect };
  if (a.smoke) return { ...base, msgs: 2000, e2eRate: 1000, e2eSecs: 1, warmup: 300, w6Topics: 20, w6MaxSecs: 5, idleMs: 200 };
  if (a.quick) return { ...base, msgs: 20_000, e2eSecs: 2, w6MaxSecs: 30 };
  return base;
}

const log = (msg: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

function stampNow(): string {
  return new Date()
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
}

function build(outfile: string): void {
  const r = Bun.spawnSync([process.execPath, join(PROJECT, "scripts/build-binary.ts"), "--outfile", outfile], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`building the binary failed:\n${r.stdout.toString()}${r.stderr.toString()}`);
  log(r.stdout.toString().trim());
}

/** Runs RocketBun's workloads; returns their result lines (one per workload plus "process" figures). */
export async function runRocketbun(a: BenchArgs, p: WorkloadParams, tmp: string, profDir: string | null): Promise<Result[]> {
  const want = (w: string) => a.only === null || a.only.has(w);
  const launcher: Launcher = {};
  if (profDir) launcher.cpuProfDir = profDir;
  else if (a.binary) launcher.binary = a.binary;
  else {
    launcher.binary = join(tmp, "rocketbun");
    build(launcher.binary);
  }
  const results: Result[] = [];
  const ns = await startNamesrv(launcher.binary ? { binary: launcher.binary } : {}, join(tmp, "ns"));
  const procs: Proc[] = [ns];
  const proc: Result = result("process", { namesrv_ready_ms: round(ns.readyMs, 1) });
  try {
    const storeA = join(tmp, "store-a");
    const master = async (flush: FlushDiskType, store: string): Promise<{ m: Proc; ctx: Ctx; close: () => Promise<void> }> => {
      const acl = a.acl ? aclFile(tmp) : undefined;
      const opts = { namesrv: ns.addr, storeDir: store, flushDiskType: flush, pullBatchMax: p.batch, ...(acl ? { aclFile: acl } : {}) };
      const m = await startMaster(launcher, join(tmp, "master"), opts);
      procs.push(m);
      const credentials = a.acl ? { ...BENCH_ACL_CREDENTIALS } : undefined;
      const admin = new Admin(ns.addr, m.addr, credentials);
      const ctx: Ctx = { namesrv: ns.addr, admin, brokerPid: m.pid, dataDir: store, p, log, ...(credentials ? { credentials } : {}) };
      return {
        m,
        ctx,
        close: async () => {
          await admin.close();
          const code = await m.stop();
          if (code !== 0) log(`master exited with ${code}:\n${m.output().slice(-4000)}`);
        },
      };
    };

    const phaseA = ["W1", "W2", "W3", "W4", "W5"].some(want);
    if (phaseA || want("W1s")) {
      // ---- master #1: ASYNC_FLUSH, fresh store ----
      const { m, ctx, close } = await master("ASYNC_FLUSH", storeA);
      proc.master_ready_ms = round(m.readyMs, 1);
      log(`master (ASYNC_FLUSH) ready in ${m.readyMs.toFixed(1)} ms (pid ${m.pid})`);
      await sleep(p.idleMs);
      proc.server_rss_idle_bytes = rssBytes(m.pid);
      if (phaseA) {
        const producer = await newProducer(ctx, "bench-producer");
        await warmup(ctx, producer, "warm");
        log("warm-up done");
        if (want("W1") || want("W2")) {
          const r = await publishWorkload(ctx, producer, "W1", "w1", p.body);
          results.push(r);
          log(`W1: ${r.msgs_per_s} msgs/s, ack p50/p99/max ${r.ack_p50_ms}/${r.ack_p99_ms}/${r.ack_max_ms} ms`);
          if (want("W2")) {
            // Issue 19 asks for W2 also without the collection before its window, as the peers'
            // harness runs it: first that drain (W2nc, right after W1, W1's body pool still on the
            // heap), then the usual collected W2 with a group of its own. --no-collect runs W2 once.
            if (p.collectBetween) {
              const nc = await drainWorkload({ ...ctx, p: { ...p, collectBetween: false } }, "W2nc", "w1", Number(r.stored_msgs));
              results.push(nc);
              log(`W2 without collecting first: ${nc.msgs_per_s} msgs/s (${nc.msgs} msgs, complete ${nc.complete})`);
            }
            const r2 = await drainWorkload(ctx, "W2", "w1", Number(r.stored_msgs));
            results.push(r2);
            log(`W2: ${r2.msgs_per_s} msgs/s (${r2.msgs} msgs, complete ${r2.complete})`);
          }
        }
        if (want("W3")) {
          const r = await e2eWorkload(ctx, producer, "w3");
          results.push(r);
          log(`W3: e2e p50/p99/max ${r.e2e_p50_ms}/${r.e2e_p99_ms}/${r.e2e_max_ms} ms (${r.received}/${r.sent})`);
        }
        if (want("W4")) {
          const r = await publishWorkload(ctx, producer, "W4", "w4", p.smallBody);
          results.push(r);
          log(`W4: ${r.msgs_per_s} msgs/s`);
        }
        if (want("W5")) {
          const r = await batchWorkload(ctx, producer, "w5");
          results.push(r);
          log(`W5: ${r.msgs_per_s} msgs/s`);
        }
        await producer.shutdown();
        await sleep(p.idleMs);
        proc.server_rss_end_idle_bytes = rssBytes(m.pid);
      }
      const du = diskUsage(storeA);
      proc.data_dir_bytes_end = du?.apparent;
      proc.data_dir_alloc_bytes_end = du?.allocated;
      await close();
    }

    if (want("W1s")) {
      // ---- master #2: SYNC_FLUSH, restarted on the same store (start-up with data) ----
      const { m, ctx, close } = await master("SYNC_FLUSH", storeA);
      proc.master_restart_ready_ms = round(m.readyMs, 1);
      log(`master (SYNC_FLUSH) restarted on the store in ${m.readyMs.toFixed(1)} ms`);
      const producer = await newProducer(ctx, "bench-producer-sync");
      await warmup(ctx, producer, "warm-sync");
      const probe = fdatasyncProbe(storeA);
      log(`disk just before W1s: ${probe.syncs_per_s} fdatasync/s (16 KiB each, p50 ${probe.p50_ms} ms)`);
      const r = await publishWorkload(ctx, producer, "W1s", "w1s", p.body);
      r.disk_fdatasync_per_s_before = probe.syncs_per_s;
      r.disk_fdatasync_p50_ms_before = probe.p50_ms;
      results.push(r);
      log(`W1s: ${r.msgs_per_s} msgs/s, ack p50/p99/max ${r.ack_p50_ms}/${r.ack_p99_ms}/${r.ack_max_ms} ms, ${r.device_flushes} device flushes`);
      await producer.shutdown();
      await close();
    }

    if (want("W6")) {
      // ---- master #3: ASYNC_FLUSH, fresh store, 10,000 queues ----
      const store = join(tmp, "store-w6");
      const { ctx, close } = await master("ASYNC_FLUSH", store);
      const producer = await newProducer(ctx, "bench-producer-w6");
      const [first, send, consume] = await manyQueuesWorkload(ctx, producer);
      results.push(first!, send!, consume!);
      log(`W6: send ${send!.msgs_per_s} msgs/s, consume ${consume!.msgs_per_s} msgs/s (${consume!.msgs}/${consume!.expected})`);
      await producer.shutdown();
      await close();
    }

    if (POP_WORKLOADS.some(want)) {
      // ---- master #4: ASYNC_FLUSH, fresh store: POP consumption (bench/lib/pop.ts) ----
      const { ctx, close } = await master("ASYNC_FLUSH", join(tmp, "store-pop"));
      results.push(...(await popWorkloads(ctx, want, "bench-producer-pop")));
      await close();
    }
  } finally {
    for (const x of procs.reverse()) await x.stop();
  }
  results.push(proc);
  return results;
}

/** Per-workload hot spots from the broker profiles (each workload's wall-clock window). */
function profileReport(profDir: string, results: Result[]): string {
  const files: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d, { withFileTypes: true })) {
      if (n.isDirectory()) walk(join(d, n.name));
      else if (n.name.endsWith(".cpuprofile")) files.push(join(d, n.name));
    }
  };
  if (existsSync(profDir)) walk(profDir);
  const profiles = files.map((f) => ({ f, p: loadProfile(f) }));
  const out = [`# Broker CPU profiles by workload`, "", `Profiles: ${files.map((f) => `\`${f}\``).join(", ") || "none written"}`, ""];
  for (const r of results) {
    const w = r.window_ms as [number, number] | undefined;
    if (!w) continue;
    for (const { p } of profiles) {
      const s = summarize(p, `${r.workload} (${String(r.msgs_per_s ?? r.achieved_rate ?? "")} msgs/s)`, w[0], w[1]);
      if (s.samples > 0) out.push(summaryMarkdown(s));
    }
  }
  return out.join("\n");
}

function machine(): Record<string, unknown> {
  let os = "";
  try {
    os = /PRETTY_NAME="([^"]+)"/.exec(readFileSync("/etc/os-release", "utf8"))?.[1] ?? "";
  } catch {
    /* not Linux */
  }
  return { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? "", ram_gib: round(totalmem() / 2 ** 30, 1), os, bun: Bun.version };
}

function writeReport(base: string, report: Report): void {
  writeFileSync(`${base}.json`, JSON.stringify(report.json, null, 2) + "\n");
  writeFileSync(`${base}.md`, report.markdown);
  writeFileSync(`${base}.svg`, report.svg);
  const rsvg = Bun.which("rsvg-convert");
  if (rsvg) Bun.spawnSync([rsvg, "-o", `${base}.png`, `${base}.svg`]);
}

/** --rebuild: the saved figures through the current report code. */
function rebuild(file: string): Report {
  const j = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  const report = buildReport({
    stamp: String(j.stamp),
    started: String(j.started),
    finished: String(j.finished),
    params: j.params as WorkloadParams,
    mode: String(j.mode),
    machine: j.machine as Record<string, unknown>,
    rocketbun: j.rocketbun as Result[],
    peers: j.peers as Record<string, unknown>[],
    peersNote: String(j.peers_note),
    ...(Array.isArray(j.rocketmq) ? { rocketmq: j.rocketmq as Result[], rocketmqNote: String(j.rocketmq_note) } : {}),
    profileDir: null,
  });
  writeReport(file.replace(/\.json$/, ""), report);
  log(`re-rendered ${file.replace(/\.json$/, "")}.md, .svg`);
  return report;
}

/**
 * --rocketmq: the Java client against RocketBun (the run's binary) and Apache RocketMQ, our client's
 * W1–W4/W1s against each version, and the POP workloads against 5.3.3. A run whose `--only` names
 * POP workloads alone (`--only W2p,W3p --rocketmq=5.3.3`) runs only those against Apache.
 */
async function rocketmqRuns(
  a: BenchArgs,
  versions: RocketmqVersion[],
  p: WorkloadParams,
  tmp: string,
  profDir: string | null,
): Promise<{ rows: Result[]; note: string; ours: Result[] }> {
  const want = (w: string) => a.only === null || a.only.has(w);
  const classic = a.only === null || [...a.only].some((w) => !POP_WORKLOADS.includes(w));
  const pop = POP_WORKLOADS.some(want) && versions.includes("5.3.3");
  const onlyPop = `left out: --only ${[...(a.only ?? [])].join(",")} names only POP workloads, which run under our client (the main table)`;
  let r: { rows: Result[]; note: string } = { rows: [], note: onlyPop };
  if (classic) {
    let binary = a.binary ?? join(tmp, "rocketbun");
    if (!existsSync(binary)) build((binary = join(tmp, "rocketbun")));
    // --cpu-prof: RocketBun's broker under the Java client is profiled too (from the sources).
    r = await runRocketmqPeers(binary, versions, tmp, p, log, profDir ?? undefined);
    if (r.rows.length === 0) {
      log(`RocketMQ peers ${r.note}`);
      return { ...r, ours: [] };
    }
  } else if (rocketmqMissing()) {
    log(`RocketMQ peers skipped: ${rocketmqMissing()}`);
    return { rows: [], note: `skipped: ${rocketmqMissing()}`, ours: [] };
  }
  const ours: Result[] = [];
  if (classic) for (const v of versions) ours.push(...(await ourClientOnApache(v, tmp, p, log)));
  if (pop) ours.push(...(await popOnApache("5.3.3", tmp, p, want, log)));
  return { ...r, ours };
}

export async function main(argv: string[]): Promise<Report> {
  const a = parseBenchArgs(argv);
  if (a.rebuild) return rebuild(a.rebuild);
  const p = paramsFor(a);
  const stamp = stampNow();
  mkdirSync(a.out, { recursive: true });
  const tmp = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "rocketbun-bench-"));
  const profDir = a.cpuProf ? join(a.out, `profiles-${stamp}`) : null;
  if (profDir) mkdirSync(profDir, { recursive: true });
  log(`stamp ${stamp}, temp ${tmp}, ${p.msgs} msgs per workload`);
  const started = new Date().toISOString();
  let rocketbun: Result[] = [];
  let peerRows: Record<string, unknown>[] = [];
  let peersNote = "not run (--no-peers)";
  let rocketmq: Result[] = [];
  let rocketmqNote = "not run";
  /** --rocketmq: our client's W1–W4/W1s against Apache RocketMQ, reported as peers beside NATS and Redis. */
  let apacheOurs: Result[] = [];
  try {
    rocketbun = await runRocketbun(a, p, tmp, profDir);
    if (a.rocketmq) ({ rows: rocketmq, note: rocketmqNote, ours: apacheOurs } = await rocketmqRuns(a, a.rocketmq, p, tmp, profDir));
  } finally {
    if (!a.keep) rmSync(tmp, { recursive: true, force: true });
  }
  if (a.peersFrom) {
    peerRows = readJsonl(a.peersFrom);
    peersNote = `read from ${a.peersFrom}`;
  } else if (a.peers && !existsSync(join(peersHarness(), "run.sh"))) {
    peersNote = `absent: no peers' harness at ${peersHarness()} (its run.sh; set BENCH_PEERS to it, or pass --no-peers)`;
    log(`peers: ${peersNote}; the report has no NATS or Redis rows, and the targets against them are not measured`);
  } else if (a.peers) {
    const dir = join(a.out, "peers", stamp);
    const env: Record<string, string> = { RUNS: "1", PEERS: "limits nats redis redis-always" };
    if (a.quick || a.smoke) Object.assign(env, { MSGS: String(p.msgs), E2E_SECS: String(p.e2eSecs), FIO_SEQ_SIZE: "512M", FIO_SYNC_SECS: "3" });
    log(`peers: ${peersCommand(dir, env)}`);
    const r = await runPeers(dir, env);
    peerRows = r.rows;
    peersNote = `${r.command} → ${r.file ?? "(no all.jsonl)"}, exit ${r.exitCode}`;
    if (r.exitCode !== 0) log(`the peers' run.sh exited with ${r.exitCode}; the report uses what it produced`);
  }
  const report = buildReport({
    stamp,
    started,
    finished: new Date().toISOString(),
    params: p,
    mode: a.smoke ? "smoke" : a.quick ? "quick" : "standard",
    machine: machine(),
    rocketbun,
    peers: [...peerRows, ...apacheOurs],
    peersNote: apacheOurs.length ? `${peersNote}; our client against Apache RocketMQ ${a.rocketmq!.join(", ")} (--rocketmq)` : peersNote,
    ...(a.rocketmq ? { rocketmq, rocketmqNote } : {}),
    profileDir: profDir,
  });
  const base = join(a.out, stamp);
  writeReport(base, report);
  if (profDir) {
    writeFileSync(`${base}-profile.md`, profileReport(profDir, rocketbun));
    log(`wrote ${base}-profile.md`);
  }
  log(`wrote ${base}.json, .md, .svg`);
  process.stdout.write(report.summary + "\n");
  return report;
}

if (import.meta.main) {
  try {
    await main(process.argv.slice(2));
    process.exit(0);
  } catch (e) {
    log(`failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(1);
  }
}
