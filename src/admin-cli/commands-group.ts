/**
 * Consumer and producer group commands: consumerProgress, consumerConnection, producerConnection,
 * updateSubGroup, deleteSubGroup (mqadmin 4.9.8's ConsumerProgressSubCommand, …; docs/PROTOCOL.md
 * §3.15), and mqadmin 5.3.3's setConsumeMode (docs/PROTOCOL.md §3.22). A group's brokers are
 * those of its retry topic `%RETRY%<group>`, as DefaultMQAdminExt finds them. resetOffsetByTime
 * is in commands-offset.ts.
 */
import { jsonBytes } from "../common/json.ts";
import { RequestCode, ResponseCode } from "../remoting/index.ts";
import { dlqTopic, RETRY_GROUP_TOPIC_PREFIX, retryTopic } from "../protocol/topics.ts";
import { MASTER_ID, type MessageQueue } from "../protocol/route.ts";
import type { OffsetWrapper } from "../protocol/admin-bodies.ts";
import { MESSAGE_REQUEST_MODES, setMessageRequestModeJson, type MessageRequestMode } from "../protocol/message-request-mode.ts";
import { INT32_MAX } from "../common/int32.ts";
import { UsageError } from "./flags.ts";
import { mapLimit, readable, type Command, type CommandContext, type Output } from "./command.ts";
import {
  mqVersionName,
  parseConsumeStats,
  parseConsumerConnection,
  parseNameList,
  parseProducerConnection,
  parseRunningInfoQueues,
  type ConsumerConnectionInfo,
} from "./bodies.ts";
import { AdminError, selectBrokerAddr, type AdminSession } from "./session.ts";
import { humanTime, renderTable } from "./table.ts";

export interface ConsumeStats {
  consumeTps: number;
  offsets: [MessageQueue, OffsetWrapper][];
}

/** GET_CONSUME_STATS from every broker of the group's retry topic, merged (examineConsumeStats). */
export async function consumeStats(s: AdminSession, group: string, topic?: string): Promise<ConsumeStats> {
  const route = await s.route(retryTopic(group));
  if (route === null)
    throw new AdminError(`consumer group ${group} is not known: it has no retry topic (it never connected)`, ResponseCode.CONSUMER_NOT_ONLINE);
  const out: ConsumeStats = { consumeTps: 0, offsets: [] };
  for (const bd of route.brokerDatas) {
    const addr = selectBrokerAddr(bd);
    if (addr === undefined) continue;
    const ext: Record<string, string> = topic !== undefined ? { consumerGroup: group, topic } : { consumerGroup: group };
    const res = await s.ok(addr, RequestCode.GET_CONSUME_STATS, ext, undefined, { timeoutMs: s.timeoutMs * 3 });
    const st = readable(parseConsumeStats(res.body), `${addr}'s consume stats of ${group}`);
    out.consumeTps += st.consumeTps;
    out.offsets.push(...st.offsets);
  }
  if (out.offsets.length === 0) {
    throw new AdminError(
      `consumer group ${group} has no consume offsets${topic !== undefined ? ` on ${topic}` : ""} (it has not consumed anything)`,
      ResponseCode.CONSUMER_NOT_ONLINE,
    );
  }
  return out;
}

/** GET_CONSUMER_CONNECTION_LIST from the given broker or one of the group's brokers. */
export async function consumerConnection(s: AdminSession, group: string, brokerAddr?: string): Promise<ConsumerConnectionInfo> {
  let addr = brokerAddr;
  if (addr === undefined) {
    const route = await s.route(retryTopic(group));
    const bd = route?.brokerDatas[0];
    addr = bd ? selectBrokerAddr(bd) : undefined;
    if (addr === undefined) throw new AdminError(`consumer group ${group} is not online (no broker knows it)`, ResponseCode.CONSUMER_NOT_ONLINE);
  }
  const res = await s.call(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, { consumerGroup: group });
  if (res.code === ResponseCode.CONSUMER_NOT_ONLINE) throw new AdminError(`consumer group ${group} has no consumer online (asked ${addr})`, res.code);
  if (res.code !== ResponseCode.SUCCESS)
    throw new AdminError(`${addr} refused GET_CONSUMER_CONNECTION_LIST: ${res.code} ${res.remark ?? ""}`, res.code);
  const cc = readable(parseConsumerConnection(res.body), `${addr}'s connections of ${group}`);
  if (cc.connections.length === 0)
    throw new AdminError(`consumer group ${group} has no consumer online (asked ${addr})`, ResponseCode.CONSUMER_NOT_ONLINE);
  return cc;
}

const consumerProgress: Command = {
  name: "consumerProgress",
  summary: "Show a consumer group's progress per queue and its lag (without -g: every group, one line each).",
  flags: [
    { short: "g", long: "groupName", value: "GROUP", desc: "consumer group" },
    { short: "s", long: "showClientIP", value: "true|false", desc: "with -g: also the client that holds each queue" },
  ],
  examples: ["rocketbun admin consumerProgress -n 127.0.0.1:9876 -g OrderConsumers", "rocketbun admin consumerProgress -n 127.0.0.1:9876 --json"],
  async run(ctx) {
    const group = ctx.flags.str("groupName");
    if (group === undefined) return allGroupsProgress(ctx);
    const s = ctx.session;
    const stats = await consumeStats(s, group);
    const owners = ctx.flags.bool("showClientIP", false) ? await queueOwners(s, group) : undefined;
    const queues = stats.offsets.map(([mq, o]) => ({
      topic: mq.topic,
      brokerName: mq.brokerName,
      queueId: mq.queueId,
      brokerOffset: o.brokerOffset,
      consumerOffset: o.consumerOffset,
      ...(owners ? { clientIP: owners.get(`${mq.topic}@${mq.brokerName}@${mq.queueId}`) ?? "N/A" } : {}),
      diff: o.brokerOffset - o.consumerOffset,
      lastTimestamp: o.lastTimestamp,
    }));
    const diffTotal = queues.reduce((a, q) => a + q.diff, 0);
    const table = renderTable({
      headers: ["Topic", "Broker Name", "QID", "Broker Offset", "Consumer Offset", ...(owners ? ["Client IP"] : []), "Diff", "LastTime"],
      rows: queues.map((q) => [
        q.topic,
        q.brokerName,
        q.queueId,
        q.brokerOffset,
        q.consumerOffset,
        ...(owners ? [q.clientIP] : []),
        q.diff,
        q.lastTimestamp === 0 ? "N/A" : humanTime(q.lastTimestamp, false),
      ]),
      right: [2, 3, 4, owners ? 6 : 5],
    });
    const text = `${table}\n\nConsume TPS: ${stats.consumeTps.toFixed(2)}\nDiff Total: ${diffTotal}`;
    return { json: { group, consumeTps: stats.consumeTps, diffTotal, queues }, text };
  },
};

/** Which client holds each queue: GET_CONSUMER_RUNNING_INFO of every member (its mqTable). */
async function queueOwners(s: AdminSession, group: string): Promise<Map<string, string>> {
  const owners = new Map<string, string>();
  const route = await s.route(retryTopic(group));
  const addr = route?.brokerDatas[0] ? selectBrokerAddr(route.brokerDatas[0]) : undefined;
  if (addr === undefined) return owners;
  const cc = await consumerConnection(s, group, addr).catch(() => undefined);
  for (const c of cc?.connections ?? []) {
    const ext = { consumerGroup: group, clientId: c.clientId, jstackEnable: "false" };
    const res = await s.call(addr, RequestCode.GET_CONSUMER_RUNNING_INFO, ext, undefined, { timeoutMs: s.timeoutMs * 3 }).catch(() => undefined);
    if (res?.code !== ResponseCode.SUCCESS) continue;
    const qs = parseRunningInfoQueues(res.body);
    if ("invalid" in qs) continue;
    for (const mq of qs) owners.set(`${mq.topic}@${mq.brokerName}@${mq.queueId}`, c.clientId.split("@")[0]!);
  }
  return owners;
}

/** consumerProgress without -g: every group that has a retry topic. */
async function allGroupsProgress(ctx: CommandContext): Promise<Output> {
  const s = ctx.session;
  const res = await s.namesrvOk(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
  const topics = readable(parseNameList(res.body, "topicList"), "the name server's topic list");
  const groups = topics
    .filter((t) => t.startsWith(RETRY_GROUP_TOPIC_PREFIX))
    .map((t) => t.slice(RETRY_GROUP_TOPIC_PREFIX.length))
    .sort();
  const progress = ctx.progress("consumerProgress", groups.length);
  const rows = await mapLimit(groups, 8, async (group) => {
    const stats = await consumeStats(s, group).catch(() => undefined);
    const cc = await consumerConnection(s, group).catch(() => undefined);
    progress.tick();
    const count = cc?.connections.length ?? 0;
    return {
      group,
      count,
      version: count > 0 ? mqVersionName(Math.min(...cc!.connections.map((c) => c.version))) : "OFFLINE",
      consumeType: count > 0 ? (cc!.consumeType === "CONSUME_ACTIVELY" ? "PULL" : "PUSH") : "",
      messageModel: count > 0 && cc!.consumeType !== "CONSUME_ACTIVELY" ? cc!.messageModel : "",
      consumeTps: Math.trunc(stats?.consumeTps ?? 0),
      diffTotal: stats ? stats.offsets.reduce((a, [, o]) => a + o.brokerOffset - o.consumerOffset, 0) : 0,
    };
  });
  progress.end();
  const table = renderTable({
    headers: ["Group", "Count", "Version", "Type", "Model", "TPS", "Diff Total"],
    rows: rows.map((r) => [r.group, r.count, r.version, r.consumeType, r.messageModel, r.consumeTps, r.diffTotal]),
    right: [1, 5, 6],
  });
  return { json: rows, text: table };
}

const consumerConnectionCommand: Command = {
  name: "consumerConnection",
  summary: "Show a consumer group's online clients and their subscriptions.",
  flags: [
    { short: "g", long: "consumerGroup", value: "GROUP", desc: "consumer group", required: true },
    { short: "b", long: "brokerAddr", value: "ADDR", desc: "ask this broker (default: one of the group's)" },
  ],
  examples: ["rocketbun admin consumerConnection -n 127.0.0.1:9876 -g OrderConsumers"],
  async run({ session: s, flags: f }) {
    const cc = await consumerConnection(s, f.req("consumerGroup"), f.str("brokerAddr"));
    const clients = renderTable({
      headers: ["ClientId", "ClientAddr", "Language", "Version"],
      rows: cc.connections.map((c) => [c.clientId, c.clientAddr, c.language, mqVersionName(c.version)]),
    });
    const subs = renderTable({ headers: ["Topic", "SubExpression"], rows: cc.subscriptions.map((x) => [x.topic, x.subString]) });
    const tail = [`ConsumeType: ${cc.consumeType}`, `MessageModel: ${cc.messageModel}`, `ConsumeFromWhere: ${cc.consumeFromWhere}`];
    const text = [clients, "", "Below is subscription:", subs, "", ...tail].join("\n");
    const json = { ...cc, connections: cc.connections.map((c) => ({ ...c, versionDesc: mqVersionName(c.version) })) };
    return { json, text };
  },
};

const producerConnection: Command = {
  name: "producerConnection",
  summary: "Show a producer group's connected clients (as seen by a broker of the topic).",
  flags: [
    { short: "g", long: "producerGroup", value: "GROUP", desc: "producer group", required: true },
    { short: "t", long: "topic", value: "TOPIC", desc: "a topic the group sends to", required: true },
  ],
  examples: ["rocketbun admin producerConnection -n 127.0.0.1:9876 -g OrderProducers -t Orders"],
  async run({ session: s, flags: f }) {
    const group = f.req("producerGroup");
    const route = await s.requireRoute(f.req("topic"));
    const addr = route.brokerDatas[0] ? selectBrokerAddr(route.brokerDatas[0]) : undefined;
    if (addr === undefined) throw new AdminError(`topic ${f.req("topic")} has no broker`);
    const res = await s.call(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, { producerGroup: group });
    const conns = res.code === ResponseCode.SUCCESS ? readable(parseProducerConnection(res.body), `${addr}'s connections of ${group}`) : [];
    if (conns.length === 0)
      throw new AdminError(`producer group ${group} has no producer connected to ${addr}${res.remark ? ` (${res.remark})` : ""}`);
    const table = renderTable({
      headers: ["", "ClientId", "ClientAddr", "Language", "Version"],
      rows: conns.map((c, i) => [String(i + 1).padStart(4, "0"), c.clientId, c.clientAddr, c.language, mqVersionName(c.version)]),
    });
    return { json: conns.map((c) => ({ ...c, versionDesc: mqVersionName(c.version) })), text: table };
  },
};

const updateSubGroup: Command = {
  name: "updateSubGroup",
  summary: "Create a subscription group, or update its settings, on a broker or on every master of a cluster.",
  flags: [
    { short: "b", long: "brokerAddr", value: "ADDR", desc: "on this broker" },
    { short: "c", long: "clusterName", value: "NAME", desc: "on every master of this cluster" },
    { short: "g", long: "groupName", value: "GROUP", desc: "consumer group", required: true },
    { short: "s", long: "consumeEnable", value: "true|false", desc: "may consume (default true)" },
    { short: "m", long: "consumeFromMinEnable", value: "true|false", desc: "a new group starts from the first offset (default false)" },
    { short: "d", long: "consumeBroadcastEnable", value: "true|false", desc: "broadcasting allowed (default false)" },
    { short: "q", long: "retryQueueNums", value: "N", desc: "retry queues (default 1)" },
    { short: "r", long: "retryMaxTimes", value: "N", desc: "deliveries before the DLQ (default 16)" },
    { short: "i", long: "brokerId", value: "ID", desc: "consume from this broker id (default 0)" },
    { short: "w", long: "whichBrokerWhenConsumeSlowly", value: "ID", desc: "broker id when consuming slowly (default 1)" },
    { short: "a", long: "notifyConsumerIdsChanged", value: "true|false", desc: "notify members of membership changes (default true)" },
  ],
  oneOf: [["brokerAddr", "clusterName"]],
  examples: ["rocketbun admin updateSubGroup -n 127.0.0.1:9876 -c DefaultCluster -g OrderConsumers -r 3"],
  async run({ session: s, flags: f }) {
    // Members in fastjson's order (alphabetical), the defaults of mqadmin's command.
    const config = {
      brokerId: f.int("brokerId", MASTER_ID, 0, Number.MAX_SAFE_INTEGER),
      consumeBroadcastEnable: f.bool("consumeBroadcastEnable", false),
      consumeEnable: f.bool("consumeEnable", true),
      consumeFromMinEnable: f.bool("consumeFromMinEnable", false),
      groupName: f.req("groupName"),
      notifyConsumerIdsChangedEnable: f.bool("notifyConsumerIdsChanged", true),
      retryMaxTimes: f.int("retryMaxTimes", 16, -1, 1_000_000),
      retryQueueNums: f.int("retryQueueNums", 1, 0, 65535),
      whichBrokerWhenConsumeSlowly: f.int("whichBrokerWhenConsumeSlowly", 1, 0, Number.MAX_SAFE_INTEGER),
    };
    const brokerAddr = f.str("brokerAddr");
    const addrs = brokerAddr !== undefined ? [brokerAddr] : await s.mastersOf(f.req("clusterName"));
    const lines: string[] = [];
    for (const addr of addrs) {
      await s.ok(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, undefined, jsonBytes(config));
      lines.push(`create subscription group to ${addr} success.`);
    }
    lines.push(
      `SubscriptionGroupConfig [${Object.entries(config)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ")}]`,
    );
    return { json: { ...config, brokers: addrs }, text: lines.join("\n") };
  },
};

const deleteSubGroup: Command = {
  name: "deleteSubGroup",
  summary: "Delete a subscription group from a broker, or from every master of a cluster (with its retry and DLQ topics).",
  flags: [
    { short: "b", long: "brokerAddr", value: "ADDR", desc: "from this broker" },
    { short: "c", long: "clusterName", value: "NAME", desc: "from every master of this cluster" },
    { short: "g", long: "groupName", value: "GROUP", desc: "consumer group", required: true },
    { short: "r", long: "removeOffset", value: "true|false", desc: "also remove the group's consumer offsets (default false)" },
  ],
  oneOf: [["brokerAddr", "clusterName"]],
  examples: ["rocketbun admin deleteSubGroup -n 127.0.0.1:9876 -c DefaultCluster -g OldConsumers -r true"],
  async run({ session: s, flags: f }) {
    const group = f.req("groupName");
    const removeOffset = f.bool("removeOffset", false);
    const brokerAddr = f.str("brokerAddr");
    const cluster = f.str("clusterName");
    const addrs = brokerAddr !== undefined ? [brokerAddr] : await s.mastersOf(cluster!);
    const lines: string[] = [];
    for (const addr of addrs) {
      await s.ok(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, { groupName: group, removeOffset: String(removeOffset) });
      lines.push(`delete subscription group [${group}] from broker [${addr}]${cluster !== undefined ? ` in cluster [${cluster}]` : ""} success.`);
    }
    const deletedTopics: string[] = [];
    if (cluster !== undefined) {
      // As mqadmin: the group's retry and DLQ topics go too; a topic that is not there is no failure.
      for (const topic of [retryTopic(group), dlqTopic(group)]) {
        if ((await s.route(topic)) === null) continue;
        for (const addr of addrs) await s.ok(addr, RequestCode.DELETE_TOPIC_IN_BROKER, { topic });
        for (const ns of s.namesrvAddrs) await s.ok(ns, RequestCode.DELETE_TOPIC_IN_NAMESRV, { topic, clusterName: cluster });
        deletedTopics.push(topic);
        lines.push(`delete topic [${topic}] from cluster [${cluster}] success.`);
      }
    }
    return { json: { groupName: group, removeOffset, brokers: addrs, deletedTopics }, text: lines.join("\n") };
  },
};

export const setConsumeMode: Command = {
  name: "setConsumeMode",
  summary: "Set how a consumer group consumes a topic when the broker rebalances for it (RocketMQ 5.x clients): PULL or POP.",
  flags: [
    { short: "b", long: "brokerAddr", value: "ADDR", desc: "on this broker" },
    { short: "c", long: "clusterName", value: "NAME", desc: "on every master of this cluster" },
    { short: "t", long: "topicName", value: "TOPIC", desc: "topic", required: true },
    { short: "g", long: "groupName", value: "GROUP", desc: "consumer group", required: true },
    { short: "m", long: "mode", value: "PULL|POP", desc: "consume mode (exactly PULL or POP)", required: true },
    { short: "q", long: "popShareQueueNum", value: "N", desc: "POP: how many other members' queues each member also pops (default 0: all)" },
  ],
  oneOf: [["brokerAddr", "clusterName"]],
  examples: ["rocketbun admin setConsumeMode -n 127.0.0.1:9876 -c DefaultCluster -t Orders -g OrderConsumers -m POP"],
  async run({ session: s, flags: f }) {
    const mode = f.req("mode");
    // As mqadmin's MessageRequestMode.valueOf: case matters.
    if (!MESSAGE_REQUEST_MODES.includes(mode as MessageRequestMode))
      throw new UsageError(`${f.label("mode")}: expected PULL or POP, got ${JSON.stringify(mode)}`);
    const entry = setMessageRequestModeJson({
      topic: f.req("topicName"),
      consumerGroup: f.req("groupName"),
      mode: mode as MessageRequestMode,
      popShareQueueNum: f.int("popShareQueueNum", 0, -INT32_MAX - 1, INT32_MAX),
    });
    const brokerAddr = f.str("brokerAddr");
    const addrs = brokerAddr !== undefined ? [brokerAddr] : await s.mastersOf(f.req("clusterName"));
    const lines: string[] = [];
    const failedOn: string[] = [];
    for (const addr of addrs) {
      // With -b a refusal fails the command; with -c, as mqadmin, it is reported and the next master is tried.
      if (brokerAddr !== undefined) await s.ok(addr, RequestCode.SET_MESSAGE_REQUEST_MODE, undefined, jsonBytes(entry), { timeoutMs: 5000 });
      else {
        const res = await s.call(addr, RequestCode.SET_MESSAGE_REQUEST_MODE, undefined, jsonBytes(entry), { timeoutMs: 5000 });
        if (res.code !== ResponseCode.SUCCESS) {
          failedOn.push(addr);
          lines.push(`set consume mode to ${addr} failed: ${res.code} ${res.remark ?? ""}`.trimEnd());
          continue;
        }
      }
      lines.push(`set consume mode to ${addr} success.`);
    }
    lines.push(`topic[${entry.topic}] group[${entry.consumerGroup}] consume mode[${entry.mode}] popShareQueueNum[${entry.popShareQueueNum}]`);
    return { json: { ...entry, brokers: addrs, failed: failedOn }, text: lines.join("\n"), ...(failedOn.length > 0 ? { failed: true } : {}) };
  },
};

export const GROUP_COMMANDS: readonly Command[] = [
  consumerProgress,
  consumerConnectionCommand,
  producerConnection,
  updateSubGroup,
  deleteSubGroup,
  setConsumeMode,
];
