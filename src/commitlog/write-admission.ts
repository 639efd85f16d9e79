/**
 * Whether the store takes a write now, and why not: stopped, read-only (a slave), fenced (a
 * failover master whose lease lapsed), halted (below), the CommitLog's write error, or the disk
 * (./disk-guard.ts). Asked before anything is appended, by puts and by replicated appends.
 *
 * Halting: once the write path failed in a way a retry cannot fix — a broken invariant (an
 * AssertionError: a bug) or a dispatch that threw (records in the CommitLog without their units)
 * — every later put is refused with SERVICE_NOT_AVAILABLE, replicated bytes too, while reads go
 * on; the stop leaves the abort marker, so the next start recovers the units from the CommitLog.
 * Logged once, at error level.
 */
import { AssertionError } from "../common/assert.ts";
import type { Logger } from "../common/log.ts";
import type { CommitLog } from "./commit-log.ts";
import type { DiskGuard } from "./disk-guard.ts";
import type { PutMessageResult, StoreReplication } from "./store-types.ts";

export class WriteAdmission {
  readonly #commitLog: CommitLog;
  readonly #guard: DiskGuard;
  /** Automatic failover fences the writes of a master whose lease lapsed. */
  readonly #replication: StoreReplication | undefined;
  readonly #log: Logger;
  stopped = false;
  /** A slave's store refuses puts (it only takes replicated bytes). */
  readOnly: boolean;
  #halted: Error | null = null;

  constructor(commitLog: CommitLog, guard: DiskGuard, replication: StoreReplication | undefined, readOnly: boolean, log: Logger) {
    this.#commitLog = commitLog;
    this.#guard = guard;
    this.#replication = replication;
    this.readOnly = readOnly;
    this.#log = log;
  }

  get halted(): Error | null {
    return this.#halted;
  }

  /** Why a put must be refused now, or null. */
  refusal(): string | null {
    if (this.stopped) return "message store has shut down";
    if (this.readOnly) return "message store is read-only (slave)";
    const fenced = this.#replication?.fence();
    if (fenced) return fenced;
    // Before the CommitLog's write error: an assertion inside an append sets that too, and the
    // answer should name the bug.
    if (this.#halted) return this.#haltedReason(this.#halted);
    if (this.#commitLog.writeError) return `message store is not writable: ${this.#commitLog.writeError.message}`;
    return this.#guard.refusal();
  }

  /** Why replicated bytes must be refused now (a slave's store is read-only by design), or null. */
  replicaRefusal(): string | null {
    if (this.stopped) return "message store has shut down";
    return this.#halted ? this.#haltedReason(this.#halted) : null;
  }

  /** Halts the write path; the first failure is the one kept and logged, a broken invariant named a bug. */
  halt(e: unknown, where: string): void {
    if (this.#halted !== null) return;
    const err = e instanceof Error ? e : new Error(String(e));
    this.#halted = err;
    const what = err instanceof AssertionError ? "a broken invariant (a bug)" : "a failure";
    this.#log.error(`${where}: ${what}; the store takes no more writes, reads go on, a restart recovers: ${err.stack ?? err.message}`);
  }

  /** Halts and answers the put that found the failure. */
  haltedResult(e: unknown, where: string): PutMessageResult {
    this.halt(e, where);
    return { status: "SERVICE_NOT_AVAILABLE", remark: this.refusal() ?? "message store halted", appended: [] };
  }

  #haltedReason(halted: Error): string {
    const what = halted instanceof AssertionError ? "a broken invariant (a bug)" : "a dispatch failure";
    return `message store stopped taking writes after ${what} (restart to recover): ${halted.message}`;
  }
}
