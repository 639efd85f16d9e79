/**
 * Connection floods and slow senders (issue #18, item 4): a name server and an ASYNC_FLUSH master
 * (the compiled binary, default remoting limits: maxConnections 50,000, idleTimeoutMs 120 s,
 * frameTimeoutMs 30 s) on 127.0.0.1, a well-behaved rocketbun/client producer (1 KiB bodies, 32
 * sends in flight, `--seconds` per phase) and, in a second process (./flood.ts), one abuse at a
 * time:
 *
 *   baseline   nothing else
 *   idle       `--idle` connections opened and held silent (broker RSS and fds measured: the
 *              memory of one idle connection is the RSS growth over the baseline divided by them)
 *   slowloris  `--slow` connections sending a frame a byte a second
 *   partial    `--slow` connections announcing a 16 MiB frame and stalling after 64 KiB
 *   storm      `--storm` loops connecting, sending one request and closing, without pause: as
 *              fast as the broker lets them, so a faster broker meets a bigger storm
 *   paced      the same at each of `--storm-rates` connections a second (open loop): a fleet of
 *              clients reconnecting, at a rate that does not depend on the broker
 *
 * For each phase: the producer's msgs/s and its ratio to a baseline taken just before it (target
 * ≥ 0.80; also to the first baseline), ack p99, broker RSS and open fds. The flood runs on the
 * same 2 cores as the broker and the producer; the ratio includes that competition, as it would on
 * a real host. Not a test: nothing asserted.
 *
 * `--connect-rate N` sets remoting.maxNewConnectionsPerSecondPerAddress on the master (the flood
 * and the producer share 127.0.0.1: the producer connected before the flood starts); `--only`
 * runs a subset of the abuses (idle, slowloris, partial, storm, paced); `--nice-abuser` runs the
 * abuser at nice 19, so that it takes only the CPU the broker and the producer leave (an abuser on
 * other hosts; without it, a closed-loop storm's own process takes a core of the two);
 * `--broker apache-4.9.7` (or apache-5.3.3) runs the same against Apache RocketMQ's name server and
 * broker (bench/lib/rocketmq-peer.ts: Java and Maven), for a reference on the same machine.
 *
 *   npx bun bench/abuse/connections.ts [--seconds 8] [--idle 10000] [--slow 1000] [--storm 4] [--storm-rates 500,1000,2000] [--reps 3]
 *     [--connect-rate N] [--only storm,paced] [--nice-abuser] [--broker rocketbun|apache-4.9.7|apache-5.3.3] [--binary FILE]
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Producer } from "../../src/client/index.ts";
import { AbuserProcess } from "./abuser.ts";
import { Admin, benchBinary, PROJECT } from "../lib/cluster.ts";
import { ROCKETMQ_VERSIONS, rocketmqMissing, startApache, startRocketbunRig, type Rig } from "../lib/rocketmq-peer.ts";
import { closedLoop, cpuSeconds, randomBodies, round, rssBytes, sleep, STANDARD, stats } from "../lib/measure.ts";

interface Args {
  seconds: number;
  idle: number;
  slow: number;
  storm: number;
  /** Paced storms: connections a second, one phase each. */
  stormRates: number[];
  reps: number;
  /** remoting.maxNewConnectionsPerSecondPerAddress on the master; undefined = its default (no limit). */
  connectRate: number | undefined;
  /** Run only these abuses (idle, slowloris, partial, storm, paced); empty = all. */
  only: string[];
  /** The abuser at nice 19: it takes only the CPU left over (as on other hosts). */
  niceAbuser: boolean;
  /** "rocketbun" (the binary), or "apache-4.9.7" / "apache-5.3.3" (the same abuses against Apache RocketMQ). */
  broker: string;
  binary: string | undefined;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { seconds: 8, idle: 10_000, slow: 1000, storm: 4, stormRates: [500, 1000, 2000], reps: 3, connectRate: undefined, only: [], niceAbuser: false, broker: "rocketbun", binary: undefined };
  for (let i = 0; i < argv.length; i += 2) {
    const v = argv[i + 1] ?? "";
    if (argv[i] === "--nice-abuser") {
      a.niceAbuser = true;
      i--;
    } else if (argv[i] === "--seconds") a.seconds = Number(v);
    else if (argv[i] === "--idle") a.idle = Number(v);
    else if (argv[i] === "--slow") a.slow = Number(v);
    else if (argv[i] === "--storm") a.storm = Number(v);
    else if (argv[i] === "--reps") a.reps = Math.max(1, Number(v));
    else if (argv[i] === "--storm-rates") a.stormRates = v === "" ? [] : v.split(",").map(Number);
    else if (argv[i] === "--connect-rate") a.connectRate = Number(v);
    else if (argv[i] === "--only") a.only = v.split(",").filter((x) => x !== "");
    else if (argv[i] === "--broker") a.broker = v;
    else if (argv[i] === "--binary") a.binary = v;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return a;
}

function median(xs: number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : round((s[s.length / 2 - 1]! + s[s.length / 2]!) / 2, 2);
}

const log = (msg: string) => process.stderr.write(`[abuse ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

function fds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return -1;
  }
}

interface FloodCounters {
  open: number;
  opened: number;
  closedByServer: number;
  refused: number;
  bytes: number;
}

/** ./flood.ts in its own process; `last` holds its latest counters. */
class Flood extends AbuserProcess<FloodCounters> {
  constructor(mode: string, addr: string, n: number, niced: boolean) {
    super("bench/abuse/flood.ts", [mode, addr, n], { open: 0, opened: 0, closedByServer: 0, refused: 0, bytes: 0 }, 5000, niced);
  }
}

interface Phase {
  phase: string;
  msgs_per_s: number;
  /** To the baseline taken just before this phase. */
  ratio: number;
  ratio_to_first: number;
  ack_p99_ms: number;
  broker_rss_mib: number;
  broker_fds: number;
  /** CPU of one core the broker (and the abuser) took during the window, %. */
  broker_cpu_pct: number;
  flood_cpu_pct?: number;
  flood?: FloodCounters;
}

/** The broker under test and its name server. */
interface Broker {
  ns: string;
  addr: string;
  pid: number;
  stop(): Promise<void>;
}

/** RocketBun's binary, or (`--broker apache-4.9.7`) Apache RocketMQ from its Maven artifacts: bench/run.ts's rigs. */
async function startBroker(a: Args, tmp: string): Promise<Broker> {
  const p = { ...STANDARD, batch: 32 };
  let rig: Rig;
  if (a.broker.startsWith("apache-")) {
    const version = a.broker.slice("apache-".length);
    const known = ROCKETMQ_VERSIONS.find((v) => v === version);
    if (known === undefined) throw new Error(`--broker ${a.broker}: Apache RocketMQ ${ROCKETMQ_VERSIONS.join(" or ")}`);
    if (a.connectRate !== undefined) throw new Error("--connect-rate is RocketBun's setting");
    const missing = rocketmqMissing();
    if (missing !== null) throw new Error(`--broker ${a.broker}: ${missing}`);
    rig = await startApache(known, join(tmp, "apache"), "ASYNC_FLUSH", p);
  } else {
    const o = a.connectRate !== undefined ? { connectRatePerAddress: a.connectRate } : {};
    rig = await startRocketbunRig(benchBinary(tmp, a.binary), tmp, "ASYNC_FLUSH", p, o);
  }
  return { ns: rig.namesrv.addr, addr: rig.broker.addr, pid: rig.broker.pid, stop: () => rig.stop() };
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const tmp = join(tmpdir(), `rocketbun-abuse-${process.pid}`);
  mkdirSync(tmp, { recursive: true });
  let started: Broker | undefined;
  try {
    const m = await startBroker(a, tmp);
    started = m;
    const admin = new Admin(m.ns, m.addr);
    await admin.createTopic("abuse", 8);
    await admin.waitRoutes(["abuse"]);
    await admin.close();
    const producer = new Producer({ namesrv: m.ns, group: "abuse-producer", sendTimeoutMs: 10_000, maxInFlight: 4096 });
    await producer.start();
    const bodies = randomBodies(512, 1024);
    const items = Array.from({ length: 5_000_000 }, (_, i) => bodies[i % bodies.length]!);
    const load = async () => {
      const r = await closedLoop(items, 32, (body) => producer.send({ topic: "abuse", body }), a.seconds * 1000);
      return { perS: (r.done / r.elapsedMs) * 1000, p99: stats(r.lat, r.done).p99_ms };
    };
    await closedLoop(items.slice(0, 20_000), 32, (body) => producer.send({ topic: "abuse", body }));
    const phases: Phase[] = [];
    let base = 0;
    let firstBase = 0;
    const measure = async (phase: string, flood?: Flood) => {
      const cpu0 = [cpuSeconds(m.pid) ?? 0, flood ? (cpuSeconds(flood.proc.pid) ?? 0) : 0];
      const t0 = performance.now();
      const r = await load();
      const secs = (performance.now() - t0) / 1000;
      const cpuPct = (pid: number, before: number) => round((((cpuSeconds(pid) ?? before) - before) / secs) * 100);
      if (phase.startsWith("baseline")) base = r.perS;
      if (firstBase === 0) firstBase = r.perS;
      const p: Phase = {
        phase,
        msgs_per_s: round(r.perS),
        ratio: round(r.perS / base, 2),
        ratio_to_first: round(r.perS / firstBase, 2),
        ack_p99_ms: round(r.p99, 2),
        broker_rss_mib: round((rssBytes(m.pid) ?? 0) / 2 ** 20, 1),
        broker_fds: fds(m.pid),
        broker_cpu_pct: cpuPct(m.pid, cpu0[0]!),
        ...(flood ? { flood_cpu_pct: cpuPct(flood.proc.pid, cpu0[1]!) } : {}),
        ...(flood ? { flood: { ...flood.last } } : {}),
      };
      phases.push(p);
      log(JSON.stringify(p));
    };
    await measure("baseline");
    const rssBase = rssBytes(m.pid) ?? 0;
    const all: [string, string, number][] = [
      ["idle", "idle", a.idle],
      ["slowloris", "slowloris", a.slow],
      ["partial", "partial", a.slow],
      ["storm", "storm", a.storm],
      ...a.stormRates.map((r): [string, string, number] => [`paced storm ${r}/s`, "paced", r]),
    ];
    const floods = all.filter(([, mode]) => a.only.length === 0 || a.only.includes(mode));
    let perIdle = 0;
    /** One repetition of an abuse: a baseline, then the abuse; its ratio to that baseline. */
    const abuse = async (phase: string, mode: string, n: number, r: number): Promise<number> => {
      await measure(`baseline before ${phase} (${r})`);
      const f = new Flood(mode, m.addr, n, a.niceAbuser);
      const settle = Date.now() + 60_000;
      while (mode !== "storm" && mode !== "paced" && f.last.opened < n && Date.now() < settle) await sleep(200);
      await sleep(1500);
      if (phase === "idle" && r === 1) {
        await sleep(2000);
        const rss = rssBytes(m.pid) ?? 0;
        perIdle = (rss - rssBase) / Math.max(1, f.last.open);
        log(`idle: ${f.last.open} connections held, broker RSS +${round((rss - rssBase) / 2 ** 20, 1)} MiB = ${round(perIdle)} bytes each, ${fds(m.pid)} fds`);
      }
      await measure(`${phase} (${r})`, f);
      await f.stop();
      await sleep(1000);
      return phases.at(-1)!.ratio;
    };
    // Each abuse is compared with a baseline taken just before it, `--reps` times, and the median
    // ratio is its figure: the store grows by ~0.4 GB a phase and a lone producer's rate drifts
    // with it, and this VM's rate swings up to 2x between identical windows.
    const summary: { phase: string; ratios: number[] }[] = [];
    for (const [phase, mode, n] of floods) {
      const ratios: number[] = [];
      for (let r = 1; r <= a.reps; r++) ratios.push(await abuse(phase, mode, n, r));
      summary.push({ phase, ratios });
    }
    await measure("after");
    await producer.shutdown();
    const medians = Object.fromEntries(summary.map((x) => [x.phase, median(x.ratios)]));
    const out = { at: new Date().toISOString(), args: a, idle_connection_bytes: round(perIdle), median_ratios: medians, phases };
    const file = join(PROJECT, "bench/results", `abuse-connections-${out.at.replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z")}.json`);
    mkdirSync(join(PROJECT, "bench/results"), { recursive: true });
    writeFileSync(file, JSON.stringify(out, null, 2) + "\n");
    process.stdout.write(
      `\n| phase | msgs/s | × baseline before | × first baseline | ack p99 ms | broker RSS MiB | broker fds | broker CPU % | abuser CPU % |\n` +
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (const p of phases) {
      const cells = [p.phase, p.msgs_per_s, p.ratio, p.ratio_to_first, p.ack_p99_ms, p.broker_rss_mib, p.broker_fds, p.broker_cpu_pct, p.flood_cpu_pct ?? "–"];
      process.stdout.write(`| ${cells.join(" | ")} |\n`);
    }
    process.stdout.write(`\n| abuse | × the baseline before it, each repetition | median |\n|---|---|---:|\n`);
    for (const x of summary) process.stdout.write(`| ${x.phase} | ${x.ratios.join(", ")} | ${median(x.ratios)} |\n`);
    process.stdout.write(`\nidle connection: ${round(perIdle)} bytes of broker RSS each; results: ${file}\n`);
  } finally {
    await started?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
