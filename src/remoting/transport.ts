/**
 * The few socket operations a RemotingConnection needs, and an outbound connect that works on
 * Bun (native `Bun.connect`) and on Node 20 (`node:net`), so the client library runs on both.
 * The server side runs on Bun and uses Bun.listen directly, unless it is given a
 * `RemotingNetwork` (docs/CONVENTIONS.md §6): the in-process broker fixture and test/sim pass
 * in-memory sockets, so a broker runs with no port and on simulated time.
 */
import type { Socket as NetSocket } from "node:net";
import { connectBun as connectBunSocket, peerProblem, type ClientTls } from "../common/tls.ts";

export interface SocketLike {
  /**
   * Writes what it can; returns bytes taken (-1 if closed). Less than all means: wait for drain.
   * Must not keep `data` after returning: the connection reuses its buffer.
   */
  write(data: Uint8Array): number;
  end(): void;
  readonly remoteAddress: string;
  readonly remotePort: number;
}

export interface SocketEvents {
  open(sock: SocketLike): void;
  data(chunk: Uint8Array): void;
  drain(): void;
  close(): void;
}

/** The events of an accepted socket (it is open already). */
export type AcceptedSocketEvents = Omit<SocketEvents, "open">;

export interface RemotingListener {
  readonly port: number;
  /** Stops accepting and closes the accepted sockets. */
  stop(): void;
}

/**
 * Sockets other than the real ones, for RemotingServer (listen) and RemotingClient (connect).
 * Semantics as TCP: bytes in order, cut anywhere; `write` returns what it took (-1 once closed),
 * the rest waits for `drain`; `close` is reported once.
 */
export interface RemotingNetwork {
  /** Whether a `data` chunk is the receiver's to keep (as `chunksAreOwned` on Bun). */
  readonly chunksOwned: boolean;
  listen(host: string, port: number, accept: (socket: SocketLike) => AcceptedSocketEvents): RemotingListener;
  /** Resolves once connected (after `open` ran); rejects if the connection cannot be made. */
  connect(host: string, port: number, ev: SocketEvents): Promise<SocketLike>;
}

const onBun = typeof globalThis.Bun !== "undefined";

/**
 * Whether a `data` chunk is the receiver's to keep: Bun gives every read its own fresh buffer
 * (transport.test.ts checks it), so the frame decoder keeps views into it instead of copying each
 * frame out. On Node the decoder copies (not relied upon there).
 */
export const chunksAreOwned = onBun;

/**
 * Resolves once connected (after `open` ran; with `tls`, after the handshake and the check of the
 * server's certificate); rejects if the connection cannot be made.
 */
export function connectSocket(host: string, port: number, ev: SocketEvents, tls?: ClientTls): Promise<SocketLike> {
  return onBun ? connectBun(host, port, ev, tls) : connectNode(host, port, ev, tls);
}

function connectBun(host: string, port: number, ev: SocketEvents, tls: ClientTls | undefined): Promise<SocketLike> {
  return connectBunSocket<undefined>(host, port, tls, undefined, {
    binaryType: "uint8array",
    open: (s) => ev.open(s),
    data: (_s, chunk) => ev.data(chunk),
    drain: () => ev.drain(),
    close: () => ev.close(),
    error: () => ev.close(),
  });
}

async function connectNode(host: string, port: number, ev: SocketEvents, tls: ClientTls | undefined): Promise<SocketLike> {
  // Imported here, not at the top: under Bun this transport is unused, and node:net loaded at
  // start kept its pages resident in every server process.
  const net = await import("node:net");
  const sock: NetSocket = tls ? await connectNodeTls(host, port, tls) : net.connect({ host, port });
  return new Promise((resolve, reject) => {
    let opened = false;
    const like: SocketLike = {
      // node:net buffers internally (keeping a reference to what it is given, hence the copy);
      // report everything taken and let 'drain' pace big writers.
      write: (data) => (sock.destroyed ? -1 : (sock.write(Buffer.from(data)), data.length)),
      end: () => sock.end(),
      get remoteAddress() {
        return sock.remoteAddress ?? host;
      },
      get remotePort() {
        return sock.remotePort ?? port;
      },
    };
    sock.setNoDelay(true);
    const ready = () => {
      opened = true;
      ev.open(like);
      resolve(like);
    };
    if (tls) ready();
    else sock.once("connect", ready);
    sock.on("data", (b: Buffer) => ev.data(new Uint8Array(b.buffer, b.byteOffset, b.byteLength)));
    sock.on("drain", () => ev.drain());
    sock.on("close", () => {
      if (opened) ev.close();
    });
    sock.on("error", (e) => {
      if (!opened) reject(e);
    });
  });
}

/** node:tls, settled after the handshake and the certificate check of `tls.verify`. */
async function connectNodeTls(host: string, port: number, tls: ClientTls): Promise<NetSocket> {
  const [{ connect, checkServerIdentity }, { isIP }] = await Promise.all([import("node:tls"), import("node:net")]);
  return new Promise((resolve, reject) => {
    const sock = connect({
      host,
      port,
      ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
      ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
      ...(tls.key !== undefined ? { key: tls.key } : {}),
      ...(tls.passphrase !== undefined ? { passphrase: tls.passphrase } : {}),
      // SNI may not be an IP address; the certificate is checked below, not by node:tls.
      ...(isIP(host) === 0 ? { servername: host } : {}),
      rejectUnauthorized: false,
    });
    const fail = (e: Error) => {
      sock.destroy();
      reject(e);
    };
    sock.once("error", fail);
    sock.once("secureConnect", () => {
      sock.off("error", fail);
      // node:tls checks the host name only with rejectUnauthorized; "full" asks for it here.
      // Node gives the verify error as its code string (e.g. "UNABLE_TO_VERIFY_LEAF_SIGNATURE").
      const raw: unknown = sock.authorizationError;
      const chainError = raw == null ? null : raw instanceof Error ? raw : Object.assign(new Error(String(raw)), { code: String(raw) });
      const hostError = tls.verify === "full" && chainError === null ? (checkServerIdentity(host, sock.getPeerCertificate()) ?? null) : null;
      const problem = peerProblem(tls.verify, sock.authorized && hostError === null, chainError ?? hostError);
      if (problem !== undefined) fail(new Error(`TLS: server certificate refused: ${problem}`));
      else resolve(sock);
    });
  });
}
