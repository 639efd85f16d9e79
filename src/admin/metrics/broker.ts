/**
 * The broker's families (./families.ts) from one BrokerInfo.metrics() state. Values follow the
 * source each name comes from:
 *
 *   rocketmq-exporter    group diffs and offsets as GET_CONSUME_STATS reports them (a queue
 *                        without a committed offset counts from 0); diffs and the store-time
 *                        latency only for CLUSTERING groups; rates are the stats items' last
 *                        minute rounded to 2 decimals (Utils.getFixedDouble), send-backs the
 *                        minute's sum; topic rates skip %RETRY% and %DLQ% topics.
 *   RocketMQ 5.x         lag, ready, in flight over the queues with a committed offset
 *                        (ConsumerLagCalculator: a POP group's lag is ready + in flight, and its
 *                        POP retry topic is reported again with is_retry), retry and DLQ topics
 *                        not counted in messages in/out, counters since start.
 */
import type { BrokerMetricsState, GroupTopicMetrics, ReplicationInfo, TransactionStats } from "../../broker/index.ts";
import type { Exposition, Labels } from "./exposition.ts";
import { EXPORTER, OWN, RUNTIME, V5, type Family } from "./families.ts";

/** Java DecimalFormat("#.##"), the exporter's rounding of rates. */
function fixed2(v: number): number {
  return Math.round(v * 100) / 100;
}

function sinceMs(now: number, t: number): number {
  return t > 0 ? Math.max(0, now - t) : 0;
}

function exporterGroups(x: Exposition, s: BrokerMetricsState, now: number): void {
  const { clusterName: cluster, brokerName: broker } = s.settings;
  const clustering = s.groups.filter((g) => g.messageModel === "CLUSTERING");
  const diffLabels = (g: GroupTopicMetrics): Labels => ({
    group: g.group,
    topic: g.topic,
    countOfOnlineConsumers: String(g.onlineConsumers),
    // MessageModel.CLUSTERING.ordinal(): the exporter reports diffs of clustering groups only.
    msgModel: "1",
  });
  for (const g of clustering) if (g.kind === "normal") x.sample(EXPORTER.groupDiff, diffLabels(g), g.diff);
  for (const g of clustering) if (g.kind === "retry") x.sample(EXPORTER.groupRetryDiff, diffLabels(g), g.diff);
  for (const g of clustering) if (g.kind === "dlq") x.sample(EXPORTER.groupDlqDiff, diffLabels(g), g.diff);
  const online = new Map(s.consumers.map((c) => [c.group, c]));
  for (const group of new Set(s.groups.map((g) => g.group))) {
    const c = online.get(group);
    x.sample(
      EXPORTER.groupCount,
      { caddr: c?.clientAddrs.join(",") ?? "", localaddr: c?.clientIds.join(",") ?? "", group },
      c?.clientAddrs.length ?? 0,
    );
  }
  const counted = s.groups.filter((g) => g.kind !== "dlq");
  for (const g of counted) x.sample(EXPORTER.consumerOffset, { cluster, broker, topic: g.topic, group: g.group }, g.consumerOffset);
  for (const g of clustering) {
    if (g.kind === "dlq") continue;
    x.sample(EXPORTER.groupLatency, { cluster, broker, topic: g.topic, group: g.group }, sinceMs(now, g.earliestUnconsumedMs));
  }
}

function exporterTopics(x: Exposition, s: BrokerMetricsState): void {
  const { clusterName: cluster, brokerName: broker, brokerAddr: brokerIP } = s.settings;
  for (const t of s.topics) if (t.kind === "normal") x.sample(EXPORTER.producerOffset, { cluster, broker, topic: t.topic }, t.maxOffset);
  for (const t of s.topics) if (t.kind === "retry") x.sample(EXPORTER.topicRetryOffset, { cluster, broker, topic: t.topic }, t.maxOffset);
  for (const t of s.topics) if (t.kind === "dlq") x.sample(EXPORTER.topicDlqOffset, { cluster, broker, group: t.owner ?? "" }, t.maxOffset);
  const puts = s.topicPut.filter((p) => p.kind === "normal");
  for (const p of puts) x.sample(EXPORTER.producerTps, { cluster, broker, topic: p.topic }, fixed2(p.nums.minute.tps));
  for (const p of puts) x.sample(EXPORTER.producerMessageSize, { cluster, broker, topic: p.topic }, fixed2(p.size.minute.tps));
  const gets = s.groupGet.filter((g) => g.kind === "normal");
  const labels = (g: (typeof gets)[number]): Labels => ({ cluster, broker, topic: g.topic, group: g.group });
  for (const g of gets) if (g.nums) x.sample(EXPORTER.consumerTps, labels(g), fixed2(g.nums.minute.tps));
  for (const g of gets) if (g.size) x.sample(EXPORTER.consumerMessageSize, labels(g), fixed2(g.size.minute.tps));
  for (const g of gets) if (g.sendBack) x.sample(EXPORTER.sendBackNums, labels(g), g.sendBack.minute.sum);
  if (s.brokerPut) x.sample(EXPORTER.brokerTps, { cluster, brokerIP, broker }, fixed2(s.brokerPut.minute.tps));
  if (s.brokerGet) x.sample(EXPORTER.brokerQps, { cluster, brokerIP, broker }, fixed2(s.brokerGet.minute.tps));
}

function brokerRuntime(x: Exposition, s: BrokerMetricsState): void {
  const st = s.stats;
  const labels: Labels = {
    cluster: s.settings.clusterName,
    brokerIP: s.settings.brokerAddr,
    // The exporter passes "" for the host.
    brokerHost: "",
    des: s.versionDesc,
    boottime: String(st.bootTimestamp),
    broker_version: String(s.version),
  };
  const put = (f: (typeof RUNTIME)[keyof typeof RUNTIME], v: number) => x.sample(f, labels, v);
  put(RUNTIME.msgPutTotalTodayNow, st.putTotal);
  put(RUNTIME.msgGetTotalTodayNow, st.getTransferredTotal);
  put(RUNTIME.msgPutTotalTodayMorning, st.putTotalTodayMorning);
  put(RUNTIME.msgGetTotalTodayMorning, st.getTotalTodayMorning);
  put(RUNTIME.msgPutTotalYesterdayMorning, st.putTotalYesterdayMorning);
  put(RUNTIME.msgGetTotalYesterdayMorning, st.getTotalYesterdayMorning);
  put(RUNTIME.putMessageTimesTotal, st.putTotal);
  put(RUNTIME.putMessageSizeTotal, st.putBytesTotal);
  put(RUNTIME.putMessageAverageSize, st.putTotal > 0 ? st.putBytesTotal / st.putTotal : 0);
  const rates = [
    [st.putTps, RUNTIME.putTps10, RUNTIME.putTps60, RUNTIME.putTps600],
    [st.getFoundTps, RUNTIME.getFoundTps10, RUNTIME.getFoundTps60, RUNTIME.getFoundTps600],
    [st.getMissTps, RUNTIME.getMissTps10, RUNTIME.getMissTps60, RUNTIME.getMissTps600],
    [st.getTotalTps, RUNTIME.getTotalTps10, RUNTIME.getTotalTps60, RUNTIME.getTotalTps600],
    [st.getTransferredTps, RUNTIME.getTransferedTps10, RUNTIME.getTransferedTps60, RUNTIME.getTransferedTps600],
  ] as const;
  for (const [r, f10, f60, f600] of rates) {
    put(f10, r[0]);
    put(f60, r[1]);
    put(f600, r[2]);
  }
  const store = s.store;
  put(RUNTIME.dispatchBehindBytes, Math.max(0, store.maxPhyOffset - store.dispatchedOffset));
  put(RUNTIME.remainHowManyDataToFlush, Math.max(0, store.maxPhyOffset - store.flushedOffset));
  put(RUNTIME.earliestMessageTimestamp, store.earliestMessageTimeMs);
  put(RUNTIME.commitLogDiskRatio, store.diskUsageRatio);
  put(RUNTIME.consumeQueueDiskRatio, store.diskUsageRatio);
  put(RUNTIME.commitLogMaxOffset, store.maxPhyOffset);
  put(RUNTIME.commitLogMinOffset, store.minPhyOffset);
}

/** RocketMQ 5.x's common labels of a broker metric. */
export function nodeLabels(s: BrokerMetricsState): Labels {
  return { cluster: s.settings.clusterName, node_type: "broker", node_id: s.settings.brokerName };
}

function v5Traffic(x: Exposition, s: BrokerMetricsState, now: number): void {
  const node = nodeLabels(s);
  const puts = s.topicPut.filter((p) => p.kind === "normal");
  for (const p of puts) x.sample(V5.messagesIn, { ...node, topic: p.topic, is_system: String(p.system) }, p.nums.total);
  for (const p of puts) x.sample(V5.throughputIn, { ...node, topic: p.topic, is_system: String(p.system) }, p.size.total);
  const gets = s.groupGet.filter((g) => g.kind === "normal");
  const labels = (g: (typeof gets)[number]): Labels => ({ ...node, topic: g.topic, consumer_group: g.group, is_system: String(g.system) });
  for (const g of gets) if (g.nums) x.sample(V5.messagesOut, labels(g), g.nums.total);
  for (const g of gets) if (g.size) x.sample(V5.throughputOut, labels(g), g.size.total);
  v5Consumers(x, s, now);
  const store = s.store;
  const storage: Labels = { ...node, storage_type: "local", storage_medium: "disk" };
  x.sample(V5.flushBehind, storage, Math.max(0, store.maxPhyOffset - store.flushedOffset));
  x.sample(V5.dispatchBehind, storage, Math.max(0, store.maxPhyOffset - store.dispatchedOffset));
  if (store.earliestMessageTimeMs > 0) x.sample(V5.reserveTime, storage, sinceMs(now, store.earliestMessageTimeMs));
}

/** A POP group's retry topic that was never created: Java reports its gauges as 0. */
function emptyRetry(g: GroupTopicMetrics): GroupTopicMetrics {
  return { ...g, lag: 0, inflight: 0, ready: 0, earliestUnconsumedCommittedMs: 0, earliestUnpulledMs: 0 };
}

/**
 * ConsumerLagCalculator's gauges for every (topic, group); a POP group's again for its POP retry
 * topic, under the topic it retries with is_retry true.
 */
function v5Consumers(x: Exposition, s: BrokerMetricsState, now: number): void {
  const node = nodeLabels(s);
  const retries = new Map(s.groups.filter((g) => g.pop && g.retryOf !== undefined).map((g) => [`${g.retryOf}@${g.group}`, g]));
  const rows: [GroupTopicMetrics, boolean][] = [];
  for (const g of s.groups) {
    if (g.kind !== "normal") continue;
    rows.push([g, false]);
    if (g.pop) rows.push([{ ...(retries.get(`${g.topic}@${g.group}`) ?? emptyRetry(g)), system: g.system }, true]);
  }
  const labeled = rows.map(([g, isRetry]): [GroupTopicMetrics, Labels] => [
    g,
    { ...node, topic: g.retryOf ?? g.topic, consumer_group: g.group, is_retry: String(isRetry), is_system: String(g.system) },
  ]);
  // One family at a time: the text format wants each family's samples together.
  const values: [Family, (g: GroupTopicMetrics) => number][] = [
    [V5.lagMessages, (g) => g.lag],
    [V5.lagLatency, (g) => sinceMs(now, g.earliestUnconsumedCommittedMs)],
    [V5.inflightMessages, (g) => g.inflight],
    [V5.readyMessages, (g) => g.ready],
    [V5.queueingLatency, (g) => sinceMs(now, g.earliestUnpulledMs)],
  ];
  for (const [f, value] of values) for (const [g, labels] of labeled) x.sample(f, labels, value(g));
}

/** ConsumeType to 5.x's consume_mode (ConsumeType.getTypeCN, lower case). */
const CONSUME_MODES: Readonly<Record<string, string>> = { CONSUME_PASSIVELY: "push", CONSUME_ACTIVELY: "pull", CONSUME_POP: "pop" };

function v5Clients(x: Exposition, s: BrokerMetricsState, tx: TransactionStats): void {
  const node = nodeLabels(s);
  for (const p of s.producers) {
    x.sample(
      V5.producerConnections,
      { ...node, language: p.language.toLowerCase(), version: p.version.toLowerCase(), protocol_type: "remoting" },
      p.count,
    );
  }
  for (const c of s.consumers) {
    for (const k of c.byClient) {
      const labels = {
        ...node,
        consumer_group: c.group,
        language: k.language.toLowerCase(),
        version: k.version.toLowerCase(),
        consume_mode: CONSUME_MODES[c.consumeType] ?? c.consumeType.toLowerCase(),
        protocol_type: "remoting",
        is_system: String(c.system),
      };
      x.sample(V5.consumerConnections, labels, k.count);
    }
  }
  x.sample(V5.commitMessages, node, tx.committed);
  x.sample(V5.rollbackMessages, node, tx.rolledBack);
}

function replication(x: Exposition, s: BrokerMetricsState, r: ReplicationInfo): void {
  const { clusterName: cluster, brokerName: broker } = s.settings;
  if (r.slaves) {
    for (const sl of r.slaves) x.sample(EXPORTER.commitLogDiff, { cluster, brokerIP: sl.addr, broker }, sl.lagBytes);
    for (const sl of r.slaves) x.sample(OWN.replicationLagBytes, { side: "master", peer: sl.addr }, sl.lagBytes);
    for (const sl of r.slaves) x.sample(OWN.replicationLagSeconds, { side: "master", peer: sl.addr }, sl.lagSeconds);
    x.sample(OWN.replicationConnected, { side: "master" }, r.slaves.length);
  }
  const m = r.master;
  if (m) {
    // Known once the master's end was polled; before that there is no honest figure.
    if (m.masterMaxOffset >= 0) x.sample(EXPORTER.commitLogDiff, { cluster, brokerIP: s.settings.brokerAddr, broker }, m.lagBytes);
    if (m.masterMaxOffset >= 0) x.sample(OWN.replicationLagBytes, { side: "slave", peer: m.masterAddr ?? "" }, m.lagBytes);
    if (m.masterMaxOffset >= 0) x.sample(OWN.replicationLagSeconds, { side: "slave", peer: m.masterAddr ?? "" }, m.lagSeconds);
    x.sample(OWN.replicationConnected, { side: "slave" }, m.connected ? 1 : 0);
  }
}

/** Lets the event loop run (sends, pulls) between the parts of a scrape. */
const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Every broker family, from one state. The text is written in parts with a turn of the event
 * loop between them, so a large scrape (10,000 queues: ~25 ms of text) holds up requests for one
 * part at a time, not for all of it; the state itself was read in one turn, so the parts agree.
 */
export async function writeBrokerMetrics(x: Exposition, s: BrokerMetricsState, r: ReplicationInfo, tx: TransactionStats): Promise<void> {
  const now = s.nowMs;
  exporterGroups(x, s, now);
  await yieldTurn();
  exporterTopics(x, s);
  brokerRuntime(x, s);
  await yieldTurn();
  v5Traffic(x, s, now);
  await yieldTurn();
  v5Clients(x, s, tx);
  replication(x, s, r);
}
