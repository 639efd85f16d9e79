/**
 * The 5.x gRPC endpoint (`grpc.listen`, 8081 by default in standalone): one node:net listener
 * whose connections are told apart by their first byte, as Apache's proxy port does:
 *
 *   0x16 (a TLS ClientHello)  → grpc-js's TLS injector (ALPN h2), when a certificate is loaded
 *                               and tls.serverMode is not disabled; else the socket is closed
 *   anything else             → grpc-js's plaintext (h2c, prior knowledge) injector, unless
 *                               tls.serverMode is enforcing
 *
 * (src/common/tls.ts classifyFirstByte.) Bun's node:http2 server does not see bytes put back
 * with socket.unshift() on a plaintext socket, so the h2c side gets a Duplex that replays the
 * first chunk and then relays the socket (ReplaySocket); the TLS side takes the socket itself.
 *
 * Two grpc-js 1.14.7 facts are worked around here (the version is pinned for it):
 * - a `grpc-timeout` above 2^31 ms wraps in its deadline timer and ends the call at once with
 *   DEADLINE_EXCEEDED; the Java SDK opens Telemetry with ~60 years. Such headers are dropped
 *   before grpc-js reads them (clampDeadlines, on its http2 servers, a private field).
 * - its receive limit defaults to 4 MiB; it is raised to Apache's 130 MiB, so that a body just
 *   over 4 MiB reaches SendMessage's MESSAGE_BODY_TOO_LARGE instead of a transport error.
 */
import { createPrivateKey } from "node:crypto";
import type { Http2Server, IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { Duplex } from "node:stream";
import { Server, ServerCredentials, type ConnectionInjector } from "@grpc/grpc-js";
import type { BrokerMessaging } from "../broker/index.ts";
import type { Logger } from "../common/log.ts";
import { classifyFirstByte, FIRST_BYTE_TIMEOUT_MS, type ServerPem, type TlsServerMode } from "../common/tls.ts";
import { serviceDefinition } from "./schema.ts";
import { messagingService } from "./service.ts";

/** Apache's grpcMaxInboundMessageSize. */
export const MAX_RECEIVE_BYTES = 130 * 1024 * 1024;
/** Larger deadlines overflow grpc-js's timer (2^31 ms, with a margin). */
export const MAX_DEADLINE_MS = 2_000_000_000;
const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** The process's TLS side as the endpoint reads it (a TlsContext). */
export interface GrpcTls {
  readonly mode: TlsServerMode;
  serverPem(): ServerPem | undefined;
  onServerPemChange(listener: (pem: ServerPem | undefined) => void): void;
}

export interface GrpcEndpointOptions {
  host: string;
  port: number;
  broker: BrokerMessaging;
  tls: GrpcTls;
  log: Logger;
}

/** A grpc-timeout header's milliseconds, or undefined when it is not one. */
export function timeoutMs(value: string): number | undefined {
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  return m ? Number(m[1]) * UNIT_MS[m[2]!]! : undefined;
}

/** Drops every over-large grpc-timeout before grpc-js's own 'stream' listener reads it. */
function clampDeadlines(server: Server, done: WeakSet<Http2Server>): void {
  const servers = (server as unknown as { http2Servers: Map<Http2Server, unknown> }).http2Servers;
  for (const h2 of servers.keys()) {
    if (done.has(h2)) continue;
    done.add(h2);
    h2.prependListener("stream", (_s: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
      const v = headers["grpc-timeout"];
      if (typeof v === "string" && (timeoutMs(v) ?? 0) > MAX_DEADLINE_MS) delete headers["grpc-timeout"];
    });
  }
}

/** grpc-js's TLS credentials from the PEM texts (an encrypted key decrypted here: grpc-js takes no passphrase). */
function tlsCredentials(pem: ServerPem): ServerCredentials {
  const key =
    pem.passphrase !== undefined ? createPrivateKey({ key: pem.key, passphrase: pem.passphrase }).export({ type: "pkcs8", format: "pem" }) : pem.key;
  return ServerCredentials.createSsl(null, [{ private_key: Buffer.from(key), cert_chain: Buffer.from(pem.cert) }], false);
}

/**
 * A plaintext socket whose first chunk was read to sniff it: the chunk, then the socket's bytes,
 * with backpressure both ways (a full read side pauses the socket, a write completes when the
 * socket took it) and end/destroy passed through.
 */
export class ReplaySocket extends Duplex {
  readonly #sock: Socket;

  constructor(sock: Socket, first: Buffer) {
    super();
    this.#sock = sock;
    this.push(first);
    sock.on("data", (c: Buffer) => {
      if (!this.push(c)) sock.pause();
    });
    sock.on("end", () => this.push(null));
    sock.on("error", (e) => this.destroy(e));
    sock.on("close", () => this.destroy());
  }
  get remoteAddress(): string | undefined {
    return this.#sock.remoteAddress;
  }
  get remotePort(): number | undefined {
    return this.#sock.remotePort;
  }
  get remoteFamily(): string | undefined {
    return this.#sock.remoteFamily;
  }
  get localAddress(): string | undefined {
    return this.#sock.localAddress;
  }
  get localPort(): number | undefined {
    return this.#sock.localPort;
  }
  setNoDelay(noDelay?: boolean): this {
    this.#sock.setNoDelay(noDelay);
    return this;
  }
  setTimeout(ms: number, cb?: () => void): this {
    this.#sock.setTimeout(ms, cb);
    return this;
  }
  setKeepAlive(enable?: boolean, delay?: number): this {
    this.#sock.setKeepAlive(enable, delay);
    return this;
  }
  override _read(): void {
    this.#sock.resume();
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    this.#sock.write(chunk, cb);
  }
  override _final(cb: (e?: Error | null) => void): void {
    this.#sock.end();
    cb();
  }
  override _destroy(e: Error | null, cb: (e?: Error | null) => void): void {
    this.#sock.destroy(e ?? undefined);
    cb(e);
  }
}

export class GrpcEndpoint {
  readonly #o: GrpcEndpointOptions;
  readonly #server: Server;
  readonly #plain: ConnectionInjector;
  #secure: ConnectionInjector | undefined;
  readonly #clamped = new WeakSet<Http2Server>();
  readonly #net: NetServer;
  readonly #sockets = new Set<Socket>();
  #port = 0;
  readonly #refusedLogged = new Set<string>();

  constructor(o: GrpcEndpointOptions) {
    this.#o = o;
    this.#server = new Server({ "grpc.max_receive_message_length": MAX_RECEIVE_BYTES, "grpc.max_send_message_length": -1 });
    this.#server.addService(serviceDefinition(), messagingService({ broker: o.broker, port: () => this.#port, log: o.log }));
    this.#plain = this.#server.createConnectionInjector(ServerCredentials.createInsecure());
    this.#useTls(o.tls.serverPem());
    o.tls.onServerPemChange((pem) => this.#useTls(pem));
    this.#net = createServer((sock) => this.#accept(sock));
  }

  /** Listens; resolves with the port bound (the configured one, or the one picked for port 0). */
  start(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#net.once("error", reject);
      this.#net.listen(this.#o.port, this.#o.host, () => {
        this.#net.off("error", reject);
        const a = this.#net.address();
        this.#port = a !== null && typeof a === "object" ? a.port : this.#o.port;
        resolve(this.#port);
      });
    });
  }

  get port(): number {
    return this.#port;
  }

  /** Stops listening and closes every connection (their calls end). */
  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.#net.close(() => resolve()));
    for (const s of this.#sockets) s.destroy();
    this.#server.forceShutdown();
  }

  /** A new certificate (start, SIGHUP): new TLS connections use it, open ones keep theirs. */
  #useTls(pem: ServerPem | undefined): void {
    if (!pem) {
      this.#secure = undefined;
      return;
    }
    try {
      this.#secure = this.#server.createConnectionInjector(tlsCredentials(pem));
    } catch (e) {
      this.#o.log.error(`gRPC TLS: ${e instanceof Error ? e.message : String(e)}; keeping the previous certificate`);
    }
    clampDeadlines(this.#server, this.#clamped);
  }

  #accept(sock: Socket): void {
    this.#sockets.add(sock);
    sock.on("close", () => this.#sockets.delete(sock));
    sock.on("error", () => {});
    clampDeadlines(this.#server, this.#clamped);
    const timer = setTimeout(() => sock.destroy(), FIRST_BYTE_TIMEOUT_MS);
    sock.once("data", (chunk: Buffer) => {
      clearTimeout(timer);
      sock.pause();
      const kind = classifyFirstByte(this.#o.tls.mode, chunk[0]!, this.#secure !== undefined);
      if (kind === "tls") {
        sock.unshift(chunk);
        this.#secure!.injectConnection(sock);
      } else if (kind === "plain") {
        this.#plain.injectConnection(new ReplaySocket(sock, chunk));
      } else {
        const why =
          kind === "refuse-tls"
            ? "a TLS handshake, but no certificate is loaded or tls.serverMode is disabled"
            : "plaintext, but tls.serverMode is enforcing";
        this.#refuse(sock, why);
      }
    });
  }

  #refuse(sock: Socket, why: string): void {
    const from = sock.remoteAddress ?? "?";
    if (!this.#refusedLogged.has(`${from} ${why}`) && this.#refusedLogged.size < 1000) {
      this.#refusedLogged.add(`${from} ${why}`);
      this.#o.log.warn(`gRPC connection from ${from} closed: ${why}`);
    }
    sock.destroy();
  }
}
