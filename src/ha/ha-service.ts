/**
 * HAService (master side): accepts slaves on the HA port, and for each one streams CommitLog
 * bytes from the offset it reports (its own max offset; 0 = empty, then from the master's first
 * retained byte) as fast as the socket drains, in chunks of at most `batchBytes` that never cross
 * a segment end. Each later report is an acknowledgement, used by SYNC_MASTER sends
 * (`waitForAck`). A slave that reports nothing for `idleTimeoutMs` is dropped; an idle stream
 * gets a heartbeat chunk (size 0) every `heartbeatMs`.
 *
 * Lag per slave: lagBytes = this master's end minus the slave's acknowledged offset; lagSeconds =
 * the age (by store time) of the first record the slave has not acknowledged, 0 when it has all.
 */
import { systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import type { Logger } from "../common/log.ts";
import { MESSAGE_MAGIC_CODE, readPhysicalOffset, readStoreTimestamp, readTotalSize } from "../common/message-record.ts";
import type { MessageStore } from "../commitlog/index.ts";
import { encodeChunkHeader, encodeEpochFrame, HA_HEADER_SIZE, ReportDecoder } from "./transfer.ts";
import { tcpTransport, type HaListener, type HaSocket, type HaSocketEvents, type HaTransport } from "./transport.ts";
import { allocUninitialized } from "../common/bytes.ts";
import { assert } from "../common/assert.ts";

export interface HAServiceOptions {
  host: string;
  port: number;
  batchBytes: number;
  heartbeatMs: number;
  idleTimeoutMs: number;
  /** A slave further behind than this is not counted as available for SYNC_MASTER. */
  slaveFallbehindMaxBytes: number;
  log: Logger;
  /** Default: TCP (test/sim passes a simulated link). */
  transport?: HaTransport;
  /** Default: the system clock (test/sim passes simulated time). */
  clock?: Clock;
  /**
   * Automatic failover: this master's epoch, sent first to every slave that names itself (an
   * epoch frame, ./transfer.ts); undefined while it is not master.
   */
  epoch?: () => number | undefined;
}

/** Chunks up to this size are copied behind their header and written at once. */
const COPY_MAX_BYTES = 16 * 1024;

/** Bytes of a record header up to the end of STORETIMESTAMP (with an IPv6 born host). */
const STORE_TIME_END_MAX = 80;

export type AckResult = "OK" | "TIMEOUT" | "NO_SLAVE";

/** Whose acknowledgements count (automatic failover: the sync state set's members), by replica id. */
export type AckEligible = (replicaId: number | undefined) => boolean;

export interface SlaveStatus {
  addr: string;
  ackOffset: number;
  transferOffset: number;
  lagBytes: number;
  lagSeconds: number;
  lastReportAt: number;
  /** Last time this slave's acknowledgement reached the master's end (0 = not yet). */
  caughtUpAt: number;
}

class SlaveConnection {
  readonly addr: string;
  readonly socket: HaSocket;
  readonly decoder = new ReportDecoder();
  ackOffset = -1;
  /** The newest report received (-1 = none yet). */
  reported = -1;
  /** Next byte to send; -1 until the first report. */
  transferOffset = -1;
  lastReportAt: number;
  lastSendAt: number;
  caughtUpAt = 0;
  /** The replica id it named in an identity report (automatic failover), undefined if none. */
  replicaId: number | undefined;
  /** Bytes the socket did not take yet, in order (wait for drain). */
  pending: Uint8Array[] = [];

  constructor(socket: HaSocket, now: number) {
    this.socket = socket;
    this.addr = socket.remoteAddress;
    this.lastReportAt = now;
    this.lastSendAt = now;
  }
}

export class HAService {
  readonly #o: HAServiceOptions;
  readonly #clock: Clock;
  /** Attached once the store is open (the port is bound before, so nothing half-starts). */
  #store: MessageStore | null = null;
  readonly #slaves = new Set<SlaveConnection>();
  #listener: HaListener | null = null;
  #timer: TimerHandle | null = null;
  #waiters: { offset: number; acks: number; eligible: AckEligible | undefined; resolve: (r: AckResult) => void; timer: TimerHandle }[] = [];

  constructor(o: HAServiceOptions) {
    this.#o = o;
    this.#clock = o.clock ?? systemClock;
  }

  start(): number {
    const transport = this.#o.transport ?? tcpTransport;
    this.#listener = transport.listen(this.#o.host, this.#o.port, (socket): HaSocketEvents => {
      const c = new SlaveConnection(socket, this.#clock.now());
      this.#slaves.add(c);
      this.#o.log.info(`slave ${c.addr} connected`);
      return {
        data: (chunk) => this.#onReport(c, chunk),
        drain: () => this.#pump(c),
        close: () => this.#drop(c),
      };
    });
    this.#timer = this.#clock.setInterval(() => this.#housekeeping(), Math.min(1000, this.#o.heartbeatMs));
    return this.#listener.port;
  }

  get port(): number {
    return this.#listener?.port ?? 0;
  }

  attachStore(store: MessageStore): void {
    // One store for the service's life: the offsets its slaves reported name bytes of this log.
    assert(this.#store === null || this.#store === store, "HA service attached to a second store");
    this.#store = store;
    // Reports that arrived before the store was open are applied now.
    for (const c of [...this.#slaves]) if (c.reported >= 0) this.#applyReport(c, c.reported);
  }

  stop(): void {
    if (this.#timer) this.#clock.clearInterval(this.#timer);
    this.#timer = null;
    // The slaves' sockets first, then the listener (the order the simulation's seeds replay).
    const listener = this.#listener;
    this.#listener = null;
    this.dropSlaves();
    listener?.stop();
  }

  /**
   * Automatic failover: this broker stopped being master. Its slaves are let go (they follow the
   * new master), and SYNC_MASTER puts still waiting are answered NO_SLAVE. The port stays open:
   * the broker may be elected again.
   */
  dropSlaves(): void {
    for (const c of [...this.#slaves]) c.socket.end();
    this.#slaves.clear();
    for (const w of this.#waiters.splice(0)) {
      this.#clock.clearTimeout(w.timer);
      w.resolve("NO_SLAVE");
    }
  }

  /** New CommitLog data is there: stream it to every slave. */
  notifyNewData(): void {
    for (const c of this.#slaves) this.#pump(c);
  }

  /**
   * SYNC_MASTER: resolves when `acks` slaves (default one; automatic failover asks for every
   * other member of the sync state set) acknowledged everything below `offset`. With `eligible`,
   * only the slaves it accepts count: a replica outside the sync state set may hold the write
   * now, but it is not one the next master is chosen from.
   */
  waitForAck(offset: number, timeoutMs: number, acks = 1, eligible?: AckEligible): Promise<AckResult> {
    // The broker asks only for a put it stored (an end offset of this log), and answers a put that
    // needs no acknowledgement itself: a wait for 0 acks would resolve on the first slave's report.
    assert(Number.isSafeInteger(offset) && offset >= 0, "SYNC_MASTER wait for offset {}", offset);
    assert(Number.isInteger(acks) && acks >= 1, "SYNC_MASTER wait for {} acknowledgements at {}", acks, offset);
    if (this.#ackedBy(acks, eligible) >= offset) return Promise.resolve("OK");
    const max = this.#store?.maxPhyOffset ?? 0;
    let usable = 0;
    for (const c of this.#slaves) {
      if (c.ackOffset >= 0 && max - c.ackOffset < this.#o.slaveFallbehindMaxBytes && (eligible === undefined || eligible(c.replicaId))) usable++;
    }
    if (usable < acks) return Promise.resolve("NO_SLAVE");
    return new Promise((resolve) => {
      const w = {
        offset,
        acks,
        eligible,
        resolve,
        timer: this.#clock.setTimeout(() => {
          this.#waiters = this.#waiters.filter((x) => x !== w);
          resolve("TIMEOUT");
        }, timeoutMs),
      };
      this.#waiters.push(w);
    });
  }

  status(): SlaveStatus[] {
    const max = this.#store?.maxPhyOffset ?? 0;
    const now = this.#clock.now();
    return [...this.#slaves].map((c) => {
      const lagBytes = c.ackOffset >= 0 ? Math.max(0, max - c.ackOffset) : max;
      let lagMs = 0;
      if (lagBytes > 0) {
        const t = this.#storeTimeAt(Math.max(0, c.ackOffset));
        // A Java slave may acknowledge mid-record: then count from when it was last caught up.
        lagMs = t !== undefined ? now - t : c.caughtUpAt > 0 ? now - c.caughtUpAt : 0;
      }
      return {
        addr: c.addr,
        ackOffset: c.ackOffset,
        transferOffset: c.transferOffset,
        lagBytes,
        lagSeconds: Math.max(0, lagMs) / 1000,
        lastReportAt: c.lastReportAt,
        caughtUpAt: c.caughtUpAt,
      };
    });
  }

  /** Store time of the record starting at `offset` (past a BLANK marker: the next segment's first). */
  #storeTimeAt(offset: number): number | undefined {
    const store = this.#store;
    if (!store) return undefined;
    for (let hop = 0; hop < 2; hop++) {
      const seg = store.commitLog.segmentFor(offset);
      if (!seg) return undefined;
      const pos = offset - seg.fileFromOffset;
      if (pos + 8 > seg.wrotePosition) return undefined;
      const buf = seg.buf;
      const magic = new DataView(buf.buffer, buf.byteOffset + pos + 4, 4).getInt32(0);
      if (magic === MESSAGE_MAGIC_CODE) {
        if (pos + STORE_TIME_END_MAX > seg.wrotePosition || readPhysicalOffset(buf, pos) !== offset) return undefined;
        return readStoreTimestamp(buf, pos);
      }
      if (readTotalSize(buf, pos) !== seg.fileSize - pos) return undefined;
      offset = seg.fileFromOffset + seg.fileSize;
    }
    return undefined;
  }

  #bestAck(): number {
    let best = -1;
    for (const c of this.#slaves) if (c.ackOffset > best) best = c.ackOffset;
    return best;
  }

  /** The offset that at least `acks` (eligible) slaves acknowledged (-1: fewer slaves than that). */
  #ackedBy(acks: number, eligible?: AckEligible): number {
    if (acks <= 1 && eligible === undefined) return this.#bestAck();
    const offsets: number[] = [];
    for (const c of this.#slaves) if (eligible === undefined || eligible(c.replicaId)) offsets.push(c.ackOffset);
    offsets.sort((a, b) => b - a);
    return offsets[Math.max(1, acks) - 1] ?? -1;
  }

  #onReport(c: SlaveConnection, chunk: Uint8Array): void {
    const offset = c.decoder.feed(chunk);
    if (c.decoder.replicaId !== undefined && c.replicaId !== c.decoder.replicaId) {
      c.replicaId = c.decoder.replicaId;
      const epoch = this.#o.epoch?.();
      this.#o.log.info(`slave ${c.addr} is replica ${c.replicaId}${epoch !== undefined ? `; streaming as master of epoch ${epoch}` : ""}`);
      // Before any data (the first offset report, applied below, starts the stream).
      if (epoch !== undefined) this.#write(c, [encodeEpochFrame(epoch)]);
    }
    if (offset === undefined) return;
    c.lastReportAt = this.#clock.now();
    c.reported = offset;
    this.#applyReport(c, offset);
  }

  #applyReport(c: SlaveConnection, offset: number): void {
    const store = this.#store;
    if (!store) return;
    if (offset > store.maxPhyOffset) {
      // The slave holds data this master does not (it lost its tail): the slave cannot follow it.
      this.#o.log.rateLimited(
        "warn",
        `ha-ahead-${c.addr}`,
        `slave ${c.addr} reports offset ${offset} beyond this master's end ${store.maxPhyOffset}: dropping it`,
      );
      c.socket.end();
      return;
    }
    c.ackOffset = offset;
    // What a slave acknowledges this master wrote (a report past the end was refused above): a
    // SYNC_MASTER put released by it is really held by the slave.
    assert(c.ackOffset <= store.maxPhyOffset, "slave {} acknowledged {} past this master's end {}", c.addr, c.ackOffset, store.maxPhyOffset);
    if (offset >= store.maxPhyOffset) c.caughtUpAt = this.#clock.now();
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
    const reached = (w: { offset: number; acks: number; eligible: AckEligible | undefined }) =>
      w.offset <= (w.acks <= 1 && w.eligible === undefined ? best : this.#ackedBy(w.acks, w.eligible));
    const done = this.#waiters.filter(reached);
    if (done.length === 0) return;
    this.#waiters = this.#waiters.filter((w) => !reached(w));
    for (const w of done) {
      this.#clock.clearTimeout(w.timer);
      w.resolve("OK");
    }
  }

  /** Sends as much as the socket takes. */
  #pump(c: SlaveConnection): void {
    const store = this.#store;
    if (c.transferOffset < 0 || !store) return;
    if (c.pending.length > 0 && !this.#write(c, c.pending.splice(0))) return;
    while (c.transferOffset < store.maxPhyOffset) {
      const seg = store.commitLog.segmentFor(c.transferOffset);
      if (!seg) {
        // The slave wants bytes this master no longer has (deleted by retention): it cannot
        // continue its log from here. Bytes at other offsets would only be refused; drop it.
        this.#o.log.rateLimited(
          "error",
          `ha-retained-${c.addr}`,
          `slave ${c.addr} needs offset ${c.transferOffset}, which this master no longer retains (its log starts at ` +
            `${store.minPhyOffset}); the slave cannot catch up until its store is emptied`,
        );
        c.socket.end();
        this.#drop(c);
        return;
      }
      const pos = c.transferOffset - seg.fileFromOffset;
      const n = Math.min(this.#o.batchBytes, seg.wrotePosition - pos);
      if (n <= 0) break;
      // segmentFor found the segment holding the offset, and a chunk ends at its written end: a
      // chunk never crosses a segment end (./transfer.ts), as the slave's record checks need.
      assert(pos >= 0 && pos + n <= seg.fileSize, "HA chunk [{}, +{}) crosses the end of the segment at {}", c.transferOffset, n, seg.fileFromOffset);
      // Bytes left by a backed-up socket go first (above): a new chunk behind them would reorder the stream.
      assert(c.pending.length === 0, "slave {}: a chunk at {} queued behind {} unsent parts", c.addr, c.transferOffset, c.pending.length);
      const header = encodeChunkHeader(c.transferOffset, n);
      const bytes = seg.buf.subarray(pos, pos + n);
      c.transferOffset += n;
      // Only what this master wrote is streamed.
      assert(
        c.transferOffset <= store.maxPhyOffset,
        "slave {}: streamed up to {}, past this master's end {}",
        c.addr,
        c.transferOffset,
        store.maxPhyOffset,
      );
      c.lastSendAt = this.#clock.now();
      // Small chunks (a send or two) go out as one write; large ones straight from the mapping.
      let parts: Uint8Array[];
      if (n <= COPY_MAX_BYTES) {
        const frame = allocUninitialized(HA_HEADER_SIZE + n);
        frame.set(header);
        frame.set(bytes, HA_HEADER_SIZE);
        parts = [frame];
      } else parts = [header, bytes];
      if (!this.#write(c, parts)) return;
    }
  }

  /** Writes the parts in order; false if the socket is backed up (the rest waits in `pending`). */
  #write(c: SlaveConnection, parts: Uint8Array[]): boolean {
    for (let i = 0; i < parts.length; i++) {
      const data = parts[i]!;
      const n = c.socket.write(data);
      if (n < 0) {
        this.#drop(c);
        return false;
      }
      if (n < data.length) {
        c.pending = [data.subarray(n), ...parts.slice(i + 1)];
        return false;
      }
    }
    return true;
  }

  #housekeeping(): void {
    const now = this.#clock.now();
    for (const c of [...this.#slaves]) {
      if (now - c.lastReportAt > this.#o.idleTimeoutMs) {
        this.#o.log.warn(`slave ${c.addr} silent for ${this.#o.idleTimeoutMs} ms: dropping it`);
        c.socket.end();
        this.#drop(c);
        continue;
      }
      if (c.transferOffset >= 0 && c.pending.length === 0 && now - c.lastSendAt > this.#o.heartbeatMs) {
        c.lastSendAt = now;
        this.#write(c, [encodeChunkHeader(c.transferOffset, 0)]);
      }
      this.#pump(c);
    }
  }

  #drop(c: SlaveConnection | undefined): void {
    if (!c || !this.#slaves.delete(c)) return;
    this.#o.log.info(`slave ${c.addr} disconnected`);
  }
}
