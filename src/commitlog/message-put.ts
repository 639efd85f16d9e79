/**
 * The put path: a put (one message or a batch, all or nothing) is admitted (./write-admission.ts),
 * encoded and checked against the size limits, appended to the CommitLog, dispatched in the same
 * turn (./dispatch.ts), committed with the turn's other appends, and settled: the flush and
 * replication waits it asks for. The arrival listener hears of each message that reached a
 * ConsumeQueue when the put settles: after a SYNC_FLUSH or a slave's acknowledgement, as the send
 * path always woke parked pulls, and also when those waits fail (the messages are stored).
 */
import { AssertionError, assert } from "../common/assert.ts";
import { parseProperties, PROPERTIES_SIZE_MAX_BYTES, recordSize, TOPIC_SIZE_MAX_BYTES } from "../common/message-record.ts";
import { MessageConst } from "../protocol/message-const.ts";
import { SysFlag, transactionType } from "../protocol/sys-flag.ts";
import type { AppendResult, CommitLog, StoreRecordInput } from "./commit-log.ts";
import type { DiskGuard } from "./disk-guard.ts";
import type { Dispatcher } from "./dispatch.ts";
import type { MessageStoreOptions, PutMessageRequest, PutMessageResult } from "./store-types.ts";
import type { WriteAdmission } from "./write-admission.ts";

const enc = new TextEncoder();

export interface PutParts {
  /** The store's options object (reconfigure changes the limits in place). */
  options: Pick<
    MessageStoreOptions,
    "maxMessageSizeBytes" | "segmentBytes" | "storeHost" | "flushDiskType" | "syncFlushTimeoutMs" | "dir" | "messageArriving" | "replication"
  >;
  commitLog: CommitLog;
  dispatcher: Dispatcher;
  admission: WriteAdmission;
  guard: DiskGuard;
}

export class MessagePut {
  readonly #p: PutParts;
  readonly #topicCache = new Map<string, Uint8Array>();

  constructor(parts: PutParts) {
    this.#p = parts;
  }

  /** Stores messages contiguously (a batch); all or nothing. */
  async putMessages(reqs: readonly PutMessageRequest[]): Promise<PutMessageResult> {
    const listener = this.#p.options.messageArriving;
    if (listener === undefined) return this.#put(reqs, null);
    const codes: number[] = [];
    const result = await this.#put(reqs, codes);
    for (let i = 0; i < result.appended.length; i++) {
      const code = codes[i];
      // No code: a half message (no ConsumeQueue unit until it is committed).
      if (code !== undefined) listener.arriving(reqs[i]!.topic, reqs[i]!.queueId, result.appended[i]!.queueOffset, code);
    }
    return result;
  }

  /** putMessages without the listener; `codes[i]`: the tag code of request i's unit, when it got one. */
  async #put(reqs: readonly PutMessageRequest[], codes: number[] | null): Promise<PutMessageResult> {
    const p = this.#p;
    const refused = p.admission.refusal();
    if (refused) return { status: "SERVICE_NOT_AVAILABLE", remark: refused, appended: [] };
    const inputs: StoreRecordInput[] = [];
    const total = this.#recordInputs(reqs, inputs);
    if (typeof total !== "number") return total;
    let appended: AppendResult[];
    try {
      appended = p.commitLog.appendBatch(inputs, queueAssignment(reqs));
    } catch (e) {
      if (e instanceof AssertionError) return p.admission.haltedResult(e, "append");
      return { status: "UNKNOWN_ERROR", remark: e instanceof Error ? e.message : String(e), appended: [] };
    }
    const halted = this.#dispatchPut(reqs, appended, codes);
    if (halted) return halted;
    const last = appended.at(-1)!;
    p.dispatcher.reputOffset = last.physicalOffset + last.size;
    p.guard.appended(total);
    return this.#settle(reqs, appended, p.dispatcher.reputOffset);
  }

  /** Checks each request's sizes and encodes it into `inputs`; the records' total size, or the refusal. */
  #recordInputs(reqs: readonly PutMessageRequest[], inputs: StoreRecordInput[]): number | PutMessageResult {
    const o = this.#p.options;
    let total = 0;
    for (const r of reqs) {
      if (r.body.length > o.maxMessageSizeBytes) {
        return { status: "MESSAGE_ILLEGAL", remark: `message body is ${r.body.length} bytes, over the maximum ${o.maxMessageSizeBytes}`, appended: [] };
      }
      const topic = this.#topicBytes(r.topic);
      if (topic.length > TOPIC_SIZE_MAX_BYTES) return { status: "MESSAGE_ILLEGAL", remark: `topic is longer than ${TOPIC_SIZE_MAX_BYTES} bytes`, appended: [] };
      const properties = enc.encode(r.properties);
      if (properties.length > PROPERTIES_SIZE_MAX_BYTES) {
        return { status: "PROPERTIES_SIZE_EXCEEDED", remark: `properties are ${properties.length} bytes, over ${PROPERTIES_SIZE_MAX_BYTES}`, appended: [] };
      }
      const input: StoreRecordInput = {
        topicName: r.topic,
        topic,
        queueId: r.queueId,
        flag: r.flag,
        body: r.body,
        properties,
        sysFlag: r.sysFlag,
        bornTimestamp: r.bornTimestamp,
        bornHost: r.bornHost,
        storeHost: o.storeHost,
        reconsumeTimes: r.reconsumeTimes,
        preparedTransactionOffset: r.preparedTransactionOffset,
      };
      total += recordSize(input);
      inputs.push(input);
    }
    if (total + 8 > o.segmentBytes) {
      return { status: "MESSAGE_ILLEGAL", remark: `messages of ${total} bytes do not fit in a ${o.segmentBytes}-byte CommitLog segment`, appended: [] };
    }
    return total;
  }

  /**
   * The ConsumeQueue units and index entries of appended records (`codes[i]`: request i's tag code
   * when it got a unit). A failure halts the store: the result to answer, else null.
   */
  #dispatchPut(reqs: readonly PutMessageRequest[], appended: AppendResult[], codes: number[] | null): PutMessageResult | null {
    const dispatcher = this.#p.dispatcher;
    try {
      // One result per request, in request order: the send processor answers request i with
      // result i (msg ids, queue offset) and the records lie back to back in one segment.
      assert(appended.length === reqs.length, "a batch of {} requests got {} append results", reqs.length, appended.length);
      for (let i = 0; i < reqs.length; i++) {
        const r = reqs[i]!;
        const a = appended[i]!;
        if (i > 0) {
          const prevEnd = appended[i - 1]!.physicalOffset + appended[i - 1]!.size;
          assert(a.physicalOffset === prevEnd, "batch result {} at {} does not follow the one before, ending at {}", i, a.physicalOffset, prevEnd);
        }
        const known = r.propertiesParsed === true || (r.tags !== undefined && (r.keys !== undefined || r.uniqKey !== undefined));
        const props = known ? null : parseProperties(r.properties);
        const u = dispatcher.scratch;
        u.topic = r.topic;
        u.queueId = r.queueId;
        u.phyOffset = a.physicalOffset;
        u.size = a.size;
        u.queueOffset = a.queueOffset;
        u.storeTimestamp = a.storeTimestamp;
        u.sysFlag = r.sysFlag;
        u.tagsCode = dispatcher.tagsCode(r.topic, props, a.storeTimestamp, r.tags ?? props?.[MessageConst.TAGS]);
        u.keys = r.keys ?? props?.[MessageConst.KEYS];
        u.uniqKey = r.uniqKey ?? props?.[MessageConst.UNIQ_KEY];
        if (dispatcher.dispatch(u, "put") && codes !== null) codes[i] = u.tagsCode;
      }
      return null;
    } catch (e) {
      // The records are in the CommitLog but (some) not indexed. Stop taking writes; a restart
      // re-dispatches them from the CommitLog.
      return this.#p.admission.haltedResult(e, "dispatch");
    }
  }

  /** After the append: the commit, then the flush and replication waits the requests ask for (up to `end`). */
  async #settle(reqs: readonly PutMessageRequest[], appended: AppendResult[], end: number): Promise<PutMessageResult> {
    const { commitLog, options: o } = this.#p;
    // The records sit in the CommitLog's write-behind stage until this turn's commit (one pwrite
    // for every append of the turn); nothing is acknowledged before they are in the page cache.
    await commitLog.whenCommitted();
    const werr = commitLog.writeError;
    if (werr) {
      // Only when the disk filled between two looks (another process wrote it full): the staged
      // records were never acknowledged, and the write path stays stopped until a restart.
      const full = isNoSpace(werr);
      const what = full ? ` (the disk of ${o.dir} is full)` : "";
      const remark = `the CommitLog write failed${what}, store stopped taking writes until a restart: ${werr.message}`;
      return { status: full ? "SERVICE_NOT_AVAILABLE" : "UNKNOWN_ERROR", remark, appended: [] };
    }
    const replication = o.replication;
    replication?.appended();
    if (!reqs.every((r) => r.waitStoreMsgOK !== false)) return { status: "PUT_OK", appended };
    // Flush and replication waits run together; as in RocketMQ, a replication failure wins.
    const flushed = o.flushDiskType === "SYNC_FLUSH" ? commitLog.waitForFlush(end, o.syncFlushTimeoutMs) : undefined;
    const replicated = replication?.waitReplicas(end);
    if (flushed === undefined && replicated === undefined) return { status: "PUT_OK", appended };
    const [ok, repl] = await Promise.all([flushed ?? true, replicated ?? "OK"]);
    if (repl === "TIMEOUT") return { status: "FLUSH_SLAVE_TIMEOUT", appended };
    if (repl === "NO_SLAVE") return { status: "SLAVE_NOT_AVAILABLE", appended };
    if (!ok) return { status: "FLUSH_DISK_TIMEOUT", appended };
    return { status: "PUT_OK", appended };
  }

  /** A topic's UTF-8 bytes, cached: the same few topics are encoded on every put. */
  #topicBytes(topic: string): Uint8Array {
    let b = this.#topicCache.get(topic);
    if (b === undefined) {
      if (this.#topicCache.size >= 65536) this.#topicCache.clear();
      b = enc.encode(topic);
      this.#topicCache.set(topic, b);
    }
    return b;
  }
}

/**
 * Which requests get a queue offset: all (true, the common case, no allocation) unless a half
 * message is among them, which gets no ConsumeQueue unit until it is committed.
 */
function queueAssignment(reqs: readonly PutMessageRequest[]): boolean[] | boolean {
  for (const r of reqs) if (!takesUnit(r)) return reqs.map(takesUnit);
  return true;
}

function takesUnit(r: PutMessageRequest): boolean {
  const t = transactionType(r.sysFlag);
  return t === SysFlag.TRANSACTION_NOT_TYPE || t === SysFlag.TRANSACTION_COMMIT_TYPE;
}

/** An ENOSPC (or EDQUOT) from node:fs. */
function isNoSpace(e: Error): boolean {
  const code = (e as Error & { code?: unknown }).code;
  return code === "ENOSPC" || code === "EDQUOT" || /ENOSPC|no space left/i.test(e.message);
}
