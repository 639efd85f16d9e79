/**
 * remoting.maxNewConnectionsPerSecondPerAddress: a token bucket per client host (the address
 * without its port). A bucket holds one second's worth of connections and refills continuously,
 * so a client may open `rate` at once and `rate` a second after that; one more is refused before
 * the broker reads a byte from it (listenTls closes it in `open`).
 *
 * Why per address: a reconnect storm costs the broker ~75 µs of CPU per connection (accept, the
 * first frame, the answer, the close; bench/abuse/connections.ts), a third of it the kernel's. A
 * refused one costs the accept and the close only. Limiting per address keeps one misbehaving
 * host from taking the broker's loop while every other host still connects; the clients already
 * connected are not touched. Kafka has the same kind of limit (max.connection.creation.rate);
 * Bun has no way to pause accepting, so the surplus is closed at once (the client sees the
 * connection reset, and reconnects after its backoff).
 *
 * Memory: one small entry per host seen within the last second or so. Past TRACKED_MAX hosts the
 * full buckets (hosts quiet for a second) are dropped; if every one is still refilling (a flood
 * from that many hosts at once), all are, which forgets their debts rather than grow.
 */
import { assert } from "../common/assert.ts";

export const TRACKED_MAX = 65_536;

interface Bucket {
  tokens: number;
  /** Clock reading of the last refill, ms. */
  at: number;
}

export class ConnectRateLimiter {
  readonly #rate: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();

  /** `rate` new connections a second per host (> 0); `now` in ms (performance.now by default). */
  constructor(rate: number, now: () => number = () => performance.now()) {
    if (!(rate > 0)) throw new Error(`connection rate must be > 0, got ${rate}`);
    this.#rate = rate;
    this.#now = now;
  }

  get trackedHosts(): number {
    return this.#buckets.size;
  }

  /** Whether one more connection from `host` is admitted now; takes its token if so. */
  admit(host: string): boolean {
    const now = this.#now();
    let b = this.#buckets.get(host);
    if (b === undefined) {
      if (this.#buckets.size >= TRACKED_MAX) this.#prune(now);
      b = { tokens: this.#rate, at: now };
      this.#buckets.set(host, b);
    } else {
      b.tokens = this.#refilled(b, now);
      b.at = now;
    }
    // Refills are capped at `rate` and a token is taken only when one is there (the clock is monotonic).
    assert(b.tokens >= 0 && b.tokens <= this.#rate, "host {}: {} tokens in a bucket of {}", host, b.tokens, this.#rate);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  #refilled(b: Bucket, now: number): number {
    return Math.min(this.#rate, b.tokens + ((now - b.at) * this.#rate) / 1000);
  }

  #prune(now: number): void {
    for (const [host, b] of this.#buckets) if (this.#refilled(b, now) >= this.#rate) this.#buckets.delete(host);
    if (this.#buckets.size >= TRACKED_MAX) this.#buckets.clear();
  }
}
