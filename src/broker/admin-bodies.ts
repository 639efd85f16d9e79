/**
 * The admin response bodies of docs/PROTOCOL.md §3.15, built from the broker's state as plain
 * functions (so the admin HTTP API and tests can call them directly). Field order is fastjson's
 * (alphabetical); maps Java decodes as `Map<MessageQueue, …>` are written with object keys. The
 * per-queue and per-connection shapes are src/protocol/admin-bodies.ts's, shared with `rocketbun admin`.
 *
 *   GET_BROKER_RUNTIME_INFO       {"table":{"<key>":"<string>",...}}               runtimeInfo
 *   GET_TOPIC_STATS_INFO          {"offsetTable":{{mq}:{lastUpdateTimestamp,maxOffset,minOffset}}}
 *   GET_CONSUME_STATS             {"consumeTps":0,"offsetTable":{{mq}:{brokerOffset,consumerOffset,lastTimestamp,pullOffset}}}
 *   GET_CONSUMER_CONNECTION_LIST  {"connectionSet":[..],"consumeFromWhere":..,"consumeType":..,
 *                                  "messageModel":..,"subscriptionTable":{"<topic>":SubscriptionData}}
 *   GET_PRODUCER_CONNECTION_LIST  {"connectionSet":[{"clientAddr","clientId","language","version"}]}
 */
import { OUR_VERSION } from "../remoting/index.ts";
import { readStoreTimestamp, decodeRecordAt } from "../commitlog/index.ts";
import { SCHEDULE_TOPIC, type TopicConfig } from "../protocol/topics.ts";
import { objectKeyedJson } from "../common/object-key-json.ts";
import type { ClientChannel, ConsumerGroupInfo } from "./client-manager.ts";
import type { BrokerContext } from "./context.ts";
import type { MessageQueue } from "../protocol/route.ts";
import type { ClientConnection, OffsetWrapper, TopicOffset } from "../protocol/admin-bodies.ts";
import type { BrokerStats, Rates } from "./stats.ts";
import { popNormalTopic } from "../protocol/pop.ts";
import type { PopInflightIndex } from "./pop/pop-view.ts";

/** MessageQueue in fastjson's field order. */
export function mqJson(topic: string, brokerName: string, queueId: number): MessageQueue {
  return { brokerName, queueId, topic };
}

/**
 * Store time of the message at `cqOffset` of a queue, or -1 (Java `getMessageStoreTimeStamp`).
 * The record found must be that queue's message at that offset, so a stale or filler unit never
 * yields another message's time.
 */
export function storeTimeAt(ctx: BrokerContext, topic: string, queueId: number, cqOffset: number): number {
  const phy = ctx.store.getCommitLogOffsetInQueue(topic, queueId, cqOffset);
  if (phy < 0) return -1;
  const bytes = ctx.store.selectOneMessageByOffset(phy);
  if (!bytes) return -1;
  const r = decodeRecordAt(bytes, 0, { checkCrc: false, readBody: false });
  if (!("totalSize" in r) || r.topic !== topic || r.queueId !== queueId || r.queueOffset !== cqOffset) return -1;
  return readStoreTimestamp(bytes, 0);
}

/** TopicStatsTable entries for every write queue of `tc` (Java `getTopicStatsInfo`). */
export function topicStats(ctx: BrokerContext, tc: TopicConfig): [MessageQueue, TopicOffset][] {
  const out: [MessageQueue, TopicOffset][] = [];
  for (let q = 0; q < tc.writeQueueNums; q++) {
    const min = Math.max(0, ctx.store.getMinOffsetInQueue(tc.topicName, q));
    const max = Math.max(0, ctx.store.getMaxOffsetInQueue(tc.topicName, q));
    const lastUpdateTimestamp = max > 0 ? storeTimeAt(ctx, tc.topicName, q, max - 1) : 0;
    out.push([mqJson(tc.topicName, ctx.settings.brokerName, q), { lastUpdateTimestamp, maxOffset: max, minOffset: min }]);
  }
  return out;
}

export function topicStatsBody(entries: readonly [MessageQueue, TopicOffset][]): string {
  return `{"offsetTable":${objectKeyedJson(entries)}}`;
}

/**
 * The topic whose read queues GET_CONSUME_STATS reports for `group`, or undefined: a topic without
 * a config is skipped, and so is one the online group (`online`) does not subscribe to. The
 * group's POP retry topic of a topic it subscribes to is kept (Java drops it, no client names it
 * in its subscriptions).
 */
export function consumeStatsTopic(ctx: BrokerContext, group: string, topic: string, online: ConsumerGroupInfo | undefined): TopicConfig | undefined {
  const tc = ctx.topics.get(topic);
  if (!tc) return undefined;
  if (online && online.subscriptions.size > 0 && !online.subscriptions.has(popNormalTopic(topic, group))) return undefined;
  return tc;
}

/**
 * Each read queue of `tc` as Java `getConsumeStats` sees it: the queue's max offset (at least 0)
 * and the group's committed offset from `offsets` (-1: none). In-memory only.
 */
export function forEachConsumeQueue(
  ctx: BrokerContext,
  tc: TopicConfig,
  offsets: ReadonlyMap<number, number> | undefined,
  visit: (queueId: number, brokerOffset: number, committed: number) => void,
): void {
  for (let q = 0; q < tc.readQueueNums; q++) visit(q, Math.max(0, ctx.store.getMaxOffsetInQueue(tc.topicName, q)), offsets?.get(q) ?? -1);
}

/**
 * ConsumeStats entries of `group` (Java `getConsumeStats`): every read queue of `topic`, or of
 * each topic the group has offsets for (see consumeStatsTopic for the ones left out), a missing
 * offset read as 0. lastTimestamp = store time of the last consumed message. pullOffset =
 * consumerOffset + the queue's messages in flight (`pop`: ./pop/pop-view.ts), so that mqadmin
 * 5.x's #Inflight (pullOffset − consumerOffset) counts a POP group's; Java's is consumerOffset
 * there, its in-flight count kept in memory apart.
 */
export function consumeStats(ctx: BrokerContext, group: string, topic: string | undefined, pop?: PopInflightIndex): [MessageQueue, OffsetWrapper][] {
  const topics = topic !== undefined ? [topic] : ctx.consumerOffsets.topicsOf(group).sort();
  const online = ctx.consumers.group(group);
  const out: [MessageQueue, OffsetWrapper][] = [];
  for (const t of topics) {
    const tc = consumeStatsTopic(ctx, group, t, online);
    if (!tc) continue;
    forEachConsumeQueue(ctx, tc, ctx.consumerOffsets.offsetsOf(group, t), (q, brokerOffset, committed) => {
      const consumerOffset = Math.max(0, committed);
      const ts = consumerOffset > 0 ? storeTimeAt(ctx, t, q, consumerOffset - 1) : 0;
      const pullOffset = consumerOffset + (pop?.inflight(t, group, q) ?? 0);
      out.push([mqJson(t, ctx.settings.brokerName, q), { brokerOffset, consumerOffset, lastTimestamp: Math.max(0, ts), pullOffset }]);
    });
  }
  return out;
}

export function consumeStatsBody(entries: readonly [MessageQueue, OffsetWrapper][], consumeTps: number): string {
  return `{"consumeTps":${JSON.stringify(consumeTps)},"offsetTable":${objectKeyedJson(entries)}}`;
}

function connectionJson(ch: ClientChannel): ClientConnection {
  return { clientAddr: ch.conn.remoteAddress, clientId: ch.clientId, language: ch.language, version: ch.version };
}

export function consumerConnectionBody(g: ConsumerGroupInfo): unknown {
  const subscriptionTable: Record<string, unknown> = {};
  for (const [topic, s] of [...g.subscriptions].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    subscriptionTable[topic] = {
      classFilterMode: false,
      codeSet: s.codeSet,
      expressionType: s.expressionType,
      subString: s.subString,
      subVersion: s.subVersion,
      tagsSet: s.tagsSet,
      topic: s.topic,
    };
  }
  return {
    connectionSet: [...g.channels.values()].map(connectionJson),
    consumeFromWhere: g.consumeFromWhere,
    consumeType: g.consumeType,
    messageModel: g.messageModel,
    subscriptionTable,
  };
}

export function producerConnectionBody(channels: readonly ClientChannel[]): unknown {
  return { connectionSet: channels.map(connectionJson) };
}

/** Java `MixAll.humanReadableByteCount(bytes, false)`: "512 B", "1.5 KiB", "3.0 GiB". */
export function humanReadableBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const exp = Math.min(6, Math.floor(Math.log(bytes) / Math.log(1024)));
  return `${(bytes / 1024 ** exp).toFixed(1)} ${"KMGTPE"[exp - 1]}iB`;
}

/** A rate as Java's Double.toString prints it, to two decimals: "0.0", "12.5", "3.33". */
function rate(v: number): string {
  const r = Math.round(v * 100) / 100;
  return Number.isInteger(r) ? r.toFixed(1) : String(r);
}

function rates(r: Rates): string {
  return r.map(rate).join(" ");
}

/** "[ 1 days, 2 hours, 3 minutes, 4 seconds ]" (Java StoreStatsService.getFormatRuntime). */
function formatRuntime(ms: number): string {
  const s = Math.floor(Math.max(0, ms) / 1000);
  return `[ ${Math.floor(s / 86400)} days, ${Math.floor((s % 86400) / 3600)} hours, ${Math.floor((s % 3600) / 60)} minutes, ${s % 60} seconds ]`;
}

/** Java MQVersion.getVersionDesc for the 4.9 line: 392 = V4_9_0_SNAPSHOT, 393 = V4_9_0, … 409 = V4_9_8. */
export function versionDesc(ordinal: number): string {
  const i = ordinal - 392;
  if (i < 0 || i > 19) return String(ordinal);
  return `V4_9_${Math.floor(i / 2)}${i % 2 === 0 ? "_SNAPSHOT" : ""}`;
}

/**
 * The GET_BROKER_RUNTIME_INFO table (Java AdminBrokerProcessor.prepareRuntimeInfo plus the
 * store's getRuntimeInfo). Thread-pool keys are 0: requests are handled inline, nothing queues.
 */
/**
 * With automatic failover: the role in force (it changes at run time) and the election's view.
 * Without it nothing is added, so brokerStatus lists exactly Java 4.9's keys.
 */
function addRoleInfo(ctx: BrokerContext, table: Record<string, string>): void {
  const f = ctx.role.failover();
  if (f === undefined) return;
  table.brokerRole = ctx.role.current;
  table.failoverReplicaId = String(f.replicaId ?? -1);
  table.failoverRole = f.role;
  table.failoverEpoch = String(f.epoch);
  table.failoverSyncStateSet = f.syncStateSet.join(",");
}

export function runtimeInfo(ctx: BrokerContext, stats: BrokerStats): Record<string, string> {
  const st = stats.snapshot();
  const store = ctx.store;
  const now = ctx.now();
  const ratio = store.diskUsageRatio();
  const table: Record<string, string> = {
    brokerVersionDesc: versionDesc(OUR_VERSION),
    brokerVersion: String(OUR_VERSION),
    bootTimestamp: String(st.bootTimestamp),
    runtime: formatRuntime(now - st.bootTimestamp),
    msgPutTotalYesterdayMorning: String(st.putTotalYesterdayMorning),
    msgPutTotalTodayMorning: String(st.putTotalTodayMorning),
    msgPutTotalTodayNow: String(st.putTotal),
    msgGetTotalYesterdayMorning: String(st.getTotalYesterdayMorning),
    msgGetTotalTodayMorning: String(st.getTotalTodayMorning),
    msgGetTotalTodayNow: String(st.getTransferredTotal),
    putMessageTimesTotal: String(st.putTotal),
    putMessageSizeTotal: String(st.putBytesTotal),
    putMessageAverageSize: String(st.putTotal > 0 ? st.putBytesTotal / st.putTotal : 0),
    putTps: rates(st.putTps),
    getFoundTps: rates(st.getFoundTps),
    getMissTps: rates(st.getMissTps),
    getTotalTps: rates(st.getTotalTps),
    getTransferedTps: rates(st.getTransferredTps),
    sendThreadPoolQueueSize: "0",
    pullThreadPoolQueueSize: "0",
    queryThreadPoolQueueSize: "0",
    sendThreadPoolQueueHeadWaitTimeMills: "0",
    pullThreadPoolQueueHeadWaitTimeMills: "0",
    queryThreadPoolQueueHeadWaitTimeMills: "0",
    pageCacheLockTimeMills: "0",
    dispatchBehindBytes: String(Math.max(0, store.maxPhyOffset - store.indexedOffset)),
    remainHowManyDataToFlush: humanReadableBytes(Math.max(0, store.maxPhyOffset - store.commitLog.flushedOffset)),
    earliestMessageTimeStamp: String(store.getEarliestMessageTimeOverall()),
    startAcceptSendRequestTimeStamp: "0",
    commitLogDiskRatio: String(ratio),
    // The ConsumeQueues live under the same store directory.
    consumeQueueDiskRatio: String(ratio),
    commitLogMinOffset: String(store.minPhyOffset),
    commitLogMaxOffset: String(store.maxPhyOffset),
    // Keys Java's runtime info adds that mqadmin brokerStatus, rocketmq-exporter and the dashboard
    // read. Requests are handled inline (no executor queues, no transient store pool), so the
    // queue sizes are 0 and the capacities Java's defaults; put latencies are not sampled.
    sendThreadPoolQueueCapacity: "10000",
    pullThreadPoolQueueCapacity: "100000",
    queryThreadPoolQueueCapacity: "20000",
    EndTransactionQueueSize: "0",
    EndTransactionThreadPoolQueueCapacity: "100000",
    dispatchMaxBuffer: "0",
    putMessageEntireTimeMax: "0",
    getMessageEntireTimeMax: "0",
    putMessageFailedTimes: "0",
    putMessageDistributeTime: "null",
    putLatency99: "0.00",
    putLatency999: "0.00",
    remainTransientStoreBufferNumbs: String(2 ** 31 - 1),
  };
  addRoleInfo(ctx, table);
  // Java ScheduleMessageService.buildRunningStats: "<delivered offset>,<max offset>" per level.
  for (const [level, offset] of Object.entries(ctx.delayOffsets.table().offsetTable)) {
    table[`scheduleMessageOffset_${level}`] = `${offset},${store.getMaxOffsetInQueue(SCHEDULE_TOPIC, Number(level) - 1)}`;
  }
  return table;
}
