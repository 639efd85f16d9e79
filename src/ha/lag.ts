/**
 * Replication lag in time, from offsets alone. `record(offset, at)` notes that the master's
 * CommitLog reached `offset` at time `at` (ms); `lagMs(replicaEnd, now)` is how long ago the master
 * was first seen holding a byte at or past `replicaEnd` — the age of the oldest data the replica
 * still lacks, 0 when it has everything seen so far. Pure; the resolution is the sampling interval.
 *
 * Samples at or below the replica's end are useless once the replica got there and are dropped;
 * at most SAMPLES_MAX are kept (the oldest go first, so a very long lag reads as a lower bound).
 */
export interface OffsetSample {
  offset: number;
  at: number;
}

export const SAMPLES_MAX = 1024;

export class LagTracker {
  #samples: OffsetSample[] = [];

  /** The newest sample, if any. */
  get latest(): OffsetSample | undefined {
    return this.#samples.at(-1);
  }

  record(offset: number, at: number): void {
    const last = this.#samples.at(-1);
    // Only growth matters: the first time the master was seen past a point.
    if (last && offset <= last.offset) {
      if (offset < last.offset) this.#samples = [{ offset, at }]; // master log went back (restore): restart
      return;
    }
    this.#samples.push({ offset, at });
    if (this.#samples.length > SAMPLES_MAX) this.#samples.splice(0, this.#samples.length - SAMPLES_MAX);
  }

  lagMs(replicaEnd: number, now: number): number {
    const s = this.#samples;
    // Drop samples the replica has reached, but keep the newest (it is `latest`).
    let drop = 0;
    while (drop < s.length - 1 && s[drop]!.offset <= replicaEnd) drop++;
    if (drop > 0) s.splice(0, drop);
    const first = s[0];
    if (!first || first.offset <= replicaEnd) return 0;
    return Math.max(0, now - first.at);
  }
}
