/**
 * RemotingServer: Bun.listen + one RemotingConnection per peer + a dispatch table from request
 * code to processor. Unknown codes get REQUEST_CODE_NOT_SUPPORTED (the Java broker's behaviour;
 * the Java name server stays silent and lets the caller time out, which helps nobody). A processor
 * that throws gets SYSTEM_ERROR with the error text; the connection and the process carry on.
 * Every request passes the server's request pipeline (its before- and after-hooks; contract at
 * the top of ./pipeline.ts).
 */
import { assert } from "../common/assert.ts";
import { elapsedNowOf, systemClock, type Clock } from "../common/clock.ts";
import type { Logger } from "../common/log.ts";
import { listenTls, type TlsListener, type TlsServerSide } from "../common/tls.ts";
import { createResponse, isOneway, isResponse, type RemotingCommand } from "./command.ts";
import { RemotingConnection } from "./connection.ts";
import { ConnectRateLimiter } from "./connect-rate.ts";
import { ConnectionWatch } from "./connection-watch.ts";
import { RequestPipeline, type RequestHook } from "./pipeline.ts";
import type { ProcessResult, RequestProcessor } from "./processor.ts";
import { ResponseCode } from "./response-code.ts";
import type { RemotingListener, RemotingNetwork, SocketLike } from "./transport.ts";

export interface RemotingServerOptions {
  host: string;
  port: number;
  frameSizeMaxBytes: number;
  connectionBufferMaxBytes: number;
  log: Logger;
  /** The request pipeline, in order (./pipeline.ts). */
  hooks?: readonly RequestHook[];
  /**
   * The time of everything the server times: its connections' request timeouts, the deadlines of
   * `limits`, the connect rate, the pipeline's elapsedMs. Default the system clock; the broker
   * passes its own (simulated in the in-process fixture and test/sim).
   */
  clock?: Clock;
  /** Default: Bun.listen on host:port; the in-process broker fixture and test/sim pass in-memory sockets. */
  network?: RemotingNetwork;
  /**
   * TLS mode and material (src/common/tls.ts: disabled, permissive, enforcing on one port).
   * Absent: plaintext only. Not used with `network`.
   */
  tls?: TlsServerSide;
  /**
   * remoting.maxConnections / idleTimeoutMs / frameTimeoutMs (./connection-watch.ts). Enforced on
   * real sockets; with `network` the listener's limits (maxConnections, the connect rate, the
   * first byte) do not apply, and the deadlines only with `watchNetwork`.
   */
  limits?: ConnectionLimits;
  /**
   * With `network`: idleTimeoutMs and frameTimeoutMs of `limits` apply, on `clock`. Off by
   * default, so the in-process broker fixture and test/sim keep connections that stay quiet for
   * minutes of simulated time, as they did before the watch could run on their clock.
   */
  watchNetwork?: boolean;
}

export interface ConnectionLimits {
  /** Sockets open at once on this port; 0 = no limit. */
  maxConnections: number;
  /** No traffic for this long closes a connection (and a silent one before its first byte); 0 = never. */
  idleTimeoutMs: number;
  /** A frame (or TLS handshake) begun must complete within this; 0 = never. */
  frameTimeoutMs: number;
  /**
   * Memory all connections of the port may hold for frames still arriving; the connection whose
   * read takes the total past it is closed. 0 = no limit. Absent: no limit.
   */
  partialFramesMaxBytes?: number;
  /**
   * New connections a second one client host may open; more are closed before a byte is read
   * (./connect-rate.ts). 0 = no limit. Absent: no limit.
   */
  maxNewConnectionsPerSecondPerAddress?: number;
}

/**
 * Every read arrives in a fresh buffer (and each frame's body is a view into it), so a busy
 * broker turns over its request bytes as garbage. JSC lets that garbage pile up to hundreds of
 * MiB before collecting, and mimalloc (run with MIMALLOC_PURGE_DELAY=-1) keeps the peak resident.
 * Asking for a collection every 8 MiB received held a send storm at ~95 MiB anonymous RSS
 * instead of ~310 MiB, and cost no CPU (send-blast, 10 s: 12.8 vs 16.7 µs/msg; fewer, smaller
 * collections with less memory to walk). Every 2 MiB: 53–60 MiB anonymous after 200,000 × 1 KiB
 * sends instead of 83–90, with no CPU cost visible above this machine's run-to-run noise
 * (send-blast 11.0/13.0 vs 13.6/9.2 µs/msg, alternating runs). But batch sends (32 KiB each,
 * 200 MB/s) then asked for 100 collections a second and lost a third of their throughput, so
 * requests are also at least GC_MIN_INTERVAL_MS apart. Measured (bench W1/W5, two runs each):
 * no gap 116–119 MiB RSS after W1, W5 6.1–8.7 µs/msg; 10 ms 118–119, 6.0–6.9; 25 ms 124–126,
 * 5.0–5.9; 50 ms 135–136, 4.8–5.1; 8 MiB alone 148–153, 4.7–5.0.
 */
const GC_EVERY_RECEIVED_BYTES = 2 * 1024 * 1024;
const GC_MIN_INTERVAL_MS = 25;

export class RemotingServer {
  readonly #opts: RemotingServerOptions;
  readonly #clock: Clock;
  /** Elapsed-time reading of #clock (elapsedNowOf): the pipeline's elapsedMs, the connect rate. */
  readonly #now: () => number;
  readonly #pipeline: RequestPipeline;
  readonly #processors = new Map<number, RequestProcessor>();
  readonly #connections = new Set<RemotingConnection>();
  readonly #closeListeners: ((conn: RemotingConnection) => void)[] = [];
  #listener: TlsListener | RemotingListener | null = null;
  #watch: ConnectionWatch | undefined;
  #received = 0;
  #gcRequestedAt = 0;
  /** Sum of the connections' partialCharged (remoting.partialFramesMaxBytes). */
  #partialBytes = 0;
  /** Requests dispatched and not yet answered (#respond): never below 0, as each is answered once. */
  #unanswered = 0;

  constructor(opts: RemotingServerOptions) {
    this.#opts = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#now = elapsedNowOf(this.#clock);
    this.#pipeline = new RequestPipeline(opts.hooks ?? [], opts.log);
  }

  register(code: number, processor: RequestProcessor): void {
    this.#processors.set(code, processor);
  }

  registerAll(codes: readonly number[], processor: RequestProcessor): void {
    for (const c of codes) this.register(c, processor);
  }

  /** Called whenever a peer connection closes (namesrv uses it to drop brokers at once). */
  onConnectionClose(listener: (conn: RemotingConnection) => void): void {
    this.#closeListeners.push(listener);
  }

  get port(): number {
    if (!this.#listener) throw new Error("server not started");
    return this.#listener.port;
  }

  get host(): string {
    return this.#opts.host;
  }

  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Accepted sockets open now, counting those not yet past their first byte or TLS handshake. */
  get socketCount(): number {
    const l = this.#listener;
    return l !== null && "connections" in l ? l.connections : this.#connections.size;
  }

  /** Binds the port; throws (e.g. EADDRINUSE) without leaving anything behind. */
  start(): number {
    const opts = this.#opts;
    const net = opts.network;
    const limits = opts.limits;
    if (limits && (!net || opts.watchNetwork === true)) {
      this.#watch = new ConnectionWatch({ ...limits, clock: this.#clock, log: opts.log });
    }
    if (net) {
      this.#listener = net.listen(opts.host, opts.port, (socket) => {
        const conn = this.#accept(socket, net.chunksOwned);
        return { data: (chunk) => conn.handleData(chunk), drain: () => conn.handleDrain(), close: () => conn.handleClosed() };
      });
      return this.#listener.port;
    }
    // Before its first byte a socket is idle, and a TLS handshake is a frame begun.
    const rate = limits?.maxNewConnectionsPerSecondPerAddress ?? 0;
    const limiter = rate > 0 ? new ConnectRateLimiter(rate, this.#now) : undefined;
    const refusal = `over ${rate} new connections a second from this address (remoting.maxNewConnectionsPerSecondPerAddress)`;
    const listenLimits = limits
      ? {
          maxConnections: limits.maxConnections,
          limitKey: "remoting.maxConnections",
          firstByteTimeoutMs: limits.idleTimeoutMs,
          handshakeTimeoutMs: limits.frameTimeoutMs,
          ...(limiter ? { admit: (host: string) => (limiter.admit(host) ? undefined : refusal) } : {}),
        }
      : {};
    const partialMax = limits?.partialFramesMaxBytes ?? 0;
    // One listener for every TLS mode; each connection is classified by its first byte.
    this.#listener = listenTls<RemotingConnection>(
      { hostname: opts.host, port: opts.port, log: opts.log, ...listenLimits, ...(opts.tls ? { tls: opts.tls } : {}) },
      {
        // Bun.listen: every read arrives in a fresh buffer, TLS reads too (transport.test.ts).
        open: (socket) => this.#accept(socket, true),
        data: (conn, chunk) => {
          this.#received += chunk.length;
          if (this.#received >= GC_EVERY_RECEIVED_BYTES) this.#maybeCollect();
          if (partialMax > 0) this.#dataWithinBudget(conn, chunk, partialMax);
          else conn.handleData(chunk);
        },
        drain: (conn) => conn.handleDrain(),
        close: (conn) => conn.handleClosed(),
      },
    );
    return this.#listener.port;
  }

  /**
   * remoting.partialFramesMaxBytes: frameSizeMaxBytes bounds one connection's frame, but 50,000
   * connections each holding most of a 16 MiB frame (within frameTimeoutMs) would be 800 GB. The
   * port's total is kept here, and the connection whose read takes it past the limit is closed.
   */
  #dataWithinBudget(conn: RemotingConnection, chunk: Uint8Array, max: number): void {
    const before = conn.partialCharged;
    conn.handleData(chunk);
    // Closed: its close listener has taken its charge back.
    if (conn.closed) return;
    const now = conn.reservedBytes;
    if (now === before) return;
    this.#partialBytes += now - before;
    conn.partialCharged = now;
    assert(this.#partialBytes >= now, "port total of partial frames {} below one connection's {}", this.#partialBytes, now);
    if (now > before && this.#partialBytes > max) {
      const mib = (n: number) => (n / 1048576).toFixed(1);
      this.#opts.log.rateLimited(
        "warn",
        "partial-frames",
        `closing ${conn.remoteAddress}: frames still arriving on port ${this.port} hold ${mib(this.#partialBytes)} MiB, ` +
          `over remoting.partialFramesMaxBytes (${mib(max)} MiB)`,
      );
      conn.close();
    }
  }

  /** Real time, whatever the clock: this paces the runtime's collector (only ever on real sockets). */
  #maybeCollect(): void {
    const now = performance.now();
    if (now - this.#gcRequestedAt >= GC_MIN_INTERVAL_MS) {
      this.#received = 0;
      this.#gcRequestedAt = now;
      Bun.gc(false);
    }
  }

  #accept(socket: SocketLike, chunksOwned: boolean): RemotingConnection {
    const opts = this.#opts;
    const conn = new RemotingConnection(socket, {
      frameSizeMaxBytes: opts.frameSizeMaxBytes,
      connectionBufferMaxBytes: opts.connectionBufferMaxBytes,
      chunksOwned,
      log: opts.log,
      clock: this.#clock,
      onRequest: (c, cmd) => this.#dispatch(c, cmd),
    });
    this.#connections.add(conn);
    this.#watch?.add(conn);
    conn.onClose((c) => {
      this.#partialBytes -= c.partialCharged;
      c.partialCharged = 0;
      assert(this.#partialBytes >= 0, "partial frames of the port counted {} bytes after a close", this.#partialBytes);
      this.#connections.delete(c);
      this.#watch?.remove(c);
      for (const l of this.#closeListeners) l(c);
    });
    return conn;
  }

  stop(): void {
    this.#watch?.stop();
    this.#watch = undefined;
    for (const c of [...this.#connections]) c.close();
    // Also closes the accepted sockets, TLS ones and those not yet classified.
    this.#listener?.stop();
    this.#listener = null;
  }

  /**
   * Pipeline contract (./pipeline.ts): before-hooks, then the processor; every outcome, sync or
   * later, ends in #respond exactly once. The Promise callbacks are the only per-request
   * allocations, and only for async processors (as before the pipeline).
   */
  #dispatch(conn: RemotingConnection, cmd: RemotingCommand): void {
    const pipeline = this.#pipeline;
    const start = pipeline.observes ? this.#now() : 0;
    this.#unanswered++;
    let result: ProcessResult | Promise<ProcessResult>;
    try {
      result = (pipeline.refuses ? pipeline.refusal(conn, cmd) : undefined) ?? this.#process(conn, cmd);
    } catch (e) {
      result = this.#failure(conn, cmd, e);
    }
    if (result instanceof Promise) {
      result.then(
        (res) => this.#respond(conn, cmd, res, start),
        (e) => this.#respond(conn, cmd, this.#failure(conn, cmd, e), start),
      );
    } else {
      this.#respond(conn, cmd, result, start);
    }
  }

  #process(conn: RemotingConnection, cmd: RemotingCommand): ProcessResult | Promise<ProcessResult> {
    const processor = this.#processors.get(cmd.code);
    if (!processor) return createResponse(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, ` request type ${cmd.code} not supported`);
    if (processor.reject?.()) return createResponse(cmd, ResponseCode.SYSTEM_BUSY, "[REJECTREQUEST]system busy, start flow control for a while");
    return processor.process(conn, cmd);
  }

  /** Sends the answer (never to a oneway request) and tells the after-hooks what was sent. */
  #respond(conn: RemotingConnection, cmd: RemotingCommand, result: ProcessResult, start: number): void {
    // Pipeline contract 2: one answer, and one round of after-hooks, per request.
    assert(--this.#unanswered >= 0, "request code {} from {} answered more often than requests came", cmd.code, conn.remoteAddress);
    // The peer matches the answer by opaque: another one would fail this request and settle someone else's.
    assert(
      result === null || (result.opaque === cmd.opaque && isResponse(result)),
      "request code {} (opaque {}) answered by a command with opaque {}, flag {}",
      cmd.code,
      cmd.opaque,
      result?.opaque,
      result?.flag,
    );
    const response = result && !isOneway(cmd) ? result : undefined;
    if (response) conn.send(response);
    const pipeline = this.#pipeline;
    if (pipeline.observes) {
      const elapsedMs = this.#now() - start;
      assert(elapsedMs >= 0, "request code {} took {} ms: the clock went back", cmd.code, elapsedMs);
      pipeline.after(conn, cmd, response, elapsedMs);
    }
  }

  #failure(conn: RemotingConnection, cmd: RemotingCommand, e: unknown): RemotingCommand {
    const text = e instanceof Error ? e.message : String(e);
    this.#opts.log.rateLimited("error", `process-${cmd.code}`, `request code ${cmd.code} from ${conn.remoteAddress} failed: ${text}`);
    return createResponse(cmd, ResponseCode.SYSTEM_ERROR, text);
  }
}
