/**
 * What the push and pull consumers share: subscriptions (TAG expressions), the offset store
 * (remote on the broker for clustering, in memory for broadcasting), the pull request itself,
 * and rebalancing (average allocation over the sorted group members and queues).
 */
import { javaStringHashCode } from "../common/message-record.ts";
import { jsonBytes } from "../common/json.ts";
import { RequestCode, ResponseCode } from "../remoting/index.ts";
import { errText, type ClientInstance, type HeartbeatConsumerData } from "./client-instance.ts";
import { MQBrokerError, MQClientError } from "./errors.ts";
import { decodeMessages, type MessageExt } from "./message.ts";
import { allocateAveragely, mqKey, subscribeQueues } from "./route.ts";
import { MASTER_ID, type MessageQueue, type TopicRouteData } from "../protocol/route.ts";
import { PullSysFlag } from "../protocol/pull-sys-flag.ts";
import { RETRY_GROUP_TOPIC_PREFIX } from "../protocol/topics.ts";

export type FromWhere = "last" | "first" | { timestamp: number };
export type MessageModel = "clustering" | "broadcasting";

/**
 * What a consumer subscribes to: a TAG expression (`*`, `TagA || TagB`), or `{ sql }`, a SQL92
 * selector on message properties (RocketMQ's MessageSelector.bySql; the broker must run with
 * enablePropertyFilter, or start() fails with its reason).
 */
export type SubscriptionExpression = string | { sql: string };

export interface Subscription {
  topic: string;
  expression: string;
  /** TAG: the tags to keep (empty = all). */
  tags: Set<string>;
  subVersion: number;
  type: "TAG" | "SQL92";
}

export function parseExpression(topic: string, expression: SubscriptionExpression): Subscription {
  if (typeof expression !== "string") {
    const sql = expression.sql.trim();
    if (sql === "") throw new MQClientError("a SQL92 subscription needs an expression");
    return { topic, expression: sql, tags: new Set(), subVersion: Date.now(), type: "SQL92" };
  }
  const e = expression.trim();
  const tags =
    e === "" || e === "*"
      ? new Set<string>()
      : new Set(
          e
            .split("||")
            .map((t) => t.trim())
            .filter((t) => t.length > 0),
        );
  return { topic, expression: tags.size === 0 ? "*" : e, tags, subVersion: Date.now(), type: "TAG" };
}

/**
 * Java's checkClientInBroker: a SQL92 subscription is shown to every master of its topic
 * (CHECK_CLIENT_CONFIG) before the consumer starts, so a broker without enablePropertyFilter,
 * or an expression it cannot compile, fails start() with the broker's reason instead of every
 * pull failing later. TAG subscriptions need no check.
 */
export async function checkSubscriptionsInBrokers(
  client: ClientInstance,
  group: string,
  subs: Iterable<Subscription>,
  routeOf: (topic: string) => TopicRouteData | null | undefined,
): Promise<void> {
  const checks: Promise<void>[] = [];
  for (const s of subs) {
    if (s.type === "TAG") continue;
    for (const b of routeOf(s.topic)?.brokerDatas ?? []) {
      const addr = b.brokerAddrs[String(MASTER_ID)];
      if (!addr) continue;
      const body = jsonBytes({
        clientId: client.clientId,
        group,
        subscriptionData: { topic: s.topic, subString: s.expression, expressionType: s.type, subVersion: s.subVersion, classFilterMode: false },
      });
      checks.push(
        client.invokeBroker(addr, RequestCode.CHECK_CLIENT_CONFIG, {}, body).then((res) => {
          if (res.code !== ResponseCode.SUCCESS) throw new MQBrokerError(res.code, res.remark, addr);
        }),
      );
    }
  }
  await Promise.all(checks);
}

export function matchesTags(sub: Subscription, tags: string | undefined): boolean {
  return sub.tags.size === 0 || (tags !== undefined && sub.tags.has(tags));
}

export interface PullOutcome {
  status: "FOUND" | "NO_NEW_MSG" | "NO_MATCHED_MSG" | "OFFSET_ILLEGAL";
  nextBeginOffset: number;
  minOffset: number;
  maxOffset: number;
  suggestWhichBrokerId: number;
  messages: MessageExt[];
}

/** One PULL_MESSAGE round trip, decoded. Non-pull codes throw MQBrokerError. */
export async function pullOnce(
  client: ClientInstance,
  group: string,
  mq: MessageQueue,
  sub: Subscription,
  offset: number,
  o: { maxMsgNums: number; suspendMs: number; commitOffset: number; suggestBrokerId: number },
): Promise<PullOutcome> {
  const target = client.brokerAddrForRead(mq.brokerName, o.suggestBrokerId);
  if (!target) throw new MQClientError(`broker ${mq.brokerName} is not in the route of ${mq.topic}`);
  let flag = PullSysFlag.SUBSCRIPTION;
  if (o.suspendMs > 0) flag |= PullSysFlag.SUSPEND;
  if (o.commitOffset > 0 && target.brokerId === MASTER_ID) flag |= PullSysFlag.COMMIT_OFFSET;
  const res = await client.invokeBroker(
    target.addr,
    RequestCode.PULL_MESSAGE,
    {
      consumerGroup: group,
      topic: mq.topic,
      queueId: String(mq.queueId),
      queueOffset: String(offset),
      maxMsgNums: String(o.maxMsgNums),
      sysFlag: String(flag),
      commitOffset: String(Math.max(0, o.commitOffset)),
      suspendTimeoutMillis: String(o.suspendMs),
      subscription: sub.expression,
      subVersion: String(sub.subVersion),
      expressionType: sub.type,
    },
    undefined,
    o.suspendMs + client.requestTimeoutMs + 2000,
  );
  const ext = res.extFields ?? {};
  const base = {
    nextBeginOffset: Number(ext.nextBeginOffset ?? offset),
    minOffset: Number(ext.minOffset ?? 0),
    maxOffset: Number(ext.maxOffset ?? 0),
    suggestWhichBrokerId: Number(ext.suggestWhichBrokerId ?? MASTER_ID),
    messages: [] as MessageExt[],
  };
  switch (res.code) {
    case ResponseCode.SUCCESS: {
      const all = res.body ? decodeMessages(res.body, mq.brokerName) : [];
      // The broker filters by tag hash only; hashes collide, so check the tag text too.
      return { ...base, status: "FOUND", messages: all.filter((m) => matchesTags(sub, m.tags)) };
    }
    case ResponseCode.PULL_NOT_FOUND:
      return { ...base, status: "NO_NEW_MSG" };
    case ResponseCode.PULL_RETRY_IMMEDIATELY:
      return { ...base, status: "NO_MATCHED_MSG" };
    case ResponseCode.PULL_OFFSET_MOVED:
      return { ...base, status: "OFFSET_ILLEGAL" };
    default:
      throw new MQBrokerError(res.code, res.remark, target.addr);
  }
}

/**
 * Consumer offsets. Clustering: kept on the queue's master (QUERY/UPDATE_CONSUMER_OFFSET),
 * cached here and pushed every few seconds. Broadcasting: every member has its own, in memory.
 */
export class OffsetStore {
  readonly #client: ClientInstance;
  readonly #group: string;
  readonly #model: MessageModel;
  readonly #offsets = new Map<string, { mq: MessageQueue; offset: number; dirty: boolean }>();

  constructor(client: ClientInstance, group: string, model: MessageModel) {
    this.#client = client;
    this.#group = group;
    this.#model = model;
  }

  /** The stored offset, or -1 when the group never committed one for this queue. */
  async read(mq: MessageQueue, fromBroker: boolean): Promise<number> {
    const local = this.#offsets.get(mqKey(mq));
    if (!fromBroker || this.#model === "broadcasting") return local?.offset ?? -1;
    const addr = this.#client.brokerAddr(mq.brokerName, MASTER_ID) ?? this.#client.brokerAddrForRead(mq.brokerName, 1)?.addr;
    if (!addr) throw new MQClientError(`no broker address for ${mq.brokerName}`);
    const res = await this.#client.invokeBroker(addr, RequestCode.QUERY_CONSUMER_OFFSET, {
      consumerGroup: this.#group,
      topic: mq.topic,
      queueId: String(mq.queueId),
    });
    if (res.code === ResponseCode.QUERY_NOT_FOUND) return -1;
    if (res.code !== ResponseCode.SUCCESS) throw new MQBrokerError(res.code, res.remark, addr);
    const offset = Number(res.extFields?.offset ?? -1);
    this.#offsets.set(mqKey(mq), { mq, offset, dirty: false });
    return offset;
  }

  update(mq: MessageQueue, offset: number, increaseOnly = true): void {
    const k = mqKey(mq);
    const cur = this.#offsets.get(k);
    if (cur && increaseOnly && offset <= cur.offset) return;
    // In place when the queue is known: this runs once per consumed message.
    if (cur) {
      cur.offset = offset;
      cur.dirty = true;
    } else this.#offsets.set(k, { mq, offset, dirty: true });
  }

  current(mq: MessageQueue): number {
    return this.#offsets.get(mqKey(mq))?.offset ?? -1;
  }

  /** Pushes changed offsets of `mqs` (or all) to their brokers. */
  async persist(mqs?: Iterable<MessageQueue>): Promise<void> {
    if (this.#model === "broadcasting") return;
    const keys = mqs ? [...mqs].map(mqKey) : [...this.#offsets.keys()];
    await Promise.all(
      keys.map(async (k) => {
        const e = this.#offsets.get(k);
        if (!e || !e.dirty || e.offset < 0) return;
        const addr = this.#client.brokerAddr(e.mq.brokerName, MASTER_ID) ?? this.#client.brokerAddrForRead(e.mq.brokerName, 1)?.addr;
        if (!addr) return;
        e.dirty = false;
        try {
          const res = await this.#client.invokeBroker(addr, RequestCode.UPDATE_CONSUMER_OFFSET, {
            consumerGroup: this.#group,
            topic: e.mq.topic,
            queueId: String(e.mq.queueId),
            commitOffset: String(e.offset),
          });
          if (res.code !== ResponseCode.SUCCESS) e.dirty = true;
        } catch (err) {
          e.dirty = true;
          this.#client.log.rateLimited("warn", "persist-offset", `committing offset of ${k} failed: ${errText(err)}`);
        }
      }),
    );
  }

  remove(mq: MessageQueue): void {
    this.#offsets.delete(mqKey(mq));
  }
}

/** Where a newly assigned queue starts when the group has no committed offset. */
export async function computeStartOffset(client: ClientInstance, store: OffsetStore, mq: MessageQueue, fromWhere: FromWhere): Promise<number> {
  const stored = await store.read(mq, true);
  if (stored >= 0) return stored;
  if (mq.topic.startsWith(RETRY_GROUP_TOPIC_PREFIX) || fromWhere === "first") return 0;
  const addr = client.brokerAddr(mq.brokerName, MASTER_ID) ?? client.brokerAddrForRead(mq.brokerName, 1)?.addr;
  if (!addr) throw new MQClientError(`no broker address for ${mq.brokerName}`);
  const res =
    fromWhere === "last"
      ? await client.invokeBroker(addr, RequestCode.GET_MAX_OFFSET, { topic: mq.topic, queueId: String(mq.queueId) })
      : await client.invokeBroker(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {
          topic: mq.topic,
          queueId: String(mq.queueId),
          timestamp: String(fromWhere.timestamp),
        });
  if (res.code !== ResponseCode.SUCCESS) throw new MQBrokerError(res.code, res.remark, addr);
  return Number(res.extFields?.offset ?? 0);
}

/** The queues this member owns for `topic` (clustering: average allocation; broadcasting: all). */
/**
 * This client's share of `topic`'s queues. `idsByBroker` caches the group's member list per
 * broker for one rebalance pass: every topic of the pass would otherwise ask the same broker the
 * same question (1,250 topics: 1,250 GET_CONSUMER_LIST_BY_GROUP round trips).
 */
export async function allocate(
  client: ClientInstance,
  group: string,
  topic: string,
  model: MessageModel,
  idsByBroker?: Map<string, Promise<string[] | null>>,
): Promise<MessageQueue[]> {
  const route = client.cachedRoute(topic) ?? (await client.fetchRoute(topic));
  if (!route) return [];
  const all = subscribeQueues(topic, route);
  if (model === "broadcasting") return all;
  const addr =
    client.allBrokerAddrs(true).find((a) => route.brokerDatas.some((b) => Object.values(b.brokerAddrs).includes(a))) ??
    client.allBrokerAddrs(false)[0];
  if (!addr) return [];
  let pending = idsByBroker?.get(addr);
  if (!pending) {
    pending = consumerIds(client, addr, group);
    idsByBroker?.set(addr, pending);
  }
  const ids = await pending;
  if (!ids) return [];
  return allocateAveragely(all, [...ids].sort(), client.clientId);
}

async function consumerIds(client: ClientInstance, addr: string, group: string): Promise<string[] | null> {
  const res = await client.invokeBroker(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, { consumerGroup: group });
  if (res.code !== ResponseCode.SUCCESS || !res.body) return null;
  return (JSON.parse(new TextDecoder().decode(res.body)) as { consumerIdList?: string[] }).consumerIdList ?? [];
}

export function heartbeatConsumerData(
  group: string,
  subs: Iterable<Subscription>,
  model: MessageModel,
  fromWhere: FromWhere,
  consumeType: HeartbeatConsumerData["consumeType"],
): HeartbeatConsumerData {
  return {
    groupName: group,
    consumeType,
    messageModel: model === "clustering" ? "CLUSTERING" : "BROADCASTING",
    consumeFromWhere:
      fromWhere === "last" ? "CONSUME_FROM_LAST_OFFSET" : fromWhere === "first" ? "CONSUME_FROM_FIRST_OFFSET" : "CONSUME_FROM_TIMESTAMP",
    unitMode: false,
    subscriptionDataSet: [...subs].map((s) => ({
      topic: s.topic,
      subString: s.expression,
      tagsSet: [...s.tags],
      codeSet: [...s.tags].map(javaStringHashCode),
      classFilterMode: false,
      subVersion: s.subVersion,
      expressionType: s.type,
    })),
  };
}
