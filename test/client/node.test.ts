/**
 * rocketbun/client on Node 20: builds the Node bundle (dist/client/index.js, scripts/build-client.ts),
 * starts a standalone binary, and runs test/client/node-scenario.mjs under `node` — a plain ESM
 * script that produces 50 messages and consumes them with a PushConsumer — then checks the JSON
 * summary it prints.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { ROOT } from "../harness/binary.ts";
import { Env, uniq, within } from "./support.ts";

interface Summary {
  node: string;
  bun: boolean;
  sent: number;
  statuses: Record<string, number>;
  received: number;
  unique: number;
  queues: number[];
  bigBodyBytes: number;
  problems: string[];
  notStartedError: { isMQClientError: boolean; message: string } | null;
  elapsedMs: number;
}

test("Node 20 runs the bundled client: 50 messages produced and consumed by a PushConsumer", async () => {
  const build = Bun.spawnSync([process.execPath, join(ROOT, "scripts/build-client.ts")], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  expect(build.exitCode, `build-client failed:\n${build.stderr.toString()}`).toBe(0);
  const version = Bun.spawnSync(["node", "--version"], { stdout: "pipe" });
  expect(version.exitCode).toBe(0);
  expect(version.stdout.toString().trim()).toMatch(/^v20\./);

  await using env = await Env.start();
  const topic = uniq("T_node");
  await env.createTopic(topic, 4);
  const proc = Bun.spawn(["node", join(ROOT, "test/client/node-scenario.mjs"), env.namesrv, topic], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, NODE_OPTIONS: "" },
  });
  let code: number;
  try {
    code = await within(proc.exited, 40_000, "the Node scenario");
  } finally {
    if (proc.exitCode === null) proc.kill("SIGKILL");
  }
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  expect(code, `node exited ${code}\nstdout:\n${out}\nstderr:\n${err}`).toBe(0);
  const line = out.trim().split("\n").pop()!;
  const s = JSON.parse(line) as Summary;
  expect(s.node).toMatch(/^v20\./);
  expect(s.bun).toBe(false);
  expect(s.sent).toBe(50);
  expect(s.statuses).toEqual({ SEND_OK: 50 });
  expect(s.unique).toBe(50);
  expect(s.received).toBe(50);
  expect(s.queues).toEqual([0, 1, 2, 3]);
  expect(s.bigBodyBytes).toBe("node-big-".length * 1200);
  expect(s.problems).toEqual([]);
  expect(s.notStartedError).toEqual({ isMQClientError: true, message: expect.stringMatching(/not running/) });
  // What Node sent is on the broker: 50 messages over the 4 queues.
  let stored = 0;
  for (let q = 0; q < 4; q++) stored += await env.maxOffset(topic, q);
  expect(stored).toBe(50);
}, 60_000);

test("Node 20: a PushConsumer whose start() fails leaves nothing running, so the process exits by itself", async () => {
  await using env = await Env.start();
  const proc = Bun.spawn(["node", join(ROOT, "test/client/node-scenario.mjs"), env.namesrv, uniq("T_node_missing"), "failed-start"], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  let code: number | undefined;
  try {
    code = await within(proc.exited, 10_000, "node exiting by itself after a failed start()");
  } finally {
    if (proc.exitCode === null) proc.kill("SIGKILL");
  }
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  expect(code, `stdout:\n${out}\nstderr:\n${err}`).toBe(0);
  const s = JSON.parse(out.trim().split("\n").pop()!) as { error: { isMQClientError: boolean; code: number; message: string } | null };
  expect(s.error).toEqual({ isMQClientError: true, code: 17, message: expect.stringMatching(/create the topic first/) });
}, 30_000);
