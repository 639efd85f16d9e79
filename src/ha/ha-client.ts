/**
 * HAClient (slave side): connects to the master's HA port, reports its CommitLog max offset at
 * once and after every batch it applies (and every `reportIntervalMs`), and writes the bytes the
 * master streams at the same offsets, dispatching ConsumeQueue and index entries as records
 * complete. A chunk that does not continue the local log, a broken stream, or a master silent
 * for `idleTimeoutMs` closes the connection; it reconnects after `reconnectMs` and resumes from
 * its own max offset, so nothing is ever written twice or out of place.
 */
import type { Socket } from "bun";
import type { Logger } from "../common/log.ts";
import type { MessageStore } from "../commitlog/index.ts";
import { ChunkDecoder, encodeReport } from "./transfer.ts";

export interface HAClientOptions {
  store: MessageStore;
  /** The master's HA address (learned from the name server or configured); undefined = unknown yet. */
  masterHaAddr: () => string | undefined;
  reportIntervalMs: number;
  idleTimeoutMs: number;
  reconnectMs: number;
  log: Logger;
}

export interface HAClientStatus {
  connected: boolean;
  masterHaAddr: string | undefined;
  maxOffset: number;
  lastReceiveAt: number;
  bytesReceived: number;
}

export class HAClient {
  readonly #o: HAClientOptions;
  #socket: Socket<undefined> | null = null;
  #decoder = new ChunkDecoder();
  #addr: string | undefined;
  #running = false;
  #timer: ReturnType<typeof setInterval> | null = null;
  #connecting = false;
  #lastReceiveAt = 0;
  #lastReportAt = 0;
  #nextAttemptAt = 0;
  #bytesReceived = 0;

  constructor(o: HAClientOptions) {
    this.#o = o;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#timer = setInterval(() => this.#tick(), Math.min(500, this.#o.reportIntervalMs));
    this.#tick();
  }

  stop(): void {
    this.#running = false;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    this.#socket?.end();
    this.#socket = null;
  }

  status(): HAClientStatus {
    return {
      connected: this.#socket !== null,
      masterHaAddr: this.#addr,
      maxOffset: this.#o.store.maxPhyOffset,
      lastReceiveAt: this.#lastReceiveAt,
      bytesReceived: this.#bytesReceived,
    };
  }

  #tick(): void {
    if (!this.#running) return;
    const now = Date.now();
    if (this.#socket) {
      if (now - this.#lastReceiveAt > this.#o.idleTimeoutMs) {
        this.#o.log.warn(`master ${this.#addr} silent for ${this.#o.idleTimeoutMs} ms: reconnecting`);
        this.#close();
        return;
      }
      if (now - this.#lastReportAt >= this.#o.reportIntervalMs) this.#report();
      return;
    }
    if (!this.#connecting && now >= this.#nextAttemptAt) void this.#connect();
  }

  async #connect(): Promise<void> {
    const addr = this.#o.masterHaAddr();
    if (!addr) return;
    const m = /^(.*):(\d+)$/.exec(addr);
    if (!m) {
      this.#o.log.rateLimited("error", "ha-addr", `bad master HA address ${addr}`);
      return;
    }
    this.#connecting = true;
    this.#addr = addr;
    this.#decoder = new ChunkDecoder();
    try {
      const socket = await Bun.connect<undefined>({
        hostname: m[1]!.replace(/^\[|\]$/g, ""),
        port: Number(m[2]),
        socket: {
          binaryType: "uint8array",
          data: (_s, chunk) => this.#onData(chunk),
          close: () => this.#onClosed(),
          error: () => this.#onClosed(),
        },
      });
      if (!this.#running) {
        socket.end();
        return;
      }
      socket.setNoDelay(true);
      this.#socket = socket;
      this.#lastReceiveAt = Date.now();
      this.#o.log.info(`connected to master HA ${addr}; reporting offset ${this.#o.store.maxPhyOffset}`);
      this.#report();
    } catch (e) {
      this.#o.log.rateLimited("warn", "ha-connect", `cannot connect to master HA ${addr}: ${e instanceof Error ? e.message : String(e)}`);
      this.#nextAttemptAt = Date.now() + this.#o.reconnectMs;
    } finally {
      this.#connecting = false;
    }
  }

  #report(): void {
    if (!this.#socket) return;
    this.#lastReportAt = Date.now();
    this.#socket.write(encodeReport(this.#o.store.maxPhyOffset));
  }

  #onData(chunk: Uint8Array): void {
    this.#lastReceiveAt = Date.now();
    const frames = this.#decoder.feed(chunk);
    if (!Array.isArray(frames)) {
      this.#o.log.warn(`broken HA stream from ${this.#addr}: ${frames.invalid}; reconnecting`);
      this.#close();
      return;
    }
    let applied = false;
    for (const f of frames) {
      if (f.data.length === 0) continue;
      const bad = this.#o.store.appendReplicated(f.offset, f.data);
      if (bad) {
        this.#o.log.warn(`HA chunk from ${this.#addr} refused: ${bad.invalid}; reconnecting to resume from ${this.#o.store.maxPhyOffset}`);
        this.#close();
        return;
      }
      this.#bytesReceived += f.data.length;
      applied = true;
    }
    if (applied) this.#report();
  }

  #close(): void {
    this.#socket?.end();
    this.#socket = null;
    this.#nextAttemptAt = Date.now() + this.#o.reconnectMs;
  }

  #onClosed(): void {
    if (this.#socket) this.#o.log.info(`HA connection to ${this.#addr} closed`);
    this.#socket = null;
    this.#nextAttemptAt = Date.now() + this.#o.reconnectMs;
  }
}
