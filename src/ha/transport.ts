/**
 * The HA link as a collaborator (docs/CONVENTIONS.md §6): the master's HAService and the slave's
 * HAClient reach each other only through an `HaTransport`, so test/sim can run both in one process
 * over a simulated link that splits, delays, drops and partitions. Production uses `tcpTransport`
 * (Bun.listen / Bun.connect, TCP_NODELAY); a socket event costs one extra call through the
 * handlers object, nothing is allocated per chunk.
 *
 * Semantics every implementation keeps (what TCP gives): bytes arrive in order, cut anywhere;
 * `write` takes what fits and returns how many bytes it took (the rest waits for `drain`), -1
 * once the socket is closed; after `end()` the written bytes are still delivered, after
 * `terminate()` they may not be; `close` is reported once, for either side's close or a failure.
 */
import type { Socket } from "bun";
import { scope } from "../common/log.ts";
import { connectBun, listenTls, type ClientTls, type TlsServerSide } from "../common/tls.ts";

export interface HaSocket {
  /** "host:port" of the peer (for logs and status). */
  readonly remoteAddress: string;
  write(data: Uint8Array): number;
  end(): void;
  terminate(): void;
}

export interface HaSocketEvents {
  data(chunk: Uint8Array): void;
  drain(): void;
  close(): void;
}

export interface HaListener {
  readonly port: number;
  stop(): void;
}

export interface HaTransport {
  /** Accepts connections; `accept` returns the handlers for the new socket's events. */
  listen(host: string, port: number, accept: (socket: HaSocket) => HaSocketEvents): HaListener;
  /** Resolves once connected; rejects when the peer cannot be reached. */
  connect(host: string, port: number, events: HaSocketEvents): Promise<HaSocket>;
}

interface Slot {
  events: HaSocketEvents | undefined;
}

/** What TcpHaSocket uses of a Bun socket (plain or TLS, any `data` type). */
type BunSocketOps = Pick<Socket<unknown>, "write" | "end" | "terminate" | "remoteAddress" | "remotePort">;

class TcpHaSocket implements HaSocket {
  readonly #s: BunSocketOps;
  readonly remoteAddress: string;

  constructor(s: BunSocketOps) {
    this.#s = s;
    this.remoteAddress = `${s.remoteAddress}:${s.remotePort}`;
  }

  write(data: Uint8Array): number {
    return this.#s.write(data);
  }

  end(): void {
    this.#s.end();
  }

  terminate(): void {
    this.#s.terminate();
  }
}

const handlers = {
  binaryType: "uint8array" as const,
  data: (s: Socket<Slot>, chunk: Uint8Array) => s.data.events?.data(chunk),
  drain: (s: Socket<Slot>) => s.data.events?.drain(),
  close: (s: Socket<Slot>) => s.data.events?.close(),
  error: (s: Socket<Slot>) => s.data.events?.close(),
};

/**
 * The real link over TCP: the listener serves `tls`'s mode (absent: plaintext, a ClientHello is
 * closed); a connection uses TLS when `clientTls` returns options (asked per connect, so a reload
 * applies to the next one).
 */
export function tlsTransport(tls?: TlsServerSide, clientTls?: () => ClientTls | undefined): HaTransport {
  const log = scope("ha");
  return {
    listen(host, port, accept) {
      const listener = listenTls<HaSocketEvents>(
        { hostname: host, port, log, ...(tls ? { tls } : {}) },
        {
          open: (s) => accept(new TcpHaSocket(s)),
          data: (events, chunk) => events.data(chunk),
          drain: (events) => events.drain(),
          close: (events) => events.close(),
        },
      );
      return {
        get port() {
          return listener.port;
        },
        // Also closes the accepted sockets (as HAService.stop expects).
        stop: () => listener.stop(),
      };
    },
    async connect(host, port, events) {
      const s = await connectBun<Slot>(host, port, clientTls?.(), { events }, handlers);
      return new TcpHaSocket(s);
    },
  };
}

/** Plain TCP through Bun's sockets. */
export const tcpTransport: HaTransport = tlsTransport();
