/**
 * PullConsumer (RocketMQ's lite pull consumer): the application drives consumption.
 * `subscribe(topic, expr)` lets the group share the topic's queues (rebalanced like a push
 * consumer); `assign(queues)` takes exactly those queues. `poll()` returns the next batch of
 * messages from the owned queues; `commit()` stores the offsets after everything polled so far
 * (done automatically every few seconds with `autoCommit`); `seek()` moves a queue's offset.
 */
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
import { MQClientError } from "./errors.ts";
import type { MessageExt } from "./message.ts";
import { mqKey, subscribeQueues } from "./route.ts";
import { MASTER_ID, type MessageQueue } from "../protocol/route.ts";
import { RETRY_GROUP_TOPIC_PREFIX } from "../protocol/topics.ts";

export interface PullConsumerOptions extends ClientInstanceOptions {
  group: string;
  model?: MessageModel;
  fromWhere?: FromWhere;
  pullBatchSize?: number;
  autoCommit?: boolean;
  autoCommitIntervalMs?: number;
  rebalanceIntervalMs?: number;
}

interface Owned {
  mq: MessageQueue;
  sub: Subscription;
  offset: number;
  suggestBrokerId: number;
}

export class PullConsumer {
  readonly #o: PullConsumerOptions;
  readonly #client: ClientInstance;
  readonly #model: MessageModel;
  readonly #offsets: OffsetStore;
  readonly #subs = new Map<string, Subscription>();
  readonly #owned = new Map<string, Owned>();
  #assigned: MessageQueue[] | null = null;
  #cursor = 0;
  #running = false;
  #timers: ReturnType<typeof setInterval>[] = [];

  constructor(o: PullConsumerOptions) {
    if (!o.group) throw new MQClientError("consumer group is required (option `group`)");
    this.#o = o;
    this.#model = o.model ?? "clustering";
    this.#client = new ClientInstance(o);
    this.#offsets = new OffsetStore(this.#client, o.group, this.#model);
  }

  /** TAG expression or `{ sql }` (SQL92; the broker needs enablePropertyFilter). */
  subscribe(topic: string, expression: SubscriptionExpression = "*"): void {
    if (this.#assigned) throw new MQClientError("use either subscribe() or assign(), not both");
    this.#subs.set(topic, parseExpression(topic, expression));
  }

  /** Takes exactly these queues (no group rebalancing). */
  assign(queues: MessageQueue[], expression: SubscriptionExpression = "*"): void {
    if (this.#subs.size > 0 && !this.#assigned) throw new MQClientError("use either subscribe() or assign(), not both");
    this.#assigned = queues;
    for (const q of queues) if (!this.#subs.has(q.topic)) this.#subs.set(q.topic, parseExpression(q.topic, expression));
    if (this.#running) void this.#rebalance();
  }

  /** The readable queues of a topic, from its route. */
  async fetchQueues(topic: string): Promise<MessageQueue[]> {
    const route = await this.#client.fetchRoute(topic);
    if (!route) throw new MQClientError(`topic ${topic} has no route`);
    return subscribeQueues(topic, route);
  }

  async start(): Promise<void> {
    if (this.#running) return;
    this.#client.registerConsumer(this.#o.group, {
      heartbeatData: () => heartbeatConsumerData(this.#o.group, this.#subs.values(), this.#model, this.#o.fromWhere ?? "last", "CONSUME_ACTIVELY"),
      onConsumerIdsChanged: () => void this.#rebalance(),
      topics: () => [...this.#subs.keys()],
    });
    this.#running = true;
    this.#client.start();
    await this.#client.refreshRoutes();
    try {
      await checkSubscriptionsInBrokers(this.#client, this.#o.group, this.#subs.values(), (t) => this.#client.cachedRoute(t));
    } catch (e) {
      await this.shutdown();
      throw e;
    }
    await this.#client.sendHeartbeatToAllBrokers();
    await this.#rebalance();
    this.#timers.push(setInterval(() => void this.#rebalance(), this.#o.rebalanceIntervalMs ?? 20_000));
    if (this.#o.autoCommit ?? true) this.#timers.push(setInterval(() => void this.commit(), this.#o.autoCommitIntervalMs ?? 5000));
  }

  assignment(): MessageQueue[] {
    return [...this.#owned.values()].map((o) => o.mq);
  }

  async #rebalance(): Promise<void> {
    if (!this.#running) return;
    try {
      const wanted: MessageQueue[] = [];
      if (this.#assigned) wanted.push(...this.#assigned);
      else for (const topic of this.#subs.keys()) wanted.push(...(await allocate(this.#client, this.#o.group, topic, this.#model)));
      const keys = new Set(wanted.map(mqKey));
      for (const [k, o] of this.#owned) {
        if (keys.has(k)) continue;
        this.#offsets.update(o.mq, o.offset);
        await this.#offsets.persist([o.mq]);
        this.#owned.delete(k);
      }
      for (const mq of wanted) {
        const k = mqKey(mq);
        if (this.#owned.has(k)) continue;
        const offset = await computeStartOffset(this.#client, this.#offsets, mq, this.#o.fromWhere ?? "last");
        // Rebalances can overlap (start, timer, NOTIFY_CONSUMER_IDS_CHANGED): one that got here
        // first may already own the queue and have polled from it; do not rewind it.
        if (this.#owned.has(k)) continue;
        this.#owned.set(k, { mq, sub: this.#subs.get(mq.topic) ?? parseExpression(mq.topic, "*"), offset, suggestBrokerId: MASTER_ID });
      }
    } catch (e) {
      this.#client.log.rateLimited("warn", "lite-rebalance", `rebalance failed: ${errText(e)}`);
    }
  }

  /**
   * The next messages from the owned queues (visited round-robin); waits up to `timeoutMs` for
   * any to arrive, then returns an empty array.
   */
  async poll(timeoutMs = 1000): Promise<MessageExt[]> {
    if (!this.#running) throw new MQClientError("call start() before poll()");
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const owned = [...this.#owned.values()];
      for (let i = 0; i < owned.length; i++) {
        const o = owned[(this.#cursor++ >>> 0) % owned.length]!;
        const r = await pullOnce(this.#client, this.#o.group, o.mq, o.sub, o.offset, {
          maxMsgNums: this.#o.pullBatchSize ?? 32,
          suspendMs: 0,
          commitOffset: 0,
          suggestBrokerId: o.suggestBrokerId,
        }).catch((e) => {
          this.#client.log.rateLimited("warn", "lite-pull", `pull from ${mqKey(o.mq)} failed: ${errText(e)}`);
          return null;
        });
        if (!r) continue;
        o.suggestBrokerId = r.suggestWhichBrokerId;
        o.offset = r.nextBeginOffset;
        if (r.messages.length > 0) {
          for (const m of r.messages)
            if (m.topic.startsWith(RETRY_GROUP_TOPIC_PREFIX) && m.properties.RETRY_TOPIC) m.topic = m.properties.RETRY_TOPIC;
          return r.messages;
        }
      }
      const left = deadline - Date.now();
      if (left <= 0) return [];
      await new Promise((res) => setTimeout(res, Math.min(left, owned.length === 0 ? 100 : 20)));
    }
  }

  /** Stores, on the brokers, the offsets after everything polled so far. */
  async commit(): Promise<void> {
    for (const o of this.#owned.values()) this.#offsets.update(o.mq, o.offset);
    await this.#offsets.persist();
  }

  /** Moves a queue's next poll to `offset`. */
  seek(mq: MessageQueue, offset: number): void {
    const o = this.#owned.get(mqKey(mq));
    if (!o) throw new MQClientError(`queue ${mqKey(mq)} is not assigned to this consumer`);
    o.offset = offset;
    this.#offsets.update(mq, offset, false);
  }

  /** The next offset poll() reads from a queue (-1 if not owned). */
  position(mq: MessageQueue): number {
    return this.#owned.get(mqKey(mq))?.offset ?? -1;
  }

  async shutdown(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    if (this.#o.autoCommit ?? true) await this.commit();
    await this.#client.shutdown();
  }
}
