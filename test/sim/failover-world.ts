/**
 * One simulated run of automatic failover (issue #17; docs/STORAGE.md §10.5): a broker group of
 * three replicas, each a MessageStore on its own directory of one in-memory disk (./disk.ts), an
 * HAService (always listening: any replica may be elected), an HAClient while it follows, and the
 * broker's own `BrokerFailover` (src/broker/failover.ts) driving a `FailoverRoles` built here the
 * way BrokerController builds its own (promote: writable store, HA streams, SYNC_MASTER waits for
 * `acksNeeded()`; follow: read-only store, slaves let go, an HA client whose `beforeConnect` is
 * `reconcile`; truncate: `MessageStore.truncateTail`). All on one MemoryEtcd
 * (src/failover/test-support.ts) and one simulated clock; HA links on ./net.ts;
 * GET_BROKER_EPOCH_CACHE as a request delivered on the two replicas' clocks (a paused or
 * unreachable replica does not answer, the caller times out). Every choice comes from one PRNG.
 *
 * Every replica is configured SYNC_MASTER (the role it takes when elected): see the report in
 * failover-sim.test.ts on replicas configured SLAVE. The `epochs` and `failover.json` files go
 * through node:fs (src/failover/replica-files.ts has no disk seam), so each replica keeps them in
 * a real temp dir; they are written atomically with fsync, so a crash keeps them whole, as here.
 *
 * Faults: producer sends to whichever replica believes it is master (now and then to any replica,
 * a stale route); crashes (the disk's crash model: unflushed bytes torn) and restarts after a
 * while; pauses (SIGSTOP: the replica's events wait, then run at once); a replica cut off from
 * the others' HA links and requests; a replica cut off from etcd; etcd down; link delays, splits
 * and drops. At most ONE replica is impaired at a time — from its fault until the fault ends, and
 * after a crash until its log holds every acknowledged message again — so every check below is a
 * guarantee the design gives against a single failure; two at once may lose acknowledged writes
 * by design. etcd outages are not counted: they stop elections, they destroy nothing.
 *
 * Invariants (checked after every step; the message names the seed and the step):
 *   F1  one master per epoch, and epochs only grow: every promotion has a new, higher epoch; at
 *       most one replica is writable at any time; a write is taken only by the replica etcd names
 *       master at its epoch (fencing: a paused or cut-off master takes nothing once it could be replaced);
 *   F2  every acknowledged message (its record's bytes at its offset) is in the log of every later
 *       master, checked at each promotion and at the end; an acknowledgement counted N replicas'
 *       acks, so N + 1 replicas hold it when the producer hears it. The one allowed loss: a message
 *       only the master held (SYNC_MASTER with the sync state set at the master alone, ASYNC_FLUSH)
 *       after that master crashed — counted, as minInSyncReplicas 1 allows;
 *   F3  a range a replica truncates holds no acknowledged message, and is kept whole in
 *       store/truncated/;
 *   F4  liveness: with every fault healed at the end, one master is elected and every replica's
 *       log becomes byte-identical to it;
 *   and from the HA simulation (./store-checks.ts): nothing torn is visible (I3), ConsumeQueues
 *   agree with the CommitLog (I4), no store halts its write path (I6).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BrokerFailover, type EpochEntryCache, type FailoverRoles } from "../../src/broker/failover.ts";
import { MessageStore, type MessageStoreOptions, type PutMessageRequest, type PutMessageResult, type StoreReplication } from "../../src/commitlog/index.ts";
import { parseHostAddress } from "../../src/common/message-record.ts";
import { defaultConfig, type Config } from "../../src/config/schema.ts";
import type { MasterRecord } from "../../src/failover/election.ts";
import { MemoryEtcd } from "../../src/failover/test-support.ts";
import { HAClient, HAService } from "../../src/ha/index.ts";
import type { FlushDiskType } from "../../src/protocol/broker-config.ts";
import { prng, type Rng } from "../harness/fuzz.ts";
import { SIM_EPOCH_MS, SimClock, type ClockView } from "../../src/common/sim-clock.ts";
import { MemDisk } from "./disk.ts";
import { NO_FAULTS, SimNet, type LinkFaults } from "./net.ts";
import { checkStoreQueues, equalRange, logBytes, paddingRanges } from "./store-checks.ts";
import { simStoreBase } from "./store-options.ts";
import { InvariantError, SimLogger } from "./world.ts";

export interface FailoverSimOptions {
  steps: number;
  trace?: boolean;
  /** Only the quiet end (no faults): a smoke run. */
  noFaults?: boolean;
}

export interface FailoverSimResult {
  seed: number;
  config: string;
  steps: number;
  simulatedMs: number;
  sent: number;
  acked: { replicated: number; alone: number };
  /** Promotions, and the group's epoch at the end. */
  elections: number;
  epoch: number;
  faults: { crashes: number; pauses: number; isolations: number; etcdCuts: number; etcdOutages: number };
  truncations: { count: number; bytes: number };
  /** F2's one allowed loss: acknowledged by a master alone, lost in its crash. */
  aloneLostInCrash: number;
  link: SimNet["stats"];
  end: number;
}

const REPLICAS = 3;
const HA_PORT = 10912;
const CLUSTER = "sim";
const BROKER = "broker-a";
/** GET_BROKER_EPOCH_CACHE's deadline (a request nobody answers). */
const REQUEST_TIMEOUT_MS = 1000;

interface Ack {
  id: number;
  phy: number;
  bytes: Uint8Array;
  epoch: number;
  by: number;
  /** Only the acknowledging master held it (no replica's ack was needed). */
  alone: boolean;
  /** Crash counters of the replicas when it was acknowledged (F2's excuse for `alone`). */
  crashesAtAck: number;
}

/** One incarnation of one replica (a restart is a new one). */
interface Replica {
  idx: number;
  host: string;
  clock: ClockView;
  store: MessageStore;
  ha: HAService;
  client: HAClient | null;
  failover: BrokerFailover;
  /** The master it follows (null: none, or it is master). */
  master: { addr: string; haAddr: string } | null;
  isMaster: boolean;
  /** SYNC_MASTER: acks needed by the put ending at an offset (read when the put is answered). */
  acksAt: Map<number, number>;
}

type Impairment = "crashed" | "recovering" | "paused" | "isolated" | "etcd-cut";

export async function runFailoverSimulation(seed: number, opts: FailoverSimOptions): Promise<FailoverSimResult> {
  const w = new FailoverWorld(seed, opts);
  try {
    return await w.run();
  } catch (e) {
    w.dumpTrace();
    throw e;
  } finally {
    w.cleanup();
  }
}

class FailoverWorld {
  readonly seed: number;
  readonly opts: FailoverSimOptions;
  readonly rng: Rng;
  readonly sim = new SimClock();
  readonly trace: string[] | null;
  readonly disk: MemDisk;
  readonly net: SimNet;
  readonly etcd: MemoryEtcd;
  readonly etcdClock: ClockView;
  readonly fileDir = mkdtempSync(join(tmpdir(), "rocketbun-failover-sim-"));
  readonly replicas: (Replica | null)[] = [];
  readonly impaired = new Map<number, Impairment>();
  readonly crashes: number[] = new Array<number>(REPLICAS).fill(0);
  /** When each replica last crashed (an ack it sent may arrive after: TCP delivers what was in flight). */
  readonly crashedAt: number[] = new Array<number>(REPLICAS).fill(-Infinity);
  readonly acks: Ack[] = [];
  /** F1: who was promoted at each epoch. */
  readonly epochMaster = new Map<number, number>();
  maxEpoch = 0;
  /** Every truncation: which replica, and the range it cut. */
  readonly cuts: { replica: number; from: number; to: number }[] = [];
  step = 0;
  nextId = 0;
  etcdDown = false;
  readonly cfg: {
    segmentBytes: number;
    flush: FlushDiskType;
    minInSync: number;
    leaseTtlMs: number;
    haSlaveTimeoutMs: number;
    batchBytes: number;
    links: LinkFaults;
    pFault: number;
  };
  readonly config: string;
  readonly result: FailoverSimResult;

  constructor(seed: number, opts: FailoverSimOptions) {
    this.seed = seed;
    this.opts = opts;
    this.rng = prng(seed);
    this.trace = opts.trace ? [] : null;
    const rng = this.rng;
    this.disk = new MemDisk(rng, rng.int(0, 8));
    this.cfg = {
      segmentBytes: rng.pick([4096, 16384, 65536]),
      flush: rng.bool(0.8) ? "ASYNC_FLUSH" : "SYNC_FLUSH",
      minInSync: rng.pick([1, 2]),
      leaseTtlMs: rng.pick([2000, 3000]),
      haSlaveTimeoutMs: rng.pick([1000, 3000]),
      batchBytes: rng.pick([512, 4096, 32768]),
      links: { delayMaxMs: rng.int(0, 20), partial: rng.pick([0, 0.05]), drop: rng.pick([0, 0.002]) },
      pFault: rng.pick([0.01, 0.02, 0.04]),
    };
    this.config = JSON.stringify(this.cfg);
    this.net = new SimNet(this.sim, rng, this.cfg.links);
    this.etcdClock = this.sim.view();
    this.etcd = new MemoryEtcd(this.etcdClock);
    this.result = {
      seed,
      config: this.config,
      steps: opts.steps,
      simulatedMs: 0,
      sent: 0,
      acked: { replicated: 0, alone: 0 },
      elections: 0,
      epoch: 0,
      faults: { crashes: 0, pauses: 0, isolations: 0, etcdCuts: 0, etcdOutages: 0 },
      truncations: { count: 0, bytes: 0 },
      aloneLostInCrash: 0,
      link: this.net.stats,
      end: 0,
    };
  }

  note(m: string): void {
    this.trace?.push(`${this.sim.now - SIM_EPOCH_MS} ${m}`);
  }

  /** The first broken invariant: a check may run inside product code that catches errors (reconcile, a put). */
  failure: InvariantError | null = null;

  fail(what: string): never {
    this.failure ??= new InvariantError(`seed ${this.seed} step ${this.step} t=${this.sim.now - SIM_EPOCH_MS}ms: ${what}\nconfig: ${this.config}`);
    throw this.failure;
  }

  dumpTrace(): void {
    // SIM_TRACE_ALL=1: the whole trace, not only its end.
    const shown = this.trace?.slice(process.env.SIM_TRACE_ALL ? 0 : -120);
    if (shown) process.stderr.write(`failover sim: trace of seed ${this.seed} (${shown.length} events):\n${shown.join("\n")}\n`);
  }

  cleanup(): void {
    for (const r of this.replicas) if (r) r.clock.dead = true;
    this.etcdClock.dead = true;
    rmSync(this.fileDir, { recursive: true, force: true });
  }

  // ------------------------------------------------------------------ replicas

  brokerConfig(idx: number): Config["broker"] {
    return {
      ...defaultConfig("master").broker,
      brokerClusterName: CLUSTER,
      brokerName: BROKER,
      brokerId: idx,
      brokerRole: "SYNC_MASTER",
      haSlaveTimeoutMs: this.cfg.haSlaveTimeoutMs,
      "failover.enable": true,
      "failover.etcd": ["etcd:2379"],
      "failover.leaseTtlMs": this.cfg.leaseTtlMs,
      "failover.minInSyncReplicas": this.cfg.minInSync,
      "failover.allowUncleanElection": false,
    };
  }

  storeOptions(idx: number, clock: ClockView): MessageStoreOptions {
    return {
      ...simStoreBase({ dir: `/r${idx}`, segmentBytes: this.cfg.segmentBytes, flushDiskType: this.cfg.flush, storeHost: `10.0.0.${idx + 1}:10911` }),
      flushIntervalMs: 100,
      consumeQueueUnitsPerFile: 32,
      checkpointIntervalMs: 200,
      flushConsumeQueueLeastPages: 0,
      flushConsumeQueueThoroughIntervalMs: 5000,
      flushCommitLogLeastPages: 0,
      flushCommitLogThoroughIntervalMs: 2000,
      // Every replica starts read-only: the election makes one master.
      readOnly: true,
      clock,
      disk: this.disk.view(clock),
      log: this.logger(`store-r${idx}`),
    };
  }

  logger(name: string): SimLogger {
    return new SimLogger(name, this.trace, () => this.sim.now - SIM_EPOCH_MS);
  }

  start(idx: number): Replica {
    const clock = this.sim.view();
    const host = `r${idx}`;
    // What the broker's ReplicaRole is to its store (src/broker/replica-role.ts); `r` is made below, read late.
    const replication: StoreReplication = {
      appended: () => (r.isMaster ? r.ha.notifyNewData() : undefined),
      waitReplicas: (offset) => (r.isMaster ? this.waitReplicas(r, offset) : undefined),
      fence: () => this.fence(r),
    };
    const store = MessageStore.open({ ...this.storeOptions(idx, clock), replication });
    const ha = new HAService({
      host,
      port: HA_PORT,
      batchBytes: this.cfg.batchBytes,
      heartbeatMs: 500,
      idleTimeoutMs: 3000,
      slaveFallbehindMaxBytes: 1 << 30,
      log: this.logger(`ha-${host}`),
      transport: this.net.endpoint(host, clock),
      clock,
      // The failover below is made after the service (it needs the replica): read it late.
      epoch: () => (rep as Partial<Replica>).failover?.streamEpoch(),
    });
    ha.start();
    ha.attachStore(store);
    const rep = { idx, host, clock, store, ha, client: null, master: null, isMaster: false, acksAt: new Map() } as Omit<Replica, "failover">;
    const failover = new BrokerFailover({
      broker: this.brokerConfig(idx),
      storeDir: join(this.fileDir, host),
      addr: `${host}:10911`,
      haAddr: `${host}:${HA_PORT}`,
      clock,
      log: this.logger(`failover-${host}`),
      roles: this.roles(rep as Replica),
      inSyncWithinMs: () => this.cfg.haSlaveTimeoutMs,
      kv: this.etcd.client(host),
    });
    const r = Object.assign(rep, { failover }) as Replica;
    failover.start();
    this.replicas[idx] = r;
    this.note(`${host} up, log end ${store.maxPhyOffset}: ${JSON.stringify(store.recovery?.problems ?? [])}`);
    return r;
  }

  /** What the broker does on each outcome of the election (src/broker/replica-role.ts #promote, #follow). */
  roles(r: Replica): FailoverRoles {
    return {
      promote: (epoch) => this.promote(r, epoch),
      follow: (master) => this.follow(r, master),
      registerAs: () => {},
      confirmedOffset: () => r.store.maxPhyOffset,
      fetchEpochCache: (addr) => this.fetchEpochCache(r, addr),
      truncate: (offset, why) => this.truncate(r, offset, why),
      recoveredDamage: () => (r.store.recovery?.abnormal ? r.store.recovery.corruptRanges[0]?.from : undefined),
      recoveredUnsynced: () => (r.store.recovery?.abnormal ? r.store.recovery.unsyncedFrom : undefined),
    };
  }

  promote(r: Replica, epoch: number): void {
    this.note(`r${r.idx} promoted at epoch ${epoch}, log end ${r.store.maxPhyOffset}`);
    // F1: one master per epoch, epochs only grow.
    const had = this.epochMaster.get(epoch);
    if (had !== undefined && had !== r.idx) this.fail(`F1: r${r.idx} and r${had} were both elected master of epoch ${epoch}`);
    if (epoch <= this.maxEpoch) this.fail(`F1: r${r.idx} elected at epoch ${epoch}, not above the last election's ${this.maxEpoch}`);
    this.epochMaster.set(epoch, r.idx);
    this.maxEpoch = epoch;
    this.result.elections++;
    r.client?.stop();
    r.client = null;
    r.ha.dropSlaves();
    r.master = null;
    r.isMaster = true;
    r.store.setReadOnly(false);
    this.checkAcksOn(r, `master of epoch ${epoch}`);
  }

  /** A master's put waits for the acks the sync state set needs (the store's waitReplicas while r is master). */
  waitReplicas(r: Replica, offset: number): Promise<"OK" | "TIMEOUT" | "NO_SLAVE"> {
    const acks = r.failover.acksNeeded();
    r.acksAt.set(offset, acks);
    return acks === 0 ? Promise.resolve("OK") : r.ha.waitForAck(offset, this.cfg.haSlaveTimeoutMs, acks, (id) => r.failover.countsAck(id));
  }

  follow(r: Replica, master: MasterRecord | { addr: string; haAddr: string }): void {
    const wasMaster = r.isMaster;
    r.isMaster = false;
    r.store.setReadOnly(true);
    if (wasMaster) r.ha.dropSlaves();
    const changed = master.addr !== r.master?.addr || master.haAddr !== r.master.haAddr;
    r.master = { addr: master.addr, haAddr: master.haAddr };
    this.note(`r${r.idx} follows ${master.addr}${wasMaster ? " (stepped down)" : ""}`);
    if (!changed && r.client) return;
    r.client?.stop();
    const client = new HAClient({
      store: r.store,
      masterHaAddr: () => r.master?.haAddr,
      reportIntervalMs: 200,
      idleTimeoutMs: 3000,
      reconnectMs: 200,
      connectTimeoutMs: 1000,
      log: this.logger(`ha-client-${r.host}`),
      clock: r.clock,
      transport: this.net.endpoint(r.host, r.clock),
      beforeConnect: () => r.failover.reconcile(r.master?.addr),
      replicaId: () => r.failover.replicaId,
      expectedEpoch: () => r.failover.followedEpoch(),
    });
    r.client = client;
    client.start();
  }

  /** GET_BROKER_EPOCH_CACHE from `from` to the replica at `addr`, over the simulated network. */
  fetchEpochCache(from: Replica, addr: string): Promise<EpochEntryCache | { error: string }> {
    return new Promise((resolve) => {
      let done = false;
      const finish = (v: EpochEntryCache | { error: string }) => {
        if (done) return;
        done = true;
        resolve(v);
      };
      from.clock.after(REQUEST_TIMEOUT_MS, () => finish({ error: `no answer from ${addr} within ${REQUEST_TIMEOUT_MS} ms` }));
      const to = this.replicas.find((x) => x !== null && `${x.host}:10911` === addr);
      const delay = () => this.rng.int(0, this.cfg.links.delayMaxMs);
      if (this.net.partitioned || this.net.isolated(from.host) || (to && this.net.isolated(to.host))) return;
      if (!to) return from.clock.after(delay(), () => finish({ error: `${addr}: connection refused` }));
      to.clock.after(delay(), () => {
        const cache = to.failover.epochCache();
        from.clock.after(delay(), () => finish(cache));
      });
    });
  }

  truncate(r: Replica, offset: number, why: "diverged" | "damaged" | "unsynced"): void {
    const before = logBytes(r.store);
    // F3: nothing acknowledged lies in a range cut as diverged. A damaged or unsynced range's cut
    // drops this replica's copies of messages the master still holds (F2 checks every later master has them).
    for (const a of why !== "diverged" ? [] : this.acks) {
      if (a.phy + a.bytes.length <= offset || a.phy + a.bytes.length > before.length) continue;
      if (equalRange(a.bytes, before.subarray(a.phy), 0, a.bytes.length) < 0) {
        this.fail(`F3: r${r.idx} truncates its log at ${offset} (end ${before.length}), cutting message ${a.id} at ${a.phy}, acknowledged by r${a.by} at epoch ${a.epoch}`);
      }
    }
    const cut = r.store.truncateTail(offset, why !== "unsynced");
    this.note(`r${r.idx} truncated at ${offset}: ${cut.bytes} bytes, ${cut.records} records`);
    this.result.truncations.count++;
    this.result.truncations.bytes += cut.bytes;
    this.cuts.push({ replica: r.idx, from: offset, to: before.length });
    if (why === "unsynced") {
      // Dropped, not kept: store/truncated/ holds only what the group never acknowledged (F3).
      if (cut.file !== null) this.fail(`F3: r${r.idx}'s unsynced cut at ${offset} was kept in ${cut.file}`);
      return;
    }
    const kept = cut.file ? this.disk.files.get(cut.file)?.data : undefined;
    if (!kept || equalRange(kept, before.subarray(offset), 0, before.length - offset) >= 0 || kept.length !== before.length - offset) {
      this.fail(`F3: the ${before.length - offset} bytes r${r.idx} cut at ${offset} are not kept whole in ${cut.file}`);
    }
  }

  /** The store's fence (StoreReplication.fence), with F1's check that a write taken is taken by the master etcd names. */
  fence(r: Replica): string | null {
    const why = r.failover.fence();
    if (why !== null) return why;
    const key = this.etcd.peek(`/rocketbun/${CLUSTER}/${BROKER}/master`);
    const m = key ? (JSON.parse(key.value) as MasterRecord) : undefined;
    const s = r.failover.summary();
    if (!m || m.addr !== `${r.host}:10911` || m.epoch !== s.epoch) {
      this.fail(`F1: r${r.idx} (epoch ${s.epoch}) takes a write while etcd names ${m ? `${m.addr} at epoch ${m.epoch}` : "no master"}`);
    }
    return null;
  }

  // ------------------------------------------------------------------ checks

  holds(r: Replica, a: Ack): boolean {
    const got = r.store.commitLog.read(a.phy, a.bytes.length);
    return got !== null && got !== undefined && got.length === a.bytes.length && equalRange(a.bytes, got, 0, a.bytes.length) < 0;
  }

  /** F2: every acknowledged message is in `r`'s log (it was just elected, or it is the last master). */
  checkAcksOn(r: Replica, what: string): void {
    for (let i = 0; i < this.acks.length; i++) {
      const a = this.acks[i]!;
      if (this.holds(r, a)) continue;
      const crashedSince = this.crashes[a.by]! > a.crashesAtAck;
      if (a.alone && this.cfg.flush === "ASYNC_FLUSH" && crashedSince) {
        // minInSyncReplicas 1 with the sync state set at the master alone: its crash may lose it.
        this.note(`message ${a.id} acknowledged by r${a.by} alone was lost in its crash`);
        this.result.aloneLostInCrash++;
        this.acks.splice(i--, 1);
        continue;
      }
      const holders = this.replicas.filter((x): x is Replica => x !== null && this.holds(x, a)).map((x) => `r${x.idx}`);
      this.fail(
        `F2: message ${a.id} at ${a.phy} (${a.bytes.length} bytes), acknowledged by r${a.by} at epoch ${a.epoch}` +
          `${a.alone ? " alone" : ""}, is not in the log of r${r.idx}, ${what} (log end ${r.store.maxPhyOffset}); ` +
          `held by [${holders.join(", ")}]; impaired now: ${JSON.stringify([...this.impaired])}`,
      );
    }
  }

  /** After every step: I6, F1 (one writable replica), and the end of a crashed replica's impairment. */
  checkStep(): void {
    if (this.failure) throw this.failure;
    let writable: number | undefined;
    for (const r of this.replicas) {
      if (!r) continue;
      if (r.store.halted) this.fail(`I6: r${r.idx}'s store halted its write path: ${r.store.halted}`);
      if (r.clock.paused) continue;
      if (r.failover.status().writable) {
        if (writable !== undefined) this.fail(`F1: r${writable} and r${r.idx} are both writable masters`);
        writable = r.idx;
      }
    }
    for (const [idx, why] of this.impaired) {
      const r = this.replicas[idx];
      if (why === "recovering" && r && this.acks.every((a) => this.holds(r, a))) {
        this.impaired.delete(idx);
        this.note(`r${idx} holds every acknowledged message again`);
      }
    }
    if (this.step % 40 === 0) for (const r of this.replicas) if (r) checkStoreQueues(r.store, `r${r.idx}`, (m) => this.fail(`I3/I4: ${m}`));
  }

  // ------------------------------------------------------------------ faults

  /** A replica fault may start only while no replica is impaired (one failure at a time). */
  canFault(): boolean {
    return this.impaired.size === 0;
  }

  live(): Replica[] {
    return this.replicas.filter((r): r is Replica => r !== null);
  }

  async crash(r: Replica): Promise<void> {
    this.result.faults.crashes++;
    this.crashes[r.idx]!++;
    this.crashedAt[r.idx] = this.sim.now;
    const end = r.store.maxPhyOffset;
    r.clock.dead = true;
    this.net.kill(r.clock, this.rng.bool());
    const torn = this.disk.crash(`/r${r.idx}`, this.rng);
    this.replicas[r.idx] = null;
    this.impaired.set(r.idx, "crashed");
    const downMs = this.rng.int(0, 3 * this.cfg.leaseTtlMs);
    this.note(`r${r.idx} crashed at log end ${end} (${torn.tornFiles} files torn), down ${downMs} ms`);
    this.sim.schedule(
      downMs,
      () => {
        const again = this.start(r.idx);
        checkStoreQueues(again.store, `r${r.idx} after recovery`, (m) => this.fail(`I3/I4: ${m}`));
        this.impaired.set(r.idx, "recovering");
      },
      null,
    );
  }

  pause(r: Replica): void {
    this.result.faults.pauses++;
    // Long enough, often, for a new election to happen meanwhile (the woken master must refuse).
    const ms = this.rng.int(100, 3 * this.cfg.leaseTtlMs);
    this.note(`r${r.idx} paused for ${ms} ms`);
    r.clock.pause();
    this.impaired.set(r.idx, "paused");
    this.sim.schedule(
      ms,
      () => {
        if (this.replicas[r.idx] !== r) return;
        this.note(`r${r.idx} resumes`);
        r.clock.resume();
        this.impaired.delete(r.idx);
      },
      null,
    );
  }

  /** Cut off from the other replicas (HA links and requests), or from etcd. */
  cutOff(r: Replica, from: "replicas" | "etcd"): void {
    const ms = this.rng.int(200, 4 * this.cfg.leaseTtlMs);
    this.note(`r${r.idx} cut off from ${from} for ${ms} ms`);
    if (from === "replicas") {
      this.result.faults.isolations++;
      this.net.isolate(r.host, true);
    } else {
      this.result.faults.etcdCuts++;
      this.etcd.partition(r.host, true);
    }
    this.impaired.set(r.idx, from === "replicas" ? "isolated" : "etcd-cut");
    this.sim.schedule(ms, () => this.heal(r.idx), null);
  }

  heal(idx: number): void {
    const why = this.impaired.get(idx);
    if (why === "isolated") this.net.isolate(`r${idx}`, false);
    else if (why === "etcd-cut") this.etcd.partition(`r${idx}`, false);
    else return;
    this.note(`r${idx} reachable again`);
    this.impaired.delete(idx);
  }

  etcdOutage(): void {
    if (this.etcdDown) return;
    this.result.faults.etcdOutages++;
    const ms = this.rng.int(200, 3 * this.cfg.leaseTtlMs);
    this.note(`etcd down for ${ms} ms`);
    this.etcdDown = true;
    this.etcd.setDown(true);
    this.sim.schedule(
      ms,
      () => {
        this.note("etcd up");
        this.etcdDown = false;
        this.etcd.setDown(false);
      },
      null,
    );
  }

  async fault(): Promise<void> {
    const rng = this.rng;
    if (rng.bool(0.15)) return this.etcdOutage();
    if (!this.canFault()) return;
    const live = this.live();
    if (live.length === 0) return;
    // The master more often: its failures are the ones failover is for.
    const masters = live.filter((r) => r.isMaster);
    const r = masters.length > 0 && rng.bool(0.6) ? rng.pick(masters) : rng.pick(live);
    const kind = rng.int(0, 3);
    if (kind === 0) await this.crash(r);
    else if (kind === 1) this.pause(r);
    else this.cutOff(r, kind === 2 ? "replicas" : "etcd");
  }

  // ------------------------------------------------------------------ workload

  /**
   * A producer's send to a replica that believes it is master (now and then to any replica).
   * `wait` false: a send whose answer nobody waits for (no acknowledgement to keep).
   */
  send(wait = true): void {
    const rng = this.rng;
    const live = this.live();
    const masters = live.filter((r) => r.isMaster);
    const pool = masters.length > 0 && rng.bool(0.9) ? masters : live;
    if (pool.length === 0) return;
    const r = rng.pick(pool);
    const n = rng.int(1, 3);
    const reqs: PutMessageRequest[] = [];
    for (let i = 0; i < n; i++) {
      const id = this.nextId++;
      const body = new Uint8Array(rng.int(1, 400));
      for (let k = 0; k < body.length; k++) body[k] = (id * 31 + k) & 0xff;
      reqs.push({
        topic: rng.pick(["TopicA", "TopicB"]),
        queueId: rng.int(0, 1),
        flag: 0,
        body,
        properties: `KEYS\u0001k${id}\u0002UNIQ_KEY\u0001u${id}`,
        sysFlag: 0,
        bornTimestamp: this.sim.now,
        bornHost: parseHostAddress("10.0.0.9:50000"),
        reconsumeTimes: 0,
        preparedTransactionOffset: 0,
        waitStoreMsgOK: wait,
      });
    }
    this.result.sent += n;
    const first = this.nextId - n;
    const batch = rng.bool(0.5);
    // The request reaches the broker through its socket: a paused broker reads it when it wakes.
    const sentAt = this.sim.now;
    r.clock.after(rng.int(0, 5), () => {
      const answered = (i: number, res: PutMessageResult) => {
        try {
          if (wait) this.answered(r, first + i, res, sentAt);
        } catch {
          // A broken invariant is kept in `failure`; the step's check throws it.
        }
      };
      if (batch) void r.store.putMessages(reqs).then((res) => answered(0, res));
      else reqs.forEach((q, i) => void r.store.putMessage(q).then((res) => answered(i, res)));
    });
  }

  /** The broker answered a put; the producer hears it if the process still lives. */
  answered(r: Replica, first: number, res: PutMessageResult, sentAt: number): void {
    if (res.status !== "PUT_OK") this.note(`put on r${r.idx}: ${res.status} ${res.remark ?? ""}`);
    if (r.clock.dead || res.status !== "PUT_OK") return;
    const last = res.appended.at(-1)!;
    const needed = r.acksAt.get(last.physicalOffset + last.size) ?? 0;
    const epoch = r.failover.summary().epoch;
    for (let i = 0; i < res.appended.length; i++) {
      const a = res.appended[i]!;
      const bytes = r.store.commitLog.read(a.physicalOffset, a.size);
      if (!bytes) return this.fail(`acknowledged message ${first + i} at ${a.physicalOffset} is not readable on r${r.idx}`);
      const ack: Ack = { id: first + i, phy: a.physicalOffset, bytes: bytes.slice(), epoch, by: r.idx, alone: needed === 0, crashesAtAck: this.crashes[r.idx]! };
      // F2: an answer after N replicas' acks means N + 1 replicas hold the message now — but for
      // a replica that acknowledged from its page cache and crashed since (the ack was in flight).
      const holders = this.live().filter((x) => this.holds(x, ack)).length;
      const crashedMeanwhile = this.crashedAt.filter((t) => t >= sentAt).length;
      if (holders + crashedMeanwhile < needed + 1) {
        this.fail(`F2: message ${ack.id} at ${ack.phy} was acknowledged by r${r.idx} after ${needed} replica acks, but only ${holders} replicas hold it`);
      }
      this.acks.push(ack);
      if (ack.alone) this.result.acked.alone++;
      else this.result.acked.replicated++;
    }
  }

  // ------------------------------------------------------------------ run

  async run(): Promise<FailoverSimResult> {
    const rng = this.rng;
    this.note(`config ${this.config}`);
    for (let i = 0; i < REPLICAS; i++) this.start(i);
    const steps = this.opts.noFaults ? 0 : this.opts.steps;
    for (this.step = 0; this.step < steps; this.step++) {
      const x = rng.next();
      if (x < 0.45) this.send();
      else if (x < 0.45 + this.cfg.pFault) await this.fault();
      else if (x < 0.95) await this.sim.advance(rng.int(1, 150));
      else await this.sim.advance(rng.int(0, 20));
      this.net.sweep();
      this.checkStep();
    }
    await this.quietEnd();
    return this.result;
  }

  /** F4: every fault healed; one master, every replica byte-identical to it. */
  async quietEnd(): Promise<void> {
    this.step = this.opts.steps;
    this.note("quiet end: faults off");
    this.net.faults = NO_FAULTS;
    // Scheduled heals and restarts run as time passes; pauses and cuts end now.
    for (const r of this.live()) {
      if (!r.clock.paused) continue;
      r.clock.resume();
      this.impaired.delete(r.idx);
    }
    for (const idx of [...this.impaired.keys()]) this.heal(idx);
    if (this.etcdDown) this.etcd.setDown(false);
    this.etcdDown = false;
    const settled = await this.sim.until(() => this.settled() !== undefined, 120_000, 50);
    if (!settled) this.fail(`F4: no single master with every replica caught up after 120 s of quiet: ${this.describe()}`);
    const m = this.settled()!;
    this.checkStep();
    this.checkAcksOn(m, "master at the end");
    for (const r of this.live()) checkStoreQueues(r.store, `r${r.idx} at the end`, (msg) => this.fail(`I3/I4: ${msg}`));
    this.result.simulatedMs = this.sim.now - SIM_EPOCH_MS;
    this.result.epoch = m.failover.summary().epoch;
    this.result.end = m.store.maxPhyOffset;
    for (const r of this.live()) {
      r.client?.stop();
      r.ha.stop();
      await this.shutdownStore(r.store);
    }
    if (this.trace && process.env.SIM_TRACE) for (const l of this.trace) process.stderr.write(l + "\n");
  }

  /** The master when the group has settled: one master etcd names, every replica live and byte-identical to it. */
  settled(): Replica | undefined {
    if (this.failure) throw this.failure;
    const live = this.live();
    if (live.length !== REPLICAS) return undefined;
    const masters = live.filter((r) => r.isMaster && r.failover.status().writable);
    if (masters.length !== 1) return undefined;
    const m = masters[0]!;
    const mb = logBytes(m.store);
    for (const r of live) {
      if (r === m) continue;
      if (r.store.maxPhyOffset !== mb.length || r.store.dispatchedOffset !== r.store.maxPhyOffset) return undefined;
      // BLANK padding is never read (as in the HA simulation's I1): a tear there is no difference.
      if (equalRange(mb, logBytes(r.store), 0, mb.length, [...paddingRanges(m.store), ...paddingRanges(r.store)]) >= 0) return undefined;
    }
    return m;
  }

  describe(): string {
    const m = this.live().find((r) => r.isMaster);
    const mb = m ? logBytes(m.store) : undefined;
    return this.replicas
      .map((r, i) => {
        if (!r) return `r${i}: down`;
        const diff = mb && r !== m ? equalRange(mb, logBytes(r.store), 0, Math.min(mb.length, r.store.maxPhyOffset)) : -1;
        return (
          `r${i}: ${r.isMaster ? "master" : "replica"} ${JSON.stringify(r.failover.summary())} writable ${r.failover.status().writable}` +
          ` end ${r.store.maxPhyOffset} dispatched ${r.store.dispatchedOffset}${diff >= 0 ? ` differs from the master at ${diff}` : ""}`
        );
      })
      .join("; ");
  }

  /** A store's shutdown waits for a checkpoint's fdatasync, which completes only as time passes (world.ts). */
  async shutdownStore(store: MessageStore): Promise<void> {
    let done = false;
    const stopping = store.shutdown().finally(() => {
      done = true;
    });
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!done) await this.sim.until(() => done, 60_000);
    await stopping;
  }
}

/** A crash that keeps none of a store's unflushed bytes (the longest loss the disk model allows). */
const LOSE_ALL_UNFLUSHED: Rng = { ...prng(0), int: (lo: number) => lo, bool: () => false };

export interface LostTailResult {
  /** Where the old master's log stood before its crash, and where its recovery left it. */
  masterEndBeforeCrash: number;
  masterRecoveredEnd: number;
  /** The replicas' log ends when the master crashed (they had its lost tail). */
  replicaEnds: number[];
  /** The epoch the old master won again, and the truncations that followed. */
  epoch: number;
  cuts: { replica: number; from: number; to: number }[];
  /** The group's log end once every replica is byte-identical to the master. */
  end: number;
}

/**
 * The HA simulation's open "lost tail" class (test/sim/sim.test.ts, seeds 17 and 3203262370),
 * deterministically, in a failover group: the master's replicas hold records the master has not
 * flushed; it crashes and loses them; the replicas cannot reach etcd, so the restarted master is
 * elected again (epoch 2) with the shorter log and writes new records over that offset range.
 * When the replicas come back they compare epochs, cut the tail the master lost (kept in
 * store/truncated/) and end byte-identical to the master — F1–F4 checked throughout.
 */
export async function runLostTailScenario(seed: number): Promise<LostTailResult> {
  const w = new FailoverWorld(seed, { steps: 0, trace: true });
  try {
    return await lostTail(w);
  } catch (e) {
    w.dumpTrace();
    throw e;
  } finally {
    w.cleanup();
  }
}

async function lostTail(w: FailoverWorld): Promise<LostTailResult> {
  // The old master writes alone in its new epoch, and its tail is in its page cache only.
  w.cfg.minInSync = 1;
  w.cfg.flush = "ASYNC_FLUSH";
  w.net.faults = NO_FAULTS;
  for (let i = 0; i < REPLICAS; i++) w.start(i);
  const master = (): Replica | undefined => w.live().find((r) => r.isMaster && r.failover.status().writable);
  const caughtUp = () => w.live().every((r) => r.store.maxPhyOffset === master()?.store.maxPhyOffset);
  const until = async (what: string, cond: () => boolean) => {
    if (!(await w.sim.until(() => (w.checkStep(), cond()), 60_000))) w.fail(`scenario: ${what} did not happen`);
  };
  const full = (m: Replica | undefined) => m?.failover.summary().syncStateSet.length === REPLICAS && m.ha.status().length === REPLICAS - 1;
  await until("the first election, both replicas in sync and connected", () => full(master()));
  const p = master()!;
  for (let i = 0; i < 20; i++) w.send();
  await until("replication of the first sends", () => w.acks.length > 0 && caughtUp());
  // Now records the master holds only in its page cache, which both replicas copy at once.
  await until("a flush of everything so far", () => p.store.commitLog.flushedOffset === p.store.maxPhyOffset);
  const others = w.live().filter((r) => r !== p);
  for (const r of others) w.etcd.partition(r.host, true);
  const flushed = p.store.maxPhyOffset;
  // Sent without waiting (as a oneway send): the group never acknowledged these.
  for (let i = 0; i < 6; i++) w.send(false);
  await until("the replicas taking the unflushed tail", () => p.store.maxPhyOffset > flushed && caughtUp());
  const masterEndBeforeCrash = p.store.maxPhyOffset;
  const replicaEnds = others.map((r) => r.store.maxPhyOffset);
  w.crashes[p.idx]!++;
  p.clock.dead = true;
  w.net.kill(p.clock, true);
  w.disk.crash(`/r${p.idx}`, LOSE_ALL_UNFLUSHED);
  w.replicas[p.idx] = null;
  const again = w.start(p.idx);
  const masterRecoveredEnd = again.store.maxPhyOffset;
  if (masterRecoveredEnd >= masterEndBeforeCrash) w.fail(`scenario: the crash lost nothing (recovered ${masterRecoveredEnd})`);
  await until("the restarted master's election", () => master() === again);
  const epoch = again.failover.summary().epoch;
  for (let i = 0; i < 200 && again.store.maxPhyOffset <= masterEndBeforeCrash; i++) {
    w.send();
    await w.sim.advance(20);
    w.checkStep();
  }
  if (again.store.maxPhyOffset <= masterEndBeforeCrash) w.fail("scenario: no new records over the lost tail");
  for (const r of others) w.etcd.partition(r.host, false);
  await until("every replica byte-identical to the master", () => w.settled() !== undefined);
  w.checkAcksOn(again, "master at the end");
  for (const r of w.live()) checkStoreQueues(r.store, `r${r.idx} at the end`, (m) => w.fail(`I3/I4: ${m}`));
  return { masterEndBeforeCrash, masterRecoveredEnd, replicaEnds, epoch, cuts: w.cuts, end: again.store.maxPhyOffset };
}
