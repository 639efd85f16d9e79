/**
 * TopicAdminProcessor: UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER, GET_ALL_TOPIC_CONFIG
 * (docs/PROTOCOL.md §3.10, §3.15). A slave refuses writes: its topics follow its master.
 */
import { jsonBytes } from "../../common/json.ts";
import {
  AUTO_CREATE_TOPIC,
  BENCHMARK_TOPIC,
  OFFSET_MOVED_EVENT,
  SCHEDULE_TOPIC,
  SELF_TEST_TOPIC,
  TRACE_TOPIC,
  TRANS_CHECK_MAX_TIME_TOPIC,
  TRANS_HALF_TOPIC,
  TRANS_OP_HALF_TOPIC,
  validateTopicName,
  type TopicConfig,
  type TopicFilterType,
  SYSTEM_TOPIC_PREFIX,
} from "../../protocol/topics.ts";
import {
  createResponse,
  optBool,
  optInt,
  optString,
  reqInt,
  reqString,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import type { BrokerContext, BrokerSettings, OpRefusal } from "../context.ts";

/** Java's TopicValidator.SYSTEM_TOPIC_SET (plus the per-broker names a 4.9 broker adds to it). */
const SYSTEM_TOPICS = new Set([
  AUTO_CREATE_TOPIC,
  SCHEDULE_TOPIC,
  BENCHMARK_TOPIC,
  TRANS_HALF_TOPIC,
  TRANS_OP_HALF_TOPIC,
  TRANS_CHECK_MAX_TIME_TOPIC,
  SELF_TEST_TOPIC,
  OFFSET_MOVED_EVENT,
  TRACE_TOPIC,
]);

/** A topic to create or replace, as UPDATE_AND_CREATE_TOPIC's header (or the admin API's body) gives it. */
export interface TopicInput {
  topicName: string;
  readQueueNums: number;
  writeQueueNums: number;
  perm: number;
  /** SINGLE_TAG (default) or MULTI_TAG; anything else is refused. */
  topicFilterType?: string;
  topicSysFlag?: number;
  order?: boolean;
}

const refuse = (refused: OpRefusal["refused"], remark: string): OpRefusal => ({ refused, code: ResponseCode.SYSTEM_ERROR, remark });

/** Java's TopicValidator.isSystemTopic plus the per-broker names (cluster, broker, reply topic). */
function isSystemTopic(s: BrokerSettings, topic: string): boolean {
  if (SYSTEM_TOPICS.has(topic) || topic.startsWith(SYSTEM_TOPIC_PREFIX)) return true;
  return topic === s.clusterName || topic === s.brokerName || topic === `${s.clusterName}_REPLY_TOPIC`;
}

/** Why this broker may not change `topic` (a slave, a name that is not a topic name, a system topic), or null. */
function topicChangeRefusal(ctx: BrokerContext, topic: string): OpRefusal | null {
  if (ctx.role.isSlave) return refuse("conflict", `broker ${ctx.settings.brokerName} is a slave: change topics on its master`);
  // The name becomes a directory under consumequeue/: never act on one that is not a topic name.
  const bad = validateTopicName(topic);
  if (bad) return refuse("invalid", bad);
  // Neither created over nor deleted: the broker itself depends on these.
  if (isSystemTopic(ctx.settings, topic)) return refuse("conflict", `The topic[${topic}] is conflict with system topic.`);
  return null;
}

/** UPDATE_AND_CREATE_TOPIC (and the admin API's POST/PUT /topics): create or replace one topic, then re-register. */
export function upsertTopic(ctx: BrokerContext, t: TopicInput): OpRefusal | null {
  const refused = topicChangeRefusal(ctx, t.topicName);
  if (refused) return refused;
  const filter = t.topicFilterType ?? "SINGLE_TAG";
  if (filter !== "SINGLE_TAG" && filter !== "MULTI_TAG") return refuse("invalid", `topicFilterType must be SINGLE_TAG or MULTI_TAG, got ${filter}`);
  const cfg: TopicConfig = {
    topicName: t.topicName,
    readQueueNums: t.readQueueNums,
    writeQueueNums: t.writeQueueNums,
    perm: t.perm,
    topicFilterType: filter as TopicFilterType,
    topicSysFlag: t.topicSysFlag ?? 0,
    order: t.order ?? false,
  };
  if (cfg.readQueueNums < 0 || cfg.writeQueueNums < 0 || cfg.readQueueNums > 65535 || cfg.writeQueueNums > 65535) {
    return refuse("invalid", "readQueueNums and writeQueueNums must be between 0 and 65535");
  }
  if (cfg.perm < 0 || cfg.perm > 15) return refuse("invalid", `perm must be between 0 and 15, got ${cfg.perm}`);
  const problem = ctx.topics.upsert(cfg);
  if (problem) return refuse("invalid", problem);
  ctx.topicsChanged();
  return null;
}

/** DELETE_TOPIC_IN_BROKER (and DELETE /topics/:topic): the config, the ConsumeQueues and the group offsets of the topic. */
export function deleteTopicInBroker(ctx: BrokerContext, topic: string): OpRefusal | null {
  const refused = topicChangeRefusal(ctx, topic);
  if (refused) return refused;
  ctx.topics.delete(topic);
  ctx.store.deleteTopics([topic]);
  ctx.consumerOffsets.removeTopic(topic);
  ctx.topicsChanged();
  return null;
}

export class TopicAdminProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;

  constructor(ctx: BrokerContext) {
    this.#ctx = ctx;
  }

  static readonly CODES = [RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.DELETE_TOPIC_IN_BROKER, RequestCode.GET_ALL_TOPIC_CONFIG];

  process(_conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand {
    const ctx = this.#ctx;
    if (cmd.code === RequestCode.GET_ALL_TOPIC_CONFIG) {
      return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, jsonBytes(ctx.topics.wrapper()));
    }
    const ext = cmd.extFields;
    const topic = reqString(ext, "topic");
    const refused =
      cmd.code === RequestCode.DELETE_TOPIC_IN_BROKER
        ? deleteTopicInBroker(ctx, topic)
        : upsertTopic(ctx, {
            topicName: topic,
            readQueueNums: reqInt(ext, "readQueueNums"),
            writeQueueNums: reqInt(ext, "writeQueueNums"),
            perm: reqInt(ext, "perm"),
            topicFilterType: optString(ext, "topicFilterType") ?? "SINGLE_TAG",
            topicSysFlag: optInt(ext, "topicSysFlag") ?? 0,
            order: optBool(ext, "order") ?? false,
          });
    return refused ? createResponse(cmd, refused.code, refused.remark) : createResponse(cmd, ResponseCode.SUCCESS);
  }
}
