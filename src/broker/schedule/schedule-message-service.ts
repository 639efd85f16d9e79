/**
 * ScheduleMessageService: delayed and timed delivery through SCHEDULE_TOPIC_XXXX (docs/STORAGE.md
 * §6, §3, docs/PROTOCOL.md §4.4). RocketMQ 4.x delay levels, plus arbitrary delivery times (ali-ons'
 * `__STARTDELIVERTIME`, 5.x's `TIMER_DELIVER_MS` / `TIMER_DELAY_SEC`), which the Apache 4.9
 * broker ignores.
 *
 * Put side (`divert`, called by SendMessageProcessor for sends and send-backs). Only NOT_TYPE and
 * COMMIT_TYPE messages are diverted; the first rule that applies wins (the timer properties in
 * RocketMQ 5.x's order, HookUtils.transformTimerMessage; `__STARTDELIVERTIME`, which 5.x ignores,
 * last):
 *
 *   property on the message                  parked in SCHEDULE_TOPIC_XXXX queue  due time (tag code)
 *   ---------------------------------------  -----------------------------------  -------------------------
 *   DELAY = n > 0 (clamped to the max level)  n − 1                                store time + delay(n)
 *   TIMER_DELAY_SEC = s (relative)            18 (timer queue)                     put time + s × 1000
 *   TIMER_DELAY_MS = m (relative)             18                                   put time + m
 *   TIMER_DELIVER_MS = t (absolute ms)        18                                   t
 *   __STARTDELIVERTIME = t (absolute ms)      18                                   t
 *
 * Only the first timer property present is looked at. A due time not in the future leaves the
 * message alone (delivered at once). As in 5.x, a TIMER_* value that is not an integer, and a due
 * time more than `timerMaxDelaySec` ahead, refuse the send (MESSAGE_ILLEGAL, `timerRefusal`);
 * an unparsable `__STARTDELIVERTIME` is ignored, as it always was.
 *
 * The parked record carries REAL_TOPIC / REAL_QID (where it goes when due) and either DELAY
 * (rewritten to the clamped level) or TIMER_OUT_MS (the absolute due time, as RocketMQ 5.x names
 * it). Its ConsumeQueue tag code is the due time (`tagsCodeFor`, also used by recovery and
 * replication dispatch, which re-read the properties from the CommitLog).
 *
 * Delivery side (masters only; a slave stores what replication brings and never delivers). Every
 * `checkIntervalMs` (≤ 100 ms) each queue is looked at:
 *
 *   - Level queue n: every message waits the same time, so the queue is FIFO in due time. From
 *     the level's offset in delayOffset.json, messages that are due are re-put and the offset
 *     advanced; the first one not yet due ends the pass.
 *   - Timer queue (18): due times are arbitrary. Units from the progress offset on are loaded
 *     into an in-memory min-heap of (due, cqOffset, phyOffset) (at most `timerHeapMaxEntries`;
 *     beyond that loading pauses until deliveries make room, so later messages can be late, never
 *     lost). Due entries are popped and re-put, so lateness is at most one check interval. The
 *     progress persisted under key TIMER_OFFSET_KEY (19) of delayOffset.json is the smallest
 *     queue offset not yet delivered.
 *
 * Re-put: the parked record's body, flag, sysFlag, born time and host, reconsume times and tags /
 * keys, under REAL_TOPIC / REAL_QID, without DELAY, REAL_TOPIC, REAL_QID, TIMER_OUT_MS (the 4.9
 * broker keeps them; consumers do not need them) and WAIT, not waiting for a flush (WAIT=false). Pulls
 * parked on the real queue are woken. A record that can never be stored (no REAL_TOPIC, too
 * large) is skipped with an error; a store that refuses writes is retried on the next pass.
 *
 * Restart and delivery guarantees (at least once). Offsets are persisted every 5 s by the broker
 * and at stop, after the re-put. Everything below a persisted offset was delivered; everything at
 * or above it is delivered (again) after a restart, on time as its due time says:
 *   - a crash loses up to 5 s of offset progress: those messages are delivered a second time;
 *   - for the timer queue even a clean stop persists only the smallest undelivered offset, so a
 *     message above it that was already delivered (its due time came before that of an earlier
 *     message still waiting) is delivered again after the restart.
 * Consumers must tolerate duplicates, as with every RocketMQ delivery.
 */
import { nowOf, systemClock, type Clock, type TimerHandle } from "../../common/clock.ts";
import type { Logger } from "../../common/log.ts";
import { MessageConst } from "../../protocol/message-const.ts";
import { SysFlag, transactionType } from "../../protocol/sys-flag.ts";
import {
  decodeRecordAt,
  encodeProperties,
  parseProperties,
  tagsHashCode,
  type DecodedRecord,
  type GetMessageStatus,
  type MessageStore,
  type PutMessageRequest,
} from "../../commitlog/index.ts";
import { type DelayOffsetManager, type TopicConfigManager } from "../metadata.ts";
import { SCHEDULE_TOPIC, TRANS_HALF_TOPIC, type TopicConfig } from "../../protocol/topics.ts";
import { ResponseCode } from "../../remoting/index.ts";
import type { ScheduleHook } from "../processors/send-message.ts";
import { putRequestFromRecord, realQueueOf } from "../reput.ts";
import { DELAY_LEVELS_MAX, parseDelayLevelProperty } from "../../protocol/delay-levels.ts";
import { TimerHeap, type TimerEntry } from "./timer-heap.ts";

/** Queue of SCHEDULE_TOPIC_XXXX holding messages with an arbitrary delivery time. */
export const TIMER_QUEUE_ID = DELAY_LEVELS_MAX;
/** SCHEDULE_TOPIC_XXXX queues: one per possible level, plus the timer queue. */
export const SCHEDULE_TOPIC_QUEUE_NUMS = TIMER_QUEUE_ID + 1;
/** delayOffset.json key of the timer queue's progress (levels use 1..18). */
export const TIMER_OFFSET_KEY = TIMER_QUEUE_ID + 1;
/** Absolute due time of a message parked in the timer queue (RocketMQ 5.x's name). */
export const TIMER_OUT_MS = "TIMER_OUT_MS";

export const CHECK_INTERVAL_MS_DEFAULT = 100;
export const TIMER_HEAP_MAX_ENTRIES_DEFAULT = 1_000_000;
/** Messages one queue delivers per pass before the others get their turn. */
const DELIVER_BATCH_MAX = 256;
/** Units read from a ConsumeQueue per store call. */
const SCHEDULE_READ_BATCH = 32;

export interface ScheduleOptions {
  /** Delay of each level in ms, level 1 first (from parseDelayLevels): 1..18 entries. */
  levelDelaysMs: readonly number[];
  now?: () => number;
  /** The loop's timer and (unless `now` is given) the time; default the system clock. */
  clock?: Clock;
  /** Pause between passes when nothing is due; ≤ 100 ms. 0 = no background loop (call runOnce). */
  checkIntervalMs?: number;
  /** Timer-queue messages held in memory at most. */
  timerHeapMaxEntries?: number;
  /** A timer message due further ahead than this is refused (5.x's timerMaxDelaySec); default 3 days. */
  timerMaxDelaySec?: number;
  log: Logger;
}

/** What delivery needs from the broker; BrokerContext has it all. */
export interface ScheduleContext {
  role: { readonly isSlave: boolean };
  store: MessageStore;
  delayOffsets: DelayOffsetManager;
}

type Outcome = "delivered" | "skipped" | "retry";

export class ScheduleMessageService implements ScheduleHook {
  readonly #delays: readonly number[];
  readonly #now: () => number;
  readonly #intervalMs: number;
  readonly #heapMax: number;
  readonly #timerMaxDelayMs: number;
  readonly #log: Logger;
  #ctx: ScheduleContext | null = null;
  #timers: TimerHeap | null = null;
  readonly #clock: Clock;
  #loop: TimerHandle | null = null;
  #running: Promise<unknown> = Promise.resolve();
  #stopped = true;

  constructor(o: ScheduleOptions) {
    const n = o.levelDelaysMs.length;
    if (n < 1 || n > DELAY_LEVELS_MAX || !o.levelDelaysMs.every((d) => Number.isSafeInteger(d) && d > 0)) {
      throw new Error(`schedule: levelDelaysMs must be 1..${DELAY_LEVELS_MAX} positive integers (use parseDelayLevels), got ${o.levelDelaysMs}`);
    }
    const interval = o.checkIntervalMs ?? CHECK_INTERVAL_MS_DEFAULT;
    if (!Number.isInteger(interval) || interval < 0 || interval > CHECK_INTERVAL_MS_DEFAULT) {
      throw new Error(`schedule: checkIntervalMs must be 0..${CHECK_INTERVAL_MS_DEFAULT}, got ${interval}`);
    }
    this.#delays = [...o.levelDelaysMs];
    this.#clock = o.clock ?? systemClock;
    this.#now = o.now ?? nowOf(this.#clock);
    this.#intervalMs = interval;
    this.#heapMax = o.timerHeapMaxEntries ?? TIMER_HEAP_MAX_ENTRIES_DEFAULT;
    this.#timerMaxDelayMs = (o.timerMaxDelaySec ?? TIMER_MAX_DELAY_SEC_DEFAULT) * 1000;
    this.#log = o.log;
  }

  get maxLevel(): number {
    return this.#delays.length;
  }

  /** Timer-queue messages waiting in memory (0 before start and on a slave). */
  get pendingTimers(): number {
    return this.#timers?.size ?? 0;
  }

  // ------------------------------------------------------------------------------- put side

  divert(req: PutMessageRequest, props: Record<string, string>): PutMessageRequest | TimerRefusal | null {
    const t = transactionType(req.sysFlag);
    if (t !== SysFlag.TRANSACTION_NOT_TYPE && t !== SysFlag.TRANSACTION_COMMIT_TYPE) return null;
    if (req.topic === SCHEDULE_TOPIC) return null;
    const level = parseDelayLevelProperty(props[MessageConst.DELAY]);
    if (level > 0) {
      const clamped = Math.min(level, this.maxLevel);
      return park(req, clamped - 1, MessageConst.DELAY, String(clamped), TIMER_OUT_MS);
    }
    // The clock is read only for a message with a timer property (sends without one are the hot path).
    const due = this.#timerDue(props);
    if (due === null) return null;
    const now = this.#now();
    if (due === "illegal" || due - now > this.#timerMaxDelayMs) return timerRefusal(this.#timerMaxDelayMs);
    if (due <= now) return null;
    return park(req, TIMER_QUEUE_ID, TIMER_OUT_MS, String(due), MessageConst.DELAY);
  }

  /** Absolute due time from the first timer property present; null when there is none. */
  #timerDue(props: Record<string, string>): number | "illegal" | null {
    const sec = props[MessageConst.TIMER_DELAY_SEC];
    if (sec !== undefined) return relativeDue(this.#now(), parseJavaLong(sec), 1000);
    const ms = props[MessageConst.TIMER_DELAY_MS];
    if (ms !== undefined) return relativeDue(this.#now(), parseJavaLong(ms), 1);
    const abs = props[MessageConst.TIMER_DELIVER_MS];
    if (abs !== undefined) return parseJavaLong(abs);
    const start = props[MessageConst.START_DELIVER_TIME];
    return start === undefined ? null : parseMs(start);
  }

  /**
   * ConsumeQueue tag code (MessageStoreOptions.tagsCodeFor): the due time for SCHEDULE_TOPIC_XXXX
   * units (store time when it cannot be told: due at once), the tag hash for every other topic.
   */
  readonly tagsCodeFor = (topic: string, props: Record<string, string> | null, storeTimestamp: number, tags: string | undefined): number => {
    if (topic !== SCHEDULE_TOPIC) return tagsHashCode(tags);
    if (props === null) return storeTimestamp;
    const out = props[TIMER_OUT_MS];
    if (out !== undefined) return parseMs(out) ?? storeTimestamp;
    const level = parseDelayLevelProperty(props[MessageConst.DELAY]);
    return level > 0 ? storeTimestamp + this.#delayOf(level) : storeTimestamp;
  };

  #delayOf(level: number): number {
    return this.#delays[Math.min(level, this.maxLevel) - 1]!;
  }

  // ------------------------------------------------------------------------------- delivery

  /** Starts delivering (not on a slave). `ctx` is the broker's context. */
  start(ctx: ScheduleContext): void {
    if (!this.#stopped) return;
    if (ctx.role.isSlave) {
      this.#log.info("slave: delayed messages are stored as replicated, the master delivers them");
      return;
    }
    this.#ctx = ctx;
    this.#timers = new TimerHeap(ctx.delayOffsets.get(TIMER_OFFSET_KEY));
    this.#stopped = false;
    if (this.#intervalMs > 0) this.#schedule(this.#intervalMs);
  }

  /** Stops the loop, waits for a pass in progress, and persists the offsets. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#loop) this.#clock.clearTimeout(this.#loop);
    this.#loop = null;
    await this.#running;
    await this.#ctx?.delayOffsets.idle();
    try {
      this.#ctx?.delayOffsets.persistIfDirty();
    } catch (e) {
      this.#log.error(`persisting delay offsets failed: ${errorText(e)}`);
    }
  }

  /** One pass over every queue (the loop calls it; tests with a fake clock call it directly). */
  runOnce(): Promise<{ delivered: number; more: boolean }> {
    const run = this.#running.then(() => this.#pass());
    this.#running = run.catch(() => undefined);
    return run;
  }

  #schedule(ms: number): void {
    this.#loop = this.#clock.setTimeout(() => {
      this.#loop = null;
      if (this.#stopped) return;
      this.runOnce().then(
        (r) => !this.#stopped && this.#schedule(r.more ? 0 : this.#intervalMs),
        (e) => {
          this.#log.rateLimited("error", "pass", `delivery pass failed: ${errorText(e)}`);
          if (!this.#stopped) this.#schedule(this.#intervalMs);
        },
      );
    }, ms);
  }

  async #pass(): Promise<{ delivered: number; more: boolean }> {
    const ctx = this.#ctx;
    if (this.#stopped || !ctx) return { delivered: 0, more: false };
    let delivered = 0;
    let more = false;
    for (let level = 1; level <= this.maxLevel && !this.#stopped; level++) {
      const n = await this.#deliverLevel(ctx, level);
      delivered += n;
      if (n >= DELIVER_BATCH_MAX) more = true;
    }
    if (!this.#stopped) {
      const n = await this.#deliverTimers(ctx);
      delivered += n;
      if (n >= DELIVER_BATCH_MAX) more = true;
    }
    return { delivered, more };
  }

  /** Delivers the due head of one level queue; returns how many were delivered or skipped. */
  async #deliverLevel(ctx: ScheduleContext, level: number): Promise<number> {
    const qid = level - 1;
    const delay = this.#delays[qid]!;
    let offset = ctx.delayOffsets.get(level);
    let done = 0;
    try {
      while (done < DELIVER_BATCH_MAX && !this.#stopped) {
        const r = ctx.store.getMessage(SCHEDULE_TOPIC, qid, offset, SCHEDULE_READ_BATCH);
        if (r.status === "OFFSET_OVERFLOW_BADLY" || (isEmpty(r.status) && offset > 0)) {
          // delayOffset.json is ahead of the queue (the store was replaced): follow the queue.
          this.#log.warn(`level ${level}: delay offset ${offset} is past the queue's end ${r.maxOffset}; reset to it`);
          offset = r.maxOffset;
          return done;
        }
        if (r.status === "OFFSET_TOO_SMALL") {
          this.#log.warn(`level ${level}: messages [${offset}, ${r.nextBeginOffset}) were deleted by retention before delivery`);
          offset = r.nextBeginOffset;
          continue;
        }
        if (r.status === "NO_MATCHED_MESSAGE" || r.status === "MESSAGE_WAS_REMOVING") {
          if (r.nextBeginOffset <= offset) return done;
          offset = r.nextBeginOffset;
          continue;
        }
        if (r.status !== "FOUND") return done;
        for (const bytes of r.messages) {
          const rec = decodeRecordAt(bytes, 0, { checkCrc: false });
          if (!("totalSize" in rec)) continue; // unreadable: skipped with the batch
          // Java's correction for a clock that went back: a due time further away than the
          // delay itself cannot be right, so such a message is due now.
          const now = this.#now();
          const due = rec.storeTimestamp + delay > now + delay ? now : rec.storeTimestamp + delay;
          if (due > now) {
            offset = rec.queueOffset;
            return done;
          }
          const outcome = await this.#redeliver(ctx, rec);
          if (outcome === "retry") {
            offset = rec.queueOffset;
            return done;
          }
          done++;
        }
        offset = r.nextBeginOffset;
      }
      return done;
    } finally {
      ctx.delayOffsets.set(level, offset);
    }
  }

  /** Loads new timer-queue units, then delivers the due ones in due order. */
  async #deliverTimers(ctx: ScheduleContext): Promise<number> {
    this.#loadTimers(ctx);
    const heap = this.#timers!;
    let done = 0;
    try {
      for (let e = heap.peek(); e && e.due <= this.#now() && done < DELIVER_BATCH_MAX && !this.#stopped; e = heap.peek()) {
        heap.pop();
        const rec = ctx.store.lookMessageByOffset(e.phyOffset);
        if (!rec) this.#log.warn(`timer queue: the message at offset ${e.cqOffset} was deleted (retention) before delivery`);
        const outcome: Outcome = rec ? await this.#redeliver(ctx, rec) : "skipped";
        if (outcome === "retry") {
          heap.retry(e);
          break;
        }
        heap.delivered(e);
        done++;
      }
      return done;
    } finally {
      ctx.delayOffsets.set(TIMER_OFFSET_KEY, heap.progress);
    }
  }

  #loadTimers(ctx: ScheduleContext): void {
    let heap = this.#timers!;
    while (heap.size < this.#heapMax) {
      const from = heap.loadedUpTo;
      const r = ctx.store.getMessage(SCHEDULE_TOPIC, TIMER_QUEUE_ID, from, Math.min(SCHEDULE_READ_BATCH, this.#heapMax - heap.size));
      if (r.status === "OFFSET_OVERFLOW_BADLY" || (isEmpty(r.status) && from > 0)) {
        if (heap.size > 0) return;
        this.#log.warn(`timer queue: progress ${from} is past the queue's end ${r.maxOffset}; reset to it`);
        this.#timers = heap = new TimerHeap(r.maxOffset);
        return;
      }
      if (r.status === "OFFSET_TOO_SMALL" || r.status === "NO_MATCHED_MESSAGE" || r.status === "MESSAGE_WAS_REMOVING") {
        if (r.nextBeginOffset <= from) return;
        if (r.status === "OFFSET_TOO_SMALL")
          this.#log.warn(`timer queue: messages [${from}, ${r.nextBeginOffset}) were deleted by retention before delivery`);
        heap.skipTo(r.nextBeginOffset);
        continue;
      }
      if (r.status !== "FOUND") return;
      for (const bytes of r.messages) {
        const rec = decodeRecordAt(bytes, 0, { checkCrc: false, readBody: false });
        if (!("totalSize" in rec) || rec.queueOffset < heap.loadedUpTo || rec.queueOffset >= r.nextBeginOffset) continue;
        const out = parseMs(parseProperties(rec.properties)[TIMER_OUT_MS] ?? "");
        heap.skipTo(rec.queueOffset);
        heap.push({ due: out ?? rec.storeTimestamp, cqOffset: rec.queueOffset, phyOffset: rec.physicalOffset } satisfies TimerEntry);
      }
      heap.skipTo(r.nextBeginOffset);
    }
    this.#log.rateLimited(
      "warn",
      "timer-heap-full",
      `timer queue: ${heap.size} messages in memory (timerHeapMaxEntries); loading more waits`,
      60_000,
    );
  }

  /** Re-puts a parked record under its real topic and queue. */
  async #redeliver(ctx: ScheduleContext, rec: DecodedRecord): Promise<Outcome> {
    const props = parseProperties(rec.properties);
    const real = realQueueOf(props);
    const where = `${rec.topic} queue ${rec.queueId} offset ${rec.queueOffset}`;
    if ("invalid" in real || real.topic === SCHEDULE_TOPIC || real.topic === TRANS_HALF_TOPIC) {
      const topicText = JSON.stringify(props[MessageConst.REAL_TOPIC]);
      this.#log.error(`${where}: REAL_TOPIC ${topicText} / REAL_QID ${JSON.stringify(props[MessageConst.REAL_QID])} unusable; message skipped`);
      return "skipped";
    }
    const { topic, queueId } = real;
    for (const k of [MessageConst.DELAY, MessageConst.REAL_TOPIC, MessageConst.REAL_QID, TIMER_OUT_MS, MessageConst.WAIT]) delete props[k];
    const req = putRequestFromRecord(rec, topic, queueId, props);
    const r = await ctx.store.putMessage(req);
    const stored = r.appended[0];
    // The pulls parked on the real queue are woken by the store's arrival listener.
    if (stored) return "delivered";
    if (r.status === "MESSAGE_ILLEGAL" || r.status === "PROPERTIES_SIZE_EXCEEDED") {
      this.#log.error(`${where}: cannot be stored in ${topic} (${r.status}: ${r.remark ?? ""}); message skipped`);
      return "skipped";
    }
    this.#log.rateLimited("warn", "put-refused", `delivery to ${topic} refused (${r.status}: ${r.remark ?? ""}); retrying`);
    return "retry";
  }
}

/**
 * Makes SCHEDULE_TOPIC_XXXX have a queue per level plus the timer queue (19). Call after the
 * system topics exist; an operator's larger queue count or other settings are kept.
 */
export function ensureScheduleTopic(topics: TopicConfigManager): TopicConfig | null {
  const cur = topics.get(SCHEDULE_TOPIC);
  if (!cur) return null;
  if (cur.readQueueNums >= SCHEDULE_TOPIC_QUEUE_NUMS && cur.writeQueueNums >= SCHEDULE_TOPIC_QUEUE_NUMS) return cur;
  const next: TopicConfig = {
    ...cur,
    readQueueNums: Math.max(cur.readQueueNums, SCHEDULE_TOPIC_QUEUE_NUMS),
    writeQueueNums: Math.max(cur.writeQueueNums, SCHEDULE_TOPIC_QUEUE_NUMS),
  };
  const problem = topics.upsert(next);
  if (problem) throw new Error(`cannot widen ${SCHEDULE_TOPIC}: ${problem}`);
  return next;
}

/** The parked copy of `req`: REAL_TOPIC/REAL_QID added, `setKey` set, `dropKey` removed. */
function park(req: PutMessageRequest, queueId: number, setKey: string, setValue: string, dropKey: string): PutMessageRequest {
  // The stored string, not the caller's map: it is what the record will hold (CLUSTER included).
  const props = parseProperties(req.properties);
  props[MessageConst.REAL_TOPIC] = req.topic;
  props[MessageConst.REAL_QID] = String(req.queueId);
  props[setKey] = setValue;
  delete props[dropKey];
  const parked: PutMessageRequest = { ...req, topic: SCHEDULE_TOPIC, queueId, properties: encodeProperties(props) };
  // Without `tags` the store reads the properties, so tagsCodeFor sees DELAY / TIMER_OUT_MS.
  delete parked.tags;
  delete parked.propertiesParsed;
  return parked;
}

/** No unit was ever written to the queue (maxOffset 0). */
function isEmpty(status: GetMessageStatus): boolean {
  return status === "NO_MESSAGE_IN_QUEUE" || status === "NO_MATCHED_LOGIC_QUEUE";
}

/** RocketMQ 5.x's MessageStoreConfig.timerMaxDelaySec default: 3 days. */
export const TIMER_MAX_DELAY_SEC_DEFAULT = 3 * 24 * 3600;

/** A send refused by the timer rules: the wire code and remark. */
export interface TimerRefusal {
  code: number;
  remark: string;
}

/**
 * 5.x's answer to a timer message it will not take (PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL in
 * SendMessageProcessor.handlePutMessageResult): MESSAGE_ILLEGAL, with its remark word for word.
 */
export function timerRefusal(maxDelayMs: number): TimerRefusal {
  return {
    code: ResponseCode.MESSAGE_ILLEGAL,
    remark:
      `timer message illegal, the delay time should not be bigger than the max delay ${maxDelayMs}ms; ` +
      "or if set del msg, the delay time should be bigger than the current time",
  };
}

/** `now` + `amount` × `unitMs`, or "illegal" when the amount is not a Java long (5.x: parseLong failed). */
function relativeDue(now: number, amount: number | "illegal", unitMs: number): number | "illegal" {
  return amount === "illegal" ? amount : now + amount * unitMs;
}

/**
 * A TIMER_* value as Java's Long.parseLong reads it; "illegal" where that throws. Beyond 2^53 the
 * value is approximate, which only matters for times past any max delay.
 */
function parseJavaLong(text: string): number | "illegal" {
  if (!/^[+-]?[0-9]{1,19}$/.test(text)) return "illegal";
  const n = Number(text);
  return Math.abs(n) <= 9_223_372_036_854_775_807 ? n : "illegal";
}

/** A Java long in decimal, within the safe-integer range; null otherwise. */
function parseMs(text: string): number | null {
  if (!/^-?[0-9]{1,16}$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : null;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
