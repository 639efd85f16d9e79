/**
 * RemotingClient: one long-lived connection per server address (RocketMQ peers rely on that: a
 * name server treats the close of a broker's connection as "broker gone"), opened lazily, reopened
 * on the next call after it breaks. Requests from the server side (e.g. NOTIFY_CONSUMER_IDS_CHANGED)
 * go to `onRequest`.
 */
import { assert } from "../common/assert.ts";
import { systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import type { Logger } from "../common/log.ts";
import type { ClientTls } from "../common/tls.ts";
import type { RemotingCommand } from "./command.ts";
import { RemotingClosedError, RemotingConnection } from "./connection.ts";
import { chunksAreOwned, connectSocket, type RemotingNetwork, type SocketEvents } from "./transport.ts";

export interface RemotingClientOptions {
  frameSizeMaxBytes: number;
  connectionBufferMaxBytes: number;
  connectTimeoutMs: number;
  log: Logger;
  onRequest?: (conn: RemotingConnection, cmd: RemotingCommand) => void;
  /** The connect timeout's and the requests' timeouts' time; default the system clock (test/sim: simulated time). */
  clock?: Clock;
  /** Default: real sockets (Bun.connect or node:net); tests and test/sim pass in-memory ones. */
  network?: RemotingNetwork;
  /** TLS for each new connection (asked per connect, so reloaded certificates apply); undefined = plaintext. Not used with `network`. */
  tls?: () => ClientTls | undefined;
}

export const REMOTING_CLIENT_DEFAULTS = {
  frameSizeMaxBytes: 16 * 1024 * 1024,
  connectionBufferMaxBytes: 64 * 1024 * 1024,
  connectTimeoutMs: 3000,
} as const;

export function splitHostPort(addr: string): { host: string; port: number } {
  const m = /^\[(.+)\]:(\d+)$/.exec(addr) ?? /^([^:]+):(\d+)$/.exec(addr);
  if (!m) throw new Error(`bad address "${addr}", expected HOST:PORT`);
  return { host: m[1]!, port: Number(m[2]) };
}

export class RemotingClient {
  readonly #opts: RemotingClientOptions;
  readonly #connections = new Map<string, Promise<RemotingConnection>>();
  /** The connected ones, for invoke's synchronous fast path (no promise to await per request). */
  readonly #open = new Map<string, RemotingConnection>();
  #closed = false;

  constructor(opts: RemotingClientOptions) {
    this.#opts = opts;
  }

  /** The live connection to `addr`, connecting if needed. */
  connection(addr: string): Promise<RemotingConnection> {
    if (this.#closed) return Promise.reject(new RemotingClosedError("client closed"));
    const existing = this.#connections.get(addr);
    if (existing) return existing;
    // An open connection keeps its entry in #connections until it closes (then both go).
    assert(!this.#open.has(addr), "{}: an open connection without its entry", addr);
    const p = this.#connect(addr);
    this.#connections.set(addr, p);
    p.then(
      (conn) => {
        if (this.#connections.get(addr) === p) this.#open.set(addr, conn);
        conn.onClose(() => {
          if (this.#connections.get(addr) === p) this.#connections.delete(addr);
          if (this.#open.get(addr) === conn) this.#open.delete(addr);
        });
      },
      () => {
        if (this.#connections.get(addr) === p) this.#connections.delete(addr);
      },
    );
    return p;
  }

  invoke(addr: string, cmd: RemotingCommand, timeoutMs: number): Promise<RemotingCommand> {
    const open = this.#open.get(addr);
    if (open !== undefined && !open.closed) return open.invoke(cmd, timeoutMs);
    return this.connection(addr).then((conn) => conn.invoke(cmd, timeoutMs));
  }

  async invokeOneway(addr: string, cmd: RemotingCommand): Promise<void> {
    const conn = await this.connection(addr);
    if (!conn.invokeOneway(cmd)) throw new RemotingClosedError(`connection to ${addr} closed`);
  }

  /** Closes the connection to one address (the next call reconnects). */
  async disconnect(addr: string): Promise<void> {
    const p = this.#connections.get(addr);
    this.#connections.delete(addr);
    this.#open.delete(addr);
    if (p) (await p.catch(() => null))?.close();
  }

  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#connections.values()];
    this.#connections.clear();
    this.#open.clear();
    for (const p of all) (await p.catch(() => null))?.close();
  }

  async #connect(addr: string): Promise<RemotingConnection> {
    const { host, port } = splitHostPort(addr);
    const opts = this.#opts;
    const clock = opts.clock ?? systemClock;
    let conn: RemotingConnection | undefined;
    const net = opts.network;
    const tls = net ? undefined : opts.tls?.();
    const connect = net ? net.connect.bind(net) : (h: string, p: number, ev: SocketEvents) => connectSocket(h, p, ev, tls);
    const connecting = connect(host, port, {
      open: (socket) => {
        conn = new RemotingConnection(socket, {
          frameSizeMaxBytes: opts.frameSizeMaxBytes,
          connectionBufferMaxBytes: opts.connectionBufferMaxBytes,
          chunksOwned: net ? net.chunksOwned : chunksAreOwned,
          log: opts.log,
          clock,
          onRequest: opts.onRequest ?? (() => {}),
        });
      },
      data: (chunk) => conn?.handleData(chunk),
      drain: () => conn?.handleDrain(),
      close: () => conn?.handleClosed(),
    });
    let timer: TimerHandle | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = clock.setTimeout(
        () => reject(new RemotingClosedError(`connect to ${addr} timed out after ${opts.connectTimeoutMs} ms`)),
        opts.connectTimeoutMs,
      );
    });
    try {
      const socket = await Promise.race([connecting, timeout]);
      if (!conn) {
        socket.end();
        throw new RemotingClosedError(`connect to ${addr} failed`);
      }
      if (this.#closed) {
        conn.close();
        throw new RemotingClosedError("client closed");
      }
      return conn;
    } catch (e) {
      // A connect that completes after the timeout must not stay open as an orphan connection.
      connecting.then(
        (socket) => (conn ? conn.close() : socket.end()),
        () => {},
      );
      if (e instanceof RemotingClosedError) throw e;
      throw new RemotingClosedError(`connect to ${addr} failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      if (timer !== undefined) clock.clearTimeout(timer);
    }
  }
}
