/**
 * The peers (NATS JetStream, Redis Streams) and the machine's ceilings, from ../shared/bench-peers:
 * its run.sh installs and starts them (Debian packages, loopback, temp folders) and writes one JSON
 * line per (peer, workload) to $RESULTS_DIR/<its stamp>/all.jsonl. It is always run from a private copy
 * ($BENCH_PEERS_WORK, default <tmp>/bench-peers): run.sh's own read-only check does not fire for root, and
 * run in place it would install node_modules into the shared folder and rewrite its RESULTS.md.
 */
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { PROJECT } from "./cluster.ts";

export function peersHarness(): string {
  return resolve(process.env.BENCH_PEERS ?? join(PROJECT, "../shared/bench-peers"));
}

/** Where the harness runs from: a writable copy that keeps its node_modules between runs. */
export function peersWorkDir(): string {
  return resolve(process.env.BENCH_PEERS_WORK ?? join(tmpdir(), "bench-peers"));
}

/** Copies the harness (not its node_modules or results) over the work copy and makes it writable. */
function refreshWorkCopy(src: string, work: string): void {
  mkdirSync(work, { recursive: true });
  cpSync(src, work, {
    recursive: true,
    force: true,
    filter: (from) => {
      const rel = relative(src, from).split("/")[0];
      return rel !== "node_modules" && rel !== "results";
    },
  });
  const walk = (d: string) => {
    chmodSync(d, statSync(d).mode | 0o200);
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === "node_modules") continue;
      if (e.isDirectory()) walk(join(d, e.name));
      else chmodSync(join(d, e.name), statSync(join(d, e.name)).mode | 0o200);
    }
  };
  walk(work);
}

export function peersCommand(resultsDir: string, env: Record<string, string>): string {
  const vars = Object.entries({ RESULTS_DIR: resultsDir, ...env })
    .map(([k, v]) => `${k}=${/\s/.test(v) ? JSON.stringify(v) : v}`)
    .join(" ");
  return `${vars} bash ${join(peersWorkDir(), "run.sh")}  # a copy of ${peersHarness()}`;
}

export function readJsonl(file: string): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const t = line.trim();
    if (!t.startsWith("{")) continue;
    try {
      rows.push(JSON.parse(t) as Record<string, unknown>);
    } catch {
      /* a torn line */
    }
  }
  return rows;
}

/** The newest all.jsonl under `dir` (run.sh puts it in a stamped subfolder). */
export function findAllJsonl(dir: string): string | null {
  if (!existsSync(dir)) return null;
  let best: { f: string; t: number } | null = null;
  const walk = (d: string, depth: number) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory() && depth < 3) walk(p, depth + 1);
      else if (name === "all.jsonl" && (!best || st.mtimeMs > best.t)) best = { f: p, t: st.mtimeMs };
    }
  };
  walk(dir, 0);
  return (best as { f: string } | null)?.f ?? null;
}

/** Runs the peers' run.sh (its progress goes to our stderr) and reads what it measured. */
export async function runPeers(
  resultsDir: string,
  env: Record<string, string>,
): Promise<{ rows: Record<string, unknown>[]; file: string | null; exitCode: number; command: string }> {
  mkdirSync(resultsDir, { recursive: true });
  const command = peersCommand(resultsDir, env);
  // bench/run.ts says so in one line before it gets here.
  if (!existsSync(join(peersHarness(), "run.sh"))) throw new Error(`no peers' harness at ${peersHarness()}`);
  const work = peersWorkDir();
  refreshWorkCopy(peersHarness(), work);
  const script = join(work, "run.sh");
  const proc = Bun.spawn(["bash", script], {
    env: { ...process.env, ...env, RESULTS_DIR: resultsDir },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
    cwd: PROJECT,
  });
  // run.sh prints every JSON line on stdout too; keep our stdout for the summary.
  const decoder = new TextDecoder();
  for await (const chunk of proc.stdout) process.stderr.write(decoder.decode(chunk, { stream: true }));
  const exitCode = await proc.exited;
  const file = findAllJsonl(resultsDir);
  return { rows: file ? readJsonl(file) : [], file, exitCode, command };
}
