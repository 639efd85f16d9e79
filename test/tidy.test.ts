/**
 * House-style and layering rules (docs/CONVENTIONS.md §13 and §15), enforced: the checks read the
 * source tree as text, like TigerBeetle's tidy.zig.
 */
import { describe, expect, test } from "bun:test";
import ts from "typescript";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, relative, resolve, dirname } from "node:path";
import { KEYS } from "../src/config/schema.ts";

const ROOT = resolve(import.meta.dir, "..");
const SRC = join(ROOT, "src");
const LINE_MAX = 160;
/** "issue #17", "issue 27", "issues #16–#18": the issue tracker is not in the repository, so a reader cannot follow them. */
const ISSUE_NUMBER = /\bissues? #?[0-9]+/i;

/** The files under `dir` with one of `exts`, leaving out dependencies, build output, test artifacts and bench results. */
function walk(dir: string, exts: readonly string[] = [".ts"]): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "dist" || name === "target" || name === "artifacts" || name.startsWith(".")) continue;
    const p = join(dir, name);
    if (p === join(ROOT, "bench", "results")) continue;
    if (statSync(p).isDirectory()) out.push(...walk(p, exts));
    else if (exts.some((e) => p.endsWith(e))) out.push(p);
  }
  return out;
}

/** Text files that may cite a document: code, test sources and the golden files beside them, configs, units. */
const CITING_EXTS = [".ts", ".tsx", ".java", ".go", ".json", ".hex", ".yaml", ".yml", ".service", ".xml", ".sh"];

// .tsx: the dashboard's pages (Hono JSX, src/admin/dashboard/); the same rules apply to them.
const files = walk(SRC, [".ts", ".tsx"]);
const sources = files.filter((f) => !f.endsWith(".test.ts") && !f.endsWith(".suite.ts") && !f.includes("test-support"));
const text = new Map(files.map((f) => [f, readFileSync(f, "utf8")]));
const rel = (f: string) => relative(ROOT, f);

/** The numbered sections of a document under docs/: "3.5" for a heading "### 3.5 PULL_MESSAGE …". */
function docSections(doc: string): Set<string> | null {
  let body: string;
  try {
    body = readFileSync(join(ROOT, "docs", doc), "utf8");
  } catch {
    return null;
  }
  return new Set([...body.matchAll(/^#{1,6}\s+(\d+(?:\.\d+)*)[.\s]/gm)].map((m) => m[1]!));
}

/**
 * The citations in one file that do not resolve: a docs/X.md that does not exist, a § that is
 * not a numbered heading of the document it follows, or a § that follows no document. A § belongs
 * to the document named before it when only separators stand between them (", ", " and ", "–",
 * " item 4", a comment's line break), e.g. "docs/PROTOCOL.md §3.4, §3.9" or "docs/STORAGE.md\n * §6".
 */
function unresolvedCitations(source: string, sections: (doc: string) => Set<string> | null): string[] {
  const problems: string[] = [];
  let doc: string | null = null;
  let last = 0;
  for (const m of source.matchAll(/docs\/([\w-]+\.md)|§(\d+(?:\.\d+)*)/g)) {
    const gap = source.slice(last, m.index);
    last = m.index + m[0].length;
    if (m[1] !== undefined) {
      doc = m[1];
      if (sections(doc) === null) problems.push(`docs/${doc} does not exist`);
      continue;
    }
    const attached = doc !== null && /^(?:[\s*,;(–-]|and\b|item \d+(?:[–-]\d+)?)*$/.test(gap);
    if (!attached) {
      problems.push(`§${m[2]} names no document (write docs/<name>.md §${m[2]})`);
      doc = null;
      continue;
    }
    const known = sections(doc!);
    if (known && !known.has(m[2]!)) problems.push(`docs/${doc} has no section ${m[2]}`);
  }
  return problems;
}

/**
 * Documents a file names that a reader of this repository cannot open: a `<name>.md` that is not
 * in the repository (at that path from the root or from the file, or under docs/), and a numbered
 * "practice N" (a house rule cited by number without its document: write docs/CONVENTIONS.md §N).
 * OUTSIDE_DATA_FILES are the exception: files of other tools the code reads as data.
 */
function outsideDocuments(source: string, file: string): string[] {
  const problems: string[] = [];
  for (const m of source.matchAll(/(?<![\w./-])((?:\.{1,2}\/)*(?:[\w-]+\/)*\w[\w-]*\.md)\b/g)) {
    const name = m[1]!;
    if (name.startsWith("docs/") || OUTSIDE_DATA_FILES.has(basename(name))) continue; // docs/: unresolvedCitations
    if ([join(ROOT, name), join(dirname(file), name), join(ROOT, "docs", name)].some((p) => existsSync(p))) continue;
    problems.push(`names ${name}, which is not in this repository (cite docs/ instead)`);
  }
  for (const m of source.matchAll(/\bpractices? (\d+)/g)) problems.push(`cites "${m[0]}" without its document (write docs/CONVENTIONS.md §${m[1]})`);
  return problems;
}

/** Other tools' files the code reads as data, not documents it cites: the peers harness's result table (bench/lib/report.ts). */
const OUTSIDE_DATA_FILES: ReadonlySet<string> = new Set(["RESULTS.md"]);

/** A numeric constant as written: `12`, `0x7fffffff`, `3_600_000`, `-1`, `1 << 8`, `0x1 << 3`. */
const NUMBER = String.raw`-?(?:0x[0-9a-fA-F_]+|\d[\d_]*)(?:\s*<<\s*\d+)?`;

/** The value of a NUMBER, so that `0x4`, `4` and `1 << 2` are one value. */
function numberValue(written: string): number {
  const [base, shift] = written.split("<<").map((x) => Number(x.trim().replace(/_/g, "")));
  return shift === undefined ? base! : base! * 2 ** shift;
}

/**
 * Definitions made in more than one file: an exported type, interface, class or enum name; a
 * top-level string constant's value (3+ characters); or a numeric constant's name and value
 * together, top-level (`const HOUR_MS = 3_600_000`) or a member of a `*Flag`/`*Const` object
 * (`SysFlag = { COMPRESSED: 0x1 }`), so a flag bit copied as `const COMPRESSED = 1` is one too.
 * Protocol shapes and names have one home (src/protocol/, docs/ARCHITECTURE.md); a second copy
 * drifts from the first.
 */
function duplicateDefinitions(files: Map<string, string>): [string, string[]][] {
  const seen = new Map<string, string[]>();
  const note = (key: string, file: string) => {
    const list = seen.get(key) ?? [];
    if (!list.includes(file)) list.push(file);
    seen.set(key, list);
  };
  for (const [file, src] of files) {
    for (const m of src.matchAll(/^export (?:declare )?(?:interface|type|class|enum) ([A-Za-z0-9_]+)/gm)) note(`type ${m[1]}`, file);
    for (const m of src.matchAll(/^(?:export )?const [A-Za-z0-9_]+ = ("[^"\\\n]{3,}");/gm)) note(`string ${m[1]}`, file);
    for (const m of src.matchAll(new RegExp(String.raw`^(?:export )?const ([A-Za-z0-9_]+)(?::[^=\n]+)? = (${NUMBER});`, "gm")))
      note(`number ${m[1]} = ${numberValue(m[2]!)}`, file);
    for (const m of src.matchAll(/^(?:export )?const \w*(?:Flag|Const) = \{\n([\s\S]*?)^\}/gm))
      for (const p of m[1]!.matchAll(new RegExp(String.raw`^\s+([A-Za-z0-9_]+): (${NUMBER}),`, "gm")))
        note(`number ${p[1]} = ${numberValue(p[2]!)}`, file);
  }
  return [...seen].filter(([, where]) => where.length > 1);
}

/**
 * Known copies, by duplicateDefinitions' key, that go with work under way. The list only shrinks:
 * an entry that is no longer defined twice fails the test until it is removed.
 */
const DUPLICATE_EXCEPTIONS = new Set<string>([
]);

/** TigerBeetle's limit: a function that does not fit on a screen is hard to hold in one's head. */
const FUNCTION_LINES_MAX = 70;

/**
 * Functions longer than FUNCTION_LINES_MAX (10 when the rule came in, 2 now), by `file#Class.name`.
 * The list only shrinks: an entry that is short now, or gone, fails the test until it is removed.
 * The record decoder and the HA stream's scan stay whole on purpose, for now: hot-path loops.
 */
const LONG_FUNCTION_EXCEPTIONS = new Set([
  "src/common/message-record.ts#decodeRecordAt",
  "src/ha/record-stream.ts#RecordStream.#scan",
]);

/** Every function-like node with a body, named `Class.method` or `function`, with its length in lines. */
function functionLengths(file: string, source: string): { name: string; lines: number }[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const out: { name: string; lines: number }[] = [];
  const nameOf = (n: ts.FunctionLikeDeclaration): string => {
    if (ts.isConstructorDeclaration(n)) return "constructor";
    if (n.name) return n.name.getText(sf);
    const p = n.parent;
    if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) return p.name.getText(sf);
    return "(anonymous)";
  };
  const visit = (n: ts.Node, owner: string): void => {
    let inner = owner;
    if (ts.isClassDeclaration(n) && n.name) inner = n.name.text;
    else if (ts.isFunctionLike(n) && "body" in n && n.body) {
      const f = n as ts.FunctionLikeDeclaration;
      inner = owner ? `${owner}.${nameOf(f)}` : nameOf(f);
      const first = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(n.getEnd()).line;
      out.push({ name: inner, lines: last - first + 1 });
    }
    ts.forEachChild(n, (c) => visit(c, inner));
  };
  visit(sf, "");
  return out;
}

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

/** A repository path in a document: under one of the project's top folders (module-relative `config/…` too). */
const DOC_PATH = /^(src|test|bench|config|scripts|deploy|docs)\/[\w./-]+$/;
/** A config key in a document: `broker.autoCreateTopicEnable`, `store.dir`, or a section such as `broker.failover`. */
const DOC_KEY = /^(broker|store|remoting|namesrv|tls|admin)\.[a-zA-Z][\w.]*$/;

/**
 * Where a path a document names may live: the repository root, src/ (documents name modules'
 * files as `config/schema.ts`), or the Java interop projects (`src/main/java/…`). What runs write
 * (benchmark results, test artifacts) and the store's own files (`config/topics.json` under
 * store.dir) are not in a fresh clone.
 */
function docPathExists(p: string): boolean {
  if (p.startsWith("bench/results/") || p.startsWith("test/artifacts/") || /^config\/[\w-]+\.json$/.test(p)) return true;
  return [ROOT, SRC, join(ROOT, "test", "interop", "java")].some((base) => existsSync(join(base, p)));
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

  test("no FIXME in src/, no issue number (the tracker is not in the repository), no source line longer than the limit", () => {
    const problems: string[] = [];
    for (const f of sources) {
      text
        .get(f)!
        .split("\n")
        .forEach((line, i) => {
          if (line.includes("FIXME")) problems.push(`${rel(f)}:${i + 1}: FIXME`);
          if (ISSUE_NUMBER.test(line)) problems.push(`${rel(f)}:${i + 1}: names an issue number (say what it is, or cite docs/)`);
          if (line.length > LINE_MAX) problems.push(`${rel(f)}:${i + 1}: ${line.length} > ${LINE_MAX} characters`);
        });
    }
    expect(problems).toEqual([]);
  });

  test("layering: each module imports only the layers below it", () => {
    const allowed: Record<string, string[]> = {
      common: ["common"],
      protocol: ["common", "protocol"],
      remoting: ["common", "protocol", "remoting"],
      commitlog: ["common", "protocol", "commitlog"],
      ha: ["common", "protocol", "commitlog", "ha"],
      acl: ["common", "protocol", "remoting", "config", "acl"],
      namesrv: ["common", "protocol", "remoting", "config", "acl", "namesrv"],
      failover: ["common", "failover"],
      broker: ["common", "protocol", "remoting", "commitlog", "ha", "config", "acl", "failover", "broker"],
      client: ["common", "protocol", "remoting", "client"],
      config: ["common", "protocol", "config"],
      cli: ["common", "protocol", "config", "cli"],
      admin: ["common", "protocol", "admin", "namesrv", "broker", "ha"],
      // The 5.x gRPC endpoint: a second protocol in front of the broker's processors (see the next tests).
      grpc: ["common", "protocol", "config", "broker", "grpc"],
      // `rocketbun admin`: a client of the wire protocol like src/client/, never of a server's internals.
      "admin-cli": ["common", "protocol", "remoting", "client", "admin-cli"],
      "(root)": ["common", "protocol", "remoting", "commitlog", "ha", "acl", "failover", "namesrv", "broker", "client", "config", "cli", "admin", "admin-cli", "grpc", "(root)"],
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

  test("every repository path and config key named in docs/ and README exists", () => {
    const keys = new Set<string>(KEYS.map((k) => k.key));
    const problems: string[] = [];
    for (const doc of [...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`), "README.md"]) {
      for (const [, name] of readFileSync(join(ROOT, doc), "utf8").matchAll(/`([^`\s]+)`/g)) {
        const n = name!.replace(/[.,:;)]+$/, "");
        if (DOC_PATH.test(n) && !/[*<>{}]/.test(n) && !docPathExists(n)) problems.push(`${doc}: ${n} does not exist`);
        const isKey = DOC_KEY.test(n) && !/\.(ts|tsx|md|yaml|yml|json)$/.test(n);
        if (isKey && !keys.has(n) && ![...keys].some((k) => k.startsWith(`${n}.`))) problems.push(`${doc}: config key ${n} does not exist`);
      }
    }
    expect(problems).toEqual([]);
  });

  test("src/ never imports test/: neither its code nor its test-support files (test files may)", () => {
    const TEST = join(ROOT, "test") + "/";
    const problems: string[] = [];
    for (const f of files.filter((x) => !x.endsWith(".test.ts") && !x.endsWith(".suite.ts"))) {
      for (const imp of imports(f)) if (imp.startsWith(TEST)) problems.push(`${rel(f)} imports ${relative(ROOT, imp)}`);
    }
    expect(problems).toEqual([]);
  });

  test("components take their configuration as the schema's types, nothing else from config/", () => {
    const problems: string[] = [];
    for (const f of sources.filter((x) => ["broker", "namesrv", "acl"].includes(moduleOf(x)!))) {
      for (const imp of imports(f)) {
        if (moduleOf(imp) === "config" && !imp.endsWith("/config/schema.ts")) problems.push(`${rel(f)} imports ${relative(ROOT, imp)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  test("one home per protocol shape and constant: no exported type, string constant or numeric constant is defined twice", () => {
    const problems: string[] = [];
    const found = duplicateDefinitions(new Map(sources.map((f) => [rel(f), text.get(f)!])));
    for (const [what, where] of found) if (!DUPLICATE_EXCEPTIONS.has(what)) problems.push(`${what} in ${where.join(", ")}`);
    for (const k of DUPLICATE_EXCEPTIONS)
      if (!found.some(([what]) => what === k)) problems.push(`${k}: no longer defined twice: remove it from DUPLICATE_EXCEPTIONS`);
    expect(problems).toEqual([]);
  });

  test("the duplicate-definition check finds copies under any name", () => {
    const found = duplicateDefinitions(
      new Map([
        ["a.ts", 'export interface QueueData {}\nexport const RETRY = "%RETRY%";\nconst X = "ab";'],
        ["b.ts", 'export type QueueData = { a: 1 };\nconst RETRY_PREFIX = "%RETRY%";\nconst Y = "ab";'],
      ]),
    );
    expect(found).toEqual([
      ["type QueueData", ["a.ts", "b.ts"]],
      ['string "%RETRY%"', ["a.ts", "b.ts"]],
    ]);
  });

  test("the duplicate-definition check finds a numeric constant defined twice, as a constant or a flag object's member", () => {
    const found = duplicateDefinitions(
      new Map([
        ["a.ts", "const TRANSACTION_PREPARED_TYPE = 0x4;\nexport const HOUR_MS = 3_600_000;\nconst SIZE = 4;\nexport const BORN = 1 << 4;"],
        [
          "b.ts",
          "export const SysFlag = {\n  /** half */\n  TRANSACTION_PREPARED_TYPE: 4,\n  BORN: 0x10,\n} as const;\nconst HOUR_MS: number = 3600000;\nconst SIZE = 8;",
        ],
        ["c.ts", "function f() {\n  const SIZE = 4;\n}\nconst Other = {\n  SIZE: 4,\n};\nexport const PullSysFlag = {\n  SUSPEND: 2,\n};"],
      ]),
    );
    // A name with two values, a local constant and a plain object's member are not copies.
    expect(found).toEqual([
      ["number TRANSACTION_PREPARED_TYPE = 4", ["a.ts", "b.ts"]],
      ["number HOUR_MS = 3600000", ["a.ts", "b.ts"]],
      ["number BORN = 16", ["a.ts", "b.ts"]],
    ]);
  });

  test(`functions are at most ${FUNCTION_LINES_MAX} lines, but for a list of exceptions that only shrinks`, () => {
    const long = new Map<string, number>();
    for (const f of sources) {
      for (const fn of functionLengths(f, text.get(f)!)) if (fn.lines > FUNCTION_LINES_MAX) long.set(`${rel(f)}#${fn.name}`, fn.lines);
    }
    const problems = [...long].filter(([k]) => !LONG_FUNCTION_EXCEPTIONS.has(k)).map(([k, n]) => `${k}: ${n} lines (split it into named steps)`);
    for (const k of LONG_FUNCTION_EXCEPTIONS)
      if (!long.has(k)) problems.push(`${k}: no longer long (or gone): remove it from LONG_FUNCTION_EXCEPTIONS`);
    expect(problems).toEqual([]);
  });

  test("the function-length measure names methods by class and counts whole lines", () => {
    const src = ["class A {", "  m() {", "    const f = () => {", "      return 1;", "    };", "  }", "}", "function g() {}"].join("\n");
    expect(functionLengths("x.ts", src)).toEqual([
      { name: "A.m", lines: 5 },
      { name: "A.m.f", lines: 3 },
      { name: "g", lines: 1 },
    ]);
  });

  test("grpc reaches the broker only through broker/index.ts (its BrokerMessaging) and config only through schema.ts", () => {
    const problems: string[] = [];
    for (const f of sources.filter((x) => moduleOf(x) === "grpc")) {
      for (const imp of imports(f)) {
        const to = moduleOf(imp);
        if (to === "broker" && !imp.endsWith("src/broker/index.ts")) problems.push(`${rel(f)} imports ${relative(ROOT, imp)}`);
        if (to === "config" && !imp.endsWith("src/config/schema.ts")) problems.push(`${rel(f)} imports ${relative(ROOT, imp)}`);
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

  test("citations point into docs/ of this repository, at sections that exist", () => {
    const cache = new Map<string, Set<string> | null>();
    const sections = (doc: string) => {
      if (!cache.has(doc)) cache.set(doc, docSections(doc));
      return cache.get(doc)!;
    };
    const problems: string[] = [];
    for (const f of walk(ROOT, CITING_EXTS)) {
      if (f === import.meta.path) continue;
      const src = readFileSync(f, "utf8");
      for (const p of [...outsideDocuments(src, f), ...unresolvedCitations(src, sections)]) problems.push(`${rel(f)}: ${p}`);
    }
    expect(problems).toEqual([]);
  });

  test("the outside-document check refuses documents a reader of the repository cannot open", () => {
    const here = join(ROOT, "src", "x.ts");
    expect(outsideDocuments("see README.md, bench/README.md and docs/PROTOCOL.md; the peers' RESULTS.md", here)).toEqual([]);
    expect(outsideDocuments("as NOTES.md says", here)).toEqual(["names NOTES.md, which is not in this repository (cite docs/ instead)"]);
    expect(outsideDocuments("../elsewhere/GUIDE.md", here)).toEqual(["names ../elsewhere/GUIDE.md, which is not in this repository (cite docs/ instead)"]);
    expect(outsideDocuments("errors stick (practice 5)", here)).toEqual(['cites "practice 5" without its document (write docs/CONVENTIONS.md §5)']);
    expect(outsideDocuments("`${base}-profile.md` and `${stamp}.md`, files a run writes", here)).toEqual([]);
  });

  test("the citation check resolves chains and refuses what does not exist", () => {
    const sections = (doc: string) => (doc === "A.md" ? new Set(["1", "3.4", "3.9"]) : null);
    expect(unresolvedCitations("see docs/A.md §3.4, §3.9 and §1", sections)).toEqual([]);
    expect(unresolvedCitations("(docs/A.md\n * §3.4, §1 item 2–3)", sections)).toEqual([]);
    expect(unresolvedCitations("docs/A.md §3.5", sections)).toEqual(["docs/A.md has no section 3.5"]);
    expect(unresolvedCitations("docs/B.md §1", sections)).toEqual(["docs/B.md does not exist"]);
    expect(unresolvedCitations("docs/A.md §1. Later text §3.4", sections)).toEqual(["§3.4 names no document (write docs/<name>.md §3.4)"]);
  });

  test("every source file is imported by something (or is an entry point)", () => {
    // Entry points: the binary's main, and each module's public surface (index.ts).
    // Declaration files (.d.ts) are read by the compiler, never imported.
    const entries = new Set([join(SRC, "server.ts"), ...sources.filter((f) => f.endsWith("/index.ts") || f.endsWith(".d.ts"))]);
    const imported = new Set<string>();
    for (const f of files) for (const imp of imports(f)) imported.add(/\.tsx?$/.test(imp) ? imp : `${imp}.ts`);
    const orphans = sources.filter((f) => !entries.has(f) && !imported.has(f));
    expect(orphans.map(rel)).toEqual([]);
  });
});
