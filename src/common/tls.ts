/**
 * TLS for every listening port and every outgoing connection, on Bun's built-in TLS (BoringSSL);
 * nothing here does cryptography itself. It lives in common/ because the remoting server and
 * client and the HA link (which may not import remoting/) all use it.
 *
 * Server side, RocketMQ's three modes (TlsSystemConfig `tls.server.mode`) on ONE plain listener:
 *
 *   first byte of a connection | disabled         | permissive                 | enforcing
 *   ---------------------------+------------------+----------------------------+------------------
 *   0x16 (a TLS ClientHello)   | close            | TLS (close if no cert set) | TLS
 *   anything else              | plaintext        | plaintext                  | close
 *
 * A TLS connection is upgraded in place with `upgradeTLS`, the ClientHello already read handed
 * over as `initialData`. A native `Bun.listen({ tls })` cannot serve plaintext on the same port
 * and cannot change its certificates (listener.reload ignores `tls`), while the upgrade reads the
 * options in force for each new connection, so a reload is just swapping that object. Nothing is
 * read from a connection until its first byte (or ClientHello) arrives within
 * FIRST_BYTE_TIMEOUT_MS, and a TLS handshake must finish within the same time.
 *
 * Client side: `connectBun` settles only after the handshake and the peer check of `TlsVerify`.
 * Java's client checks the chain (when it is given a trust file) but never the host name — broker
 * addresses are IPs from the name server — so "chain" accepts a certificate whose only fault is
 * the name, and "none" (Java's default test mode) accepts any.
 */
import type { Socket, SocketHandler, TCPSocketListener, TLSOptions } from "bun";
import { readFileSync } from "node:fs";
import type { Logger } from "./log.ts";

export type TlsServerMode = "disabled" | "permissive" | "enforcing";
export const TLS_SERVER_MODES: readonly TlsServerMode[] = ["disabled", "permissive", "enforcing"];

/** Whether a TLS client must show a certificate signed by tls.trustCertPath (Java: tls.server.need.client.auth). */
export type TlsClientAuth = "none" | "optional" | "require";
export const TLS_CLIENT_AUTHS: readonly TlsClientAuth[] = ["none", "optional", "require"];

/** How a client checks the server: not at all (Java's test mode), the chain only (Java's check), or chain and host name. */
export type TlsVerify = "none" | "chain" | "full";

/** The configuration's `tls` section (src/config/schema.ts documents each key). */
export interface TlsSettings {
  serverMode: TlsServerMode;
  certPath: string;
  keyPath: string;
  keyPassword: string;
  trustCertPath: string;
  needClientAuth: TlsClientAuth;
  enable: boolean;
  clientTrustCertPath: string;
  clientCertPath: string;
  clientKeyPath: string;
}

/** The PEM texts a server presents (also what an HTTPS admin port serves). */
export interface ServerPem {
  cert: string;
  key: string;
  passphrase?: string;
  /** CA bundle client certificates must chain to (tls.trustCertPath), if set. */
  ca?: string;
}

/** What an outgoing connection uses; `verify` decides what it accepts. */
export interface ClientTls {
  verify: TlsVerify;
  ca?: string;
  cert?: string;
  key?: string;
  passphrase?: string;
}

/** A listener's TLS side: its mode and the options in force now (undefined: no certificate configured). */
export interface TlsServerSide {
  readonly mode: TlsServerMode;
  options(): TLSOptions | undefined;
}

/** What a process's components take: the listeners' side and the outgoing connections' options (TlsContext). */
export interface TlsMaterial extends TlsServerSide {
  /** Options for a new outgoing connection, or undefined for plaintext (tls.enable false). */
  client(): ClientTls | undefined;
}

/**
 * Defaults of a listener's deadlines (the remoting server passes remoting.idleTimeoutMs and
 * remoting.frameTimeoutMs): how long a new connection may stay silent before its first byte, and
 * how long its TLS handshake may take once begun.
 */
export const FIRST_BYTE_TIMEOUT_MS = 10_000;
export const HANDSHAKE_TIMEOUT_MS = 10_000;

const TLS_HANDSHAKE_RECORD = 0x16;

/** The decision table at the top of this file, for one first chunk. */
export function classifyFirstByte(mode: TlsServerMode, firstByte: number, haveCert: boolean): "tls" | "plain" | "refuse-tls" | "refuse-plain" {
  if (firstByte === TLS_HANDSHAKE_RECORD) return mode !== "disabled" && haveCert ? "tls" : "refuse-tls";
  return mode === "enforcing" ? "refuse-plain" : "plain";
}

// ---------------------------------------------------------------------------------------------
// Loading and checking the files

type Problem = { key: keyof TlsSettings; problem: string };

function readText(path: string, key: keyof TlsSettings): string | Problem {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    const code = (e as { code?: string }).code;
    const why = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : e instanceof Error ? e.message : String(e);
    return { key, problem: `cannot read ${path}: ${why}` };
  }
}

/** Lazily: node:tls and node:crypto stay out of a process that never uses TLS. */
async function nodeTls(): Promise<typeof import("node:tls")> {
  return await import("node:tls");
}

/** Turns BoringSSL's and OpenSSL's terse errors into what an operator should check. */
function explain(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  if (/KEY_VALUES_MISMATCH|key values mismatch/i.test(msg)) return "the private key does not belong to the certificate";
  if (/bad decrypt|BAD_DECRYPT|bad password/i.test(msg)) return "cannot decrypt the private key (wrong or missing tls.keyPassword)";
  return msg;
}

/**
 * Reads the server's certificate, key and client CA and checks them the way the TLS engine will
 * (node:tls createSecureContext: parsable PEM, key matching the certificate, passphrase). Returns
 * undefined when no certificate is configured.
 */
export async function loadServerPem(s: TlsSettings): Promise<ServerPem | undefined | Problem> {
  if (s.certPath === "" && s.keyPath === "") return undefined;
  if (s.certPath === "") return { key: "certPath", problem: "missing: tls.keyPath is set, the certificate is not" };
  if (s.keyPath === "") return { key: "keyPath", problem: "missing: tls.certPath is set, the key is not" };
  const cert = readText(s.certPath, "certPath");
  if (typeof cert !== "string") return cert;
  const key = readText(s.keyPath, "keyPath");
  if (typeof key !== "string") return key;
  const ca = s.trustCertPath === "" ? undefined : readText(s.trustCertPath, "trustCertPath");
  if (ca !== undefined && typeof ca !== "string") return ca;
  const pem: ServerPem = { cert, key, ...(s.keyPassword !== "" ? { passphrase: s.keyPassword } : {}), ...(ca !== undefined ? { ca } : {}) };
  const problem = await checkPem(pem, "certPath");
  return problem ?? pem;
}

/** The client's own certificate and trust file (for tls.enable); verify "none" without a trust file, as Java's test mode. */
export async function loadClientTls(s: TlsSettings): Promise<ClientTls | Problem> {
  if ((s.clientCertPath === "") !== (s.clientKeyPath === "")) {
    return { key: s.clientCertPath === "" ? "clientCertPath" : "clientKeyPath", problem: "tls.clientCertPath and tls.clientKeyPath go together" };
  }
  const out: ClientTls = { verify: s.clientTrustCertPath === "" ? "none" : "chain" };
  if (s.clientTrustCertPath !== "") {
    const ca = readText(s.clientTrustCertPath, "clientTrustCertPath");
    if (typeof ca !== "string") return ca;
    out.ca = ca;
  }
  if (s.clientCertPath !== "") {
    const cert = readText(s.clientCertPath, "clientCertPath");
    if (typeof cert !== "string") return cert;
    const key = readText(s.clientKeyPath, "clientKeyPath");
    if (typeof key !== "string") return key;
    out.cert = cert;
    out.key = key;
    if (s.keyPassword !== "") out.passphrase = s.keyPassword;
  }
  const problem = out.cert !== undefined || out.ca !== undefined ? await checkPem(out, "clientCertPath") : undefined;
  return problem ?? out;
}

async function checkPem(p: { cert?: string; key?: string; passphrase?: string; ca?: string }, key: keyof TlsSettings): Promise<Problem | undefined> {
  try {
    (await nodeTls()).createSecureContext(p);
    return undefined;
  } catch (e) {
    return { key, problem: explain(e) };
  }
}

/** Both sides' material, checked; what preflight and TlsContext.load use. Problems name `tls.<key>`. */
export async function checkTlsSettings(s: TlsSettings): Promise<{ key: string; problem: string }[]> {
  const problems: { key: string; problem: string }[] = [];
  const server = await loadServerPem(s);
  if (server !== undefined && "problem" in server) problems.push({ key: `tls.${server.key}`, problem: server.problem });
  if (s.enable) {
    const client = await loadClientTls(s);
    if ("problem" in client) problems.push({ key: `tls.${client.key}`, problem: client.problem });
  }
  return problems;
}

function serverOptions(pem: ServerPem, auth: TlsClientAuth): TLSOptions {
  return {
    cert: pem.cert,
    key: pem.key,
    ...(pem.passphrase !== undefined ? { passphrase: pem.passphrase } : {}),
    ...(pem.ca !== undefined ? { ca: pem.ca } : {}),
    requestCert: auth !== "none",
    rejectUnauthorized: auth === "require",
  };
}

// ---------------------------------------------------------------------------------------------
// The material in force, and its reload

export type TlsReloadOutcome = { status: "reloaded" | "unchanged" | "off" } | { status: "kept"; problems: string[] };

/**
 * The TLS material of one process: the listeners' options (shared by every port), the outgoing
 * connections' options, and `reload()` (SIGHUP), which re-reads the same paths and swaps both only
 * when everything is valid, so a half-written or mismatched file keeps the old certificates.
 * New connections use the new material; open ones keep theirs.
 */
export class TlsContext implements TlsMaterial {
  readonly mode: TlsServerMode;
  readonly #settings: TlsSettings;
  readonly #log: Logger;
  #pem: ServerPem | undefined;
  #server: TLSOptions | undefined;
  #client: ClientTls | undefined;
  readonly #listeners: ((pem: ServerPem | undefined) => void)[] = [];

  private constructor(settings: TlsSettings, log: Logger, pem: ServerPem | undefined, client: ClientTls | undefined) {
    this.mode = settings.serverMode;
    this.#settings = settings;
    this.#log = log;
    this.#set(pem, client);
  }

  /** Reads and checks everything; throws with `tls.<key>: problem` lines (preflight has said so already). */
  static async load(settings: TlsSettings, log: Logger): Promise<TlsContext> {
    const read = await readAll(settings);
    if ("problems" in read) throw new Error(read.problems.join("; "));
    const ctx = new TlsContext(settings, log, read.pem, read.client);
    if (read.pem !== undefined || read.client !== undefined) log.info(await ctx.#describe());
    return ctx;
  }

  options(): TLSOptions | undefined {
    return this.#server;
  }

  /** The certificate and key in force (after reloads), e.g. for an HTTPS admin port; undefined without a certificate. */
  serverPem(): ServerPem | undefined {
    return this.#pem;
  }

  /** What outgoing connections use, or undefined when tls.enable is false. */
  client(): ClientTls | undefined {
    return this.#client;
  }

  /** Called after each reload that changed the server material (an HTTPS server rebuilds its context). */
  onServerPemChange(listener: (pem: ServerPem | undefined) => void): void {
    this.#listeners.push(listener);
  }

  /** SIGHUP: re-read the files; logs what happened. Never throws. */
  async reload(): Promise<TlsReloadOutcome> {
    if (!this.#settings.enable && this.#settings.certPath === "" && this.#settings.keyPath === "") return { status: "off" };
    const read = await readAll(this.#settings);
    if ("problems" in read) {
      for (const p of read.problems) this.#log.error(`TLS reload: ${p}`);
      this.#log.error("TLS reload: keeping the certificates in use");
      return { status: "kept", problems: read.problems };
    }
    const serverChanged = read.pem?.cert !== this.#pem?.cert || read.pem?.key !== this.#pem?.key || read.pem?.ca !== this.#pem?.ca;
    const changed = serverChanged || JSON.stringify(read.client) !== JSON.stringify(this.#client);
    if (!changed) {
      this.#log.info("TLS reload: certificate files unchanged");
      return { status: "unchanged" };
    }
    this.#set(read.pem, read.client);
    this.#log.info(`TLS reload: new connections use the new files; ${await this.#describe()}`);
    if (serverChanged) for (const l of this.#listeners) l(read.pem);
    return { status: "reloaded" };
  }

  #set(pem: ServerPem | undefined, client: ClientTls | undefined): void {
    this.#pem = pem;
    this.#server = pem === undefined ? undefined : serverOptions(pem, this.#settings.needClientAuth);
    this.#client = client;
  }

  async #describe(): Promise<string> {
    const s = this.#settings;
    const server = this.#pem === undefined ? "no certificate" : `${await certSummary(this.#pem.cert)}, client auth ${s.needClientAuth}`;
    const client = this.#client === undefined ? "plaintext" : `TLS (verify ${this.#client.verify})`;
    return `TLS: server mode ${s.serverMode} (${server}); outgoing connections ${client}`;
  }
}

async function readAll(s: TlsSettings): Promise<{ pem: ServerPem | undefined; client: ClientTls | undefined } | { problems: string[] }> {
  const pem = await loadServerPem(s);
  const client = s.enable ? await loadClientTls(s) : undefined;
  const problems: string[] = [];
  if (pem !== undefined && "problem" in pem) problems.push(`tls.${pem.key}: ${pem.problem}`);
  if (client !== undefined && "problem" in client) problems.push(`tls.${client.key}: ${client.problem}`);
  if (problems.length > 0) return { problems };
  return { pem: pem as ServerPem | undefined, client: client as ClientTls | undefined };
}

/** "CN=broker, valid until <date>" for the log (the first certificate of the chain). */
async function certSummary(pem: string): Promise<string> {
  try {
    const { X509Certificate } = await import("node:crypto");
    const c = new X509Certificate(pem);
    return `certificate ${c.subject.replace(/\n/g, ", ")}, valid until ${c.validTo}`;
  } catch {
    return "certificate";
  }
}

// ---------------------------------------------------------------------------------------------
// The server side: one listener for the three modes

/** What a listener user sees: plaintext events of an accepted connection, TLS or not. */
export interface AcceptHandlers<U> {
  /** A connection is ready (plaintext decided, or TLS handshake done and the peer accepted). */
  open(socket: Socket<unknown>): U;
  data(user: U, chunk: Uint8Array): void;
  drain(user: U): void;
  close(user: U): void;
}

const UNDECIDED = 0;
const PLAIN = 1;
/** The raw socket of an upgraded connection: its handlers see ciphertext and must ignore it. */
const UPGRADED = 2;
const TLS_HANDSHAKING = 3;
const TLS_OPEN = 4;
const CLOSED = 5;

interface Slot<U> {
  state: number;
  user: U | undefined;
  /** Raw slot: still counted against maxConnections (released exactly once, by either side's close). */
  counted?: boolean;
  /** The raw socket's first-byte and handshake deadline; cleared once the connection is open. */
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Raw slot: the TLS socket it was upgraded to. TLS slot: the raw slot (to clear its timer). */
  tls?: Socket<Slot<U>>;
  raw?: Slot<U>;
}

/**
 * Bun's server-side upgrade with the bytes already read (undocumented in Bun 1.4's types:
 * `isServer` and `initialData`). `initialData` is fed synchronously, so the caller marks the raw
 * socket upgraded before calling.
 */
function upgradeToTls<D>(raw: Socket<unknown>, initialData: Uint8Array, tls: TLSOptions, socket: SocketHandler<D>, data: D): Socket<D> {
  type ServerUpgrade = { isServer: true; initialData: Uint8Array; tls: TLSOptions; socket: SocketHandler<D>; data: D };
  const upgrade = raw.upgradeTLS as unknown as (o: ServerUpgrade) => [Socket<D>, Socket<D>];
  return upgrade.call(raw, { isServer: true, initialData, tls, socket, data })[1];
}

export interface TlsListenOptions {
  hostname: string;
  port: number;
  /** Absent: plaintext only, a ClientHello is closed (disabled mode). */
  tls?: TlsServerSide;
  log: Logger;
  /** Default FIRST_BYTE_TIMEOUT_MS; 0 = none. */
  firstByteTimeoutMs?: number;
  /** Default HANDSHAKE_TIMEOUT_MS; 0 = none. */
  handshakeTimeoutMs?: number;
  /**
   * Accepted sockets open at once (silent, handshaking and open ones alike); one more is closed
   * at once with a rate-limited warning naming `limitKey`. Default 0: no limit.
   */
  maxConnections?: number;
  /** The config key named in the refusal (default "maxConnections"). */
  limitKey?: string;
  /**
   * Asked for each accepted socket before anything else, with the peer's host: a reason to refuse
   * it, which closes it at once with a rate-limited warning, or undefined (remoting's
   * per-address connection rate, src/remoting/connect-rate.ts).
   */
  admit?: (host: string) => string | undefined;
}

export interface TlsListener {
  readonly port: number;
  /** Accepted sockets open now, counted as maxConnections counts them. */
  readonly connections: number;
  /** Stops accepting and closes every connection, upgraded ones included (stop(true) alone misses them). */
  stop(): void;
}

/** One listener serving the mode of `o.tls` (table at the top of this file). */
export function listenTls<U>(o: TlsListenOptions, h: AcceptHandlers<U>): TlsListener {
  const upgraded = new Set<Socket<Slot<U>>>();
  const timeoutMs = o.firstByteTimeoutMs ?? FIRST_BYTE_TIMEOUT_MS;
  const limit = o.maxConnections ?? 0;
  const admit = o.admit;
  const count = { open: 0 };
  const release = (slot: Slot<U> | undefined): void => {
    if (slot?.counted !== true) return;
    slot.counted = false;
    count.open--;
  };
  const tlsSide = tlsHandlers(o, h, upgraded, release);
  const listener: TCPSocketListener<Slot<U>> = Bun.listen<Slot<U>>({
    hostname: o.hostname,
    port: o.port,
    socket: {
      binaryType: "uint8array",
      open: (s) => {
        const host = admit ? s.remoteAddress : "";
        const refusal = admit?.(host);
        if (refusal !== undefined) return refuse(o, s, "connection-rate", `connection from ${host} refused: ${refusal}`);
        if (limit > 0 && count.open >= limit) {
          const key = o.limitKey ?? "maxConnections";
          return refuse(o, s, "connection-limit", `connection from ${s.remoteAddress} refused: ${count.open} connections open, the limit (${key})`);
        }
        count.open++;
        s.setNoDelay(true);
        s.data = { state: UNDECIDED, user: undefined, timer: undefined, counted: true };
        if (timeoutMs > 0) s.data.timer = setTimeout(() => silent(o, s, timeoutMs), timeoutMs);
      },
      data: (s, chunk) => {
        const slot = s.data;
        if (slot.state === PLAIN) h.data(slot.user as U, chunk);
        else if (slot.state === UNDECIDED) firstChunk(o, h, s, chunk, tlsSide, upgraded);
      },
      drain: (s) => {
        if (s.data?.state === PLAIN) h.drain(s.data.user as U);
      },
      close: (s) => {
        release(s.data);
        closeSlot(s.data, h);
      },
      error: (s, e) => {
        o.log.rateLimited("debug", "socket-error", `socket error from ${s.remoteAddress}: ${e.message}`);
        release(s.data);
        closeSlot(s.data, h);
      },
    },
  });
  return {
    get port() {
      return listener.port;
    },
    get connections() {
      return count.open;
    },
    stop() {
      for (const s of [...upgraded]) s.terminate();
      upgraded.clear();
      listener.stop(true);
    },
  };
}

/** Closes an accepted socket before anything is read from it, with a rate-limited warning. */
function refuse<U>(o: TlsListenOptions, s: Socket<Slot<U>>, key: string, msg: string): void {
  s.data = { state: CLOSED, user: undefined, timer: undefined };
  o.log.rateLimited("warn", key, msg);
  s.terminate();
}

function closeSlot<U>(slot: Slot<U> | undefined, h: AcceptHandlers<U>): void {
  if (!slot) return;
  if (slot.timer !== undefined) clearTimeout(slot.timer);
  slot.timer = undefined;
  const wasOpen = slot.state === PLAIN || slot.state === TLS_OPEN;
  if (slot.state !== UPGRADED) slot.state = CLOSED;
  if (wasOpen) h.close(slot.user as U);
}

/** No first byte, or no finished handshake, in time: close (the upgraded side too). */
function silent<U>(o: TlsListenOptions, s: Socket<Slot<U>>, timeoutMs: number): void {
  if (s.data.state === CLOSED) return;
  const slot = s.data;
  slot.timer = undefined;
  const tls = slot.tls;
  if (tls !== undefined) {
    o.log.rateLimited("warn", "tls-slow-handshake", `TLS handshake from ${s.remoteAddress} not finished within ${timeoutMs} ms: closed`);
    tls.terminate();
  } else {
    o.log.rateLimited("debug", "tls-silent", `connection from ${s.remoteAddress} sent nothing for ${timeoutMs} ms: closed`);
  }
  s.terminate();
}

function firstChunk<U>(
  o: TlsListenOptions,
  h: AcceptHandlers<U>,
  s: Socket<Slot<U>>,
  chunk: Uint8Array,
  tlsSide: SocketHandler<Slot<U>>,
  upgraded: Set<Socket<Slot<U>>>,
): void {
  const slot = s.data;
  const mode = o.tls?.mode ?? "disabled";
  const options = o.tls?.options();
  const decision = classifyFirstByte(mode, chunk[0] ?? 0, options !== undefined);
  if (decision === "plain") {
    if (slot.timer !== undefined) clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.state = PLAIN;
    slot.user = h.open(s as Socket<unknown>);
    h.data(slot.user, chunk);
    return;
  }
  if (decision === "tls" && options !== undefined) {
    // Set before the call: the ClientHello is fed synchronously and the raw handlers see bytes too.
    // The raw socket's timer now closes a handshake that does not finish.
    if (slot.timer !== undefined) clearTimeout(slot.timer);
    const handshakeMs = o.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS;
    slot.timer = handshakeMs > 0 ? setTimeout(() => silent(o, s, handshakeMs), handshakeMs) : undefined;
    slot.state = UPGRADED;
    const t = upgradeToTls<Slot<U>>(s as Socket<unknown>, chunk, options, tlsSide, {
      state: TLS_HANDSHAKING,
      user: undefined,
      timer: undefined,
      raw: slot,
    });
    if (slot.state === UPGRADED) slot.tls = t;
    upgraded.add(t);
    return;
  }
  const why =
    decision === "refuse-plain"
      ? "plaintext on a port in enforcing mode (tls.serverMode)"
      : mode === "disabled"
        ? "a TLS handshake on a port with TLS disabled (tls.serverMode)"
        : "a TLS handshake, but no certificate is configured (tls.certPath, tls.keyPath)";
  o.log.rateLimited("warn", `tls-${decision}`, `connection from ${s.remoteAddress} closed: ${why}`);
  s.terminate();
}

/** Handlers of the TLS side of an upgraded connection. */
function tlsHandlers<U>(
  o: TlsListenOptions,
  h: AcceptHandlers<U>,
  upgraded: Set<Socket<Slot<U>>>,
  release: (raw: Slot<U> | undefined) => void,
): SocketHandler<Slot<U>> {
  return {
    binaryType: "uint8array",
    // Bun calls `open` after the handshake, also when the client's certificate was refused
    // (authorized false): such a peer never reaches the upper layer.
    open: (t) => {
      const options = o.tls?.options();
      if (options?.requestCert === true && options.rejectUnauthorized === true && !t.authorized) {
        const why = t.getAuthorizationError()?.message ?? "no certificate";
        o.log.rateLimited("warn", "tls-client-refused", `TLS client ${t.remoteAddress} refused: ${why}`);
        t.data.state = CLOSED;
        t.terminate();
        return;
      }
      const raw = t.data.raw;
      if (raw?.timer !== undefined) clearTimeout(raw.timer);
      if (raw) raw.timer = undefined;
      t.data.state = TLS_OPEN;
      t.data.user = h.open(t as Socket<unknown>);
    },
    data: (t, chunk) => {
      if (t.data?.state === TLS_OPEN) h.data(t.data.user as U, chunk);
    },
    drain: (t) => {
      if (t.data?.state === TLS_OPEN) h.drain(t.data.user as U);
    },
    // `error` and `close` may come without `open` (a failed handshake): `data` may be unset.
    close: (t) => {
      upgraded.delete(t);
      release(t.data?.raw);
      closeSlot(t.data, h);
    },
    error: (t, e) => {
      o.log.rateLimited("debug", "tls-error", `TLS error from ${t.remoteAddress}: ${e.message}`);
      upgraded.delete(t);
      release(t.data?.raw);
      closeSlot(t.data, h);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The client side

/** Why a server's certificate is not accepted under `verify`, or undefined when it is. */
export function peerProblem(verify: TlsVerify, authorized: boolean, error: (Error & { code?: string }) | null): string | undefined {
  if (verify === "none" || authorized) return undefined;
  if (error === null) return verify === "full" ? "certificate not verified" : undefined;
  if (verify === "chain" && (error.code === "ERR_TLS_CERT_ALTNAME_INVALID" || /altname|hostname/i.test(error.message))) return undefined;
  return error.message;
}

/** Bun's options for a client under `ClientTls` (the check itself is `peerProblem`, after the handshake). */
export function bunClientOptions(tls: ClientTls, host: string): TLSOptions {
  return {
    ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
    ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
    ...(tls.key !== undefined ? { key: tls.key } : {}),
    ...(tls.passphrase !== undefined ? { passphrase: tls.passphrase } : {}),
    serverName: host,
    rejectUnauthorized: false,
  };
}

/**
 * Bun.connect, TLS or not, settled once the connection is usable: with `tls`, Bun.connect's own
 * promise resolves before the handshake (writes return 0 until `open`), and `open` runs after it
 * even when the certificate failed, so this settles in `open` (or `close`) instead.
 */
export function connectBun<D>(host: string, port: number, tls: ClientTls | undefined, data: D, handlers: SocketHandler<D>): Promise<Socket<D>> {
  return new Promise((resolve, reject) => {
    let opened = false;
    const fail = (e: unknown) => reject(e instanceof Error ? e : new Error(String(e)));
    Bun.connect<D>({
      hostname: host,
      port,
      data,
      ...(tls ? { tls: bunClientOptions(tls, host) } : {}),
      socket: {
        ...handlers,
        open: (s) => {
          const problem = tls ? peerProblem(tls.verify, s.authorized, s.getAuthorizationError()) : undefined;
          if (problem !== undefined) {
            fail(new Error(`TLS: server certificate refused: ${problem}`));
            s.terminate();
            return;
          }
          s.setNoDelay(true);
          opened = true;
          handlers.open?.(s);
          resolve(s);
        },
        close: (s, e) => {
          if (opened) handlers.close?.(s, e);
          else fail(e ?? new Error(tls ? "connection closed during the TLS handshake" : "connection closed"));
        },
        error: (s, e) => {
          if (opened) handlers.error?.(s, e);
          else fail(e);
        },
        connectError: (_s, e) => fail(e),
      },
    }).catch(fail);
  });
}
