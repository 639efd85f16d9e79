/**
 * Apache RocketMQ as a peer of bench/run.ts (`--rocketmq`), and the neutral load that drives it and
 * RocketBun alike: JavaLoad (bench/rocketmq/load, Apache's rocketmq-client 4.9.8), so the two brokers
 * are measured by one client in one invocation.
 *
 * Brokers (each on a fresh store under the run's temp folder, the disk RocketBun's stores use):
 *   rocketbun      the run's binary: startNamesrv/startMaster of bench/lib/cluster.ts;
 *   4.9.7 / 5.3.3  NamesrvStartup and BrokerStartup from Maven Central (bench/rocketmq/server-<v>/pom.xml;
 *                  4.9.7 is the newest 4.9 broker there: no rocketmq-broker 4.9.8 is published).
 * Apache's settings, chosen to match RocketBun's master (bench/lib/cluster.ts masterYaml):
 *   ASYNC_MASTER; ASYNC_FLUSH, then SYNC_FLUSH on a fresh store; 1 GiB CommitLog segments (the
 *   default, sparse); ConsumeQueue files of 300,000 units (the default); flushIntervalCommitLog 500 ms
 *   and syncFlushTimeout 5 s (the defaults); pulls of up to `batch` messages from memory
 *   (maxTransferCountOnMessageInMemory, default 32); autoCreateTopicEnable off (topics created up front,
 *   8 queues each, as W1's).
 * JVMs: the collector and JIT runbroker.sh ships (G1, C2), but heaps for a 2-core, 24 GiB machine:
 *   runbroker.sh's 8 GiB heap + 15 GiB direct memory and runserver.sh's 4 GiB would take the whole
 *   machine. Broker 1 GiB heap (it holds metadata and requests in flight; messages live in the mapped
 *   CommitLog outside the heap), 1 GiB direct memory; name server 256 MiB. The load JVM: 512 MiB.
 *
 * Workloads (counts from the run's WorkloadParams; each JavaLoad run warms up first on its own topic):
 *   J1  send 1 KiB, 32 threads each awaiting SEND_OK (ASYNC_FLUSH)     J2  drain J1's topic (new group)
 *   J4  send 128 B, the same loop (ASYNC_FLUSH)                        J1s J1 on a SYNC_FLUSH broker
 * Broker CPU is the /proc/<pid>/stat delta across the timed window (JavaLoad waits for our "go"
 * after its warm-up); broker RSS is read idle (after `idleMs`), sampled every 100 ms during J1
 * (its peak is "under load") and after J4; start-to-ready is spawn to the first accepted TCP
 * connection, as cluster.ts measures RocketBun's.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Admin, canConnect, startMaster, startNamesrv, type FlushDiskType } from "./cluster.ts";
import { cpuSeconds, deviceFlushes, diskUsage, now, round, rssBytes, sleep, type WorkloadParams } from "./measure.ts";
import type { Result } from "./workloads.ts";

const { freeBrokerPort, freePort, mavenClasspath } = await import("../../test/harness/java.ts");

/** The Apache RocketMQ versions `--rocketmq` runs, oldest first. */
export const ROCKETMQ_VERSIONS = ["4.9.7", "5.3.3"] as const;
export type RocketmqVersion = (typeof ROCKETMQ_VERSIONS)[number];

/** The `peer` of each row: RocketBun, or Apache RocketMQ of a version, both under JavaLoad. */
export const JAVA_LOAD_ROCKETBUN = "rocketbun-java";
export const apachePeerId = (v: string) => `apache-rocketmq-${v}`;

const ROCKETMQ_DIR = join(import.meta.dir, "..", "rocketmq");
const QUEUES = 8;
const BROKER_HEAP = "1g";
const NAMESRV_HEAP = "256m";
const LOAD_HEAP = "512m";
/** runbroker.sh's collector and the module opens RocketMQ needs on Java 17. */
const JVM_BASE = [
  "-server",
  "-XX:+UseG1GC",
  "-XX:-OmitStackTraceInFastThrow",
  "--add-opens=java.base/java.nio=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens=java.base/java.lang=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
  "--add-opens=java.base/java.util=ALL-UNNAMED",
];
/** The settings the report prints beside the figures. */
export const ROCKETMQ_SETTINGS =
  `broker -Xms${BROKER_HEAP} -Xmx${BROKER_HEAP} -XX:MaxDirectMemorySize=1g, name server -Xmx${NAMESRV_HEAP}, G1; ` +
  "1 GiB CommitLog segments, ASYNC_MASTER, ASYNC_FLUSH then SYNC_FLUSH";

type Log = (msg: string) => void;

/** A started process: what the measurements need of it. */
interface Running {
  pid: number;
  readyMs: number;
  addr: string;
  output: () => string;
  stop(): Promise<number | null>;
}

/** One broker under test: its name server, its master, its store. */
export interface Rig {
  namesrv: Running;
  broker: Running;
  storeDir: string;
  stop(): Promise<void>;
}

/** Why the RocketMQ peers cannot run here, or null (Java and Maven on the PATH). */
export function rocketmqMissing(): string | null {
  const missing = ["java", "mvn"].filter((t) => Bun.which(t) === null);
  return missing.length ? `${missing.join(", ")} not on the PATH` : null;
}

function collectText(stream: ReadableStream<Uint8Array>): () => string {
  let text = "";
  const decoder = new TextDecoder();
  void (async () => {
    for await (const chunk of stream) text = (text + decoder.decode(chunk, { stream: true })).slice(-100_000);
  })();
  return () => text;
}

/** Spawns a JVM and waits for its first accepted connection on `port` (timed from just before the spawn). */
async function startJvm(name: string, argv: string[], home: string, port: number): Promise<Running> {
  const t0 = now();
  const proc = Bun.spawn(argv, { cwd: home, env: { ...process.env, ROCKETMQ_HOME: home }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const out = collectText(proc.stdout);
  const err = collectText(proc.stderr);
  const output = () => `--- ${name}\n${out()}${err()}`;
  const deadline = t0 + 120_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${name} exited with ${proc.exitCode}\n${output()}`);
    if (now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`${name} did not accept on ${port} within 120 s\n${output()}`);
    }
    if (await canConnect(port)) break;
    await sleep(1);
  }
  const readyMs = now() - t0;
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
    const code = await proc.exited;
    clearTimeout(timer);
    return code;
  };
  return { pid: proc.pid, readyMs, addr: `127.0.0.1:${port}`, output, stop };
}

const properties = (kv: Record<string, string | number | boolean>) =>
  Object.entries(kv)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join("\n") + "\n";

// Warnings and errors to a file in the home: 4.9 reads $ROCKETMQ_HOME/conf/logback_*.xml, 5.x the
// rmq.logback.configurationFile property.
const LOGBACK = `<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>\${user.home}/rmq.log</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5p [%t] %c{0} - %m%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="F"/></root>
</configuration>
`;

function apacheHome(dir: string): string {
  mkdirSync(join(dir, "conf"), { recursive: true });
  for (const f of ["logback_namesrv.xml", "logback_broker.xml", "logback.xml"]) writeFileSync(join(dir, "conf", f), LOGBACK);
  return dir;
}

function apacheArgv(home: string, cp: string, heap: string, main: string, conf: string, extra: string[] = []): string[] {
  return [
    "java",
    ...JVM_BASE,
    `-Xms${heap}`,
    `-Xmx${heap}`,
    ...extra,
    `-Drmq.logback.configurationFile=${join(home, "conf", "logback.xml")}`,
    `-Drocketmq.home.dir=${home}`,
    `-Duser.home=${home}`,
    "-cp",
    cp,
    main,
    "-c",
    conf,
  ];
}

function apacheBrokerProperties(port: number, namesrv: string, store: string, flush: FlushDiskType, batch: number): string {
  return properties({
    brokerClusterName: "BenchCluster",
    brokerName: "bench-a",
    brokerId: 0,
    brokerRole: "ASYNC_MASTER",
    flushDiskType: flush,
    listenPort: port,
    namesrvAddr: namesrv,
    brokerIP1: "127.0.0.1",
    storePathRootDir: store,
    storePathCommitLog: join(store, "commitlog"),
    autoCreateTopicEnable: false,
    autoCreateSubscriptionGroup: true,
    maxTransferCountOnMessageInMemory: batch,
    maxTransferBytesOnMessageInMemory: Math.max(262144, batch * 1400),
    diskMaxUsedSpaceRatio: 95,
  });
}

/** Apache RocketMQ `version`: a name server and an ASYNC_MASTER broker with `flush` on a fresh store. */
export async function startApache(version: RocketmqVersion, dir: string, flush: FlushDiskType, p: WorkloadParams): Promise<Rig> {
  const cp = mavenClasspath(`server-${version}`, ROCKETMQ_DIR);
  const nsHome = apacheHome(join(dir, "namesrv"));
  const brHome = apacheHome(join(dir, "broker"));
  const nsPort = freePort();
  const brPort = freeBrokerPort();
  const store = join(dir, "store");
  writeFileSync(join(nsHome, "namesrv.properties"), properties({ listenPort: nsPort }));
  writeFileSync(join(brHome, "broker.properties"), apacheBrokerProperties(brPort, `127.0.0.1:${nsPort}`, store, flush, p.batch));
  const started: Running[] = [];
  const stop = async () => {
    for (const r of started.reverse()) await r.stop();
  };
  try {
    const nsArgv = apacheArgv(nsHome, cp, NAMESRV_HEAP, "org.apache.rocketmq.namesrv.NamesrvStartup", join(nsHome, "namesrv.properties"));
    started.push(await startJvm(`namesrv ${version}`, nsArgv, nsHome, nsPort));
    const brArgv = apacheArgv(brHome, cp, BROKER_HEAP, "org.apache.rocketmq.broker.BrokerStartup", join(brHome, "broker.properties"), [
      "-XX:MaxDirectMemorySize=1g",
    ]);
    started.push(await startJvm(`broker ${version} (${flush})`, brArgv, brHome, brPort));
  } catch (e) {
    await stop();
    throw e;
  }
  return { namesrv: started[0]!, broker: started[1]!, storeDir: store, stop };
}

/**
 * RocketBun from the run's binary: the same processes and settings as bench/run.ts's W1. With
 * `cpuProfDir` (--cpu-prof) the broker runs from the sources under `bun --cpu-prof-md` instead,
 * one profile per broker start (ASYNC_FLUSH: J1, J2, J4; SYNC_FLUSH: J1s). bench/abuse/connections.ts
 * starts its RocketBun this way too (with `connectRatePerAddress`).
 */
export async function startRocketbunRig(
  binary: string,
  dir: string,
  flush: FlushDiskType,
  p: WorkloadParams,
  o: { cpuProfDir?: string; connectRatePerAddress?: number } = {},
): Promise<Rig> {
  const namesrv = await startNamesrv({ binary }, join(dir, "ns"));
  const storeDir = join(dir, "store");
  try {
    const broker = await startMaster(o.cpuProfDir ? { cpuProfDir: o.cpuProfDir } : { binary }, join(dir, "master"), {
      namesrv: namesrv.addr,
      storeDir,
      flushDiskType: flush,
      pullBatchMax: p.batch,
      ...(o.connectRatePerAddress !== undefined ? { connectRatePerAddress: o.connectRatePerAddress } : {}),
    });
    return {
      namesrv,
      broker,
      storeDir,
      stop: async () => {
        await broker.stop();
        await namesrv.stop();
      },
    };
  } catch (e) {
    await namesrv.stop();
    throw e;
  }
}

/** What one JavaLoad run measured, plus the broker's side of its timed window. */
async function javaLoad(rig: Rig, args: string[], home: string, rss: Set<number> | null): Promise<Record<string, unknown>> {
  const cp = mavenClasspath("load", ROCKETMQ_DIR);
  const argv = ["java", ...JVM_BASE, `-Xms${LOAD_HEAP}`, `-Xmx${LOAD_HEAP}`, `-Duser.home=${home}`, "-cp", cp, "rocketbun.bench.JavaLoad", ...args];
  const proc = Bun.spawn(argv, { cwd: home, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  const err = collectText(proc.stderr);
  const killer = setTimeout(() => proc.kill("SIGKILL"), 1_800_000);
  let cpu0: number | null = null;
  let flush0: number | null = null;
  let sampler: ReturnType<typeof setInterval> | undefined;
  const out: Record<string, unknown> = {};
  const decoder = new TextDecoder();
  let pending = "";
  try {
    for await (const chunk of proc.stdout) {
      pending += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (line === "ready") {
          cpu0 = cpuSeconds(rig.broker.pid);
          flush0 = deviceFlushes(rig.storeDir);
          if (rss) sampler = setInterval(() => rss.add(rssBytes(rig.broker.pid) ?? 0), 100);
          proc.stdin.write("go\n");
          await proc.stdin.flush();
        } else if (line === "done") {
          clearInterval(sampler);
          const cpu1 = cpuSeconds(rig.broker.pid);
          const flush1 = deviceFlushes(rig.storeDir);
          out.server_cpu_s = cpu0 === null || cpu1 === null ? null : round(cpu1 - cpu0, 2);
          out.device_flushes = flush0 === null || flush1 === null ? null : flush1 - flush0;
        } else if (line.startsWith("{")) Object.assign(out, JSON.parse(line) as Record<string, unknown>);
      }
    }
    const code = await proc.exited;
    if (code !== 0 || out.msgs === undefined) throw new Error(`JavaLoad ${args.join(" ")} exited with ${code}\n${err().slice(-4000)}`);
  } finally {
    clearInterval(sampler);
    clearTimeout(killer);
    proc.kill("SIGKILL");
  }
  return out;
}

/** Per-message figures of one row (broker and client CPU µs per message). */
function perMsg(r: Record<string, unknown>): Record<string, unknown> {
  const n = Number(r.msgs);
  const us = (s: unknown) => (typeof s === "number" && n > 0 ? round((s * 1e6) / n, 1) : null);
  return { server_cpu_us_per_msg: us(r.server_cpu_s), client_cpu_us_per_msg: us(r.client_cpu_s) };
}

interface Phase {
  peer: string;
  rig: Rig;
  p: WorkloadParams;
  tmp: string;
  log: Log;
}

/** One JavaLoad workload as a result row (topic and its warm-up topic created beforehand). */
async function produceRow(ph: Phase, workload: string, topic: string, size: number, rss: Set<number> | null): Promise<Result> {
  const args = ["produce", ph.rig.namesrv.addr, topic, `${topic}-warm`, String(ph.p.msgs), String(size), String(ph.p.inflight), String(ph.p.warmup)];
  const r = await javaLoad(ph.rig, args, ph.tmp, rss);
  const row: Result = { peer: ph.peer, workload, ...r, ...perMsg(r), server_rss_bytes: rssBytes(ph.rig.broker.pid) };
  ph.log(`${ph.peer} ${workload}: ${String(r.msgs_per_s)} msgs/s, RT p50/p99/max ${String(r.ack_p50_ms)}/${String(r.ack_p99_ms)}/${String(r.ack_max_ms)} ms`);
  return row;
}

async function createTopics(rig: Rig, topics: string[]): Promise<void> {
  const admin = new Admin(rig.namesrv.addr, rig.broker.addr);
  try {
    for (const t of topics) await admin.createTopic(t, QUEUES);
    await admin.waitRoutes(topics);
  } finally {
    await admin.close();
  }
}

/** ASYNC_FLUSH: idle RSS, J1 (RSS sampled), J2, J4, data folder. */
async function asyncPhase(ph: Phase): Promise<Result[]> {
  const { rig, p } = ph;
  await sleep(p.idleMs);
  const proc: Result = {
    peer: ph.peer,
    workload: "process",
    namesrv_ready_ms: round(rig.namesrv.readyMs, 1),
    broker_ready_ms: round(rig.broker.readyMs, 1),
    server_rss_idle_bytes: rssBytes(rig.broker.pid),
  };
  await createTopics(rig, ["j1", "j1-warm", "j4", "j4-warm"]);
  const load = new Set<number>();
  const j1 = await produceRow(ph, "J1", "j1", p.body, load);
  proc.server_rss_load_bytes = Math.max(...load, Number(j1.server_rss_bytes ?? 0));
  const c = await javaLoad(rig, ["consume", rig.namesrv.addr, "j1", String(p.msgs), "bench_java_drain", String(p.batch)], ph.tmp, null);
  const j2: Result = { peer: ph.peer, workload: "J2", ...c, ...perMsg(c) };
  ph.log(`${ph.peer} J2: ${String(c.msgs_per_s)} msgs/s (${String(c.msgs)}/${String(c.expected)})`);
  const j4 = await produceRow(ph, "J4", "j4", p.smallBody, null);
  await sleep(p.idleMs);
  proc.server_rss_end_idle_bytes = rssBytes(rig.broker.pid);
  const du = diskUsage(rig.storeDir);
  proc.data_dir_bytes = du?.apparent ?? null;
  proc.data_dir_alloc_bytes = du?.allocated ?? null;
  return [j1, j2, j4, proc];
}

/** J1–J4 under JavaLoad against one broker: an ASYNC_FLUSH rig, then a SYNC_FLUSH one on a fresh store. */
async function runOne(peer: string, start: (dir: string, flush: FlushDiskType) => Promise<Rig>, tmp: string, p: WorkloadParams, log: Log): Promise<Result[]> {
  const rows: Result[] = [];
  for (const flush of ["ASYNC_FLUSH", "SYNC_FLUSH"] as const) {
    const dir = join(tmp, `${peer}-${flush.toLowerCase()}`);
    mkdirSync(dir, { recursive: true });
    const rig = await start(dir, flush);
    log(`${peer} (${flush}): name server ready in ${rig.namesrv.readyMs.toFixed(0)} ms, broker in ${rig.broker.readyMs.toFixed(0)} ms`);
    const ph: Phase = { peer, rig, p, tmp: dir, log };
    try {
      if (flush === "ASYNC_FLUSH") rows.push(...(await asyncPhase(ph)));
      else {
        await createTopics(rig, ["j1s", "j1s-warm"]);
        rows.push(await produceRow(ph, "J1s", "j1s", p.body, null));
      }
    } catch (e) {
      log(`${peer} (${flush}) failed:\n${rig.namesrv.output().slice(-3000)}\n${rig.broker.output().slice(-3000)}`);
      throw e;
    } finally {
      await rig.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return rows;
}

/**
 * The `--rocketmq` part of a run: JavaLoad against RocketBun (`binary`) and each Apache version.
 * Returns its rows, or none and a reason when Java or Maven is missing (printed once by the caller).
 */
export async function runRocketmqPeers(
  binary: string,
  versions: readonly RocketmqVersion[],
  tmp: string,
  p: WorkloadParams,
  log: Log,
  cpuProfDir?: string,
): Promise<{ rows: Result[]; note: string }> {
  const missing = rocketmqMissing();
  if (missing) return { rows: [], note: `skipped: ${missing}` };
  mavenClasspath("load", ROCKETMQ_DIR);
  const rows: Result[] = [];
  rows.push(...(await runOne(JAVA_LOAD_ROCKETBUN, (dir, flush) => startRocketbunRig(binary, dir, flush, p, cpuProfDir ? { cpuProfDir } : {}), tmp, p, log)));
  for (const v of versions) rows.push(...(await runOne(apachePeerId(v), (dir, flush) => startApache(v, dir, flush, p), tmp, p, log)));
  return { rows, note: `JavaLoad (rocketmq-client 4.9.8) against RocketBun and Apache RocketMQ ${versions.join(", ")}; ${ROCKETMQ_SETTINGS}` };
}
