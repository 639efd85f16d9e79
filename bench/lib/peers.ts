/**
 * The peers (NATS JetStream, Redis Streams) and the machine's ceilings, from ../shared/bench-peers:
 * its run.sh installs and starts them (Debian packages, loopback, temp folders) and writes one JSON
 * line per (peer, workload) to $RESULTS_DIR/<its stamp>/all.jsonl. run.sh copies itself to a writable
 * folder when the shared one is read-only.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { PROJECT } from "./cluster.ts";

export function peersHarness(): string {
  return resolve(process.env.BENCH_PEERS ?? join(PROJECT, "../shared/bench-peers"));
}

export function peersCommand(resultsDir: string, env: Record<string, string>): string {
  const vars = Object.entries({ RESULTS_DIR: resultsDir, ...env })
    .map(([k, v]) => `${k}=${/\s/.test(v) ? JSON.stringify(v) : v}`)
    .join(" ");
  return `${vars} bash ${join(peersHarness(), "run.sh")}`;
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
  const script = join(peersHarness(), "run.sh");
  const command = peersCommand(resultsDir, env);
  if (!existsSync(script)) return { rows: [], file: null, exitCode: -1, command: `${command} (missing)` };
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
