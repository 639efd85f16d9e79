/**
 * Test support (tests and test/sim only). An etcd in memory, behind the same `EtcdKv` seam as the real one (./etcd.ts), for the seeded
 * simulation and unit tests: elections, leases and partitions run on a `Clock` (virtual time in
 * test/sim), with etcd's semantics as far as failover uses them —
 *   - one revision counter for the store, bumped by every put and delete (a transaction's writes
 *     share one revision); a key keeps its create revision, mod revision and version (1 at create,
 *     +1 per put; gone at delete);
 *   - leases of whole seconds (at least 1), expired by the clock; an expired or revoked lease
 *     deletes its keys; keep-alive answers the TTL again, or 0 once the lease is gone;
 *   - transactions compare VERSION, MOD and VALUE (an absent key has version 0, mod revision 0);
 *   - `client(name)` gives each participant its own view, which the simulation can cut off
 *     (`partition`): a cut-off view throws EtcdUnavailableError, as a real client does when no
 *     endpoint answers; `down` cuts everyone off (etcd itself unavailable; leases keep their
 *     deadlines and, as in etcd after a restart, are renewed to a full TTL when it comes back).
 * Tested against the same contract as the real etcd (test/integration/etcd-client.test.ts).
 */
import type { Clock } from "../common/clock.ts";
import { EtcdError, EtcdUnavailableError, type Compare, type EtcdKv, type KeyValue, type LeaseId, type TxnOp, type TxnResult } from "./etcd.ts";

interface StoredKey {
  value: string;
  createRevision: number;
  modRevision: number;
  version: number;
  lease: LeaseId | undefined;
}

interface Lease {
  ttlMs: number;
  expiresAt: number;
  keys: Set<string>;
}

/** gRPC NOT_FOUND, as etcd answers a put on an unknown lease. */
const GRPC_NOT_FOUND = 5;

export class MemoryEtcd {
  readonly #clock: Clock;
  readonly #keys = new Map<string, StoredKey>();
  readonly #leases = new Map<LeaseId, Lease>();
  readonly #cut = new Set<string>();
  #revision = 1;
  #nextLease = 1000;
  #down = false;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** A participant's connection to this etcd; `name` is what `partition` cuts. */
  client(name: string): EtcdKv {
    const call = <T>(f: () => T): Promise<T> => {
      if (this.#down || this.#cut.has(name)) return Promise.reject(new EtcdUnavailableError(`etcd unreachable from ${name} (simulated)`));
      this.#expire();
      try {
        return Promise.resolve(f());
      } catch (e) {
        return Promise.reject(e);
      }
    };
    return {
      get: (key) => call(() => this.#get(key)),
      getPrefix: (prefix) =>
        call(() =>
          [...this.#keys.keys()]
            .filter((k) => k.startsWith(prefix))
            .sort()
            .map((k) => this.#get(k)!),
        ),
      put: (key, value, lease) => call(() => void this.#apply([{ put: key, value, ...(lease ? { lease } : {}) }])),
      delete: (key) => call(() => void this.#apply([{ delete: key }])),
      txn: (compare, success, failure = []) => call(() => this.#txn(compare, success, failure)),
      grantLease: (ttlMs) => call(() => this.#grant(ttlMs)),
      keepAlive: (id) => call(() => this.#keepAlive(id)),
      revoke: (id) => call(() => this.#revoke(id)),
    };
  }

  /** Cuts `name` off from etcd (true) or lets it back (false). */
  partition(name: string, cut: boolean): void {
    if (cut) this.#cut.add(name);
    else this.#cut.delete(name);
  }

  /** etcd itself down (every client cut off) or back up; back up, every lease gets a full TTL again. */
  setDown(down: boolean): void {
    if (this.#down && !down) {
      const now = this.#clock.now();
      for (const l of this.#leases.values()) l.expiresAt = now + l.ttlMs;
    }
    this.#down = down;
  }

  /** What a key holds now (for the simulation's checks), without going through a client. */
  peek(key: string): KeyValue | undefined {
    this.#expire();
    return this.#get(key);
  }

  #get(key: string): KeyValue | undefined {
    const k = this.#keys.get(key);
    if (k === undefined) return undefined;
    return { key, value: k.value, createRevision: k.createRevision, modRevision: k.modRevision, version: k.version, lease: k.lease };
  }

  #expire(): void {
    if (this.#down) return;
    const now = this.#clock.now();
    for (const [id, l] of this.#leases) if (l.expiresAt <= now) this.#revoke(id);
  }

  #compare(c: Compare): boolean {
    const k = this.#keys.get(c.key);
    const [have, want]: [number | string, number | string] =
      c.target === "VERSION" ? [k?.version ?? 0, c.version] : c.target === "MOD" ? [k?.modRevision ?? 0, c.modRevision] : [k?.value ?? "", c.value];
    if (c.target === "VALUE" && k === undefined) return false; // etcd: a value compare on an absent key fails
    switch (c.result) {
      case "EQUAL":
        return have === want;
      case "NOT_EQUAL":
        return have !== want;
      case "GREATER":
        return have > want;
      case "LESS":
        return have < want;
    }
  }

  #txn(compare: Compare[], success: TxnOp[], failure: TxnOp[]): TxnResult {
    const succeeded = compare.every((c) => this.#compare(c));
    const gets = this.#apply(succeeded ? success : failure);
    return { succeeded, gets, revision: this.#revision };
  }

  /** The ops of one request, at one new revision when any of them writes; the `get`s' answers. */
  #apply(ops: TxnOp[]): (KeyValue | undefined)[] {
    for (const op of ops)
      if ("put" in op && op.lease !== undefined && !this.#leases.has(op.lease)) {
        throw new EtcdError("etcdserver: requested lease not found", GRPC_NOT_FOUND);
      }
    const writes = ops.some((op) => !("get" in op));
    const rev = writes ? ++this.#revision : this.#revision;
    const gets: (KeyValue | undefined)[] = [];
    for (const op of ops) {
      if ("get" in op) gets.push(this.#get(op.get));
      else if ("put" in op) this.#put(op.put, op.value, op.lease, rev);
      else this.#delete(op.delete);
    }
    return gets;
  }

  #put(key: string, value: string, lease: LeaseId | undefined, rev: number): void {
    const old = this.#keys.get(key);
    if (old?.lease !== undefined) this.#leases.get(old.lease)?.keys.delete(key);
    if (lease !== undefined) this.#leases.get(lease)!.keys.add(key);
    this.#keys.set(key, { value, createRevision: old?.createRevision ?? rev, modRevision: rev, version: (old?.version ?? 0) + 1, lease });
  }

  #delete(key: string): void {
    const old = this.#keys.get(key);
    if (old === undefined) return;
    if (old.lease !== undefined) this.#leases.get(old.lease)?.keys.delete(key);
    this.#keys.delete(key);
  }

  #grant(ttlMs: number): { id: LeaseId; ttlMs: number } {
    const ttl = Math.max(1, Math.ceil(ttlMs / 1000)) * 1000;
    const id = String(this.#nextLease++);
    this.#leases.set(id, { ttlMs: ttl, expiresAt: this.#clock.now() + ttl, keys: new Set() });
    return { id, ttlMs: ttl };
  }

  #keepAlive(id: LeaseId): number {
    const l = this.#leases.get(id);
    if (l === undefined) return 0;
    l.expiresAt = this.#clock.now() + l.ttlMs;
    return l.ttlMs;
  }

  #revoke(id: LeaseId): void {
    const l = this.#leases.get(id);
    if (l === undefined) return;
    this.#leases.delete(id);
    if (l.keys.size > 0) this.#revision++;
    for (const key of l.keys) this.#keys.delete(key);
  }
}
