/**
 * Shared by bench/store/run.ts (the parent) and bench/store/workload.ts (one child per workload):
 * the result shapes, a constant-memory latency histogram, memory and device counters.
 * A benchmark, not a test: nothing here runs under `bun test`.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { cpus } from "node:os";
import { dirname } from "node:path";

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;
/** The line a child prints its result on (anything else it prints goes to stderr). */
export const RESULT_MARK = "@@RESULT ";

export const TOPIC = "BenchTopic";
export const QUEUES = 8;
export const TAG = "TagA";
export const BODY_BYTES = 1024;

// ---------------------------------------------------------------- latency histogram

/**
 * Log-bucketed histogram (2% wide buckets from 0.1 µs to ~100 s): constant memory, so recording
 * millions of latencies does not itself grow the heap the benchmark is measuring.
 */
export class Histogram {
  static readonly #BASE_US = 0.1;
  static readonly #GROWTH = Math.log(1.02);
  readonly #buckets = new Float64Array(1100);
  count = 0;
  max = 0;
  sum = 0;

  /** Records one value in milliseconds. */
  record(ms: number): void {
    const us = ms * 1000;
    let i = us <= Histogram.#BASE_US ? 0 : Math.ceil(Math.log(us / Histogram.#BASE_US) / Histogram.#GROWTH);
    if (i >= this.#buckets.length) i = this.#buckets.length - 1;
    this.#buckets[i]!++;
    this.count++;
    this.sum += ms;
    if (ms > this.max) this.max = ms;
  }

  /** The q-quantile (0..1) in ms, to within 2%. */
  quantile(q: number): number {
    if (this.count === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < this.#buckets.length; i++) {
      seen += this.#buckets[i]!;
      if (seen >= rank) return Math.min(this.max, (Histogram.#BASE_US * Math.exp(i * Histogram.#GROWTH)) / 1000);
    }
    return this.max;
  }

  summary(): LatencySummary {
    return {
      count: this.count,
      mean_ms: this.count ? round(this.sum / this.count, 4) : 0,
      p50_ms: round(this.quantile(0.5), 4),
      p99_ms: round(this.quantile(0.99), 4),
      p999_ms: round(this.quantile(0.999), 4),
      max_ms: round(this.max, 4),
    };
  }
}

export interface LatencySummary {
  count: number;
  mean_ms: number;
  p50_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
}

// ---------------------------------------------------------------- memory

export interface MemSample {
  /** CommitLog bytes stored when sampled, MiB. */
  stored_mib: number;
  t_s: number;
  /** process.memoryUsage().rss */
  rss_mib: number;
  /** /proc/self/status: anonymous (heap, malloc) vs file-backed (mapped segments) resident pages. */
  rss_anon_mib: number | null;
  rss_file_mib: number | null;
  heap_used_mib: number;
}

function procStatusKiB(field: string, text: string): number | null {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text);
  return m ? Number(m[1]) : null;
}

export function memSample(storedBytes: number, tSeconds: number): MemSample {
  const mu = process.memoryUsage();
  let status = "";
  try {
    status = readFileSync("/proc/self/status", "utf8");
  } catch {
    // Not Linux: only the portable figures.
  }
  const anon = procStatusKiB("RssAnon", status);
  const file = procStatusKiB("RssFile", status);
  const shmem = procStatusKiB("RssShmem", status);
  return {
    stored_mib: round(storedBytes / MiB, 1),
    t_s: round(tSeconds, 2),
    rss_mib: round(mu.rss / MiB, 1),
    rss_anon_mib: anon === null ? null : round(anon / 1024, 1),
    rss_file_mib: file === null ? null : round((file + (shmem ?? 0)) / 1024, 1),
    heap_used_mib: round(mu.heapUsed / MiB, 1),
  };
}

// ---------------------------------------------------------------- block device counters

export interface DiskCounters {
  device: string;
  sectorsRead: number;
  sectorsWritten: number;
  flushes: number;
}

/** /proc/diskstats line of the block device holding `path` (machine-wide counters), or null. */
export function diskCounters(path: string): DiskCounters | null {
  try {
    let existing = path;
    while (!existsSync(existing) && dirname(existing) !== existing) existing = dirname(existing);
    const dev = statSync(existing).dev;
    // glibc's gnu_dev_major / gnu_dev_minor on the (Linux) dev_t.
    const major = ((dev >>> 8) & 0xfff) | (Math.floor(dev / 2 ** 32) & ~0xfff);
    const minor = (dev & 0xff) | ((dev >>> 12) & ~0xff);
    if (!existsSync("/proc/diskstats")) return null;
    for (const line of readFileSync("/proc/diskstats", "utf8").split("\n")) {
      const f = line.trim().split(/\s+/);
      if (Number(f[0]) === major && Number(f[1]) === minor) {
        return { device: f[2] ?? "?", sectorsRead: Number(f[5]), sectorsWritten: Number(f[9]), flushes: Number(f[18] ?? 0) };
      }
    }
  } catch {
    // No counters on this platform.
  }
  return null;
}

export interface DiskDelta {
  device: string;
  mib_read: number;
  mib_written: number;
  flushes: number;
}

export function diskDelta(a: DiskCounters | null, b: DiskCounters | null): DiskDelta | null {
  if (!a || !b) return null;
  return {
    device: a.device,
    mib_read: round(((b.sectorsRead - a.sectorsRead) * 512) / MiB, 1),
    mib_written: round(((b.sectorsWritten - a.sectorsWritten) * 512) / MiB, 1),
    flushes: b.flushes - a.flushes,
  };
}

/** /proc/self/io: bytes this process caused to be read from / written to storage (dirtied pages count in full). */
export function procIo(): { read: number; write: number } | null {
  try {
    const t = readFileSync("/proc/self/io", "utf8");
    const g = (k: string) => Number(new RegExp(`^${k}: (\\d+)`, "m").exec(t)?.[1] ?? NaN);
    return { read: g("read_bytes"), write: g("write_bytes") };
  } catch {
    return null;
  }
}

export function procIoDelta(
  a: { read: number; write: number } | null,
  b: { read: number; write: number } | null,
): { mib_read: number; mib_written: number } | null {
  if (!a || !b || Number.isNaN(a.write)) return null;
  return { mib_read: round((b.read - a.read) / MiB, 1), mib_written: round((b.write - a.write) / MiB, 1) };
}

// ---------------------------------------------------------------- results

export interface RawWriteResult {
  kind: "raw-write";
  bytes: number;
  write_s: number;
  fdatasync_s: number;
  /** Including the final fdatasync. */
  mib_per_s: number;
  /** Page-cache speed: the writes alone, before the fdatasync. */
  mib_per_s_page_cache: number;
  cpu: CpuDelta;
  disk: DiskDelta | null;
}

export interface RawSyncResult {
  kind: "raw-fdatasync";
  seconds: number;
  ops: number;
  ops_per_s: number;
  latency: LatencySummary;
}

/** Process CPU and page faults between two points (resourceUsage deltas). */
export interface CpuDelta {
  /** (user + system) CPU-seconds per wall second: 1.0 = one core busy. */
  cpu: number;
  user: number;
  sys: number;
  minor_faults: number;
  major_faults: number;
  /** CPUs busy machine-wide over the same interval (/proc/stat), this process included; null if unknown. */
  machine_busy: number | null;
}

export interface CpuMark {
  ru: NodeJS.ResourceUsage;
  /** /proc/stat "cpu" line: [busy, total] jiffies. */
  stat: [number, number] | null;
}

function procStat(): [number, number] | null {
  try {
    const f = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    const idle = (f[3] ?? 0) + (f[4] ?? 0);
    return [total - idle, total];
  } catch {
    return null;
  }
}

export function cpuMark(): CpuMark {
  return { ru: process.resourceUsage(), stat: procStat() };
}

export function cpuDelta(a: CpuMark, b: CpuMark, wallSeconds: number): CpuDelta {
  const user = (b.ru.userCPUTime - a.ru.userCPUTime) / 1e6 / wallSeconds;
  const sys = (b.ru.systemCPUTime - a.ru.systemCPUTime) / 1e6 / wallSeconds;
  let machine: number | null = null;
  if (a.stat && b.stat && b.stat[1] > a.stat[1]) machine = round(((b.stat[0] - a.stat[0]) / (b.stat[1] - a.stat[1])) * cpus().length, 2);
  return {
    cpu: round(user + sys, 2),
    user: round(user, 2),
    sys: round(sys, 2),
    minor_faults: b.ru.minorPageFault - a.ru.minorPageFault,
    major_faults: b.ru.majorPageFault - a.ru.majorPageFault,
    machine_busy: machine,
  };
}

export interface AppendParams {
  flush: "ASYNC_FLUSH" | "SYNC_FLUSH";
  /** Messages per putMessages call (1 = putMessage). */
  batch: number;
  /** Calls in flight, each awaited by its own loop. */
  inflight: number;
  messages: number;
  /** Set KEYS on every message (exercises the IndexFile). */
  keys: boolean;
  rssEveryBytes: number;
  /** Each in-flight loop yields to the event loop after this many calls, all of them to one shared setImmediate turn; 0 = never. */
  yieldEvery: number;
  /** Stop issuing puts after this long (the result says it was cut). */
  maxSeconds: number;
  /** Sample memory again after this long idle (cold mappings released?); 0 = no. */
  idleAfterMs: number;
  /** Leave the store on disk for a later read workload. */
  keepStore: boolean;
}

export interface AppendResult {
  kind: "append";
  params: AppendParams;
  messages: number;
  cut_by_time_limit: boolean;
  failures: number;
  first_failure: string | null;
  stored_bytes: number;
  record_bytes: number;
  elapsed_s: number;
  msgs_per_s: number;
  /** CommitLog bytes per second (what the disk has to take). */
  mib_per_s: number;
  /** Time until the last put was acknowledged plus the closing flush (shutdown). */
  durable_s: number;
  mib_per_s_durable: number;
  latency: LatencySummary;
  cpu: CpuDelta;
  /** fdatasync calls observed on MappedFiles (instrumented in the child), or null. */
  fdatasyncs: { commitlog: number; consumequeue: number; other: number } | null;
  /** Machine-wide counters of the store's block device (other processes included). */
  disk: DiskDelta | null;
  /** This process's storage I/O (/proc/self/io), from open to the end of shutdown. */
  proc_io: { mib_read: number; mib_written: number } | null;
  open_ms: number;
  shutdown_ms: number;
  rss_series: MemSample[];
  rss_final: MemSample;
  rss_after_idle: MemSample | null;
  heap_used_after_gc_mib: number;
}

export interface ReadResult {
  kind: "read";
  cold: boolean;
  evicted_files: number;
  messages: number;
  expected: number;
  bytes: number;
  calls: number;
  elapsed_s: number;
  msgs_per_s: number;
  mib_per_s: number;
  latency: LatencySummary;
  cpu: CpuDelta;
  header_mismatches: number;
  unexpected_statuses: Record<string, number>;
  views_not_copies: boolean;
  /** Device traffic while opening (recovery) and while draining, separately. */
  disk_open: DiskDelta | null;
  disk: DiskDelta | null;
  open_ms: number;
  /** Memory right after open, before the first read. */
  rss_after_open: MemSample;
  rss_final: MemSample;
}

export type WorkloadResult = RawWriteResult | RawSyncResult | AppendResult | ReadResult;

// ---------------------------------------------------------------- formatting

export function round(x: number, digits = 1): number {
  const p = 10 ** digits;
  return Math.round(x * p) / p;
}

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/** Three significant digits, thousands separated. */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const a = Math.abs(n);
  if (a >= 100) return fmtInt(n);
  if (a >= 10) return n.toFixed(1);
  if (a >= 1) return n.toFixed(2);
  if (a === 0) return "0";
  return n.toPrecision(3);
}

export function parseJsonLine<T>(stdout: string): T | null {
  const line = stdout
    .split("\n")
    .reverse()
    .find((l) => l.startsWith(RESULT_MARK));
  return line ? (JSON.parse(line.slice(RESULT_MARK.length)) as T) : null;
}
