/**
 * ReplicaRole: the one owner of this broker's role in its master/slave group (RocketMQ's
 * BrokerRole: ASYNC_MASTER, SYNC_MASTER, SLAVE) and of the brokerId it registers under. The
 * processors and the admin read the role from here only (BrokerContext.role); the configuration
 * keeps the configured role (broker.brokerRole), which with failover is only the role taken when
 * elected.
 */
import type { BrokerRole } from "../protocol/broker-config.ts";

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

export class ReplicaRole implements BrokerRoleView {
  #role: BrokerRole;
  #brokerId: number;
  #failover: (() => FailoverSummary) | undefined;

  constructor(start: { role: BrokerRole; brokerId: number }) {
    this.#role = start.role;
    this.#brokerId = start.brokerId;
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
    return this.#failover?.();
  }

  /** Failover joined: its summary is shown from now on. */
  setFailover(summary: () => FailoverSummary): void {
    this.#failover = summary;
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
