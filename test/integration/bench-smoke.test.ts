/**
 * Smoke test of the benchmark (bench/run.ts --smoke --no-peers): every RocketBun workload runs with
 * a few thousand messages against the compiled binary and the report files are written. It keeps
 * the benchmark code working; it never looks at a figure (benchmarks are not tests).
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ensureBinary, ROOT, tempDir } from "../harness/binary.ts";

const out = tempDir("rocketbun-bench-smoke-");
afterAll(() => rmSync(out, { recursive: true, force: true }));

test("bench/run.ts --smoke --no-peers writes the .json, .md and .svg report", async () => {
  const proc = Bun.spawn([process.execPath, join(ROOT, "bench/run.ts"), "--smoke", "--no-peers", "--binary", ensureBinary(), "--out", out], {
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, BENCH_DIR: out },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect({ code, tail: code === 0 ? "" : stderr.slice(-3000) }).toEqual({ code: 0, tail: "" });
  const stamp = /wrote (\S+)\.json, \.md, \.svg/.exec(stderr)?.[1];
  expect(stamp).toBeDefined();
  for (const ext of [".json", ".md", ".svg"]) expect(existsSync(`${stamp}${ext}`)).toBe(true);

  const report = JSON.parse(readFileSync(`${stamp}.json`, "utf8")) as {
    mode: string;
    rocketbun: { workload: string; complete?: boolean }[];
    table: unknown[];
  };
  expect(report.mode).toBe("smoke");
  const workloads = report.rocketbun.map((r) => r.workload);
  for (const w of ["W1", "W1s", "W2", "W3", "W4", "W5", "W6-send", "W6-consume", "W2p", "W3p", "process"]) expect(workloads).toContain(w);
  expect(report.table.length).toBeGreaterThan(10);

  const md = readFileSync(`${stamp}.md`, "utf8");
  expect(md).toContain("| workload | metric | RocketBun |");
  expect(md).toContain("## Targets (issue 7)");

  const svg = readFileSync(`${stamp}.svg`, "utf8");
  expect(svg.startsWith("<?xml")).toBe(true);
  expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
  // Well-formed enough for a viewer: every opened element is closed.
  const opened = [...svg.matchAll(/<(rect|text|line|title|svg)\b[^>]*?(\/?)>/g)].filter((m) => m[2] !== "/").length;
  const closed = [...svg.matchAll(/<\/(rect|text|line|title|svg)>/g)].length;
  expect(opened).toBe(closed);
  expect(stdout).toContain("RocketBun");
}, 60_000);
