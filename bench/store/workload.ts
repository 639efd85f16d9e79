/**
 * One bench/store workload in its own process (so RSS and heap are per workload):
 *
 *   bun bench/store/workload.ts <name> <dir> '<json params>'
 *
 *   raw-write      {bytes}       sequential 1 MiB buffered writes to <dir>/raw.bin, then one fdatasync
 *   raw-fdatasync  {seconds}     4 KiB write + fdatasync, in a loop, for `seconds`
 *   append         AppendParams  MessageStore at <dir>: puts of 1 KiB random bodies, see common.ts
 *   read           {expected, cold}  reopen the store at <dir> and drain every queue with getMessage(…, 32)
 *
 * Prints exactly one line starting with RESULT_MARK (JSON) on stdout; progress goes to stderr.
 * A benchmark, not a test.
 */
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, fdatasyncSync, openSync, readdirSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { MappedFile } from "../../src/commitlog/mapped-file.ts";
import { MessageStore, type MessageStoreOptions, type PutMessageRequest, type PutMessageResult } from "../../src/commitlog/index.ts";
import { message, testStoreOptions } from "../../src/commitlog/test-support.ts";
import {
  BODY_BYTES,
  cpuDelta,
  cpuMark,
  diskCounters,
  diskDelta,
  Histogram,
  memSample,
  MiB,
  procIo,
  procIoDelta,
  QUEUES,
  RESULT_MARK,
  round,
  TAG,
  TOPIC,
  type AppendParams,
  type AppendResult,
  type MemSample,
  type RawSyncResult,
  type RawWriteResult,
  type ReadResult,
  type WorkloadResult,
} from "./common.ts";

/** Production-like geometry: 1 GiB CommitLog segments, RocketMQ's default ConsumeQueue/index sizes. */
export function benchStoreOptions(dir: string, flush: AppendParams["flush"]): MessageStoreOptions {
  return testStoreOptions(dir, {
    segmentBytes: 1 << 30,
    flushDiskType: flush,
    consumeQueueUnitsPerFile: 300_000,
    indexSlotNum: 5_000_000,
    indexNum: 20_000_000,
    maxMessageSizeBytes: 4 << 20,
    checkpointIntervalMs: 1000,
    flushIntervalMs: 500,
    syncFlushTimeoutMs: 5000,
  });
}

function log(msg: string): void {
  process.stderr.write(`  [${process.argv[2]}] ${msg}\n`);
}

// ---------------------------------------------------------------- fdatasync instrumentation

/**
 * Counts the fdatasyncs the store issues by wrapping MappedFile's flush methods (the store's code
 * is not touched; a flush counts when the file has unflushed bytes, i.e. when it really syncs).
 * Returns null if the methods are not there (the store changed shape).
 */
function instrumentFlushes(): { commitlog: number; consumequeue: number; other: number } | null {
  const counts = { commitlog: 0, consumequeue: 0, other: 0 };
  const proto = MappedFile.prototype as unknown as Record<string, unknown>;
  let wrapped = 0;
  for (const name of ["flushAsync", "flushSync"]) {
    const orig = proto[name];
    if (typeof orig !== "function") continue;
    proto[name] = function (this: MappedFile, ...args: unknown[]) {
      if (this.flushedPosition < this.wrotePosition) {
        if (this.path.includes("/commitlog/")) counts.commitlog++;
        else if (this.path.includes("/consumequeue/")) counts.consumequeue++;
        else counts.other++;
      }
      return (orig as (...a: unknown[]) => unknown).apply(this, args);
    };
    wrapped++;
  }
  return wrapped === 2 ? counts : null;
}

// ---------------------------------------------------------------- raw disk

function rawWrite(dir: string, p: { bytes: number }): RawWriteResult {
  const path = join(dir, "raw-write.bin");
  const chunk = randomBytes(MiB);
  const d0 = diskCounters(dir);
  const fd = openSync(path, "w");
  try {
    const c0 = cpuMark();
    const t0 = performance.now();
    let left = p.bytes;
    while (left > 0) {
      const n = Math.min(left, MiB);
      let off = 0;
      while (off < n) off += writeSync(fd, chunk, off, n - off);
      left -= n;
    }
    const t1 = performance.now();
    fdatasyncSync(fd);
    const t2 = performance.now();
    const c1 = cpuMark();
    const d1 = diskCounters(dir);
    return {
      kind: "raw-write",
      bytes: p.bytes,
      write_s: round((t1 - t0) / 1000, 3),
      fdatasync_s: round((t2 - t1) / 1000, 3),
      mib_per_s: round(p.bytes / MiB / ((t2 - t0) / 1000), 1),
      mib_per_s_page_cache: round(p.bytes / MiB / ((t1 - t0) / 1000), 1),
      cpu: cpuDelta(c0, c1, (t2 - t0) / 1000),
      disk: diskDelta(d0, d1),
    };
  } finally {
    closeSync(fd);
    unlinkSync(path);
  }
}

function rawFdatasync(dir: string, p: { seconds: number }): RawSyncResult {
  const path = join(dir, "raw-fdatasync.bin");
  const block = randomBytes(4096);
  const fd = openSync(path, "w");
  const h = new Histogram();
  try {
    const t0 = performance.now();
    const end = t0 + p.seconds * 1000;
    let ops = 0;
    let now = t0;
    while (now < end) {
      writeSync(fd, block, 0, block.length);
      const s = performance.now();
      fdatasyncSync(fd);
      now = performance.now();
      h.record(now - s);
      ops++;
    }
    const secs = (now - t0) / 1000;
    return { kind: "raw-fdatasync", seconds: round(secs, 2), ops, ops_per_s: Math.round(ops / secs), latency: h.summary() };
  } finally {
    closeSync(fd);
    unlinkSync(path);
  }
}

// ---------------------------------------------------------------- append

async function append(dir: string, p: AppendParams): Promise<AppendResult> {
  const flushes = instrumentFlushes();
  // Random bodies: 1 KiB windows into a 16 MiB random pool (the store copies them into the log).
  const pool = randomBytes(16 * MiB);
  const bodyAt = (i: number) => {
    const off = (i * 1031) % (pool.length - BODY_BYTES);
    return pool.subarray(off, off + BODY_BYTES);
  };
  // As the broker calls the store: the send processor has parsed the properties already and
  // passes TAGS/KEYS along (propertiesParsed), so the store does not parse them again.
  const template: PutMessageRequest = { ...message(TOPIC, 0, new Uint8Array(0), { TAGS: TAG }), tags: TAG, propertiesParsed: true };
  const keysSuffix = `\u0002KEYS\u0001`;
  const req = (i: number, queueId: number): PutMessageRequest => {
    const r: PutMessageRequest = { ...template, queueId, body: bodyAt(i), bornTimestamp: Date.now() };
    if (p.keys) {
      r.properties = `${template.properties}${keysSuffix}key-${i}`;
      r.keys = `key-${i}`;
    }
    return r;
  };

  const d0 = diskCounters(dir);
  const io0 = procIo();
  const tOpen = performance.now();
  const store = MessageStore.open(benchStoreOptions(dir, p.flush));
  const openMs = performance.now() - tOpen;

  const h = new Histogram();
  const series: MemSample[] = [];
  let next = 0;
  let batchNo = 0;
  let stored = 0;
  let records = 0;
  let failures = 0;
  let firstFailure: string | null = null;
  let cut = false;
  let nextSample = p.rssEveryBytes;
  const cpu0 = cpuMark();
  const t0 = performance.now();
  const deadline = t0 + p.maxSeconds * 1000;
  let lastProgress = t0;

  const onDone = (res: PutMessageResult, count: number) => {
    if (res.status !== "PUT_OK") {
      failures += count;
      firstFailure ??= `${res.status}${res.remark ? `: ${res.remark}` : ""}`;
      return;
    }
    for (const a of res.appended) stored += a.size;
    records += res.appended.length;
    if (stored >= nextSample) {
      series.push(memSample(stored, (performance.now() - t0) / 1000));
      nextSample += p.rssEveryBytes;
    }
  };

  let turn: Promise<void> | null = null;
  const nextTurn = (): Promise<void> =>
    (turn ??= new Promise<void>((r) =>
      setImmediate(() => {
        turn = null;
        r();
      }),
    ));
  const worker = async () => {
    let sinceYield = 0;
    while (next < p.messages) {
      if ((batchNo & 63) === 0) {
        const now = performance.now();
        if (now > deadline) {
          cut = true;
          return;
        }
        if (now - lastProgress > 5000) {
          lastProgress = now;
          log(`${records.toLocaleString("en-US")} stored, ${round(stored / MiB, 0)} MiB, ${Math.round(records / ((now - t0) / 1000))} msgs/s`);
        }
      }
      const i = next;
      const count = Math.min(p.batch, p.messages - i);
      next += count;
      // Single puts spread over the queues (i % 8); a batch goes to one queue, as RocketMQ's MessageBatch does.
      const b = batchNo++;
      let res: PutMessageResult;
      if (p.batch === 1) {
        const r = req(i, i % QUEUES);
        const s = performance.now();
        res = await store.putMessage(r);
        h.record(performance.now() - s);
      } else {
        const reqs: PutMessageRequest[] = new Array(count);
        for (let k = 0; k < count; k++) reqs[k] = req(i + k, b % QUEUES);
        const s = performance.now();
        res = await store.putMessages(reqs);
        h.record(performance.now() - s);
      }
      onDone(res, count);
      // Return to the event loop now and then, as a broker does between socket reads: without
      // it an ASYNC_FLUSH put never leaves the microtask queue and the store's timers (flush,
      // checkpoint, cold-mapping release) would never run during the workload. The workers wait
      // for one shared turn, so every in-flight put of a turn runs together, as the requests of
      // one socket read do in the broker (they then share the CommitLog's per-turn commit).
      if (p.yieldEvery > 0 && ++sinceYield % p.yieldEvery === 0) await nextTurn();
    }
  };
  await Promise.all(Array.from({ length: p.inflight }, worker));
  const t1 = performance.now();
  const cpu1 = cpuMark();
  const final = memSample(stored, (t1 - t0) / 1000);

  let afterIdle: MemSample | null = null;
  if (p.idleAfterMs > 0) {
    log(`idle ${p.idleAfterMs} ms (does RSS drop once segments go cold?)`);
    await Bun.sleep(p.idleAfterMs);
    afterIdle = memSample(stored, (performance.now() - t0) / 1000);
  }
  const tShut = performance.now();
  await store.shutdown();
  const shutdownMs = performance.now() - tShut;
  const d1 = diskCounters(dir);
  const io1 = procIo();
  Bun.gc(true);
  const heapAfterGc = process.memoryUsage().heapUsed;
  if (!p.keepStore) rmSync(dir, { recursive: true, force: true });

  const secs = (t1 - t0) / 1000;
  const durable = secs + shutdownMs / 1000;
  return {
    kind: "append",
    params: p,
    messages: records,
    cut_by_time_limit: cut,
    failures,
    first_failure: firstFailure,
    stored_bytes: stored,
    record_bytes: records ? Math.round(stored / records) : 0,
    elapsed_s: round(secs, 3),
    msgs_per_s: Math.round(records / secs),
    mib_per_s: round(stored / MiB / secs, 1),
    durable_s: round(durable, 3),
    mib_per_s_durable: round(stored / MiB / durable, 1),
    latency: h.summary(),
    cpu: cpuDelta(cpu0, cpu1, secs),
    fdatasyncs: flushes,
    disk: diskDelta(d0, d1),
    proc_io: procIoDelta(io0, io1),
    open_ms: round(openMs, 1),
    shutdown_ms: round(shutdownMs, 1),
    rss_series: series,
    rss_final: final,
    rss_after_idle: afterIdle,
    heap_used_after_gc_mib: round(heapAfterGc / MiB, 1),
  };
}

// ---------------------------------------------------------------- read

/** Drops the page cache of every file under `dir` (GNU dd's nocache: POSIX_FADV_DONTNEED). */
function evictPageCache(dir: string): number {
  let n = 0;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.isFile()) {
        const r = Bun.spawnSync(["dd", `if=${path}`, "iflag=nocache", "count=0", "status=none"]);
        if (r.exitCode === 0) n++;
      }
    }
  };
  walk(dir);
  return n;
}

async function read(dir: string, p: { expected: number; cold: boolean }): Promise<ReadResult> {
  const evicted = p.cold ? evictPageCache(dir) : 0;
  const d0 = diskCounters(dir);
  const tOpen = performance.now();
  const store = MessageStore.open(benchStoreOptions(dir, "ASYNC_FLUSH"));
  const openMs = performance.now() - tOpen;
  const dOpen = diskCounters(dir);
  const afterOpen = memSample(0, 0);
  const h = new Histogram();
  const statuses: Record<string, number> = {};
  let messages = 0;
  let bytes = 0;
  let calls = 0;
  let mismatches = 0;
  let views = true;
  const cpu0 = cpuMark();
  const t0 = performance.now();
  for (let q = 0; q < QUEUES; q++) {
    let offset = store.getMinOffsetInQueue(TOPIC, q);
    for (;;) {
      const s = performance.now();
      const r = store.getMessage(TOPIC, q, offset, 32);
      h.record(performance.now() - s);
      calls++;
      if (r.status !== "FOUND") {
        if (r.status !== "OFFSET_OVERFLOW_ONE") statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        if (r.nextBeginOffset <= offset) break;
        offset = r.nextBeginOffset;
        continue;
      }
      for (const m of r.messages) {
        // Touch each record's TOTALSIZE (so the pages really are read) and check it.
        const total = ((m[0]! << 24) | (m[1]! << 16) | (m[2]! << 8) | m[3]!) >>> 0;
        if (total !== m.length) mismatches++;
        if (m.byteLength === m.buffer.byteLength) views = false;
      }
      messages += r.messages.length;
      bytes += r.bufferTotalBytes;
      offset = r.nextBeginOffset;
    }
  }
  const t1 = performance.now();
  const cpu1 = cpuMark();
  const dDrain = diskCounters(dir);
  const final = memSample(bytes, (t1 - t0) / 1000);
  await store.shutdown();
  const secs = (t1 - t0) / 1000;
  return {
    kind: "read",
    cold: p.cold,
    evicted_files: evicted,
    messages,
    expected: p.expected,
    bytes,
    calls,
    elapsed_s: round(secs, 3),
    msgs_per_s: Math.round(messages / secs),
    mib_per_s: round(bytes / MiB / secs, 1),
    latency: h.summary(),
    cpu: cpuDelta(cpu0, cpu1, secs),
    header_mismatches: mismatches,
    unexpected_statuses: statuses,
    views_not_copies: views,
    disk_open: diskDelta(d0, dOpen),
    disk: diskDelta(dOpen, dDrain),
    open_ms: round(openMs, 1),
    rss_after_open: afterOpen,
    rss_final: final,
  };
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const [name, dir, json] = process.argv.slice(2);
  if (!name || !dir) throw new Error("usage: bun bench/store/workload.ts <raw-write|raw-fdatasync|append|read> <dir> '<json params>'");
  const params = JSON.parse(json ?? "{}") as Record<string, unknown>;
  let result: WorkloadResult;
  switch (name) {
    case "raw-write":
      result = rawWrite(dir, params as { bytes: number });
      break;
    case "raw-fdatasync":
      result = rawFdatasync(dir, params as { seconds: number });
      break;
    case "append":
      result = await append(dir, params as unknown as AppendParams);
      break;
    case "read":
      if (!existsSync(dir)) throw new Error(`no store at ${dir}`);
      result = await read(dir, params as { expected: number; cold: boolean });
      break;
    default:
      throw new Error(`unknown workload ${name}`);
  }
  process.stdout.write(`${RESULT_MARK}${JSON.stringify(result)}\n`);
}

if (import.meta.main) await main();
