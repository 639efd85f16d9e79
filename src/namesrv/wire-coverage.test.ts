/**
 * Every request code the name server serves has an in-process test: the processor's own code
 * list against the `RequestCode.NAME`s the other tests in this directory use, directly or through
 * a request builder of ./test-support.ts they call (read as text, comments left out). A new
 * handler without a test fails here, naming it.
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { KvConfigManager } from "./kv-config.ts";
import { NamesrvRequestProcessor } from "./processors.ts";
import { RouteInfoManager } from "./route-info-manager.ts";
import { RequestCode } from "../remoting/index.ts";
import { recordingLogger } from "../remoting/test-support.ts";

const HERE = import.meta.dir;
const SELF = basename(import.meta.path);

/** The codes the processor registers, by name. */
function servedCodes(): string[] {
  const processor = new NamesrvRequestProcessor({
    routes: new RouteInfoManager(),
    kv: new KvConfigManager(join(HERE, "never-written.json")),
    orderMessageEnable: false,
    now: () => 0,
    log: recordingLogger(),
  });
  const names = new Map<number, string>(Object.entries(RequestCode).map(([name, code]) => [code, name]));
  return processor.codes.map((c) => names.get(c) ?? `code ${c} (not in RequestCode)`).sort();
}

const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
const codeNames = (text: string) => [...text.matchAll(/\bRequestCode\.([A-Z0-9_]+)\b/g)].map((m) => m[1]!);

/** test-support.ts's exported request builders → the codes each one's body names. */
function builders(): Map<string, string[]> {
  const text = withoutComments(readFileSync(join(HERE, "test-support.ts"), "utf8"));
  const out = new Map<string, string[]>();
  const starts = [...text.matchAll(/^export function (\w+)/gm)];
  starts.forEach((m, i) => {
    const body = text.slice(m.index, starts[i + 1]?.index ?? text.length);
    const codes = codeNames(body);
    if (codes.length > 0) out.set(m[1]!, codes);
  });
  return out;
}

/** The codes this directory's other test files use: `RequestCode.NAME`, or a call of a builder that sends it. */
function testedCodes(): Set<string> {
  const out = new Set<string>();
  const byBuilder = builders();
  for (const f of readdirSync(HERE).filter((x) => x.endsWith(".test.ts") && x !== SELF)) {
    const code = withoutComments(readFileSync(join(HERE, f), "utf8"));
    for (const name of codeNames(code)) out.add(name);
    for (const [fn, codes] of byBuilder) if (new RegExp(`\\b${fn}\\(`).test(code)) for (const c of codes) out.add(c);
  }
  return out;
}

test("every request code the name server serves is sent by an in-process test", () => {
  const served = servedCodes();
  const tested = testedCodes();
  const missing = served.filter((name) => !tested.has(name));
  if (missing.length > 0) console.log(`name server codes without an in-process test: ${missing.join(", ")}`);
  expect(missing).toEqual([]);
  // The list is the processor's: 20 codes when this was written (a sanity floor, not a cap).
  expect(served.length).toBeGreaterThanOrEqual(20);
});
