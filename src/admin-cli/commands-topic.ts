/**
 * Topic commands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus (mqadmin 4.9.8's
 * UpdateTopicSubCommand, DeleteTopicSubCommand, TopicListSubCommand, TopicRouteSubCommand,
 * TopicStatusSubCommand: same letters, long names and defaults; docs/PROTOCOL.md §3.10, §3.16).
 */
import { RequestCode, ResponseCode } from "../remoting/index.ts";
import {
  AUTO_CREATE_TOPIC,
  DLQ_GROUP_TOPIC_PREFIX,
  RETRY_GROUP_TOPIC_PREFIX,
  TOPIC_SYS_FLAG_UNIT,
  TOPIC_SYS_FLAG_UNIT_SUB,
  validateTopicName,
} from "../protocol/topics.ts";
import { NAMESPACE_ORDER_TOPIC_CONFIG, type TopicRouteData } from "../protocol/route.ts";
import { mapLimit, readable, type Command, type CommandContext, type Output } from "./command.ts";
import { UsageError, type Flags } from "./flags.ts";
import { parseNameList, parseTopicStats } from "./bodies.ts";
import { AdminError, selectBrokerAddr, type AdminSession } from "./session.ts";
import { humanTime, renderTable } from "./table.ts";

function topicFlag(f: Flags): string {
  const t = f.req("topic");
  const bad = validateTopicName(t);
  if (bad !== null) throw new UsageError(`${f.label("topic")}: ${bad}`);
  return t;
}

const updateTopic: Command = {
  name: "updateTopic",
  summary: "Create a topic, or update its queues, permission and order flag, on a broker or on every master of a cluster.",
  flags: [
    { short: "b", long: "brokerAddr", value: "ADDR", desc: "create the topic on this broker" },
    { short: "c", long: "clusterName", value: "NAME", desc: "create the topic on every master of this cluster" },
    { short: "t", long: "topic", value: "TOPIC", desc: "topic name", required: true },
    { short: "r", long: "readQueueNums", value: "N", desc: "read queues (default 8)" },
    { short: "w", long: "writeQueueNums", value: "N", desc: "write queues (default 8)" },
    { short: "p", long: "perm", value: "2|4|6", desc: "permission: 2 write, 4 read, 6 read and write (default 6)" },
    { short: "o", long: "order", value: "true|false", desc: "ordered topic (records its queues in the name server)" },
    { short: "u", long: "unit", value: "true|false", desc: "unit topic" },
    { short: "s", long: "hasUnitSub", value: "true|false", desc: "has unit subscriptions" },
  ],
  oneOf: [["brokerAddr", "clusterName"]],
  examples: ["rocketbun admin updateTopic -n 127.0.0.1:9876 -c DefaultCluster -t Orders -r 4 -w 4"],
  async run({ session: s, flags: f }) {
    const topic = topicFlag(f);
    const cfg = {
      topicName: topic,
      readQueueNums: f.int("readQueueNums", 8, 0, 65535),
      writeQueueNums: f.int("writeQueueNums", 8, 0, 65535),
      perm: f.int("perm", 6, 0, 15),
      topicFilterType: "SINGLE_TAG",
      topicSysFlag: (f.bool("unit", false) ? TOPIC_SYS_FLAG_UNIT : 0) | (f.bool("hasUnitSub", false) ? TOPIC_SYS_FLAG_UNIT_SUB : 0),
      order: f.bool("order", false),
    };
    const brokerAddr = f.str("brokerAddr");
    const addrs = brokerAddr !== undefined ? [brokerAddr] : await s.mastersOf(f.req("clusterName"));
    const lines: string[] = [];
    for (const addr of addrs) {
      await s.ok(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, {
        topic,
        defaultTopic: AUTO_CREATE_TOPIC,
        readQueueNums: String(cfg.readQueueNums),
        writeQueueNums: String(cfg.writeQueueNums),
        perm: String(cfg.perm),
        topicFilterType: cfg.topicFilterType,
        topicSysFlag: String(cfg.topicSysFlag),
        order: String(cfg.order),
      });
      lines.push(`create topic to ${addr} success.`);
    }
    let orderConf: string | undefined;
    if (cfg.order) {
      orderConf = await putOrderConf(s, topic, cfg.writeQueueNums, brokerAddr, f.str("clusterName"));
      lines.push(`set ${brokerAddr !== undefined ? "broker" : "cluster"} orderConf. isOrder=true, orderConf=[${orderConf}]`);
    }
    lines.push(
      `TopicConfig [${Object.entries(cfg)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ")}]`,
    );
    return { json: { ...cfg, brokers: addrs, ...(orderConf !== undefined ? { orderConf } : {}) }, text: lines.join("\n") };
  },
};

/** An ordered topic's "brokerName:queues;…" in the name server (createOrUpdateOrderConf). */
async function putOrderConf(
  s: AdminSession,
  topic: string,
  queues: number,
  brokerAddr: string | undefined,
  cluster: string | undefined,
): Promise<string> {
  let value: string;
  if (brokerAddr !== undefined) {
    const name = await s.brokerNameOf(brokerAddr);
    const old = await s.namesrv(RequestCode.GET_KV_CONFIG, { namespace: NAMESPACE_ORDER_TOPIC_CONFIG, key: topic });
    const parts = new Map<string, string>();
    if (old.code === ResponseCode.SUCCESS) for (const p of (old.extFields?.value ?? "").split(";")) if (p) parts.set(p.split(":")[0]!, p);
    parts.set(name, `${name}:${queues}`);
    value = [...parts.values()].join(";");
  } else {
    value = (await s.brokerNamesOf(cluster ?? "")).map((n) => `${n}:${queues}`).join(";");
  }
  await s.namesrvOk(RequestCode.PUT_KV_CONFIG, { namespace: NAMESPACE_ORDER_TOPIC_CONFIG, key: topic, value });
  return value;
}

const deleteTopic: Command = {
  name: "deleteTopic",
  summary: "Delete a topic from every master of a cluster, then from every name server.",
  flags: [
    { short: "t", long: "topic", value: "TOPIC", desc: "topic name", required: true },
    { short: "c", long: "clusterName", value: "NAME", desc: "delete the topic from this cluster", required: true },
  ],
  examples: ["rocketbun admin deleteTopic -n 127.0.0.1:9876 -c DefaultCluster -t Orders"],
  async run({ session: s, flags: f }) {
    const topic = f.req("topic");
    const cluster = f.req("clusterName");
    const masters = await s.mastersOf(cluster);
    for (const addr of masters) await s.ok(addr, RequestCode.DELETE_TOPIC_IN_BROKER, { topic });
    for (const addr of s.namesrvAddrs) await s.ok(addr, RequestCode.DELETE_TOPIC_IN_NAMESRV, { topic, clusterName: cluster });
    return {
      json: { topic, clusterName: cluster, brokers: masters, nameServers: s.namesrvAddrs },
      text: `delete topic [${topic}] from cluster [${cluster}] success.\ndelete topic [${topic}] from NameServer success.`,
    };
  },
};

async function allTopics(s: AdminSession): Promise<string[]> {
  const res = await s.namesrvOk(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
  return readable(parseNameList(res.body, "topicList"), "the name server's topic list").sort();
}

/** The groups that consume a topic (QUERY_TOPIC_CONSUME_BY_WHO to the first broker of its route). */
export async function consumersOf(s: AdminSession, route: TopicRouteData, topic: string): Promise<string[]> {
  for (const bd of route.brokerDatas) {
    const addr = selectBrokerAddr(bd);
    if (addr === undefined) continue;
    const res = await s.ok(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, { topic });
    return readable(parseNameList(res.body, "groupList"), `${addr}'s consumer groups of ${topic}`).sort();
  }
  return [];
}

const topicList: Command = {
  name: "topicList",
  summary: "List every topic the name servers know (with -c: each topic's cluster and consumer groups).",
  flags: [{ short: "c", long: "clusterModel", desc: "also the cluster and the consumer groups of each topic" }],
  examples: ["rocketbun admin topicList -n 127.0.0.1:9876", "rocketbun admin topicList -n 127.0.0.1:9876 -c --json"],
  async run(ctx) {
    const topics = await allTopics(ctx.session);
    if (!ctx.flags.has("clusterModel")) return { json: topics, text: topics.join("\n") };
    return topicsWithGroups(
      ctx,
      topics.filter((t) => !t.startsWith(RETRY_GROUP_TOPIC_PREFIX) && !t.startsWith(DLQ_GROUP_TOPIC_PREFIX)),
    );
  },
};

async function topicsWithGroups(ctx: CommandContext, topics: string[]): Promise<Output> {
  const s = ctx.session;
  const info = await s.clusterInfo();
  const progress = ctx.progress("topicList", topics.length);
  const rows = await mapLimit(topics, 8, async (topic) => {
    let cluster = "";
    let groups: string[] = [];
    try {
      const route = await s.route(topic);
      const first = route?.brokerDatas[0]?.brokerName;
      cluster = Object.entries(info.clusterAddrTable).find(([, names]) => first !== undefined && names.includes(first))?.[0] ?? "";
      if (route) groups = await consumersOf(s, route, topic);
    } catch {
      // As mqadmin: a topic whose route or groups cannot be read is listed without them.
    }
    progress.tick();
    return { clusterName: cluster, topic, consumerGroups: groups };
  });
  progress.end();
  const table = rows.flatMap((r) => (r.consumerGroups.length > 0 ? r.consumerGroups : [""]).map((g) => [r.clusterName, r.topic, g]));
  return { json: rows, text: renderTable({ headers: ["Cluster Name", "Topic", "Consumer Group"], rows: table }) };
}

const topicRoute: Command = {
  name: "topicRoute",
  summary: "Show a topic's route: the brokers that hold it and their queues (JSON; -l for a table).",
  flags: [
    { short: "t", long: "topic", value: "TOPIC", desc: "topic name", required: true },
    { short: "l", long: "list", desc: "print a table instead of the route's JSON" },
  ],
  examples: ["rocketbun admin topicRoute -n 127.0.0.1:9876 -t Orders -l"],
  async run({ session: s, flags: f }) {
    const route = await s.requireRoute(f.req("topic"));
    if (!f.has("list")) return { json: route, text: JSON.stringify(route, null, 2) };
    const rows = route.brokerDatas.map((bd) => {
      const q = route.queueDatas.find((x) => x.brokerName === bd.brokerName);
      return [bd.cluster, bd.brokerName, JSON.stringify(bd.brokerAddrs), q?.readQueueNums ?? 0, q?.writeQueueNums ?? 0, q?.perm ?? 0];
    });
    const sum = (i: number) => rows.reduce((a, r) => a + Number(r[i]), 0);
    const table = renderTable({
      headers: ["ClusterName", "BrokerName", "BrokerAddrs", "ReadQueue", "WriteQueue", "Perm"],
      rows: [...rows, ["Total:", rows.length, "", sum(3), sum(4), ""]],
      right: [3, 4, 5],
    });
    return { json: route, text: table };
  },
};

const topicStatus: Command = {
  name: "topicStatus",
  summary: "Show each queue of a topic: min and max offset and when it was last written.",
  flags: [{ short: "t", long: "topic", value: "TOPIC", desc: "topic name", required: true }],
  examples: ["rocketbun admin topicStatus -n 127.0.0.1:9876 -t Orders"],
  async run({ session: s, flags: f }) {
    const topic = f.req("topic");
    const route = await s.requireRoute(topic);
    const rows: { brokerName: string; queueId: number; minOffset: number; maxOffset: number; lastUpdateTimestamp: number }[] = [];
    for (const bd of route.brokerDatas) {
      const addr = selectBrokerAddr(bd);
      if (addr === undefined) continue;
      const res = await s.ok(addr, RequestCode.GET_TOPIC_STATS_INFO, { topic });
      for (const [mq, o] of readable(parseTopicStats(res.body), `${addr}'s stats of ${topic}`))
        rows.push({ brokerName: mq.brokerName, queueId: mq.queueId, ...o });
    }
    if (rows.length === 0) throw new AdminError(`no broker returned stats for topic ${topic}`);
    const table = renderTable({
      headers: ["Broker Name", "QID", "Min Offset", "Max Offset", "Last Updated"],
      rows: rows.map((r) => [r.brokerName, r.queueId, r.minOffset, r.maxOffset, humanTime(r.lastUpdateTimestamp)]),
      right: [1, 2, 3],
    });
    return { json: rows, text: table };
  },
};

export const TOPIC_COMMANDS: readonly Command[] = [updateTopic, deleteTopic, topicList, topicRoute, topicStatus];
