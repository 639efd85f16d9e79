/**
 * The progress line of long work (statsAll over many topics, an offset reset over many queues,
 * topicList -c): on stderr, so stdout stays the result. On a terminal one line rewritten in place
 * and cleared at the end; otherwise (a log, a CI job) a plain line at most every two seconds, and
 * none at all for work that ends within the first second.
 */
import { err } from "../common/log.ts";

const QUIET_MS = 1000;
const PLAIN_EVERY_MS = 2000;
const TTY_EVERY_MS = 100;

export class Progress {
  readonly #label: string;
  readonly #total: number;
  readonly #tty: boolean;
  readonly #now: () => number;
  readonly #write: (text: string) => void;
  readonly #started: number;
  #done = 0;
  #lastAt = -Infinity;
  #shown = false;

  /** `tty`, `now` and `write` are for tests; by default: whether stderr is a terminal, the clock, stderr. */
  constructor(label: string, total: number, o: { tty?: boolean; now?: () => number; write?: (text: string) => void } = {}) {
    this.#label = label;
    this.#total = total;
    this.#tty = o.tty ?? process.stderr.isTTY === true;
    this.#now = o.now ?? Date.now;
    this.#write = o.write ?? ((text) => (this.#tty ? process.stderr.write(text) : err(text.trimEnd())));
    this.#started = this.#now();
  }

  /** `n` more items done. */
  tick(n = 1): void {
    this.#done += n;
    const now = this.#now();
    if (now - this.#started < QUIET_MS) return;
    if (now - this.#lastAt < (this.#tty ? TTY_EVERY_MS : PLAIN_EVERY_MS)) return;
    this.#lastAt = now;
    const line = `${this.#label}: ${this.#done}/${this.#total} (${Math.round((100 * this.#done) / Math.max(1, this.#total))}%)`;
    this.#write(this.#tty ? `\r${line}\x1b[K` : `${line}\n`);
    this.#shown = true;
  }

  /** Clears a terminal's line (a plain log keeps its lines). */
  end(): void {
    if (this.#tty && this.#shown) this.#write("\r\x1b[K");
  }
}
