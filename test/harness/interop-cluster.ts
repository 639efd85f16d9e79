/**
 * The two brokers every interop suite (Java, Go, mqadmin) runs against side by side: RocketBun
 * (the compiled binary, a name server and a master as two processes) and Apache RocketMQ itself
 * (NamesrvStartup and BrokerStartup from Maven Central, test/interop/java/apache-server: 4.9.7).
 * A third, "apache-5" (APACHE_5: 5.3.3, test/interop/java/apache-server-5, no proxy), is the
 * reference for the Java scenarios that need a 5.x broker (timer messages, POP). All get
 * the same settings where they share a meaning, so a scenario that passes on one and fails on the
 * other points at a difference in behaviour, not in configuration:
 *   autoCreateTopicEnable, enablePropertyFilter, a transaction check-back after 2 s, every 2 s,
 *   1 GiB CommitLog segments (RocketMQ's default; sparse files), ASYNC_MASTER, ASYNC_FLUSH.
 * `await using c = await startCluster("apache")` stops every process it started (by PID) and
 * removes its temp dir.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import type { ClientTls } from "../../src/common/tls.ts";
import { scope } from "../../src/common/log.ts";
import { createRequest, RemotingClient, REMOTING_CLIENT_DEFAULTS, RequestCode } from "../../src/remoting/index.ts";
import { collect, startRocketbun, tempDir, waitFor, type RunningBinary } from "./binary.ts";
import { freeBrokerPort, freePort, JVM_FLAGS, mavenClasspath } from "./java.ts";
import { bodyJson, newClient } from "./wire.ts";

/** "apache" is Apache RocketMQ 4.9.7; "apache-5" is 5.3.3, for the scenarios that need a 5.x broker. */
export type BrokerKind = "rocketbun" | "apache" | "apache-5";
/** The pair every interop suite runs side by side: RocketBun and Apache RocketMQ 4.9.7. */
export const BROKER_KINDS: readonly BrokerKind[] = ["rocketbun", "apache"];
/** Apache RocketMQ 5.3.3 (test/interop/java/apache-server-5): timer messages, POP and the rest of 5.x's broker. */
export const APACHE_5 = "apache-5" satisfies BrokerKind;

export const CLUSTER_NAME = "InteropCluster";
export const BROKER_NAME = "broker-a";

export interface InteropCluster extends AsyncDisposable {
  readonly kind: BrokerKind;
  readonly namesrvAddr: string;
  /** The master's remoting address (VIP = port − 2, HA = port + 1). */
  readonly brokerAddr: string;
  /** The master's store directory (for checks of what was stored). */
  readonly storeDir: string;
  /** Everything the processes printed (for failure messages). */
  diag(): string;
  stop(): Promise<void>;
}

/** RocketBun with TLS: a `tls:` YAML section for both processes, and how this harness connects to them. */
export interface ClusterTls {
  yaml: string;
  client: ClientTls;
}

export interface ClusterOptions {
  /**
   * Plain ACL on the master: this plain_acl.yml (test/harness/acl.ts) as RocketBun's broker.aclFile
   * with broker.aclEnable, or as Apache's $ROCKETMQ_HOME/conf/plain_acl.yml with aclEnable=true.
   * The name servers stay unchecked (Apache 4.9's has no ACL).
   */
  aclYaml?: string;
  /** RocketBun only: TLS on both processes. */
  tls?: ClusterTls;
}

export async function startCluster(kind: BrokerKind, opts: ClusterOptions = {}): Promise<InteropCluster> {
  const c = kind === "rocketbun" ? await startRocketbunCluster(opts) : await startApacheCluster(kind, opts);
  await waitForBroker(c.namesrvAddr, c.diag, opts.tls?.client);
  return c;
}

/** Until the name server lists the master of BROKER_NAME in CLUSTER_NAME (GET_BROKER_CLUSTER_INFO). */
async function waitForBroker(namesrvAddr: string, diag: () => string, tls: ClientTls | undefined): Promise<void> {
  const client = tls ? new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("test-client"), tls: () => tls }) : newClient();
  try {
    await waitFor(
      async () => {
        const r = await client.invoke(namesrvAddr, createRequest(RequestCode.GET_BROKER_CLUSTER_INFO, {}), 2000);
        if (r.code !== 0 || !r.body) return false;
        const info = bodyJson<{ brokerAddrTable?: Record<string, { brokerAddrs?: Record<string, string> }> }>(r);
        return info.brokerAddrTable?.[BROKER_NAME]?.brokerAddrs?.["0"] !== undefined;
      },
      60_000,
      () => `the broker to register with ${namesrvAddr}\n${diag()}`,
    );
  } finally {
    client.close();
  }
}

const ROCKETBUN_BROKER_YAML = (namesrv: string, port: number, aclFile?: string) => `
logLevel: warn
broker:
  listen: 127.0.0.1:${port}
  admin: 127.0.0.1:0
  namesrvAddr: [${namesrv}]
  brokerClusterName: ${CLUSTER_NAME}
  brokerName: ${BROKER_NAME}
  brokerIP1: 127.0.0.1
  autoCreateTopicEnable: true
  enablePropertyFilter: true
  registerNameServerPeriodMs: 1000
  transactionCheckIntervalMs: 2000
  transactionTimeOutMs: 2000
${aclFile ? `  aclEnable: true\n  aclFile: ${aclFile}\n` : ""}store:
  flushDiskType: ASYNC_FLUSH
`;

async function startRocketbunCluster(opts: ClusterOptions): Promise<InteropCluster> {
  const tlsYaml = opts.tls?.yaml ?? "";
  const nsYaml = "logLevel: warn\nnamesrv:\n  listen: 127.0.0.1:0\n  admin: 127.0.0.1:0\n";
  const ns = await startRocketbun({ role: "namesrv", configYaml: nsYaml + tlsYaml });
  let master: RunningBinary | undefined;
  // The master's dir is ours (it may hold the ACL file): removed by stop().
  const dir = tempDir();
  try {
    const port = freeBrokerPort();
    let aclFile: string | undefined;
    if (opts.aclYaml !== undefined) writeFileSync((aclFile = join(dir, "plain_acl.yml")), opts.aclYaml);
    master = await startRocketbun({
      role: "master",
      dir,
      configYaml: ROCKETBUN_BROKER_YAML(ns.namesrvAddr, port, aclFile) + tlsYaml,
      args: [`--listen=127.0.0.1:${port}`],
    });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    await ns[Symbol.asyncDispose]();
    throw e;
  }
  const m = master;
  const stop = async () => {
    await m[Symbol.asyncDispose]();
    rmSync(m.dir, { recursive: true, force: true });
    await ns[Symbol.asyncDispose]();
  };
  return {
    kind: "rocketbun",
    namesrvAddr: ns.namesrvAddr,
    brokerAddr: `127.0.0.1:${m.ports.broker}`,
    storeDir: join(m.dir, "store"),
    diag: () => `--- namesrv stderr\n${ns.output.err().slice(-4000)}\n--- master stderr\n${m.output.err().slice(-4000)}`,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

// Minimal logback configurations, warnings and errors to a file in the home. 4.9.7's BrokerStartup
// and NamesrvStartup refuse to start without $ROCKETMQ_HOME/conf/logback_{broker,namesrv}.xml;
// 5.x reads the file the rmq.logback.configurationFile property names (one per process here), and
// its transaction check warns "No new message" at every 2 s check: `quiet` loggers log errors only.
const LOGBACK = (file: string, quiet: readonly string[] = []) => `<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>\${user.home}/${file}</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5p %c{0} - %m%n</pattern></encoder>
  </appender>
${quiet.map((l) => `  <logger name="${l}" level="ERROR"/>\n`).join("")}  <root level="WARN"><appender-ref ref="F"/></root>
</configuration>
`;

type ApacheKind = Exclude<BrokerKind, "rocketbun">;
/** The Maven project (test/interop/java/<project>) of each Apache version. */
const APACHE_PROJECT: Record<ApacheKind, string> = { apache: "apache-server", "apache-5": "apache-server-5" };

/** $ROCKETMQ_HOME: the logback files of `kind`, and plain_acl.yml for PlainPermissionManager (4.9.7). */
function writeApacheHome(kind: ApacheKind, home: string, opts: ClusterOptions): void {
  mkdirSync(join(home, "conf"));
  for (const role of ["namesrv", "broker"]) {
    if (kind === "apache") writeFileSync(join(home, "conf", `logback_${role}.xml`), LOGBACK(`${role}.log`));
    else writeFileSync(join(home, "conf", `rmq.${role}.logback.xml`), LOGBACK(`${role}.log`, ["RocketmqTransaction"]));
  }
  if (opts.aclYaml === undefined) return;
  // 5.3 replaced plain_acl.yml with ACL 2.0 (rocketmq-auth); no suite needs ACL on it yet.
  if (kind !== "apache") throw new Error(`startCluster("${kind}"): aclYaml is only wired for Apache RocketMQ 4.9.7`);
  // PlainPermissionManager reads ${rocketmq.home.dir}/conf/plain_acl.yml.
  writeFileSync(join(home, "conf", "plain_acl.yml"), opts.aclYaml);
}

/** broker.properties, the same keys for 4.9.7 and 5.3.3 (5.x keeps timerWheelEnable at its default, on). */
function apacheBrokerProperties(store: string, brokerPort: number, nsPort: number, acl: boolean): string {
  return [
    `brokerClusterName=${CLUSTER_NAME}`,
    `brokerName=${BROKER_NAME}`,
    "brokerId=0",
    "brokerRole=ASYNC_MASTER",
    "flushDiskType=ASYNC_FLUSH",
    `listenPort=${brokerPort}`,
    `namesrvAddr=127.0.0.1:${nsPort}`,
    "brokerIP1=127.0.0.1",
    `storePathRootDir=${store}`,
    `storePathCommitLog=${join(store, "commitlog")}`,
    "autoCreateTopicEnable=true",
    "autoCreateSubscriptionGroup=true",
    "enablePropertyFilter=true",
    "traceTopicEnable=true",
    "transactionCheckInterval=2000",
    "transactionTimeOut=2000",
    "registerBrokerTimeoutMills=6000",
    "diskMaxUsedSpaceRatio=95",
    ...(acl ? ["aclEnable=true"] : []),
    "",
  ].join("\n");
}

/** The argv of one JVM of `kind` (role "namesrv" or "broker") on classpath `cp`, its home and user.home in `home`. */
function apacheJvm(kind: ApacheKind, cp: string, home: string, role: "namesrv" | "broker"): string[] {
  const main = role === "namesrv" ? "org.apache.rocketmq.namesrv.NamesrvStartup" : "org.apache.rocketmq.broker.BrokerStartup";
  const heap = role === "namesrv" ? "128m" : "384m";
  return [
    "java",
    ...JVM_FLAGS,
    `-Xms${heap}`,
    `-Xmx${heap}`,
    "-XX:MaxDirectMemorySize=256m",
    ...(kind === "apache" ? [] : [`-Drmq.logback.configurationFile=${join(home, "conf", `rmq.${role}.logback.xml`)}`]),
    `-Drocketmq.home.dir=${home}`,
    `-Duser.home=${home}`,
    "-cp",
    cp,
    main,
    "-c",
    join(home, `${role}.properties`),
  ];
}

/** Everything the JVMs printed, and the ends of their log files. */
function apacheDiag(home: string, outs: (() => string)[]): string {
  let logs = "";
  for (const f of ["namesrv.log", "broker.log"]) {
    try {
      logs += `--- ${f}\n${readFileSync(join(home, f), "utf8").slice(-4000)}\n`;
    } catch {
      // not written yet
    }
  }
  return `${outs.map((o) => o().slice(-2000)).join("\n")}\n${logs}`;
}

async function startApacheCluster(kind: ApacheKind, opts: ClusterOptions): Promise<InteropCluster> {
  const cp = mavenClasspath(APACHE_PROJECT[kind]);
  const home = tempDir("apache-rocketmq-");
  const nsPort = freePort();
  const brokerPort = freeBrokerPort();
  const store = join(home, "store");
  try {
    writeApacheHome(kind, home, opts);
  } catch (e) {
    rmSync(home, { recursive: true, force: true });
    throw e;
  }
  writeFileSync(join(home, "namesrv.properties"), `listenPort=${nsPort}\n`);
  writeFileSync(join(home, "broker.properties"), apacheBrokerProperties(store, brokerPort, nsPort, opts.aclYaml !== undefined));
  // user.home points into the temp home so RocketMQ's own files (~/logs, ~/store defaults) stay there.
  const env = { ...process.env, ROCKETMQ_HOME: home, HOME: home };
  const procs: Subprocess<"ignore", "pipe", "pipe">[] = [];
  const outs: (() => string)[] = [];
  const spawn = (argv: string[]) => {
    const p = Bun.spawn(argv, { cwd: home, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    procs.push(p);
    outs.push(collect(p.stdout), collect(p.stderr));
  };
  const stop = async () => {
    for (const p of procs.reverse()) {
      if (p.exitCode !== null || p.signalCode !== null) continue;
      p.kill("SIGTERM");
      // The data is thrown away: no need to wait out the broker's full shutdown hook.
      const t = setTimeout(() => p.kill("SIGKILL"), 3_000);
      await p.exited;
      clearTimeout(t);
    }
    procs.length = 0;
    rmSync(home, { recursive: true, force: true });
  };
  const diag = () => apacheDiag(home, outs);
  try {
    spawn(apacheJvm(kind, cp, home, "namesrv"));
    await waitForAccept(nsPort, procs[0]!, diag);
    spawn(apacheJvm(kind, cp, home, "broker"));
    await waitForAccept(brokerPort, procs[1]!, diag);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    kind,
    namesrvAddr: `127.0.0.1:${nsPort}`,
    brokerAddr: `127.0.0.1:${brokerPort}`,
    storeDir: store,
    diag,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** Until 127.0.0.1:`port` accepts a connection; fails at once when the process exited. */
export async function waitForAccept(port: number, proc: { readonly exitCode: number | null }, diag: () => string, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    async () => {
      if (proc.exitCode !== null) throw new Error(`exited with ${proc.exitCode}\n${diag()}`);
      try {
        const s = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
        s.end();
        return true;
      } catch {
        return false;
      }
    },
    timeoutMs,
    () => `127.0.0.1:${port} to accept\n${diag()}`,
  );
}
