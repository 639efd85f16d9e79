/**
 * POP's durable in-flight state and its revive service (docs/PROTOCOL.md §3.21, docs/STORAGE.md
 * §11). As in RocketMQ 5.x, checkpoints and acks are messages of the revive log
 * `rmq_sys_REVIVE_LOG_{cluster}` (created by the first pop; one queue per revive queue id, tags `ck`, `ack`, `bAck`, the
 * JSON of ../../protocol/pop.ts as body) in the CommitLog, so they survive a kill -9, replicate
 * to slaves with everything else and are there for a slave promoted by failover. Unlike Java,
 * they are written at once (not through the timer): the in-flight table (./inflight.ts) is
 * rebuilt by reading the log from the revive group's committed offsets, and the revive time is
 * kept in memory. A checkpoint's messages that were not acked by their revive time are stored
 * again in the group's POP retry topic `%RETRY%{group}_{topic}` with reconsumeTimes + 1 (past
 * the group's retryMaxTimes: in `%DLQ%{group}`), then a `bAck` record marks them resolved, so a
 * rebuild never revives them twice.
 *
 * The pop offsets: a pop locks the queues it reads, and commits a queue's offset once its
 * checkpoint is stored (RocketMQ commits right after it too). A rebuild moves each queue's committed offset to the end of every
 * checkpoint read back, so offsets lost with an unpersisted offset table never hand out a
 * message twice that was popped (and perhaps acked) before a crash.
 *
 * Only a master revives; a slave keeps nothing in memory and rebuilds when promoted.
 */
import { assert } from "../../common/assert.ts";
import type { Clock, TimerHandle } from "../../common/clock.ts";
import { decodeRecordAt, encodeProperties, parseProperties, type DecodedRecord, type PutMessageRequest } from "../../commitlog/index.ts";
import { MessageConst } from "../../protocol/message-const.ts";
import { PermName } from "../../protocol/permission.ts";
import { popRetryTopic, PopTag, REVIVE_GROUP, reviveTopic, type AckMsgJson, type PopCheckPointJson } from "../../protocol/pop.ts";
import { dlqTopic, RETRY_GROUP_TOPIC_PREFIX } from "../../protocol/topics.ts";
import type { BrokerContext } from "../context.ts";
import { putRequestFromRecord } from "../reput.ts";
import { InflightTable, type CheckPoint, type LiveCheckPoint } from "./inflight.ts";
import { ConsumerOrderInfoManager } from "./order-info.ts";

export interface PopServiceOptions {
  /** broker.reviveQueueNum: revive queues (RocketMQ's 8). */
  reviveQueueNum: number;
  /** How often due checkpoints are revived (RocketMQ's reviveInterval). */
  reviveIntervalMs: number;
  clock: Clock;
  /** The store root: FIFO pops' order info lives in its config/. */
  storeDir: string;
}

/** How often changed FIFO order info is written (RocketMQ's 10 s). */
const ORDER_INFO_PERSIST_MS = 10_000;

/** A revive that failed (a full disk, a slave) is tried again this much later. */
const REVIVE_RETRY_MS = 10_000;
/** Checkpoints revived per tick at most: the rest wait for the next tick. */
const REVIVE_BATCH = 256;
const enc = new TextEncoder();
/** The property strings of the revive log's records, encoded once. */
const TAG_PROPERTIES: Record<string, string> = Object.fromEntries(
  Object.values(PopTag).map((tag) => [tag, encodeProperties({ [MessageConst.TAGS]: tag })]),
);
/** Revive-log records put together at most (~250 bytes each). */
const RECORDS_PER_PUT = 32;
/** Records read per step while the table is rebuilt. */
const REBUILD_READ = 256;

export class PopService {
  readonly #ctx: BrokerContext;
  readonly #o: PopServiceOptions;
  readonly table = new InflightTable();
  /** FIFO pops' batches in flight per queue (./order-info.ts). */
  readonly order: ConsumerOrderInfoManager;
  #orderPersistedAt = 0;
  readonly reviveTopic: string;
  /** topic@group@queueId of queues a pop is reading (see tryLock). */
  readonly #locked = new Set<string>();
  /** Checkpoint puts not yet settled, per revive queue: the progress stays until they land. */
  readonly #writing = new Map<number, number>();
  /** Revive-log records of this turn, put together (#append). */
  readonly #pending: { req: PutMessageRequest; resolve: (queueOffset: number) => void }[] = [];
  #reviveCounter = 0;
  #timer: TimerHandle | null = null;
  #reviving = false;
  #active = false;

  constructor(ctx: BrokerContext, o: PopServiceOptions) {
    this.#ctx = ctx;
    this.#o = o;
    this.reviveTopic = reviveTopic(ctx.settings.clusterName);
    this.order = new ConsumerOrderInfoManager(o.storeDir);
    for (const p of this.order.load()) ctx.log.warn(p);
  }

  /** As a master: the table rebuilt from the revive log (if a pop ever wrote one), the revive tick. */
  start(): void {
    if (this.#active || this.#ctx.role.isSlave) return;
    this.#active = true;
    this.#clampOffsets();
    if (this.#ctx.topics.get(this.reviveTopic)) this.rebuild();
    this.#timer = this.#o.clock.setInterval(() => void this.reviveDue(), this.#o.reviveIntervalMs);
  }

  /** Stepping down (or stopping): no revives, nothing in memory but the FIFO order info, written now. */
  stop(): void {
    if (this.#active) this.order.persist();
    if (this.#timer) this.#o.clock.clearInterval(this.#timer);
    this.#timer = null;
    this.#active = false;
    this.table.clear();
  }

  get active(): boolean {
    return this.#active;
  }

  /** The revive queue of the next pop (one per request, round robin). */
  nextReviveQid(): number {
    const q = this.#reviveCounter;
    this.#reviveCounter = (q + 1) % this.#o.reviveQueueNum;
    return q;
  }

  // ---------------------------------------------------------------- pop offsets

  /**
   * A queue a pop of `group` reads is locked until its checkpoint is stored and the offset
   * committed (RocketMQ's QueueLockManager.tryLock): another pop skips it meanwhile, so no two pops
   * hand out one message, and a checkpoint that fails leaves the offset where it was.
   */
  tryLock(group: string, topic: string, queueId: number): boolean {
    const k = `${topic}@${group}@${queueId}`;
    if (this.#locked.has(k)) return false;
    this.#locked.add(k);
    return true;
  }

  unlock(group: string, topic: string, queueId: number): void {
    const gone = this.#locked.delete(`${topic}@${group}@${queueId}`);
    assert(gone, "pop lock of {}@{}@{} released twice", topic, group, queueId);
  }

  // ---------------------------------------------------------------- revive log writes

  /** Stores a checkpoint; in the table once stored. False when the store refused it. */
  async writeCheckpoint(ck: Omit<CheckPoint, "reviveOffset">): Promise<boolean> {
    const body: PopCheckPointJson = {
      so: ck.startOffset,
      pt: ck.popTime,
      it: ck.invisibleTime,
      bm: 0,
      n: ck.diffs.length,
      q: ck.queueId,
      t: ck.topic,
      c: ck.group,
      ro: 0,
      d: ck.diffs,
      bn: this.#ctx.settings.brokerName,
    };
    // The revive log's topic comes with the first pop (a broker nobody pops from lists no such topic).
    this.#ctx.createTopicIfAbsent(this.reviveTopic, this.#o.reviveQueueNum, PermName.READ | PermName.WRITE);
    this.#writing.set(ck.reviveQid, (this.#writing.get(ck.reviveQid) ?? 0) + 1);
    try {
      const queueOffset = await this.#append(this.#record(ck.reviveQid, PopTag.CK, body));
      if (queueOffset < 0) return false;
      if (this.#active) this.table.add({ ...ck, reviveOffset: queueOffset });
      return true;
    } finally {
      this.#writing.set(ck.reviveQid, this.#writing.get(ck.reviveQid)! - 1);
    }
  }

  /**
   * Acks messages of a checkpoint: out of the table at once (a revive can no longer take them),
   * then the record. A handle of no checkpoint in flight (late, forged, another group's) changes
   * nothing, but its record is still written, as Java writes it.
   */
  async writeAck(ack: AckMsgJson, reviveQid: number, offsets: readonly number[]): Promise<boolean> {
    if (this.#active) this.table.ack(ack.t, ack.c, ack.q, ack.so, ack.pt, offsets);
    const tag = ack.aol ? PopTag.BATCH_ACK : PopTag.ACK;
    return (await this.#append(this.#record(reviveQid, tag, ack))) >= 0;
  }

  /**
   * Appends a record of the revive log; its queue offset, or −1 when the store refused it. The
   * records of one turn (every ack decoded from one socket read, say) go to the store as one
   * put: a put per ack was 16 % of the broker's CPU draining a backlog by pop + ack.
   */
  #append(req: PutMessageRequest): Promise<number> {
    return new Promise((resolve) => {
      if (this.#pending.length === 0) queueMicrotask(() => void this.#flush());
      this.#pending.push({ req, resolve });
    });
  }

  async #flush(): Promise<void> {
    // A put must fit in one CommitLog segment (64 KiB in the smallest test configs): a few KiB each.
    while (this.#pending.length > RECORDS_PER_PUT) void this.#put(this.#pending.splice(0, RECORDS_PER_PUT));
    await this.#put(this.#pending.splice(0));
  }

  async #put(batch: { req: PutMessageRequest; resolve: (queueOffset: number) => void }[]): Promise<void> {
    let offsets: number[] = [];
    try {
      const r = await this.#ctx.store.putMessages(batch.map((b) => b.req));
      // All or nothing; stored even when a flush or replica wait failed (as a single put counts it).
      offsets = r.appended.map((a) => a.queueOffset);
    } finally {
      batch.forEach((b, i) => b.resolve(offsets[i] ?? -1));
    }
  }

  #record(reviveQid: number, tag: string, body: object): PutMessageRequest {
    const s = this.#ctx.settings;
    return {
      topic: this.reviveTopic,
      queueId: reviveQid,
      flag: 0,
      body: enc.encode(JSON.stringify(body)),
      properties: TAG_PROPERTIES[tag] ?? encodeProperties({ [MessageConst.TAGS]: tag }),
      sysFlag: 0,
      bornTimestamp: this.#ctx.now(),
      bornHost: s.storeHost,
      reconsumeTimes: 0,
      preparedTransactionOffset: 0,
      tags: tag,
      propertiesParsed: true,
    };
  }

  // ---------------------------------------------------------------- rebuild

  /**
   * Offsets past their queue's end: after an ASYNC_FLUSH crash the log can end below an offset
   * persisted before it. A pop reads a queue from its group's offset, so messages stored there
   * again (revived copies, new sends) would be skipped: the offset comes back to the end.
   */
  #clampOffsets(): void {
    const offsets = this.#ctx.consumerOffsets;
    const past: [string, string, number, number][] = [];
    offsets.forEachEntry((topic, group, queues) => {
      for (const [queueId, offset] of queues) {
        const max = this.#ctx.store.getMaxOffsetInQueue(topic, queueId);
        if (offset > max) past.push([group, topic, queueId, max]);
      }
    });
    for (const [group, topic, queueId, max] of past) {
      const was = offsets.query(group, topic, queueId);
      this.#ctx.log.warn(`pop: ${topic}@${group} queue ${queueId}: offset ${was} past the queue's end ${max} (lost in a crash): back to ${max}`);
      offsets.commit(group, topic, queueId, max);
    }
  }

  /** Reads every revive queue from the revive group's committed offset into the table. */
  rebuild(): void {
    this.table.clear();
    const ends = new Map<string, { group: string; topic: string; queueId: number; next: number }>();
    for (let qid = 0; qid < this.#o.reviveQueueNum; qid++) {
      const from = Math.max(0, this.#ctx.consumerOffsets.query(REVIVE_GROUP, this.reviveTopic, qid));
      this.#readQueue(qid, from, (rec, offset) => this.#apply(rec, qid, offset, ends));
    }
    for (const e of ends.values()) {
      if (e.next > this.#ctx.consumerOffsets.query(e.group, e.topic, e.queueId)) this.#ctx.consumerOffsets.commit(e.group, e.topic, e.queueId, e.next);
    }
    if (this.table.size > 0) this.#ctx.log.info(`pop: ${this.table.size} checkpoints in flight read back from ${this.reviveTopic}`);
  }

  #readQueue(qid: number, from: number, visit: (rec: DecodedRecord, offset: number) => void): void {
    for (let offset = from; ; ) {
      const r = this.#ctx.store.getMessage(this.reviveTopic, qid, offset, REBUILD_READ);
      if (r.status !== "FOUND") {
        if (r.nextBeginOffset > offset && r.status !== "OFFSET_OVERFLOW_ONE" && r.status !== "OFFSET_OVERFLOW_BADLY") offset = r.nextBeginOffset;
        else return;
        continue;
      }
      for (const bytes of r.messages) {
        const rec = decodeRecordAt(bytes, 0, { checkCrc: false });
        if ("totalSize" in rec) visit(rec, rec.queueOffset);
      }
      offset = r.nextBeginOffset;
    }
  }

  #apply(rec: DecodedRecord, qid: number, offset: number, ends: Map<string, { group: string; topic: string; queueId: number; next: number }>): void {
    const tag = parseProperties(rec.properties)[MessageConst.TAGS];
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder().decode(rec.body));
    } catch {
      return; // not ours: the log is a topic anyone with permission could write to
    }
    if (tag === PopTag.CK && isCheckPoint(body)) {
      const ck: CheckPoint = {
        topic: body.t,
        group: body.c,
        queueId: body.q,
        startOffset: body.so,
        popTime: body.pt,
        invisibleTime: body.it,
        diffs: body.d,
        reviveQid: qid,
        reviveOffset: offset,
      };
      this.table.add(ck);
      const k = `${ck.topic}@${ck.group}@${ck.queueId}`;
      const next = ck.startOffset + Math.max(...ck.diffs) + 1;
      const e = ends.get(k);
      if (!e || next > e.next) ends.set(k, { group: ck.group, topic: ck.topic, queueId: ck.queueId, next });
    } else if ((tag === PopTag.ACK || tag === PopTag.BATCH_ACK) && isAck(body)) {
      this.table.ack(body.t, body.c, body.q, body.so, body.pt, body.aol ?? [body.ao]);
    }
  }

  // ---------------------------------------------------------------- revive

  /** One revive pass: every due checkpoint's open messages go to the retry topic (or the DLQ). */
  async reviveDue(): Promise<void> {
    if (this.#reviving || !this.#active) return;
    this.#reviving = true;
    try {
      const due = this.table.takeDue(this.#ctx.now(), REVIVE_BATCH);
      for (const ck of due) {
        const revived = await this.#revive(ck);
        // Stopped meanwhile (a clean stop, a step down): the table is cleared and the store may be
        // closed; what was not marked resolved is revived by the next master's rebuild.
        if (!this.#active) return;
        if (revived) this.table.done(ck);
        else this.table.putBack(ck, this.#ctx.now() + REVIVE_RETRY_MS);
      }
      this.commitProgress();
      if (this.#ctx.now() - this.#orderPersistedAt >= ORDER_INFO_PERSIST_MS) {
        this.#orderPersistedAt = this.#ctx.now();
        await this.order.persistIfDirty();
      }
    } finally {
      this.#reviving = false;
    }
  }

  async #revive(ck: LiveCheckPoint): Promise<boolean> {
    const offsets: number[] = [];
    for (let i = 0; i < ck.diffs.length; i++) if ((ck.acked & (1 << i)) === 0) offsets.push(ck.startOffset + ck.diffs[i]!);
    // Each step after a put checks that the service still runs: a stop does not wait for a revive.
    for (const offset of offsets) if (!this.#active || !(await this.#reviveOne(ck, offset))) return false;
    if (!this.#active) return false;
    // Resolved: a rebuild that reads this checkpoint again finds its messages acked.
    const bn = this.#ctx.settings.brokerName;
    const ack: AckMsgJson = { ao: -1, so: ck.startOffset, c: ck.group, t: ck.topic, q: ck.queueId, pt: ck.popTime, bn, aol: offsets };
    const r = await this.#ctx.store.putMessage(this.#record(ck.reviveQid, PopTag.BATCH_ACK, ack));
    return r.appended.length > 0;
  }

  /** Stores one message of a due checkpoint again, in the retry topic or the DLQ; false to try later. */
  async #reviveOne(ck: LiveCheckPoint, offset: number): Promise<boolean> {
    const ctx = this.#ctx;
    const r = ctx.store.getMessage(ck.topic, ck.queueId, offset, 1);
    const bytes = r.status === "FOUND" ? r.messages[0] : undefined;
    if (!bytes) return true; // removed by retention or a topic deletion: nothing to revive
    const rec = decodeRecordAt(bytes, 0, { checkCrc: false });
    if (!("totalSize" in rec)) return true;
    const req = this.#retryRequest(ck, rec);
    const result = await ctx.store.putMessage(req);
    return result.appended.length > 0;
  }

  #retryRequest(ck: LiveCheckPoint, rec: DecodedRecord): PutMessageRequest {
    const ctx = this.#ctx;
    const group = ctx.groups.get(ck.group);
    const maxTimes = group?.retryMaxTimes ?? 16;
    const props = parseProperties(rec.properties);
    if (rec.reconsumeTimes === 0 || props[MessageConst.FIRST_POP_TIME] === undefined) props[MessageConst.FIRST_POP_TIME] = String(ck.popTime);
    delete props[MessageConst.POP_CK];
    const reconsumeTimes = rec.reconsumeTimes + 1;
    let topic = ck.topic.startsWith(RETRY_GROUP_TOPIC_PREFIX) ? ck.topic : popRetryTopic(ck.topic, ck.group);
    if (reconsumeTimes > maxTimes) {
      props[MessageConst.RETRY_TOPIC] ??= rec.topic;
      topic = dlqTopic(ck.group);
    }
    ctx.createTopicIfAbsent(topic, 1, PermName.READ | PermName.WRITE);
    const req = putRequestFromRecord(rec, topic, 0, props);
    req.reconsumeTimes = reconsumeTimes;
    return req;
  }

  /** Commits each revive queue's progress: the offset of its oldest checkpoint in flight, else its end. */
  commitProgress(): void {
    if (!this.#active) return;
    for (let qid = 0; qid < this.#o.reviveQueueNum; qid++) {
      if ((this.#writing.get(qid) ?? 0) > 0) continue;
      const progress = this.table.progress(qid) ?? this.#ctx.store.getMaxOffsetInQueue(this.reviveTopic, qid);
      if (progress > this.#ctx.consumerOffsets.query(REVIVE_GROUP, this.reviveTopic, qid)) {
        this.#ctx.consumerOffsets.commit(REVIVE_GROUP, this.reviveTopic, qid, progress);
      }
    }
  }
}

function isCheckPoint(b: unknown): b is PopCheckPointJson {
  const o = b as Partial<PopCheckPointJson> | null;
  return (
    typeof o === "object" &&
    o !== null &&
    typeof o.t === "string" &&
    typeof o.c === "string" &&
    Number.isSafeInteger(o.q) &&
    Number.isSafeInteger(o.so) &&
    Number.isSafeInteger(o.pt) &&
    Number.isSafeInteger(o.it) &&
    Array.isArray(o.d) &&
    o.d.length > 0 &&
    o.d.length <= 32 &&
    o.d.every((x) => Number.isSafeInteger(x) && x >= 0)
  );
}

function isAck(b: unknown): b is AckMsgJson {
  const o = b as Partial<AckMsgJson> | null;
  return (
    typeof o === "object" &&
    o !== null &&
    typeof o.t === "string" &&
    typeof o.c === "string" &&
    Number.isSafeInteger(o.q) &&
    Number.isSafeInteger(o.so) &&
    Number.isSafeInteger(o.pt) &&
    (Array.isArray(o.aol) ? o.aol.every((x) => Number.isSafeInteger(x)) : Number.isSafeInteger(o.ao))
  );
}
