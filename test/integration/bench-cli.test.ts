/**
 * `rocketbun bench producer|consumer` (the compiled binary) against a compiled name server and
 * master (config/test-min.yaml): the producer sends a counted run and prints its per-second lines,
 * the consumer reads the same messages back from the first offset, and a timed run prints one line
 * per second. Figures are not checked: this is a tool test, not a benchmark.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { createRequest, RequestCode, ResponseCode, type RemotingClient } from "../../src/remoting/index.ts";
import { ROOT, runRocketbun, startRocketbun, waitFor, type RunningBinary } from "../harness/binary.ts";
import { createTopicRequest, newClient } from "../harness/wire.ts";

const TEST_MIN = join(ROOT, "config", "test-min.yaml");
const TOPIC = "BenchCliT";

let ns: RunningBinary;
let master: RunningBinary;
let c: RemotingClient;

beforeAll(async () => {
  ns = await startRocketbun({ role: "namesrv" });
  master = await startRocketbun({ role: "master", args: ["--namesrv", ns.namesrvAddr, "--config", TEST_MIN] });
  c = newClient();
  const res = await c.invoke(`127.0.0.1:${master.ports.broker}`, createTopicRequest(TOPIC, 4), 3000);
  expect(res.code).toBe(ResponseCode.SUCCESS);
  await waitFor(
    async () =>
      (await c.invoke(ns.namesrvAddr, createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: TOPIC }), 3000)).code === ResponseCode.SUCCESS,
    10_000,
    "the topic's route on the name server",
  );
});

afterAll(async () => {
  await c?.close();
  await master?.[Symbol.asyncDispose]();
  await ns?.[Symbol.asyncDispose]();
});

const PRODUCER_LINE = /^Current Time: \S+ \S+ Send TPS: \d+ Max RT\(ms\): \d+ Average RT\(ms\): +\d+\.\d{3} Send Failed: (\d+) Response Failed: 0$/gm;
const CONSUMER_LINE =
  /^Current Time: \S+ \S+ Consume TPS: \d+ Average\(B2C\) RT\(ms\): +[\d.-]+ Average\(S2C\) RT\(ms\): +[\d.-]+ MAX\(B2C\) RT\(ms\): -?\d+ MAX\(S2C\) RT\(ms\): -?\d+$/gm;

describe("rocketbun bench", () => {
  test("producer --count 200, then consumer --count 200 from the first offset", async () => {
    const p = await runRocketbun(["bench", "producer", "-n", ns.namesrvAddr, "-t", TOPIC, "-w", "8", "-s", "256", "-k", "true", "--count", "200"]);
    expect({ code: p.code, stderr: p.stderr }).toEqual({ code: 0, stderr: "" });
    const lines = [...p.stdout.matchAll(PRODUCER_LINE)];
    expect(lines.length).toBeGreaterThanOrEqual(1);
    for (const l of lines) expect(l[1]).toBe("0");
    expect(p.stdout).toContain("Summary: sent 200 in");

    const r = await runRocketbun([
      "bench",
      "consumer",
      "-n",
      ns.namesrvAddr,
      "-t",
      TOPIC,
      "-g",
      "bench_cli_group",
      "--from",
      "first",
      "--count",
      "200",
    ]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    expect([...r.stdout.matchAll(CONSUMER_LINE)].length).toBeGreaterThanOrEqual(1);
    expect(r.stdout).toContain("Summary: received 200 in");
  }, 60_000);

  test("producer --seconds 2 prints a line per second", async () => {
    const p = await runRocketbun(["bench", "producer", "--namesrv", ns.namesrvAddr, "--topic", TOPIC, "--inflight", "4", "--seconds", "2"]);
    expect(p.code).toBe(0);
    expect([...p.stdout.matchAll(PRODUCER_LINE)].length).toBeGreaterThanOrEqual(2);
    expect(p.stdout).toMatch(/Summary: sent \d+ in 2\.\d s/);
  }, 30_000);

  test("a bad subcommand or flag exits 2 without connecting", async () => {
    const bad = await runRocketbun(["bench", "broker"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('expected "producer" or "consumer"');
    const flag = await runRocketbun(["bench", "producer", "-w", "0"]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("-w");
  });
});
