/**
 * The two brokers every interop suite (Java, Go, mqadmin) runs against side by side: RocketBun
 * (the compiled binary, a name server and a master as two processes) and Apache RocketMQ itself
 * (NamesrvStartup and BrokerStartup from Maven Central, test/interop/java/apache-server). Both get
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

export type BrokerKind = "rocketbun" | "apache";
export const BROKER_KINDS: readonly BrokerKind[] = ["rocketbun", "apache"];

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
  const c = kind === "rocketbun" ? await startRocketbunCluster(opts) : await startApacheCluster(opts);
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

// Minimal logback configurations: BrokerStartup and NamesrvStartup refuse to start without
// $ROCKETMQ_HOME/conf/logback_{broker,namesrv}.xml. Warnings and errors go to a file in the home.
const LOGBACK = (file: string) => `<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>\${user.home}/${file}</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5p %c{0} - %m%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="F"/></root>
</configuration>
`;

async function startApacheCluster(opts: ClusterOptions): Promise<InteropCluster> {
  const cp = mavenClasspath("apache-server");
  const home = tempDir("apache-rocketmq-");
  mkdirSync(join(home, "conf"));
  writeFileSync(join(home, "conf", "logback_namesrv.xml"), LOGBACK("namesrv.log"));
  writeFileSync(join(home, "conf", "logback_broker.xml"), LOGBACK("broker.log"));
  // PlainPermissionManager reads ${rocketmq.home.dir}/conf/plain_acl.yml.
  if (opts.aclYaml !== undefined) writeFileSync(join(home, "conf", "plain_acl.yml"), opts.aclYaml);
  const nsPort = freePort();
  const brokerPort = freeBrokerPort();
  writeFileSync(join(home, "namesrv.properties"), `listenPort=${nsPort}\n`);
  const store = join(home, "store");
  writeFileSync(
    join(home, "broker.properties"),
    [
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
      ...(opts.aclYaml !== undefined ? ["aclEnable=true"] : []),
      "",
    ].join("\n"),
  );
  // user.home points into the temp home so RocketMQ's own files (~/logs, ~/store defaults) stay there.
  const env = { ...process.env, ROCKETMQ_HOME: home, HOME: home };
  const jvm = (heap: string, main: string, conf: string): string[] => [
    "java",
    ...JVM_FLAGS,
    `-Xms${heap}`,
    `-Xmx${heap}`,
    "-XX:MaxDirectMemorySize=256m",
    `-Drocketmq.home.dir=${home}`,
    `-Duser.home=${home}`,
    "-cp",
    cp,
    main,
    "-c",
    conf,
  ];
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
  const diag = () => {
    let logs = "";
    for (const f of ["namesrv.log", "broker.log"]) {
      try {
        logs += `--- ${f}\n${readFileSync(join(home, f), "utf8").slice(-4000)}\n`;
      } catch {
        // not written yet
      }
    }
    return `${outs.map((o) => o().slice(-2000)).join("\n")}\n${logs}`;
  };
  try {
    spawn(jvm("128m", "org.apache.rocketmq.namesrv.NamesrvStartup", join(home, "namesrv.properties")));
    await waitForAccept(nsPort, procs[0]!, diag);
    spawn(jvm("384m", "org.apache.rocketmq.broker.BrokerStartup", join(home, "broker.properties")));
    await waitForAccept(brokerPort, procs[1]!, diag);
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    kind: "apache",
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
