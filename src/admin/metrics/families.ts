/**
 * Every metric GET /metrics can serve, defined once (docs/CONVENTIONS.md §14: a closed set of
 * names). Three groups, so that dashboards built for Apache RocketMQ work unchanged:
 *
 * 1. rocketmq-exporter's names and label names, exactly (apache/rocketmq-exporter,
 *    RMQMetricsCollector.java and MetricsCollectTask.java), values as the exporter computes them.
 *    Its label names are camelCase in places (countOfOnlineConsumers, msgModel, brokerIP,
 *    brokerHost): `promtool check metrics` lints those as non-snake_case, and they stay, since
 *    renaming them would break every board that queries them.
 * 2. RocketMQ 5.x's own names (BrokerMetricsConstant, RemotingMetricsConstant,
 *    DefaultStoreMetricsConstant in apache/rocketmq 5.3.1) as its built-in Prometheus exporter
 *    serves them: OpenTelemetry's Prometheus exporter (1.29, the version 5.3.1 ships) appends the
 *    instrument's unit, so `rocketmq_rpc_latency` (unit "milliseconds") is scraped as
 *    `rocketmq_rpc_latency_milliseconds_bucket`, `rocketmq_consumer_lag_latency` as
 *    `rocketmq_consumer_lag_latency_milliseconds`; names that already hold the unit
 *    (`..._behind_bytes`) and unit-less ones (`rocketmq_messages_in_total`) stay as they are.
 *    Those unit suffixes are what a board built against a 5.x broker queries, so they are used
 *    here; promtool prefers base units (seconds) and says so. Labels: 5.x's common ones
 *    (cluster, node_type, node_id) and each metric's own, minus those the broker does not know
 *    (message_type, response_code, is_long_polling, result: see the README's Monitoring section).
 * 3. Process metrics under the names Prometheus' client libraries use (process_*, nodejs_*), and
 *    RocketBun's own (rocketbun_*).
 */
import type { MetricFamily, MetricType } from "./exposition.ts";

export interface Family extends MetricFamily {
  /** The label names every sample carries, in order. */
  labels: readonly string[];
}

function family(name: string, type: MetricType, labels: readonly string[], help: string): Family {
  return { name, type, labels, help };
}

const GROUP_DIFF = ["group", "topic", "countOfOnlineConsumers", "msgModel"] as const;
const TOPIC = ["cluster", "broker", "topic"] as const;
const GROUP_NUMS = ["cluster", "broker", "topic", "group"] as const;
const BROKER_NUMS = ["cluster", "brokerIP", "broker"] as const;
/** Labels of every rocketmq_brokeruntime_* gauge. */
export const BROKER_RUNTIME_LABELS = ["cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version"] as const;
/** RocketMQ 5.x's labels on every broker metric. */
export const NODE_LABELS = ["cluster", "node_type", "node_id"] as const;
const STORAGE = [...NODE_LABELS, "storage_type", "storage_medium"] as const;
/** ConsumerLagCalculator's gauges: topic is the one consumed, also for its POP retry topic (is_retry true). */
const CONSUMER_LAG = [...NODE_LABELS, "topic", "consumer_group", "is_retry", "is_system"] as const;

/** 1. rocketmq-exporter. */
export const EXPORTER = {
  groupDiff: family(
    "rocketmq_group_diff",
    "gauge",
    GROUP_DIFF,
    "Messages of the topic not consumed by the clustering group yet (ConsumeStats diff; a queue without an offset counts from 0)",
  ),
  groupRetryDiff: family("rocketmq_group_retrydiff", "gauge", GROUP_DIFF, "The same for the group's %RETRY% topic"),
  groupDlqDiff: family("rocketmq_group_dlqdiff", "gauge", GROUP_DIFF, "The same for the group's %DLQ% topic: messages it did not consume"),
  groupCount: family(
    "rocketmq_group_count",
    "gauge",
    ["caddr", "localaddr", "group"],
    "Consumers of the group online (caddr: addresses, localaddr: client ids)",
  ),
  producerOffset: family("rocketmq_producer_offset", "gauge", TOPIC, "Sum of the max offsets of the topic's write queues on this broker"),
  topicRetryOffset: family("rocketmq_topic_retry_offset", "gauge", TOPIC, "Sum of the max offsets of a %RETRY% topic's write queues"),
  topicDlqOffset: family(
    "rocketmq_topic_dlq_offset",
    "gauge",
    ["cluster", "broker", "group"],
    "Sum of the max offsets of the group's %DLQ% topic's write queues",
  ),
  producerTps: family("rocketmq_producer_tps", "gauge", TOPIC, "Messages stored into the topic per second over the last minute"),
  producerMessageSize: family("rocketmq_producer_message_size", "gauge", TOPIC, "Body bytes stored into the topic per second over the last minute"),
  consumerTps: family("rocketmq_consumer_tps", "gauge", GROUP_NUMS, "Messages the group pulled from the topic per second over the last minute"),
  consumerMessageSize: family(
    "rocketmq_consumer_message_size",
    "gauge",
    GROUP_NUMS,
    "Bytes the group pulled from the topic per second over the last minute",
  ),
  consumerOffset: family("rocketmq_consumer_offset", "gauge", GROUP_NUMS, "Sum of the group's committed offsets on the topic's read queues"),
  sendBackNums: family("rocketmq_send_back_nums", "gauge", GROUP_NUMS, "Messages the group sent back for redelivery in the last minute"),
  groupLatency: family(
    "rocketmq_group_get_latency_by_storetime",
    "gauge",
    GROUP_NUMS,
    "Milliseconds since the oldest message the clustering group has not consumed was stored (0 when caught up)",
  ),
  brokerTps: family("rocketmq_broker_tps", "gauge", BROKER_NUMS, "Messages stored per second over the last minute"),
  brokerQps: family("rocketmq_broker_qps", "gauge", BROKER_NUMS, "Messages pulled per second over the last minute"),
  commitLogDiff: family(
    "rocketmq_broker_commitlog_diff",
    "gauge",
    BROKER_NUMS,
    "Bytes the slave at brokerIP is behind its master (master's CommitLog end minus the slave's)",
  ),
} as const;

function runtime(name: string, help: string): Family {
  return family(`rocketmq_brokeruntime_${name}`, "gauge", BROKER_RUNTIME_LABELS, help);
}

/**
 * The rocketmq_brokeruntime_* gauges that have a value here (GET_BROKER_RUNTIME_INFO's keys);
 * thread-pool queues, put-latency distributions and transient store buffers do not exist in
 * this broker and are not served.
 */
export const RUNTIME = {
  msgPutTotalTodayNow: runtime("msg_put_total_today_now", "Messages stored since start"),
  msgGetTotalTodayNow: runtime("msg_gettotal_today_now", "Messages pulled since start"),
  msgPutTotalTodayMorning: runtime("msg_puttotal_todaymorning", "msg_put_total_today_now at the last local midnight"),
  msgGetTotalTodayMorning: runtime("msg_gettotal_todaymorning", "msg_gettotal_today_now at the last local midnight"),
  msgPutTotalYesterdayMorning: runtime("msg_puttotal_yesterdaymorning", "msg_put_total_today_now at the local midnight before"),
  msgGetTotalYesterdayMorning: runtime("msg_gettotal_yesterdaymorning", "msg_gettotal_today_now at the local midnight before"),
  putMessageTimesTotal: runtime("putmessage_times_total", "Messages stored since start"),
  putMessageSizeTotal: runtime("put_message_size_total", "Body bytes stored since start"),
  putMessageAverageSize: runtime("put_message_average_size", "Average body bytes of a stored message"),
  putTps10: runtime("put_tps10", "Messages stored per second over the last 10 s"),
  putTps60: runtime("put_tps60", "Messages stored per second over the last 60 s"),
  putTps600: runtime("put_tps600", "Messages stored per second over the last 600 s"),
  getFoundTps10: runtime("getfound_tps10", "Pulls that found messages per second over the last 10 s"),
  getFoundTps60: runtime("getfound_tps60", "Pulls that found messages per second over the last 60 s"),
  getFoundTps600: runtime("getfound_tps600", "Pulls that found messages per second over the last 600 s"),
  getMissTps10: runtime("getmiss_tps10", "Pulls that found nothing per second over the last 10 s"),
  getMissTps60: runtime("getmiss_tps60", "Pulls that found nothing per second over the last 60 s"),
  getMissTps600: runtime("getmiss_tps600", "Pulls that found nothing per second over the last 600 s"),
  getTotalTps10: runtime("gettotal_tps10", "Pulls per second over the last 10 s"),
  getTotalTps60: runtime("gettotal_tps60", "Pulls per second over the last 60 s"),
  getTotalTps600: runtime("gettotal_tps600", "Pulls per second over the last 600 s"),
  getTransferedTps10: runtime("gettransfered_tps10", "Messages pulled per second over the last 10 s"),
  getTransferedTps60: runtime("gettransfered_tps60", "Messages pulled per second over the last 60 s"),
  getTransferedTps600: runtime("gettransfered_tps600", "Messages pulled per second over the last 600 s"),
  dispatchBehindBytes: runtime("dispatch_behind_bytes", "CommitLog bytes not yet dispatched to ConsumeQueues and indexes"),
  remainHowManyDataToFlush: runtime("remain_howmanydata_toflush", "CommitLog bytes not yet flushed to disk (RocketMQ prints a human-readable size)"),
  earliestMessageTimestamp: runtime("earliest_message_timestamp", "Store time (ms since the epoch) of the oldest message kept"),
  commitLogDiskRatio: runtime("commitlog_disk_ratio", "Fraction of the store's file system in use"),
  consumeQueueDiskRatio: runtime("consumequeue_disk_ratio", "Fraction of the store's file system in use (ConsumeQueues share the store directory)"),
  commitLogMaxOffset: runtime("commitlog_maxoffset", "CommitLog end offset"),
  commitLogMinOffset: runtime("commitlog_minoffset", "CommitLog start offset (older segments deleted)"),
} as const;

/** 2. RocketMQ 5.x. */
export const V5 = {
  messagesIn: family(
    "rocketmq_messages_in_total",
    "counter",
    [...NODE_LABELS, "topic", "is_system"],
    "Messages stored since start (retry and DLQ topics not counted)",
  ),
  messagesOut: family(
    "rocketmq_messages_out_total",
    "counter",
    [...NODE_LABELS, "topic", "consumer_group", "is_system"],
    "Messages pulled since start (retry and DLQ topics not counted)",
  ),
  throughputIn: family("rocketmq_throughput_in_total", "counter", [...NODE_LABELS, "topic", "is_system"], "Body bytes stored since start"),
  throughputOut: family(
    "rocketmq_throughput_out_total",
    "counter",
    [...NODE_LABELS, "topic", "consumer_group", "is_system"],
    "Bytes pulled since start",
  ),
  lagMessages: family(
    "rocketmq_consumer_lag_messages",
    "gauge",
    CONSUMER_LAG,
    "Messages not consumed yet, over the queues the group has committed an offset for: ready plus in flight (is_retry: the POP retry topic)",
  ),
  lagLatency: family(
    "rocketmq_consumer_lag_latency_milliseconds",
    "gauge",
    CONSUMER_LAG,
    "Milliseconds since the oldest message not consumed yet (in flight or ready) was stored (0 when caught up)",
  ),
  inflightMessages: family(
    "rocketmq_consumer_inflight_messages",
    "gauge",
    CONSUMER_LAG,
    "POP messages handed out and neither acked nor back yet (0 for a group that pulls)",
  ),
  readyMessages: family(
    "rocketmq_consumer_ready_messages",
    "gauge",
    CONSUMER_LAG,
    "Messages after the committed offset, what the next pulls or pops hand out",
  ),
  queueingLatency: family(
    "rocketmq_consumer_queueing_latency_milliseconds",
    "gauge",
    CONSUMER_LAG,
    "Milliseconds since the first ready message was stored (0 when none is ready)",
  ),
  producerConnections: family(
    "rocketmq_producer_connections",
    "gauge",
    [...NODE_LABELS, "language", "version", "protocol_type"],
    "Producer connections",
  ),
  consumerConnections: family(
    "rocketmq_consumer_connections",
    "gauge",
    [...NODE_LABELS, "consumer_group", "language", "version", "consume_mode", "protocol_type", "is_system"],
    "Consumer connections",
  ),
  commitMessages: family("rocketmq_commit_messages_total", "counter", NODE_LABELS, "Transactional messages committed since start"),
  rollbackMessages: family("rocketmq_rollback_messages_total", "counter", NODE_LABELS, "Transactional messages rolled back since start"),
  rpcLatency: family(
    "rocketmq_rpc_latency_milliseconds",
    "histogram",
    [...NODE_LABELS, "protocol_type", "request_code"],
    "Time from a request's dispatch to its answer written, by request code (a parked pull includes its time parked)",
  ),
  flushBehind: family("rocketmq_storage_flush_behind_bytes", "gauge", STORAGE, "CommitLog bytes not yet flushed to disk"),
  dispatchBehind: family(
    "rocketmq_storage_dispatch_behind_bytes",
    "gauge",
    STORAGE,
    "CommitLog bytes not yet dispatched to ConsumeQueues and indexes",
  ),
  reserveTime: family("rocketmq_storage_message_reserve_time_milliseconds", "gauge", STORAGE, "Age of the oldest message kept"),
} as const;

/** 3. RocketBun's own and the process's. */
export const OWN = {
  requests: family(
    "rocketbun_requests_total",
    "counter",
    ["node_type", "request_code", "response_code"],
    "Requests since start by request code and the response code sent (none: nothing was sent, e.g. oneway)",
  ),
  remotingConnections: family("rocketbun_remoting_connections", "gauge", ["port"], "Open remoting connections by port (listen, vip, namesrv)"),
  replicationLagBytes: family(
    "rocketbun_replication_lag_bytes",
    "gauge",
    ["side", "peer"],
    "HA replication: CommitLog bytes the slave is behind (side master: per connected slave; side slave: this slave)",
  ),
  replicationLagSeconds: family(
    "rocketbun_replication_lag_seconds",
    "gauge",
    ["side", "peer"],
    "HA replication: how far behind the slave is in store time",
  ),
  replicationConnected: family(
    "rocketbun_replication_connected",
    "gauge",
    ["side"],
    "Master: slaves connected; slave: 1 while connected to its master",
  ),
  scrapeDuration: family("rocketbun_metrics_collect_seconds", "gauge", [], "Time this response took to gather the broker's state and write it"),
} as const;

export const PROCESS = {
  cpuUser: family("process_cpu_user_seconds_total", "counter", [], "User CPU time"),
  cpuSystem: family("process_cpu_system_seconds_total", "counter", [], "System CPU time"),
  cpu: family("process_cpu_seconds_total", "counter", [], "User and system CPU time"),
  startTime: family("process_start_time_seconds", "gauge", [], "Start time of the process since the epoch"),
  rss: family("process_resident_memory_bytes", "gauge", [], "Resident memory (counts touched pages of mapped store files)"),
  openFds: family("process_open_fds", "gauge", [], "Open file descriptors"),
  maxFds: family("process_max_fds", "gauge", [], "Limit of open file descriptors"),
  heapTotal: family("nodejs_heap_size_total_bytes", "gauge", [], "JavaScript heap size"),
  heapUsed: family("nodejs_heap_size_used_bytes", "gauge", [], "JavaScript heap in use"),
  external: family("nodejs_external_memory_bytes", "gauge", [], "Memory of objects outside the JavaScript heap (buffers)"),
  loopLag: family("nodejs_eventloop_lag_seconds", "gauge", [], "Event loop lag: delay of a callback queued when this response was made"),
  loopLagMin: family("nodejs_eventloop_lag_min_seconds", "gauge", [], "Smallest event loop delay since the previous scrape"),
  loopLagMax: family("nodejs_eventloop_lag_max_seconds", "gauge", [], "Largest event loop delay since the previous scrape"),
  loopLagMean: family("nodejs_eventloop_lag_mean_seconds", "gauge", [], "Mean event loop delay since the previous scrape"),
  loopLagP50: family("nodejs_eventloop_lag_p50_seconds", "gauge", [], "Median event loop delay since the previous scrape"),
  loopLagP99: family("nodejs_eventloop_lag_p99_seconds", "gauge", [], "99th percentile event loop delay since the previous scrape"),
} as const;

/** Every family, for the README table and the tests. */
export const ALL_FAMILIES: readonly Family[] = [EXPORTER, RUNTIME, V5, OWN, PROCESS].flatMap((g) => Object.values(g));

/**
 * The families whose names or label names `promtool check metrics` lints, kept for dashboard
 * compatibility (this file's header): camelCase labels and gauges named *_total or *_count
 * (exporter), and non-base units (5.x).
 */
export const LINT_EXCEPTIONS: readonly string[] = ALL_FAMILIES.filter(
  (f) =>
    f.labels.some((l) => /[A-Z]/.test(l)) ||
    f.name.includes("milliseconds") ||
    (f.type !== "counter" && f.name.endsWith("_total")) ||
    (f.type !== "histogram" && /_(count|sum|bucket)$/.test(f.name)),
).map((f) => f.name);
