/**
 * Crash test of the message store (docs/CONVENTIONS.md §5 and §8: real processes): a child
 * process (./store-crash-writer.ts) storms the store with single puts and small batches over
 * 3 topics × 4 queues, 16 puts in flight, on 256 KiB segments and 64-unit ConsumeQueue files,
 * and is SIGKILLed at a random moment, many times over. After each kill this process opens the
 * store (abnormal recovery: the child left `abort` behind) and proves:
 *
 *   1. acknowledged = durable: every seq the child reported `ack` for (all rounds so far) is
 *      readable exactly once through the ConsumeQueues, with its exact body;
 *   2. nothing half-visible: every record in the CommitLog and every record a pull returns
 *      decodes with a valid CRC and carries the body its SEQ dictates; bytes after the log's end
 *      are zero; recovery reports no corrupt range (SIGKILL cannot damage the middle of the log,
 *      only leave a torn tail);
 *   3. ConsumeQueue and CommitLog agree: a pull returns, for queue offset n, the record the unit
 *      points at, of the unit's size, with the queue's topic and queueId and QUEUEOFFSET n;
 *      offsets are dense (no filler units, no holes); every CommitLog record has its unit; the
 *      next queue offset the CommitLog will assign is the ConsumeQueue's max offset;
 *   4. no SEQ is stored twice.
 * The store is then shut down cleanly; on alternate rounds `abort` is put back, so the next
 * child also runs abnormal recovery over a cleanly checkpointed store (the child's own recovery
 * report must then find nothing to repair). Both flush modes: with SIGKILL (not a power cut) the
 * page cache survives, so an ASYNC_FLUSH ack is as durable as a SYNC_FLUSH one.
 *
 * The seed decides the kill delays: it is printed; `SEED=<n>` replays the same delays.
 * CRASH_ROUNDS=<n> runs more rounds.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FlushDiskType } from "../../src/protocol/broker-config.ts";
import { decodeRecordAt, parseProperties, type DecodedRecord } from "../../src/common/message-record.ts";
import { MessageStore, type RecoveryReport } from "../../src/commitlog/message-store.ts";
import { tempStoreDir } from "../../src/commitlog/test-support.ts";
import { fuzzSeed, prng, type Rng } from "../harness/fuzz.ts";
import { CRASH_QUEUES, CRASH_TOPICS, crashBody, crashBodyLength, crashStoreOptions, SEQ_PROPERTY } from "./store-crash-writer.ts";

const WRITER = join(import.meta.dir, "store-crash-writer.ts");
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 16);
const STORM_MS_MIN = 30;
const STORM_MS_MAX = 250;
const READY_TIMEOUT_MS = 15_000;
const EXIT_TIMEOUT_MS = 10_000;
const PULL_BATCH = 32;
/**
 * Known bug workaround, off by default: a SIGKILL between creating a segment or ConsumeQueue file
 * and sizing it leaves a 0-byte file that the store cannot get past (see
 * store-crash-findings.test.ts). CRASH_REMOVE_UNSIZED=1 deletes such files before each restart so
 * the other properties can still be checked while that bug is open.
 */
const REMOVE_UNSIZED = process.env.CRASH_REMOVE_UNSIZED === "1";
const SEED = fuzzSeed();
process.stderr.write(`store-crash: SEED=${SEED}\n`);

interface Child {
  proc: ReturnType<typeof Bun.spawn>;
  ready: () => RecoveryReport | null;
  acks: () => number[];
  /** Resolve when stdout / stderr hit EOF. */
  stdoutDone: Promise<void>;
  stderrDone: Promise<void>;
  stderr: () => string;
  unexpected: () => string[];
}

function spawnWriter(dir: string, mode: FlushDiskType, startSeq: number): Child {
  const proc = Bun.spawn([process.execPath, WRITER, dir, mode, String(startSeq)], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let ready: RecoveryReport | null = null;
  const acks: number[] = [];
  const unexpected: string[] = [];
  let err = "";
  const stdoutDone = (async () => {
    const decoder = new TextDecoder();
    let carry = "";
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      carry += decoder.decode(chunk, { stream: true });
      const lines = carry.split("\n");
      // Only complete lines count: a SIGKILL can cut the last one short.
      carry = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith("ack ")) acks.push(Number(line.slice(4)));
        else if (line.startsWith("ready ")) ready = JSON.parse(line.slice(6)) as RecoveryReport;
        // After a crash the index's catch-up says when it starts and ends (src/commitlog/index-catch-up.ts).
        else if (/ INFO +\[store\] index: /.test(line)) continue;
        else unexpected.push(line);
      }
    }
  })();
  const stderrDone = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) err += decoder.decode(chunk, { stream: true });
  })();
  return { proc, ready: () => ready, acks: () => acks, stdoutDone, stderrDone, stderr: () => err, unexpected: () => unexpected };
}

function exited(proc: Child["proc"]): boolean {
  return proc.exitCode !== null || proc.signalCode !== null;
}

async function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Exit status and everything the writer printed to stderr (waits briefly for the pipe to drain). */
async function exitDetail(c: Child): Promise<string> {
  await withDeadline(c.stderrDone, EXIT_TIMEOUT_MS, "writer stderr EOF").catch(() => undefined);
  return ` (exit ${c.proc.exitCode ?? c.proc.signalCode}):\n${c.stderr()}`;
}

/** Polls for the ready line; fails at once if the writer exits, and after READY_TIMEOUT_MS. */
async function waitForReady(c: Child, round: number): Promise<RecoveryReport> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const ready = c.ready();
    if (ready) return ready;
    if (exited(c.proc)) throw new Error(`round ${round}: [writer start] writer exited before ready${await exitDetail(c)}`);
    if (Date.now() > deadline) throw new Error(`round ${round}: [writer start] no ready line after ${READY_TIMEOUT_MS} ms:\n${c.stderr()}`);
    await Bun.sleep(5);
  }
}

interface ClRecord {
  seq: number;
  topic: string;
  queueId: number;
  queueOffset: number;
  size: number;
}

interface Verified {
  /** Every SEQ found in the CommitLog. */
  seqs: Set<number>;
  maxSeq: number;
  records: number;
  bytes: number;
  /** Bytes of torn tail recovery cut (0: none). */
  tornBytes: number;
}

/** Throws (with the round, the check and the seq/offset) at the first thing that is wrong. */
function verifyStore(store: MessageStore, acked: ReadonlySet<number>, round: number): Verified {
  const fail = (check: string, detail: string): never => {
    throw new Error(`round ${round}: [${check}] ${detail}`);
  };
  const rep = store.recovery;
  if (!rep) return fail("recovery", "no recovery report");
  if (!rep.abnormal) fail("recovery", "recovery was not abnormal although the writer was SIGKILLed (abort file missing)");
  if (rep.corruptRanges.length > 0) fail("no middle damage", `recovery found corrupt ranges: ${JSON.stringify(rep.corruptRanges)}`);
  // Allowed: the torn tail, and index files (17-digit names) dropped as newer than the index
  // checkpoint or torn (derived data). Anything about a CommitLog segment or a ConsumeQueue is not.
  const otherProblems = rep.problems.filter(
    (p) => !/^commitlog: torn tail of \d+ bytes at \d+ truncated$/.test(p) && !/^\d{17}: .*; deleted$/.test(p),
  );
  if (otherProblems.length > 0) fail("recovery problems", otherProblems.join("; "));

  // --- The CommitLog, record by record: CRC, place, SEQ → body, uniqueness.
  const byPhy = new Map<number, ClRecord>();
  const phyOfSeq = new Map<number, number>();
  const perQueue = new Map<string, number>();
  let bytes = 0;
  let maxSeq = -1;
  const scratch = new Uint8Array(3000);
  const bodyOk = (seq: number, body: Uint8Array): boolean => {
    const len = crashBodyLength(seq);
    if (body.length !== len) return false;
    return Buffer.from(body.buffer, body.byteOffset, len).equals(crashBody(seq, scratch.subarray(0, len)));
  };
  const seqOf = (rec: DecodedRecord, where: string): number => {
    const s = parseProperties(rec.properties)[SEQ_PROPERTY];
    if (s === undefined || !/^\d+$/.test(s))
      return fail("nothing half-visible", `${where}: record (CRC valid) has no numeric SEQ (properties ${JSON.stringify(rec.properties)})`);
    return Number(s);
  };
  const segments = store.commitLog.segments;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    const last = i === segments.length - 1;
    const buf = seg.buf;
    if (!last && seg.wrotePosition !== seg.fileSize)
      fail("commitlog", `segment ${seg.fileFromOffset} is not the last but ends at ${seg.wrotePosition}`);
    let pos = 0;
    while (pos < seg.wrotePosition) {
      const phy = seg.fileFromOffset + pos;
      const r = decodeRecordAt(buf.subarray(0, seg.wrotePosition), pos, { checkCrc: true });
      if ("blank" in r) {
        if (pos + r.blank !== seg.fileSize) fail("commitlog", `BLANK marker at ${phy} does not reach the segment end`);
        break;
      }
      if (!("totalSize" in r))
        return fail(
          "nothing half-visible",
          `commitlog offset ${phy} below the log end ${store.maxPhyOffset}: ${"invalid" in r ? r.invalid : "zero bytes"}`,
        );
      if (r.physicalOffset !== phy) fail("commitlog", `record at ${phy} says PHYSICALOFFSET ${r.physicalOffset}`);
      const seq = seqOf(r, `commitlog offset ${phy}`);
      if (!bodyOk(seq, r.body))
        fail("nothing half-visible", `SEQ ${seq} at commitlog offset ${phy}: body (${r.body.length} bytes) is not the body of SEQ ${seq}`);
      const dup = phyOfSeq.get(seq);
      if (dup !== undefined) fail("no duplicate SEQ", `SEQ ${seq} stored twice, at commitlog offsets ${dup} and ${phy}`);
      if (!(CRASH_TOPICS as readonly string[]).includes(r.topic) || r.queueId < 0 || r.queueId >= CRASH_QUEUES) {
        fail("nothing half-visible", `SEQ ${seq} at ${phy}: unexpected topic/queue ${r.topic}/${r.queueId}`);
      }
      phyOfSeq.set(seq, phy);
      byPhy.set(phy, { seq, topic: r.topic, queueId: r.queueId, queueOffset: r.queueOffset, size: r.totalSize });
      const q = `${r.topic}/${r.queueId}`;
      perQueue.set(q, (perQueue.get(q) ?? 0) + 1);
      bytes += r.totalSize;
      if (seq > maxSeq) maxSeq = seq;
      pos += r.totalSize;
    }
    if (last) {
      // Recovery zeroes a torn tail: no leftover of an unacknowledged write past the end.
      const tail = buf.subarray(seg.wrotePosition);
      const nz = tail.findIndex((b) => b !== 0);
      if (nz >= 0) fail("nothing half-visible", `non-zero byte at commitlog offset ${seg.fileFromOffset + seg.wrotePosition + nz}, past the log end`);
    }
  }

  // --- Every ConsumeQueue, pulled from min to max: dense offsets, unit ⇄ record agreement.
  const seenSeq = new Map<number, number>();
  const indexedPhy = new Set<number>();
  const queues = store.queues();
  for (const [topic, ids] of queues) {
    for (const queueId of ids) {
      const min = store.getMinOffsetInQueue(topic, queueId);
      const max = store.getMaxOffsetInQueue(topic, queueId);
      const q = `${topic}/${queueId}`;
      if (min !== 0) fail("consumequeue", `${q}: min offset ${min}, expected 0 (nothing was deleted)`);
      if (max !== (perQueue.get(q) ?? 0)) fail("consumequeue ⇄ commitlog", `${q}: ${max} units but ${perQueue.get(q) ?? 0} CommitLog records`);
      const next = store.commitLog.nextQueueOffset(topic, queueId);
      if (next !== max)
        fail("consumequeue ⇄ commitlog", `${q}: the CommitLog would assign queue offset ${next} next, the ConsumeQueue ends at ${max}`);
      let offset = min;
      while (offset < max) {
        const res = store.getMessage(topic, queueId, offset, PULL_BATCH);
        if (res.status !== "FOUND") fail("consumequeue", `${q} offset ${offset}: pull status ${res.status}`);
        if (res.nextBeginOffset !== offset + res.messages.length) {
          fail(
            "dense offsets",
            `${q} offset ${offset}: ${res.messages.length} messages but next offset ${res.nextBeginOffset} (filler or skipped units)`,
          );
        }
        for (const bytesOf of res.messages) {
          const where = `${q} offset ${offset}`;
          const phy = store.getCommitLogOffsetInQueue(topic, queueId, offset);
          const r = decodeRecordAt(bytesOf, 0, { checkCrc: true });
          if (!("totalSize" in r)) return fail("pulled record is whole", `${where} (commitlog ${phy}): ${"invalid" in r ? r.invalid : "zero bytes"}`);
          if (r.totalSize !== bytesOf.length)
            fail("consumequeue ⇄ commitlog", `${where}: unit size ${bytesOf.length}, record at ${phy} is ${r.totalSize} bytes`);
          if (r.physicalOffset !== phy)
            fail("consumequeue ⇄ commitlog", `${where}: unit points at ${phy}, record says PHYSICALOFFSET ${r.physicalOffset}`);
          if (r.topic !== topic || r.queueId !== queueId)
            fail("consumequeue ⇄ commitlog", `${where}: record at ${phy} belongs to ${r.topic}/${r.queueId}`);
          if (r.queueOffset !== offset) fail("consumequeue ⇄ commitlog", `${where}: record at ${phy} has QUEUEOFFSET ${r.queueOffset}`);
          const seq = seqOf(r, where);
          const cl = byPhy.get(phy);
          if (!cl || cl.seq !== seq)
            fail("consumequeue ⇄ commitlog", `${where}: unit points at ${phy}, which is not a record boundary of the CommitLog walk`);
          if (!bodyOk(seq, r.body)) fail("nothing half-visible", `${where}: SEQ ${seq} has a wrong body`);
          seenSeq.set(seq, (seenSeq.get(seq) ?? 0) + 1);
          indexedPhy.add(phy);
          offset++;
        }
      }
    }
  }
  for (const [phy, r] of byPhy) {
    if (!indexedPhy.has(phy))
      fail(
        "consumequeue ⇄ commitlog",
        `SEQ ${r.seq} at commitlog offset ${phy} (${r.topic}/${r.queueId} queue offset ${r.queueOffset}) has no ConsumeQueue unit`,
      );
  }
  for (const [seq, n] of seenSeq) if (n !== 1) fail("no duplicate SEQ", `SEQ ${seq} pulled ${n} times`);

  // --- Acknowledged = durable.
  for (const seq of acked) {
    const n = seenSeq.get(seq) ?? 0;
    if (n !== 1) fail("acked is readable", `acknowledged SEQ ${seq} found ${n} times (CommitLog offset ${phyOfSeq.get(seq) ?? "none"})`);
  }
  return { seqs: new Set(phyOfSeq.keys()), maxSeq, records: byPhy.size, bytes, tornBytes: rep.truncatedBytes };
}

async function crashRounds(mode: FlushDiskType, rng: Rng): Promise<void> {
  const dir = tempStoreDir("store-crash-");
  const acked = new Set<number>();
  let child: Child | null = null;
  const started = performance.now();
  let torn = 0;
  let lastBytes = 0;
  let lastRecords = 0;
  let stored = new Set<number>();
  let roundsWithAcks = 0;
  let nextSeq = 0;
  let abortPutBack = false;
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const c = spawnWriter(dir, mode, nextSeq);
      child = c;
      const childRecovery = await waitForReady(c, round);
      // The previous round ended with a clean shutdown: the child must find nothing to repair.
      if (round > 1) {
        expect({ round, abnormal: childRecovery.abnormal, truncated: childRecovery.truncatedBytes, corrupt: childRecovery.corruptRanges }).toEqual({
          round,
          abnormal: abortPutBack,
          truncated: 0,
          corrupt: [],
        });
      }
      const stormMs = rng.int(STORM_MS_MIN, STORM_MS_MAX);
      await Bun.sleep(stormMs);
      if (exited(c.proc)) throw new Error(`round ${round}: [storm] writer exited before the SIGKILL${await exitDetail(c)}`);
      c.proc.kill("SIGKILL");
      await withDeadline(c.proc.exited, EXIT_TIMEOUT_MS, `round ${round}: writer exit after SIGKILL`);
      await withDeadline(c.stdoutDone, EXIT_TIMEOUT_MS, `round ${round}: writer stdout EOF`);
      child = null;
      expect(c.proc.signalCode as string | null).toBe("SIGKILL");
      expect(c.unexpected()).toEqual([]);
      const ackedNow = c.acks();
      for (const s of ackedNow) acked.add(s);
      if (ackedNow.length > 0) roundsWithAcks++;

      if (REMOVE_UNSIZED) removeUnsizedFiles(dir, round);
      let store: MessageStore;
      try {
        store = MessageStore.open(crashStoreOptions(dir, mode));
      } catch (e) {
        throw new Error(
          `round ${round}: [recovery] MessageStore.open threw after the SIGKILL: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
        );
      }
      let v: Verified;
      try {
        v = verifyStore(store, acked, round);
      } finally {
        await store.shutdown();
      }
      if (v.tornBytes > 0) torn++;
      // What an earlier recovery found (and a clean shutdown kept) is never lost later.
      for (const s of stored)
        if (!v.seqs.has(s)) throw new Error(`round ${round}: [recovered stays] SEQ ${s}, stored after round ${round - 1}, is gone`);
      stored = v.seqs;
      lastRecords = v.records;
      lastBytes = v.bytes;
      for (const s of ackedNow) if (s >= nextSeq) nextSeq = s + 1;
      if (v.maxSeq >= nextSeq) nextSeq = v.maxSeq + 1;
      // Alternate: put `abort` back after the clean shutdown, so the next child recovers abnormally
      // over a clean store with a fresh checkpoint.
      abortPutBack = round % 2 === 0;
      if (abortPutBack) writeFileSync(join(dir, "abort"), "x");
      process.stderr.write(
        `store-crash ${mode} round ${round}: storm ${stormMs} ms, acked +${ackedNow.length} (${acked.size}), stored ${v.records} records, ` +
          `${v.bytes} bytes, torn tail ${v.tornBytes} bytes\n`,
      );
    }
    // The storm really wrote: acknowledgements grew over the rounds.
    expect(roundsWithAcks).toBeGreaterThanOrEqual(Math.ceil(ROUNDS / 2));
    expect(acked.size).toBeGreaterThan(ROUNDS);
    process.stderr.write(
      `store-crash ${mode}: ${ROUNDS} rounds, ${acked.size} acked messages, ${lastRecords} stored records, ${lastBytes} bytes, ` +
        `${torn} torn tails, ${Math.round(performance.now() - started)} ms (SEED=${SEED})\n`,
    );
  } finally {
    if (child && !exited(child.proc)) {
      child.proc.kill("SIGKILL");
      await withDeadline(child.proc.exited, EXIT_TIMEOUT_MS, "writer exit in cleanup").catch(() => undefined);
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

function removeUnsizedFiles(dir: string, round: number): void {
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/^\d{20}$/.test(e.name) && statSync(p).size === 0) {
        process.stderr.write(`store-crash round ${round}: removing unsized file ${p} (CRASH_REMOVE_UNSIZED)\n`);
        unlinkSync(p);
      }
    }
  };
  walk(dir);
}

describe("store crash: SIGKILL during a write storm, restart, verify", () => {
  const modes: FlushDiskType[] = ["ASYNC_FLUSH", "SYNC_FLUSH"];
  modes.forEach((mode, i) => {
    test(`${mode}: acknowledged appends survive intact, nothing torn is visible, ConsumeQueue and CommitLog agree`, async () => {
      await crashRounds(mode, prng((SEED + i * 0x9e3779b9) >>> 0));
    });
  });
});
