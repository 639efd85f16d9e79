/**
 * Helpers shared by the remoting tests (imported only by *.test.ts, header-codec.suite.ts and the
 * broker's in-process fixture, which runs on MemNetwork).
 *
 * The byte builders here write big-endian integers and UTF-8 strings by hand, so tests can build
 * frames straight from the documented layout (docs/PROTOCOL.md §1.1 and §1.7) without going through
 * the encoder they are meant to check.
 */
import type { Logger, LogLevel } from "../common/log.ts";
import type { AcceptedSocketEvents, RemotingListener, RemotingNetwork, SocketEvents, SocketLike } from "./transport.ts";

const utf8Encoder = new TextEncoder();

export function u8(n: number): Uint8Array {
  return Uint8Array.of(n & 0xff);
}

export function u16(n: number): Uint8Array {
  return Uint8Array.of((n >>> 8) & 0xff, n & 0xff);
}

/** 32-bit big-endian; negative numbers are written in two's complement (Java `int`). */
export function u32(n: number): Uint8Array {
  return Uint8Array.of((n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

export function utf8(s: string): Uint8Array {
  return utf8Encoder.encode(s);
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

/** A whole frame from the outer layout: length word, type|headerLength word, header, body. */
export function frameBytes(serializeType: number, header: Uint8Array, body: Uint8Array = new Uint8Array(0)): Uint8Array {
  return concat(u32(4 + header.length + body.length), u32(((serializeType & 0xff) << 24) | header.length), header, body);
}

/** A ROCKETMQ header from the docs/PROTOCOL.md §1.7 layout; entries are written in the given order, as given. */
export function rocketmqHeaderBytes(h: {
  code: number;
  languageByte: number;
  version: number;
  opaque: number;
  flag: number;
  remark?: Uint8Array;
  ext?: [Uint8Array, Uint8Array][];
}): Uint8Array {
  const remark = h.remark ?? new Uint8Array(0);
  const entries = (h.ext ?? []).map(([k, v]) => concat(u16(k.length), k, u32(v.length), v));
  const ext = concat(...entries);
  return concat(u16(h.code), u8(h.languageByte), u16(h.version), u32(h.opaque), u32(h.flag), u32(remark.length), remark, u32(ext.length), ext);
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}

/** Parses an annotated hex fixture: `#` starts a comment, whitespace is ignored. */
export function parseHexFixture(text: string): Uint8Array {
  const digits = text
    .split("\n")
    .map((line) => line.replace(/#.*$/, ""))
    .join("")
    .replace(/\s+/g, "");
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(digits)) throw new Error("hex fixture has a stray character or an odd digit count");
  return Uint8Array.from(Buffer.from(digits, "hex"));
}

export const GOLDEN_PROTOCOL_DIR = new URL("../../test/golden/protocol/", import.meta.url);

export async function readGoldenHex(name: string): Promise<Uint8Array> {
  return parseHexFixture(await Bun.file(new URL(name, GOLDEN_PROTOCOL_DIR)).text());
}

export async function readGoldenJson(name: string): Promise<unknown> {
  return JSON.parse(await Bun.file(new URL(name, GOLDEN_PROTOCOL_DIR)).text());
}

export interface LogLine {
  level: LogLevel;
  msg: string;
}

/** A logger that prints nothing and keeps every line (rate limiting is not applied). */
export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return {
    lines,
    debug: (msg) => lines.push({ level: "debug", msg }),
    info: (msg) => lines.push({ level: "info", msg }),
    warn: (msg) => lines.push({ level: "warn", msg }),
    error: (msg) => lines.push({ level: "error", msg }),
    rateLimited: (level, _key, msg) => lines.push({ level, msg }),
  };
}

/** One end of an in-memory connection: a write reaches the peer in a later microtask, in order. */
class MemSocket implements SocketLike {
  readonly remoteAddress: string;
  readonly remotePort: number;
  peer!: MemSocket;
  events: AcceptedSocketEvents | null = null;
  closed = false;
  #closeReported = false;

  constructor(remoteAddress: string, remotePort: number) {
    this.remoteAddress = remoteAddress;
    this.remotePort = remotePort;
  }

  write(data: Uint8Array): number {
    if (this.closed) return -1;
    // Copy: the connection reuses its output buffer once write returns (the kernel copies too).
    // Not data.slice(): the connection writes a Buffer, and Buffer's slice is a view.
    const copy = new Uint8Array(data);
    const peer = this.peer;
    queueMicrotask(() => {
      if (!peer.closed) peer.events?.data(copy);
    });
    return data.length;
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    // What was written before still arrives (microtasks keep order), then the peer hears the close.
    queueMicrotask(() => this.peer.reportClose());
    queueMicrotask(() => this.reportClose());
  }

  reportClose(): void {
    if (this.#closeReported) return;
    this.#closeReported = true;
    this.closed = true;
    this.events?.close();
  }
}

/**
 * In-memory sockets for RemotingServer and RemotingClient (docs/CONVENTIONS.md §6): listeners by
 * "host:port" (port 0 gets the next free one), no delays, no faults, every write taken whole.
 * `kill(port)` drops a listener and its connections at once, as a crashed process would.
 */
export class MemNetwork implements RemotingNetwork {
  readonly chunksOwned = true;
  readonly #listeners = new Map<string, { accept: (s: SocketLike) => AcceptedSocketEvents; sockets: Set<MemSocket> }>();
  #nextPort = 20000;

  listen(host: string, port: number, accept: (s: SocketLike) => AcceptedSocketEvents): RemotingListener {
    const p = port === 0 ? this.#nextPort++ : port;
    const key = `${host}:${p}`;
    if (this.#listeners.has(key)) throw Object.assign(new Error(`${key} is already in use`), { code: "EADDRINUSE" });
    const entry = { accept, sockets: new Set<MemSocket>() };
    this.#listeners.set(key, entry);
    return {
      port: p,
      stop: () => {
        if (this.#listeners.get(key) === entry) this.#listeners.delete(key);
        for (const s of entry.sockets) s.end();
      },
    };
  }

  connect(host: string, port: number, ev: SocketEvents): Promise<SocketLike> {
    const l = this.#listeners.get(`${host}:${port}`);
    if (!l) return Promise.reject(Object.assign(new Error(`connect ECONNREFUSED ${host}:${port}`), { code: "ECONNREFUSED" }));
    const client = new MemSocket(host, port);
    const server = new MemSocket("127.0.0.1", this.#nextPort++);
    client.peer = server;
    server.peer = client;
    client.events = ev;
    l.sockets.add(server);
    server.events = l.accept(server);
    ev.open(client);
    return Promise.resolve(client);
  }

  /** The process behind `host:port` died: its listener and its sockets go, peers hear a reset. */
  kill(host: string, port: number): void {
    const l = this.#listeners.get(`${host}:${port}`);
    if (!l) return;
    this.#listeners.delete(`${host}:${port}`);
    // The dead side runs no more code: its sockets are only marked closed.
    for (const s of l.sockets) {
      s.closed = true;
      s.peer.reportClose();
    }
  }
}
