/**
 * AdminProcessor: the admin-tool and slave-sync requests of docs/PROTOCOL.md §3.11 and §3.15
 * (Java `AdminBrokerProcessor`):
 *
 *   GET_BROKER_RUNTIME_INFO (28)               → {"table":{...}} (see admin-bodies.ts)
 *   GET_CONSUMER_CONNECTION_LIST (203)          consumerGroup → ConsumerConnection | CONSUMER_NOT_ONLINE
 *   GET_PRODUCER_CONNECTION_LIST (204)          producerGroup → ProducerConnection | SYSTEM_ERROR
 *   GET_ALL_CONSUMER_OFFSET (43), GET_ALL_DELAY_OFFSET (45), GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201)
 *   UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200)   body = one SubscriptionGroupConfig
 *   DELETE_SUBSCRIPTIONGROUP (207)              groupName, removeOffset
 *   LOCK_BATCH_MQ (41) / UNLOCK_BATCH_MQ (42)   body {consumerGroup, clientId, mqSet}
 *   GET_TOPIC_STATS_INFO (202)                  topic → TopicStatsTable | TOPIC_NOT_EXIST
 *   GET_CONSUME_STATS (208)                     consumerGroup [, topic] → ConsumeStats (pullOffset counts POP messages in flight)
 *   GET_BROKER_CONFIG (26)                      → body "key=value\n" lines, extFields version = DataVersion JSON
 *   UPDATE_BROKER_CONFIG (25)                   body "key=value\n" lines → SUCCESS, or NO_PERMISSION for a
 *                                               key that needs a restart, SYSTEM_ERROR for an unknown key or bad value
 *   QUERY_TOPIC_CONSUME_BY_WHO (300)            topic → GroupList {"groupList":[..]}: online subscribers ∪ groups with offsets
 *   CLEAN_EXPIRED_CONSUMEQUEUE (306)            → SUCCESS; drops the ConsumeQueues of topics whose every queue points
 *                                               only below the CommitLog's minimum offset (not SCHEDULE_TOPIC_XXXX)
 *   VIEW_BROKER_STATS_DATA (315)                statsName, statsKey → BrokerStatsData {"statsDay","statsHour","statsMinute"}
 *                                               each {avgpt,sum,tps} | SYSTEM_ERROR "The stats <n> <k> not exist"
 *   GET_ALL_PRODUCER_INFO (328)                 → ProducerTableInfo {"data":{group:[{clientId,language,lastUpdateTimestamp,remoteIP,version}]}}
 *   GET_TOPIC_CONFIG (351, 5.x)                 topic → TopicConfig JSON | TOPIC_NOT_EXIST "No topic in this broker. topic: t"
 *   GET_SUBSCRIPTIONGROUP_CONFIG (352, 5.x)     group → SubscriptionGroupConfig JSON | SUBSCRIPTION_GROUP_NOT_EXIST "No group in this broker"
 *
 * A slave refuses the two subscription-group writes: its groups follow its master.
 */
import { jsonBytes, parseJsonBytes } from "../../common/json.ts";
import { subscriptionGroupFromJson } from "../metadata.ts";
import { SCHEDULE_TOPIC } from "../../protocol/topics.ts";
import {
  answerConfigUpdate,
  createResponse,
  optBool,
  optString,
  reqString,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import {
  consumeStats,
  consumeStatsBody,
  consumerConnectionBody,
  mqJson,
  producerConnectionBody,
  runtimeInfo,
  topicStats,
  topicStatsBody,
} from "../admin-bodies.ts";
import type { BrokerConfigAccess } from "../broker.ts";
import type { BrokerContext, OpRefusal } from "../context.ts";
import { RebalanceLockManager } from "../rebalance-lock.ts";
import { PopInflightIndex, type InflightSource } from "../pop/pop-view.ts";
import { type MessageQueue } from "../../protocol/route.ts";
import { BrokerStats, StatsName } from "../stats.ts";

const SLAVE_REFUSAL = "Can't modify topic or subscription group from slave broker, please execute it from master broker.";

const encoder = new TextEncoder();

function ok(cmd: RemotingCommand, body?: Uint8Array): RemotingCommand {
  return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, body);
}

export interface LockBatchBody {
  consumerGroup: string;
  clientId: string;
  mqSet: MessageQueue[];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Validates a LockBatchRequestBody / UnlockBatchRequestBody into a typed value or a reason. */
export function decodeLockBatchBody(body: Uint8Array | undefined): LockBatchBody | { invalid: string } {
  if (!body || body.length === 0) return { invalid: "the request has no body" };
  let raw: unknown;
  try {
    raw = parseJsonBytes(body);
  } catch (e) {
    return { invalid: `the body is not JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (!isRecord(raw)) return { invalid: "the body is not a JSON object" };
  const { consumerGroup, clientId } = raw;
  if (typeof consumerGroup !== "string" || consumerGroup === "") return { invalid: "consumerGroup is missing" };
  if (typeof clientId !== "string" || clientId === "") return { invalid: "clientId is missing" };
  const list = raw.mqSet ?? [];
  if (!Array.isArray(list)) return { invalid: "mqSet is not an array" };
  const mqSet: MessageQueue[] = [];
  for (const [i, m] of list.entries()) {
    if (!isRecord(m) || typeof m.topic !== "string" || typeof m.brokerName !== "string") {
      return { invalid: `mqSet[${i}] needs a topic and a brokerName` };
    }
    const queueId = typeof m.queueId === "string" && /^\d+$/.test(m.queueId) ? Number(m.queueId) : m.queueId;
    if (typeof queueId !== "number" || !Number.isInteger(queueId) || queueId < 0) return { invalid: `mqSet[${i}].queueId is not a queue id` };
    mqSet.push({ topic: m.topic, brokerName: m.brokerName, queueId });
  }
  return { consumerGroup, clientId, mqSet };
}

/**
 * UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (and the admin API's POST/PUT /groups): one
 * SubscriptionGroupConfig as JSON, missing fields at Java's defaults, created or replaced.
 */
export function upsertGroup(ctx: BrokerContext, raw: unknown, from: string): OpRefusal | null {
  if (ctx.role.isSlave) return { refused: "conflict", code: ResponseCode.SYSTEM_ERROR, remark: SLAVE_REFUSAL };
  const cfg = subscriptionGroupFromJson(raw);
  if ("invalid" in cfg) return { refused: "invalid", code: ResponseCode.SYSTEM_ERROR, remark: `bad SubscriptionGroupConfig: ${cfg.invalid}` };
  const problem = ctx.groups.upsert(cfg);
  if (problem) return { refused: "invalid", code: ResponseCode.SYSTEM_ERROR, remark: problem };
  ctx.log.info(`subscription group ${cfg.groupName} updated by ${from}`);
  return null;
}

/** DELETE_SUBSCRIPTIONGROUP (and DELETE /groups/:group): the group's config, and its offsets when asked. */
export function deleteGroup(ctx: BrokerContext, group: string, removeOffset: boolean, from: string): OpRefusal | null {
  if (ctx.role.isSlave) return { refused: "conflict", code: ResponseCode.SYSTEM_ERROR, remark: SLAVE_REFUSAL };
  const existed = ctx.groups.delete(group);
  const offsets = removeOffset ? ctx.consumerOffsets.removeGroup(group) : 0;
  ctx.log.info(`subscription group ${group} deleted by ${from} (existed: ${existed}, offsets removed: ${offsets})`);
  return null;
}

export class AdminProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;
  readonly #stats: BrokerStats;
  readonly #locks: RebalanceLockManager;
  readonly #config: BrokerConfigAccess | undefined;
  readonly #pop: InflightSource | undefined;

  /**
   * `stats` is the broker's BrokerStats, fed by the send and pull paths; `locks` the rebalance
   * lock table (one per broker; only this processor uses it); `config` reads and changes the
   * broker configuration (the process's runtime config owns it); `pop` the POP in-flight table
   * (GET_CONSUME_STATS counts it).
   */
  constructor(ctx: BrokerContext, stats?: BrokerStats, locks?: RebalanceLockManager, config?: BrokerConfigAccess, pop?: InflightSource) {
    this.#ctx = ctx;
    this.#config = config;
    this.#pop = pop;
    this.#stats = stats ?? new BrokerStats({ now: ctx.now });
    this.#locks = locks ?? new RebalanceLockManager({ now: ctx.now });
  }

  static readonly CODES = [
    RequestCode.GET_BROKER_RUNTIME_INFO,
    RequestCode.GET_CONSUMER_CONNECTION_LIST,
    RequestCode.GET_PRODUCER_CONNECTION_LIST,
    RequestCode.GET_ALL_CONSUMER_OFFSET,
    RequestCode.GET_ALL_DELAY_OFFSET,
    RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    RequestCode.DELETE_SUBSCRIPTIONGROUP,
    RequestCode.LOCK_BATCH_MQ,
    RequestCode.UNLOCK_BATCH_MQ,
    RequestCode.GET_TOPIC_STATS_INFO,
    RequestCode.GET_CONSUME_STATS,
    RequestCode.GET_BROKER_CONFIG,
    RequestCode.UPDATE_BROKER_CONFIG,
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
    RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
    RequestCode.VIEW_BROKER_STATS_DATA,
    RequestCode.GET_ALL_PRODUCER_INFO,
    RequestCode.GET_TOPIC_CONFIG,
    RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG,
  ];

  process(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | Promise<RemotingCommand> {
    const ctx = this.#ctx;
    switch (cmd.code) {
      case RequestCode.GET_BROKER_RUNTIME_INFO:
        return ok(cmd, jsonBytes({ table: runtimeInfo(ctx, this.#stats) }));
      case RequestCode.GET_CONSUMER_CONNECTION_LIST:
        return this.#consumerConnections(cmd);
      case RequestCode.GET_PRODUCER_CONNECTION_LIST:
        return this.#producerConnections(cmd);
      case RequestCode.GET_ALL_CONSUMER_OFFSET:
        return ok(cmd, jsonBytes(ctx.consumerOffsets.table()));
      case RequestCode.GET_ALL_DELAY_OFFSET:
        return ok(cmd, jsonBytes(ctx.delayOffsets.table()));
      case RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG:
        return ok(cmd, jsonBytes(ctx.groups.wrapper()));
      case RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP:
        return this.#updateGroup(conn, cmd);
      case RequestCode.DELETE_SUBSCRIPTIONGROUP:
        return this.#deleteGroup(conn, cmd);
      case RequestCode.LOCK_BATCH_MQ:
      case RequestCode.UNLOCK_BATCH_MQ:
        return this.#lockBatch(cmd);
      case RequestCode.GET_BROKER_CONFIG:
        return this.#brokerConfig(cmd);
      case RequestCode.UPDATE_BROKER_CONFIG:
        return this.#updateConfig(conn, cmd);
      case RequestCode.GET_TOPIC_STATS_INFO:
        return this.#topicStats(cmd);
      case RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: {
        const topic = reqString(cmd.extFields, "topic");
        return ok(cmd, jsonBytes({ groupList: [...new Set([...ctx.consumers.groupsOfTopic(topic), ...ctx.consumerOffsets.groupsOf(topic)])] }));
      }
      case RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE:
        this.#cleanExpiredConsumeQueues(conn);
        return ok(cmd);
      case RequestCode.VIEW_BROKER_STATS_DATA:
        return this.#viewStats(cmd);
      case RequestCode.GET_ALL_PRODUCER_INFO:
        return this.#allProducerInfo(cmd);
      case RequestCode.GET_TOPIC_CONFIG:
        return this.#topicConfig(cmd);
      case RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: {
        const g = ctx.groups.get(reqString(cmd.extFields, "group"));
        if (!g) return createResponse(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker");
        return ok(cmd, jsonBytes(g));
      }
      default:
        return this.#consumeStats(cmd);
    }
  }

  #consumerConnections(cmd: RemotingCommand): RemotingCommand {
    const group = reqString(cmd.extFields, "consumerGroup");
    const g = this.#ctx.consumers.group(group);
    if (!g || g.channels.size === 0) return createResponse(cmd, ResponseCode.CONSUMER_NOT_ONLINE, `the consumer group[${group}] not online`);
    return ok(cmd, jsonBytes(consumerConnectionBody(g)));
  }

  #producerConnections(cmd: RemotingCommand): RemotingCommand {
    const group = reqString(cmd.extFields, "producerGroup");
    const channels = this.#ctx.producers.channels(group);
    if (channels.length === 0) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `the producer group[${group}] not exist`);
    return ok(cmd, jsonBytes(producerConnectionBody(channels)));
  }

  #brokerConfig(cmd: RemotingCommand): RemotingCommand {
    if (!this.#config) return createResponse(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, `request code ${cmd.code} not supported`);
    const { properties, version } = this.#config.get();
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, { version }, encoder.encode(properties));
  }

  #topicStats(cmd: RemotingCommand): RemotingCommand {
    const topic = reqString(cmd.extFields, "topic");
    const tc = this.#ctx.topics.get(topic);
    if (!tc) return createResponse(cmd, ResponseCode.TOPIC_NOT_EXIST, `topic[${topic}] not exist`);
    return ok(cmd, encoder.encode(topicStatsBody(topicStats(this.#ctx, tc))));
  }

  #allProducerInfo(cmd: RemotingCommand): RemotingCommand {
    const producers = this.#ctx.producers;
    const data: Record<string, unknown[]> = {};
    for (const g of producers.groupNames()) {
      data[g] = producers.channels(g).map((ch) => ({
        clientId: ch.clientId,
        language: ch.language,
        lastUpdateTimestamp: ch.lastUpdateTimestamp,
        remoteIP: `/${ch.conn.remoteAddress}`,
        version: ch.version,
      }));
    }
    return ok(cmd, jsonBytes({ data }));
  }

  #topicConfig(cmd: RemotingCommand): RemotingCommand {
    const topic = reqString(cmd.extFields, "topic");
    const tc = this.#ctx.topics.get(topic);
    if (!tc) return createResponse(cmd, ResponseCode.TOPIC_NOT_EXIST, `No topic in this broker. topic: ${topic}`);
    const { order, perm, readQueueNums, topicFilterType, topicName, topicSysFlag, writeQueueNums } = tc;
    return ok(cmd, jsonBytes({ attributes: {}, order, perm, readQueueNums, topicFilterType, topicName, topicSysFlag, writeQueueNums }));
  }

  /** GET_CONSUME_STATS (the codes this processor owns that no case above names). */
  #consumeStats(cmd: RemotingCommand): RemotingCommand {
    const group = reqString(cmd.extFields, "consumerGroup");
    const entries = consumeStats(this.#ctx, group, optString(cmd.extFields, "topic"), new PopInflightIndex(this.#pop));
    // Java sums each topic's GROUP_GET_NUMS rate over the last minute.
    let tps = 0;
    for (const topic of new Set(entries.map(([mq]) => mq.topic))) tps += this.#stats.items.minuteTps(StatsName.GROUP_GET_NUMS, `${topic}@${group}`);
    return ok(cmd, encoder.encode(consumeStatsBody(entries, tps)));
  }

  #viewStats(cmd: RemotingCommand): RemotingCommand {
    const name = reqString(cmd.extFields, "statsName");
    const key = reqString(cmd.extFields, "statsKey");
    const known = (Object.values(StatsName) as string[]).includes(name) ? (name as StatsName) : undefined;
    // The broker-wide items are keyed by the cluster name, as in Java's BrokerStatsManager.
    const broker = known === StatsName.BROKER_PUT_NUMS || known === StatsName.BROKER_GET_NUMS;
    const view =
      known === undefined || (broker && key !== this.#ctx.settings.clusterName) ? undefined : this.#stats.items.view(known, broker ? "" : key);
    if (!view) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `The stats <${name}> <${key}> not exist`);
    const body = jsonBytes({ statsDay: view.statsDay, statsHour: view.statsHour, statsMinute: view.statsMinute });
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, body);
  }

  /** Java DefaultMessageStore.cleanExpiredConsumerQueue, per topic: a queue still empty is kept. */
  #cleanExpiredConsumeQueues(conn: RemotingConnection): void {
    const store = this.#ctx.store;
    const min = store.minPhyOffset;
    const expired: string[] = [];
    for (const [topic, queueIds] of store.queues()) {
      if (topic === SCHEDULE_TOPIC || queueIds.length === 0) continue;
      const allBelow = queueIds.every((q) => {
        const max = store.getMaxOffsetInQueue(topic, q);
        if (max <= 0) return false;
        // Retention moves a queue's min offset past every unit pointing below the CommitLog's
        // minimum, so a queue it emptied has min = max and its last unit is no longer readable.
        if (store.getMinOffsetInQueue(topic, q) >= max) return true;
        const last = store.getCommitLogOffsetInQueue(topic, q, max - 1);
        return last >= 0 && last < min;
      });
      if (allBelow) expired.push(topic);
    }
    if (expired.length > 0) store.deleteTopics(expired);
    const dropped = expired.length > 0 ? `: ${expired.join(", ")}` : "";
    this.#ctx.log.info(`CLEAN_EXPIRED_CONSUMEQUEUE from ${conn.remoteAddress}: ${expired.length} topic(s) dropped${dropped}`);
  }

  async #updateConfig(conn: RemotingConnection, cmd: RemotingCommand): Promise<RemotingCommand> {
    const config = this.#config;
    if (!config) return createResponse(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, `request code ${cmd.code} not supported`);
    return answerConfigUpdate(cmd, conn.remoteAddress, (text, from) => config.update(text, from));
  }

  #updateGroup(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand {
    const ctx = this.#ctx;
    if (ctx.role.isSlave) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, SLAVE_REFUSAL);
    if (!cmd.body || cmd.body.length === 0) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, "the request has no SubscriptionGroupConfig body");
    let raw: unknown;
    try {
      raw = parseJsonBytes(cmd.body);
    } catch (e) {
      return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `the body is not JSON: ${e instanceof Error ? e.message : String(e)}`);
    }
    const refused = upsertGroup(ctx, raw, conn.remoteAddress);
    return refused ? createResponse(cmd, refused.code, refused.remark) : createResponse(cmd, ResponseCode.SUCCESS);
  }

  #deleteGroup(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand {
    const refused = deleteGroup(
      this.#ctx,
      reqString(cmd.extFields, "groupName"),
      optBool(cmd.extFields, "removeOffset") ?? false,
      conn.remoteAddress,
    );
    return refused ? createResponse(cmd, refused.code, refused.remark) : createResponse(cmd, ResponseCode.SUCCESS);
  }

  #lockBatch(cmd: RemotingCommand): RemotingCommand {
    const b = decodeLockBatchBody(cmd.body);
    if ("invalid" in b) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, b.invalid);
    if (cmd.code === RequestCode.UNLOCK_BATCH_MQ) {
      // Members refused a released queue rebalance now, not at their next 20 s rebalance
      // (../rebalance-lock.ts): an orderly hand-over takes milliseconds.
      const waiters = this.#locks.unlockBatch(b.consumerGroup, b.mqSet, b.clientId);
      if (waiters.size > 0) this.#ctx.consumers.notifyMembers(b.consumerGroup, waiters);
      return createResponse(cmd, ResponseCode.SUCCESS);
    }
    const held = this.#locks.tryLockBatch(b.consumerGroup, b.mqSet, b.clientId);
    const body = { lockOKMQSet: held.map((mq) => mqJson(mq.topic, mq.brokerName, mq.queueId)) };
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, jsonBytes(body));
  }
}
