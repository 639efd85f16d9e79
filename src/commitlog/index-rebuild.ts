/**
 * Runs the index's catch-up after a crash (./index-catch-up.ts walks the records) on the store's
 * clock: a slice of INDEX_CATCH_UP_SLICE_RECORDS records per turn of the event loop while the
 * store serves, the rest at once at a clean stop; `whenIndexed()` for those waiting on it. While
 * it runs, dispatches skip the index (the entries stay in CommitLog order).
 */
import type { Clock, TimerHandle } from "../common/clock.ts";
import type { Logger } from "../common/log.ts";
import { IndexCatchUp, type IndexCatchUpSource } from "./index-catch-up.ts";

/**
 * Records the index's catch-up reads per turn of the event loop: ~3 µs each (decode, properties,
 * two keys), so a slice keeps requests waiting a few ms at most.
 */
const INDEX_CATCH_UP_SLICE_RECORDS = 2000;

export interface IndexRebuildParts {
  clock: Clock;
  log: Logger;
  source: IndexCatchUpSource;
  /** False once the store stops or halts: the slices stop. */
  running: () => boolean;
  /** The index failed to write: the store's write path stops, as for a put. */
  halt: (e: unknown) => void;
}

export class IndexRebuild {
  readonly #p: IndexRebuildParts;
  #catchUp: IndexCatchUp | null = null;
  #timer: TimerHandle | undefined;
  #waiting: (() => void)[] = [];

  constructor(parts: IndexRebuildParts) {
    this.#p = parts;
  }

  /** Recovery found the index behind from `from`: the catch-up starts once the store serves. */
  begin(from: number): void {
    this.#catchUp = new IndexCatchUp(from, this.#p.source);
  }

  /** True while dispatches must skip the index. */
  get active(): boolean {
    return this.#catchUp !== null;
  }

  /** How far it has come; undefined when the index is complete. */
  get progress(): { from: number; at: number; end: number } | undefined {
    const c = this.#catchUp;
    return c === null ? undefined : { from: c.from, at: c.at, end: this.#p.source.dispatchedEnd() };
  }

  /** The CommitLog was cut at `offset`. */
  cut(offset: number): void {
    this.#catchUp?.cut(offset);
  }

  start(): void {
    const c = this.#catchUp;
    if (c === null) return;
    this.#p.log.info(`index: rebuilding the keys of [${c.from}, ${this.#p.source.dispatchedEnd()}) after the unclean shutdown, while the store serves`);
    this.#schedule();
  }

  whenIndexed(stopped: boolean): Promise<void> {
    if (this.#catchUp === null || stopped) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** At a clean stop: the rest at once (recovery once ran it at hundreds of MB of CommitLog a second). */
  finish(): void {
    const c = this.#catchUp;
    if (c === null) return;
    this.#p.log.info(`index: finishing the rebuild of the keys of [${c.at}, ${this.#p.source.dispatchedEnd()}) before stopping`);
    const step = c.step(Number.MAX_SAFE_INTEGER);
    this.#end(step === "more" ? { invalid: "unfinished" } : step);
  }

  stop(): void {
    if (this.#timer !== undefined) this.#p.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Releases whoever waits, done or not (the store closed). */
  release(): void {
    for (const resolve of this.#waiting.splice(0)) resolve();
  }

  #schedule(): void {
    this.#timer = this.#p.clock.setTimeout(() => {
      this.#timer = undefined;
      this.#slice();
    }, 0);
  }

  #slice(): void {
    const c = this.#catchUp;
    if (c === null || !this.#p.running()) return;
    let step;
    try {
      step = c.step(INDEX_CATCH_UP_SLICE_RECORDS);
    } catch (e) {
      this.#p.halt(e);
      return;
    }
    if (step === "more") {
      this.#schedule();
      return;
    }
    this.#end(step);
  }

  #end(step: "done" | { invalid: string }): void {
    const c = this.#catchUp!;
    const end = this.#p.source.dispatchedEnd();
    if (step === "done") {
      this.#p.log.info(`index: rebuilt the keys of [${c.from}, ${c.at}) (${c.records} records); every dispatch is indexed again`);
    } else {
      this.#p.log.warn(`index: rebuild stopped at ${c.at}: ${step.invalid}; keys stored from there to ${end} are not indexed`);
    }
    this.#catchUp = null;
    this.release();
  }
}
