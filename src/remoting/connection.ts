/**
 * One TCP connection speaking remoting frames, used by both the server and the client side:
 * frame decoding, request/response matching by opaque, per-request timeouts, and an outbound
 * queue that coalesces everything written in one tick into a single socket write and respects
 * backpressure (a peer that stops reading is cut off at `connectionBufferMaxBytes`).
 *
 * Backpressure on requests too: while the socket waits for drain with `congestedBytes` queued, the
 * peer's requests are held, not processed, and processed in order once it drains. A consumer that
 * pipelines pulls and stops reading (a dead consumer) thus costs the answers queued
 * before it stalled, not a `connectionBufferMaxBytes` of pull responses copied for nobody each
 * time such a peer connects (measured, 64 MiB default: 3 such peers at a time took the broker to
 * 1.3 GiB RSS and a reading consumer beside them to under 1 % of its rate). Held requests are
 * bounded (HELD_REQUESTS_MAX, and their bodies by `connectionBufferMaxBytes`): past either the
 * peer is closed; one that goes quiet instead is closed by the server's idle deadline.
 */
import { assert } from "../common/assert.ts";
import { elapsedNowOf, systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import type { Logger } from "../common/log.ts";
import { FLAG_ONEWAY, isOneway, isResponse, type RemotingCommand } from "./command.ts";
import { FrameDecoder, prepareFrame, writeFrame } from "./frame.ts";
import type { SocketLike } from "./transport.ts";

export class RemotingTimeoutError extends Error {
  override name = "RemotingTimeoutError";
}
export class RemotingClosedError extends Error {
  override name = "RemotingClosedError";
}

export interface ConnectionOptions {
  frameSizeMaxBytes: number;
  connectionBufferMaxBytes: number;
  /** The socket's data chunks are ours to keep (see transport.ts `chunksAreOwned`). */
  chunksOwned?: boolean;
  log: Logger;
  /** The time and the timer of request timeouts; default the system clock (test/sim: simulated time). */
  clock?: Clock;
  /** Called for every request frame (responses are matched internally). */
  onRequest: (conn: RemotingConnection, cmd: RemotingCommand) => void;
}

interface Pending {
  resolve: (cmd: RemotingCommand) => void;
  reject: (err: Error) => void;
  /** The connection's elapsed-time reading (elapsedNowOf) after which the request has timed out. */
  deadline: number;
  code: number;
  timeoutMs: number;
}

let nextConnectionId = 1;

/**
 * A turn's writes go out at once when this much is queued (see sendBytes). Measured with
 * `rocketbun bench producer` (32 in flight) against a standalone broker on this 2-core machine:
 * 1 KiB bodies 38-40k → 66-77k msgs/s at 16 KiB (32 and 64 KiB: no gain); 128 B bodies 52k →
 * 87k msgs/s at 16 frames (8: 82k). Both sides also spent less CPU per message.
 */
const EAGER_FLUSH_BYTES = 16 * 1024;
/** The first allocation of a connection's out buffer; it doubles from there as frames need. */
const OUT_BUFFER_FIRST_BYTES = 1024;
/** Larger than this after a complete write: dropped (the next send allocates a small one). */
const OUT_BUFFER_KEEP_MAX_BYTES = 1024 * 1024;
const EMPTY_OUT = Buffer.alloc(0);
const EAGER_FLUSH_FRAMES = 16;
/** Requests held while the peer does not take our answers, past which it is closed (as many as the pulls one connection may park). */
const HELD_REQUESTS_MAX = 4096;
/** Queued bytes that, with the socket waiting for drain, hold further requests (a quarter of connectionBufferMaxBytes when that is less). */
const CONGESTED_BYTES = 1024 * 1024;

/** Java shows IPv4-mapped IPv6 peers as IPv4; so do we (ali-ons only decodes IPv4 hosts). */
export function normalizeAddress(host: string, port: number): string {
  const v4 = host.startsWith("::ffff:") ? host.slice(7) : host;
  return v4.includes(":") ? `[${v4}]:${port}` : `${v4}:${port}`;
}

export class RemotingConnection {
  readonly id = nextConnectionId++;
  readonly remoteAddress: string;
  readonly #socket: SocketLike;
  readonly #decoder: FrameDecoder;
  readonly #opts: ConnectionOptions;
  readonly #clock: Clock;
  /** Reads the clock for deadlines (performance.now on the system clock: no wall-clock steps). */
  readonly #now: () => number;
  readonly #pending = new Map<number, Pending>();
  readonly #closeListeners: ((conn: RemotingConnection) => void)[] = [];
  /**
   * Outbound bytes not yet taken by the socket: frames are encoded straight into this one buffer
   * (no array per frame, no concatenation before a write), and it is reused once written: the
   * socket copies what it takes (SocketLike.write must not keep `data`). Allocated at the first
   * send, not at accept: a connection that never gets an answer (a refused or idle peer, a
   * reconnect storm's) costs no allocation, and one answered once a small one.
   */
  #out: Buffer = EMPTY_OUT;
  #queuedBytes = 0;
  #queuedFrames = 0;
  #flushScheduled = false;
  #waitingDrain = false;
  #closed = false;
  /** Requests decoded while congested, in arrival order, and the bytes of their bodies. */
  #held: RemotingCommand[] = [];
  #heldBytes = 0;
  readonly #congestedBytes: number;
  /**
   * One timer per connection, armed for the earliest pending deadline, instead of a timer per
   * request: a producer with 32 sends in flight set and cleared 2 timers per message.
   */
  #timeoutTimer: TimerHandle | null = null;
  #timeoutAt = Infinity;
  /** Reads plus frames queued: a server's ConnectionWatch sees idleness by it not moving. */
  activity = 0;
  /** Frames decoded (requests and responses). */
  framesReceived = 0;

  constructor(socket: SocketLike, opts: ConnectionOptions) {
    this.#socket = socket;
    this.#opts = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#now = elapsedNowOf(this.#clock);
    this.#decoder = new FrameDecoder({ frameSizeMaxBytes: opts.frameSizeMaxBytes, chunksOwned: opts.chunksOwned ?? false });
    this.remoteAddress = normalizeAddress(socket.remoteAddress, socket.remotePort);
    this.#congestedBytes = Math.min(CONGESTED_BYTES, Math.floor(opts.connectionBufferMaxBytes / 4));
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Bytes of a frame begun and not complete. */
  get bufferedBytes(): number {
    return this.#decoder.bufferedBytes;
  }

  /** Memory held for that frame (its buffer; at most twice bufferedBytes or 64 KiB more). */
  get reservedBytes(): number {
    return this.#decoder.reservedBytes;
  }

  /** What the server last counted of reservedBytes against remoting.partialFramesMaxBytes (server.ts). */
  partialCharged = 0;

  /** Runs once when the connection closes, for any reason. */
  onClose(listener: (conn: RemotingConnection) => void): void {
    if (this.#closed) listener(this);
    else this.#closeListeners.push(listener);
  }

  /** Socket `data` handler. */
  handleData(chunk: Uint8Array): void {
    this.activity++;
    const result = this.#decoder.feed(chunk);
    if (!Array.isArray(result)) {
      this.#opts.log.rateLimited("warn", "bad-frame", `closing ${this.remoteAddress}: ${result.invalid}`);
      this.close();
      return;
    }
    this.framesReceived += result.length;
    for (const cmd of result) {
      if (isResponse(cmd)) {
        const p = this.#pending.get(cmd.opaque);
        if (p) {
          this.#pending.delete(cmd.opaque);
          p.resolve(cmd);
        }
        // A response nobody waits for (timed out, or an answer to a oneway) is dropped, as Java does.
      } else if (this.#held.length > 0 || this.#congested()) {
        this.#hold(cmd);
      } else {
        this.#opts.onRequest(this, cmd);
      }
      if (this.#closed) return;
    }
  }

  /** Socket `drain` handler. */
  handleDrain(): void {
    this.#waitingDrain = false;
    this.#flush();
    this.#releaseHeld();
  }

  /** The peer is not taking our answers: the socket waits for drain with this much queued. */
  #congested(): boolean {
    return this.#waitingDrain && this.#queuedBytes >= this.#congestedBytes;
  }

  #hold(cmd: RemotingCommand): void {
    this.#held.push(cmd);
    this.#heldBytes += cmd.body?.length ?? 0;
    if (this.#held.length > HELD_REQUESTS_MAX || this.#heldBytes > this.#opts.connectionBufferMaxBytes) {
      this.#opts.log.rateLimited(
        "warn",
        "slow-peer-requests",
        `closing ${this.remoteAddress}: ${this.#held.length} requests (${this.#heldBytes} body bytes) waiting while it does not read ` +
          `its answers (${this.#queuedBytes} bytes queued)`,
      );
      this.close();
    }
  }

  /** Processes held requests in order until none is left or the peer is congested again. */
  #releaseHeld(): void {
    let i = 0;
    while (i < this.#held.length && !this.#closed && !this.#congested()) {
      const cmd = this.#held[i++]!;
      this.#heldBytes -= cmd.body?.length ?? 0;
      this.#opts.onRequest(this, cmd);
    }
    if (i > 0 && !this.#closed) this.#held.splice(0, i);
    assert(this.#heldBytes >= 0, "held request bodies counted {} bytes on {}", this.#heldBytes, this.remoteAddress);
    assert(this.#held.length > 0 || this.#heldBytes === 0, "{} body bytes counted for no held request on {}", this.#heldBytes, this.remoteAddress);
  }

  /** Socket `close`/`error` handler, and our own close. Idempotent. */
  handleClosed(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#out = EMPTY_OUT;
    this.#queuedBytes = 0;
    this.#queuedFrames = 0;
    this.#held = [];
    this.#heldBytes = 0;
    if (this.#timeoutTimer) this.#clock.clearTimeout(this.#timeoutTimer);
    this.#timeoutTimer = null;
    this.#timeoutAt = Infinity;
    // Only when someone waits: an Error captures a stack, and a server's peers (a reconnect
    // storm's thousands a second) close with nothing pending (8 % of the broker's profile).
    if (this.#pending.size > 0) {
      const err = new RemotingClosedError(`connection to ${this.remoteAddress} closed`);
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
    }
    for (const l of this.#closeListeners.splice(0)) {
      try {
        l(this);
      } catch (e) {
        this.#opts.log.error(`close listener failed: ${String(e)}`);
      }
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#socket.end();
    this.handleClosed();
  }

  /** Queues a command; returns false if the connection is closed or was over its buffer limit. */
  send(cmd: RemotingCommand): boolean {
    if (this.#closed) return false;
    const f = prepareFrame(cmd);
    if (!this.#reserve(f.size)) return false;
    writeFrame(this.#out, this.#queuedBytes, f);
    return this.#queued(f.size);
  }

  /** Queues bytes that are already a frame (or several). */
  sendBytes(bytes: Uint8Array): boolean {
    if (this.#closed) return false;
    if (!this.#reserve(bytes.length)) return false;
    this.#out.set(bytes, this.#queuedBytes);
    return this.#queued(bytes.length);
  }

  /** Room for `n` more bytes in #out (grown by doubling), or false (and closed) past the limit. */
  #reserve(n: number): boolean {
    const need = this.#queuedBytes + n;
    if (need > this.#opts.connectionBufferMaxBytes) {
      this.#opts.log.rateLimited("warn", "slow-peer", `closing ${this.remoteAddress}: ${need} bytes queued, over connectionBufferMaxBytes`);
      this.close();
      return false;
    }
    if (need > this.#out.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.#out.length * 2, OUT_BUFFER_FIRST_BYTES));
      grown.set(this.#out.subarray(0, this.#queuedBytes));
      this.#out = grown;
    }
    return true;
  }

  #queued(n: number): boolean {
    // send/sendBytes return on a closed connection, and #reserve returns false when it closes one.
    assert(!this.#closed, "a frame queued on closed connection {}", this.remoteAddress);
    this.activity++;
    this.#queuedBytes += n;
    this.#queuedFrames++;
    assert(this.#queuedBytes <= this.#out.length, "{} bytes queued in an out buffer of {}", this.#queuedBytes, this.#out.length);
    // Enough for one write already: send it now instead of at the end of the turn, so the peer
    // starts on the first part of a burst while this side still encodes the rest (with 32 sends
    // in flight, client and broker otherwise take turns on a 2-core machine instead of overlapping).
    if ((this.#queuedBytes >= EAGER_FLUSH_BYTES || this.#queuedFrames >= EAGER_FLUSH_FRAMES) && !this.#waitingDrain) {
      this.#flush();
      return !this.#closed;
    }
    if (!this.#flushScheduled && !this.#waitingDrain) {
      this.#flushScheduled = true;
      queueMicrotask(() => {
        this.#flushScheduled = false;
        this.#flush();
      });
    }
    return true;
  }

  /** Sends a request and resolves with the matching response, or rejects on timeout/close. */
  invoke(cmd: RemotingCommand, timeoutMs: number): Promise<RemotingCommand> {
    if (this.#closed) return Promise.reject(new RemotingClosedError(`connection to ${this.remoteAddress} closed`));
    return new Promise<RemotingCommand>((resolve, reject) => {
      const deadline = this.#now() + timeoutMs;
      const waiting = this.#pending.size;
      this.#pending.set(cmd.opaque, { resolve, reject, deadline, code: cmd.code, timeoutMs });
      // A reused opaque would take the place of the request waiting under it, which would then never settle.
      assert(this.#pending.size === waiting + 1, "opaque {} is already waiting for its response on {}", cmd.opaque, this.remoteAddress);
      if (deadline < this.#timeoutAt) this.#armTimeout(deadline);
      assert(this.#timeoutAt <= deadline, "the request timer is armed for {}, after the deadline {}", this.#timeoutAt, deadline);
      if (!this.send(cmd)) {
        this.#pending.delete(cmd.opaque);
        reject(new RemotingClosedError(`connection to ${this.remoteAddress} closed`));
      }
    });
  }

  #armTimeout(at: number): void {
    const clock = this.#clock;
    if (this.#timeoutTimer) clock.clearTimeout(this.#timeoutTimer);
    this.#timeoutAt = at;
    this.#timeoutTimer = clock.setTimeout(() => this.#expire(), Math.max(0, Math.ceil(at - this.#now())));
  }

  /** Fails every request past its deadline and re-arms for the earliest one left. */
  #expire(): void {
    // handleClosed cancels the timer: a closed connection has nothing pending.
    assert(!this.#closed, "the request timer fired on closed connection {}", this.remoteAddress);
    this.#timeoutTimer = null;
    this.#timeoutAt = Infinity;
    const now = this.#now();
    let next = Infinity;
    for (const [opaque, p] of this.#pending) {
      if (p.deadline <= now) {
        this.#pending.delete(opaque);
        p.reject(new RemotingTimeoutError(`request code ${p.code} to ${this.remoteAddress} timed out after ${p.timeoutMs} ms`));
      } else if (p.deadline < next) next = p.deadline;
    }
    if (next !== Infinity) this.#armTimeout(next);
  }

  /** Sends a request with the oneway flag; no response is expected. */
  invokeOneway(cmd: RemotingCommand): boolean {
    cmd.flag |= FLAG_ONEWAY;
    return this.send(cmd);
  }

  /** Answers `req` unless it was oneway. */
  reply(req: RemotingCommand, res: RemotingCommand): void {
    if (!isOneway(req)) this.send(res);
  }

  #flush(): void {
    const n = this.#queuedBytes;
    if (this.#closed || n === 0) return;
    const written = this.#socket.write(this.#out.subarray(0, n));
    if (written < 0) {
      this.handleClosed();
      return;
    }
    assert(written <= n, "the socket took {} bytes of a write of {}", written, n);
    this.#queuedFrames = 0;
    if (written < n) {
      // The rest waits for drain, at the front of the buffer.
      this.#out.copyWithin(0, written, n);
      this.#queuedBytes = n - written;
      this.#waitingDrain = true;
      return;
    }
    this.#queuedBytes = 0;
    // A burst of big frames (e.g. pull responses) must not pin a large buffer for the connection's life.
    if (this.#out.length > OUT_BUFFER_KEEP_MAX_BYTES) this.#out = EMPTY_OUT;
  }
}
