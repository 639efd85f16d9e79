/**
 * The deadlines of a server's open connections (remoting.idleTimeoutMs, remoting.frameTimeoutMs),
 * kept by one sweep every `sweepMs` instead of a timer per connection or a clock read per socket
 * read: the hot path only increments two counters on the connection (`activity`, one per read
 * and per frame queued; `framesReceived`), and the sweep compares them with what it saw last.
 *
 *   idle     no read and no write for idleTimeoutMs: closed, as Java's NettyServerConfig
 *            serverChannelMaxIdleTimeSeconds (120 s) closes an all-idle channel. Clients
 *            heartbeat every 30 s and brokers register every 30 s, so a live peer is never idle.
 *   partial  a frame begun (bytes buffered) and no frame completed for frameTimeoutMs: closed.
 *            This is what a slowloris peer (a byte a second, or a length word and nothing more)
 *            meets; Java has no such deadline, and such a peer holds a Netty channel forever.
 *
 * Both are measured in whole sweeps, so a deadline is met up to one sweep late, never early.
 * The silent phase before a connection's first byte, and a TLS handshake, are the listener's
 * (src/common/tls.ts: firstByteTimeoutMs, handshakeTimeoutMs).
 */
import { assert } from "../common/assert.ts";
import type { Clock, TimerHandle } from "../common/clock.ts";
import type { Logger } from "../common/log.ts";

/** What the sweep reads of a connection (RemotingConnection has these). */
export interface WatchedConnection {
  readonly remoteAddress: string;
  /** Grows on every read and every frame queued for writing. */
  readonly activity: number;
  /** Grows on every frame decoded. */
  readonly framesReceived: number;
  /** Bytes of a frame begun and not complete. */
  readonly bufferedBytes: number;
  close(): void;
}

export interface ConnectionWatchOptions {
  /** 0 = never closed for idleness. */
  idleTimeoutMs: number;
  /** 0 = a partial frame may wait forever. */
  frameTimeoutMs: number;
  clock: Clock;
  log: Logger;
  /** Default: a quarter of the shorter deadline, between 100 ms and 1 s. */
  sweepMs?: number;
}

interface Mark {
  activity: number;
  idleMs: number;
  frames: number;
  /** A partial frame was seen at the last sweep (its time counts from there, so never early). */
  partial: boolean;
  partialMs: number;
}

export class ConnectionWatch {
  readonly #o: ConnectionWatchOptions;
  readonly #marks = new Map<WatchedConnection, Mark>();
  readonly #sweepMs: number;
  #timer: TimerHandle | undefined;

  constructor(o: ConnectionWatchOptions) {
    this.#o = o;
    const deadlines = [o.idleTimeoutMs, o.frameTimeoutMs].filter((d) => d > 0);
    this.#sweepMs = o.sweepMs ?? Math.min(1000, Math.max(100, Math.floor(Math.min(...deadlines, 4000) / 4)));
  }

  /** Whether any deadline is set (with none, nothing is watched and no timer runs). */
  get active(): boolean {
    return this.#o.idleTimeoutMs > 0 || this.#o.frameTimeoutMs > 0;
  }

  add(c: WatchedConnection): void {
    if (!this.active) return;
    // Once per connection, at accept: a second add would restart its deadlines.
    assert(!this.#marks.has(c), "connection {} watched twice", c.remoteAddress);
    this.#marks.set(c, { activity: c.activity, idleMs: 0, frames: c.framesReceived, partial: false, partialMs: 0 });
    this.#timer ??= this.#o.clock.setInterval(() => this.sweep(this.#sweepMs), this.#sweepMs);
  }

  remove(c: WatchedConnection): void {
    this.#marks.delete(c);
  }

  stop(): void {
    if (this.#timer !== undefined) this.#o.clock.clearInterval(this.#timer);
    this.#timer = undefined;
    this.#marks.clear();
  }

  /** One sweep, `elapsedMs` after the last: closes the connections past a deadline. */
  sweep(elapsedMs: number): void {
    const { idleTimeoutMs, frameTimeoutMs } = this.#o;
    const late: [WatchedConnection, string][] = [];
    for (const [c, m] of this.#marks) {
      // The counters only grow; one that went back would hide traffic or invent it.
      assert(
        c.activity >= m.activity && c.framesReceived >= m.frames,
        "connection {}: counters moved back to {}, {}",
        c.remoteAddress,
        c.activity,
        c.framesReceived,
      );
      if (c.activity !== m.activity) {
        m.activity = c.activity;
        m.idleMs = 0;
      } else {
        m.idleMs += elapsedMs;
      }
      const partial = c.bufferedBytes > 0;
      if (partial && m.partial && c.framesReceived === m.frames) m.partialMs += elapsedMs;
      else m.partialMs = 0;
      m.partial = partial;
      m.frames = c.framesReceived;
      if (idleTimeoutMs > 0 && m.idleMs >= idleTimeoutMs) late.push([c, `no traffic for ${m.idleMs} ms (remoting.idleTimeoutMs ${idleTimeoutMs})`]);
      else if (frameTimeoutMs > 0 && m.partialMs >= frameTimeoutMs) {
        late.push([c, `a frame begun ${m.partialMs} ms ago is not complete (${c.bufferedBytes} bytes; remoting.frameTimeoutMs ${frameTimeoutMs})`]);
      }
    }
    for (const [c, why] of late) {
      this.#marks.delete(c);
      this.#o.log.rateLimited("info", "connection-deadline", `closing ${c.remoteAddress}: ${why}`);
      c.close();
    }
  }
}
