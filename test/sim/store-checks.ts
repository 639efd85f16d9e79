/**
 * Checks of one store's files shared by the simulations (./world.ts, ./failover-world.ts): the
 * CommitLog as bytes, and invariants I3 (every byte up to the end is a whole record or a BLANK
 * marker, damage recovery reported aside) and I4 (ConsumeQueues agree with the CommitLog; a unit
 * with no record is never served). A broken invariant goes to `fail`, which throws.
 */
import type { MessageStore } from "../../src/commitlog/index.ts";
import { decodeRecordAt } from "../../src/common/message-record.ts";

export type Fail = (what: string) => never;

/** The CommitLog as one byte array from offset 0 (no retention runs in the simulation). */
export function logBytes(store: MessageStore): Uint8Array {
  const cl = store.commitLog;
  const out = new Uint8Array(cl.maxOffset);
  for (const seg of cl.segments) out.set(seg.buf.subarray(0, Math.min(seg.wrotePosition, out.length - seg.fileFromOffset)), seg.fileFromOffset);
  return out;
}

export function equalRange(a: Uint8Array, b: Uint8Array, from: number, to: number, skip: readonly { from: number; to: number }[] = []): number {
  for (let i = from; i < to; i++) {
    if (a[i] === b[i]) continue;
    const r = skip.find((x) => i >= x.from && i < x.to);
    if (r) {
      i = r.to - 1;
      continue;
    }
    return i;
  }
  return -1;
}

/**
 * The padding behind each BLANK marker: [marker + 8, segment end). Nothing reads it (a reader
 * moves to the next segment at the marker), and its content is not specified: the zeroing of an
 * earlier torn tail there is not flushed, and a later power cut may bring the garbage back (seed 5).
 */
export function paddingRanges(store: MessageStore): { from: number; to: number }[] {
  const out: { from: number; to: number }[] = [];
  for (const seg of store.commitLog.segments) {
    const buf = seg.buf.subarray(0, seg.wrotePosition);
    let pos = 0;
    while (pos < buf.length) {
      const r = decodeRecordAt(buf, pos, { checkCrc: false, readBody: false });
      if ("blank" in r) {
        out.push({ from: seg.fileFromOffset + pos + 8, to: seg.fileFromOffset + seg.fileSize });
        break;
      }
      if (!("totalSize" in r)) break;
      pos += r.totalSize;
    }
  }
  return out;
}

/** I3: whole records (CRC, offset) or BLANK markers up to the end; returns queue offset → phy per queue. */
export function checkRecords(store: MessageStore, who: string, fail: Fail): Map<string, Map<number, number>> {
  const queues = new Map<string, Map<number, number>>();
  for (const seg of store.commitLog.segments) {
    const buf = seg.buf.subarray(0, seg.wrotePosition);
    let pos = 0;
    while (pos < buf.length) {
      // Damage recovery reported is skipped (never served); everything else must be whole.
      // A range can start in an earlier segment and cover this one's start (or all of it).
      const here = seg.fileFromOffset + pos;
      const damaged = store.corruptRanges.find((x) => x.from <= here && here < x.to);
      if (damaged) {
        if (damaged.to >= seg.fileFromOffset + seg.fileSize) break;
        pos = damaged.to - seg.fileFromOffset;
        continue;
      }
      const r = decodeRecordAt(buf, pos, { checkCrc: true, readBody: false });
      if ("blank" in r) {
        if (pos + r.blank !== seg.fileSize) fail(`${who}: BLANK marker at ${seg.fileFromOffset + pos} does not reach the segment end`);
        break;
      }
      if (!("totalSize" in r)) return fail(`${who}: bytes at ${seg.fileFromOffset + pos} are not a record: ${JSON.stringify(r)}`);
      if (r.physicalOffset !== seg.fileFromOffset + pos) fail(`${who}: record at ${seg.fileFromOffset + pos} claims ${r.physicalOffset}`);
      const key = `${r.topic}-${r.queueId}`;
      let q = queues.get(key);
      if (!q) queues.set(key, (q = new Map()));
      if (q.has(r.queueOffset)) fail(`${who}: two records with queue offset ${r.queueOffset} in ${key}`);
      q.set(r.queueOffset, r.physicalOffset);
      pos += r.totalSize;
    }
  }
  return queues;
}

/** I4: each queue has a unit per record, pointing at it; other units point only into reported damage. */
export function checkStoreQueues(store: MessageStore, who: string, fail: Fail): void {
  const queues = checkRecords(store, who, fail);
  const damaged = (phy: number) => store.corruptRanges.some((x) => phy >= x.from && phy < x.to);
  const keys = new Set(queues.keys());
  for (const [topic, ids] of store.queues()) for (const qid of ids) keys.add(`${topic}-${qid}`);
  for (const key of keys) {
    const dash = key.lastIndexOf("-");
    const topic = key.slice(0, dash);
    const qid = Number(key.slice(dash + 1));
    const records = queues.get(key) ?? new Map<number, number>();
    const max = store.getMaxOffsetInQueue(topic, qid);
    const min = store.getMinOffsetInQueue(topic, qid);
    const last = Math.max(-1, ...records.keys());
    // Units past the last record are allowed only as fillers or units into damage (the loop
    // below checks each): a queue keeps the offsets of records it lost to damage.
    if (max < last + 1) fail(`${who}: queue ${key} max offset ${max}, but its last record in the CommitLog has queue offset ${last}`);
    for (let i = 0; i < max; i++) {
      // Below the min offset (leading fillers skipped by correctMinOffset): nothing may be hidden there.
      if (i < min) {
        const hidden = records.get(i);
        if (hidden !== undefined && !damaged(hidden))
          fail(`${who}: queue ${key} min offset ${min} hides the record at ${hidden} (queue offset ${i})`);
        continue;
      }
      const phy = store.getCommitLogOffsetInQueue(topic, qid, i);
      const want = records.get(i);
      if (want !== undefined) {
        if (phy !== want) fail(`${who}: queue ${key} unit ${i} points at ${phy}, the record with that queue offset is at ${want}`);
        continue;
      }
      // No record: a filler unit (offset 0, padding over records lost to damage), a unit into
      // damage, or a unit torn by the crash that pointed at a record lost to damage (it is not
      // rewritten, and not dropped when a later unit is good): the pull path must not serve it.
      if (phy === 0 || damaged(phy)) continue;
      const served = store.getMessage(topic, qid, i, 1).messages[0];
      const r = served && decodeRecordAt(served, 0, { checkCrc: false });
      if (r && "totalSize" in r && r.queueOffset === i)
        fail(`${who}: queue ${key} unit ${i} points at ${phy}, where no record of queue offset ${i} is, and the pull path serves it`);
    }
  }
  if (store.dispatchedOffset !== store.maxPhyOffset && !store.commitLog.segments.at(-1)?.isFull)
    fail(`${who}: dispatched ${store.dispatchedOffset} != end ${store.maxPhyOffset}`);
}
