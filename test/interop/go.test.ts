/**
 * Interop: the Go client (github.com/apache/rocketmq-client-go/v2) against RocketBun and against
 * Apache RocketMQ 4.9.7, the reference. test/interop/go/ is a small Go program that runs one named
 * scenario (producer sync/async/batch/oneway/ordered, push consumer clustering/broadcast/tags/
 * retry, transactions, request-reply), asserts it itself and prints one JSON line:
 * {"scenario","ok","detail","ms"}. This file builds it once (the first build downloads the module
 * through the Go module proxy; go.sum pins it), starts each broker kind once and runs every
 * scenario against it as its own test, recording each outcome for docs/COMPATIBILITY.md.
 *
 * A scenario that passes on Apache RocketMQ and fails on RocketBun is a RocketBun bug. The acl-*
 * scenarios run against a second pair of brokers with plain ACL on (test/harness/acl.ts).
 * GO_SCENARIOS=a,b and GO_BROKERS=rocketbun narrow a run while debugging.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { ACL_ADMIN, ACL_SUB_ONLY_TOPIC, ACL_USER, aclYaml } from "../harness/acl.ts";
import { ROOT, tempDir } from "../harness/binary.ts";
import { recordCompat } from "../harness/compat.ts";
import { BROKER_KINDS, startCluster, type BrokerKind, type InteropCluster } from "../harness/interop-cluster.ts";
import { toolsPresent } from "../harness/java.ts";

const GO_DIR = join(ROOT, "test", "interop", "go");
const RUNNER = join(GO_DIR, "bin", "runner");

/** Every scenario of the runner (`runner -list`; the build checks the two lists agree). */
const SCENARIOS = [
  "producer-sync",
  "producer-async",
  "producer-batch",
  "producer-oneway",
  "producer-ordered",
  "consumer-clustering",
  "consumer-broadcast",
  "consumer-tags",
  "consumer-retry",
  "transaction",
  "request-reply",
] as const;

/**
 * Plain ACL (acl.go): producer.WithCredentials / consumer.WithCredentials against a second pair of
 * brokers with aclEnable and the fixture of test/harness/acl.ts; the accounts go in as flags.
 */
const ACL_SCENARIOS = ["acl-signed", "acl-wrong-secret", "acl-no-pub"] as const;
const ACL_FLAGS = [
  "-access-key",
  ACL_USER.accessKey,
  "-secret-key",
  ACL_USER.secretKey,
  "-admin-access-key",
  ACL_ADMIN.accessKey,
  "-admin-secret-key",
  ACL_ADMIN.secretKey,
  "-sub-only-topic",
  ACL_SUB_ONLY_TOPIC,
];

const only = (env: string | undefined) => (env ? new Set(env.split(",")) : undefined);
const scenarioFilter = only(process.env.GO_SCENARIOS);
const brokerFilter = only(process.env.GO_BROKERS);
const present = toolsPresent("go interop", ["go", "java", "mvn"]);

interface Outcome {
  scenario: string;
  ok: boolean;
  detail: string;
  ms: number;
}

function buildRunner(): void {
  // -mod=readonly: go.sum must already pin every module (a missing entry fails instead of editing it).
  const r = Bun.spawnSync(["go", "build", "-mod=readonly", "-o", RUNNER, "."], { cwd: GO_DIR, stdout: "pipe", stderr: "pipe", timeout: 600_000 });
  if (r.exitCode !== 0) throw new Error(`go build in ${GO_DIR} failed (${r.exitCode}):\n${r.stderr.toString()}`);
  const listed = Bun.spawnSync([RUNNER, "-list"]).stdout.toString().trim().split("\n").sort();
  expect(listed).toEqual([...SCENARIOS, ...ACL_SCENARIOS].sort());
}

/** Runs one scenario in its own process (the Go client keeps per-process state), killed after `timeoutMs`. */
async function runScenario(
  c: InteropCluster,
  scenario: string,
  prefix: string,
  home: string,
  timeoutMs = 60_000,
  flags: string[] = [],
): Promise<Outcome & { stderr: string }> {
  const argv = [RUNNER, "-namesrv", c.namesrvAddr, "-broker", c.brokerAddr, "-topic-prefix", prefix, "-scenario", scenario, ...flags];
  // HOME: broadcasting consumers keep their offsets in $HOME/.rocketmq_client_go.
  const p = Bun.spawn(argv, { cwd: GO_DIR, env: { ...process.env, HOME: home }, stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
  const [stdout, stderr] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  clearTimeout(timer);
  const line = stdout.trim().split("\n").at(-1) ?? "";
  try {
    const o = JSON.parse(line) as Outcome;
    return { ...o, stderr };
  } catch {
    return { scenario, ok: false, detail: `runner exited ${p.exitCode ?? p.signalCode} without a result line: ${stdout.slice(-500)}`, ms: 0, stderr };
  }
}

describe.skipIf(!present)("go-v2", () => {
  beforeAll(() => buildRunner(), 600_000);

  for (const broker of BROKER_KINDS) {
    if (brokerFilter && !brokerFilter.has(broker)) continue;
    describe(broker, () => {
      let cluster: InteropCluster | undefined;
      let home = "";
      beforeAll(async () => {
        home = tempDir("go-interop-home-");
        cluster = await startCluster(broker);
      }, 180_000);
      afterAll(async () => {
        await cluster?.stop();
        if (home) rmSync(home, { recursive: true, force: true });
      }, 30_000);

      for (const scenario of SCENARIOS) {
        if (scenarioFilter && !scenarioFilter.has(scenario)) continue;
        test(
          scenario,
          async () => {
            const c = cluster;
            if (!c) throw new Error(`${broker} did not start`);
            const o = await runScenario(c, scenario, `Go${Date.now().toString(36)}`, home);
            recordCompat({ scenario, client: "go-v2", broker: broker satisfies BrokerKind, ok: o.ok, detail: o.ok ? `${o.ms} ms` : o.detail });
            if (!o.ok) throw new Error(`${scenario} on ${broker}: ${o.detail}\n--- runner stderr\n${o.stderr.slice(-3000)}\n${c.diag()}`);
            expect(o.ok).toBe(true);
          },
          90_000,
        );
      }
    });
  }

  for (const broker of BROKER_KINDS) {
    if (brokerFilter && !brokerFilter.has(broker)) continue;
    const run = ACL_SCENARIOS.filter((s) => !scenarioFilter || scenarioFilter.has(s));
    if (run.length === 0) continue;
    describe(`${broker} with ACL (aclEnable)`, () => {
      let cluster: InteropCluster | undefined;
      let home = "";
      beforeAll(async () => {
        home = tempDir("go-interop-home-");
        cluster = await startCluster(broker, { aclYaml: aclYaml() });
      }, 180_000);
      afterAll(async () => {
        await cluster?.stop();
        if (home) rmSync(home, { recursive: true, force: true });
      }, 30_000);

      for (const scenario of run) {
        test(
          scenario,
          async () => {
            const c = cluster;
            if (!c) throw new Error(`${broker} did not start`);
            const o = await runScenario(c, scenario, `GoAcl${Date.now().toString(36)}`, home, 60_000, ACL_FLAGS);
            recordCompat({ scenario, client: "go-v2", broker, ok: o.ok, detail: o.ok ? `${o.ms} ms` : o.detail });
            if (!o.ok) throw new Error(`${scenario} on ${broker} with ACL: ${o.detail}\n--- runner stderr\n${o.stderr.slice(-3000)}\n${c.diag()}`);
          },
          90_000,
        );
      }
    });
  }
});
