/**
 * One replica's part in electing its broker group's master on etcd (docs/RELIABILITY.md §6): the master holds a
 * lease on the group's master key; when the key goes (the lease lapsed), the in-sync replica with
 * the highest confirmed offset claims it in a transaction that also bumps the group's epoch.
 *
 * Keys, under `/rocketbun/<cluster>/<brokerName>/` (values are JSON):
 *   master            {brokerId, addr, haAddr, epoch}          on the master's lease: present while it lives
 *   epoch             {epoch, brokerId, startOffset}           the last election: who won, and where its log
 *                                                              stood (the start of its epoch)
 *   syncStateSet      {epoch, members: brokerId[]}             the in-sync replicas, changed by the master
 *                                                              with compare-and-set (mod revision + epoch)
 *   replicas/<id>     {brokerId, addr, haAddr, confirmedOffset, epoch}   on each replica's own lease,
 *                                                              refreshed every tick: who is alive, how far
 *
 * An election (the master key is absent):
 *   - candidates are the live replicas (a replicas/<id> key) in the sync state set, or every live
 *     replica with allowUncleanElection; none → no election (logged once), the group waits;
 *   - the preferred candidate is the one with the highest confirmedOffset (ties: the lowest
 *     brokerId); it claims at once, any other candidate only when the key has stayed absent for
 *     CLAIM_GRACE_TICKS ticks (the preferred one may have died too);
 *   - the claim is one transaction: master absent AND epoch unchanged since read → master = me (on
 *     my lease), epoch = old + 1 with my confirmed offset as its start, syncStateSet = {new epoch, [me]}
 *     (the others rejoin as they catch up, as in RocketMQ 5's controller). Two claims cannot both
 *     succeed, so one epoch has one master.
 * A cold start (no epoch key yet) is claimed by the replica that starts as master (brokerId 0 /
 * brokerRole *_MASTER); slaves wait for it unless it never comes (the grace again).
 *
 * The sync state set, kept by the master each round from the replicas' published offsets: a
 * replica is in sync when its confirmed offset has reached where the master's own log stood
 * inSyncWithinMs (plus one round, the age of a publication) ago — all times on the master's clock.
 * A change is written only while the master key still names this master at its epoch, and only
 * over the set it read (compare-and-set on both), so a deposed master cannot rewrite it.
 *
 * Fencing: `writable(now)` is true only for the master, and only until its last successful renewal
 * plus the lease TTL minus a margin of a third of it — measured from when the renewal was SENT, so
 * etcd's own expiry is later still. The send path asks it before acknowledging, so a master that
 * cannot renew (etcd unreachable, partitioned, or the process paused by SIGSTOP and woken after a
 * new election) acknowledges nothing more even before any timer of its own has run. It keeps the
 * master role while etcd cannot be reached (no election is possible then, so nothing flaps) and
 * steps down only when etcd says its lease is gone or another replica holds the key.
 */
import type { Clock, TimerHandle } from "../common/clock.ts";
import type { Logger } from "../common/log.ts";
import { assert } from "../common/assert.ts";
import { EtcdUnavailableError, type EtcdKv, type KeyValue, type LeaseId } from "./etcd.ts";

export const CLAIM_GRACE_TICKS = 3;

export interface ReplicaIdentity {
  cluster: string;
  brokerName: string;
  brokerId: number;
  /** Remoting address (host:port) clients and replicas use. */
  addr: string;
  /** HA address of this replica when it is master. */
  haAddr: string;
  /** Started as the master (claims a cold start without waiting). */
  startsAsMaster: boolean;
  /** Its configured master role (undefined: configured SLAVE); see MasterRole. */
  masterRole?: MasterRole;
}

/**
 * How the group's master replicates: recorded with each epoch, so a replica configured SLAVE
 * that wins takes the role the group's masters had (a SYNC_MASTER group stays synchronous after
 * a failover), and a replica configured with a master role keeps its own.
 */
export type MasterRole = "SYNC_MASTER" | "ASYNC_MASTER";

export interface ElectionOptions {
  leaseTtlMs: number;
  allowUncleanElection: boolean;
  /** A replica more than this behind the master's log leaves the sync state set (broker.haSlaveTimeoutMs; read each round). */
  inSyncWithinMs: () => number;
}

/** What the election needs of the replica's store. */
export interface ReplicaProgress {
  /** The offset up to which this replica's CommitLog holds whole records. */
  confirmedOffset(): number;
}

export interface MasterRecord {
  brokerId: number;
  addr: string;
  haAddr: string;
  epoch: number;
}
export interface EpochRecord {
  epoch: number;
  brokerId: number;
  startOffset: number;
  masterRole?: MasterRole;
}
export interface SyncStateSet {
  epoch: number;
  members: number[];
}
export interface ReplicaRecord {
  brokerId: number;
  addr: string;
  haAddr: string;
  confirmedOffset: number;
  epoch: number;
}

/** How the broker follows the election's outcome. */
export interface ElectionListener {
  /**
   * This replica won `epoch`; its log stood at `startOffset`. `masterRole`: its own configured
   * one, else the previous epoch's (undefined: neither is known).
   */
  becameMaster(epoch: number, startOffset: number, masterRole: MasterRole | undefined): void;
  /** Another replica is master (also after this one stepped down). */
  follow(master: MasterRecord): void;
}

export type ElectionRole = "master" | "replica";

function parse<T>(kv: KeyValue | undefined): T | undefined {
  if (kv === undefined) return undefined;
  try {
    return JSON.parse(kv.value) as T;
  } catch {
    return undefined;
  }
}

export class Election {
  readonly #kv: EtcdKv;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #me: ReplicaIdentity;
  readonly #opts: ElectionOptions;
  readonly #progress: ReplicaProgress;
  readonly #listener: ElectionListener;
  readonly #prefix: string;
  #lease: LeaseId | undefined;
  /** Clock time the last successful renewal was sent. */
  #renewedAt = -Infinity;
  #role: ElectionRole = "replica";
  #epoch = 0;
  #master: MasterRecord | undefined;
  #absentTicks = 0;
  #timer: TimerHandle | undefined;
  #ticking = false;
  #unreachableLogged = false;
  #noCandidateLogged = false;
  #stopped = false;
  /** Master: the sync state set as last read or written (itself alone at the start of its epoch). */
  #syncMembers: number[] = [];
  /** Master: its own log end at past rounds, oldest first: [clock time, offset]. */
  #history: [number, number][] = [];

  constructor(kv: EtcdKv, clock: Clock, log: Logger, me: ReplicaIdentity, opts: ElectionOptions, progress: ReplicaProgress, listener: ElectionListener) {
    this.#kv = kv;
    this.#clock = clock;
    this.#log = log;
    this.#me = me;
    this.#opts = opts;
    this.#progress = progress;
    this.#listener = listener;
    this.#prefix = `/rocketbun/${me.cluster}/${me.brokerName}/`;
  }

  get role(): ElectionRole {
    return this.#role;
  }

  get epoch(): number {
    return this.#epoch;
  }

  /** The master this replica knows of (itself when master). */
  get master(): MasterRecord | undefined {
    return this.#master;
  }

  /** Master: the replicas in sync (itself included), as last agreed with etcd. */
  get syncStateSet(): readonly number[] {
    return this.#syncMembers;
  }

  /** The send path's question: may a write be acknowledged now? (fencing, at the top of this file) */
  writable(now = this.#clock.now()): boolean {
    if (this.#role !== "master") return false;
    // The master role is taken only with the claim that names this replica at its epoch (#claim),
    // and left whenever etcd names another one (#sawMaster): a master that acknowledges writes
    // holds the record of its own election. Asked on every put: compares only.
    assert(
      this.#master?.brokerId === this.#me.brokerId && this.#master.epoch === this.#epoch,
      "master of epoch {} holds the record of replica {} at epoch {}",
      this.#epoch,
      this.#master?.brokerId,
      this.#master?.epoch,
    );
    return now < this.#renewedAt + this.#opts.leaseTtlMs - this.#margin();
  }

  /** Renewals every third of the TTL; a renewal older than two thirds of it fences the master. */
  #margin(): number {
    return Math.floor(this.#opts.leaseTtlMs / 3);
  }

  start(): void {
    this.#stopped = false;
    void this.tick();
    this.#timer = this.#clock.setInterval(() => void this.tick(), this.#roundMs());
  }

  /** Stops taking part; `resign` revokes the lease so the others need not wait for it to lapse. */
  async stop(resign: boolean): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#clock.clearInterval(this.#timer);
    this.#timer = undefined;
    const lease = this.#lease;
    this.#role = "replica";
    if (resign && lease !== undefined) {
      this.#lease = undefined;
      await this.#kv.revoke(lease).catch((e) => this.#log.warn(`could not revoke the election lease: ${String(e)}`));
    }
  }

  /** One round: renew (or get) the lease, publish progress, look at the master key, maybe claim it. */
  async tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      await this.#round();
      if (this.#unreachableLogged) this.#log.info("etcd reachable again");
      this.#unreachableLogged = false;
    } catch (e) {
      if (!(e instanceof EtcdUnavailableError)) {
        // etcd refused a call (a bug of ours, or of etcd): the round is lost, the next one tries again.
        this.#log.rateLimited("error", "election-round", `election round failed: ${String(e)}`);
        return;
      }
      if (!this.#unreachableLogged) {
        const what = this.#role === "master" ? "no write is acknowledged until the lease is renewed" : "no election is possible";
        this.#log.warn(`etcd unreachable, keeping the role ${this.#role}; ${what}: ${e.message}`);
      }
      this.#unreachableLogged = true;
    } finally {
      this.#ticking = false;
    }
  }

  async #round(): Promise<void> {
    const sentAt = this.#clock.now();
    if (!(await this.#renew())) {
      this.#stepDown("its lease is gone");
      const granted = await this.#kv.grantLease(this.#opts.leaseTtlMs);
      this.#lease = granted.id;
    }
    this.#renewedAt = sentAt;
    const progress: ReplicaRecord = { ...this.#recordBase(), confirmedOffset: this.#progress.confirmedOffset(), epoch: this.#epoch };
    // Our own log's end, published for the election: the candidate with the highest one wins.
    assert(
      Number.isSafeInteger(progress.confirmedOffset) && progress.confirmedOffset >= 0,
      "replica {} confirmed offset {}",
      this.#me.brokerId,
      progress.confirmedOffset,
    );
    await this.#kv.put(`${this.#prefix}replicas/${this.#me.brokerId}`, JSON.stringify(progress), this.#lease);
    const master = parse<MasterRecord>(await this.#kv.get(`${this.#prefix}master`));
    if (this.#stopped) return;
    if (master !== undefined) return await this.#sawMaster(master);
    this.#absentTicks++;
    await this.#maybeClaim();
  }

  /** True when the lease this replica had is still alive (renewed now). */
  async #renew(): Promise<boolean> {
    if (this.#lease === undefined) return false;
    return (await this.#kv.keepAlive(this.#lease)) > 0;
  }

  #recordBase(): { brokerId: number; addr: string; haAddr: string } {
    return { brokerId: this.#me.brokerId, addr: this.#me.addr, haAddr: this.#me.haAddr };
  }

  async #sawMaster(master: MasterRecord): Promise<void> {
    this.#absentTicks = 0;
    this.#noCandidateLogged = false;
    if (master.brokerId === this.#me.brokerId && this.#role === "master" && master.epoch === this.#epoch) return this.#keepSyncStateSet();
    if (master.brokerId === this.#me.brokerId && this.#role !== "master") {
      // Our key from before a restart of this process, still on a lease we no longer hold: wait for it to lapse.
      return;
    }
    if (this.#role === "master") this.#stepDown(`replica ${master.brokerId} is master at epoch ${master.epoch}`);
    // One master per epoch as this replica sees it: it follows another only once it holds no
    // master role itself.
    assert(
      this.#role === "replica",
      "replica {} is {} while following replica {} at epoch {}",
      this.#me.brokerId,
      this.#role,
      master.brokerId,
      master.epoch,
    );
    const changed = this.#master?.brokerId !== master.brokerId || this.#master.epoch !== master.epoch;
    this.#master = master;
    this.#epoch = Math.max(this.#epoch, master.epoch);
    if (changed) this.#listener.follow(master);
  }

  /** Master, each round: who is in sync now; written to etcd when it changed. */
  async #keepSyncStateSet(): Promise<void> {
    const now = this.#clock.now();
    this.#history.push([now, this.#progress.confirmedOffset()]);
    const window = this.#opts.inSyncWithinMs() + this.#roundMs();
    while (this.#history.length > 1 && this.#history[1]![0] <= now - window) this.#history.shift();
    // Where the log stood `window` ago (the oldest point kept; at the start of an epoch: where it started).
    // The history starts with the claim and only the newest point is ever kept alone: never empty.
    assert(this.#history.length > 0, "master of epoch {} has no log history", this.#epoch);
    const required = this.#history[0]![1];
    const [syncKv, replicas] = await Promise.all([this.#kv.get(`${this.#prefix}syncStateSet`), this.#kv.getPrefix(`${this.#prefix}replicas/`)]);
    const current = parse<SyncStateSet>(syncKv);
    const members = [this.#me.brokerId];
    for (const kv of replicas) {
      const r = parse<ReplicaRecord>(kv);
      if (r && r.brokerId !== this.#me.brokerId && r.confirmedOffset >= required) members.push(r.brokerId);
    }
    members.sort((a, b) => a - b);
    if (current && current.epoch === this.#epoch && current.members.join() === members.join()) {
      this.#syncMembers = members;
      return;
    }
    if (this.#stopped || this.#role !== "master") return;
    const master: MasterRecord = { ...this.#recordBase(), epoch: this.#epoch };
    const written = await this.#kv.txn(
      [
        { key: `${this.#prefix}master`, target: "VALUE", result: "EQUAL", value: JSON.stringify(master) },
        syncKv === undefined
          ? { key: `${this.#prefix}syncStateSet`, target: "VERSION", result: "EQUAL", version: 0 }
          : { key: `${this.#prefix}syncStateSet`, target: "MOD", result: "EQUAL", modRevision: syncKv.modRevision },
      ],
      [{ put: `${this.#prefix}syncStateSet`, value: JSON.stringify({ epoch: this.#epoch, members } satisfies SyncStateSet) }],
    );
    // The master is in its own sync state set (it is always in sync with itself): the minimum
    // in-sync count and the acknowledgements a SYNC_MASTER waits for (BrokerFailover) count on it.
    assert(
      members.includes(this.#me.brokerId),
      "sync state set of {} members at epoch {} leaves out its master {}",
      members.length,
      this.#epoch,
      this.#me.brokerId,
    );
    if (written.succeeded) this.#syncMembers = members;
    if (written.succeeded) this.#log.info(`sync state set of epoch ${this.#epoch}: [${members.join(", ")}] (was [${current?.members.join(", ") ?? ""}])`);
  }

  #roundMs(): number {
    return Math.max(100, Math.floor(this.#opts.leaseTtlMs / 3));
  }

  #stepDown(why: string): void {
    if (this.#role !== "master") return;
    this.#role = "replica";
    this.#master = undefined;
    this.#log.warn(`stepping down as master of epoch ${this.#epoch}: ${why}`);
  }

  async #maybeClaim(): Promise<void> {
    const [epochKv, syncKv, replicas] = await Promise.all([
      this.#kv.get(`${this.#prefix}epoch`),
      this.#kv.get(`${this.#prefix}syncStateSet`),
      this.#kv.getPrefix(`${this.#prefix}replicas/`),
    ]);
    const last = parse<EpochRecord>(epochKv);
    const sync = parse<SyncStateSet>(syncKv);
    const alive = replicas.map((kv) => parse<ReplicaRecord>(kv)).filter((r): r is ReplicaRecord => r !== undefined);
    const graceOver = this.#absentTicks > CLAIM_GRACE_TICKS;
    let mayClaim: boolean;
    if (last === undefined) {
      mayClaim = this.#me.startsAsMaster || graceOver; // a cold start
    } else {
      const eligible = alive.filter((r) => this.#opts.allowUncleanElection || (sync?.members.includes(r.brokerId) ?? false));
      if (!eligible.some((r) => r.brokerId === this.#me.brokerId)) {
        if (!this.#noCandidateLogged && eligible.length === 0) {
          this.#log.warn(`no master and no live in-sync replica (sync state set ${JSON.stringify(sync?.members ?? [])}); the group waits`);
        }
        this.#noCandidateLogged = eligible.length === 0;
        return;
      }
      eligible.sort((a, b) => b.confirmedOffset - a.confirmedOffset || a.brokerId - b.brokerId);
      mayClaim = eligible[0]!.brokerId === this.#me.brokerId || graceOver;
    }
    if (mayClaim && !this.#stopped) await this.#claim(epochKv, last);
  }

  async #claim(epochKv: KeyValue | undefined, last: EpochRecord | undefined): Promise<void> {
    const epoch = (last?.epoch ?? 0) + 1;
    const startOffset = this.#progress.confirmedOffset();
    const masterRole = this.#me.masterRole ?? last?.masterRole;
    const epochRecord: EpochRecord = { epoch, brokerId: this.#me.brokerId, startOffset, ...(masterRole ? { masterRole } : {}) };
    const master: MasterRecord = { ...this.#recordBase(), epoch };
    const result = await this.#kv.txn(
      [
        { key: `${this.#prefix}master`, target: "VERSION", result: "EQUAL", version: 0 },
        epochKv === undefined
          ? { key: `${this.#prefix}epoch`, target: "VERSION", result: "EQUAL", version: 0 }
          : { key: `${this.#prefix}epoch`, target: "MOD", result: "EQUAL", modRevision: epochKv.modRevision },
      ],
      [
        { put: `${this.#prefix}master`, value: JSON.stringify(master), ...(this.#lease ? { lease: this.#lease } : {}) },
        { put: `${this.#prefix}epoch`, value: JSON.stringify(epochRecord) },
        { put: `${this.#prefix}syncStateSet`, value: JSON.stringify({ epoch, members: [this.#me.brokerId] } satisfies SyncStateSet) },
      ],
    );
    if (!result.succeeded) return; // another replica claimed first: the next tick follows it
    if (this.#stopped) {
      await this.#kv.revoke(this.#lease!); // won while stopping: give it back at once
      return;
    }
    this.#role = "master";
    this.#epoch = epoch;
    this.#master = master;
    this.#absentTicks = 0;
    this.#history = [[this.#clock.now(), startOffset]];
    this.#syncMembers = [this.#me.brokerId];
    this.#log.info(`elected master of ${this.#me.brokerName} at epoch ${epoch}, log at offset ${startOffset}`);
    this.#listener.becameMaster(epoch, startOffset, masterRole);
  }
}
