/**
 * Workload parameters and measuring helpers, mirroring ../shared/bench-peers/clients/common.ts so that
 * RocketBun's figures are taken exactly as the peers' are: nearest-rank percentiles, the closed-loop
 * publisher (`inflight` workers, each awaiting its ack), the open-loop W3 schedule off a 1 ms timer
 * with performance.now() stamped at offset 0 and the sequence number at offset 8 of the body, and
 * CPU/RSS from /proc.
 */
import { randomFillSync } from "node:crypto";
import { execFileSync } from "node:child_process";
import { closeSync, fdatasyncSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { loadavg } from "node:os";

export interface WorkloadParams {
  /** W1, W1s, W2, W4, W5, W6 message count. */
  msgs: number;
  /** W1/W4 concurrent sends awaiting SEND_OK. */
  inflight: number;
  /** W1/W2/W3/W5 body size. */
  body: number;
  /** W4 body size. */
  smallBody: number;
  /** W2 pull batch (the peers read 256 at a time). */
  batch: number;
  /** W5 messages per batch send. */
  sendBatch: number;
  /** W3 msgs/s and duration. */
  e2eRate: number;
  e2eSecs: number;
  /** Un-timed sends before W1 (client JIT warm-up). */
  warmup: number;
  /** W6: topics × queues per topic. */
  w6Topics: number;
  w6Queues: number;
  /** W6: stop sending after this many seconds (what was sent is reported), and give the drain twice that. */
  w6MaxSecs: number;
  /** Pause before the idle RSS readings (fresh start, and after W1–W5). */
  idleMs: number;
  /** Collect the client's garbage before each timed window (workloads.ts startWindow); --no-collect turns it off. */
  collectBetween: boolean;
}

export const STANDARD: WorkloadParams = {
  msgs: 200_000,
  inflight: 32,
  body: 1024,
  smallBody: 128,
  batch: 256,
  sendBatch: 32,
  e2eRate: 5000,
  e2eSecs: 10,
  warmup: 5000,
  w6Topics: 1250,
  w6Queues: 8,
  w6MaxSecs: 90,
  idleMs: 3000,
  collectBetween: true,
};

export const now = () => performance.now();
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const round = (v: number, d = 0) => Math.round(v * 10 ** d) / 10 ** d;

/** One pre-generated random pool sliced per message: RNG cost stays out of the timed loops and no
 * body is compressible or a duplicate of another. */
export function randomBodies(count: number, size: number): Buffer[] {
  const pool = Buffer.allocUnsafe(count * size);
  const CH = 64 * 1024 * 1024;
  for (let off = 0; off < pool.length; off += CH) randomFillSync(pool, off, Math.min(CH, pool.length - off));
  const out = new Array<Buffer>(count);
  for (let i = 0; i < count; i++) out[i] = pool.subarray(i * size, (i + 1) * size);
  return out;
}

export interface Stats {
  p50_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
  mean_ms: number;
}

/** Nearest-rank percentiles, as the peers' clients compute them. */
export function stats(samples: Float64Array, n = samples.length): Stats {
  const a = Float64Array.from(samples.subarray(0, n)).sort();
  if (a.length === 0) return { p50_ms: NaN, p99_ms: NaN, p999_ms: NaN, max_ms: NaN, mean_ms: NaN };
  const q = (p: number) => a[Math.min(a.length - 1, Math.max(0, Math.ceil(p * a.length) - 1))]!;
  let sum = 0;
  for (const v of a) sum += v;
  const r = (v: number) => Math.round(v * 1000) / 1000;
  return { p50_ms: r(q(0.5)), p99_ms: r(q(0.99)), p999_ms: r(q(0.999)), max_ms: r(a[a.length - 1]!), mean_ms: r(sum / a.length) };
}

/** Closed-loop publisher: `inflight` workers, each awaiting the stored-ack before its next send.
 * With `maxMs`, no new send starts after that long; `done` is how many were sent. */
export async function closedLoop<T>(
  items: T[],
  inflight: number,
  publish: (item: T, i: number) => Promise<unknown>,
  maxMs = Infinity,
): Promise<{ elapsedMs: number; lat: Float64Array; done: number }> {
  const n = items.length;
  const lat = new Float64Array(n);
  let next = 0;
  let done = 0;
  const t0 = now();
  const worker = async () => {
    for (;;) {
      if (now() - t0 > maxMs) return;
      const i = next++;
      if (i >= n) return;
      const s = now();
      await publish(items[i]!, i);
      lat[i] = now() - s;
      done++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(inflight, n) }, worker));
  return { elapsedMs: now() - t0, lat: done < n ? lat.subarray(0, Math.min(next, n)) : lat, done };
}

/** Open-loop paced publisher (W3): `rate` msgs/s off a 1 ms timer; the schedule never waits for acks. */
export async function paced(
  bodies: Buffer[],
  rate: number,
  publish: (body: Buffer, i: number) => Promise<unknown>,
): Promise<{ sent: number; elapsedMs: number; ackLat: Float64Array; maxOutstanding: number; failures: number }> {
  const total = bodies.length;
  const ackLat = new Float64Array(total);
  const pending: Promise<unknown>[] = [];
  let sent = 0;
  let outstanding = 0;
  let maxOutstanding = 0;
  let failures = 0;
  const t0 = now();
  while (sent < total) {
    const due = Math.min(total, Math.floor(((now() - t0) * rate) / 1000) + 1);
    while (sent < due) {
      const i = sent++;
      const b = bodies[i]!;
      const s = now();
      b.writeDoubleLE(s, 0);
      b.writeUInt32LE(i, 8);
      outstanding++;
      if (outstanding > maxOutstanding) maxOutstanding = outstanding;
      pending.push(
        publish(b, i).then(
          () => {
            ackLat[i] = now() - s;
            outstanding--;
          },
          () => {
            failures++;
            outstanding--;
          },
        ),
      );
    }
    await sleep(1);
  }
  const elapsedMs = now() - t0;
  await Promise.all(pending);
  return { sent, elapsedMs, ackLat, maxOutstanding, failures };
}

/** Receiver side of W3: now() - stamp per body, once per sequence number. */
export class E2E {
  readonly lat: Float64Array;
  readonly seen: Uint8Array;
  count = 0;
  dups = 0;
  #done?: () => void;
  constructor(readonly total: number) {
    this.lat = new Float64Array(total);
    this.seen = new Uint8Array(total);
  }
  /** Sequence number of un-timed warm-up messages: counted apart, never recorded. */
  static readonly WARMUP_SEQ = 0xffffffff;
  warmupSeen = 0;
  onBody(b: Uint8Array): void {
    const t = now();
    const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    const stamp = dv.getFloat64(0, true);
    const seq = dv.getUint32(8, true);
    if (seq === E2E.WARMUP_SEQ) {
      this.warmupSeen++;
      return;
    }
    if (seq >= this.total || this.seen[seq]) {
      this.dups++;
      return;
    }
    this.seen[seq] = 1;
    this.lat[this.count++] = t - stamp;
    if (this.count === this.total && this.#done) this.#done();
  }
  /** Resolves once `n` warm-up messages arrived (or after timeoutMs). */
  async waitWarmup(n: number, timeoutMs: number): Promise<void> {
    const deadline = now() + timeoutMs;
    while (this.warmupSeen < n && now() < deadline) await new Promise((r) => setTimeout(r, 10));
  }
  wait(timeoutMs: number): Promise<boolean> {
    if (this.count === this.total) return Promise.resolve(true);
    return new Promise((res) => {
      const timer = setTimeout(() => res(false), timeoutMs);
      this.#done = () => {
        clearTimeout(timer);
        res(true);
      };
    });
  }
}

/** Resident set size of a process in bytes (/proc/PID/status VmRSS), or null when it is gone. */
export function rssBytes(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/**
 * RSS split, bytes: anonymous (heap, malloc), file-backed, shared memory, and — with `storeDir` —
 * the part of the file-backed pages that are mapped store files (CommitLog/ConsumeQueue/index,
 * from /proc/PID/smaps). The rest of the file-backed pages is mostly the executable itself.
 */
export function rssDetail(pid: number, storeDir?: string): { anon: number; file: number; shmem: number; store: number } | null {
  try {
    const txt = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)\\s+kB`).exec(txt)?.[1] ?? NaN) * 1024;
    let store = NaN;
    if (storeDir) {
      store = 0;
      let inStore = false;
      for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
        if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inStore = line.includes(storeDir);
        else if (inStore && line.startsWith("Rss:")) store += Number(/(\d+)/.exec(line)?.[1] ?? 0) * 1024;
      }
    }
    return { anon: kb("RssAnon"), file: kb("RssFile"), shmem: kb("RssShmem"), store };
  } catch {
    return null;
  }
}

/** CPU seconds (user + sys, including reaped children) a process has used so far. */
export function cpuSeconds(pid: number): number | null {
  const t = cpuTimes(pid);
  return t ? t.user + t.sys : null;
}

/** User and system CPU seconds of a process (/proc/PID/stat utime+cutime, stime+cstime; USER_HZ 100). */
export function cpuTimes(pid: number): { user: number; sys: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return { user: (Number(f[11]) + Number(f[13])) / 100, sys: (Number(f[12]) + Number(f[14])) / 100 };
  } catch {
    return null;
  }
}

/** Apparent and allocated bytes under a folder (du). */
/**
 * The disk's fdatasync rate right now: 16 KiB appended + fdatasync in a loop for `ms`, in a temp
 * file under `dir` (removed). W1s is bounded by this rate, which drifts 2× within an hour on this
 * VM, so the report sets W1s's flush rate against a probe taken just before it, not only against
 * the peers' fio figure minutes later.
 */
export function fdatasyncProbe(dir: string, ms = 2000): { syncs_per_s: number; p50_ms: number } {
  const path = join(dir, `.fdatasync-probe-${process.pid}`);
  const fd = openSync(path, "w");
  const chunk = Buffer.alloc(16 * 1024, 7);
  const lat: number[] = [];
  try {
    const t0 = now();
    let pos = 0;
    while (now() - t0 < ms) {
      const t = now();
      writeSync(fd, chunk, 0, chunk.length, pos);
      fdatasyncSync(fd);
      lat.push(now() - t);
      pos += chunk.length;
    }
    const secs = (now() - t0) / 1000;
    return { syncs_per_s: Math.round(lat.length / secs), p50_ms: stats(Float64Array.from(lat)).p50_ms };
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
}

export function diskUsage(dir: string): { apparent: number; allocated: number } | null {
  try {
    const apparent = Number(execFileSync("du", ["-sb", dir], { encoding: "utf8" }).split(/\s/)[0]);
    const allocated = Number(execFileSync("du", ["-s", "--block-size=1", dir], { encoding: "utf8" }).split(/\s/)[0]);
    return { apparent, allocated };
  } catch {
    return null;
  }
}

/** Completed cache-flush requests of the block device holding `dir` (/proc/diskstats field 19). */
export function deviceFlushes(dir: string): number | null {
  try {
    const dev = statSync(dir).dev;
    const major = (dev >> 8) & 0xfff;
    const minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
    for (const line of readFileSync("/proc/diskstats", "utf8").split("\n")) {
      const f = line.trim().split(/\s+/);
      if (Number(f[0]) === major && Number(f[1]) === minor && f.length >= 20) return Number(f[18]);
    }
  } catch {
    /* not available */
  }
  return null;
}

/** Resource counters to diff around a workload: wall clock, client (this process) and server CPU, device flushes. */
export interface Snap {
  t: number;
  /** Epoch ms, to find the workload's window in a CPU profile. */
  wall: number;
  cpuClient: number;
  cpuServer: number | null;
  cpuServerSys: number | null;
  flushes: number | null;
}

export function snap(serverPid: number, dataDir: string): Snap {
  const c = process.cpuUsage();
  const st = cpuTimes(serverPid);
  return {
    t: now(),
    wall: Date.now(),
    cpuClient: (c.user + c.system) / 1e6,
    cpuServer: st ? st.user + st.sys : null,
    cpuServerSys: st ? st.sys : null,
    flushes: deviceFlushes(dataDir),
  };
}

export interface SnapDiff {
  elapsed_s: number;
  server_cpu_s: number | null;
  /** The kernel's part of server_cpu_s (syscalls, page faults). */
  server_sys_s: number | null;
  client_cpu_s: number;
  device_flushes: number | null;
  window_ms: [number, number];
  /** The machine's 1-minute load average at the end: other work on a shared machine shows here. */
  loadavg_1m: number;
}

export function diff(a: Snap, b: Snap): SnapDiff {
  return {
    elapsed_s: round((b.t - a.t) / 1000, 3),
    server_cpu_s: a.cpuServer == null || b.cpuServer == null ? null : round(b.cpuServer - a.cpuServer, 2),
    server_sys_s: a.cpuServerSys == null || b.cpuServerSys == null ? null : round(b.cpuServerSys - a.cpuServerSys, 2),
    client_cpu_s: round(b.cpuClient - a.cpuClient, 2),
    device_flushes: a.flushes == null || b.flushes == null ? null : b.flushes - a.flushes,
    window_ms: [a.wall, b.wall],
    loadavg_1m: round(loadavg()[0] ?? NaN, 2),
  };
}

/** Server and client CPU in µs per message, from a diff. */
export function cpuPerMsg(d: SnapDiff, msgs: number): { server_cpu_us_per_msg: number | null; client_cpu_us_per_msg: number } {
  return {
    server_cpu_us_per_msg: d.server_cpu_s == null ? null : round((d.server_cpu_s * 1e6) / msgs, 1),
    client_cpu_us_per_msg: round((d.client_cpu_s * 1e6) / msgs, 1),
  };
}
