/**
 * HAClient (slave side): connects to the master's HA port, reports its CommitLog max offset at
 * once, after every batch it applies and every `reportIntervalMs`, and writes what the master
 * streams at the same offsets — whole verified records only (./record-stream.ts), so the local
 * log never holds a byte the master did not write there. The store dispatches ConsumeQueue and
 * index entries as records land.
 *
 * A chunk that does not continue the local log, a record that fails its checks, a broken frame,
 * a master silent for `idleTimeoutMs` or a change of the master's address closes the connection;
 * it reconnects after `reconnectMs` and resumes from its own max offset. Each connection has its
 * own decoder and record stream, and events of a connection that is no longer current are ignored.
 *
 * Lag: the broker feeds the master's max offset (`noteMasterMaxOffset`, polled over remoting);
 * lagBytes = that minus the local end, lagSeconds = how long ago the master was first seen holding
 * bytes the slave still lacks (./lag.ts).
 */
import { systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import type { Logger } from "../common/log.ts";
import { assert } from "../common/assert.ts";
import type { DecodedRecord } from "../common/message-record.ts";
import type { MessageStore } from "../commitlog/index.ts";
import { LagTracker } from "./lag.ts";
import { RecordStream } from "./record-stream.ts";
import { ChunkDecoder, encodeIdentity, encodeReport } from "./transfer.ts";
import { tcpTransport, type HaSocket, type HaTransport } from "./transport.ts";

export interface HAClientOptions {
  store: MessageStore;
  /** The master's HA address (learned from the name server or configured); undefined = unknown yet. */
  masterHaAddr: () => string | undefined;
  reportIntervalMs: number;
  idleTimeoutMs: number;
  reconnectMs: number;
  /** How long a connection attempt may take (default 5000 ms). */
  connectTimeoutMs?: number;
  log: Logger;
  /** Records that were just written and dispatched (e.g. to wake parked pulls). */
  onRecords?: (records: readonly DecodedRecord[]) => void;
  now?: () => number;
  /** Timers and (unless `now` is given) the time; default the system clock (test/sim passes simulated time). */
  clock?: Clock;
  /** Default: TCP (test/sim passes a simulated link). */
  transport?: HaTransport;
  /**
   * Asked before every connection attempt (automatic failover: agree with the master on where the
   * two logs part, truncate this store there, refuse a master of an older epoch). A reason refuses
   * this attempt; the next one comes after reconnectMs.
   */
  beforeConnect?: (masterHaAddr: string) => Promise<string | null>;
  /**
   * Automatic failover: this replica's id, sent first on every connection (an identity report,
   * ./transfer.ts) so the master counts its acknowledgements only while it is in sync.
   */
  replicaId?: () => number | undefined;
  /**
   * Automatic failover: the epoch of the master this replica follows. The master must send an
   * epoch frame before any data, of this epoch or newer; otherwise the stream is refused.
   */
  expectedEpoch?: () => number | undefined;
}

export interface HAClientStatus {
  connected: boolean;
  masterHaAddr: string | undefined;
  /** This slave's CommitLog end. */
  maxOffset: number;
  /** The master's CommitLog end as last polled (-1 = not known yet), and when. */
  masterMaxOffset: number;
  masterMaxOffsetAt: number;
  lagBytes: number;
  lagSeconds: number;
  /** Store time of the newest record this slave applied (-1 = none since start). */
  lastAppliedStoreTimestamp: number;
  lastReceiveAt: number;
  bytesReceived: number;
  /** Connections dropped because the stream was broken or did not continue the local log. */
  streamErrors: number;
  lastStreamError: string | undefined;
}

/** One TCP connection to the master, with its own framing and record state. */
interface Link {
  socket: HaSocket | null;
  addr: string;
  decoder: ChunkDecoder;
  records: RecordStream;
  closed: boolean;
  /** The epoch the master sent (automatic failover), undefined until then. */
  epoch: number | undefined;
  /**
   * Report bytes the socket did not take (it takes what fits): sent on drain, before anything
   * newer, so the master never reads half a report followed by another one.
   */
  unsent: Uint8Array | null;
  /** The last offset reported on this connection (-1: none yet). */
  reported: number;
}

/** More unsent report bytes than this: the master stopped reading; the connection is dropped. */
const UNSENT_MAX_BYTES = 4096;

const CONNECT_TIMEOUT_MS = 5000;

export class HAClient {
  readonly #o: HAClientOptions;
  readonly #now: () => number;
  readonly #clock: Clock;
  #link: Link | null = null;
  #running = false;
  #timer: TimerHandle | null = null;
  #connecting = false;
  #lastReceiveAt = 0;
  #lastReportAt = 0;
  #nextAttemptAt = 0;
  #bytesReceived = 0;
  #streamErrors = 0;
  /** Where the last stream met bad bytes: the next stream takes a damaged range there (RecordStream). */
  #acceptDamageAt = -1;
  #lastStreamError: string | undefined;
  #lastAppliedStoreTimestamp = -1;
  readonly #lag = new LagTracker();

  constructor(o: HAClientOptions) {
    this.#o = o;
    const clock = o.clock ?? systemClock;
    this.#clock = clock;
    this.#now = o.now ?? (() => clock.now());
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#timer = this.#clock.setInterval(() => this.#tick(), Math.min(500, this.#o.reportIntervalMs));
    this.#tick();
  }

  stop(): void {
    this.#running = false;
    if (this.#timer) this.#clock.clearInterval(this.#timer);
    this.#timer = null;
    this.#drop(this.#link);
  }

  /** The master's CommitLog end, as the broker learned it (for lag reporting). */
  noteMasterMaxOffset(offset: number): void {
    this.#lag.record(offset, this.#now());
  }

  status(): HAClientStatus {
    const now = this.#now();
    const max = this.#o.store.maxPhyOffset;
    const m = this.#lag.latest;
    return {
      connected: this.#link?.socket != null,
      masterHaAddr: this.#link?.addr ?? this.#o.masterHaAddr(),
      maxOffset: max,
      masterMaxOffset: m ? m.offset : -1,
      masterMaxOffsetAt: m ? m.at : 0,
      lagBytes: m ? Math.max(0, m.offset - max) : 0,
      lagSeconds: this.#lag.lagMs(max, now) / 1000,
      lastAppliedStoreTimestamp: this.#lastAppliedStoreTimestamp,
      lastReceiveAt: this.#lastReceiveAt,
      bytesReceived: this.#bytesReceived,
      streamErrors: this.#streamErrors,
      lastStreamError: this.#lastStreamError,
    };
  }

  #tick(): void {
    if (!this.#running) return;
    const now = this.#now();
    const link = this.#link;
    if (link?.socket) {
      const want = this.#o.masterHaAddr();
      if (want && want !== link.addr) {
        this.#o.log.info(`master HA address changed from ${link.addr} to ${want}: reconnecting`);
        this.#drop(link);
        this.#nextAttemptAt = now;
        return;
      }
      if (now - this.#lastReceiveAt > this.#o.idleTimeoutMs) {
        this.#o.log.warn(`master ${link.addr} silent for ${this.#o.idleTimeoutMs} ms: reconnecting`);
        this.#drop(link);
        return;
      }
      if (now - this.#lastReportAt >= this.#o.reportIntervalMs) this.#report(link);
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
    if (this.#o.beforeConnect) {
      let refused: string | null;
      try {
        refused = await this.#o.beforeConnect(addr);
      } catch (e) {
        refused = e instanceof Error ? e.message : String(e);
      }
      if (refused !== null || !this.#running) {
        if (refused !== null) this.#o.log.rateLimited("warn", "ha-before-connect", `not connecting to master HA ${addr}: ${refused}`);
        this.#nextAttemptAt = this.#now() + this.#o.reconnectMs;
        this.#connecting = false;
        return;
      }
    }
    const store = this.#o.store;
    const empty = store.commitLog.segments.length === 0;
    const link: Link = {
      socket: null,
      addr,
      decoder: new ChunkDecoder(),
      records: new RecordStream(store.commitLog.segmentBytes, empty ? null : store.maxPhyOffset, this.#acceptDamageAt),
      closed: false,
      epoch: undefined,
      unsent: null,
      reported: -1,
    };
    let timer: TimerHandle | undefined;
    try {
      const transport = this.#o.transport ?? tcpTransport;
      const connecting = transport.connect(m[1]!.replace(/^\[|\]$/g, ""), Number(m[2]), {
        data: (chunk) => this.#onData(link, chunk),
        drain: () => this.#write(link, null),
        close: () => this.#onClosed(link),
      });
      const timeoutMs = this.#o.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
      const timeout = new Promise<null>((resolve) => (timer = this.#clock.setTimeout(() => resolve(null), timeoutMs)));
      const socket = await Promise.race([connecting, timeout]);
      if (!socket) {
        // Late success is closed at once; a late failure is swallowed.
        connecting.then(
          (s) => s.terminate(),
          () => {},
        );
        throw new Error(`no connection within ${timeoutMs} ms`);
      }
      if (!this.#running || link.closed) {
        socket.terminate();
        return;
      }
      this.#connected(link, socket);
    } catch (e) {
      this.#o.log.rateLimited("warn", "ha-connect", `cannot connect to master HA ${addr}: ${e instanceof Error ? e.message : String(e)}`);
      this.#nextAttemptAt = this.#now() + this.#o.reconnectMs;
    } finally {
      if (timer) this.#clock.clearTimeout(timer);
      this.#connecting = false;
    }
  }

  /** The connection is up: it is the current one; the replica names itself, then reports. */
  #connected(link: Link, socket: HaSocket): void {
    // One attempt at a time (#connecting), made only while no connection is current: two current
    // links would write two streams into one log.
    assert(this.#link === null, "HA link to {} connected while the one to {} is current", link.addr, this.#link?.addr);
    link.socket = socket;
    this.#link = link;
    this.#lastReceiveAt = this.#now();
    this.#o.log.info(`connected to master HA ${link.addr}; reporting offset ${this.#o.store.maxPhyOffset}`);
    const id = this.#o.replicaId?.();
    if (id !== undefined) this.#write(link, encodeIdentity(id));
    this.#report(link);
  }

  #report(link: Link): void {
    if (!link.socket || link.closed) return;
    this.#lastReportAt = this.#now();
    const offset = this.#o.store.maxPhyOffset;
    // What this replica acknowledges only grows on one connection: its log is cut only before a
    // connection (beforeConnect), and while it is current only this link appends to it. A report
    // that went back would release a SYNC_MASTER put for bytes this replica no longer holds.
    assert(offset >= link.reported, "replica reports {} to {} after reporting {}", offset, link.addr, link.reported);
    link.reported = offset;
    this.#write(link, encodeReport(offset));
  }

  /** Writes `bytes` after whatever is unsent (null: only that, on drain). */
  #write(link: Link, bytes: Uint8Array | null): void {
    const socket = link.socket;
    if (!socket || link.closed) return;
    let out = bytes;
    if (link.unsent !== null) {
      out = bytes === null ? link.unsent : concatBytes(link.unsent, bytes);
      link.unsent = null;
    }
    if (out === null || out.length === 0) return;
    const n = socket.write(out);
    if (n < 0 || n >= out.length) return;
    if (out.length - n > UNSENT_MAX_BYTES) return this.#broken(link, `the master took no report bytes for a while (${out.length - n} unsent)`);
    link.unsent = out.slice(n);
  }

  #onData(link: Link, chunk: Uint8Array): void {
    if (link.closed) return;
    this.#lastReceiveAt = this.#now();
    const frames = link.decoder.feed(chunk);
    if (!Array.isArray(frames)) return this.#broken(link, frames.invalid);
    const store = this.#o.store;
    let applied = false;
    for (const f of frames) {
      const refused = this.#checkEpoch(link, f);
      if (refused !== null) return this.#broken(link, refused);
      if (f.epoch !== undefined) continue;
      const r = link.records.feed(f.offset, f.data);
      // Verified records before a fault are written even when the stream then breaks.
      for (const a of r.appends) {
        // The record stream started at this log's end and only this link writes to it (a replica's
        // store takes no puts): every append lands at the end, and moves it by its length.
        const before = store.maxPhyOffset;
        assert(a.offset === before || store.commitLog.segments.length === 0, "replicated bytes at {}, but the log ends at {}", a.offset, before);
        const bad = store.appendReplicated(a.offset, a.data, a.damaged);
        if (bad) return this.#broken(link, `the store refused ${a.data.length} bytes at ${a.offset}: ${bad.invalid}`);
        assert(
          store.maxPhyOffset === a.offset + a.data.length,
          "{} bytes replicated at {} left the log's end at {}",
          a.data.length,
          a.offset,
          store.maxPhyOffset,
        );
        if (a.damaged !== undefined) {
          this.#o.log.rateLimited(
            "warn",
            "ha-damage",
            `the master streamed damaged bytes [${a.offset}, ${a.offset + a.data.length}) (${a.damaged}): stored as they are, never served`,
          );
        }
        applied = true;
      }
      this.#bytesReceived += f.data.length;
      const last = r.records.at(-1);
      if (last) this.#lastAppliedStoreTimestamp = last.storeTimestamp;
      if (r.records.length > 0 && this.#o.onRecords) {
        try {
          this.#o.onRecords(r.records);
        } catch (e) {
          this.#o.log.rateLimited("error", "ha-on-records", `handling replicated records failed: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      if (r.invalid !== undefined) {
        // Bad bytes: fetched once more; if they come back bad at the same offset they are the master's own damage.
        if (r.damageAt !== undefined) this.#acceptDamageAt = r.damageAt;
        return this.#broken(link, r.invalid);
      }
    }
    if (applied) this.#report(link);
  }

  /** Failover: an epoch frame older than expected, or data before any epoch frame, is refused. */
  #checkEpoch(link: Link, f: { epoch?: number; data: Uint8Array }): string | null {
    const expected = this.#o.expectedEpoch?.();
    if (f.epoch !== undefined) {
      link.epoch = f.epoch;
      return expected !== undefined && f.epoch < expected ? `the master streams as epoch ${f.epoch}, older than epoch ${expected} this replica follows` : null;
    }
    if (expected !== undefined && link.epoch === undefined && f.data.length > 0) return "the master sent data before its epoch";
    return null;
  }

  #broken(link: Link, why: string): void {
    this.#streamErrors++;
    this.#lastStreamError = why;
    const msg = `HA stream from ${link.addr} broken: ${why}; reconnecting to resume from ${this.#o.store.maxPhyOffset}`;
    this.#o.log.rateLimited("warn", "ha-broken", msg);
    this.#drop(link);
  }

  /** Closes a connection for good; the timer reconnects after reconnectMs. */
  #drop(link: Link | null): void {
    if (!link || link.closed) return;
    link.closed = true;
    link.socket?.terminate();
    link.socket = null;
    if (this.#link === link) this.#link = null;
    this.#nextAttemptAt = this.#now() + this.#o.reconnectMs;
  }

  #onClosed(link: Link): void {
    if (link.closed) return;
    this.#o.log.info(`HA connection to ${link.addr} closed`);
    this.#drop(link);
  }
}

function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
