/**
 * The timer queue's in-memory bookkeeping: a binary min-heap of pending messages ordered by due
 * time, and the delivery progress of the queue.
 *
 * Progress is the smallest ConsumeQueue offset not yet delivered. Offsets enter in increasing
 * order (the queue is read front to back) but leave in due-time order, so a FIFO of the offsets
 * still pending plus the set of those delivered out of order gives the smallest one in O(1)
 * amortized.
 *
 * Invariants: every entry in the heap has its cqOffset in `#pending`, not in `#done`; `progress`
 * ≤ every pending offset; `#pending` is strictly increasing.
 */
import { assert } from "../../common/assert.ts";
import { MinHeap } from "../../common/min-heap.ts";

export interface TimerEntry {
  /** Absolute due time, ms. */
  due: number;
  /** Offset in the timer queue of SCHEDULE_TOPIC_XXXX. */
  cqOffset: number;
  /** CommitLog offset of the parked record. */
  phyOffset: number;
}

export class TimerHeap {
  readonly #heap = new MinHeap<TimerEntry>((x, y) => x.due < y.due || (x.due === y.due && x.cqOffset < y.cqOffset));
  /** Offsets loaded and not yet delivered, increasing; `#head` is the first live index. */
  #pending: number[] = [];
  #head = 0;
  /** Pending offsets delivered ahead of the front of `#pending`. */
  readonly #done = new Set<number>();
  /** Next offset to load: everything below it was loaded (or skipped as unreadable). */
  #loadedUpTo: number;

  constructor(progress: number) {
    this.#loadedUpTo = progress;
  }

  get size(): number {
    return this.#heap.size;
  }

  get loadedUpTo(): number {
    return this.#loadedUpTo;
  }

  /** The smallest offset not yet delivered: what is safe to persist. */
  get progress(): number {
    return this.#head < this.#pending.length ? this.#pending[this.#head]! : this.#loadedUpTo;
  }

  peek(): TimerEntry | undefined {
    return this.#heap.peek();
  }

  /** Adds a loaded entry; offsets must come in increasing order (bug otherwise). */
  push(e: TimerEntry): void {
    // The queue is read front to back from loadedUpTo (the service skips records below it): an
    // offset below it would be delivered twice, and #pending would stop increasing.
    assert(e.cqOffset >= this.#loadedUpTo, "timer heap: offset {} loaded twice (next is {})", e.cqOffset, this.#loadedUpTo);
    this.#pending.push(e.cqOffset);
    this.#loadedUpTo = e.cqOffset + 1;
    this.#heap.push(e);
  }

  /** Offsets below `offset` that were not pushed (fillers, removed records) count as delivered. */
  skipTo(offset: number): void {
    if (offset > this.#loadedUpTo) this.#loadedUpTo = offset;
  }

  /** Removes and returns the earliest entry; then call `delivered(e)`, or `retry(e)` to put it back. */
  pop(): TimerEntry | undefined {
    return this.#heap.pop();
  }

  /** Puts a popped entry back (its delivery failed and will be retried). */
  retry(e: TimerEntry): void {
    // Only a popped entry that was not delivered comes back; it is still pending, at or past the progress.
    assert(
      !this.#done.has(e.cqOffset) && e.cqOffset >= this.progress,
      "timer heap: offset {} retried after delivery (progress {})",
      e.cqOffset,
      this.progress,
    );
    this.#heap.push(e);
  }

  /** Marks a popped entry delivered and advances the progress past delivered offsets. */
  delivered(e: TimerEntry): void {
    // Each loaded entry is delivered once (popped once, then delivered or retried): a second
    // delivery, or one of an offset below the progress, would move the persisted progress wrongly.
    assert(
      !this.#done.has(e.cqOffset) && e.cqOffset >= this.progress,
      "timer heap: offset {} delivered twice (progress {})",
      e.cqOffset,
      this.progress,
    );
    this.#done.add(e.cqOffset);
    while (this.#head < this.#pending.length && this.#done.delete(this.#pending[this.#head]!)) this.#head++;
    // What is safe to persist never passes what was loaded.
    assert(this.progress <= this.#loadedUpTo, "timer heap: progress {} past the loaded end {}", this.progress, this.#loadedUpTo);
    if (this.#head > 1024 && this.#head * 2 > this.#pending.length) {
      this.#pending = this.#pending.slice(this.#head);
      this.#head = 0;
    }
  }
}
