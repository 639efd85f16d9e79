/**
 * ReplicaRole: the one owner of this broker's role in its master/slave group (RocketMQ's
 * BrokerRole: ASYNC_MASTER, SYNC_MASTER, SLAVE), of the brokerId it registers under, and of the
 * replication that goes with the role. Every transition is made here:
 *
 *   fixed master   (ASYNC_MASTER / SYNC_MASTER, failover off) at start: a new epoch begins at the
 *                  recovered log end (./replica-epochs.ts), the HA service streams to the slaves;
 *   fixed slave    at start: cut what a crash left unflushed, replicate from the master the name
 *                  server names (or broker.haMasterAddress), reconciling epochs before each
 *                  connection, and copy its metadata (./slave-sync.ts);
 *   failover       (broker.failover.enable) starts as SLAVE and joins the election (./failover.ts,
 *                  which calls back through FailoverRoles): promote — the store takes writes, the
 *                  HA service streams, brokerId 0; follow — the store is read-only (stepping down
 *                  if it was master) and replicates from the elected master.
 *
 * The processors and the admin read the role from here only (BrokerContext.role); the
 * configuration keeps the configured role (broker.brokerRole), which with failover is only the role
 * taken when elected. What the role starts and stops around it (delayed delivery, transaction
 * check-backs, name server registration) the controller does when told (RoleServices).
 *
 * It is also the store's replication listener (MessageStoreOptions.replication), given when the
 * store opens, so the store's writability follows the role from one place: a master streams each
 * append to its slaves (HAService.notifyNewData), a SYNC_MASTER's put waits for its replicas' acks
 * (with failover: every other member of the sync state set), and with failover a master whose
 * lease lapsed is fenced (BrokerFailover.fence).
 */
import type { Config } from "../config/schema.ts";
import type { Clock, TimerHandle } from "../common/clock.ts";
import { HOUR_MS, nowOf } from "../common/clock.ts";
import { parseJsonBytes } from "../common/json.ts";
import { scope, type Logger } from "../common/log.ts";
import type { DecodedRecord } from "../common/message-record.ts";
import type { StoreReplication } from "../commitlog/index.ts";
import { HAClient, HAService, type HaTransport, type HAClientStatus, type SlaveStatus } from "../ha/index.ts";
import type { BrokerRole } from "../protocol/broker-config.ts";
import { MASTER_ID } from "../protocol/route.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingClient } from "../remoting/index.ts";
import type { BrokerContext } from "./context.ts";
import { BrokerFailover, type EpochEntryCache, type FailoverStatus } from "./failover.ts";
import { cutUnsynced, epochCacheOf, reconcileWithMaster, startMasterEpoch } from "./replica-epochs.ts";
import { SlaveSynchronize } from "./slave-sync.ts";

/** How often a slave that cannot check its master's epochs says so. */
/** Slave: how often it copies its master's topics, offsets and groups (RocketMQ: 10 s). */
const SLAVE_SYNC_INTERVAL_MS = 10_000;
/** Slave: how often it asks its master for the master's CommitLog end (lag reporting). */
const MASTER_OFFSET_POLL_MS = 1000;
/** Slave: at most one metadata sync per this interval is brought forward by unknown topics. */
const EARLY_SYNC_MIN_INTERVAL_MS = 1000;

/** For GET_BROKER_RUNTIME_INFO (mqadmin brokerStatus): the election's view (./failover.ts summary()). */
export interface FailoverSummary {
  replicaId: number | undefined;
  role: string;
  epoch: number;
  syncStateSet: readonly number[];
}

/** What the processors and the admin see of the role: read it, never change it. */
export interface BrokerRoleView {
  /** The role in force: the configured one with fixed roles, the elected one with failover. */
  readonly current: BrokerRole;
  /** A slave takes no writes, runs no delayed delivery or check-backs; its metadata follows its master. */
  readonly isSlave: boolean;
  /** The brokerId registered under: 0 as master, the configured id or (failover) the replica id otherwise. */
  readonly brokerId: number;
  /** broker.failover.enable: this replica's id, elected role, epoch and sync state set; undefined without failover. */
  failover(): FailoverSummary | undefined;
}

export interface ReplicationInfo {
  role: BrokerRole;
  /** Master: connected slaves and how far behind each is. */
  slaves?: SlaveStatus[];
  /** Slave: its connection to the master, how far it got and how far behind it is (bytes, seconds). */
  master?: HAClientStatus & { masterAddr: string | undefined; lastMetadataSyncAt: number };
  /** broker.failover.enable: this replica's id, elected role, epoch and epoch file. */
  failover?: FailoverStatus;
}

/** What a change of role starts and stops in the rest of the broker (BrokerController implements it). */
export interface RoleServices {
  /** Elected master: delayed delivery and transaction check-backs start (each checks the role). */
  promoted(): void;
  /** Stepped down from master: they stop. */
  steppedDown(): void;
  /** Register (again, at once) with the name servers under `brokerId`: 0 as master, the replica id otherwise. */
  registerAs(brokerId: number): void;
}

export interface ReplicaRoleOptions {
  broker: Config["broker"];
  storeDir: string;
  /** remoting.requestTimeoutMs: GET_BROKER_EPOCH_CACHE at another replica. */
  requestTimeoutMs: number;
  clock: Clock;
  /** The broker's outgoing remoting client (epoch caches, metadata sync, the master's log end). */
  client: RemotingClient;
  /** The HA link: the broker's haTransport, or TLS over TCP; undefined = plain TCP. */
  haTransport: HaTransport | undefined;
  /** broker.haSlaveTimeoutMs as it is now (a live key): how long a SYNC_MASTER put waits for acks. */
  haSlaveTimeoutMs: () => number;
}

export class ReplicaRole implements BrokerRoleView, StoreReplication {
  readonly #o: ReplicaRoleOptions;
  readonly #log: Logger = scope("broker");
  readonly #now: () => number;
  #role: BrokerRole;
  #brokerId: number;
  readonly #ha: HAService;
  #ctx: BrokerContext | null = null;
  #haClient: HAClient | null = null;
  #slaveSync: SlaveSynchronize | null = null;
  /** A slave's timers (metadata sync, master offset poll): stopped when failover promotes it. */
  #slaveTimers: TimerHandle[] = [];
  /** broker.failover.enable: the election decides this broker's role (./failover.ts). */
  #failover: BrokerFailover | null = null;
  /** Slave: the master's addresses, as the name server (fixed roles) or the election reported them. */
  #master: { addr?: string; haAddr?: string; epoch?: number } = {};
  /** Slave: when a metadata sync was last brought forward by a message of an unknown topic. */
  #earlySyncAt = 0;
  /** Made once: the put path passes it to every SYNC_MASTER wait. */
  readonly #countsAck = (id: number | undefined): boolean => this.#failover?.countsAck(id) ?? false;

  constructor(o: ReplicaRoleOptions) {
    this.#o = o;
    this.#now = nowOf(o.clock);
    const b = o.broker;
    // Failover: every replica starts without a role; the election makes one master.
    this.#role = b["failover.enable"] ? "SLAVE" : b.brokerRole;
    this.#brokerId = b.brokerId;
    this.#ha = new HAService({
      host: b.listen.host,
      port: b.listen.port === 0 ? 0 : b.listen.port + 1,
      batchBytes: b.haTransferBatchBytes,
      heartbeatMs: 5000,
      idleTimeoutMs: 20_000,
      slaveFallbehindMaxBytes: 256 * 1024 * 1024,
      log: scope("ha"),
      transport: o.haTransport,
      clock: o.clock,
      epoch: () => this.#failover?.streamEpoch(),
    });
  }

  get current(): BrokerRole {
    return this.#role;
  }

  get isSlave(): boolean {
    return this.#role === "SLAVE";
  }

  get brokerId(): number {
    return this.#brokerId;
  }

  failover(): FailoverSummary | undefined {
    return this.#failover?.summary();
  }

  /** StoreReplication: a master streams each append to its slaves. */
  appended(): void {
    if (this.#role !== "SLAVE") this.#ha.notifyNewData();
  }

  /** StoreReplication: a SYNC_MASTER's put waits for its replicas; with failover, as many as the sync state set needs. */
  waitReplicas(end: number): Promise<"OK" | "TIMEOUT" | "NO_SLAVE"> | undefined {
    if (this.#role !== "SYNC_MASTER") return undefined;
    const failover = this.#failover;
    if (failover === null) return this.#ha.waitForAck(end, this.#o.haSlaveTimeoutMs());
    const acks = failover.acksNeeded();
    return acks === 0 ? Promise.resolve("OK") : this.#ha.waitForAck(end, this.#o.haSlaveTimeoutMs(), acks, this.#countsAck);
  }

  /** StoreReplication: with failover, why a write is refused now (not master, or a lapsed lease). */
  fence(): string | null {
    return this.#failover === null ? null : this.#failover.fence();
  }

  /** Binds the HA port (the broker's bind()); returns it. */
  bindHa(): number {
    return this.#ha.start();
  }

  /** Master: stream the CommitLog to slaves (and wait for them in SYNC_MASTER). Slave: follow the master. */
  startReplication(ctx: BrokerContext): void {
    this.#ctx = ctx;
    this.#ha.attachStore(ctx.store);
    if (this.#o.broker["failover.enable"]) return; // the election decides (joinElection)
    // Fixed roles: the master numbers an epoch per start; a slave cuts what its crash left
    // unflushed, and where its log parts from the master's before each connection (./replica-epochs.ts).
    if (!this.isSlave) {
      const e = startMasterEpoch(this.#o.storeDir, ctx.store.maxPhyOffset, this.#log);
      this.#log.info(`replication: master epoch ${e.epoch} begins at ${e.startOffset}`);
    } else {
      cutUnsynced(ctx.store, this.#log);
      this.#followMaster(ctx);
    }
  }

  /**
   * Fixed roles, a slave: the name server reported its master. A name server that does not list
   * the master (it died, or this name server has not heard from it yet) leaves the last known
   * addresses in place: the HA client keeps retrying them, and results from the other name
   * servers do not flap them. Under failover the election names the master, not the name servers.
   */
  masterRegistered(masterAddr: string, haServerAddr: string | undefined): void {
    if (!this.isSlave || this.#failover) return;
    const changed = masterAddr !== this.#master.addr;
    this.#master = { addr: masterAddr, haAddr: haServerAddr ?? this.#master.haAddr };
    if (changed) {
      this.#log.info(`master of ${this.#o.broker.brokerName} is ${masterAddr} (HA ${haServerAddr ?? "unknown"})`);
      void this.#slaveSync?.syncAll();
    }
  }

  /** GET_BROKER_EPOCH_CACHE: this broker's epochs (with failover, as the election knows them). */
  epochCache(): EpochEntryCache {
    if (this.#failover) return this.#failover.epochCache();
    const ctx = this.#need();
    const id = { clusterName: this.#o.broker.brokerClusterName, brokerName: ctx.settings.brokerName, brokerId: this.#brokerId };
    return epochCacheOf(this.#o.storeDir, id, ctx.store.maxPhyOffset);
  }

  replication(): ReplicationInfo {
    const role = this.#role;
    const failover = this.#failover ? { failover: this.#failover.status() } : {};
    if (role !== "SLAVE") return { role, slaves: this.#ha.status(), ...failover };
    const st = this.#haClient?.status();
    return {
      role,
      ...(st ? { master: { ...st, masterAddr: this.#master.addr, lastMetadataSyncAt: this.#slaveSync?.lastSyncAt ?? 0 } } : {}),
      ...failover,
    };
  }

  /** Stops replicating and streaming (a clean stop, once nothing is served). */
  stopReplication(): void {
    this.#stopFollowing();
    this.#ha.stop();
  }

  /** Leaves the election: a clean stop gives the lease back so a replica takes over now. */
  async leave(): Promise<void> {
    await this.#failover?.stop();
  }

  #need(): BrokerContext {
    if (!this.#ctx) throw new Error("broker not started");
    return this.#ctx;
  }

  /** broker.failover.enable: join the election; registration waits for the replica id (./failover.ts). */
  joinElection(services: RoleServices, addrs: { addr: string; haAddr: string }): void {
    const ctx = this.#need();
    const failover = new BrokerFailover({
      broker: this.#o.broker,
      storeDir: this.#o.storeDir,
      ...addrs,
      clock: this.#o.clock,
      log: scope("failover"),
      inSyncWithinMs: this.#o.haSlaveTimeoutMs,
      roles: {
        promote: (epoch, role) => this.#promote(ctx, services, epoch, role),
        follow: (master) => this.#follow(ctx, services, master),
        registerAs: (brokerId) => this.#registerAs(services, brokerId),
        confirmedOffset: () => ctx.store.maxPhyOffset,
        fetchEpochCache: (addr) => this.#fetchEpochCache(addr),
        // An unsynced cut keeps nothing aside: the master holds those bytes and sends them again,
        // and store/truncated/ holds only what the group never acknowledged.
        truncate: (offset, why) => void ctx.store.truncateTail(offset, why !== "unsynced"),
        recoveredDamage: () => (ctx.store.recovery?.abnormal ? ctx.store.recovery.corruptRanges[0]?.from : undefined),
        recoveredUnsynced: () => (ctx.store.recovery?.abnormal ? ctx.store.recovery.unsyncedFrom : undefined),
      },
    });
    this.#failover = failover;
    failover.start();
  }

  /** Failover elected this replica: it takes writes from now on, with no restart. */
  #promote(ctx: BrokerContext, services: RoleServices, epoch: number, role: "SYNC_MASTER" | "ASYNC_MASTER"): void {
    this.#stopFollowing();
    // Replicas connected before this epoch (to this replica, or to it as master of an earlier
    // epoch it kept across a lapsed lease) reconnect, and reconcile first: each records the new
    // epoch before taking its bytes, or a later reconcile would cut them as never shared.
    this.#ha.dropSlaves();
    this.#master = {};
    this.#role = role;
    this.#brokerId = MASTER_ID;
    ctx.store.setReadOnly(false);
    services.promoted();
    this.#log.warn(`failover: ${ctx.settings.brokerName} is master now (epoch ${epoch}, ${role}, log at ${ctx.store.maxPhyOffset})`);
  }

  /** Failover: another replica is master; this one stops writing (if it did) and replicates from it. */
  #follow(ctx: BrokerContext, services: RoleServices, master: { addr: string; haAddr: string; epoch: number }): void {
    const wasMaster = !this.isSlave;
    this.#role = "SLAVE";
    ctx.store.setReadOnly(true);
    if (wasMaster) {
      services.steppedDown();
      this.#ha.dropSlaves();
    }
    // A new epoch of the same master (re-elected after its lease lapsed) is a change too: the stream
    // is reconnected, so beforeConnect reconciles and this replica's epoch file records that epoch.
    const changed = master.addr !== this.#master.addr || master.haAddr !== this.#master.haAddr || master.epoch !== this.#master.epoch;
    this.#master = master;
    if (changed || this.#haClient === null) {
      this.#stopFollowing();
      this.#followMaster(ctx);
    }
    const from = wasMaster ? ", stepped down from master" : "";
    this.#log.warn(`failover: ${ctx.settings.brokerName} follows ${master.addr} (HA ${master.haAddr})${from}`);
  }

  /** Failover: registers under `brokerId` (0 as master, the replica id otherwise). */
  #registerAs(services: RoleServices, brokerId: number): void {
    if (brokerId !== MASTER_ID) this.#brokerId = brokerId;
    services.registerAs(brokerId);
  }

  /** Replicate from the master (#master, or broker.haMasterAddress) and copy its metadata. */
  #followMaster(ctx: BrokerContext): void {
    const b = this.#o.broker;
    const clock = this.#o.clock;
    this.#haClient = new HAClient({
      store: ctx.store,
      masterHaAddr: () => b.haMasterAddress || this.#master.haAddr,
      reportIntervalMs: 5000,
      idleTimeoutMs: 20_000,
      reconnectMs: 1000,
      log: scope("ha-client"),
      onRecords: (records) => this.#onReplicated(ctx, records),
      clock,
      transport: this.#o.haTransport,
      beforeConnect: ((f) => (f ? () => f.reconcile(this.#master.addr) : () => this.#reconcileFixed(ctx)))(this.#failover),
      ...(this.#failover
        ? {
            replicaId: (
              (f) => () =>
                f.replicaId
            )(this.#failover),
          }
        : {}),
      ...(this.#failover
        ? {
            expectedEpoch: (
              (f) => () =>
                f.followedEpoch()
            )(this.#failover),
          }
        : {}),
    });
    this.#haClient.start();
    const sync = new SlaveSynchronize({
      client: this.#o.client,
      masterAddr: () => this.#master.addr,
      topics: ctx.topics,
      consumerOffsets: ctx.consumerOffsets,
      delayOffsets: ctx.delayOffsets,
      groups: ctx.groups,
      requestModes: ctx.requestModes,
      log: this.#log,
      now: this.#now,
    });
    this.#slaveSync = sync;
    const haClient = this.#haClient;
    this.#slaveTimers.push(
      clock.setInterval(() => void sync.syncAll(), SLAVE_SYNC_INTERVAL_MS),
      clock.setInterval(() => {
        void sync.masterMaxOffset().then((max) => {
          if (max !== undefined) haClient.noteMasterMaxOffset(max);
        });
      }, MASTER_OFFSET_POLL_MS),
    );
  }

  /** Stops replicating (failover promoted this replica, or its master changed, or the broker stops). */
  #stopFollowing(): void {
    this.#haClient?.stop();
    this.#haClient = null;
    this.#slaveSync = null;
    for (const t of this.#slaveTimers) this.#o.clock.clearInterval(t);
    this.#slaveTimers = [];
  }

  /**
   * Fixed roles, before each connection to the master (HAClient.beforeConnect): cut this log where
   * it parts from the master's. A master that keeps no epochs (an older RocketBun, or not RocketBun)
   * is replicated from as before, said once; one that cannot be asked now is tried again.
   */
  async #reconcileFixed(ctx: BrokerContext): Promise<string | null> {
    const addr = this.#master.addr;
    if (addr === undefined) {
      if (!this.#o.broker.haMasterAddress) return "the master's address is not known yet (the name server names it at registration)";
      // broker.haMasterAddress names only the HA port: with no master registered, nobody to ask.
      const why = "no master is registered (broker.haMasterAddress is set)";
      this.#log.rateLimited("warn", "no-master-epochs", `replication: ${why}: this slave cannot check where their logs part`, HOUR_MS);
      return null;
    }
    const cache = await this.#fetchEpochCache(addr);
    if ("error" in cache) {
      if (cache.answered === undefined) return `its epochs could not be read: ${cache.error}`;
      const why = `the master keeps no epochs (${cache.error})`;
      this.#log.rateLimited("warn", "no-master-epochs", `replication: ${why}; this slave cannot check where their logs part`, HOUR_MS);
      return null;
    }
    reconcileWithMaster(this.#o.storeDir, ctx.store, cache, this.#log);
    return null;
  }

  /** GET_BROKER_EPOCH_CACHE at another replica of the group. */
  async #fetchEpochCache(addr: string): Promise<EpochEntryCache | { error: string; answered?: number }> {
    try {
      const res = await this.#o.client.invoke(addr, createRequest(RequestCode.GET_BROKER_EPOCH_CACHE), this.#o.requestTimeoutMs);
      if (res.code !== ResponseCode.SUCCESS) return { error: `${addr} answered ${res.code} ${res.remark ?? ""}`, answered: res.code };
      const body = parseJsonBytes(res.body ?? new Uint8Array()) as Partial<EpochEntryCache> | null;
      if (!body || !Array.isArray(body.epochList) || typeof body.maxOffset !== "number") return { error: `${addr} sent no epoch cache` };
      return body as EpochEntryCache;
    } catch (e) {
      return { error: e instanceof Error ? e.message : String(e) };
    }
  }

  /**
   * Slave: a message of a topic this slave has no config for yet (created on the master since the
   * last metadata sync) brings the next sync forward, so the slave can serve it without waiting up
   * to slaveSyncIntervalMs — e.g. when the master dies right after creating the topic. (The pulls
   * parked for replicated messages are woken by the store's arrival listener.)
   */
  #onReplicated(ctx: BrokerContext, records: readonly DecodedRecord[]): void {
    const now = this.#now();
    if (now - this.#earlySyncAt >= EARLY_SYNC_MIN_INTERVAL_MS && records.some((r) => !ctx.topics.get(r.topic))) {
      this.#earlySyncAt = now;
      void this.#slaveSync?.syncAll();
    }
  }
}
