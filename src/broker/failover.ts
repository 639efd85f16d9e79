/**
 * Automatic failover of one broker replica (broker.failover.*): joins the group's
 * election on etcd (src/failover/election.ts) and turns its outcome into role changes of the
 * running broker, through the `FailoverRoles` its ReplicaRole gives it (./replica-role.ts):
 *
 *   start        the broker runs as a replica with no master (read-only store, nothing streamed),
 *                registered with the name servers under its replica id once etcd assigned one;
 *   elected      `promote(epoch)`: the store takes writes, the HA service streams, delayed delivery
 *                and transaction check-backs run, the broker registers as brokerId 0; the epoch
 *                and the offset it starts at are appended to the epoch file;
 *   other master `follow(master)`: read-only store, replicate from the master's HA address,
 *                copy its metadata, register under the replica id.
 *
 * Fencing: the store asks `fence()` before every put (StoreReplication.fence); a master whose
 * lease renewal is overdue is refused with SERVICE_NOT_AVAILABLE, which Java and Go producers
 * retry on another broker.
 *
 * etcd unreachable at start, before this replica has its id: retried every lease period, logged
 * once; the broker serves reads meanwhile.
 */
import type { Clock, TimerHandle } from "../common/clock.ts";
import type { Logger } from "../common/log.ts";
import { assert } from "../common/assert.ts";
import type { Config } from "../config/schema.ts";
import { EtcdHttpClient, EtcdUnavailableError, type EtcdKv } from "../failover/etcd.ts";
import { Election, type ElectionRole, type MasterRecord, type MasterRole } from "../failover/election.ts";
import { appendEpoch, assignReplicaId, readEpochs, writeEpochs, type EpochEntry } from "../failover/replica-files.ts";
import { cutPoint, epochCacheOf, type EpochEntryCache } from "./replica-epochs.ts";
import { MASTER_ID } from "../protocol/route.ts";

export type { EpochEntryCache } from "./replica-epochs.ts";

/** What failover changes in the running broker (ReplicaRole implements it, ./replica-role.ts). */
export interface FailoverRoles {
  /** Now the master of `epoch`, replicating as `role`. */
  promote(epoch: number, role: MasterRole): void;
  /**
   * Now a replica of `master` at `epoch`. A new epoch of the same master must reconnect too: the
   * replica's epoch file learns epochs only when it reconciles (reconcile, on each connection).
   */
  follow(master: { addr: string; haAddr: string; epoch: number }): void;
  /** The brokerId to register with: 0 as master, the replica id otherwise. */
  registerAs(brokerId: number): void;
  /** Where this replica's CommitLog ends (whole records). */
  confirmedOffset(): number;
  /** GET_BROKER_EPOCH_CACHE at a broker: its EpochEntryCache, or why not. */
  fetchEpochCache(addr: string): Promise<EpochEntryCache | { error: string }>;
  /**
   * Cuts this replica's CommitLog at `offset` (what is past it is kept aside): "diverged", past the
   * point it shares with the master (bytes the group never acknowledged); "damaged", at a range its
   * own recovery found torn (the master's copy is fetched again); "unsynced", what its crash left
   * unflushed (recoveredUnsynced; not kept: the master sends it again).
   */
  truncate(offset: number, why: "diverged" | "damaged" | "unsynced"): void;
  /**
   * Where the first range this start's crash recovery found damaged (torn, never flushed) begins,
   * or undefined: recovery keeps the valid records past such a range, but a replica must not (its
   * confirmed offset would count bytes it cannot serve).
   */
  recoveredDamage(): number | undefined;
  /**
   * After a crash: where the log stops being known flushed (RecoveryReport.unsyncedFrom), or
   * undefined. The first reconcile cuts there too (./replica-epochs.ts): the master sends it whole.
   */
  recoveredUnsynced(): number | undefined;
}

export interface FailoverStatus {
  replicaId: number | undefined;
  role: ElectionRole;
  epoch: number;
  /** This replica may acknowledge writes now (master with a fresh lease). */
  writable: boolean;
  master: MasterRecord | undefined;
  epochs: EpochEntry[];
  /** As master: the in-sync replicas (this one included) and the role it replicates as. */
  syncStateSet: readonly number[];
  masterRole: MasterRole | undefined;
}

export interface BrokerFailoverOptions {
  broker: Config["broker"];
  storeDir: string;
  /** This replica's remoting and HA addresses, as clients and replicas reach them. */
  addr: string;
  haAddr: string;
  clock: Clock;
  log: Logger;
  roles: FailoverRoles;
  /** broker.haSlaveTimeoutMs as it is now (a live key). */
  inSyncWithinMs: () => number;
  /** Default: etcd's JSON gateway at broker.failover.etcd. */
  kv?: EtcdKv;
}

export class BrokerFailover {
  readonly #o: BrokerFailoverOptions;
  readonly #kv: EtcdKv;
  readonly #prefix: string;
  #replicaId: number | undefined;
  #election: Election | undefined;
  /** The role this replica took when it was last elected (MasterRole in ../failover/election.ts). */
  #masterRole: MasterRole | undefined;
  #retry: TimerHandle | undefined;
  #stopped = false;
  #waitLogged = false;
  /** The first reconcile of this start has taken the crash's unflushed tail into account. */
  #unsyncedCut = false;

  constructor(o: BrokerFailoverOptions) {
    this.#o = o;
    const b = o.broker;
    this.#kv = o.kv ?? new EtcdHttpClient({ endpoints: b["failover.etcd"], requestTimeoutMs: Math.max(500, Math.floor(b["failover.leaseTtlMs"] / 3)) });
    this.#prefix = `/rocketbun/${b.brokerClusterName}/${b.brokerName}/`;
    readEpochs(o.storeDir); // a damaged epoch file stops the start here, not at the first election
  }

  /** Gets the replica id (from the store dir, or etcd), then joins the election. Never throws. */
  start(): void {
    void this.#join();
  }

  async #join(): Promise<void> {
    const o = this.#o;
    const damage = this.#replicaId === undefined ? o.roles.recoveredDamage() : undefined;
    if (damage !== undefined && damage < o.roles.confirmedOffset()) {
      // Before the election: with a hole in its log this replica's confirmed offset would admit it
      // to the sync state set, and it could be elected without the messages the hole held.
      o.log.warn(`failover: recovery kept a damaged range at ${damage} (torn in a crash): cut there, the master's copy is fetched again`);
      o.roles.truncate(damage, "damaged");
    }
    try {
      this.#replicaId = await assignReplicaId(this.#kv, this.#prefix, o.storeDir);
    } catch (e) {
      if (this.#stopped) return;
      if (!(e instanceof EtcdUnavailableError)) o.log.error(`failover: cannot get a replica id: ${String(e)}`);
      else if (!this.#waitLogged) o.log.warn(`failover: etcd unreachable, waiting for it to get this replica's id: ${e.message}`);
      this.#waitLogged = true;
      this.#retry = o.clock.setTimeout(() => void this.#join(), o.broker["failover.leaseTtlMs"]);
      return;
    }
    if (this.#stopped) return;
    const id = this.#replicaId;
    // brokerId, not brokerRole: a slave's brokerRole may name the role it takes when elected.
    const startsAsMaster = o.broker.brokerId === MASTER_ID;
    o.log.info(`failover: replica ${id} of ${o.broker.brokerName} (starting as ${startsAsMaster ? "master" : "replica"})`);
    o.roles.registerAs(id);
    this.#election = new Election(
      this.#kv,
      o.clock,
      o.log,
      {
        cluster: o.broker.brokerClusterName,
        brokerName: o.broker.brokerName,
        brokerId: id,
        addr: o.addr,
        haAddr: o.haAddr,
        startsAsMaster,
        ...(o.broker.brokerRole !== "SLAVE" ? { masterRole: o.broker.brokerRole } : {}),
      },
      {
        leaseTtlMs: o.broker["failover.leaseTtlMs"],
        allowUncleanElection: o.broker["failover.allowUncleanElection"],
        inSyncWithinMs: o.inSyncWithinMs,
      },
      { confirmedOffset: () => o.roles.confirmedOffset() },
      { becameMaster: (epoch, start, role) => this.#becameMaster(epoch, start, role), follow: (m) => this.#follow(m) },
    );
    this.#election.start();
  }

  #becameMaster(epoch: number, startOffset: number, masterRole: MasterRole | undefined): void {
    // The election calls this right after it took the role for `epoch`: the broker promotes only
    // for the epoch the election holds, so the epoch file and the HA stream name the same one.
    assert(
      this.#election?.role === "master" && this.#election.epoch === epoch,
      "promoted for epoch {} while the election is {} at epoch {}",
      epoch,
      this.#election?.role,
      this.#election?.epoch,
    );
    appendEpoch(this.#o.storeDir, { epoch, startOffset });
    // No role known (every replica configured SLAVE, first epoch): synchronous when the group
    // asks for more than one in-sync replica.
    this.#masterRole = masterRole ?? (this.#o.broker["failover.minInSyncReplicas"] >= 2 ? "SYNC_MASTER" : "ASYNC_MASTER");
    this.#o.roles.promote(epoch, this.#masterRole);
    this.#o.roles.registerAs(0);
  }

  #follow(master: MasterRecord): void {
    // The election steps down before it follows another master: never a master and a follower at once.
    assert(this.#election?.role === "replica", "following replica {} at epoch {} while master", master.brokerId, master.epoch);
    this.#o.roles.follow({ addr: master.addr, haAddr: master.haAddr, epoch: master.epoch });
    if (this.#replicaId !== undefined) this.#o.roles.registerAs(this.#replicaId);
  }

  /** GET_BROKER_EPOCH_CACHE: this replica's epochs and where its log ends. */
  epochCache(): EpochEntryCache {
    const b = this.#o.broker;
    const brokerId = this.#election?.role === "master" ? 0 : (this.#replicaId ?? -1);
    return epochCacheOf(this.#o.storeDir, { clusterName: b.brokerClusterName, brokerName: b.brokerName, brokerId }, this.#o.roles.confirmedOffset());
  }

  /**
   * Before replicating from `masterAddr` (HAClient.beforeConnect): refuse a master of an older
   * epoch than the group's, cut this log where it parts from the master's (point 4 of the issue:
   * bytes the group never acknowledged, kept aside in store/truncated/), and take the master's
   * epoch history. A reason refuses this connection attempt.
   */
  async reconcile(masterAddr: string | undefined): Promise<string | null> {
    if (masterAddr === undefined) return "no master known yet";
    const cache = await this.#o.roles.fetchEpochCache(masterAddr);
    if ("error" in cache) return `its epochs could not be read: ${cache.error}`;
    // Only a master's stream may be taken: a replica (say a restarted master whose old lease still
    // names it) would later be elected with this connection open, and its new epoch's bytes would
    // arrive here with no entry in this replica's epoch file — the next reconcile would cut them.
    if (cache.brokerId !== MASTER_ID) return `${masterAddr} is not master (brokerId ${cache.brokerId})`;
    const remote = cache.epochList.map((e) => ({ epoch: e.epoch, startOffset: e.startOffset }));
    const masterEpoch = remote.at(-1)?.epoch ?? 0;
    const known = this.#election?.epoch ?? 0;
    if (masterEpoch < known) return `${masterAddr} is master of epoch ${masterEpoch}, the group is at epoch ${known}`;
    const dir = this.#o.storeDir;
    const localMax = this.#o.roles.confirmedOffset();
    // Once per start: what a crash left unflushed is cut at the first master met (it has it whole).
    const unsynced = this.#unsyncedCut ? undefined : this.#o.roles.recoveredUnsynced();
    this.#unsyncedCut = true;
    // Two cuts: what the group never had (kept in truncated/), then what this replica's crash left
    // unflushed (dropped: the master holds it, and sends it again).
    const point = cutPoint(dir, localMax, cache);
    if (point < localMax) this.#o.roles.truncate(point, "diverged");
    if (unsynced !== undefined && unsynced < point) {
      this.#o.log.warn(`failover: the log past ${unsynced} was not flushed before the crash; cut there, the master sends it again`);
      this.#o.roles.truncate(unsynced, "unsynced");
    }
    // A replica's store takes no puts (read-only while it follows), so the cuts above are the only
    // change: the log the stream continues ends at or below the point it shares with the master.
    assert(
      this.#o.roles.confirmedOffset() <= point,
      "replica log ends at {} after a cut at {} (was {})",
      this.#o.roles.confirmedOffset(),
      point,
      localMax,
    );
    writeEpochs(dir, remote);
    return null;
  }

  /** StoreReplication.fence (through ./replica-role.ts): why a write must be refused now, or null. */
  fence(): string | null {
    // Also between stepping down and the store turning read-only (a round awaits etcd in between).
    const e = this.#election;
    if (e?.writable()) {
      // A master counts itself in sync (the in-sync shortage below counts on it). Asked before
      // every put: a walk over a handful of ids, nothing allocated.
      assert(
        e.syncStateSet.includes(this.#replicaId ?? -1),
        "writable master of epoch {}: replica {} not in its own sync state set",
        e.epoch,
        this.#replicaId,
      );
      return this.#inSyncShortage();
    }
    if (e?.role !== "master") return `broker ${this.#o.broker.brokerName} is not the master of its group (automatic failover)`;
    return `broker ${this.#o.broker.brokerName} is fenced: its master lease (epoch ${e.epoch}) is not renewed, it acknowledges no write until it is`;
  }

  /**
   * SYNC_MASTER: a write is refused before it is stored while fewer than minInSyncReplicas
   * replicas (this master included) are in sync, as RocketMQ 5 refuses with
   * IN_SYNC_REPLICAS_NOT_ENOUGH. Checked with fence() on every put.
   */
  #inSyncShortage(): string | null {
    const b = this.#o.broker;
    if (this.#masterRole !== "SYNC_MASTER") return null;
    const have = this.#election?.syncStateSet.length ?? 0;
    const need = b["failover.minInSyncReplicas"];
    return have >= need ? null : `in-sync replicas not enough: ${have} in sync, broker.failover.minInSyncReplicas is ${need}`;
  }

  /**
   * SYNC_MASTER: how many replicas must acknowledge a write before it is answered: every other
   * member of the sync state set (any of them may be the next master), and never fewer than
   * minInSyncReplicas − 1.
   */
  acksNeeded(): number {
    const members = this.#election?.syncStateSet.length ?? 1;
    return Math.max(this.#o.broker["failover.minInSyncReplicas"] - 1, members - 1);
  }

  /** As master: its epoch, sent to each replica first on the HA stream; undefined otherwise. */
  streamEpoch(): number | undefined {
    const e = this.#election;
    return e?.role === "master" ? e.epoch : undefined;
  }

  /** As replica: the epoch of the master it follows; the HA stream of an older one is refused. */
  followedEpoch(): number | undefined {
    const e = this.#election;
    return e?.role === "replica" ? e.master?.epoch : undefined;
  }

  /** This replica's id in its group (assigned by etcd; undefined until then). */
  get replicaId(): number | undefined {
    return this.#replicaId;
  }

  /**
   * SYNC_MASTER: whether an acknowledgement from replica `id` counts: a member of the sync state
   * set other than this master. A replica outside it may hold the write now but is not one the
   * next master is chosen from, so counting it could lose an acknowledged write to one failure
   * (found by test/sim/failover-sim.test.ts, seed 6). An HA connection that did not name itself
   * (an older replica) never counts.
   */
  countsAck(id: number | undefined): boolean {
    return id !== undefined && id !== this.#replicaId && (this.#election?.syncStateSet.includes(id) ?? false);
  }

  /** For GET_BROKER_RUNTIME_INFO (mqadmin brokerStatus). */
  summary(): { replicaId: number | undefined; role: ElectionRole; epoch: number; syncStateSet: readonly number[] } {
    const e = this.#election;
    return { replicaId: this.#replicaId, role: e?.role ?? "replica", epoch: e?.epoch ?? 0, syncStateSet: e?.role === "master" ? e.syncStateSet : [] };
  }

  status(): FailoverStatus {
    const e = this.#election;
    return {
      replicaId: this.#replicaId,
      role: e?.role ?? "replica",
      epoch: e?.epoch ?? 0,
      writable: e?.writable() ?? false,
      master: e?.master,
      epochs: readEpochs(this.#o.storeDir),
      syncStateSet: e?.role === "master" ? e.syncStateSet : [],
      masterRole: e?.role === "master" ? this.#masterRole : undefined,
    };
  }

  /** Leaves the election; a clean stop gives the lease back so another replica takes over at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retry !== undefined) this.#o.clock.clearTimeout(this.#retry);
    await this.#election?.stop(true);
  }
}
