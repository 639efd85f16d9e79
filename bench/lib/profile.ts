/**
 * Summaries of a broker CPU profile (`bun --cpu-prof`, Chrome .cpuprofile JSON) per workload: the
 * samples taken while a workload ran (its wall-clock window), by function, self and inclusive.
 * Percentages are of the samples in the window, so idle time does not dilute them.
 *
 *   bun bench/lib/profile.ts FILE.cpuprofile [FROM_MS TO_MS]   # epoch ms window, default all
 */
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: Node[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface FnRow {
  fn: string;
  self: number;
  selfPct: number;
  total: number;
  totalPct: number;
}

export interface WindowSummary {
  name: string;
  samples: number;
  top: FnRow[];
}

function label(n: Node): string {
  const f = n.callFrame;
  const name = f.functionName || "(anonymous)";
  if (!f.url) return `${name} [native]`;
  const file = f.url.replace(/^file:\/\//, "").replace(/^.*\/src\//, "src/");
  return `${name} ${file}:${f.lineNumber + 1}`;
}

export function loadProfile(file: string): { byId: Map<number, Node>; parent: Map<number, number>; times: Float64Array; samples: number[] } {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Sample times in epoch ms (startTime and timeDeltas are µs).
  const times = new Float64Array(p.samples.length);
  let t = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    times[i] = t / 1000;
  }
  return { byId, parent, times, samples: p.samples };
}

/** Self and inclusive sample counts per function label within [fromMs, toMs]. */
export function summarize(prof: ReturnType<typeof loadProfile>, name: string, fromMs = -Infinity, toMs = Infinity, limit = 25): WindowSummary {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let n = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    const t = prof.times[i]!;
    if (t < fromMs || t > toMs) continue;
    let id: number | undefined = prof.samples[i]!;
    const leaf = prof.byId.get(id);
    if (!leaf) continue;
    const leafLabel = label(leaf);
    if (leaf.callFrame.functionName === "(idle)" || leaf.callFrame.functionName === "(root)") continue;
    n++;
    self.set(leafLabel, (self.get(leafLabel) ?? 0) + 1);
    const seen = new Set<string>();
    while (id !== undefined) {
      const node = prof.byId.get(id);
      if (!node) break;
      const l = label(node);
      if (!seen.has(l) && node.callFrame.functionName !== "(root)") {
        seen.add(l);
        total.set(l, (total.get(l) ?? 0) + 1);
      }
      id = prof.parent.get(id);
    }
  }
  const rows: FnRow[] = [...self.entries()].map(([fn, s]) => ({
    fn,
    self: s,
    selfPct: n ? (100 * s) / n : 0,
    total: total.get(fn) ?? s,
    totalPct: n ? (100 * (total.get(fn) ?? s)) / n : 0,
  }));
  rows.sort((a, b) => b.self - a.self);
  const inclusive: FnRow[] = [...total.entries()]
    .filter(([fn]) => !self.has(fn) || (self.get(fn) ?? 0) < (total.get(fn) ?? 0))
    .map(([fn, t]) => ({ fn, self: self.get(fn) ?? 0, selfPct: n ? (100 * (self.get(fn) ?? 0)) / n : 0, total: t, totalPct: n ? (100 * t) / n : 0 }))
    .sort((a, b) => b.total - a.total);
  return { name, samples: n, top: [...rows.slice(0, limit), ...inclusive.slice(0, limit).map((r) => ({ ...r, fn: `${r.fn} (incl.)` }))] };
}

export function summaryMarkdown(s: WindowSummary): string {
  const lines = [
    `### ${s.name} (${s.samples} samples ≈ ${(s.samples / 1000).toFixed(2)} CPU-s at 1 ms)`,
    "",
    "| self % | total % | function |",
    "|---:|---:|---|",
  ];
  for (const r of s.top) lines.push(`| ${r.selfPct.toFixed(1)} | ${r.totalPct.toFixed(1)} | \`${r.fn.replace(/\|/g, "\\|")}\` |`);
  return lines.join("\n") + "\n";
}

if (import.meta.main) {
  const [file, from, to] = process.argv.slice(2);
  if (!file) {
    process.stderr.write("usage: bun bench/lib/profile.ts FILE.cpuprofile [FROM_MS TO_MS]\n");
    process.exit(2);
  }
  const prof = loadProfile(file);
  process.stdout.write(summaryMarkdown(summarize(prof, file, from ? Number(from) : -Infinity, to ? Number(to) : Infinity, 40)));
}
