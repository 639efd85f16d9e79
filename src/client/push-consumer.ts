/**
 * PushConsumer (RocketMQ's DefaultMQPushConsumer): a member of a consumer group that owns some
 * queues (rebalanced every `rebalanceIntervalMs` and whenever the broker says membership
 * changed), long-polls each owned queue, and hands messages to the handler.
 *
 *   concurrent: up to `consumeThreads` handlers run at once; a failed message (handler throws or
 *               returns "retry") is sent back to the broker (CONSUMER_SEND_MSG_BACK → %RETRY%
 *               with the next delay level, DLQ after maxReconsumeTimes); if that fails it is
 *               retried here after 5 s.
 *   orderly:    each queue is locked on its broker (LOCK_BATCH_MQ, renewed every 20 s) and its
 *               messages are handled one at a time, in order; a failure is retried in place
 *               after 1 s, and after maxReconsumeTimes the message goes to the DLQ.
 * The committed offset of a queue is the lowest offset still being handled (or the next pull
 * offset when none is), so a crash re-delivers at most what was in flight: at-least-once.
 */
import { assert } from "../common/assert.ts";
import { RequestCode, ResponseCode } from "../remoting/index.ts";
import { ClientInstance, errText, type ClientInstanceOptions } from "./client-instance.ts";
import {
  allocate,
  checkSubscriptionsInBrokers,
  computeStartOffset,
  heartbeatConsumerData,
  OffsetStore,
  parseExpression,
  pullOnce,
  type FromWhere,
  type MessageModel,
  type Subscription,
  type SubscriptionExpression,
} from "./consumer-core.ts";
import type { ConsumerAdminHooks, ConsumerRunningInfo, DirectConsumeResult, ProcessQueueInfo } from "./broker-requests.ts";
import { MQClientError } from "./errors.ts";
import type { MessageExt } from "./message.ts";
import { mqKey } from "./route.ts";
import { MASTER_ID, type MessageQueue } from "../protocol/route.ts";
import { RETRY_GROUP_TOPIC_PREFIX } from "../protocol/topics.ts";

export type ConsumeResult = void | "success" | "retry";
export type MessageHandler = (msg: MessageExt) => ConsumeResult | Promise<ConsumeResult>;

export interface PushConsumerOptions extends ClientInstanceOptions {
  group: string;
  model?: MessageModel;
  fromWhere?: FromWhere;
  orderly?: boolean;
  /** Handlers running at once (concurrent mode). Default 16. */
  consumeThreads?: number;
  pullBatchSize?: number;
  /** Flow control: stop pulling a queue holding this many unconsumed messages. Default 1000. */
  pullThresholdForQueue?: number;
  /** Flow control by bytes per queue. Default 100 MiB. */
  pullThresholdSizeForQueueBytes?: number;
  maxReconsumeTimes?: number;
  rebalanceIntervalMs?: number;
  persistOffsetIntervalMs?: number;
  suspendTimeoutMs?: number;
}

class ProcessQueue {
  readonly mq: MessageQueue;
  readonly sub: Subscription;
  nextOffset: number;
  /** Pulled, not yet consumed, by queue offset (ascending insertion order). */
  readonly inFlight = new Map<number, MessageExt>();
  bytes = 0;
  dropped = false;
  suggestBrokerId = MASTER_ID;
  lockedUntil = 0;
  /** Orderly: messages waiting their turn. */
  readonly orderlyQueue: MessageExt[] = [];
  orderlyBusy = false;

  constructor(mq: MessageQueue, sub: Subscription, offset: number) {
    this.mq = mq;
    this.sub = sub;
    this.nextOffset = offset;
  }

  /** The offset safe to commit: lowest in-flight, else where the next pull starts. */
  committable(): number {
    for (const off of this.inFlight.keys()) return off;
    return this.nextOffset;
  }
}

const LOCK_RENEW_MS = 20_000;
const LOCK_TTL_MS = 30_000;
/** Orderly: how long a rebalance waits for the message in hand on a queue it gives up. */
const ORDERLY_DROP_WAIT_MS = 1000;

export class PushConsumer {
  readonly #o: PushConsumerOptions;
  readonly #client: ClientInstance;
  readonly #model: MessageModel;
  readonly #fromWhere: FromWhere;
  readonly #subs = new Map<string, { sub: Subscription; handler: MessageHandler }>();
  readonly #queues = new Map<string, ProcessQueue>();
  /** The keys of #queues by topic: a rebalance pass looks at one topic's queues, not all of them. */
  readonly #queuesByTopic = new Map<string, Set<string>>();
  readonly #offsets: OffsetStore;
  #running = false;
  #timers: ReturnType<typeof setInterval>[] = [];
  #rebalancing: Promise<void> | null = null;
  #rebalanceAgain = false;
  #permits: number;
  readonly #waiters: (() => void)[] = [];
  #startedAt = 0;

  constructor(o: PushConsumerOptions) {
    if (!o.group) throw new MQClientError("consumer group is required (option `group`)");
    this.#o = o;
    this.#model = o.model ?? "clustering";
    this.#fromWhere = o.fromWhere ?? "last";
    this.#client = new ClientInstance(o);
    this.#offsets = new OffsetStore(this.#client, o.group, this.#model);
    this.#permits = o.orderly ? Number.MAX_SAFE_INTEGER : (o.consumeThreads ?? 16);
  }

  get clientId(): string {
    return this.#client.clientId;
  }

  /**
   * Subscribes `topic` with a TAG expression (`*`, `TagA || TagB`) or `{ sql: "a > 5" }` (SQL92 on
   * message properties; the broker needs enablePropertyFilter). Call before start().
   */
  subscribe(topic: string, expression: SubscriptionExpression, handler: MessageHandler): void {
    if (this.#running) throw new MQClientError("subscribe before start()");
    this.#subs.set(topic, { sub: parseExpression(topic, expression), handler });
  }

  /** Queues this member consumes right now (for tests and monitoring). */
  assignedQueues(): MessageQueue[] {
    return [...this.#queues.values()].map((p) => p.mq);
  }

  async start(): Promise<void> {
    if (this.#running) return;
    if (this.#subs.size === 0) throw new MQClientError("subscribe to at least one topic before start()");
    // Routes first, before anything runs: a start that fails leaves no timers, registration or
    // connections behind (a Node process can still exit), and start() can simply be called again.
    const topics = [...this.#subs.keys()];
    try {
      const routes = await Promise.all(topics.map((t) => this.#client.fetchRoute(t)));
      if (routes.every((r) => r === null)) {
        throw new MQClientError(`no route for ${topics.join(", ")}: create the topic first`, ResponseCode.TOPIC_NOT_EXIST);
      }
      const routeOf = new Map(topics.map((t, i) => [t, routes[i]]));
      await checkSubscriptionsInBrokers(
        this.#client,
        this.#o.group,
        [...this.#subs.values()].map((s) => s.sub),
        (t) => routeOf.get(t),
      );
    } catch (e) {
      await this.#client.disconnectAll();
      throw e;
    }
    if (this.#running) return; // a concurrent start() got there first
    if (this.#model === "clustering") {
      const retry = RETRY_GROUP_TOPIC_PREFIX + this.#o.group;
      const first = [...this.#subs.values()][0]!;
      this.#subs.set(retry, { sub: parseExpression(retry, "*"), handler: first.handler });
    }
    this.#client.registerConsumer(this.#o.group, {
      heartbeatData: () =>
        heartbeatConsumerData(
          this.#o.group,
          [...this.#subs.values()].map((s) => s.sub),
          this.#model,
          this.#fromWhere,
          "CONSUME_PASSIVELY",
        ),
      onConsumerIdsChanged: () => this.#triggerRebalance(),
      topics: () => [...this.#subs.keys()],
      admin: this.#adminHooks(),
    });
    this.#startedAt = Date.now();
    this.#running = true;
    this.#client.start();
    await this.#client.refreshRoutes();
    await this.#client.sendHeartbeatToAllBrokers();
    await this.#rebalance();
    this.#timers.push(
      setInterval(() => this.#triggerRebalance(), this.#o.rebalanceIntervalMs ?? 20_000),
      setInterval(() => void this.#persistOffsets(), this.#o.persistOffsetIntervalMs ?? 5000),
    );
    if (this.#o.orderly) this.#timers.push(setInterval(() => void this.#lockAll(), LOCK_RENEW_MS));
  }

  async shutdown(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await this.#rebalancing;
    for (const pq of this.#queues.values()) pq.dropped = true;
    // Orderly: as in a rebalance, the message in hand finishes first and a queue still busy stays locked.
    if (this.#o.orderly) await waitIdle([...this.#queues.values()], ORDERLY_DROP_WAIT_MS);
    await this.#persistOffsets();
    if (this.#o.orderly) await this.#unlock([...this.#queues.values()].filter((p) => !p.orderlyBusy).map((p) => p.mq));
    this.#queues.clear();
    this.#queuesByTopic.clear();
    await this.#client.shutdown();
  }

  // -------------------------------------------------------------- rebalance

  #triggerRebalance(): void {
    if (!this.#running) return;
    void this.#rebalance();
  }

  /**
   * One rebalance at a time: a call while one runs asks it for another pass and waits for it.
   * (Two interleaved passes would both see a newly allocated queue as missing and start two
   * pull loops for it: every message of that queue would be handled twice.)
   */
  #rebalance(): Promise<void> {
    if (this.#rebalancing) {
      this.#rebalanceAgain = true;
      return this.#rebalancing;
    }
    this.#rebalancing = (async () => {
      do {
        this.#rebalanceAgain = false;
        // Topics are independent (each touches only its own queues): a few at a time, with the
        // group's member list asked once per broker for the whole pass. Shutting down stops the
        // pass at the next topic (a pass over 1,250 topics one by one took tens of seconds).
        const idsByBroker = new Map<string, Promise<string[] | null>>();
        await forEachLimit([...this.#subs], REBALANCE_TOPIC_CONCURRENCY, async ([topic, { sub }]) => {
          if (!this.#running) return;
          try {
            const mine = await allocate(this.#client, this.#o.group, topic, this.#model, idsByBroker);
            await this.#applyAllocation(topic, sub, mine);
          } catch (e) {
            this.#client.log.rateLimited("warn", `rebalance-${topic}`, `rebalance of ${topic} failed: ${errText(e)}`);
          }
        });
      } while (this.#rebalanceAgain && this.#running);
    })().finally(() => {
      this.#rebalancing = null;
    });
    return this.#rebalancing;
  }

  async #applyAllocation(topic: string, sub: Subscription, mine: MessageQueue[]): Promise<void> {
    const wanted = new Map(mine.map((mq) => [mqKey(mq), mq]));
    const dropped: ProcessQueue[] = [];
    const keys = this.#queuesByTopic.get(topic);
    for (const k of keys ?? []) {
      const pq = this.#queues.get(k);
      if (!pq || wanted.has(k)) continue;
      pq.dropped = true;
      this.#queues.delete(k);
      keys!.delete(k);
      dropped.push(pq);
    }
    if (dropped.length > 0) {
      // Orderly: let the message in hand finish first (Java tries its consume lock for 1 s), so the
      // offset committed below is right after it. A queue still busy stays locked: the next owner
      // cannot take it (and so cannot handle that message at the same time) until the lock expires.
      if (this.#o.orderly) await waitIdle(dropped, ORDERLY_DROP_WAIT_MS);
      for (const pq of dropped) this.#offsets.update(pq.mq, pq.committable());
      const mqs = dropped.map((pq) => pq.mq);
      await this.#offsets.persist(mqs);
      for (const mq of mqs) this.#offsets.remove(mq);
      if (this.#o.orderly) await this.#unlock(dropped.filter((pq) => !pq.orderlyBusy).map((pq) => pq.mq));
    }
    // New queues start in parallel (bounded): with thousands of queues, one offset query after
    // the other would keep the last queue waiting for thousands of round trips.
    const added = [...wanted].filter(([k]) => !this.#queues.has(k));
    await forEachLimit(added, START_CONCURRENCY, async ([k, mq]) => {
      if (this.#queues.has(k) || !this.#running) return;
      // Orderly: lock before reading the offset. The previous owner commits before it unlocks, so
      // only then is the stored offset current. Not locked yet: the next rebalance tries again.
      const lockedAt = Date.now();
      if (this.#o.orderly && !(await this.#lock([mq])).has(k)) return;
      const offset = await computeStartOffset(this.#client, this.#offsets, mq, this.#fromWhere);
      if (this.#queues.has(k) || !this.#running) return;
      const pq = new ProcessQueue(mq, sub, offset);
      if (this.#o.orderly) pq.lockedUntil = lockedAt + LOCK_TTL_MS;
      this.#queues.set(k, pq);
      let byTopic = this.#queuesByTopic.get(mq.topic);
      if (!byTopic) this.#queuesByTopic.set(mq.topic, (byTopic = new Set()));
      byTopic.add(k);
      void this.#pullLoop(pq);
    });
  }

  // -------------------------------------------------------------- pulling

  async #pullLoop(pq: ProcessQueue): Promise<void> {
    const o = this.#o;
    const maxCount = o.pullThresholdForQueue ?? 1000;
    const maxBytes = o.pullThresholdSizeForQueueBytes ?? 100 * 1024 * 1024;
    while (this.#running && !pq.dropped) {
      if (pq.inFlight.size >= maxCount || pq.bytes >= maxBytes) {
        await sleep(50);
        continue;
      }
      if (o.orderly && pq.lockedUntil < Date.now()) {
        await this.#lock([pq.mq]);
        if (pq.lockedUntil < Date.now()) {
          await sleep(1000);
          continue;
        }
      }
      try {
        const r = await pullOnce(this.#client, o.group, pq.mq, pq.sub, pq.nextOffset, {
          maxMsgNums: o.pullBatchSize ?? 32,
          suspendMs: o.suspendTimeoutMs ?? 15_000,
          commitOffset: this.#model === "clustering" ? this.#offsets.current(pq.mq) : 0,
          suggestBrokerId: pq.suggestBrokerId,
        });
        if (pq.dropped) return;
        pq.suggestBrokerId = r.suggestWhichBrokerId;
        if (r.status === "OFFSET_ILLEGAL") {
          this.#client.log.warn(`offset ${pq.nextOffset} of ${mqKey(pq.mq)} is out of range; moving to ${r.nextBeginOffset}`);
          pq.nextOffset = r.nextBeginOffset;
          this.#offsets.update(pq.mq, r.nextBeginOffset, false);
          continue;
        }
        pq.nextOffset = r.nextBeginOffset;
        if (r.messages.length > 0) this.#dispatch(pq, r.messages);
        else if (pq.inFlight.size === 0) this.#offsets.update(pq.mq, pq.nextOffset);
      } catch (e) {
        if (!this.#running || pq.dropped) return;
        this.#client.log.rateLimited("warn", `pull-${mqKey(pq.mq)}`, `pull from ${mqKey(pq.mq)} failed: ${errText(e)}`);
        this.#client.brokerFailed(pq.mq.brokerName);
        // The broker it was told to read from (a slave) may be the one that is gone: the master next.
        pq.suggestBrokerId = MASTER_ID;
        await sleep(1000);
      }
    }
  }

  #dispatch(pq: ProcessQueue, msgs: MessageExt[]): void {
    for (const m of msgs) {
      if (m.topic.startsWith(RETRY_GROUP_TOPIC_PREFIX) && m.properties.RETRY_TOPIC) m.topic = m.properties.RETRY_TOPIC;
      pq.inFlight.set(m.queueOffset, m);
      pq.bytes += m.body.length;
    }
    if (this.#o.orderly) {
      pq.orderlyQueue.push(...msgs);
      void this.#consumeOrderly(pq);
    } else {
      for (const m of msgs) this.#consumeConcurrently(pq, m);
    }
  }

  // ------------------------------------------------------ broker-initiated requests

  /** What the client instance calls for RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_STATUS_FROM_CLIENT, … (broker-requests.ts). */
  #adminHooks(): ConsumerAdminHooks {
    return {
      resetOffsets: (offsets) => void this.#resetOffsets(offsets),
      offsetsOf: (topic) => {
        const out: [MessageQueue, number][] = [];
        for (const k of this.#queuesByTopic.get(topic) ?? []) {
          const pq = this.#queues.get(k);
          if (pq) out.push([pq.mq, this.#offsets.current(pq.mq)]);
        }
        return out;
      },
      runningInfo: () => this.#runningInfo(),
      consumeDirectly: async (msg) => {
        const h = this.#handlerFor(msg);
        if (!h) return { result: "CR_RETURN_NULL", remark: `no handler for topic ${msg.topic}` };
        try {
          const r = await h(msg);
          return { result: (r === "retry" ? "CR_LATER" : "CR_SUCCESS") satisfies DirectConsumeResult };
        } catch (e) {
          return { result: "CR_THROW_EXCEPTION", remark: errText(e) };
        }
      },
    };
  }

  /**
   * Java's MQClientInstance.resetOffset: the queues named stop (their pulls and in-flight
   * messages no longer move offsets), the new offsets are stored on the broker, and the next
   * rebalance takes the queues again from there.
   */
  async #resetOffsets(offsets: [MessageQueue, number][]): Promise<void> {
    const mine = offsets.filter(([mq]) => this.#subs.has(mq.topic));
    if (!this.#running || mine.length === 0) return;
    for (const [mq] of mine) {
      const k = mqKey(mq);
      const pq = this.#queues.get(k);
      if (!pq) continue;
      pq.dropped = true;
      this.#queues.delete(k);
      this.#queuesByTopic.get(mq.topic)?.delete(k);
    }
    for (const [mq, offset] of mine) this.#offsets.update(mq, offset, false);
    if (this.#model === "clustering") {
      await this.#offsets.persist(mine.map(([mq]) => mq));
      for (const [mq] of mine) this.#offsets.remove(mq);
    }
    this.#client.log.info(`offsets of ${this.#o.group} reset by the broker: ${mine.map(([mq, o]) => `${mqKey(mq)}=${o}`).join(", ")}`);
    this.#triggerRebalance();
  }

  #runningInfo(): ConsumerRunningInfo {
    const now = Date.now();
    const mqTable: [MessageQueue, ProcessQueueInfo][] = [...this.#queues.values()].map((pq) => {
      const cached = [...pq.inFlight.keys()];
      return [
        pq.mq,
        {
          cachedMsgCount: pq.inFlight.size,
          cachedMsgMaxOffset: cached.length > 0 ? Math.max(...cached) : 0,
          cachedMsgMinOffset: cached.length > 0 ? Math.min(...cached) : 0,
          cachedMsgSizeInMiB: Math.floor(pq.bytes / (1024 * 1024)),
          commitOffset: this.#offsets.current(pq.mq),
          droped: pq.dropped,
          lastConsumeTimestamp: 0,
          lastLockTimestamp: 0,
          lastPullTimestamp: 0,
          locked: pq.lockedUntil > now,
          transactionMsgCount: 0,
          transactionMsgMaxOffset: 0,
          transactionMsgMinOffset: 0,
          tryUnlockTimes: 0,
        },
      ];
    });
    const subs = [...this.#subs.values()].map((s) => s.sub);
    const hb = heartbeatConsumerData(this.#o.group, subs, this.#model, this.#fromWhere, "CONSUME_PASSIVELY");
    // Rates are not sampled by this client: the status rows are there, with zeros.
    const statusTable: ConsumerRunningInfo["statusTable"] = {};
    for (const topic of this.#subs.keys()) {
      statusTable[topic] = { consumeFailedMsgs: 0, consumeFailedTPS: 0, consumeOKTPS: 0, consumeRT: 0, pullRT: 0, pullTPS: 0 };
    }
    return {
      properties: {
        PROP_CONSUME_TYPE: "CONSUME_PASSIVELY",
        PROP_CONSUMEORDERLY: String(this.#o.orderly === true),
        PROP_THREADPOOL_CORE_SIZE: String(this.#o.orderly ? 1 : (this.#o.consumeThreads ?? 16)),
        PROP_CONSUMER_START_TIMESTAMP: String(this.#startedAt),
        consumerGroup: this.#o.group,
        messageModel: hb.messageModel,
        consumeFromWhere: hb.consumeFromWhere,
      },
      subscriptionSet: hb.subscriptionDataSet,
      mqTable,
      statusTable,
    };
  }

  #handlerFor(msg: MessageExt): MessageHandler | undefined {
    return this.#subs.get(msg.topic)?.handler;
  }

  async #runHandler(msg: MessageExt): Promise<boolean> {
    const h = this.#handlerFor(msg);
    if (!h) return true;
    let r: ConsumeResult | Promise<ConsumeResult>;
    try {
      r = h(msg);
    } catch (e) {
      return this.#failed(msg, e);
    }
    return this.#outcome(msg, r);
  }

  /** Whether a handler's result (or the promise of one) means consumed. */
  async #outcome(msg: MessageExt, r: ConsumeResult | Promise<ConsumeResult>): Promise<boolean> {
    try {
      return (await r) !== "retry";
    } catch (e) {
      return this.#failed(msg, e);
    }
  }

  #failed(msg: MessageExt, e: unknown): false {
    this.#client.log.rateLimited("warn", "handler", `handler failed for ${msg.msgId}: ${errText(e)}`);
    return false;
  }

  async #acquire(): Promise<void> {
    while (this.#permits <= 0) await new Promise<void>((r) => this.#waiters.push(r));
    this.#permits--;
  }

  #release(): void {
    this.#permits++;
    this.#waiters.shift()?.();
  }

  /**
   * Runs the handler at once when a permit is free; a handler that returns synchronously and
   * succeeds is finished right here, with no promise (the common case of a fast handler: most of
   * a drain's client CPU was this bookkeeping). Anything else continues in #consumeSlow.
   */
  #consumeConcurrently(pq: ProcessQueue, msg: MessageExt): void {
    if (this.#permits <= 0 || pq.dropped) {
      void this.#consumeSlow(pq, msg);
      return;
    }
    this.#permits--;
    const h = this.#handlerFor(msg);
    let r: ConsumeResult | Promise<ConsumeResult>;
    try {
      r = h ? h(msg) : undefined;
    } catch (e) {
      this.#failed(msg, e);
      void this.#retryHeld(pq, msg);
      return;
    }
    if (!isThenable(r) && r !== "retry") {
      this.#done(pq, msg);
      this.#release();
      return;
    }
    void this.#finishHeld(pq, msg, r);
  }

  /** The rest of a fast-path handler call that returned a promise or "retry" (the permit is held). */
  async #finishHeld(pq: ProcessQueue, msg: MessageExt, r: ConsumeResult | Promise<ConsumeResult>): Promise<void> {
    if (await this.#outcome(msg, r)) {
      this.#done(pq, msg);
      this.#release();
    } else await this.#retryHeld(pq, msg);
  }

  /** A failed first attempt, permit held: the retry loop, then the permit goes back. */
  async #retryHeld(pq: ProcessQueue, msg: MessageExt): Promise<void> {
    try {
      await this.#afterFailure(pq, msg);
    } finally {
      this.#release();
    }
  }

  /** After a failed attempt: send back (or drop, broadcasting), else retry locally until done. */
  async #afterFailure(pq: ProcessQueue, msg: MessageExt): Promise<void> {
    for (;;) {
      if (pq.dropped) return;
      // Broadcasting has no shared retry topic (no member reads %RETRY%): like Java, drop it.
      if (this.#model === "broadcasting") {
        this.#client.log.rateLimited("warn", "bcast-retry", `broadcast message ${msg.msgId} failed and is not retried`);
        break;
      }
      if (await this.#sendBack(msg, 0)) break;
      await sleep(5000);
      if (pq.dropped) return;
      if (await this.#runHandler(msg)) break;
    }
    this.#done(pq, msg);
  }

  /** No permit free (or the queue dropped): wait for one, then the same attempt and retry loop. */
  async #consumeSlow(pq: ProcessQueue, msg: MessageExt): Promise<void> {
    await this.#acquire();
    try {
      if (pq.dropped) return;
      if (await this.#runHandler(msg)) this.#done(pq, msg);
      else await this.#afterFailure(pq, msg);
    } finally {
      this.#release();
    }
  }

  async #consumeOrderly(pq: ProcessQueue): Promise<void> {
    if (pq.orderlyBusy) return;
    pq.orderlyBusy = true;
    try {
      while (pq.orderlyQueue.length > 0 && !pq.dropped && this.#running) {
        const msg = pq.orderlyQueue[0]!;
        if (await this.#runHandler(msg)) {
          pq.orderlyQueue.shift();
          this.#done(pq, msg);
          continue;
        }
        msg.reconsumeTimes++;
        if (msg.reconsumeTimes >= (this.#o.maxReconsumeTimes ?? 16) && (await this.#sendBack(msg, -1))) {
          pq.orderlyQueue.shift();
          this.#done(pq, msg);
          continue;
        }
        await sleep(1000);
      }
    } finally {
      pq.orderlyBusy = false;
    }
  }

  #done(pq: ProcessQueue, msg: MessageExt): void {
    if (pq.inFlight.delete(msg.queueOffset)) pq.bytes -= msg.body.length;
    // Each deletion takes back the bytes of one message added in #dispatch: the flow control's
    // byte count never goes below zero (it would let pulls run past pullThresholdSizeForQueueBytes).
    assert(pq.bytes >= 0, "process queue of {} holds {} bytes", pq.mq.topic, pq.bytes);
    if (!pq.dropped) this.#offsets.update(pq.mq, pq.committable());
  }

  /** CONSUMER_SEND_MSG_BACK to the queue's master; delayLevel -1 sends straight to the DLQ. */
  async #sendBack(msg: MessageExt, delayLevel: number): Promise<boolean> {
    const addr = this.#client.brokerAddr(msg.brokerName, MASTER_ID);
    if (!addr) return false;
    try {
      const res = await this.#client.invokeBroker(addr, RequestCode.CONSUMER_SEND_MSG_BACK, {
        offset: String(msg.commitLogOffset),
        group: this.#o.group,
        delayLevel: String(delayLevel),
        originMsgId: msg.msgId,
        originTopic: msg.topic,
        unitMode: "false",
        maxReconsumeTimes: String(this.#o.maxReconsumeTimes ?? 16),
      });
      return res.code === ResponseCode.SUCCESS;
    } catch (e) {
      this.#client.log.rateLimited("warn", "sendback", `send back of ${msg.msgId} failed: ${errText(e)}`);
      return false;
    }
  }

  async #persistOffsets(): Promise<void> {
    for (const pq of this.#queues.values()) this.#offsets.update(pq.mq, pq.committable());
    await this.#offsets.persist();
  }

  // -------------------------------------------------------------- orderly locks

  async #lockAll(): Promise<void> {
    await this.#lock([...this.#queues.values()].map((p) => p.mq));
  }

  /** LOCK_BATCH_MQ on each queue's master; returns the keys of the queues now locked. */
  async #lock(mqs: MessageQueue[]): Promise<Set<string>> {
    const ok = new Set<string>();
    for (const [brokerName, list] of groupByBroker(mqs)) {
      const addr = this.#client.brokerAddr(brokerName, MASTER_ID);
      if (!addr) continue;
      try {
        const body = new TextEncoder().encode(JSON.stringify({ consumerGroup: this.#o.group, clientId: this.#client.clientId, mqSet: list }));
        const res = await this.#client.invokeBroker(addr, RequestCode.LOCK_BATCH_MQ, undefined, body);
        if (res.code !== ResponseCode.SUCCESS || !res.body) continue;
        const locked = (JSON.parse(new TextDecoder().decode(res.body)) as { lockOKMQSet?: MessageQueue[] }).lockOKMQSet ?? [];
        const until = Date.now() + LOCK_TTL_MS;
        for (const mq of locked) {
          ok.add(mqKey(mq));
          const pq = this.#queues.get(mqKey(mq));
          if (pq) pq.lockedUntil = until;
        }
      } catch (e) {
        this.#client.log.rateLimited("warn", "lock", `locking queues on ${brokerName} failed: ${errText(e)}`);
      }
    }
    return ok;
  }

  async #unlock(mqs: MessageQueue[]): Promise<void> {
    for (const [brokerName, list] of groupByBroker(mqs)) {
      const addr = this.#client.brokerAddr(brokerName, MASTER_ID);
      if (!addr) continue;
      const body = new TextEncoder().encode(JSON.stringify({ consumerGroup: this.#o.group, clientId: this.#client.clientId, mqSet: list }));
      await this.#client.invokeBroker(addr, RequestCode.UNLOCK_BATCH_MQ, undefined, body).catch(() => {});
    }
  }
}

const START_CONCURRENCY = 32;
/** Topics allocated and started at once in one rebalance pass. */
const REBALANCE_TOPIC_CONCURRENCY = 16;

/** Runs `fn` over `items` with at most `limit` calls in flight; rejects with the first error. */
async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function groupByBroker(mqs: MessageQueue[]): Map<string, MessageQueue[]> {
  const m = new Map<string, MessageQueue[]>();
  for (const mq of mqs) {
    let l = m.get(mq.brokerName);
    if (!l) m.set(mq.brokerName, (l = []));
    l.push(mq);
  }
  return m;
}

/** Waits until none of `pqs` is handling a message (orderly), at most `ms`. */
async function waitIdle(pqs: ProcessQueue[], ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (pqs.some((pq) => pq.orderlyBusy) && Date.now() < deadline) await sleep(10);
}

/** setTimeout as a promise (works on Node and Bun). */
function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A promise or any thenable (a handler may return either). */
function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === "object" && v !== null && typeof (v as { then?: unknown }).then === "function";
}
