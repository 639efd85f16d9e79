/**
 * The two files automatic failover keeps beside the CommitLog (in store.dir):
 *
 *   failover.json   {"replicaId": N}   this replica's id in its broker group, assigned once by etcd
 *                                      (a counter in the group's keys), kept for every later start.
 *                                      It names the replica in the election and is the brokerId it
 *                                      registers with while it is not master (the master registers
 *                                      as 0, as in RocketMQ 5's controller mode).
 *   epochs          one line per epoch this replica's log went through, oldest first:
 *                   "<epoch> <startOffset>\n" — the epoch's first CommitLog byte. Written when the
 *                   replica becomes master and when it learns a new master's epoch; a returning
 *                   replica compares it with the master's to find where the two logs stop agreeing.
 *
 * Both are rewritten whole and atomically (temp file, fsync, rename); a damaged file is an error
 * that stops the start, never guessed at.
 */
import { join } from "node:path";
import { readTextFile, writeFileAtomic } from "../common/atomic-file.ts";
import { assert } from "../common/assert.ts";
import type { EtcdKv } from "./etcd.ts";

export const REPLICA_ID_FILE = "failover.json";
export const EPOCH_FILE = "epochs";

export interface EpochEntry {
  epoch: number;
  startOffset: number;
}

/** The replica id stored in `dir`, or undefined when there is none yet; throws on a damaged file. */
export function readReplicaId(dir: string): number | undefined {
  const read = readTextFile(join(dir, REPLICA_ID_FILE));
  if ("error" in read) return undefined;
  let id: unknown;
  try {
    id = (JSON.parse(read.text) as { replicaId?: unknown }).replicaId;
  } catch {
    id = undefined;
  }
  if (typeof id !== "number" || !Number.isInteger(id) || id < 1) {
    throw new Error(`${join(dir, REPLICA_ID_FILE)}: no valid replicaId in ${JSON.stringify(read.text.slice(0, 80))}`);
  }
  return id;
}

/**
 * This replica's id: the stored one, or a new one from the group's counter in etcd (a
 * compare-and-set loop, so two replicas starting together get different ids), then stored.
 */
export async function assignReplicaId(kv: EtcdKv, groupPrefix: string, dir: string): Promise<number> {
  const stored = readReplicaId(dir);
  if (stored !== undefined) return stored;
  const key = `${groupPrefix}nextReplicaId`;
  for (;;) {
    const cur = await kv.get(key);
    const next = cur === undefined ? 1 : Number(cur.value);
    if (!Number.isInteger(next) || next < 1) throw new Error(`etcd ${key} holds ${JSON.stringify(cur?.value)}, not a replica id`);
    const won = await kv.txn(
      [cur === undefined ? { key, target: "VERSION", result: "EQUAL", version: 0 } : { key, target: "MOD", result: "EQUAL", modRevision: cur.modRevision }],
      [{ put: key, value: String(next + 1) }],
    );
    if (!won.succeeded) continue;
    writeFileAtomic(join(dir, REPLICA_ID_FILE), `${JSON.stringify({ replicaId: next })}\n`);
    return next;
  }
}

/** The epoch entries in `dir`, oldest first ([] when there is no file); throws on a damaged file. */
export function readEpochs(dir: string): EpochEntry[] {
  const file = join(dir, EPOCH_FILE);
  const read = readTextFile(file);
  if ("error" in read) return [];
  const out: EpochEntry[] = [];
  read.text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    const m = /^(\d+) (\d+)$/.exec(line.trim());
    if (!m) throw new Error(`${file}:${i + 1}: expected "<epoch> <startOffset>", got ${JSON.stringify(line)}`);
    const entry = { epoch: Number(m[1]), startOffset: Number(m[2]) };
    const last = out[out.length - 1];
    if (last && (entry.epoch <= last.epoch || entry.startOffset < last.startOffset)) {
      throw new Error(`${file}:${i + 1}: epoch ${entry.epoch} at ${entry.startOffset} does not follow epoch ${last.epoch} at ${last.startOffset}`);
    }
    out.push(entry);
  });
  return out;
}

/**
 * Records that the log enters `epoch` at `startOffset` (idempotent for the last epoch). An entry
 * for an older epoch than the last is refused: epochs only grow.
 */
export function appendEpoch(dir: string, entry: EpochEntry): EpochEntry[] {
  const all = readEpochs(dir);
  const last = all[all.length - 1];
  if (last && last.epoch === entry.epoch) return all;
  if (last && (entry.epoch < last.epoch || entry.startOffset < last.startOffset)) {
    throw new Error(`epoch ${entry.epoch} at ${entry.startOffset} cannot follow epoch ${last.epoch} at ${last.startOffset}`);
  }
  // An epoch starts at this replica's own log end (its confirmed offset when elected, or where a
  // fixed master's recovery left it): a whole offset, so the line reads back (readEpochs).
  assert(Number.isSafeInteger(entry.startOffset) && entry.startOffset >= 0, "epoch {} starting at offset {}", entry.epoch, entry.startOffset);
  all.push(entry);
  writeFileAtomic(join(dir, EPOCH_FILE), all.map((e) => `${e.epoch} ${e.startOffset}\n`).join(""));
  return all;
}

/** Replaces the epoch file with `entries` (a replica takes its master's history once their logs agree). */
export function writeEpochs(dir: string, entries: readonly EpochEntry[]): void {
  writeFileAtomic(join(dir, EPOCH_FILE), entries.map((e) => `${e.epoch} ${e.startOffset}\n`).join(""));
}

/** Where each epoch's bytes end in a log that ends at `maxOffset`: the next epoch's start, or the log's end. */
function endOf(entries: readonly EpochEntry[], i: number, maxOffset: number): number {
  const next = entries[i + 1];
  return Math.min(next === undefined ? maxOffset : next.startOffset, maxOffset);
}

/**
 * The offset up to which a replica's log (`local`, ending at `localMax`) and its master's
 * (`remote`, ending at `remoteMax`) hold the same bytes, from their epoch files: the newest epoch
 * both went through (same number, same start) ends at the earlier of its two ends. With no epoch
 * in common, what precedes the master's first epoch (data from before failover was on) is taken
 * as shared. The replica truncates whatever it holds past this point.
 */
export function consistentPoint(local: readonly EpochEntry[], localMax: number, remote: readonly EpochEntry[], remoteMax: number): number {
  for (let i = local.length - 1; i >= 0; i--) {
    const l = local[i]!;
    const j = remote.findIndex((r) => r.epoch === l.epoch);
    if (j < 0 || remote[j]!.startOffset !== l.startOffset) continue;
    return cut(Math.min(endOf(local, i, localMax), endOf(remote, j, remoteMax)), localMax);
  }
  return cut(Math.min(localMax, remote[0]?.startOffset ?? remoteMax), localMax);
}

/** A consistent point only ever shortens the replica's log (the remote numbers cannot stretch it). */
function cut(point: number, localMax: number): number {
  assert(point <= localMax, "consistent point {} past the replica's end {}", point, localMax);
  return point;
}
