/**
 * A binary min-heap ordered by `less`: the timer queue's due messages, POP's checkpoints by revive
 * time, parked pops by deadline. Removal is only of the least element; callers that drop entries
 * early mark them and skip them when they surface.
 */
export class MinHeap<T> {
  readonly #items: T[] = [];
  readonly #less: (a: T, b: T) => boolean;

  constructor(less: (a: T, b: T) => boolean) {
    this.#less = less;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    const h = this.#items;
    h.push(item);
    for (let i = h.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (!this.#less(h[i]!, h[p]!)) return;
      [h[p], h[i]] = [h[i]!, h[p]!];
      i = p;
    }
  }

  pop(): T | undefined {
    const h = this.#items;
    const top = h[0];
    if (top === undefined) return undefined;
    const last = h.pop()!;
    if (h.length === 0) return top;
    h[0] = last;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.#less(h[l]!, h[m]!)) m = l;
      if (r < h.length && this.#less(h[r]!, h[m]!)) m = r;
      if (m === i) return top;
      [h[m], h[i]] = [h[i]!, h[m]!];
      i = m;
    }
  }

  /** Every item, in no particular order. */
  values(): readonly T[] {
    return this.#items;
  }

  /** Empties the heap; what it held. */
  drain(): T[] {
    return this.#items.splice(0);
  }
}
