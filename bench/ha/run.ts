/**
 * bench/ha: master/slave replication on 127.0.0.1 with the compiled binary, everything measured in
 * the same run. A benchmark, not a test.
 *
 *   npx bun run bench:ha [-- --mib N] [--msgs N] [--binary FILE] [--keep]
 *
 *   --mib N        MiB the master holds before an empty slave is started (default 512)
 *   --msgs N       timed sends per latency run (default 50,000; 5,000 more as warm-up)
 *   --binary FILE  use this rocketbun binary (default: build one into a temp folder)
 *
 * 1. Catch-up: a name server and an ASYNC_MASTER are filled with N MiB (64 KiB bodies over the
 *    wire, 32 in flight); then an empty slave starts. Reported: the time from the slave's start
 *    (its ports file) until it holds the master's last byte, as MB/s, and the fill rate beside it.
 * 2. Send latency: the client library's Producer (src/client), 32 sends in flight, 1 KiB random
 *    bodies, against a fresh name server + master + connected slave, once with ASYNC_MASTER and
 *    once with SYNC_MASTER. Reported: msgs/s, p50/p99/p99.9/max per send, and what SYNC adds.
 *
 * Results: a table on stdout, and bench/results/ha-<stamp>.json and .md.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { Producer } from "../../src/client/index.ts";
import { closedLoop, randomBodies, round, stats, type Stats } from "../lib/measure.ts";

const PROJECT = resolve(import.meta.dir, "../..");
const RESULTS = join(PROJECT, "bench/results");
const MiB = 1024 * 1024;
const TOPIC = "BenchHa";
const INFLIGHT = 32;
const BODY = 1024;

interface Args {
  mib: number;
  msgs: number;
  binary: string | undefined;
  keep: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { mib: 512, msgs: 50_000, binary: undefined, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i]!;
    const value = () => (x.includes("=") ? x.slice(x.indexOf("=") + 1) : (argv[++i] ?? ""));
    if (x === "--keep") a.keep = true;
    else if (x === "--mib" || x.startsWith("--mib=")) a.mib = Number(value());
    else if (x === "--msgs" || x.startsWith("--msgs=")) a.msgs = Number(value());
    else if (x === "--binary" || x.startsWith("--binary=")) a.binary = resolve(value());
    else if (x === "--help" || x === "-h") {
      console.log("usage: bun bench/ha/run.ts [--mib N] [--msgs N] [--binary FILE] [--keep]");
      process.exit(0);
    } else throw new Error(`unknown argument ${x}`);
  }
  if (!(a.mib > 0) || !(a.msgs > 0)) throw new Error("--mib and --msgs need positive numbers");
  return a;
}

const args = parseArgs(process.argv.slice(2));
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "rocketbun-bench-ha-"));
let binary = args.binary;
if (!binary) {
  binary = join(work, "rocketbun");
  execFileSync(process.execPath, [join(PROJECT, "scripts/build-binary.ts"), "--outfile", binary], { stdio: "inherit" });
}
// The harness reads ROCKETBUN_BINARY when it loads; broker temp dirs go under BENCH_DIR too.
process.env.ROCKETBUN_BINARY = binary;
if (process.env.BENCH_DIR) process.env.TMPDIR = work;
const { brokerYaml, HaCluster } = await import("../../test/harness/ha-cluster.ts");
const { waitFor } = await import("../../test/harness/binary.ts");
type Cluster = Awaited<ReturnType<typeof HaCluster.start>>;

/** Production-sized segments; messages up to 4 MiB. */
const YAML = brokerYaml({
  broker: { maxMessageSizeBytes: 4 * MiB, defaultTopicQueueNums: 8 },
  store: { commitLogSegmentBytes: 128 * MiB, consumeQueueUnitsPerFile: 300_000, indexSlotNum: 500_000, indexNum: 2_000_000 },
});

interface CatchUp {
  mib: number;
  fill_s: number;
  fill_mb_per_s: number;
  slave_start_ms: number;
  catch_up_s: number;
  catch_up_mb_per_s: number;
  commitlog_equal: boolean;
}

interface Latency extends Stats {
  role: string;
  msgs: number;
  msgs_per_s: number;
  not_send_ok: number;
  slave_lag_bytes_after: number;
}

async function catchUp(): Promise<CatchUp> {
  const c = await HaCluster.start({ groups: [{ name: "broker-a", role: "ASYNC_MASTER", masterYaml: YAML, slaveYaml: YAML, startSlaves: false }] });
  try {
    await c.createTopic(TOPIC, 8);
    const bodyBytes = 64 * 1024;
    const n = Math.ceil((args.mib * MiB) / bodyBytes);
    const f0 = performance.now();
    await c.send(TOPIC, n, { bodyBytes, concurrency: INFLIGHT });
    const fillS = (performance.now() - f0) / 1000;
    const end = await c.master().maxOffset();
    const s0 = performance.now();
    await c.slave().start();
    const started = performance.now();
    await waitFor(async () => (await c.slave().maxOffset()) === end, 600_000, "the slave to catch up");
    const catchUpS = (performance.now() - started) / 1000;
    const a = c.master().commitLogFiles();
    const b = c.slave().commitLogFiles();
    const equal = a.size === b.size && [...a].every(([name, bytes]) => b.get(name)?.equals(bytes) === true);
    return {
      mib: round(end / MiB, 1),
      fill_s: round(fillS, 2),
      fill_mb_per_s: round(end / 1e6 / fillS, 1),
      slave_start_ms: round(started - s0),
      catch_up_s: round(catchUpS, 2),
      catch_up_mb_per_s: round(end / 1e6 / catchUpS, 1),
      commitlog_equal: equal,
    };
  } finally {
    await c[Symbol.asyncDispose]();
  }
}

async function latency(role: "ASYNC_MASTER" | "SYNC_MASTER", bodies: Buffer[], warm: Buffer[]): Promise<Latency> {
  const c: Cluster = await HaCluster.start({ groups: [{ name: "broker-a", role, masterYaml: YAML, slaveYaml: YAML }] });
  const producer = new Producer({ namesrv: c.namesrvs[0]!.addr, group: "PID_bench_ha", compressThresholdBytes: 1 << 30, maxInFlight: 4 * INFLIGHT });
  try {
    await c.createTopic(TOPIC, 8);
    await waitFor(async () => ((await c.master().ha()).slaves ?? []).some((s) => s.ackOffset >= 0), 15_000, "the slave to connect");
    await producer.start();
    let notOk = 0;
    const send = async (b: Buffer) => {
      const r = await producer.send({ topic: TOPIC, body: b });
      if (r.status !== "SEND_OK") notOk++;
    };
    await closedLoop(warm, INFLIGHT, send);
    notOk = 0;
    const r = await closedLoop(bodies, INFLIGHT, send);
    const lagAfter = ((await c.master().ha()).slaves ?? [])[0]?.lagBytes ?? -1;
    return {
      role,
      msgs: r.done,
      msgs_per_s: round(r.done / (r.elapsedMs / 1000)),
      ...stats(r.lat),
      not_send_ok: notOk,
      slave_lag_bytes_after: lagAfter,
    };
  } finally {
    await producer.shutdown();
    await c[Symbol.asyncDispose]();
  }
}

const started = new Date();
const stamp = started
  .toISOString()
  .replace(/[-:]/g, "")
  .replace(/\.\d+Z$/, "Z");
try {
  console.log(`bench/ha: binary ${binary}; catch-up of ${args.mib} MiB, then ${args.msgs} sends per role (${INFLIGHT} in flight, ${BODY} B)`);
  const cu = await catchUp();
  console.log(`  catch-up: ${cu.mib} MiB in ${cu.catch_up_s} s = ${cu.catch_up_mb_per_s} MB/s (fill ${cu.fill_mb_per_s} MB/s)`);
  const bodies = randomBodies(args.msgs, BODY);
  const warm = randomBodies(Math.min(5000, args.msgs), BODY);
  const lat: Latency[] = [];
  for (const role of ["ASYNC_MASTER", "SYNC_MASTER"] as const) {
    lat.push(await latency(role, bodies, warm));
    const l = lat.at(-1)!;
    console.log(`  ${role}: ${l.msgs_per_s} msgs/s, p50 ${l.p50_ms} ms, p99 ${l.p99_ms} ms`);
  }
  const [asy, syn] = lat as [Latency, Latency];
  const added = {
    p50_ms: round(syn.p50_ms - asy.p50_ms, 3),
    p99_ms: round(syn.p99_ms - asy.p99_ms, 3),
    p999_ms: round(syn.p999_ms - asy.p999_ms, 3),
  };
  const machine = {
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model,
    total_mem_gib: round(totalmem() / 2 ** 30, 1),
    loadavg: loadavg(),
    bun: Bun.version,
  };
  const json = {
    stamp,
    started: started.toISOString(),
    finished: new Date().toISOString(),
    machine,
    params: { ...args, inflight: INFLIGHT, body: BODY },
    catch_up: cu,
    latency: lat,
    sync_added: added,
  };

  const md = [
    `# bench/ha — ${stamp}`,
    "",
    `Machine: ${machine.cpus} × ${machine.cpu_model ?? "?"}, ${machine.total_mem_gib} GiB RAM, Bun ${machine.bun}. All processes on 127.0.0.1.`,
    "",
    "## Catch-up of an empty slave",
    "",
    "| master holds | fill rate (send path) | slave start | catch-up time | catch-up throughput | CommitLogs equal |",
    "|---:|---:|---:|---:|---:|:--:|",
    `| ${cu.mib} MiB | ${cu.fill_mb_per_s} MB/s | ${cu.slave_start_ms} ms | ${cu.catch_up_s} s | **${cu.catch_up_mb_per_s} MB/s** | ${cu.commitlog_equal ? "yes" : "NO"} |`,
    "",
    `## Send latency with a connected slave (client library Producer, ${INFLIGHT} in flight, ${BODY} B bodies)`,
    "",
    "| broker role | sends | msgs/s | p50 ms | p99 ms | p99.9 ms | max ms | not SEND_OK | slave lag after |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...lat.map(
      (l) =>
        `| ${l.role} | ${l.msgs} | ${l.msgs_per_s} | ${l.p50_ms} | ${l.p99_ms} | ${l.p999_ms} | ${l.max_ms} | ${l.not_send_ok} | ${l.slave_lag_bytes_after} B |`,
    ),
    "",
    `SYNC_MASTER adds **${added.p50_ms} ms at p50** and **${added.p99_ms} ms at p99** (p99.9: ${added.p999_ms} ms) to a send, ` +
      `and changes throughput from ${asy.msgs_per_s} to ${syn.msgs_per_s} msgs/s.`,
    "",
  ].join("\n");
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, `ha-${stamp}.json`), JSON.stringify(json, null, 2) + "\n");
  writeFileSync(join(RESULTS, `ha-${stamp}.md`), md);
  console.log(`\n${md}`);
  console.log(`results: bench/results/ha-${stamp}.json, .md`);
} finally {
  if (!args.keep) rmSync(work, { recursive: true, force: true });
}
