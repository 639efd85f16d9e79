/**
 * A simulated HA link for test/sim, implementing the product's `HaTransport`. Faults, all drawn
 * from the run's PRNG:
 *   - a write is delivered after a delay, cut into pieces at random points (order is kept: TCP);
 *   - a write is partially taken (the socket's buffer is "full"): the writer gets `drain` later;
 *   - a write is dropped, and the connection is reset shortly after (what a lost segment does to a
 *     TCP stream that cannot recover);
 *   - a partition holds every delivery and fails every connect until it heals; `isolate` does
 *     the same for the links of one host only;
 *   - a crash of one side kills its sockets: the peer sees a reset, or nothing at all (power cut).
 * Deliveries are scheduled on the receiving incarnation's clock, so a crashed process never gets one.
 */
import type { HaListener, HaSocket, HaSocketEvents, HaTransport } from "../../src/ha/transport.ts";
import type { Rng } from "../harness/fuzz.ts";
import type { ClockView, SimClock } from "../../src/common/sim-clock.ts";

export interface LinkFaults {
  delayMaxMs: number;
  /** Probability that a write is taken only in part. */
  partial: number;
  /** Probability that a write is lost (the connection is then reset). */
  drop: number;
}

export const NO_FAULTS: LinkFaults = { delayMaxMs: 0, partial: 0, drop: 0 };

type Item = { data: Uint8Array } | { close: true };

class SimSocket implements HaSocket {
  readonly remoteAddress: string;
  readonly owner: ClockView;
  readonly net: SimNet;
  /** The host this end is on (what `isolate` cuts). */
  readonly host: string;
  peer!: SimSocket;
  events: HaSocketEvents | null = null;
  closed = false;
  #closeReported = false;
  /** Time of the last scheduled delivery toward the peer (deliveries keep order). */
  #lastAt = 0;
  /** Deliveries toward this socket held by a partition, in order. */
  held: Item[] = [];
  #blocked = false;
  /** A write was lost: nothing more gets through (TCP never skips bytes), the reset follows. */
  #broken = false;

  constructor(net: SimNet, owner: ClockView, remoteAddress: string, host: string) {
    this.net = net;
    this.owner = owner;
    this.remoteAddress = remoteAddress;
    this.host = host;
  }

  /** Deliveries between the two ends are held (a partition lies between them). */
  get cut(): boolean {
    return this.net.partitioned || this.net.isolated(this.host) || this.net.isolated(this.peer.host);
  }

  write(data: Uint8Array): number {
    if (this.closed) return -1;
    if (this.#blocked) return 0;
    if (this.#broken) return data.length;
    const rng = this.net.rng;
    const f = this.net.faults;
    if (data.length > 0 && rng.bool(f.drop)) {
      this.net.stats.dropped++;
      this.#broken = true;
      this.owner.after(rng.int(0, 20), () => this.reset());
      return data.length;
    }
    let n = data.length;
    if (n > 1 && rng.bool(f.partial)) {
      n = rng.int(1, n - 1);
      this.#blocked = true;
      this.net.stats.partial++;
      this.owner.after(rng.int(1, 20), () => {
        this.#blocked = false;
        if (!this.closed) this.events?.drain();
      });
    }
    // Copy: the caller may reuse its buffer once write returns (the kernel copies too). Not
    // `slice`: on a Buffer (allocUninitialized's pool) that is a view, not a copy.
    let rest = new Uint8Array(data.subarray(0, n));
    while (rest.length > 0) {
      const cut = rest.length > 1 && rng.bool(0.3) ? rng.int(1, rest.length - 1) : rest.length;
      this.#send({ data: rest.subarray(0, cut) }, f.delayMaxMs);
      rest = rest.subarray(cut);
    }
    return n;
  }

  #send(item: Item, delayMaxMs: number): void {
    const now = this.owner.now();
    const at = Math.max(this.#lastAt, now + this.net.rng.int(0, delayMaxMs));
    this.#lastAt = at;
    const peer = this.peer;
    peer.owner.after(at - now, () => peer.receive(item));
  }

  receive(item: Item): void {
    if (this.#closeReported) return;
    if (this.cut) {
      this.held.push(item);
      return;
    }
    if ("close" in item) this.#reportClose();
    else if (!this.closed) this.events?.data(item.data);
  }

  /** After a partition: deliver what was held, in order. */
  release(): void {
    const items = this.held.splice(0);
    for (const it of items) this.receive(it);
  }

  #reportClose(): void {
    if (this.#closeReported) return;
    this.#closeReported = true;
    this.closed = true;
    this.events?.close();
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.#send({ close: true }, this.net.faults.delayMaxMs);
    this.owner.after(0, () => this.#reportClose());
  }

  terminate(): void {
    this.reset();
  }

  /** Both ends close now; nothing in flight is delivered. */
  reset(): void {
    if (this.#closeReported && this.peer.#closeReported) return;
    this.closed = true;
    this.owner.after(0, () => this.#reportClose());
    const peer = this.peer;
    peer.held = [];
    // Across a partition the reset arrives only when it heals.
    if (this.cut) peer.held.push({ close: true });
    else peer.owner.after(this.net.rng.int(0, 10), () => peer.#reportClose());
  }

  /** This side's process died: the peer hears a reset, or (a power cut) nothing. */
  die(peerHearsReset: boolean): void {
    this.closed = true;
    this.#closeReported = true;
    if (peerHearsReset) {
      const peer = this.peer;
      peer.owner.after(this.net.rng.int(0, 10), () => peer.#reportClose());
    }
  }
}

export class SimNet {
  readonly rng: Rng;
  readonly sim: SimClock;
  faults: LinkFaults;
  partitioned = false;
  readonly stats = { dropped: 0, partial: 0, connects: 0, refused: 0, partitions: 0, resets: 0 };
  readonly #listeners = new Map<string, { owner: ClockView; accept: (s: HaSocket) => HaSocketEvents }>();
  readonly sockets = new Set<SimSocket>();
  readonly #isolated = new Set<string>();
  #ephemeral = 40000;

  constructor(sim: SimClock, rng: Rng, faults: LinkFaults) {
    this.sim = sim;
    this.rng = rng;
    this.faults = faults;
  }

  /** The transport a process on `host` uses (one per incarnation). */
  endpoint(host: string, owner: ClockView): HaTransport {
    return {
      listen: (lhost, port, accept): HaListener => {
        const key = `${lhost}:${port}`;
        this.#listeners.set(key, { owner, accept });
        return {
          port,
          stop: () => {
            if (this.#listeners.get(key)?.owner === owner) this.#listeners.delete(key);
            for (const s of [...this.sockets]) if (s.owner === owner) s.reset();
          },
        };
      },
      connect: (chost, port, events) =>
        new Promise<HaSocket>((resolve, reject) => {
          this.stats.connects++;
          owner.after(this.rng.int(0, this.faults.delayMaxMs), () => {
            const l = this.#listeners.get(`${chost}:${port}`);
            if (this.partitioned || this.isolated(host) || this.isolated(chost)) {
              this.stats.refused++;
              // A partition either times out the attempt (the client's own timer) or fails it.
              if (this.rng.bool(0.5)) reject(new Error("EHOSTUNREACH (simulated partition)"));
              return;
            }
            if (!l || l.owner.dead) {
              this.stats.refused++;
              reject(new Error("ECONNREFUSED (simulated)"));
              return;
            }
            const client = new SimSocket(this, owner, `${chost}:${port}`, host);
            const server = new SimSocket(this, l.owner, `${host}:${this.#ephemeral++}`, chost);
            client.peer = server;
            server.peer = client;
            client.events = events;
            this.sockets.add(client);
            this.sockets.add(server);
            server.events = l.accept(server);
            resolve(client);
          });
        }),
    };
  }

  partition(): void {
    this.partitioned = true;
    this.stats.partitions++;
  }

  heal(): void {
    this.partitioned = false;
    for (const s of [...this.sockets]) s.release();
  }

  /** Whether `host` is cut off from every other host. */
  isolated(host: string): boolean {
    return this.#isolated.size > 0 && this.#isolated.has(host);
  }

  /** Cuts `host` off from every other host (true), or lets it back (false): held deliveries then arrive. */
  isolate(host: string, cut: boolean): void {
    if (cut) {
      this.#isolated.add(host);
      this.stats.partitions++;
      return;
    }
    this.#isolated.delete(host);
    for (const s of [...this.sockets]) s.release();
  }

  /** Resets every open connection (a middlebox dropping state). */
  resetAll(): void {
    this.stats.resets++;
    for (const s of [...this.sockets]) if (!s.closed) s.reset();
  }

  /** A process died: its sockets go with it. */
  kill(owner: ClockView, peerHearsReset: boolean): void {
    for (const s of [...this.sockets]) {
      if (s.owner === owner) {
        s.die(peerHearsReset);
        this.sockets.delete(s);
      }
    }
    for (const [k, l] of this.#listeners) if (l.owner === owner) this.#listeners.delete(k);
  }

  /** Forgets sockets whose both ends are closed. */
  sweep(): void {
    for (const s of [...this.sockets]) if (s.closed && s.peer.closed) this.sockets.delete(s);
  }
}
