/**
 * The Java client (rocketmq-client 4.9.8 and the 5.x remoting client 5.3.3) against RocketBun and,
 * in the same run, against Apache RocketMQ 4.9.7 (the reference; its 4.9.8 broker is not on Maven
 * Central). The scenarios live in test/interop/java/src (Runner.java and the *Scenarios files) and
 * assert for themselves; this file starts each broker once, runs every scenario with each client
 * in one JVM per client and broker, and turns each scenario's JSON line into a test and a row of
 * docs/COMPATIBILITY.md.
 *
 * Differential rule (issue #13): a scenario that passes on Apache RocketMQ and fails on RocketBun
 * is a RocketBun bug; one that fails on both is a bad scenario. The few scenarios that need a 5.x
 * broker (`NEEDS_5X_BROKER`) are run against Apache 4.9.7 too, and recorded, but not asserted there.
 *
 * ACL: a second pair of brokers per kind with plain ACL on (aclEnable, the fixture of
 * test/harness/acl.ts) runs AclScenarios.java (ACL_SCENARIOS) with AclClientRPCHook: signed send and
 * consume work; a wrong secret, a topic without PUB and a non-admin createTopic are refused with the
 * broker's code 1 and AclException remark, and nothing is stored or created; a group without SUB
 * gets nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { ACL_ADMIN, ACL_DENIED_GROUP, ACL_SUB_ONLY_TOPIC, ACL_USER, aclYaml } from "../harness/acl.ts";
import { tempDir } from "../harness/binary.ts";
import { recordCompat, type CompatClient } from "../harness/compat.ts";
import { BROKER_KINDS, startCluster, type BrokerKind, type InteropCluster } from "../harness/interop-cluster.ts";
import { JVM_FLAGS, mavenClasspath, toolsPresent } from "../harness/java.ts";
import { makeCerts, opensslPresent, type CertSet } from "../harness/certs.ts";

const CLIENTS: { project: string; client: CompatClient }[] = [
  { project: "client-4", client: "java-4.9.8" },
  { project: "client-5", client: "java-5.3.3" },
];

/** Every scenario of Runner.java, in the order they run (kept in step with `Runner --list` by the first test). */
const SCENARIOS = [
  "send-sync",
  "send-async",
  "send-oneway",
  "send-batch",
  "tags-keys",
  "compressed-body",
  "vip-channel",
  "push-rebalance",
  "broadcast",
  "sql92",
  "orderly",
  "lite-pull-subscribe",
  "lite-pull-assign",
  "retry-dlq",
  "delay-level",
  "transaction",
  "request-reply",
  "trace",
  "query-view-search",
  "deliver-time",
  "heartbeat-v2",
] as const;

/**
 * Plain ACL (AclScenarios.java): the runner signs with AclClientRPCHook, against a second pair of
 * brokers with aclEnable and the fixture file of test/harness/acl.ts (accounts as -D properties).
 */
const ACL_SCENARIOS = ["acl-signed", "acl-wrong-secret", "acl-no-pub", "acl-no-sub-group", "acl-not-admin-create"] as const;
const ACL_JVM_PROPS = [
  `-Drocketbun.accessKey=${ACL_USER.accessKey}`,
  `-Drocketbun.secretKey=${ACL_USER.secretKey}`,
  `-Drocketbun.adminAccessKey=${ACL_ADMIN.accessKey}`,
  `-Drocketbun.adminSecretKey=${ACL_ADMIN.secretKey}`,
  `-Drocketbun.acl.subOnlyTopic=${ACL_SUB_ONLY_TOPIC}`,
  `-Drocketbun.acl.deniedGroup=${ACL_DENIED_GROUP}`,
];

/** Features Apache RocketMQ has only from 5.0 on: the 4.9.7 reference broker cannot pass them. */
const NEEDS_5X_BROKER: Record<string, string> = {
  "deliver-time": "timer messages (TIMER_DELIVER_MS) need a 5.x broker; 4.9 delivers them at once",
  "java-5.3.3 lite-pull-subscribe": "the 5.x client's lite pull sends LITE_PULL_MESSAGE (361), which 4.9 brokers do not know",
  "java-5.3.3 lite-pull-assign": "the 5.x client's lite pull sends LITE_PULL_MESSAGE (361), which 4.9 brokers do not know",
};

/** While debugging: JAVA_SCENARIOS, JAVA_BROKERS, JAVA_CLIENTS (comma lists) narrow the run. */
const only = (name: string): Set<string> | undefined => (process.env[name] ? new Set(process.env[name]!.split(",")) : undefined);
const ONLY_SCENARIOS = only("JAVA_SCENARIOS");
const ONLY_BROKERS = only("JAVA_BROKERS");
const ONLY_CLIENTS = only("JAVA_CLIENTS");

const RUN = SCENARIOS.filter((s) => !ONLY_SCENARIOS || ONLY_SCENARIOS.has(s));
const RUN_ACL = ACL_SCENARIOS.filter((s) => !ONLY_SCENARIOS || ONLY_SCENARIOS.has(s));

interface Outcome {
  scenario: string;
  ok: boolean | "n/a";
  ms: number;
  detail: string;
}

/** One JVM running every scenario in order; each scenario's outcome resolves as its line arrives. */
class RunnerProcess {
  readonly #proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly #waiting = new Map<string, PromiseWithResolvers<Outcome>>();
  #stderr = "";
  readonly #home: string;

  constructor(classpath: string, namesrv: string, prefix: string, scenarios: readonly string[] = RUN, jvmFlags: readonly string[] = []) {
    this.#home = tempDir("java-interop-");
    mkdirSync(join(this.#home, "logs"));
    for (const s of scenarios) this.#waiting.set(s, Promise.withResolvers<Outcome>());
    const proc = Bun.spawn(
      [
        "java",
        ...JVM_FLAGS,
        "-Xmx384m",
        `-Duser.home=${this.#home}`,
        `-Drocketmq.client.logRoot=${join(this.#home, "logs")}`,
        "-Drocketmq.client.logLevel=WARN",
        ...jvmFlags,
        "-cp",
        classpath,
        "rocketbun.interop.Runner",
        "--namesrv",
        namesrv,
        "--prefix",
        prefix,
        "--timeout-ms",
        "60000",
        ...scenarios,
      ],
      { cwd: this.#home, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
    );
    this.#proc = proc;
    void this.#read();
    void (async () => {
      const dec = new TextDecoder();
      for await (const chunk of proc.stderr) this.#stderr = (this.#stderr + dec.decode(chunk)).slice(-20_000);
    })();
  }

  async #read(): Promise<void> {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of this.#proc.stdout) {
      buf += dec.decode(chunk, { stream: true });
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line.startsWith("{")) continue;
        const o = JSON.parse(line) as Outcome;
        this.#waiting.get(o.scenario)?.resolve(o);
      }
    }
    const code = await this.#proc.exited;
    for (const [scenario, w] of this.#waiting) {
      w.resolve({ scenario, ok: false, ms: 0, detail: `the runner exited (${code}) before reporting it\n${this.#stderr.slice(-3000)}` });
    }
  }

  outcome(scenario: string): Promise<Outcome> {
    const w = this.#waiting.get(scenario);
    if (!w) throw new Error(`unknown scenario ${scenario}`);
    return w.promise;
  }

  get stderr(): string {
    return this.#stderr;
  }

  async stop(): Promise<void> {
    if (this.#proc.exitCode === null && this.#proc.signalCode === null) {
      this.#proc.kill("SIGKILL");
      await this.#proc.exited;
    }
    rmSync(this.#home, { recursive: true, force: true });
  }
}

const present = toolsPresent("java interop", ["java", "mvn"]);

/**
 * The Java client with -Dtls.enable=true (TLS to the name server and the broker; its default test
 * mode encrypts and trusts any certificate) against RocketBun in permissive and enforcing modes.
 * RocketBun only: comparing with Apache RocketMQ over TLS is out of scope here. Selected with
 * JAVA_BROKERS=rocketbun-tls (and the other filters).
 */
const TLS_SCENARIOS = ["send-sync", "vip-channel", "lite-pull-assign"].filter((s) => !ONLY_SCENARIOS || ONLY_SCENARIOS.has(s));
const runTls = present && (!ONLY_BROKERS || ONLY_BROKERS.has("rocketbun-tls")) && opensslPresent("java interop over TLS");

describe.skipIf(!runTls)("Java clients over TLS (RocketBun)", () => {
  let certs: CertSet | undefined;
  beforeAll(() => void (certs = makeCerts()));
  afterAll(() => certs?.remove());
  for (const mode of ["permissive", "enforcing"] as const) {
    describe(`tls.serverMode ${mode}`, () => {
      let cluster: InteropCluster | undefined;
      const runners = new Map<CompatClient, RunnerProcess>();
      beforeAll(async () => {
        const c = certs!;
        const yaml = `tls:\n  serverMode: ${mode}\n  certPath: ${c.serverCert}\n  keyPath: ${c.serverKey}\n  enable: true\n  clientTrustCertPath: ${c.ca}\n`;
        cluster = await startCluster("rocketbun", { tls: { yaml, client: { verify: "chain", ca: c.read(c.ca) } } });
      }, 120_000);
      afterAll(async () => {
        for (const r of runners.values()) await r.stop();
        await cluster?.stop();
      }, 60_000);
      for (const { project, client } of CLIENTS.filter((c) => !ONLY_CLIENTS || ONLY_CLIENTS.has(c.client))) {
        for (const scenario of TLS_SCENARIOS) {
          test(`${client} ${scenario} with -Dtls.enable=true`, async () => {
            const c = cluster;
            if (!c) throw new Error("the broker did not start");
            let runner = runners.get(client);
            if (!runner) {
              for (const r of runners.values()) await r.stop();
              const prefix = `tls${mode.slice(0, 1)}${project.slice(-1)}_${Date.now() % 100000}`;
              runner = new RunnerProcess(mavenClasspath(project), c.namesrvAddr, prefix, TLS_SCENARIOS, ["-Dtls.enable=true"]);
              runners.set(client, runner);
            }
            const o = await runner.outcome(scenario);
            if (o.ok !== true)
              throw new Error(`${client} ${scenario} over TLS (${mode}): ${o.detail}\n${runner.stderr.slice(-2000)}\n${c.diag().slice(-3000)}`);
          }, 150_000);
        }
      }
    });
  }
});

describe.skipIf(!present)("Java clients", () => {
  test("the scenario list matches Runner --list", () => {
    const r = Bun.spawnSync(["java", "-cp", mavenClasspath("client-4"), "rocketbun.interop.Runner", "--list"], { stdout: "pipe", stderr: "pipe" });
    expect(r.stdout.toString().trim().split("\n")).toEqual([...SCENARIOS, ...ACL_SCENARIOS]);
    mavenClasspath("client-5");
  }, 600_000);

  for (const broker of BROKER_KINDS.filter((b) => !ONLY_BROKERS || ONLY_BROKERS.has(b))) {
    describe(`on ${broker}`, () => {
      let cluster: InteropCluster | undefined;
      const runners = new Map<CompatClient, RunnerProcess>();
      beforeAll(async () => {
        cluster = await startCluster(broker);
      }, 120_000);
      afterAll(async () => {
        for (const r of runners.values()) await r.stop();
        await cluster?.stop();
      }, 60_000);

      for (const { project, client } of CLIENTS.filter((c) => !ONLY_CLIENTS || ONLY_CLIENTS.has(c.client))) {
        for (const scenario of RUN) {
          test(`${client} ${scenario}`, async () => {
            const c = cluster;
            if (!c) throw new Error("the broker did not start");
            let runner = runners.get(client);
            if (!runner) {
              // The previous client's JVM is done: one JVM at a time keeps the timing scenarios honest on two cores.
              for (const r of runners.values()) await r.stop();
              runner = new RunnerProcess(
                mavenClasspath(project),
                c.namesrvAddr,
                `${broker === "apache" ? "ap" : "rb"}${project.slice(-1)}_${Date.now() % 100000}`,
              );
              runners.set(client, runner);
            }
            const o = await runner.outcome(scenario);
            const expectedToFail = broker === "apache" ? (NEEDS_5X_BROKER[scenario] ?? NEEDS_5X_BROKER[`${client} ${scenario}`]) : undefined;
            recordCompat({
              scenario,
              client,
              broker,
              ok: o.ok === true,
              detail: o.ok === "n/a" ? `n/a: ${o.detail}` : expectedToFail && o.ok !== true ? `n/a: ${expectedToFail}` : o.detail,
            });
            if (o.ok === "n/a" || expectedToFail) return;
            if (o.ok !== true) throw new Error(`${client} ${scenario} on ${broker}: ${o.detail}\n${c.diag().slice(-3000)}`);
          }, 150_000);
        }
      }
    });
  }

  for (const broker of BROKER_KINDS.filter((b) => RUN_ACL.length > 0 && (!ONLY_BROKERS || ONLY_BROKERS.has(b)))) {
    describe(`ACL on ${broker} (aclEnable)`, () => {
      let cluster: InteropCluster | undefined;
      let runner: RunnerProcess | undefined;
      beforeAll(async () => {
        cluster = await startCluster(broker, { aclYaml: aclYaml() });
      }, 120_000);
      afterAll(async () => {
        await runner?.stop();
        await cluster?.stop();
      }, 60_000);

      for (const { project, client } of CLIENTS.filter((c) => !ONLY_CLIENTS || ONLY_CLIENTS.has(c.client))) {
        let mine: RunnerProcess | undefined;
        for (const scenario of RUN_ACL) {
          test(`${client} ${scenario}`, async () => {
            const c = cluster;
            if (!c) throw new Error("the broker did not start");
            if (!mine) {
              await runner?.stop();
              const prefix = `${broker === "apache" ? "ap" : "rb"}acl${project.slice(-1)}_${Date.now() % 100000}`;
              runner = mine = new RunnerProcess(mavenClasspath(project), c.namesrvAddr, prefix, RUN_ACL, ACL_JVM_PROPS);
            }
            const o = await mine.outcome(scenario);
            recordCompat({ scenario, client, broker, ok: o.ok === true, detail: o.detail });
            if (o.ok !== true)
              throw new Error(`${client} ${scenario} on ${broker} with ACL: ${o.detail}\n${mine.stderr.slice(-2000)}\n${c.diag().slice(-3000)}`);
          }, 150_000);
        }
      }
    });
  }
});
