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
import type { BrokerContext } from "../context.ts";

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
const SYSTEM_TOPIC_PREFIX = "rmq_sys_";

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
    if (ctx.settings.brokerRole === "SLAVE") {
      return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `broker ${ctx.settings.brokerName} is a slave: change topics on its master`);
    }
    const topic = reqString(cmd.extFields, "topic");
    // The name becomes a directory under consumequeue/: never act on one that is not a topic name.
    const bad = validateTopicName(topic);
    if (bad) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, bad);
    // Neither created over nor deleted: the broker itself depends on these.
    if (this.#isSystemTopic(topic)) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `The topic[${topic}] is conflict with system topic.`);
    if (cmd.code === RequestCode.DELETE_TOPIC_IN_BROKER) {
      ctx.topics.delete(topic);
      ctx.store.deleteTopics([topic]);
      ctx.consumerOffsets.removeTopic(topic);
      ctx.topicsChanged();
      return createResponse(cmd, ResponseCode.SUCCESS);
    }
    const ext = cmd.extFields;
    const filter = optString(ext, "topicFilterType") ?? "SINGLE_TAG";
    if (filter !== "SINGLE_TAG" && filter !== "MULTI_TAG")
      return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `topicFilterType must be SINGLE_TAG or MULTI_TAG, got ${filter}`);
    const cfg: TopicConfig = {
      topicName: topic,
      readQueueNums: reqInt(ext, "readQueueNums"),
      writeQueueNums: reqInt(ext, "writeQueueNums"),
      perm: reqInt(ext, "perm"),
      topicFilterType: filter as TopicFilterType,
      topicSysFlag: optInt(ext, "topicSysFlag") ?? 0,
      order: optBool(ext, "order") ?? false,
    };
    if (cfg.readQueueNums < 0 || cfg.writeQueueNums < 0 || cfg.readQueueNums > 65535 || cfg.writeQueueNums > 65535) {
      return createResponse(cmd, ResponseCode.SYSTEM_ERROR, "readQueueNums and writeQueueNums must be between 0 and 65535");
    }
    if (cfg.perm < 0 || cfg.perm > 15) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `perm must be between 0 and 15, got ${cfg.perm}`);
    const problem = ctx.topics.upsert(cfg);
    if (problem) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, problem);
    ctx.topicsChanged();
    return createResponse(cmd, ResponseCode.SUCCESS);
  }

  #isSystemTopic(topic: string): boolean {
    const s = this.#ctx.settings;
    if (SYSTEM_TOPICS.has(topic) || topic.startsWith(SYSTEM_TOPIC_PREFIX)) return true;
    return topic === s.clusterName || topic === s.brokerName || topic === `${s.clusterName}_REPLY_TOPIC`;
  }
}
