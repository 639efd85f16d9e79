/**
 * How many of the broker's request codes the in-process tests exercise, measured, not declared:
 * the in-process test files (every src/ test that starts an InProcessBroker) run in a child
 * `bun test` with FIXTURE_CODES_ENV set, so each fixture broker writes at stop the request codes
 * its own request pipeline answered (../test-support.ts). A code counts when some answer was
 * neither REQUEST_CODE_NOT_SUPPORTED nor SYSTEM_BUSY (answers no processor gave); the child run
 * must pass. The codes are the union of the CODES lists broker.ts registers.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { requestCodeName } from "../../remoting/index.ts";
import { FIXTURE_CODES_ENV } from "../test-support.ts";
import { AckMessageProcessor } from "./ack-message.ts";
import { AclAdminProcessor } from "./acl-admin.ts";
import { AdminProcessor } from "./admin.ts";
import { BrokerToClientProcessor } from "./broker-to-client.ts";
import { ClientManageProcessor } from "./client-manage.ts";
import { ConsumerManageProcessor } from "./consumer-manage.ts";
import { EndTransactionProcessor } from "./end-transaction.ts";
import { EpochCacheProcessor } from "./epoch-cache.ts";
import { PopMessageProcessor } from "./pop-message.ts";
import { PullMessageProcessor } from "./pull-message.ts";
import { QueryAssignmentProcessor } from "./query-assignment.ts";
import { QueryMessageProcessor } from "./query-message.ts";
import { ReplyMessageProcessor } from "./reply-message.ts";
import { SendMessageProcessor } from "./send-message.ts";
import { TopicAdminProcessor } from "./topic-admin.ts";

/** The bar of the house's target (every processor tested in process). */
const CODES_MIN = 45;

const ROOT = join(import.meta.dir, "..", "..", "..");
const SRC = join(ROOT, "src");
const SELF = import.meta.path;

const PROCESSORS: Record<string, { CODES: readonly number[] }> = {
  SendMessageProcessor,
  ReplyMessageProcessor,
  EndTransactionProcessor,
  PullMessageProcessor,
  ClientManageProcessor,
  ConsumerManageProcessor,
  TopicAdminProcessor,
  QueryMessageProcessor,
  AdminProcessor,
  BrokerToClientProcessor,
  AclAdminProcessor,
  EpochCacheProcessor,
  PopMessageProcessor,
  AckMessageProcessor,
  QueryAssignmentProcessor,
};

function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...testFiles(p));
    else if (e.name.endsWith(".test.ts") && p !== SELF && readFileSync(p, "utf8").includes("InProcessBroker.start(")) out.push(p);
  }
  return out.sort();
}

/** Answers no processor gave: the server's "no processor" and its flow control. */
const NOT_SERVED = new Set(["REQUEST_CODE_NOT_SUPPORTED", "SYSTEM_BUSY", "NONE"]);

test("broker.ts registers exactly the processors counted here", () => {
  const broker = readFileSync(join(SRC, "broker", "broker.ts"), "utf8");
  const registered = [...broker.matchAll(/\[(\w+)\.CODES, /g)].map((m) => m[1]);
  expect(registered.sort()).toEqual(Object.keys(PROCESSORS).sort());
  const all = Object.values(PROCESSORS).flatMap((p) => p.CODES);
  expect(new Set(all).size).toBe(all.length);
});

test(`at least ${CODES_MIN} of the broker's request codes are served to the in-process tests`, async () => {
  const codes = [...new Set(Object.values(PROCESSORS).flatMap((p) => p.CODES))].sort((a, b) => a - b);
  const files = testFiles(SRC);
  const dir = mkdtempSync(join(tmpdir(), "rocketbun-coverage-"));
  try {
    const out = join(dir, "codes.jsonl");
    const child = Bun.spawn([process.execPath, "test", "--timeout", "60000", ...files.map((f) => relative(ROOT, f))], {
      cwd: ROOT,
      env: { ...process.env, [FIXTURE_CODES_ENV]: out },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stderr, rc] = await Promise.all([new Response(child.stderr).text(), child.exited, new Response(child.stdout).text()]);
    if (rc !== 0) throw new Error(`the in-process tests failed (exit ${rc}):\n${stderr.slice(-4000)}`);
    const served = new Map<number, Record<string, number>>();
    for (const line of readFileSync(out, "utf8").split("\n").filter((l) => l !== "")) {
      const { code, responses } = JSON.parse(line) as { code: number; responses: Record<string, number> };
      const acc = served.get(code) ?? {};
      for (const [k, n] of Object.entries(responses)) acc[k] = (acc[k] ?? 0) + n;
      served.set(code, acc);
    }
    const covered = codes.filter((c) => Object.keys(served.get(c) ?? {}).some((r) => !NOT_SERVED.has(r)));
    const uncovered = codes.filter((c) => !covered.includes(c));
    const describe = (c: number) => `${requestCodeName(c)} (${c})${served.has(c) ? ` answered only ${JSON.stringify(served.get(c))}` : ""}`;
    console.log(
      `in-process: ${covered.length} of ${codes.length} broker request codes served, from ${files.length} test files` +
        (uncovered.length > 0 ? `; not: ${uncovered.map(describe).join(", ")}` : ""),
    );
    expect(covered.length).toBeGreaterThanOrEqual(CODES_MIN);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);
