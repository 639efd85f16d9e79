/**
 * The crash loop of issue #18 (bench/crash-loop/run.ts, test/interop/crash-loop.test.ts): a name
 * server and one master of the compiled binary, the Java client (ChaosClient.java, rocketmq-client
 * 4.9.8) sending with unique keys and consuming with a clustering push consumer throughout, and
 * each cycle: let it run, optionally write filler to grow the store (`fillMiB`), kill -9 the master
 * (its PID only), optionally cut the power of its filesystem (`powerLoss`: after SYNC_FLUSH cycles
 * or after all; test/harness/loop-fs.ts), restart it on the
 * same store with the next cycle's flush mode (cycles alternate ASYNC_FLUSH, SYNC_FLUSH) and time
 * spawn → first accepted connection on its remoting port, as bench/lib/cluster.ts times a start.
 * At the end the store is read back over the wire (crash-loop-verify.ts).
 *
 * The master keeps its listen port across restarts, as a restarted production broker does, so
 * the client finds it at the address it knows.
 */
import { readdirSync, rmSync, statSync, writeFileSync, existsSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import type { Subprocess } from "bun";
import type { FlushDiskType } from "../../src/protocol/broker-config.ts";
import { RUNTIME_ENV } from "../../src/runtime-tuning.ts";
import { ResponseCode } from "../../src/remoting/index.ts";
import { Producer } from "../../src/client/index.ts";
import { collect, ensureBinary, startRocketbun, tempDir, waitFor } from "./binary.ts";
import { ChaosClient, type ChaosAck } from "./chaos-client.ts";
import { readBack, verify, type Verdict } from "./crash-loop-verify.ts";
import { brokerYaml } from "./ha-cluster.ts";
import { freeBrokerPort } from "./java.ts";
import { LoopFs } from "./loop-fs.ts";
import { prng } from "./fuzz.ts";
import { createTopicRequest, newClient, routeRequest } from "./wire.ts";

const CRASH_TOPIC = "CrashLoopTopic";
const CRASH_GROUP = "crash-loop";
const CRASH_QUEUES = 4;
const FILL_TOPIC = "CrashLoopFill";
const FILL_BATCH = 32;
/** RocketMQ's flushIntervalCommitLog: what an ASYNC_FLUSH master may lose to a power cut. */
const ASYNC_FLUSH_INTERVAL_MS = 500;

export interface CrashLoopOptions {
  cycles: number;
  /** Each cycle runs this long (at least; uniformly up to twice) after the restart before the kill. */
  runMs: number;
  seed: number;
  /**
   * A power cut of the store's loop-mounted filesystem after the kill: after SYNC_FLUSH cycles
   * ("sync"), or after every cycle ("all": ASYNC_FLUSH acknowledgements not yet flushed may then
   * be lost, which shows that the cut does lose what was not flushed).
   */
  powerLoss: "off" | "sync" | "all";
  /** CommitLog segment size (small segments: more files, more rollovers under the kills). */
  segmentBytes: number;
  /**
   * MiB of filler (1 KiB bodies in batches of 32, our own client, another topic) written before
   * each kill, so the store grows and recovery time can be set against its size.
   */
  fillMiB: number;
  /** The Java client's senders and their pause between sends. */
  threads: number;
  pauseMs: number;
  /** One line of progress. */
  log: (line: string) => void;
}

export const CRASH_LOOP_DEFAULTS: Omit<CrashLoopOptions, "cycles" | "seed" | "log"> = {
  runMs: 3000,
  powerLoss: "off",
  fillMiB: 0,
  segmentBytes: 4 * 1024 * 1024,
  threads: 3,
  pauseMs: 5,
};

/** One kill and restart. */
export interface Cycle {
  cycle: number;
  /** The flush mode of the master that was killed, and of the one started after it. */
  mode: FlushDiskType;
  nextMode: FlushDiskType;
  powerCut: boolean;
  /** SEND_OK answers of the killed master. */
  acked: number;
  /** The store's allocated bytes when it was killed. */
  storeBytes: number;
  /** Spawn → first accepted connection of the restarted master. */
  recoveryMs: number;
  /** The killed master's ready → its kill. */
  ranMs: number;
  /** Kill → first SEND_OK from the restarted master, as the client saw it. */
  firstAckMs?: number;
  /** Kill → the consumer's first message acknowledged by the restarted master (undefined: none ever). */
  consumedMs?: number;
}

export interface CrashLoopReport {
  seed: number;
  cycles: Cycle[];
  /** The first master's start on the empty store. */
  firstStartMs: number;
  verdict: Verdict;
  failedSends: number;
}

const modeOf = (cycle: number): FlushDiskType => (cycle % 2 === 0 ? "ASYNC_FLUSH" : "SYNC_FLUSH");

/** Allocated bytes of every file under `dir` (segments are created full size and sparse). */
function allocatedBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += allocatedBytes(p);
    else if (e.isFile()) n += statSync(p).blocks * 512;
  }
  return n;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = connect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      res(true);
    });
    s.once("error", () => res(false));
  });
}

/** One run of the master process. */
interface Incarnation {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  mode: FlushDiskType;
  readyMs: number;
  /** Date.now() when its port accepted the first connection. */
  readyAt: number;
  output: () => string;
}

interface MasterPlace {
  home: string;
  store: string;
  port: number;
  namesrv: string;
  segmentBytes: number;
}

async function startMaster(p: MasterPlace, mode: FlushDiskType, n: number): Promise<Incarnation> {
  const cfg = join(p.home, `master-${n}.yaml`);
  const portsFile = join(p.home, `ports-${n}.json`);
  writeFileSync(cfg, brokerYaml({ broker: { brokerName: "crash-a" }, store: { flushDiskType: mode, commitLogSegmentBytes: p.segmentBytes, flushIntervalMs: ASYNC_FLUSH_INTERVAL_MS } }));
  const argv = [ensureBinary(), "--role", "master", "--config", cfg, "--store", p.store, "--ports-file", portsFile];
  argv.push("--listen", `127.0.0.1:${p.port}`, "--admin", "127.0.0.1:0", "--namesrv", p.namesrv);
  const t0 = performance.now();
  const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", cwd: p.home, env: { ...RUNTIME_ENV, ...process.env } });
  const out = collect(proc.stdout);
  const err = collect(proc.stderr);
  const output = () => out() + err();
  for (let listed = false; ; await Bun.sleep(1)) {
    if (proc.exitCode !== null) throw new Error(`master ${n} (${mode}) exited with ${proc.exitCode}:\n${output()}`);
    if (performance.now() - t0 > 60_000) {
      proc.kill("SIGKILL");
      throw new Error(`master ${n} not ready within 60 s:\n${output()}`);
    }
    listed ||= existsSync(portsFile) && readFileSync(portsFile, "utf8").endsWith("\n");
    if (listed && (await canConnect(p.port))) break;
  }
  return { proc, mode, readyMs: performance.now() - t0, readyAt: Date.now(), output };
}

async function kill9(m: Incarnation): Promise<void> {
  if (m.proc.exitCode === null && m.proc.signalCode === null) m.proc.kill("SIGKILL");
  await m.proc.exited;
}

async function createTopic(brokerAddr: string, namesrv: string, topic: string): Promise<void> {
  const c = newClient();
  try {
    const res = await c.invoke(brokerAddr, createTopicRequest(topic, CRASH_QUEUES), 10_000);
    if (res.code !== ResponseCode.SUCCESS) throw new Error(`creating ${topic}: ${res.code} ${res.remark ?? ""}`);
    await waitFor(async () => (await c.invoke(namesrv, routeRequest(topic), 5000)).code === ResponseCode.SUCCESS, 30_000, `${topic}'s route`);
  } finally {
    await c.close();
  }
}

/** SEND_OK lines seen while `m` was the master: after it was ready and before the next one was. */
function ackedBy(client: ChaosClient, from: number, to = Infinity): ChaosAck[] {
  return client.acked().filter((a) => a.seenAt > from && a.seenAt <= to);
}

/**
 * Runs until `m` acknowledged 10 sends, and at least `ms`. The kill does not wait for the consumer:
 * rocketmq-client 4.9.8 fails a request pending on a connection the peer closed only at its
 * timeout (its failFast runs when the client closes a channel, not when the broker dies), so a
 * long-poll parked on a killed master holds that queue's consumption for the 30 s pull timeout.
 * That the consumer received what each master acknowledged is checked at the end instead.
 */
async function runCycle(client: ChaosClient, m: Incarnation, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  await waitFor(
    () => ackedBy(client, m.readyAt).length >= 10,
    60_000,
    () => `${what}: sends acknowledged by the restarted master (acked ${client.acked().length}, fails ${client.fails.slice(-2).map((f) => f.error).join(" | ")})\n${client.stderr()}\n${m.output().slice(-3000)}`,
  );
  const left = until - Date.now();
  if (left > 0) await Bun.sleep(left);
}

/** `mib` MiB of filler through `p`, 8 batches in flight; a refused batch (the master just restarted) is sent again. */
async function fill(p: Producer, mib: number): Promise<void> {
  const body = new Uint8Array(1024).fill(0x66);
  let left = Math.ceil((mib * 1024) / FILL_BATCH);
  const worker = async () => {
    for (let failures = 0; left > 0; ) {
      left--;
      try {
        await p.sendBatch(Array.from({ length: FILL_BATCH }, () => ({ topic: FILL_TOPIC, body })));
      } catch (e) {
        if (++failures > 100) throw e;
        left++;
        await Bun.sleep(100);
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

interface LoopState {
  o: CrashLoopOptions;
  place: MasterPlace;
  fs: LoopFs | undefined;
  client: ChaosClient;
  filler: Producer | undefined;
  masters: Incarnation[];
  cycles: Cycle[];
  /** Date.now() of each cycle's kill. */
  killAts: number[];
}

async function oneCycle(s: LoopState, c: number, rng: ReturnType<typeof prng>): Promise<void> {
  const m = s.masters.at(-1)!;
  await runCycle(s.client, m, s.o.runMs + rng.int(0, s.o.runMs), `cycle ${c + 1} (${m.mode})`);
  if (s.filler) await fill(s.filler, s.o.fillMiB);
  const storeBytes = allocatedBytes(s.place.store);
  const killAt = Date.now();
  await kill9(m);
  const powerCut = s.fs !== undefined && (s.o.powerLoss === "all" || m.mode === "SYNC_FLUSH");
  if (powerCut) s.fs!.powerCut();
  const next = await startMaster(s.place, modeOf(c + 1), c + 1);
  s.masters.push(next);
  s.killAts.push(killAt);
  const acked = ackedBy(s.client, m.readyAt, next.readyAt).length;
  const ranMs = killAt - m.readyAt;
  s.cycles.push({ cycle: c, mode: m.mode, nextMode: next.mode, powerCut, acked, storeBytes, recoveryMs: next.readyMs, ranMs });
  s.o.log(`cycle ${c + 1}/${s.o.cycles}: ${m.mode}${powerCut ? " + power cut" : ""}, ran ${ranMs} ms, ${acked} acked, store ${(storeBytes / 1048576).toFixed(1)} MiB, recovery ${next.readyMs.toFixed(0)} ms`);
}

/**
 * Per cycle, from every line seen by the end: kill → the restarted master's first SEND_OK, and
 * kill → the consumer's first message acknowledged by the restarted master.
 */
function fillAfterKill(s: LoopState): void {
  const acks = s.client.acked();
  for (const cy of s.cycles) {
    const next = s.masters[cy.cycle + 1]!;
    const to = s.masters[cy.cycle + 2]?.readyAt ?? Infinity;
    const first = acks.find((a) => a.seenAt > next.readyAt);
    if (first) cy.firstAckMs = first.seenAt - s.killAts[cy.cycle]!;
    const bodies = new Set(ackedBy(s.client, next.readyAt, to).map((a) => a.body));
    const recv = s.client.recvs.find((r) => bodies.has(r.body));
    if (recv) cy.consumedMs = recv.seenAt - s.killAts[cy.cycle]!;
  }
}

/** The whole loop; cleans up every process it started and every dir it made. */
export async function runCrashLoop(o: CrashLoopOptions): Promise<CrashLoopReport> {
  await using ns = await startRocketbun({ role: "namesrv", configYaml: "logLevel: warn\nnamesrv:\n  brokerExpiredMs: 10000\n  brokerScanIntervalMs: 200\n" });
  await using fs = o.powerLoss !== "off" ? LoopFs.create(2048 + 2 * o.cycles * o.fillMiB) : undefined;
  const home = tempDir("rocketbun-crash-loop-");
  const place: MasterPlace = { home, store: join(fs?.dir ?? home, "store"), port: freeBrokerPort(), namesrv: ns.namesrvAddr, segmentBytes: o.segmentBytes };
  const masters: Incarnation[] = [];
  try {
    masters.push(await startMaster(place, modeOf(0), 0));
    await createTopic(`127.0.0.1:${place.port}`, ns.namesrvAddr, CRASH_TOPIC);
    if (o.fillMiB > 0) await createTopic(`127.0.0.1:${place.port}`, ns.namesrvAddr, FILL_TOPIC);
    await using client = await ChaosClient.start({ namesrv: ns.namesrvAddr, topic: CRASH_TOPIC, group: CRASH_GROUP, seconds: 86_400, threads: o.threads, pauseMs: o.pauseMs });
    const filler = o.fillMiB > 0 ? new Producer({ namesrv: ns.namesrvAddr, group: "crash-loop-fill", sendTimeoutMs: 10_000 }) : undefined;
    await filler?.start();
    try {
      const s: LoopState = { o, place, fs, client, filler, masters, cycles: [], killAts: [] };
      const rng = prng(o.seed);
      for (let c = 0; c < o.cycles; c++) await oneCycle(s, c, rng);
      await runCycle(client, masters.at(-1)!, 1000, "after the last restart");
      return await finish(s);
    } finally {
      await filler?.shutdown();
    }
  } finally {
    for (const m of masters) await kill9(m);
    rmSync(home, { recursive: true, force: true });
  }
}

async function finish(s: LoopState): Promise<CrashLoopReport> {
  await s.client.stopSending();
  const acks = s.client.acked();
  // Everything acknowledged is consumed in the end (re-deliveries after a kill are fine).
  const consumedBy = Date.now() + 60_000;
  const received = new Set<string>();
  for (let seen = 0; ; ) {
    for (; seen < s.client.recvs.length; seen++) received.add(s.client.recvs[seen]!.body);
    if (acks.every((a) => received.has(a.body)) || Date.now() > consumedBy) break;
    await Bun.sleep(200);
  }
  fillAfterKill(s);
  const stored = await readBack(`127.0.0.1:${s.place.port}`, CRASH_TOPIC, CRASH_QUEUES);
  const modeOfAck = (a: ChaosAck): FlushDiskType => {
    let m = s.masters[0]!;
    for (const x of s.masters) if (x.readyAt < a.seenAt) m = x;
    return m.mode;
  };
  const verdict = verify({ acks, fails: s.client.fails, stored, received, modeOfAck });
  return { seed: s.o.seed, cycles: s.cycles, firstStartMs: s.masters[0]!.readyMs, verdict, failedSends: s.client.fails.length };
}
