/**
 * Automatic failover under load (issue #17's benchmark), RocketBun and, with `--system apache5`
 * or `both`, Apache RocketMQ 5.3.3 in controller mode on the same machine, driven by the same
 * load and kill schedule (bench/failover/measure.ts): `--kills` times kill -9 the group's master
 * and measure kill → the first acknowledged send and kill → the first message received, median
 * and max; RocketBun's target is median ≤ 2 × leaseTtlMs, max ≤ 3 ×.
 *
 *   npx bun bench/failover/run.ts [--system rocketbun|apache5|both] [--kills 20] [--lease 3000]
 *        [--apache-timeouts default|lease|both] [--replicas 3] [--role SYNC_MASTER]
 *        [--min-isr 2] [--binary FILE]
 *
 * RocketBun (bench/failover/rocketbun.ts) needs `etcd` (Debian etcd-server); Apache
 * (bench/failover/apache5.ts) needs `java` and `mvn`; a system whose tools are missing is
 * skipped with one printed line. `--apache-timeouts`: the controller's failure detection as
 * shipped, matched to `--lease`, or both runs (the default). `--replicas`, `--role` and
 * `--min-isr` are RocketBun's only: Apache's group is 3 replicas with minInSyncReplicas 2 and
 * allAckInSyncStateSet, the nearest to SYNC_MASTER with 2 (see apache5.ts). Not a test.
 */
import type { FailoverResult, FailoverRig, Schedule } from "./measure.ts";

interface Args {
  system: "rocketbun" | "apache5" | "both";
  apacheTimeouts: "default" | "lease" | "both";
  kills: number;
  lease: number;
  replicas: number;
  role: "SYNC_MASTER" | "ASYNC_MASTER";
  minIsr: number;
}

function oneOf<T extends string>(flag: string, v: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(v)) return v as T;
  throw new Error(`${flag}: ${v} is not one of ${allowed.join(", ")}`);
}

function parseArgs(argv: string[]): Args {
  const a: Args = { system: "rocketbun", apacheTimeouts: "both", kills: 20, lease: 3000, replicas: 3, role: "SYNC_MASTER", minIsr: 2 };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i]!;
    const v = argv[i + 1] ?? "";
    if (flag === "--system") a.system = oneOf(flag, v, ["rocketbun", "apache5", "both"] as const);
    else if (flag === "--apache-timeouts") a.apacheTimeouts = oneOf(flag, v, ["default", "lease", "both"] as const);
    else if (flag === "--kills") a.kills = Number(v);
    else if (flag === "--lease") a.lease = Number(v);
    else if (flag === "--replicas") a.replicas = Number(v);
    else if (flag === "--role") a.role = oneOf(flag, v, ["SYNC_MASTER", "ASYNC_MASTER"] as const);
    else if (flag === "--min-isr") a.minIsr = Number(v);
    else if (flag === "--binary") process.env.ROCKETBUN_BINARY = v;
    else throw new Error(`unknown argument ${flag}`);
  }
  return a;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)]!;
};
const max = (xs: number[]) => (xs.length === 0 ? NaN : Math.max(...xs));
const out = (line: string) => void process.stdout.write(`${line}\n`);

/** The systems to run, in order, each as a function that starts its rig (tools checked first). */
async function plannedRigs(a: Args): Promise<(() => Promise<FailoverRig>)[]> {
  const rigs: (() => Promise<FailoverRig>)[] = [];
  if (a.system !== "apache5" && toolsPresent("bench/failover rocketbun", ["etcd"])) {
    const { startRocketbunRig } = await import("./rocketbun.ts");
    rigs.push(() => startRocketbunRig({ lease: a.lease, replicas: a.replicas, role: a.role, minIsr: a.minIsr }));
  }
  if (a.system !== "rocketbun" && toolsPresent("bench/failover apache5", ["java", "mvn"])) {
    const { startApache5Rig } = await import("./apache5.ts");
    const timeouts = a.apacheTimeouts === "both" ? (["default", "lease"] as const) : [a.apacheTimeouts];
    for (const t of timeouts) rigs.push(() => startApache5Rig({ timeouts: t, lease: a.lease }));
  }
  return rigs;
}

async function runOne(start: () => Promise<FailoverRig>, schedule: Schedule): Promise<FailoverResult> {
  const rig = await start();
  // Whatever happens, nothing is left running (every process is ours, stopped by PID).
  const onInt = () => void rig[Symbol.asyncDispose]().then(() => process.exit(130));
  process.on("SIGINT", onInt);
  try {
    return await measureFailover(rig, schedule, out);
  } finally {
    process.off("SIGINT", onInt);
    await rig[Symbol.asyncDispose]();
  }
}

function report(a: Args, results: FailoverResult[]): void {
  out(`failover bench: ${a.kills} kills, leaseTtlMs ${a.lease}; rocketbun: ${a.replicas} replicas, ${a.role}, minInSyncReplicas ${a.minIsr}`);
  out(`target (rocketbun): median ≤ ${2 * a.lease} ms, max ≤ ${3 * a.lease} ms`);
  out("| system | kill → send median | max | kill → receive median | max | acknowledged | lost | send failures | not SEND_OK |");
  out("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of results) {
    const cells = [median(r.sendGaps), max(r.sendGaps), median(r.recvGaps), max(r.recvGaps)].map((v) => `${v} ms`);
    out(`| ${r.label} | ${cells.join(" | ")} | ${r.acked} | ${r.lost} | ${r.failures} | ${r.notOk} |`);
  }
  const ours = results.find((r) => r.label === "rocketbun");
  if (!ours) return;
  for (const r of results) {
    if (r === ours) continue;
    const ratio = (f: (xs: number[]) => number, pick: (x: FailoverResult) => number[]) => (f(pick(r)) / f(pick(ours))).toFixed(2);
    out(
      `${r.label} / rocketbun: send median ×${ratio(median, (x) => x.sendGaps)}, max ×${ratio(max, (x) => x.sendGaps)}; ` +
        `receive median ×${ratio(median, (x) => x.recvGaps)}, max ×${ratio(max, (x) => x.recvGaps)}`,
    );
  }
}

// The arguments first: `--binary` must be in the environment before test/harness/binary.ts is loaded.
const args = parseArgs(process.argv.slice(2));
const { measureFailover } = await import("./measure.ts");
const { toolsPresent } = await import("../../test/harness/java.ts");
// Same schedule for every system: healthy, then two leases of steady load before each kill.
const schedule: Schedule = { kills: args.kills, settleMs: 2 * args.lease, healthyTimeoutMs: 120_000 };
const results: FailoverResult[] = [];
for (const start of await plannedRigs(args)) results.push(await runOne(start, schedule));
if (results.length > 0) report(args, results);
