/**
 * Topic names and shapes every role agrees on: RocketMQ's system topics, the retry and dead-letter
 * prefixes, the tools' consumer group, the topic-name rules (Java `TopicValidator`), the TopicConfig
 * shape of topics.json and REGISTER_BROKER and its TopicSysFlag bits (docs/PROTOCOL.md §3.15,
 * docs/STORAGE.md §5).
 */
import { PermName } from "./permission.ts";

export type TopicFilterType = "SINGLE_TAG" | "MULTI_TAG";

export interface TopicConfig {
  readonly topicName: string;
  readonly readQueueNums: number;
  readonly writeQueueNums: number;
  readonly perm: number;
  readonly topicFilterType: TopicFilterType;
  /** TOPIC_SYS_FLAG_* bits. */
  readonly topicSysFlag: number;
  readonly order: boolean;
}

/** Java `TopicSysFlag`: bit 0 a unit topic, bit 1 a topic with unit subscriptions. */
export const TOPIC_SYS_FLAG_UNIT = 0x1;
export const TOPIC_SYS_FLAG_UNIT_SUB = 0x2;

/** Java `TopicValidator.TOPIC_MAX_LENGTH`: the stored record keeps the topic length in one byte. */
export const TOPIC_NAME_MAX_CHARS = 127;

export const TOPIC_NAME_PATTERN = /^[%|a-zA-Z0-9_-]+$/;

/**
 * RocketMQ's topic rules (Java `TopicValidator.validateTopic`); null means valid. The reasons are
 * Java's remark texts, so a caller can put them in the response remark unchanged.
 */
export function validateTopicName(name: string): string | null {
  if (name.trim() === "") return "The specified topic is blank.";
  if (!TOPIC_NAME_PATTERN.test(name)) return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$";
  if (name.length > TOPIC_NAME_MAX_CHARS) return "The specified topic is longer than topic max length.";
  return null;
}

/** Java TopicValidator's SYSTEM_TOPIC_PREFIX: every `rmq_sys_*` topic is a system topic. */
export const SYSTEM_TOPIC_PREFIX = "rmq_sys_";
/** Java's CID_RMQ_SYS_PREFIX: every `CID_RMQ_SYS_*` group is a system group. */
export const SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_";

export const SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX";
export const SELF_TEST_TOPIC = "SELF_TEST_TOPIC";
export const OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT";
export const AUTO_CREATE_TOPIC = "TBW102";
export const BENCHMARK_TOPIC = "BenchmarkTest";
export const TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC";
export const TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC";
export const TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
export const TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC";

/** Java `TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`: producers may not send to these directly. */
const NOT_ALLOWED_SEND = new Set([
  SCHEDULE_TOPIC,
  TRANS_HALF_TOPIC,
  TRANS_OP_HALF_TOPIC,
  TRANS_CHECK_MAX_TIME_TOPIC,
  SELF_TEST_TOPIC,
  OFFSET_MOVED_EVENT,
]);

export function isNotAllowedSendTopic(name: string): boolean {
  return NOT_ALLOWED_SEND.has(name);
}

/** A consumer group's retry topic is `%RETRY%` + group; past maxReconsumeTimes, `%DLQ%` + group. */
export const RETRY_GROUP_TOPIC_PREFIX = "%RETRY%";
export const DLQ_GROUP_TOPIC_PREFIX = "%DLQ%";

export function retryTopic(group: string): string {
  return RETRY_GROUP_TOPIC_PREFIX + group;
}

export function dlqTopic(group: string): string {
  return DLQ_GROUP_TOPIC_PREFIX + group;
}

/** Java `MixAll.TOOLS_CONSUMER_GROUP`: the group mqadmin's pulls name; a 4.9 broker pre-creates it. */
export const TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER";

/** Java `TopicConfig` bean defaults, applied to fields a file or body leaves out. */
export function defaultTopicConfig(topicName: string): TopicConfig {
  const perm = PermName.READ | PermName.WRITE;
  return { topicName, readQueueNums: 16, writeQueueNums: 16, perm, topicFilterType: "SINGLE_TAG", topicSysFlag: 0, order: false };
}
