/**
 * The checks Apache's proxy runs on a request's names before anything else (docs/PROTOCOL.md
 * §9.2): topics (ILLEGAL_TOPIC 40002) and consumer groups (ILLEGAL_CONSUMER_GROUP 40003), with
 * its texts. A check returns the Status to answer, or null.
 */
import {
  AUTO_CREATE_TOPIC,
  BENCHMARK_TOPIC,
  OFFSET_MOVED_EVENT,
  SCHEDULE_TOPIC,
  SYSTEM_GROUP_PREFIX,
  SYSTEM_TOPIC_PREFIX,
  SELF_TEST_TOPIC,
  TRACE_TOPIC,
  TRANS_CHECK_MAX_TIME_TOPIC,
  TRANS_HALF_TOPIC,
  TRANS_OP_HALF_TOPIC,
  validateTopicName,
} from "../protocol/topics.ts";
import { GROUP_NAME_MAX_CHARS, GROUP_NAME_PATTERN } from "../broker/index.ts";
import { Code } from "./codes.ts";
import type { Resource, Status } from "./messages.ts";

/** The topics no gRPC client may name (the proxy's system topic set), besides any `rmq_sys_*`. */
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

export function topicProblem(r: Resource | null | undefined): Status | null {
  const name = r?.name ?? "";
  const why = validateTopicName(name);
  if (why) return { code: Code.ILLEGAL_TOPIC, message: why.replace("The specified topic", `The specified topic[${name}]`) };
  if (SYSTEM_TOPICS.has(name) || name.startsWith(SYSTEM_TOPIC_PREFIX))
    return { code: Code.ILLEGAL_TOPIC, message: `cannot access system topic: ${name}` };
  return null;
}

export function groupProblem(r: Resource | null | undefined): Status | null {
  const name = r?.name ?? "";
  if (name.trim() === "") return { code: Code.ILLEGAL_CONSUMER_GROUP, message: "consumer group cannot be blank" };
  if (name.length > GROUP_NAME_MAX_CHARS) {
    return { code: Code.ILLEGAL_CONSUMER_GROUP, message: `consumer group ${name} is longer than ${GROUP_NAME_MAX_CHARS}` };
  }
  if (!GROUP_NAME_PATTERN.test(name)) {
    return { code: Code.ILLEGAL_CONSUMER_GROUP, message: `consumer group ${name} contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$` };
  }
  if (name.startsWith(SYSTEM_GROUP_PREFIX)) return { code: Code.ILLEGAL_CONSUMER_GROUP, message: `cannot use system consumer group: ${name}` };
  return null;
}

/** Java's Character.isISOControl: C0 controls, DEL and the C1 controls. */
export function hasControlChar(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c <= 0x1f || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}
