/**
 * TransactionalMessageService: RocketMQ 4.x transactions on the broker (docs/PROTOCOL.md §6).
 *
 *   prepare         a half message is stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0 (half-message.ts)
 *   endTransaction  END_TRANSACTION commit: the half record, checked against the request, is stored
 *                   under its real topic and queue as a COMMIT_TYPE message, then an op record is
 *                   written; rollback: only the op record. Consumers see committed messages only.
 *   check pass      every transactionCheckIntervalMs (masters only) the half queue is scanned from
 *                   the scan cursor; each record is decided by check-policy.ts. A "check" copies the
 *                   record to the queue's end (TRANSACTION_CHECK_TIMES + 1) and sends
 *                   CHECK_TRANSACTION_STATE (oneway) for the copy to one live connection of its
 *                   producer group (PGROUP), which answers with END_TRANSACTION.
 *
 * Durable state. Half and op records live in the CommitLog (durable, replicated). The scan cursor
 * (half queue) and the op cursor are consumer offsets of group CID_RMQ_SYS_TRANS on the two
 * topics, persisted with every other consumer offset, so a restart resumes where the scan was.
 * A crash loses at most the last 5 s of cursor progress: records are then scanned again, and
 * the worst case is one extra check-back of a message that was already checked.
 *
 * Resolved transactions. An in-memory map origin → op offset says which transactions have an op
 * record (see "origin" in half-message.ts). It is filled from the op queue at start — everything
 * from the op cursor on, and at least the last RESOLVED_WINDOW ops — and by each op written. It
 * answers two questions: does the record at the scan cursor still need a check, and is an
 * END_TRANSACTION a duplicate (a late commit racing its own check-back answer, or a producer
 * answering two check-backs of the same transaction). RocketMQ 4.x has no such guard and commits
 * a message twice in those races; here a transaction is committed at most once as long as its op
 * record is within the window (oldest entries beyond RESOLVED_MAX are forgotten).
 *
 * Op cursor: the op queue is consumed as a prefix: an op whose resolved copy lies below the scan
 * cursor is done. The cursor is only a restart hint; the window above keeps recent ops anyway.
 */
import { assert } from "../../common/assert.ts";
import { systemClock, type Clock, type TimerHandle } from "../../common/clock.ts";
import type { Logger } from "../../common/log.ts";
import { MessageConst } from "../../protocol/message-const.ts";
import { SysFlag } from "../../protocol/sys-flag.ts";
import {
  createOffsetMsgId,
  decodeRecordAt,
  encodeRecord,
  parseProperties,
  recordSize,
  type DecodedRecord,
  type HostAddress,
  type MessageStore,
  type PutMessageRequest,
  type PutMessageResult,
} from "../../commitlog/index.ts";
import { type ConsumerOffsetManager } from "../metadata.ts";
import { PermName } from "../../protocol/permission.ts";
import { TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, type TopicConfig } from "../../protocol/topics.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingConnection } from "../../remoting/index.ts";
import type { ProducerManager } from "../client-manager.ts";
import { decideHalf, type CheckPolicy } from "./check-policy.ts";
import {
  HALF_QUEUE_ID,
  OP_QUEUE_ID,
  originOf,
  parseOpRecord,
  toCommitRequest,
  toDiscardRequest,
  toHalfRequest,
  toOpRequest,
  toRenewedHalfRequest,
  TRANS_SYS_GROUP,
  type OpEntry,
} from "./half-message.ts";

/** Ops always reloaded at start, whatever the op cursor says (duplicate guard after a restart). */
const RESOLVED_WINDOW = 65_536;
/** Resolved transactions remembered at most; the oldest are forgotten first. */
const RESOLVED_MAX = 262_144;
/** Half records one pass looks at, at most; the next pass goes on from there. */
const PASS_RECORDS_MAX = 10_000;
/** Time one pass may take (RocketMQ's MAX_PROCESS_TIME_LIMIT). */
const PASS_TIME_MAX_MS = 60_000;
/** Units read from the half or op queue per store call (its own choice: the schedule service's happens to be the same). */
const TRANSACTION_READ_BATCH = 32;

export interface TransactionOptions {
  checkIntervalMs: number;
  transactionTimeOutMs: number;
  transactionCheckMax: number;
  /** The CommitLog's file reserved time: older half messages are given up (0 = never). */
  maxAgeMs: number;
  /** The check loop's timer; default the system clock (the time comes from the context's `now`). */
  clock?: Clock;
}

/** What the service needs from the broker; BrokerContext has it all. */
export interface TransactionContext {
  settings: { storeHost: HostAddress; brokerName: string };
  role: { readonly isSlave: boolean };
  store: MessageStore;
  consumerOffsets: ConsumerOffsetManager;
  producers: ProducerManager;
  createTopicIfAbsent: (topic: string, queueNums: number, perm: number) => TopicConfig;
  now: () => number;
}

export interface EndTransactionRequest {
  producerGroup: string;
  tranStateTableOffset: number;
  commitLogOffset: number;
  /** SysFlag transaction type: 0 unknown, 8 commit, 12 rollback. */
  commitOrRollback: number;
  fromTransactionCheck: boolean;
}

export interface EndTransactionOutcome {
  code: number;
  remark?: string;
  /** What happened, for logs and tests. */
  action: "committed" | "rolled-back" | "duplicate" | "ignored" | "refused";
}

export interface TransactionStats {
  halfMinOffset: number;
  halfMaxOffset: number;
  /** Scan cursor: half-queue records below it need nothing more. */
  halfCheckOffset: number;
  opMaxOffset: number;
  opCheckOffset: number;
  /** Transactions with an op record that are remembered (duplicate guard). */
  resolvedKnown: number;
  checksSent: number;
  discarded: number;
  committed: number;
  rolledBack: number;
}

export interface PassResult {
  scanned: number;
  checks: number;
  discarded: number;
  requeued: number;
  /** The pass stopped at its limits with records left to look at. */
  more: boolean;
}

/** Divert hook for delayed committed messages (the schedule service's). */
/** The schedule's divert: the request to store instead, a refusal (a timer message 5.x refuses), or null. */
export type DivertHook = (req: PutMessageRequest, props: Record<string, string>) => PutMessageRequest | { code: number; remark: string } | null;

export class TransactionalMessageService {
  readonly #o: TransactionOptions;
  readonly #log: Logger;
  readonly #divert: DivertHook | undefined;
  #ctx: TransactionContext | null = null;
  /** origin → op offset, insertion-ordered (oldest first) for eviction. */
  readonly #resolved = new Map<number, number>();
  /** Origins with an END_TRANSACTION in progress (its puts are awaited). */
  readonly #resolving = new Set<number>();
  /** Ops at or above the op cursor, in op-queue order (for moving the op cursor). */
  #opTail: OpEntry[] = [];
  /** Op queue offset read into #resolved so far. */
  #opReadUpTo = 0;
  readonly #clock: Clock;
  #loop: TimerHandle | null = null;
  #running: Promise<unknown> = Promise.resolve();
  #stopped = true;
  #counters = { checksSent: 0, discarded: 0, committed: 0, rolledBack: 0 };

  constructor(o: TransactionOptions, log: Logger, divert?: DivertHook) {
    if (!(o.checkIntervalMs > 0) || !(o.transactionTimeOutMs >= 0) || !(o.transactionCheckMax >= 1))
      throw new Error(`transaction: bad options ${JSON.stringify(o)}`);
    // A copy: reconfigure() changes it.
    this.#o = { ...o };
    this.#log = log;
    this.#divert = divert;
    this.#clock = o.clock ?? systemClock;
  }

  /**
   * Config reload. Each check pass reads these, so the next pass uses them; a pass already
   * waiting keeps its old delay once (at most the old checkIntervalMs).
   */
  reconfigure(patch: Partial<Pick<TransactionOptions, "checkIntervalMs" | "transactionTimeOutMs" | "transactionCheckMax" | "maxAgeMs">>): void {
    Object.assign(this.#o, patch);
  }

  /** Binds the broker's state; call once the store is open. Loads resolved transactions. */
  attach(ctx: TransactionContext): void {
    this.#ctx = ctx;
    const cursor = Math.max(0, ctx.consumerOffsets.query(TRANS_SYS_GROUP, TRANS_OP_HALF_TOPIC, OP_QUEUE_ID));
    const max = ctx.store.getMaxOffsetInQueue(TRANS_OP_HALF_TOPIC, OP_QUEUE_ID);
    const min = ctx.store.getMinOffsetInQueue(TRANS_OP_HALF_TOPIC, OP_QUEUE_ID);
    this.#opReadUpTo = Math.max(min, Math.min(cursor, max - RESOLVED_WINDOW));
    this.#loadOps(cursor);
    if (this.#resolved.size > 0) this.#log.info(`transactions: ${this.#resolved.size} resolved transactions loaded from the op queue`);
  }

  // ------------------------------------------------------------------------------ put side

  /** The request to store for a half message (the caller stores it and answers SEND_OK). */
  prepare(req: PutMessageRequest, producerGroup: string): PutMessageRequest {
    this.#need().createTopicIfAbsent(TRANS_HALF_TOPIC, 1, PermName.READ | PermName.WRITE);
    return toHalfRequest(req, TRANS_HALF_TOPIC, producerGroup);
  }

  /** END_TRANSACTION (RocketMQ's EndTransactionProcessor, plus the duplicate guard). */
  async endTransaction(h: EndTransactionRequest): Promise<EndTransactionOutcome> {
    const ctx = this.#need();
    const type = h.commitOrRollback;
    if (type !== SysFlag.TRANSACTION_COMMIT_TYPE && type !== SysFlag.TRANSACTION_ROLLBACK_TYPE) {
      // UNKNOWN (0) or nonsense: the transaction stays open and the check-back will ask again.
      return { code: ResponseCode.SUCCESS, action: "ignored" };
    }
    const half = ctx.store.lookMessageByOffset(h.commitLogOffset);
    if (!half || half.topic !== TRANS_HALF_TOPIC) return refuse(`Find prepared transaction message failed (commitLogOffset ${h.commitLogOffset})`);
    const props = parseProperties(half.properties);
    if (props[MessageConst.PGROUP] !== h.producerGroup) return refuse(`The producer group wrong: ${h.producerGroup}`);
    if (half.queueOffset !== h.tranStateTableOffset) return refuse(`The transaction state table offset wrong: ${h.tranStateTableOffset}`);
    if (half.physicalOffset !== h.commitLogOffset) return refuse(`The commit log offset wrong: ${h.commitLogOffset}`);
    const origin = originOf(half, props);
    if (this.#resolved.has(origin) || this.#resolving.has(origin)) return { code: ResponseCode.SUCCESS, action: "duplicate" };
    this.#resolving.add(origin);
    try {
      if (type === SysFlag.TRANSACTION_COMMIT_TYPE) {
        const failed = await this.#storeCommitted(ctx, half);
        if (failed) return failed;
      }
      await this.#writeOp(ctx, half.queueOffset, origin);
      if (type === SysFlag.TRANSACTION_COMMIT_TYPE) this.#counters.committed++;
      else this.#counters.rolledBack++;
      return { code: ResponseCode.SUCCESS, action: type === SysFlag.TRANSACTION_COMMIT_TYPE ? "committed" : "rolled-back" };
    } finally {
      this.#resolving.delete(origin);
    }
  }

  async #storeCommitted(ctx: TransactionContext, half: DecodedRecord): Promise<EndTransactionOutcome | null> {
    const built = toCommitRequest(half);
    if ("invalid" in built) return refuse(built.invalid);
    // Like a CommitLog put in RocketMQ, a committed message with a delay level waits in the
    // schedule topic first.
    // A timer past the max delay is refused at commit, as 5.x's put hook refuses it there.
    const diverted = this.#divert?.(built, parseProperties(built.properties)) ?? built;
    if ("code" in diverted) return { ...diverted, action: "refused" };
    const req = diverted;
    const r = await ctx.store.putMessage(req);
    const stored = r.appended[0];
    // The pulls parked for the committed message are woken by the store's arrival listener.
    if (!stored) return { ...putFailure(r), action: "refused" };
    return null;
  }

  async #writeOp(ctx: TransactionContext, halfOffset: number, origin: number): Promise<void> {
    ctx.createTopicIfAbsent(TRANS_OP_HALF_TOPIC, 1, PermName.READ | PermName.WRITE);
    const r = await ctx.store.putMessage(toOpRequest(TRANS_OP_HALF_TOPIC, halfOffset, origin, ctx.settings.storeHost, ctx.now()));
    const stored = r.appended[0];
    // Without its op the transaction is checked back again later; the in-memory entry still
    // keeps it from being committed twice until a restart.
    if (!stored) this.#log.error(`transaction origin ${origin}: op record not stored (${r.status}: ${r.remark ?? ""}); it will be checked again`);
    this.#remember(origin, stored ? stored.queueOffset : -1);
  }

  #remember(origin: number, opOffset: number): void {
    this.#resolved.delete(origin);
    this.#resolved.set(origin, opOffset);
    if (this.#resolved.size > RESOLVED_MAX) {
      const oldest = this.#resolved.keys().next().value;
      if (oldest !== undefined) this.#resolved.delete(oldest);
    }
    // One entry in, at most one out: the window stays bounded.
    assert(this.#resolved.size <= RESOLVED_MAX, "{} resolved transactions remembered", this.#resolved.size);
  }

  /** Reads op records not yet seen into #resolved (and those at or above `cursor` into #opTail). */
  #loadOps(cursor = 0): void {
    const ctx = this.#need();
    for (;;) {
      const r = ctx.store.getMessage(TRANS_OP_HALF_TOPIC, OP_QUEUE_ID, this.#opReadUpTo, TRANSACTION_READ_BATCH);
      if (r.status === "OFFSET_TOO_SMALL" || r.status === "NO_MATCHED_MESSAGE" || r.status === "MESSAGE_WAS_REMOVING") {
        if (r.nextBeginOffset <= this.#opReadUpTo) return;
        this.#opReadUpTo = r.nextBeginOffset;
        continue;
      }
      if (r.status !== "FOUND") return;
      for (const bytes of r.messages) {
        const rec = decodeRecordAt(bytes, 0, { checkCrc: false });
        if (!("totalSize" in rec)) continue;
        const op = parseOpRecord(rec);
        if ("invalid" in op) {
          this.#log.rateLimited("warn", "bad-op", `op queue offset ${rec.queueOffset}: ${op.invalid}; ignored`);
          continue;
        }
        if (!this.#resolved.has(op.origin)) this.#remember(op.origin, op.opOffset);
        if (op.opOffset >= cursor && (this.#opTail.length === 0 || this.#opTail.at(-1)!.opOffset < op.opOffset)) this.#opTail.push(op);
      }
      this.#opReadUpTo = r.nextBeginOffset;
    }
  }

  // ------------------------------------------------------------------------------ check-back

  /** Starts the periodic check (masters only). */
  start(): void {
    const ctx = this.#need();
    if (!this.#stopped) return;
    if (ctx.role.isSlave) return;
    this.#stopped = false;
    this.#schedule(this.#o.checkIntervalMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#loop) this.#clock.clearTimeout(this.#loop);
    this.#loop = null;
    await this.#running;
  }

  #schedule(ms: number): void {
    this.#loop = this.#clock.setTimeout(() => {
      this.#loop = null;
      if (this.#stopped) return;
      this.runOnce().then(
        (r) => !this.#stopped && this.#schedule(r.more ? 0 : this.#o.checkIntervalMs),
        (e) => {
          this.#log.rateLimited("error", "check-pass", `transaction check pass failed: ${e instanceof Error ? e.message : String(e)}`);
          if (!this.#stopped) this.#schedule(this.#o.checkIntervalMs);
        },
      );
    }, ms);
  }

  /** One scan of the half queue (the loop calls it; tests with an injected clock call it directly). */
  runOnce(): Promise<PassResult> {
    const run = this.#running.then(() => this.#pass());
    this.#running = run.catch(() => undefined);
    return run;
  }

  async #pass(): Promise<PassResult> {
    const ctx = this.#need();
    const result: PassResult = { scanned: 0, checks: 0, discarded: 0, requeued: 0, more: false };
    this.#loadOps();
    const passStart = ctx.now();
    const policy: CheckPolicy = {
      transactionTimeOutMs: this.#o.transactionTimeOutMs,
      transactionCheckMax: this.#o.transactionCheckMax,
      maxAgeMs: this.#o.maxAgeMs,
    };
    const stored = ctx.consumerOffsets.query(TRANS_SYS_GROUP, TRANS_HALF_TOPIC, HALF_QUEUE_ID);
    let cursor = Math.max(stored, ctx.store.getMinOffsetInQueue(TRANS_HALF_TOPIC, HALF_QUEUE_ID));
    try {
      scan: while (result.scanned < PASS_RECORDS_MAX) {
        if (ctx.now() - passStart > PASS_TIME_MAX_MS) {
          result.more = true;
          break;
        }
        const r = ctx.store.getMessage(TRANS_HALF_TOPIC, HALF_QUEUE_ID, cursor, TRANSACTION_READ_BATCH);
        if (r.status === "OFFSET_TOO_SMALL" || r.status === "NO_MATCHED_MESSAGE" || r.status === "MESSAGE_WAS_REMOVING") {
          if (r.nextBeginOffset <= cursor) break;
          cursor = r.nextBeginOffset;
          continue;
        }
        if (r.status === "OFFSET_OVERFLOW_BADLY") {
          this.#log.warn(`half queue: check offset ${cursor} is past the queue's end ${r.maxOffset}; reset to it`);
          cursor = r.maxOffset;
          break;
        }
        if (r.status !== "FOUND") break;
        for (const bytes of r.messages) {
          const rec = decodeRecordAt(bytes, 0, { checkCrc: false });
          if (!("totalSize" in rec) || rec.queueOffset < cursor) continue;
          result.scanned++;
          const props = parseProperties(rec.properties);
          const origin = originOf(rec, props);
          const resolved = this.#resolved.has(origin);
          // An END_TRANSACTION for it is being stored right now: look again next pass.
          if (!resolved && this.#resolving.has(origin)) break scan;
          const d = decideHalf(rec, props, resolved, ctx.now(), passStart, policy);
          if (d === "stop") break scan;
          if (d === "discard") {
            if (!(await this.#discard(ctx, rec))) break scan;
            result.discarded++;
          } else if (d === "requeue" || d === "check") {
            const copy = await this.#renew(ctx, rec, d === "check");
            if (!copy) break scan;
            if (d === "check") {
              this.#sendCheck(ctx, copy, props[MessageConst.PGROUP] ?? "");
              result.checks++;
            } else {
              result.requeued++;
            }
          }
          cursor = rec.queueOffset + 1;
        }
        // Every record of the batch was handled (undecodable ones are skipped with it).
        cursor = Math.max(cursor, r.nextBeginOffset);
        if (result.scanned >= PASS_RECORDS_MAX) result.more = true;
      }
    } finally {
      ctx.consumerOffsets.commit(TRANS_SYS_GROUP, TRANS_HALF_TOPIC, HALF_QUEUE_ID, cursor);
      this.#advanceOpCursor(ctx, cursor);
    }
    return result;
  }

  /** Ops whose resolved copy lies below the scan cursor are done; the cursor moves over that prefix. */
  #advanceOpCursor(ctx: TransactionContext, halfCursor: number): void {
    let n = 0;
    while (n < this.#opTail.length && this.#opTail[n]!.halfOffset < halfCursor) n++;
    if (n > 0) this.#opTail = this.#opTail.slice(n);
    const opCursor = this.#opTail[0]?.opOffset ?? this.#opReadUpTo;
    ctx.consumerOffsets.commit(TRANS_SYS_GROUP, TRANS_OP_HALF_TOPIC, OP_QUEUE_ID, opCursor);
  }

  async #renew(ctx: TransactionContext, rec: DecodedRecord, countCheck: boolean): Promise<DecodedRecord | null> {
    const r = await ctx.store.putMessage(toRenewedHalfRequest(rec, countCheck));
    const a = r.appended[0];
    if (!a) {
      this.#log.rateLimited(
        "warn",
        "renew-half",
        `half message ${rec.queueOffset} could not be copied (${r.status}: ${r.remark ?? ""}); retried next pass`,
      );
      return null;
    }
    return ctx.store.lookMessageByOffset(a.physicalOffset) ?? null;
  }

  async #discard(ctx: TransactionContext, rec: DecodedRecord): Promise<boolean> {
    ctx.createTopicIfAbsent(TRANS_CHECK_MAX_TIME_TOPIC, 1, PermName.READ | PermName.WRITE);
    const r = await ctx.store.putMessage(toDiscardRequest(rec, TRANS_CHECK_MAX_TIME_TOPIC));
    if (!r.appended[0]) {
      this.#log.rateLimited("warn", "discard-half", `half message ${rec.queueOffset} could not be discarded (${r.status}); retried next pass`);
      return false;
    }
    const props = parseProperties(rec.properties);
    this.#log.warn(
      `transaction of ${props[MessageConst.PGROUP] ?? "?"} (half offset ${rec.queueOffset}, topic ${props[MessageConst.REAL_TOPIC] ?? "?"}) ` +
        `checked ${props[MessageConst.TRANSACTION_CHECK_TIMES] ?? 0} times without an answer or too old: moved to ${TRANS_CHECK_MAX_TIME_TOPIC}`,
    );
    this.#counters.discarded++;
    return true;
  }

  /** CHECK_TRANSACTION_STATE for a half copy to one live producer of its group (oneway). */
  #sendCheck(ctx: TransactionContext, copy: DecodedRecord, group: string): void {
    const conn = this.#liveProducer(ctx, group);
    if (!conn) {
      this.#log.rateLimited(
        "warn",
        `no-producer-${group}`,
        `transaction check: no producer of group ${group} is connected; counted, asked again next pass`,
      );
      return;
    }
    const props = parseProperties(copy.properties);
    const uniq = props[MessageConst.UNIQ_KEY];
    const ext: Record<string, string> = {
      tranStateTableOffset: String(copy.queueOffset),
      commitLogOffset: String(copy.physicalOffset),
      offsetMsgId: createOffsetMsgId(copy.storeHost, copy.physicalOffset),
    };
    if (uniq !== undefined) {
      ext.msgId = uniq;
      ext.transactionId = uniq;
    }
    conn.invokeOneway(createRequest(RequestCode.CHECK_TRANSACTION_STATE, ext, checkBody(copy, props)));
    this.#counters.checksSent++;
  }

  #liveProducer(ctx: TransactionContext, group: string): RemotingConnection | undefined {
    for (const ch of ctx.producers.channels(group)) if (!ch.conn.closed) return ch.conn;
    return undefined;
  }

  // ------------------------------------------------------------------------------ info

  stats(): TransactionStats {
    const ctx = this.#need();
    const s = ctx.store;
    return {
      halfMinOffset: s.getMinOffsetInQueue(TRANS_HALF_TOPIC, HALF_QUEUE_ID),
      halfMaxOffset: s.getMaxOffsetInQueue(TRANS_HALF_TOPIC, HALF_QUEUE_ID),
      halfCheckOffset: Math.max(0, ctx.consumerOffsets.query(TRANS_SYS_GROUP, TRANS_HALF_TOPIC, HALF_QUEUE_ID)),
      opMaxOffset: s.getMaxOffsetInQueue(TRANS_OP_HALF_TOPIC, OP_QUEUE_ID),
      opCheckOffset: Math.max(0, ctx.consumerOffsets.query(TRANS_SYS_GROUP, TRANS_OP_HALF_TOPIC, OP_QUEUE_ID)),
      resolvedKnown: this.#resolved.size,
      ...this.#counters,
    };
  }

  #need(): TransactionContext {
    if (!this.#ctx) throw new Error("transaction service not attached");
    return this.#ctx;
  }
}

function refuse(remark: string): EndTransactionOutcome {
  return { code: ResponseCode.SYSTEM_ERROR, remark, action: "refused" };
}

/** RocketMQ's sendFinalMessage: stored (even if a flush or slave wait failed) is success. */
function putFailure(r: PutMessageResult): { code: number; remark: string } {
  const remark = r.remark ?? r.status;
  switch (r.status) {
    case "MESSAGE_ILLEGAL":
    case "PROPERTIES_SIZE_EXCEEDED":
      return { code: ResponseCode.MESSAGE_ILLEGAL, remark };
    case "SERVICE_NOT_AVAILABLE":
      return { code: ResponseCode.SERVICE_NOT_AVAILABLE, remark };
    default:
      return { code: ResponseCode.SYSTEM_ERROR, remark };
  }
}

const enc = new TextEncoder();

/** The check body: the half copy as stored, under its real topic and queue (as RocketMQ sends it). */
function checkBody(copy: DecodedRecord, props: Record<string, string>): Uint8Array {
  const topic = enc.encode(props[MessageConst.REAL_TOPIC] ?? copy.topic);
  const qid = Number(props[MessageConst.REAL_QID] ?? copy.queueId);
  const input = {
    topic: topic.length <= 127 ? topic : enc.encode(copy.topic),
    queueId: Number.isInteger(qid) ? qid : copy.queueId,
    flag: copy.flag,
    body: copy.body,
    properties: enc.encode(copy.properties),
    sysFlag: copy.sysFlag,
    bornTimestamp: copy.bornTimestamp,
    bornHost: copy.bornHost,
    storeHost: copy.storeHost,
    reconsumeTimes: copy.reconsumeTimes,
    preparedTransactionOffset: copy.preparedTransactionOffset,
  };
  const out = new Uint8Array(recordSize(input));
  encodeRecord(out, 0, input, copy.queueOffset, copy.physicalOffset, copy.storeTimestamp);
  return out;
}
