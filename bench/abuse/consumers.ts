/**
 * Slow and dead consumers (issue #18, item 5): a name server and an ASYNC_FLUSH master (the
 * compiled binary, default remoting limits: connectionBufferMaxBytes 64 MiB, idleTimeoutMs 120 s)
 * on 127.0.0.1, a well-behaved consumer in this process pulling a 1 KiB backlog round and round
 * (raw PULL_MESSAGE, 32 a pull, `--seconds` per phase) and, in a second process
 * (./consumer-abuse.ts), one abuse at a time:
 *
 *   baseline  nothing else
 *   dead      `--dead` consumers pulling a backlog of 15 KB messages and never reading, each the
 *             broker closes (at connectionBufferMaxBytes) replaced at once: broker RSS at its peak
 *             and after, how many it closed
 *   parked    `--parked` long polls (15 s hold, parked again when answered) over `--poll-conns`
 *             connections on 100 empty queues: broker RSS per parked poll (growth over the
 *             baseline with the connections open and nothing parked, divided by the polls)
 *   group     a consumer group of `--members` emulated members (2 per connection) on a topic of
 *             `--group-queues` queues: time for the joins to settle (every member's list is the
 *             whole group, every queue one owner), then one member leaving and rejoining every
 *             second, each settle timed; broker CPU over the phase
 *
 * For each phase: the consumer's msgs/s and its ratio to the baseline, broker RSS, fds and CPU.
 * The abuser runs on the same cores as the broker and the consumer; the ratio includes that
 * competition. Not a test: nothing asserted (test/integration/slow-consumers.test.ts asserts).
 *
 *   npx bun bench/abuse/consumers.ts [--seconds 8] [--dead 20] [--parked 10000] [--poll-conns 100]
 *                                    [--members 500] [--group-queues 1000] [--binary FILE]
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Producer } from "../../src/client/index.ts";
import { readingConsumer } from "../../test/harness/consumers.ts";
import { AbuserProcess } from "./abuser.ts";
import { Admin, benchBinary, PROJECT, startMaster, startNamesrv, type Proc } from "../lib/cluster.ts";
import { cpuSeconds, randomBodies, round, rssBytes, sleep } from "../lib/measure.ts";

interface Args {
  seconds: number;
  dead: number;
  parked: number;
  pollConns: number;
  members: number;
  groupQueues: number;
  binary: string | undefined;
}

const FLAGS: Record<string, keyof Omit<Args, "binary">> = {
  "--seconds": "seconds",
  "--dead": "dead",
  "--parked": "parked",
  "--poll-conns": "pollConns",
  "--members": "members",
  "--group-queues": "groupQueues",
};

function parseArgs(argv: string[]): Args {
  const a: Args = { seconds: 8, dead: 20, parked: 10_000, pollConns: 100, members: 500, groupQueues: 1000, binary: undefined };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i] ?? "";
    const key = FLAGS[flag];
    if (key) a[key] = Number(argv[i + 1]);
    else if (flag === "--binary") a.binary = argv[i + 1];
    else throw new Error(`unknown argument ${flag}`);
  }
  return a;
}

const log = (msg: string) => process.stderr.write(`[consumers ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const MiB = 2 ** 20;

function fds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return -1;
  }
}

type Counters = Record<string, number | boolean>;

/** ./consumer-abuse.ts in its own process; `last` holds its latest counters. */
class Abuser extends AbuserProcess<Counters> {
  constructor(args: (string | number)[]) {
    super("bench/abuse/consumer-abuse.ts", args, {}, 10_000);
  }
}

interface Phase {
  phase: string;
  msgs_per_s: number;
  ratio: number;
  broker_rss_mib: number;
  broker_fds: number;
  broker_cpu_s: number;
  extra: Record<string, number | boolean | string>;
}

const BACKLOG = 20_000;
const DEAD_BACKLOG = 2_000;

/** The topics: the reading consumer's backlog (1 KiB), the dead consumers' (15 KB), parked and group topics. */
async function prepare(ns: Proc, m: Proc, a: Args): Promise<void> {
  const admin = new Admin(ns.addr, m.addr);
  await admin.createTopic("good", 1);
  await admin.createTopic("dead", 1);
  await admin.createTopic("parked", 100);
  await admin.createTopic("group", a.groupQueues);
  await admin.waitRoutes(["good", "dead"]);
  await admin.close();
  const producer = new Producer({ namesrv: ns.addr, group: "consumers-bench-producer", sendTimeoutMs: 10_000 });
  await producer.start();
  const fill = async (topic: string, bodies: Buffer[], count: number) => {
    for (let i = 0; i < count; i += 64)
      await Promise.all(Array.from({ length: Math.min(64, count - i) }, (_, k) => producer.send({ topic, body: bodies[(i + k) % bodies.length]! })));
  };
  await fill("good", randomBodies(512, 1024), BACKLOG);
  await fill("dead", randomBodies(64, 15_000), DEAD_BACKLOG);
  await producer.shutdown();
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const tmp = join(tmpdir(), `rocketbun-consumers-${process.pid}`);
  mkdirSync(tmp, { recursive: true });
  const binary = benchBinary(tmp, a.binary);
  const procs: Proc[] = [];
  try {
    const ns = await startNamesrv({ binary }, join(tmp, "ns"));
    procs.push(ns);
    const m = await startMaster({ binary }, join(tmp, "master"), {
      namesrv: ns.addr,
      storeDir: join(tmp, "store"),
      flushDiskType: "ASYNC_FLUSH",
      pullBatchMax: 32,
    });
    procs.push(m);
    await prepare(ns, m, a);
    const phases = await runPhases(m, a);
    const out = { at: new Date().toISOString(), args: a, phases };
    const file = join(PROJECT, "bench/results", `abuse-consumers-${out.at.replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z")}.json`);
    mkdirSync(join(PROJECT, "bench/results"), { recursive: true });
    writeFileSync(file, JSON.stringify(out, null, 2) + "\n");
    process.stdout.write(
      `\n| phase | msgs/s | × baseline | broker RSS MiB | broker fds | broker CPU s | figures |\n|---|---:|---:|---:|---:|---:|---|\n`,
    );
    for (const p of phases) {
      process.stdout.write(
        `| ${p.phase} | ${p.msgs_per_s} | ${p.ratio} | ${p.broker_rss_mib} | ${p.broker_fds} | ${p.broker_cpu_s} | ${JSON.stringify(p.extra)} |\n`,
      );
    }
    process.stdout.write(`\nresults: ${file}\n`);
  } finally {
    for (const p of procs.reverse()) await p.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The phases, each measured while its abuse runs. */
async function runPhases(m: Proc, a: Args): Promise<Phase[]> {
  const good = readingConsumer(m.addr, "consumers-bench-good", "good", BACKLOG);
  const phases: Phase[] = [];
  let base = 0;
  const measure = async (phase: string, extra: () => Phase["extra"] = () => ({})) => {
    const cpu0 = cpuSeconds(m.pid) ?? NaN;
    const perS = await good.rateOver(a.seconds * 1000);
    if (phase === "baseline") base = perS;
    const p: Phase = {
      phase,
      msgs_per_s: round(perS),
      ratio: round(perS / base, 2),
      broker_rss_mib: round((rssBytes(m.pid) ?? 0) / MiB, 1),
      broker_fds: fds(m.pid),
      broker_cpu_s: round((cpuSeconds(m.pid) ?? NaN) - cpu0, 2),
      extra: extra(),
    };
    phases.push(p);
    log(JSON.stringify(p));
  };
  try {
    await good.rateOver(Math.max(5000, a.seconds * 1000));
    await measure("baseline");
    await deadPhase(m, a, measure);
    await parkedPhase(m, a, measure);
    await groupPhase(m, a, measure);
    await measure("after");
  } finally {
    await good.stop();
  }
  return phases;
}

type Measure = (phase: string, extra?: () => Phase["extra"]) => Promise<void>;

async function deadPhase(m: Proc, a: Args, measure: Measure): Promise<void> {
  const rss0 = rssBytes(m.pid) ?? 0;
  let peak = rss0;
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(m.pid) ?? 0)), 50);
  const ab = new Abuser(["dead", m.addr, "dead", a.dead, DEAD_BACKLOG, 1]);
  await ab.until((c) => Number(c.closedByServer) >= a.dead, 60_000);
  await measure("dead", () => ({ ...ab.last, rss_before_mib: round(rss0 / MiB, 1), rss_peak_mib: round(peak / MiB, 1) }));
  await ab.stop();
  clearInterval(sampler);
  await sleep(2000);
  log(
    `dead: ${String(ab.last.closedByServer)} closed by the broker; RSS before ${round(rss0 / MiB, 1)} MiB, peak ${round(peak / MiB, 1)}, 2 s after ${round((rssBytes(m.pid) ?? 0) / MiB, 1)}`,
  );
}

async function parkedPhase(m: Proc, a: Args, measure: Measure): Promise<void> {
  // The connections first, with one poll each, so that the per-poll figure is the polls' alone.
  const conns = new Abuser(["parked", m.addr, "parked", a.pollConns, 100, a.pollConns]);
  await conns.until((c) => c.outstanding === a.pollConns, 30_000);
  await sleep(2000);
  const rssConns = rssBytes(m.pid) ?? 0;
  await conns.stop();
  const ab = new Abuser(["parked", m.addr, "parked", a.parked, 100, a.pollConns]);
  await ab.until((c) => c.outstanding === a.parked, 60_000);
  await sleep(2000);
  const rssParked = rssBytes(m.pid) ?? 0;
  const perPoll = (rssParked - rssConns) / Math.max(1, a.parked - a.pollConns);
  log(
    `parked: ${a.parked} polls on ${a.pollConns} connections, broker RSS ${round(rssConns / MiB, 1)} → ${round(rssParked / MiB, 1)} MiB = ${round(perPoll)} bytes per poll`,
  );
  await measure("parked", () => ({ ...ab.last, rss_per_parked_poll_bytes: round(perPoll) }));
  await ab.stop();
  await sleep(1000);
}

async function groupPhase(m: Proc, a: Args, measure: Measure): Promise<void> {
  const t0 = performance.now();
  const cpu0 = cpuSeconds(m.pid) ?? NaN;
  const ab = new Abuser(["group", m.addr, "group", a.members, a.groupQueues, Math.ceil(a.members / 2)]);
  const joined = await ab.until((c) => c.joined === true, 120_000);
  const joinMs = performance.now() - t0;
  const joinCpu = (cpuSeconds(m.pid) ?? NaN) - cpu0;
  log(
    `group: ${a.members} members settled: ${joined} after ${round(joinMs)} ms (the abuser's own figure ${String(ab.last.joinSettleMs)} ms), broker CPU ${round(joinCpu, 2)} s`,
  );
  await measure("group churn", () => ({ ...ab.last, join_seen_ms: round(joinMs), join_broker_cpu_s: round(joinCpu, 2) }));
  await ab.stop();
  await sleep(1000);
}

await main();
