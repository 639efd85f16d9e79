/**
 * `config/consumerOffset.json` and `config/delayOffset.json` (docs/PROTOCOL.md §3.15, docs/STORAGE.md §5, §6).
 *
 *   consumerOffset.json  {"offsetTable":{"<topic>@<group>":{"<queueId>":<offset>,...},...}}
 *   delayOffset.json     {"offsetTable":{"<delayLevel>":<offset>,...}}
 *
 * Java writes the numeric keys unquoted (`{0:12}`); we read that form and write standard JSON with
 * quoted keys, which fastjson reads back. These tables change on every consumer commit, so they are
 * written by the broker's timer (`persistIfDirty`: every 5 s and at shutdown), not per change.
 *
 * Invariants: a key splits on "@" into exactly a non-empty topic and group; queue ids are 0..2^31-1;
 * offsets are safe integers (Java longs beyond 2^53 are rejected on load, never rounded); `dirty` is
 * set exactly when memory differs from the last successful write.
 */
import { type Decoded, type MetadataOptions, isJsonObject, show } from "./metadata-file.ts";
import { INT32_MAX } from "../common/int32.ts";
import { OffsetTableManager } from "./metadata-table.ts";
import { assert } from "../common/assert.ts";
import { type Invalid, isInvalid } from "../common/invalid.ts";

export interface ConsumerOffsetBody {
  offsetTable: Record<string, Record<string, number>>;
}

export interface DelayOffsetBody {
  offsetTable: Record<string, number>;
}

const UINT_KEY = /^\d{1,10}$/;

function intKey(key: string, min: number): number | null {
  if (!UINT_KEY.test(key)) return null;
  const n = Number(key);
  return n >= min && n <= INT32_MAX ? n : null;
}

function isOffset(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v);
}

type OffsetTable = Map<string, Map<number, number>>;

function sameOffsets(a: Map<number, number> | undefined, b: Map<number, number>): boolean {
  return a !== undefined && a.size === b.size && [...b].every(([k, v]) => a.get(k) === v);
}

function splitKey(key: string): [topic: string, group: string] | null {
  const parts = key.split("@");
  if (parts.length !== 2) return null;
  const [topic, group] = parts;
  return topic && group ? [topic, group] : null;
}

function decodeConsumerOffsets(raw: unknown): Decoded<OffsetTable> | Invalid {
  if (!isJsonObject(raw)) return { invalid: "expected a JSON object at the top level" };
  const table = raw.offsetTable ?? {};
  if (!isJsonObject(table)) return { invalid: `offsetTable: expected an object, got ${show(table)}` };
  const problems: string[] = [];
  const out: OffsetTable = new Map();
  for (const [key, queues] of Object.entries(table)) {
    if (splitKey(key) === null) {
      problems.push(`offsetTable.${key}: key is not <topic>@<group>; entry skipped`);
      continue;
    }
    if (!isJsonObject(queues)) {
      problems.push(`offsetTable.${key}: expected an object of queueId → offset, got ${show(queues)}; entry skipped`);
      continue;
    }
    const m = new Map<number, number>();
    for (const [q, off] of Object.entries(queues)) {
      const queueId = intKey(q, 0);
      if (queueId === null) problems.push(`offsetTable.${key}.${q}: queue id is not an integer 0..${INT32_MAX}; entry skipped`);
      else if (!isOffset(off)) problems.push(`offsetTable.${key}.${q}: expected an integer offset, got ${show(off)}; entry skipped`);
      else m.set(queueId, off);
    }
    out.set(key, m);
  }
  return { value: out, problems };
}

export class ConsumerOffsetManager extends OffsetTableManager<string, Map<number, number>> {
  constructor(opts: MetadataOptions) {
    super(opts, "consumerOffset.json", "consumer offset body", decodeConsumerOffsets);
  }

  /**
   * Stores `offset` as given (including -1, as Java does). Returns a reason when the arguments
   * cannot be stored faithfully — a name containing "@" would not split back on reload.
   */
  commit(group: string, topic: string, queueId: number, offset: number): string | null {
    if (topic === "" || topic.includes("@")) return `topic ${show(topic)} is empty or contains "@"`;
    if (group === "" || group.includes("@")) return `group ${show(group)} is empty or contains "@"`;
    if (!Number.isInteger(queueId) || queueId < 0 || queueId > INT32_MAX) return `queueId ${queueId} is not an integer 0..${INT32_MAX}`;
    if (!isOffset(offset)) return `offset ${offset} is not a safe integer`;
    const key = `${topic}@${group}`;
    let m = this.offsets.get(key);
    if (m === undefined) {
      m = new Map();
      this.offsets.set(key, m);
    }
    // Consumers re-commit unchanged offsets every few seconds; only a real change needs a write.
    if (m.get(queueId) !== offset) {
      m.set(queueId, offset);
      this.markDirty();
    }
    return null;
  }

  /** The committed offset, or -1 when the group never committed one for this queue. */
  query(group: string, topic: string, queueId: number): number {
    return this.offsets.get(`${topic}@${group}`)?.get(queueId) ?? -1;
  }

  queryAll(group: string, topic: string): Map<number, number> {
    return new Map(this.offsets.get(`${topic}@${group}`) ?? []);
  }

  /** The GET_ALL_CONSUMER_OFFSET body (and the file's content). */
  table(): ConsumerOffsetBody {
    return { offsetTable: Object.fromEntries([...this.offsets].map(([k, m]) => [k, Object.fromEntries(m)])) };
  }

  /**
   * A slave adopting its master's GET_ALL_CONSUMER_OFFSET body (`replaceAll`). As Java's `putAll`,
   * each topic@group the master has replaces the local one; keys only the slave has are kept
   * (offsets consumers committed here while the master was away).
   */
  protected adopt(master: OffsetTable): void {
    for (const [k, v] of master) {
      if (sameOffsets(this.offsets.get(k), v)) continue;
      this.offsets.set(k, v);
      this.markDirty();
    }
  }

  /** Drops every topic@group entry of `group` (Java `removeOffset`). Returns how many. */
  removeGroup(group: string): number {
    return this.#removeWhere((_, g) => g === group);
  }

  /** Drops every topic@group entry of `topic` (Java `cleanOffsetByTopic`). Returns how many. */
  removeTopic(topic: string): number {
    return this.#removeWhere((t) => t === topic);
  }

  groupsOf(topic: string): string[] {
    return this.#keys()
      .filter(([t]) => t === topic)
      .map(([, g]) => g);
  }

  /** The committed offsets of `group` on `topic`, not copied (undefined: none). */
  offsetsOf(group: string, topic: string): ReadonlyMap<number, number> | undefined {
    return this.offsets.get(`${topic}@${group}`);
  }

  /** Every topic@group entry with its offsets, not copied: one pass over the table (the metrics scrape). */
  forEachEntry(visit: (topic: string, group: string, offsets: ReadonlyMap<number, number>) => void): void {
    for (const [k, m] of this.offsets) {
      const tg = splitKey(k);
      if (tg !== null) visit(tg[0], tg[1], m);
    }
  }

  topicsOf(group: string): string[] {
    return this.#keys()
      .filter(([, g]) => g === group)
      .map(([t]) => t);
  }

  #keys(): [string, string][] {
    const out: [string, string][] = [];
    for (const k of this.offsets.keys()) {
      const tg = splitKey(k);
      if (tg !== null) out.push(tg);
    }
    return out;
  }

  #removeWhere(match: (topic: string, group: string) => boolean): number {
    let n = 0;
    for (const k of [...this.offsets.keys()]) {
      const tg = splitKey(k);
      if (tg !== null && match(tg[0], tg[1])) {
        this.offsets.delete(k);
        n++;
      }
    }
    if (n > 0) this.markDirty();
    return n;
  }
}

function decodeDelayOffsets(raw: unknown): Decoded<Map<number, number>> | Invalid {
  if (!isJsonObject(raw)) return { invalid: "expected a JSON object at the top level" };
  const table = raw.offsetTable ?? {};
  if (!isJsonObject(table)) return { invalid: `offsetTable: expected an object, got ${show(table)}` };
  const problems: string[] = [];
  const out = new Map<number, number>();
  for (const [k, off] of Object.entries(table)) {
    const level = intKey(k, 1);
    if (level === null) problems.push(`offsetTable.${k}: delay level is not an integer 1..${INT32_MAX}; entry skipped`);
    else if (!isOffset(off) || off < 0) problems.push(`offsetTable.${k}: expected a non-negative integer offset, got ${show(off)}; entry skipped`);
    else out.set(level, off);
  }
  return { value: out, problems };
}

/** Per delay level, the next offset to deliver in that level's SCHEDULE_TOPIC_XXXX queue. */
export class DelayOffsetManager extends OffsetTableManager<number, number> {
  constructor(opts: MetadataOptions) {
    super(opts, "delayOffset.json", "delay offset body", decodeDelayOffsets);
  }

  /** 0 for a level never written, as Java's schedule timer starts an unknown level at 0. */
  get(level: number): number {
    return this.offsets.get(level) ?? 0;
  }

  /** Called by the schedule service only, so bad arguments are a bug there, not input. */
  set(level: number, offset: number): void {
    assert(Number.isInteger(level) && level >= 1 && level <= INT32_MAX, `delay level ${level} must be an integer >= 1`);
    assert(isOffset(offset) && offset >= 0, `delay offset ${offset} must be a non-negative safe integer`);
    if (this.offsets.get(level) === offset) return;
    this.offsets.set(level, offset);
    this.markDirty();
  }

  /** The GET_ALL_DELAY_OFFSET body (and the file's content). */
  table(): DelayOffsetBody {
    return { offsetTable: Object.fromEntries(this.offsets) };
  }

  /** A slave adopting its master's GET_ALL_DELAY_OFFSET body (`replaceAll`): the whole table is replaced, as Java overwrites the file. */
  protected adopt(master: Map<number, number>): void {
    if (sameOffsets(this.offsets, master)) return;
    this.offsets = master;
    this.markDirty();
  }
}
