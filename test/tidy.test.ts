/**
 * House-style and layering rules (STYLE.md practices 13 and 15), enforced: the checks read the
 * source tree as text, like TigerBeetle's tidy.zig.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve, dirname } from "node:path";

const ROOT = resolve(import.meta.dir, "..");
const SRC = join(ROOT, "src");
const LINE_MAX = 160;

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

const files = walk(SRC);
const sources = files.filter((f) => !f.endsWith(".test.ts") && !f.endsWith(".suite.ts") && !f.includes("test-support"));
const text = new Map(files.map((f) => [f, readFileSync(f, "utf8")]));
const rel = (f: string) => relative(ROOT, f);

function imports(file: string): string[] {
  const src = text.get(file)!;
  const out: string[] = [];
  for (const m of src.matchAll(/(?:import|export)[^'"]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g)) {
    const spec = m[1] ?? m[2]!;
    if (spec.startsWith(".")) out.push(resolve(dirname(file), spec));
    else out.push(spec);
  }
  return out;
}

function moduleOf(abs: string): string | null {
  if (!abs.startsWith(SRC + "/")) return null;
  const parts = relative(SRC, abs).split("/");
  return parts.length > 1 ? parts[0]! : "(root)";
}

describe("tidy", () => {
  test("no console.* in src/ outside common/log.ts", () => {
    const offenders = sources.filter((f) => !f.endsWith("common/log.ts") && /\bconsole\.\w+\(/.test(text.get(f)!));
    expect(offenders.map(rel)).toEqual([]);
  });

  test("no `any` in src/", () => {
    // Comments are prose ("any message …"), so only code lines are checked.
    const code = (f: string) =>
      text
        .get(f)!
        .split("\n")
        .filter((l) => !/^\s*(\*|\/\/|\/\*)/.test(l))
        .join("\n");
    const offenders = sources.filter((f) => /(:\s*any\s*[;,)\]=|>{]|\bas any\b|<any>)/.test(code(f)));
    expect(offenders.map(rel)).toEqual([]);
  });

  test("no FIXME in src/, no source line longer than the limit", () => {
    const problems: string[] = [];
    for (const f of sources) {
      text.get(f)!.split("\n").forEach((line, i) => {
        if (line.includes("FIXME")) problems.push(`${rel(f)}:${i + 1}: FIXME`);
        if (line.length > LINE_MAX) problems.push(`${rel(f)}:${i + 1}: ${line.length} > ${LINE_MAX} characters`);
      });
    }
    expect(problems).toEqual([]);
  });

  test("layering: each module imports only the layers below it", () => {
    const allowed: Record<string, string[]> = {
      common: ["common"],
      remoting: ["common", "remoting"],
      commitlog: ["common", "commitlog"],
      ha: ["common", "commitlog", "ha"],
      namesrv: ["common", "remoting", "namesrv"],
      broker: ["common", "remoting", "commitlog", "ha", "broker"],
      client: ["common", "remoting", "client"],
      config: ["common", "config"],
      cli: ["common", "config", "cli"],
      admin: ["common", "admin", "namesrv", "broker", "ha"],
      "(root)": ["common", "remoting", "commitlog", "ha", "namesrv", "broker", "client", "config", "cli", "admin", "(root)"],
    };
    const problems: string[] = [];
    for (const f of sources) {
      const from = moduleOf(f)!;
      for (const imp of imports(f)) {
        const to = moduleOf(imp);
        if (to === null) continue;
        if (!(allowed[from] ?? []).includes(to)) problems.push(`${rel(f)} imports ${relative(ROOT, imp)} (${from} → ${to})`);
      }
    }
    expect(problems).toEqual([]);
  });

  test("admin reads other modules only through their index.ts", () => {
    const problems: string[] = [];
    for (const f of sources.filter((x) => moduleOf(x) === "admin")) {
      for (const imp of imports(f)) {
        const to = moduleOf(imp);
        if (to && to !== "admin" && to !== "common" && !imp.endsWith("/index.ts")) problems.push(`${rel(f)} imports ${relative(ROOT, imp)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  test("every source file is imported by something (or is an entry point)", () => {
    // Entry points: the binary's main, and each module's public surface (index.ts).
    const entries = new Set([join(SRC, "server.ts"), ...sources.filter((f) => f.endsWith("/index.ts"))]);
    const imported = new Set<string>();
    for (const f of files) for (const imp of imports(f)) imported.add(imp.endsWith(".ts") ? imp : `${imp}.ts`);
    const orphans = sources.filter((f) => !entries.has(f) && !imported.has(f));
    expect(orphans.map(rel)).toEqual([]);
  });
});
