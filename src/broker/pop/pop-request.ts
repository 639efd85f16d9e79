/**
 * The checks POP_MESSAGE, PEEK_MESSAGE and NOTIFICATION share (RocketMQ 5.3's order, codes and
 * remarks; docs/PROTOCOL.md §3.21), and 5.x's lenient header reading: a missing or unparsable
 * field keeps Java's default instead of failing the request.
 */
import { isReadable } from "../../protocol/permission.ts";
import type { TopicConfig } from "../../protocol/topics.ts";
import { ResponseCode, type ExtFields, type RemotingConnection } from "../../remoting/index.ts";
import type { BrokerContext } from "../context.ts";
import type { SubscriptionGroupConfig } from "../metadata-groups.ts";
import { buildSubscription, recordFilter, tagCodeFilter, type SubscriptionData } from "../subscription.ts";

/** The line Java's refusals of a missing topic or group end with. */
export const FAQ = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";

export interface Refusal {
  code: number;
  remark: string;
}

/** A header field as Java 5.3 decodes it: the number, or `dflt` when missing or not a number. */
export function num(ext: ExtFields | undefined, key: string, dflt: number): number {
  const v = ext?.[key];
  if (v === undefined || !/^-?\d{1,19}$/.test(v)) return dflt;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : dflt;
}

export function str(ext: ExtFields | undefined, key: string): string {
  return ext?.[key] ?? "";
}

export function bool(ext: ExtFields | undefined, key: string): boolean {
  return ext?.[key]?.toLowerCase() === "true";
}

export interface Validated {
  group: SubscriptionGroupConfig;
  tc: TopicConfig;
}

/**
 * Topic, queue and group checks (steps 5–9 of PopMessageProcessor; this broker has no
 * brokerPermission of its own to check first: a name server's wiped write permission is the name
 * server's).
 */
export function validateRead(
  ctx: BrokerContext,
  conn: RemotingConnection,
  topic: string,
  groupName: string,
  queueId: number,
): Validated | Refusal {
  const tc = ctx.topics.get(topic);
  if (!tc) return { code: ResponseCode.TOPIC_NOT_EXIST, remark: `topic[${topic}] not exist, apply first please! ${FAQ}` };
  if (!isReadable(tc.perm)) return { code: ResponseCode.NO_PERMISSION, remark: `the topic[${topic}] peeking message is forbidden` };
  if (queueId >= tc.readQueueNums) {
    const remark = `queueId[${queueId}] is illegal, topic:[${topic}] topicConfig.readQueueNums:[${tc.readQueueNums}] consumer:[/${conn.remoteAddress}]`;
    return { code: ResponseCode.INVALID_PARAMETER, remark };
  }
  const group = ctx.groups.findOrCreate(groupName, ctx.settings.autoCreateSubscriptionGroup);
  if (!group) return { code: ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark: `subscription group [${groupName}] does not exist, ${FAQ}` };
  if (!group.consumeEnable) return { code: ResponseCode.NO_PERMISSION, remark: `subscription group no permission, ${groupName}` };
  return { group, tc };
}

export interface PopFilter {
  sub: SubscriptionData;
  tagFilter: ((tagsCode: number) => boolean) | undefined;
  recordFilter: ((record: Uint8Array) => boolean) | undefined;
}

/** The request's expression (TAG when no type; "*" when none), or SUBSCRIPTION_PARSE_FAILED (23). */
export function popFilter(ctx: BrokerContext, topic: string, exp: string, expType: string): PopFilter | Refusal {
  const type = expType === "" ? "TAG" : expType;
  const s = buildSubscription(topic, exp === "" ? "*" : exp, type, 0, ctx.settings.enablePropertyFilter);
  if ("invalid" in s) return { code: ResponseCode.SUBSCRIPTION_PARSE_FAILED, remark: "parse the consumer's subscription failed" };
  return { sub: s, tagFilter: tagCodeFilter(s), recordFilter: recordFilter(s) };
}
