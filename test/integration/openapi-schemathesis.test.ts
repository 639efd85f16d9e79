/**
 * The admin API against its own OpenAPI document (issue #16 point 4): schemathesis (PyPI, pinned
 * in .ci/run) generates requests from /openapi.json — valid ones, invalid ones, undeclared
 * methods, sequences through the links it infers — and checks every answer: no 5xx, a status the
 * document declares, a body and headers that match it, invalid input refused, 405 for an
 * undeclared method. A standalone binary with an admin token, so writes run (the token is sent on
 * every request; schemathesis also sends some without it, which must be 401).
 *
 * Not checked: positive_data_acceptance (a schema-valid request can still be refused for the state
 * it meets: a queue id past the topic's queues, a key the config does not have) and the stateful
 * resource checks (a reset-offset of a group that never committed offsets is a 404 by design).
 * Skips with one line when schemathesis is missing; fails instead under CI=true.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startRocketbun, tempDir, type RunningBinary } from "../harness/binary.ts";
import { toolsPresent } from "../harness/java.ts";

const TOKEN = "Schemathesis-admin-T0ken";
const CHECKS = [
  "not_a_server_error",
  "status_code_conformance",
  "response_schema_conformance",
  "content_type_conformance",
  "response_headers_conformance",
  "negative_data_rejection",
  "unsupported_method",
  "ignored_auth",
];
/** Test cases per operation and phase: enough to walk every operation, bounded to finish well under 2 minutes. */
const MAX_EXAMPLES = 25;

const run = toolsPresent("openapi-schemathesis", ["schemathesis"]);

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function admin(proc: RunningBinary, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = { Authorization: `Bearer ${TOKEN}`, ...(init.body !== undefined ? { "Content-Type": "application/json" } : {}) };
  return fetch(`${proc.adminUrl}${path}`, { ...init, headers });
}

/** Runs schemathesis on the document `proc` serves; fails the test on any failure, printing the report. */
async function conforms(proc: RunningBinary): Promise<void> {
  const spec = await admin(proc, "/openapi.json");
  expect(spec.status).toBe(200);
  const dir = tempDir("rocketbun-schemathesis-");
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const specFile = join(dir, "openapi.json");
  writeFileSync(specFile, await spec.text());
  const seed = process.env.SEED ?? String(Math.floor(Math.random() * 1e6));
  const argv = ["schemathesis", "run", specFile, "--url", proc.adminUrl, "-H", `Authorization: Bearer ${TOKEN}`];
  argv.push("--checks", CHECKS.join(","), "-n", String(MAX_EXAMPLES), "--seed", seed, "--workers", "1");
  argv.push("--no-color", "--generation-database", "none", "--request-timeout", "10");
  const p = Bun.spawn(argv, { cwd: dir, stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
  // -n bounds the run (15-20 s for a standalone process here); one past 100 s is stopped and fails.
  const timer = setTimeout(() => p.kill("SIGKILL"), 100_000);
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  clearTimeout(timer);
  if (code !== 0) console.log(`schemathesis (seed ${seed}; SEED=${seed} replays) exited ${code}\n${out.slice(-20_000)}\n${err.slice(-4000)}`);
  expect({ code, failures: /(\d+) failures?/.exec(out)?.[0] ?? "none" }).toEqual({ code: 0, failures: "none" });
  // It walked the whole document, not a part that loaded.
  const selected = /Selected:\s+(\d+)\/(\d+)/.exec(out);
  expect(selected?.[1]).toBe(selected?.[2]);
  expect(out).toMatch(/Tested:\s+\d+/);
  // Nothing the process logs as a failure of its own.
  expect(proc.output.err()).not.toMatch(/internal error|AssertionError|TypeError/);
}

describe.skipIf(!run)("the admin API conforms to its OpenAPI document (schemathesis)", () => {
  test("standalone (broker and name server routes): no 5xx, declared statuses, bodies and headers as documented, invalid input refused", async () => {
    const proc = await startRocketbun({
      role: "standalone",
      configYaml: `role: standalone\nnamesrv:\n  listen: 127.0.0.1:0\n  admin: 127.0.0.1:0\nbroker:\n  listen: 127.0.0.1:0\nstore:\n  commitLogSegmentBytes: 8388608\nadmin:\n  token: ${TOKEN}\n`,
    });
    cleanups.push(() => proc[Symbol.asyncDispose]());
    // Something for the reads to find: the document's example topic and group, a message.
    const post = (path: string, body: unknown) => admin(proc, path, { method: "POST", body: JSON.stringify(body) });
    expect((await post("/topics", { topicName: "TopicTest", readQueueNums: 4, writeQueueNums: 4 })).status).toBe(201);
    expect((await post("/groups", { groupName: "GroupTest" })).status).toBe(201);
    expect((await post("/messages", { topic: "TopicTest", body: "hello", keys: ["k1"] })).status).toBe(200);
    await conforms(proc);
  }, 150_000);

  test("a name server alone (its routes at the root and under /namesrv)", async () => {
    const proc = await startRocketbun({ role: "namesrv", configYaml: `role: namesrv\nadmin:\n  token: ${TOKEN}\n` });
    cleanups.push(() => proc[Symbol.asyncDispose]());
    await conforms(proc);
  }, 150_000);
});
