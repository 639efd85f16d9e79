/**
 * Apache RocketMQ 5.3.3's side of bench/failover: controller mode (RIP-44) from Maven Central
 * (bench/failover/apache5/pom.xml: rocketmq-namesrv, rocketmq-broker, rocketmq-controller), one
 * name server JVM with the controller embedded and 3 broker JVMs of one group on 127.0.0.1.
 *
 * Name server (namesrv.properties):
 *   enableControllerInNamesrv=true, a DLedger group of one peer (controllerDLegerPeers n0 on its
 *   own port, which is the controller's address): one coordinator, like our one etcd member.
 *   enableElectUncleanMaster=false (default; ours: allowUncleanElection false),
 *   notifyBrokerRoleChanged=true (default: the controller tells the replicas at once).
 * Brokers (broker-N.properties), the same for all three (the controller picks the master; in
 * controller mode a master is always SYNC_MASTER):
 *   enableControllerMode=true, controllerAddr;
 *   allAckInSyncStateSet=true — a send is answered once every member of the SyncStateSet has it
 *     (ours: SYNC_MASTER waits for every member of the sync state set);
 *   minInSyncReplicas=2 — refused before storing while the SyncStateSet is smaller (ours: 2);
 *   haMaxTimeSlaveNotCatchup=2000 and slaveTimeout=2000 — a replica behind for longer leaves the
 *     SyncStateSet, a send waits that long for the acks (ours: haSlaveTimeoutMs 2000 is both);
 *   checkSyncStateSetPeriod=1000 — the shrink check (ours: every round, a third of the lease);
 *   registerNameServerPeriod=1000 (ours: registerNameServerPeriodMs 1000); 5.3.3 clamps it to
 *     10 s at least (BrokerController), so the brokers register every 10 s;
 *   flushDiskType=ASYNC_FLUSH, mappedFileSizeCommitLog at its default 1 GiB (both, sparse files).
 * Failure detection and recovery, the two configurations (`timeouts`):
 *   "default": controllerHeartBeatTimeoutMills 10000 (broker), scanNotActiveBrokerInterval 5000
 *     (controller) and haSendHeartbeatInterval 5000 (a replica's offset report), as shipped;
 *   "lease": what a user matching our 3 s lease would set: controllerHeartBeatTimeoutMills =
 *     leaseTtlMs, scanNotActiveBrokerInterval = haSendHeartbeatInterval = leaseTtlMs / 3 (ours
 *     checks every third of the lease).
 *   A kill -9 on one machine closes the dead broker's connection to the controller, which takes
 *   that as its death at once (DefaultBrokerHeartbeatManager.onBrokerChannelClose) and elects
 *   within tens of ms: the two timeouts decide only when the socket stays open (a frozen or
 *   cut-off host). What the kill then waits for, seen in the INFO logs: the new master takes
 *   writes only once a second replica is back in its SyncStateSet (minInSyncReplicas 2; an
 *   election leaves the set at the master alone); the other replica learns the new master's HA
 *   address from its next name-server registration (every 10 s: the role-change registration
 *   usually races the master's and gets none), then is taken back at its next offset report
 *   (haSendHeartbeatInterval).
 * JVMs: Apache's own launch flags where they matter (G1, no C1-only JIT), heaps for a 2-core
 * machine: 256 MiB each (brokers, and the name server with its controller).
 * Logs: WARN, or HA_LOG_LEVEL (info, debug); FAILOVER_LOGS=DIR keeps them.
 * Healthy: the controller names a master whose process runs, its SyncStateSet holds all 3, every
 * broker runs and the name server lists the master as brokerId 0.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import type { Subprocess } from "bun";
import { createRequest, RequestCode } from "../../src/remoting/index.ts";
import type { FailoverRig, GroupState, Member } from "./measure.ts";

const { collect, tempDir, waitFor } = await import("../../test/harness/binary.ts");
const { freeBrokerPort, freePort, mavenClasspath } = await import("../../test/harness/java.ts");
const { bodyJson, createTopicRequest, newClient, routeRequest } = await import("../../test/harness/wire.ts");
const { waitForAccept } = await import("../../test/harness/interop-cluster.ts");

export type ApacheTimeouts = "default" | "lease";

export interface Apache5Options {
  timeouts: ApacheTimeouts;
  lease: number;
}

const CLUSTER = "BenchCluster";
const GROUP = "bench-fo";
const REPLICAS = 3;
/** RequestCode.CONTROLLER_GET_REPLICA_INFO of RocketMQ 5 (not a request RocketBun serves). */
const CONTROLLER_GET_REPLICA_INFO = 1004;

/** WARN, or HA_LOG_LEVEL (info, debug) as for RocketBun's brokers in test/harness/ha-cluster.ts. */
const LOGBACK = `<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>\${user.home}/rmq.log</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5p [%t] %c{0} - %m%n</pattern></encoder>
  </appender>
  <root level="${(process.env.HA_LOG_LEVEL ?? "warn").toUpperCase()}"><appender-ref ref="F"/></root>
</configuration>
`;

/** Launch flags: runbroker.sh's collector (G1), the module opens RocketMQ needs on Java 17. */
const JVM_FLAGS = [
  "-server",
  "-XX:+UseG1GC",
  "-XX:-OmitStackTraceInFastThrow",
  "-XX:MaxDirectMemorySize=1g",
  "--add-opens=java.base/java.nio=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens=java.base/java.lang=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
  "--add-opens=java.base/java.util=ALL-UNNAMED",
];
const HEAP = "256m";

/** One JVM: started by PID, killed by PID, started again on the same files. */
class Jvm implements Member {
  #proc: Subprocess<"ignore", "pipe", "pipe"> | null = null;
  #out: (() => string)[] = [];

  constructor(
    readonly name: string,
    readonly home: string,
    readonly port: number,
    readonly argv: string[],
  ) {}

  get running(): boolean {
    return !!this.#proc && this.#proc.exitCode === null && this.#proc.signalCode === null;
  }

  get addr(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.running) throw new Error(`${this.name} is already running`);
    // user.home is the member's own dir: RocketMQ puts its files under it (logs, controller data).
    this.#proc = Bun.spawn(this.argv, { cwd: this.home, env: { ...process.env, ROCKETMQ_HOME: this.home }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    this.#out = [collect(this.#proc.stdout), collect(this.#proc.stderr)];
    const proc = this.#proc;
    await waitForAccept(this.port, proc, () => `${this.name}\n${this.output()}`, 120_000);
  }

  async kill(): Promise<void> {
    const p = this.#proc;
    if (!p || !this.running) return;
    p.kill("SIGKILL");
    await p.exited;
  }

  output(): string {
    let log = "";
    try {
      log = readFileSync(join(this.home, "rmq.log"), "utf8").slice(-3000);
    } catch {
      // not written yet
    }
    return `--- ${this.name}\n${this.#out.map((o) => o().slice(-1500)).join("")}${log}`;
  }
}


/**
 * FAILOVER_LOGS=DIR keeps each JVM's log (DIR/<home>.log) when the rig is removed; the homes
 * themselves go (their stores hold 1 GiB sparse files a copy would fill).
 */
function keepLogs(jvms: Jvm[]): void {
  const dir = process.env.FAILOVER_LOGS;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  for (const j of jvms) {
    const log = join(j.home, "rmq.log");
    if (existsSync(log)) copyFileSync(log, join(dir, `${basename(j.home)}.log`));
  }
}

function properties(kv: Record<string, string | number | boolean>): string {
  return `${Object.entries(kv)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join("\n")}\n`;
}

function namesrvJvm(root: string, cp: string, o: Apache5Options, ports: { namesrv: number; controller: number }): Jvm {
  const home = join(root, "namesrv");
  mkdirSync(home);
  const conf = join(home, "namesrv.properties");
  writeFileSync(
    conf,
    properties({
      listenPort: ports.namesrv,
      enableControllerInNamesrv: true,
      controllerDLegerGroup: "bench",
      controllerDLegerPeers: `n0-127.0.0.1:${ports.controller}`,
      controllerDLegerSelfId: "n0",
      controllerStorePath: join(home, "controller"),
      enableElectUncleanMaster: false,
      notifyBrokerRoleChanged: true,
      ...(o.timeouts === "lease" ? { scanNotActiveBrokerInterval: Math.round(o.lease / 3) } : {}),
    }),
  );
  return new Jvm("namesrv+controller", home, ports.namesrv, javaArgv(home, cp, "org.apache.rocketmq.namesrv.NamesrvStartup", conf));
}

function brokerJvm(root: string, cp: string, o: Apache5Options, i: number, ports: { namesrv: number; controller: number }): Jvm {
  const home = join(root, `broker-${i}`);
  mkdirSync(home);
  const port = freeBrokerPort();
  const conf = join(home, "broker.properties");
  writeFileSync(
    conf,
    properties({
      brokerClusterName: CLUSTER,
      brokerName: GROUP,
      listenPort: port,
      namesrvAddr: `127.0.0.1:${ports.namesrv}`,
      brokerIP1: "127.0.0.1",
      brokerIP2: "127.0.0.1",
      storePathRootDir: join(home, "store"),
      storePathCommitLog: join(home, "store", "commitlog"),
      enableControllerMode: true,
      controllerAddr: `127.0.0.1:${ports.controller}`,
      allAckInSyncStateSet: true,
      minInSyncReplicas: 2,
      haMaxTimeSlaveNotCatchup: 2000,
      slaveTimeout: 2000,
      checkSyncStateSetPeriod: 1000,
      registerNameServerPeriod: 1000,
      flushDiskType: "ASYNC_FLUSH",
      ...(o.timeouts === "lease" ? { controllerHeartBeatTimeoutMills: o.lease, haSendHeartbeatInterval: Math.round(o.lease / 3) } : {}),
    }),
  );
  return new Jvm(`broker-${i} (${port})`, home, port, javaArgv(home, cp, "org.apache.rocketmq.broker.BrokerStartup", conf));
}

function javaArgv(home: string, cp: string, main: string, conf: string): string[] {
  writeFileSync(join(home, "logback.xml"), LOGBACK);
  return [
    "java",
    ...JVM_FLAGS,
    `-Xms${HEAP}`,
    `-Xmx${HEAP}`,
    `-Drmq.logback.configurationFile=${join(home, "logback.xml")}`,
    `-Drocketmq.home.dir=${home}`,
    `-Duser.home=${home}`,
    "-cp",
    cp,
    main,
    "-c",
    conf,
  ];
}

export async function startApache5Rig(o: Apache5Options): Promise<FailoverRig> {
  const cp = mavenClasspath("apache5", import.meta.dir);
  const root = tempDir("rocketbun-bench-apache5-");
  const ports = { namesrv: freePort(), controller: freePort() };
  const ns = namesrvJvm(root, cp, o, ports);
  const brokers = Array.from({ length: REPLICAS }, (_, i) => brokerJvm(root, cp, o, i, ports));
  const client = newClient();
  const dispose = async () => {
    client.close();
    for (const j of [...brokers, ns]) await j.kill();
    keepLogs([ns, ...brokers]);
    rmSync(root, { recursive: true, force: true });
  };
  const diag = () => [ns, ...brokers].map((j) => j.output()).join("\n");
  const rig = new Apache5Rig(o, `127.0.0.1:${ports.controller}`, ns, brokers, client, diag, dispose);
  try {
    await ns.start();
    await Promise.all(brokers.map((b) => b.start()));
    await waitFor(async () => (await rig.state()).master, 120_000, () => `the first master\n${diag()}`);
  } catch (e) {
    await dispose();
    throw e;
  }
  return rig;
}

class Apache5Rig implements FailoverRig {
  readonly label: string;
  readonly namesrv: string;

  constructor(
    o: Apache5Options,
    private readonly controller: string,
    ns: Jvm,
    private readonly brokers: Jvm[],
    private readonly client: ReturnType<typeof newClient>,
    readonly diag: () => string,
    private readonly dispose: () => Promise<void>,
  ) {
    this.label = o.timeouts === "default" ? "apache5 (defaults)" : `apache5 (tuned to the ${o.lease} ms lease)`;
    this.namesrv = ns.addr;
  }

  /** The controller's master and SyncStateSet (CONTROLLER_GET_REPLICA_INFO), checked against the name server. */
  async state(): Promise<GroupState> {
    const r = await this.client.invoke(this.controller, createRequest(CONTROLLER_GET_REPLICA_INFO, { brokerName: GROUP }), 2000);
    if (r.code !== 0) return { master: undefined, healthy: false };
    const masterAddr = r.extFields?.masterAddress;
    const master = this.brokers.find((b) => b.addr === masterAddr && b.running);
    const inSync = r.body ? (bodyJson<{ syncStateSet?: number[] }>(r).syncStateSet?.length ?? 0) : 0;
    const registered = master !== undefined && (await this.#registeredMaster()) === master.addr;
    return { master: registered ? master : undefined, healthy: registered && inSync === REPLICAS && this.brokers.every((b) => b.running) };
  }

  async #registeredMaster(): Promise<string | undefined> {
    const r = await this.client.invoke(this.namesrv, createRequest(RequestCode.GET_BROKER_CLUSTER_INFO, {}), 2000);
    if (r.code !== 0 || !r.body) return undefined;
    const info = bodyJson<{ brokerAddrTable?: Record<string, { brokerAddrs?: Record<string, string> }> }>(r);
    return info.brokerAddrTable?.[GROUP]?.brokerAddrs?.["0"];
  }

  /** On every running broker (a replica that becomes master must have it), then until the name server routes it. */
  async createTopic(topic: string): Promise<void> {
    for (const b of this.brokers) {
      const r = await this.client.invoke(b.addr, createTopicRequest(topic, 4), 5000);
      if (r.code !== 0) throw new Error(`${b.name}: creating ${topic} answered ${r.code} ${r.remark ?? ""}`);
    }
    await waitFor(
      async () => {
        const r = await this.client.invoke(this.namesrv, routeRequest(topic), 2000);
        return r.code === 0 && r.body !== undefined;
      },
      30_000,
      () => `the name server to route ${topic}\n${this.diag()}`,
    );
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
