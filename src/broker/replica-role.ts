/**
 * ReplicaRole: the one owner of this broker's role in its master/slave group (RocketMQ's
 * BrokerRole: ASYNC_MASTER, SYNC_MASTER, SLAVE) and of the brokerId it registers under. The
 * processors and the admin read the role from here only (BrokerContext.role); the configuration
 * keeps the configured role (broker.brokerRole), which with failover is only the role taken when
 * elected.
 *
 * It is also the store's replication listener (MessageStoreOptions.replication), given when the
 * store opens, so the store's writability follows the role from one place: a master streams each
 * append to its slaves (HAService.notifyNewData), a SYNC_MASTER's put waits for its replicas' acks
 * (with failover: every other member of the sync state set), and with failover a master whose
 * lease lapsed is fenced (BrokerFailover.fence).
 */
import type { StoreReplication } from "../commitlog/index.ts";
import type { HAService } from "../ha/index.ts";
import type { BrokerRole } from "../protocol/broker-config.ts";
import type { BrokerFailover } from "./failover.ts";

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

export interface ReplicaRoleOptions {
  /** The role and brokerId at start (with failover: SLAVE, until the election decides). */
  role: BrokerRole;
  brokerId: number;
  /** The HA service a master streams to its slaves with. */
  ha: HAService;
  /** broker.haSlaveTimeoutMs as it is now (a live key): how long a SYNC_MASTER put waits for acks. */
  haSlaveTimeoutMs: () => number;
}

export class ReplicaRole implements BrokerRoleView, StoreReplication {
  readonly #o: ReplicaRoleOptions;
  #role: BrokerRole;
  #brokerId: number;
  #failover: BrokerFailover | null = null;
  /** Made once: the put path passes it to every SYNC_MASTER wait. */
  readonly #countsAck = (id: number | undefined): boolean => this.#failover?.countsAck(id) ?? false;

  constructor(o: ReplicaRoleOptions) {
    this.#o = o;
    this.#role = o.role;
    this.#brokerId = o.brokerId;
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

  /** Failover joined: it fences writes and counts acks from now on, and its summary is shown. */
  setFailover(failover: BrokerFailover): void {
    this.#failover = failover;
  }

  /** StoreReplication: a master streams each append to its slaves. */
  appended(): void {
    if (this.#role !== "SLAVE") this.#o.ha.notifyNewData();
  }

  /** StoreReplication: a SYNC_MASTER's put waits for its replicas; with failover, as many as the sync state set needs. */
  waitReplicas(end: number): Promise<"OK" | "TIMEOUT" | "NO_SLAVE"> | undefined {
    if (this.#role !== "SYNC_MASTER") return undefined;
    const failover = this.#failover;
    if (failover === null) return this.#o.ha.waitForAck(end, this.#o.haSlaveTimeoutMs());
    const acks = failover.acksNeeded();
    return acks === 0 ? Promise.resolve("OK") : this.#o.ha.waitForAck(end, this.#o.haSlaveTimeoutMs(), acks, this.#countsAck);
  }

  /** StoreReplication: with failover, why a write is refused now (not master, or a lapsed lease). */
  fence(): string | null {
    return this.#failover === null ? null : this.#failover.fence();
  }

  /** Master of the group (fixed master at start, or elected): registers as brokerId 0. */
  becomeMaster(role: "SYNC_MASTER" | "ASYNC_MASTER"): void {
    this.#role = role;
    this.#brokerId = 0;
  }

  /** A replica of another master. */
  becomeSlave(): void {
    this.#role = "SLAVE";
  }

  /** Failover: the replica id etcd assigned, registered under while not master. */
  setReplicaId(brokerId: number): void {
    this.#brokerId = brokerId;
  }
}
