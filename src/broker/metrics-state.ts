/**
 * What the admin API's `GET /metrics` (src/admin/metrics/) reads from a broker, gathered in one
 * call of BrokerInfo.metrics(): plain numbers; the metric names and labels are the admin layer's.
 *
 * Cost of a call, the contract the scrape relies on:
 *   - O(topics + groups + offset entries + POP checkpoints in flight + the read queues of each
 *     group's topics), all from memory: the ConsumeQueues' min/max offsets, the offset table, the stats items, the client
 *     registries. No file is read and nothing waits.
 *   - One exception: the store time of the first unconsumed message of each queue that has a
 *     backlog (for the lag latency). It is remembered per queue with the offset it belongs to, so
 *     a queue whose consumer did not move since the last call costs a Map lookup; only queues whose
 *     offset moved read one record header (through the mapping, src/commitlog/). A queue with POP
 *     messages in flight remembers its oldest one's time the same way.
 *
 * The (group, topic) pairs are rocketmq-exporter's: every topic a group has committed offsets for
 * or an online consumer of it subscribes to (QUERY_TOPIC_CONSUME_BY_WHO), each reported as
 * GET_CONSUME_STATS reports it (admin-bodies.ts: the same two functions answer both). A group's
 * `%DLQ%` topic, which the exporter never reaches, is added when it exists; so are the pairs that
 * consume by POP (./pop/pop-view.ts) and their POP retry topics.
 */
import { OUR_VERSION } from "../remoting/index.ts";
import {
  AUTO_CREATE_TOPIC,
  BENCHMARK_TOPIC,
  DLQ_GROUP_TOPIC_PREFIX,
  OFFSET_MOVED_EVENT,
  RETRY_GROUP_TOPIC_PREFIX,
  SCHEDULE_TOPIC,
  SELF_TEST_TOPIC,
  TRACE_TOPIC,
  TRANS_CHECK_MAX_TIME_TOPIC,
  TRANS_HALF_TOPIC,
  TRANS_OP_HALF_TOPIC,
  dlqTopic,
  type TopicConfig,
} from "../protocol/topics.ts";
import { consumeStatsTopic, forEachConsumeQueue, storeTimeAt, versionDesc } from "./admin-bodies.ts";
import type { ConsumerGroupInfo } from "./client-manager.ts";
import type { BrokerContext, BrokerSettings } from "./context.ts";
import { StatsName, type BrokerStatsSnapshot } from "./stats.ts";
import type { BrokerStatsItem } from "../protocol/admin-bodies.ts";
import { popNormalTopic, popRetryTopic } from "../protocol/pop.ts";
import { isPopConsumed, PopInflightIndex, popPairs, readyInQueue, type InflightSource } from "./pop/pop-view.ts";

/** normal: a topic of its own; retry: `%RETRY%<group>`; dlq: `%DLQ%<group>`. */
export type TopicKind = "normal" | "retry" | "dlq";

export interface GroupTopicMetrics {
  group: string;
  topic: string;
  kind: TopicKind;
  /** Java TopicValidator.isSystemTopic(topic) or a CID_RMQ_SYS_ group (RocketMQ 5.x `is_system`). */
  system: boolean;
  /** Consumers of the group connected now (0: offline). */
  onlineConsumers: number;
  /** The online group's messageModel; CLUSTERING when offline (what rocketmq-exporter assumes). */
  messageModel: string;
  /** Java ConsumeStats.computeTotalDiff: Σ max offset − the group's offset, a missing offset read as 0. */
  diff: number;
  /** Σ of the group's offsets, a missing one 0 (ConsumeStats consumerOffset). */
  consumerOffset: number;
  /**
   * RocketMQ 5.x ConsumerLagCalculator: ready + inflight; for a PULL group as diff, but a queue
   * without a committed offset counts 0.
   */
  lag: number;
  /** Store time (ms) of the oldest message not consumed yet, over the queues diff counts; 0: none. */
  earliestUnconsumedMs: number;
  /** The same over the queues lag counts (5.x: committed offset present and still in the queue), POP messages in flight included. */
  earliestUnconsumedCommittedMs: number;
  /** The group consumes the topic by POP (./pop/pop-view.ts isPopConsumed); for its POP retry topic, `retryOf` names the topic. */
  pop: boolean;
  retryOf?: string;
  /** POP messages in flight (0 for a PULL group: RocketMQ's pull offset is its committed one). */
  inflight: number;
  /** Messages after the committed offset: what the next pulls or pops hand out (./pop/pop-view.ts readyInQueue). */
  ready: number;
  /** Store time (ms) of the first of them, over the queues ready counts; 0: none (5.x queueing latency). */
  earliestUnpulledMs: number;
}

export interface TopicMetrics {
  topic: string;
  kind: TopicKind;
  /** retry, dlq: the group whose topic it is. */
  owner?: string;
  system: boolean;
  /** Σ of the write queues' max offsets (the exporter's TopicStatsTable sum). */
  maxOffset: number;
}

/** A stats item (stats.ts): total since boot and the last minute. */
export interface ItemTotals {
  total: number;
  minute: BrokerStatsItem;
}

export interface ClientCount {
  language: string;
  /** Java MQVersion desc, e.g. V4_9_4. */
  version: string;
  count: number;
}

export interface ConsumerGroupMetrics {
  group: string;
  system: boolean;
  messageModel: string;
  consumeType: string;
  /** Remote address and client id of each connected consumer. */
  clientAddrs: string[];
  clientIds: string[];
  byClient: ClientCount[];
}

export interface BrokerMetricsState {
  /** The broker's clock now (ms since the epoch): ages are measured against it. */
  nowMs: number;
  settings: BrokerSettings;
  /** The version this broker reports (GET_BROKER_RUNTIME_INFO brokerVersion / brokerVersionDesc). */
  version: number;
  versionDesc: string;
  stats: BrokerStatsSnapshot;
  store: {
    minPhyOffset: number;
    maxPhyOffset: number;
    flushedOffset: number;
    dispatchedOffset: number;
    diskUsageRatio: number;
    /** Store time of the oldest message in the CommitLog; -1: empty. */
    earliestMessageTimeMs: number;
  };
  topics: TopicMetrics[];
  groups: GroupTopicMetrics[];
  /** TOPIC_PUT_NUMS / TOPIC_PUT_SIZE items by topic. */
  topicPut: { topic: string; kind: TopicKind; system: boolean; nums: ItemTotals; size: ItemTotals }[];
  /** GROUP_GET_NUMS / GROUP_GET_SIZE / SNDBCK_PUT_NUMS items by topic and group. */
  groupGet: { topic: string; group: string; kind: TopicKind; system: boolean; nums?: ItemTotals; size?: ItemTotals; sendBack?: ItemTotals }[];
  /** BROKER_PUT_NUMS / BROKER_GET_NUMS. */
  brokerPut?: ItemTotals;
  brokerGet?: ItemTotals;
  consumers: ConsumerGroupMetrics[];
  producers: ClientCount[];
  /** Open remoting connections of the listen and VIP ports. */
  connections: { listen: number; vip: number };
}

/** Java TopicValidator's system topics (4.9 and 5.x): this set and the rmq_sys_ prefix. */
const SYSTEM_TOPICS = new Set([
  AUTO_CREATE_TOPIC,
  SCHEDULE_TOPIC,
  BENCHMARK_TOPIC,
  TRANS_HALF_TOPIC,
  TRACE_TOPIC,
  TRANS_OP_HALF_TOPIC,
  TRANS_CHECK_MAX_TIME_TOPIC,
  SELF_TEST_TOPIC,
  OFFSET_MOVED_EVENT,
]);

function isSystem(topic: string, group?: string): boolean {
  return SYSTEM_TOPICS.has(topic) || topic.startsWith("rmq_sys_") || (group !== undefined && group.toLowerCase().startsWith("cid_rmq_sys_"));
}

function kindOf(topic: string): TopicKind {
  return topic.startsWith(RETRY_GROUP_TOPIC_PREFIX) ? "retry" : topic.startsWith(DLQ_GROUP_TOPIC_PREFIX) ? "dlq" : "normal";
}

/**
 * Store times of first unconsumed messages, by topic and queue, with the offset they belong to.
 * Each call of brokerMetricsState keeps only the entries it used, so the memory follows the
 * queues that have a backlog now.
 */
export class StoreTimeCache {
  #prev = new Map<string, Map<number, { offset: number; time: number }>>();
  #next = new Map<string, Map<number, { offset: number; time: number }>>();

  /** `slot` 1: the queue's oldest POP message in flight, remembered apart from its first unconsumed one (slot 0). */
  get(ctx: BrokerContext, topic: string, queueId: number, offset: number, slot: 0 | 1 = 0): number {
    const key = queueId * 2 + slot;
    let e = this.#prev.get(topic)?.get(key) ?? this.#next.get(topic)?.get(key);
    if (!e || e.offset !== offset) e = { offset, time: storeTimeAt(ctx, topic, queueId, offset) };
    let byQueue = this.#next.get(topic);
    if (!byQueue) this.#next.set(topic, (byQueue = new Map()));
    byQueue.set(key, e);
    return e.time;
  }

  /** Ends one scrape: what was not asked for is forgotten. */
  roll(): void {
    this.#prev = this.#next;
    this.#next = new Map();
  }
}

/** One (group, topic): the per-queue arithmetic of ConsumeStats and of 5.x's lag calculator. */
function groupTopic(
  ctx: BrokerContext,
  times: StoreTimeCache,
  group: string,
  tc: TopicConfig,
  online: ConsumerGroupInfo | undefined,
  pop: PopInflightIndex,
): GroupTopicMetrics {
  const topic = tc.topicName;
  const normal = popNormalTopic(topic, group);
  const m: GroupTopicMetrics = {
    group,
    topic,
    kind: kindOf(topic),
    system: isSystem(topic, group),
    onlineConsumers: online?.channels.size ?? 0,
    messageModel: online?.messageModel ?? "CLUSTERING",
    diff: 0,
    consumerOffset: 0,
    lag: 0,
    earliestUnconsumedMs: 0,
    earliestUnconsumedCommittedMs: 0,
    pop: isPopConsumed(ctx, pop, topic, group),
    ...(normal !== topic ? { retryOf: normal } : {}),
    inflight: 0,
    ready: 0,
    earliestUnpulledMs: 0,
  };
  const earliest = { all: Infinity, unpulled: Infinity, inflight: Infinity };
  const keep = (k: keyof typeof earliest, t: number) => {
    if (t > 0) earliest[k] = Math.min(earliest[k], t);
  };
  forEachConsumeQueue(ctx, tc, ctx.consumerOffsets.offsetsOf(group, topic), (q, brokerOffset, committed) => {
    const consumerOffset = Math.max(0, committed);
    m.diff += brokerOffset - consumerOffset;
    m.consumerOffset += consumerOffset;
    const min = ctx.store.getMinOffsetInQueue(topic, q);
    // The first message not consumed: below the queue's minimum it was deleted, so the minimum.
    const first = Math.max(consumerOffset, min);
    if (first < brokerOffset) keep("all", times.get(ctx, topic, q, first));
    const ready = m.pop
      ? readyInQueue(ctx, topic, q, committed, m.retryOf !== undefined)
      : committed >= 0
        ? Math.max(0, brokerOffset - committed)
        : 0;
    const inflight = m.pop ? pop.queues(topic, group)?.get(q) : undefined;
    m.ready += ready;
    m.inflight += inflight?.count ?? 0;
    m.lag += ready + (inflight?.count ?? 0);
    // The next message handed out; one below the queue's minimum was deleted and has no time.
    if (ready > 0 && brokerOffset - ready >= min) keep("unpulled", times.get(ctx, topic, q, brokerOffset - ready));
    if (inflight) keep("inflight", times.get(ctx, topic, q, inflight.lowestOffset, 1));
  });
  if (earliest.all !== Infinity) m.earliestUnconsumedMs = earliest.all;
  if (earliest.unpulled !== Infinity) m.earliestUnpulledMs = earliest.unpulled;
  const committed = Math.min(earliest.unpulled, earliest.inflight);
  if (committed !== Infinity) m.earliestUnconsumedCommittedMs = committed;
  return m;
}

/** Every (group, topic) pair of the file's header, sorted by group then topic. */
function groupTopics(ctx: BrokerContext, times: StoreTimeCache, pop: PopInflightIndex): GroupTopicMetrics[] {
  const pairs = new Map<string, Set<string>>();
  const add = (group: string, topic: string) => {
    let s = pairs.get(group);
    if (!s) pairs.set(group, (s = new Set()));
    s.add(topic);
  };
  ctx.consumerOffsets.forEachEntry((topic, group) => add(group, topic));
  for (const g of ctx.consumers.groups()) for (const topic of g.subscriptions.keys()) add(g.groupName, topic);
  for (const p of popPairs(ctx, pop)) {
    add(p.group, p.topic);
    if (ctx.topics.get(popRetryTopic(p.topic, p.group))) add(p.group, popRetryTopic(p.topic, p.group));
  }
  const out: GroupTopicMetrics[] = [];
  for (const group of [...pairs.keys()].sort()) {
    const online = ctx.consumers.group(group);
    for (const topic of [...pairs.get(group)!].sort()) {
      if (topic.startsWith(DLQ_GROUP_TOPIC_PREFIX)) continue;
      const tc = consumeStatsTopic(ctx, group, topic, online);
      if (tc && tc.readQueueNums > 0) out.push(groupTopic(ctx, times, group, tc, online, pop));
    }
    // A DLQ topic is nobody's subscription: counted whether or not an online group names it.
    const dlq = ctx.topics.get(dlqTopic(group));
    if (dlq && dlq.readQueueNums > 0) out.push(groupTopic(ctx, times, group, dlq, online, pop));
  }
  times.roll();
  return out;
}

function topicOffsets(ctx: BrokerContext): TopicMetrics[] {
  return ctx.topics
    .all()
    .map((tc) => {
      let maxOffset = 0;
      for (let q = 0; q < tc.writeQueueNums; q++) maxOffset += Math.max(0, ctx.store.getMaxOffsetInQueue(tc.topicName, q));
      const kind = kindOf(tc.topicName);
      const prefix = kind === "retry" ? RETRY_GROUP_TOPIC_PREFIX : DLQ_GROUP_TOPIC_PREFIX;
      const owner = kind === "normal" ? {} : { owner: tc.topicName.slice(prefix.length) };
      return { topic: tc.topicName, kind, ...owner, system: isSystem(tc.topicName), maxOffset };
    })
    .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0));
}

function item(total: number, minute: BrokerStatsItem): ItemTotals {
  return { total, minute };
}

function statsItems(ctx: BrokerContext): Pick<BrokerMetricsState, "topicPut" | "groupGet" | "brokerPut" | "brokerGet"> {
  const items = ctx.stats.items;
  const put = new Map<string, BrokerMetricsState["topicPut"][number]>();
  const zero = item(0, { sum: 0, tps: 0, avgpt: 0 });
  items.forEach(StatsName.TOPIC_PUT_NUMS, (topic, total, minute) => {
    put.set(topic, { topic, kind: kindOf(topic), system: isSystem(topic), nums: item(total, minute), size: zero });
  });
  items.forEach(StatsName.TOPIC_PUT_SIZE, (topic, total, minute) => {
    const e = put.get(topic);
    if (e) e.size = item(total, minute);
  });
  const get = new Map<string, BrokerMetricsState["groupGet"][number]>();
  const entry = (key: string) => {
    let e = get.get(key);
    if (!e) {
      // Keys are topic@group; a topic name never contains '@' (validateTopicName).
      const at = key.indexOf("@");
      const topic = key.slice(0, at);
      const group = key.slice(at + 1);
      get.set(key, (e = { topic, group, kind: kindOf(topic), system: isSystem(topic, group) }));
    }
    return e;
  };
  items.forEach(StatsName.GROUP_GET_NUMS, (key, total, minute) => (entry(key).nums = item(total, minute)));
  items.forEach(StatsName.GROUP_GET_SIZE, (key, total, minute) => (entry(key).size = item(total, minute)));
  items.forEach(StatsName.SNDBCK_PUT_NUMS, (key, total, minute) => (entry(key).sendBack = item(total, minute)));
  const out: Pick<BrokerMetricsState, "topicPut" | "groupGet" | "brokerPut" | "brokerGet"> = {
    topicPut: [...put.values()],
    groupGet: [...get.values()],
  };
  items.forEach(StatsName.BROKER_PUT_NUMS, (_k, total, minute) => (out.brokerPut = item(total, minute)));
  items.forEach(StatsName.BROKER_GET_NUMS, (_k, total, minute) => (out.brokerGet = item(total, minute)));
  return out;
}

function clientCounts(channels: Iterable<{ language: string; version: number }>): ClientCount[] {
  const by = new Map<string, ClientCount>();
  for (const ch of channels) {
    const version = versionDesc(ch.version);
    const key = `${ch.language}\u0000${version}`;
    const c = by.get(key);
    if (c) c.count++;
    else by.set(key, { language: ch.language, version, count: 1 });
  }
  return [...by.values()];
}

function clients(ctx: BrokerContext): Pick<BrokerMetricsState, "consumers" | "producers"> {
  const consumers = ctx.consumers.groups().map((g) => {
    const chans = [...g.channels.values()];
    return {
      group: g.groupName,
      system: isSystem("", g.groupName),
      messageModel: g.messageModel,
      consumeType: g.consumeType,
      clientAddrs: chans.map((c) => c.conn.remoteAddress),
      clientIds: chans.map((c) => c.clientId),
      byClient: clientCounts(chans),
    };
  });
  const producers = clientCounts(ctx.producers.groupNames().flatMap((g) => ctx.producers.channels(g)));
  return { consumers, producers };
}

/** The whole state for one scrape (contract at the top of this file); `pop`: the POP in-flight table. */
export function brokerMetricsState(
  ctx: BrokerContext,
  times: StoreTimeCache,
  connections: { listen: number; vip: number },
  pop?: InflightSource,
): BrokerMetricsState {
  const s = ctx.store;
  return {
    nowMs: ctx.now(),
    settings: ctx.settings,
    version: OUR_VERSION,
    versionDesc: versionDesc(OUR_VERSION),
    stats: ctx.stats.snapshot(),
    store: {
      minPhyOffset: s.minPhyOffset,
      maxPhyOffset: s.maxPhyOffset,
      flushedOffset: s.commitLog.flushedOffset,
      // RocketMQ's dispatch feeds the ConsumeQueues and the index together; after a crash ours may
      // lag for the index (src/commitlog/index-catch-up.ts), and "dispatch behind" says so.
      dispatchedOffset: s.indexedOffset,
      diskUsageRatio: s.diskUsageRatio(),
      earliestMessageTimeMs: s.getEarliestMessageTimeOverall(),
    },
    topics: topicOffsets(ctx),
    groups: groupTopics(ctx, times, new PopInflightIndex(pop)),
    ...statsItems(ctx),
    ...clients(ctx),
    connections,
  };
}
