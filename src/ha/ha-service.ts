/**
 * HAService (master side): accepts slaves on the HA port, and for each one streams CommitLog
 * bytes from the offset it reports (its own max offset; 0 = empty, then from the master's first
 * retained byte) as fast as the socket drains, in chunks of at most `batchBytes` that never cross
 * a segment end. Each later report is an acknowledgement, used by SYNC_MASTER sends
 * (`waitForAck`). A slave that reports nothing for `idleTimeoutMs` is dropped; an idle stream
 * gets a heartbeat chunk (size 0) every `heartbeatMs`.
 */
import type { Socket, TCPSocketListener } from "bun";
import type { Logger } from "../common/log.ts";
import type { MessageStore } from "../commitlog/index.ts";
import { encodeChunkHeader, ReportDecoder } from "./transfer.ts";

export interface HAServiceOptions {
  host: string;
  port: number;
  batchBytes: number;
  heartbeatMs: number;
  idleTimeoutMs: number;
  /** A slave further behind than this is not counted as available for SYNC_MASTER. */
  slaveFallbehindMaxBytes: number;
  log: Logger;
}

export type AckResult = "OK" | "TIMEOUT" | "NO_SLAVE";

export interface SlaveStatus {
  addr: string;
  ackOffset: number;
  transferOffset: number;
  lagBytes: number;
  lastReportAt: number;
}

class SlaveConnection {
  readonly addr: string;
  readonly socket: Socket<SlaveConnection | undefined>;
  readonly decoder = new ReportDecoder();
  ackOffset = -1;
  /** Next byte to send; -1 until the first report. */
  transferOffset = -1;
  lastReportAt = Date.now();
  lastSendAt = Date.now();
  /** Bytes the socket did not take yet (wait for drain). */
  pending: Uint8Array | null = null;

  constructor(socket: Socket<SlaveConnection | undefined>) {
    this.socket = socket;
    this.addr = `${socket.remoteAddress}:${socket.remotePort}`;
  }
}

export class HAService {
  readonly #o: HAServiceOptions;
  /** Attached once the store is open (the port is bound before, so nothing half-starts). */
  #store: MessageStore | null = null;
  readonly #slaves = new Set<SlaveConnection>();
  #listener: TCPSocketListener<SlaveConnection | undefined> | null = null;
  #timer: ReturnType<typeof setInterval> | null = null;
  #waiters: { offset: number; resolve: (r: AckResult) => void; timer: ReturnType<typeof setTimeout> }[] = [];

  constructor(o: HAServiceOptions) {
    this.#o = o;
  }

  start(): number {
    this.#listener = Bun.listen<SlaveConnection | undefined>({
      hostname: this.#o.host,
      port: this.#o.port,
      socket: {
        binaryType: "uint8array",
        open: (socket) => {
          socket.setNoDelay(true);
          const c = new SlaveConnection(socket);
          socket.data = c;
          this.#slaves.add(c);
          this.#o.log.info(`slave ${c.addr} connected`);
        },
        data: (socket, chunk) => {
          const c = socket.data;
          if (c) this.#onReport(c, chunk);
        },
        drain: (socket) => {
          const c = socket.data;
          if (c) this.#pump(c);
        },
        close: (socket) => this.#drop(socket.data),
        error: (socket) => this.#drop(socket.data),
      },
    });
    this.#timer = setInterval(() => this.#housekeeping(), Math.min(1000, this.#o.heartbeatMs));
    return this.#listener.port;
  }

  get port(): number {
    return this.#listener?.port ?? 0;
  }

  attachStore(store: MessageStore): void {
    this.#store = store;
    for (const c of this.#slaves) this.#pump(c);
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    for (const c of [...this.#slaves]) c.socket.end();
    this.#slaves.clear();
    this.#listener?.stop(true);
    this.#listener = null;
    for (const w of this.#waiters.splice(0)) {
      clearTimeout(w.timer);
      w.resolve("NO_SLAVE");
    }
  }

  /** New CommitLog data is there: stream it to every slave. */
  notifyNewData(): void {
    for (const c of this.#slaves) this.#pump(c);
  }

  /** SYNC_MASTER: resolves when some slave acknowledged everything below `offset`. */
  waitForAck(offset: number, timeoutMs: number): Promise<AckResult> {
    if (this.#bestAck() >= offset) return Promise.resolve("OK");
    const max = this.#store?.maxPhyOffset ?? 0;
    const usable = [...this.#slaves].some((c) => c.ackOffset >= 0 && max - c.ackOffset < this.#o.slaveFallbehindMaxBytes);
    if (!usable) return Promise.resolve("NO_SLAVE");
    return new Promise((resolve) => {
      const w = {
        offset,
        resolve,
        timer: setTimeout(() => {
          this.#waiters = this.#waiters.filter((x) => x !== w);
          resolve("TIMEOUT");
        }, timeoutMs),
      };
      this.#waiters.push(w);
    });
  }

  status(): SlaveStatus[] {
    const max = this.#store?.maxPhyOffset ?? 0;
    return [...this.#slaves].map((c) => ({
      addr: c.addr,
      ackOffset: c.ackOffset,
      transferOffset: c.transferOffset,
      lagBytes: c.ackOffset >= 0 ? Math.max(0, max - c.ackOffset) : max,
      lastReportAt: c.lastReportAt,
    }));
  }

  #bestAck(): number {
    let best = -1;
    for (const c of this.#slaves) if (c.ackOffset > best) best = c.ackOffset;
    return best;
  }

  #onReport(c: SlaveConnection, chunk: Uint8Array): void {
    const offset = c.decoder.feed(chunk);
    if (offset === undefined) return;
    c.lastReportAt = Date.now();
    const store = this.#store;
    if (!store) return;
    if (offset > store.maxPhyOffset) {
      this.#o.log.warn(`slave ${c.addr} reports offset ${offset} beyond this master's end ${store.maxPhyOffset}: dropping it`);
      c.socket.end();
      return;
    }
    c.ackOffset = offset;
    if (c.transferOffset < 0) {
      // First report: where replication starts. An empty slave gets everything still retained.
      c.transferOffset = offset === 0 ? store.minPhyOffset : offset;
      this.#o.log.info(`slave ${c.addr} starts at offset ${c.transferOffset}`);
    }
    this.#releaseWaiters();
    this.#pump(c);
  }

  #releaseWaiters(): void {
    if (this.#waiters.length === 0) return;
    const best = this.#bestAck();
    const done = this.#waiters.filter((w) => w.offset <= best);
    if (done.length === 0) return;
    this.#waiters = this.#waiters.filter((w) => w.offset > best);
    for (const w of done) {
      clearTimeout(w.timer);
      w.resolve("OK");
    }
  }

  /** Sends as much as the socket takes. */
  #pump(c: SlaveConnection): void {
    const store = this.#store;
    if (c.transferOffset < 0 || !store) return;
    if (c.pending && !this.#write(c, c.pending)) return;
    while (c.transferOffset < store.maxPhyOffset) {
      const seg = store.commitLog.segmentFor(c.transferOffset);
      if (!seg) {
        // The slave wants bytes this master no longer has (deleted by retention).
        this.#o.log.warn(
          `slave ${c.addr} wants offset ${c.transferOffset}, below this master's retained data; restarting it at ${store.minPhyOffset}`,
        );
        c.transferOffset = store.minPhyOffset;
        continue;
      }
      const pos = c.transferOffset - seg.fileFromOffset;
      const n = Math.min(this.#o.batchBytes, seg.wrotePosition - pos);
      if (n <= 0) break;
      const frame = new Uint8Array(12 + n);
      frame.set(encodeChunkHeader(c.transferOffset, n), 0);
      frame.set(seg.buf.subarray(pos, pos + n), 12);
      c.transferOffset += n;
      c.lastSendAt = Date.now();
      if (!this.#write(c, frame)) return;
    }
  }

  /** Writes a frame; false if the socket is backed up (the rest waits in `pending`). */
  #write(c: SlaveConnection, data: Uint8Array): boolean {
    const n = c.socket.write(data);
    if (n < 0) {
      this.#drop(c);
      return false;
    }
    if (n < data.length) {
      c.pending = data.subarray(n);
      return false;
    }
    c.pending = null;
    return true;
  }

  #housekeeping(): void {
    const now = Date.now();
    for (const c of [...this.#slaves]) {
      if (now - c.lastReportAt > this.#o.idleTimeoutMs) {
        this.#o.log.warn(`slave ${c.addr} silent for ${this.#o.idleTimeoutMs} ms: dropping it`);
        c.socket.end();
        this.#drop(c);
        continue;
      }
      if (c.transferOffset >= 0 && !c.pending && now - c.lastSendAt > this.#o.heartbeatMs) {
        c.lastSendAt = now;
        this.#write(c, encodeChunkHeader(c.transferOffset, 0));
      }
      this.#pump(c);
    }
  }

  #drop(c: SlaveConnection | undefined): void {
    if (!c || !this.#slaves.delete(c)) return;
    this.#o.log.info(`slave ${c.addr} disconnected`);
  }
}
