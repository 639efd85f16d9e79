/**
 * Crash loop with a real client (issue #18, item 1): `--cycles` times kill -9 of a master under the
 * Java client (rocketmq-client 4.9.8) producing with unique keys and consuming with a push
 * consumer group, alternating ASYNC_FLUSH and SYNC_FLUSH; `--power-loss sync` puts the store on a
 * loop-mounted ext4 image and cuts its power after every SYNC_FLUSH kill (test/harness/loop-fs.ts:
 * root, losetup, mkfs.ext4), `--power-loss all` after every kill (ASYNC_FLUSH may then lose what
 * it had not flushed: reported, not a failure). The loop and the check are test/harness/crash-loop.ts; the short CI
 * version is test/interop/crash-loop.test.ts.
 *
 *   npx bun bench/crash-loop/run.ts [--cycles 100] [--run-ms 3000] [--power-loss off|sync|all] [--seed N]
 *        [--segment-bytes 4194304] [--fill-mib 16] [--threads 3] [--pause-ms 5] [--binary FILE] [--json FILE]
 *
 * `--fill-mib`: filler written by our own client to another topic before each kill, so the store
 * grows (100 cycles × 16 MiB ≈ 1.6 GiB) and recovery time can be set against its size.
 *
 * Prints one line per cycle, then: acknowledged, lost (per flush mode), duplicated in the store,
 * recovery time (spawn → first accepted connection) median and max, and a table per 10 cycles of
 * recovery time against store size. Exits 1 when an acknowledged message was lost where it must
 * not be (SYNC_FLUSH ever; ASYNC_FLUSH unless its kills were power cuts). Needs java and mvn. Not a test.
 */
import { writeFileSync } from "node:fs";
import type { FlushDiskType } from "../../src/protocol/broker-config.ts";

interface Args {
  cycles: number;
  runMs: number;
  powerLoss: "off" | "sync" | "all";
  seed: number;
  segmentBytes: number;
  fillMiB: number;
  threads: number;
  pauseMs: number;
  json?: string;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { cycles: 100, runMs: 3000, powerLoss: "off", seed: (Math.random() * 0x100000000) >>> 0, segmentBytes: 4 * 1024 * 1024, fillMiB: 16, threads: 3, pauseMs: 5 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const v = () => argv[++i] ?? "";
    if (flag === "--cycles") a.cycles = Number(v());
    else if (flag === "--run-ms") a.runMs = Number(v());
    else if (flag === "--power-loss") {
      const w = v();
      if (w !== "sync" && w !== "all" && w !== "off") throw new Error(`--power-loss: ${w} is not one of sync, all, off`);
      a.powerLoss = w;
    }
    else if (flag === "--seed") a.seed = Number(v()) >>> 0;
    else if (flag === "--segment-bytes") a.segmentBytes = Number(v());
    else if (flag === "--fill-mib") a.fillMiB = Number(v());
    else if (flag === "--threads") a.threads = Number(v());
    else if (flag === "--pause-ms") a.pauseMs = Number(v());
    else if (flag === "--binary") process.env.ROCKETBUN_BINARY = v();
    else if (flag === "--json") a.json = v();
    else throw new Error(`unknown argument ${flag}`);
  }
  if (!(a.cycles >= 1)) throw new Error("--cycles must be at least 1");
  return a;
}

const out = (line: string) => void process.stdout.write(`${line}\n`);
const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)]!;
};
const mib = (b: number) => (b / 1048576).toFixed(1);

// The arguments first: `--binary` must be in the environment before test/harness/binary.ts is loaded.
const args = parseArgs(process.argv.slice(2));
const { toolsPresent } = await import("../../test/harness/java.ts");
const { runCrashLoop, CRASH_LOOP_DEFAULTS } = await import("../../test/harness/crash-loop.ts");
const { loopFsUnavailable } = await import("../../test/harness/loop-fs.ts");

if (!toolsPresent("crash loop (Java client)", ["java", "mvn"])) process.exit(0);
const noLoop = args.powerLoss !== "off" ? loopFsUnavailable() : undefined;
if (noLoop) throw new Error(`--power-loss needs a loop-mounted filesystem: ${noLoop}`);

out(`crash loop: ${args.cycles} cycles, seed ${args.seed}, run ${args.runMs}–${2 * args.runMs} ms per cycle${args.powerLoss === "off" ? "" : `, power cut after each ${args.powerLoss === "sync" ? "SYNC_FLUSH " : ""}kill`}`);
const r = await runCrashLoop({ ...CRASH_LOOP_DEFAULTS, ...args, log: out });
const v = r.verdict;
const modes: FlushDiskType[] = ["ASYNC_FLUSH", "SYNC_FLUSH"];
const rec = r.cycles.map((c) => c.recoveryMs);
const firstAcks = r.cycles.flatMap((c) => (c.firstAckMs === undefined ? [] : [c.firstAckMs]));
const consumed = r.cycles.flatMap((c) => (c.consumedMs === undefined ? [] : [c.consumedMs]));
out("");
out(`cycles ${r.cycles.length} (power cuts ${r.cycles.filter((c) => c.powerCut).length}), seed ${r.seed}`);
for (const m of modes) out(`${m}: acknowledged ${v.acked[m]}, lost ${v.lost[m].length}${v.lost[m].length ? ` (${v.lost[m].slice(0, 5).join(", ")}…)` : ""}`);
out(`stored ${v.stored}; lost but stored elsewhere ${v.moved.length}; failed sends ${r.failedSends} (stored all the same: ${v.storedThoughFailed})`);
out(`duplicated in the store: ${v.duplicates.retried} by client retries, ${v.duplicates.other.length} other, ${v.duplicates.sameRecord} queue entries sharing a record`);
out(`acknowledged but not consumed: ${v.notConsumed.length}`);
out(`recovery (spawn → first accepted connection): median ${median(rec).toFixed(0)} ms, max ${Math.max(...rec).toFixed(0)} ms; first start ${r.firstStartMs.toFixed(0)} ms`);
out(`kill → first acknowledged send: median ${median(firstAcks).toFixed(0)} ms, max ${Math.max(...firstAcks).toFixed(0)} ms`);
out(`kill → first message of the restarted master consumed: median ${median(consumed).toFixed(0)} ms, max ${Math.max(...consumed).toFixed(0)} ms; restarts after which nothing was consumed: ${r.cycles.length - consumed.length}`);
// Growth with the store: least-squares slope of recovery time against store size.
const xs = r.cycles.map((c) => c.storeBytes / 2 ** 30);
const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
const my = rec.reduce((a, b) => a + b, 0) / rec.length;
const sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
const slope = sxx > 0 ? xs.reduce((a, x, i) => a + (x - mx) * (rec[i]! - my), 0) / sxx : NaN;
out(`recovery growth: ${Number.isNaN(slope) ? "n/a (store size did not change)" : `${slope.toFixed(0)} ms per GiB of store (least squares over the cycles)`}`);
out("");
out("| cycles | store at kill (MiB) | recovery median (ms) | recovery max (ms) |");
out("|---|---|---|---|");
for (let i = 0; i < r.cycles.length; i += 10) {
  const g = r.cycles.slice(i, i + 10);
  const ms = g.map((c) => c.recoveryMs);
  out(`| ${i + 1}–${i + g.length} | ${mib(g[0]!.storeBytes)}–${mib(g.at(-1)!.storeBytes)} | ${median(ms).toFixed(0)} | ${Math.max(...ms).toFixed(0)} |`);
}
if (args.json) writeFileSync(args.json, JSON.stringify(r, null, 1));
const bad = v.lost.SYNC_FLUSH.length > 0 || (args.powerLoss !== "all" && v.lost.ASYNC_FLUSH.length > 0) || v.duplicates.sameRecord > 0;
if (bad) out("FAILED: acknowledged messages lost (or one record queued twice)");
process.exit(bad ? 1 : 0);
