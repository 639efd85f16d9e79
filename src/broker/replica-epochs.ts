/**
 * Epochs for a master/slave group with fixed roles (broker.failover.enable off), and the cuts a
 * replica makes before it replicates. Automatic failover (./failover.ts) keeps the same `epochs`
 * file (../failover/replica-files.ts) with epochs from etcd; here the master numbers its own:
 *
 *   master   every start is a new epoch, entered at the log end it recovered: "<n+1> <maxPhyOffset>".
 *            A restart after a crash that lost a tail the slave had received shows as an epoch
 *            beginning below what the slave holds; so does a slave promoted by hand (an operator
 *            restarting it as brokerId 0), whose first epoch starts where its copy ended.
 *   slave    before each connection to the master (HAClient.beforeConnect) it reads the master's
 *            epochs (GET_BROKER_EPOCH_CACHE), cuts its log where the two stop agreeing
 *            (consistentPoint), keeps the cut bytes in store/truncated/, then takes the master's
 *            epoch history. Without this a slave kept the lost tail and, once the master wrote new
 *            records over those offsets, held different bytes than its master at the same offsets
 *            (RocketMQ 4.x does the same, and the operator rebuilds the slave by hand).
 *
 * After a crash a replica also cuts what was never flushed (RecoveryReport.unsyncedFrom): a tear
 * there can pass recovery, as no CRC covers a record's topic and properties, and the master has
 * those bytes whole. A slave with fixed roles cuts at start (cutUnsynced), keeping the bytes in
 * truncated/ (its master may be gone for good, and an operator promote it); a failover replica
 * cuts at its first reconcile, when it knows its master holds them, and keeps nothing
 * (BrokerFailover.reconcile: truncated/ holds only what the group never acknowledged).
 *
 * Messages a SYNC_MASTER acknowledged that the master then lost in a power cut (ASYNC_FLUSH) are
 * cut from the slave too: kept in truncated/, no longer served. Keeping them would serve other
 * messages at the same offsets on the two brokers; automatic failover avoids that loss by
 * electing the replica that has them.
 */
import type { Logger } from "../common/log.ts";
import { assert } from "../common/assert.ts";
import { appendEpoch, consistentPoint, readEpochs, writeEpochs, type EpochEntry } from "../failover/replica-files.ts";

/** RocketMQ 5's EpochEntryCache, the body of GET_BROKER_EPOCH_CACHE (1007). */
export interface EpochEntryCache {
  clusterName: string;
  brokerName: string;
  brokerId: number;
  epochList: { epoch: number; startOffset: number; endOffset: number }[];
  maxOffset: number;
}

/** What the cuts need of a replica's store (MessageStore). */
export interface ReplicaStore {
  readonly maxPhyOffset: number;
  readonly recovery: { abnormal: boolean; unsyncedFrom?: number } | null;
  truncateTail(offset: number, keep?: boolean): { records: number; bytes: number; file: string | null };
}

/** The epoch cache a broker answers GET_BROKER_EPOCH_CACHE with: its epochs and where its log ends. */
export function epochCacheOf(dir: string, broker: { clusterName: string; brokerName: string; brokerId: number }, maxOffset: number): EpochEntryCache {
  const epochs = readEpochs(dir);
  return {
    ...broker,
    epochList: epochs.map((e, i) => ({ epoch: e.epoch, startOffset: e.startOffset, endOffset: epochs[i + 1]?.startOffset ?? maxOffset })),
    maxOffset,
  };
}

/**
 * A master with fixed roles starts: its log from `logEnd` on is a new epoch. Entries starting past
 * `logEnd` (a store restored from an older copy) cannot describe this log and are dropped first.
 */
export function startMasterEpoch(dir: string, logEnd: number, log: Logger): EpochEntry {
  let epochs = readEpochs(dir);
  const kept = epochs.filter((e) => e.startOffset <= logEnd);
  if (kept.length < epochs.length) {
    log.warn(`epochs: ${epochs.length - kept.length} epoch(s) begin past this log's end ${logEnd}; dropped from ${dir}/epochs`);
    writeEpochs(dir, kept);
    epochs = kept;
  }
  const entry = { epoch: (epochs.at(-1)?.epoch ?? 0) + 1, startOffset: logEnd };
  // Entries past the log's end were dropped above, so the new epoch starts at or after the last
  // one (appendEpoch would refuse it otherwise, and a master would not start).
  assert(entry.startOffset >= (epochs.at(-1)?.startOffset ?? 0), "epoch {} at {} starts before the last one", entry.epoch, entry.startOffset);
  appendEpoch(dir, entry);
  return entry;
}

/** After a crash, a slave with fixed roles cuts what was never flushed: its master sends it again. */
export function cutUnsynced(store: ReplicaStore, log: Logger): void {
  const from = store.recovery?.abnormal ? store.recovery.unsyncedFrom : undefined;
  if (from === undefined || from >= store.maxPhyOffset) return;
  log.warn(`recovery: the log past ${from} was not flushed before the crash; cut there, the master sends it again`);
  store.truncateTail(from);
}

/**
 * Where a replica ending at `localMax` cuts its log before replicating from a master with `cache`:
 * the point the two epoch histories agree up to.
 */
export function cutPoint(dir: string, localMax: number, cache: EpochEntryCache): number {
  const remote = cache.epochList.map((e) => ({ epoch: e.epoch, startOffset: e.startOffset }));
  return consistentPoint(readEpochs(dir), localMax, remote, cache.maxOffset);
}

/** Cuts the replica's log at `cutPoint` (bytes kept in store/truncated/), then takes the master's epochs. */
export function reconcileWithMaster(dir: string, store: ReplicaStore, cache: EpochEntryCache, log: Logger): void {
  const localMax = store.maxPhyOffset;
  const point = cutPoint(dir, localMax, cache);
  if (point < localMax) {
    log.warn(`replication: this log parts from the master's at ${point} (its end ${localMax}); cut there (MessageStore logs what it kept aside)`);
    store.truncateTail(point);
  }
  // Checked after the cut as before it (consistentPoint): the slave's log now ends where the two agree.
  assert(store.maxPhyOffset <= point, "slave log ends at {} after a cut at {}", store.maxPhyOffset, point);
  writeEpochs(dir, cache.epochList.map((e) => ({ epoch: e.epoch, startOffset: e.startOffset })));
}
