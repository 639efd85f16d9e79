/**
 * Cluster commands: clusterList, brokerStatus, statsAll, clusterRT (mqadmin 4.9.8's
 * ClusterListSubCommand, BrokerStatusSubCommand, StatsAllSubCommand, CLusterSendMsgRTCommand).
 * The broker figures come from GET_BROKER_RUNTIME_INFO and VIEW_BROKER_STATS_DATA
 * (docs/PROTOCOL.md §3.15). With -i, clusterList and clusterRT repeat until Ctrl-C, as mqadmin's.
 */
import { Producer } from "../client/producer.ts";
import { RequestCode } from "../remoting/index.ts";
import { DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX } from "../protocol/topics.ts";
import { MASTER_ID } from "../protocol/route.ts";
import type { BrokerStatsData } from "../protocol/admin-bodies.ts";
import { mapLimit, readable, type Command, type CommandContext, type Output } from "./command.ts";
import { parseBrokerStats, parseKvTable, parseNameList } from "./bodies.ts";
import { consumeStats } from "./commands-group.ts";
import { consumersOf } from "./commands-topic.ts";
import type { AdminSession } from "./session.ts";
import { renderPairs, renderTable } from "./table.ts";

/** One broker of every cluster: [cluster, brokerName, brokerId, addr], clusters and names sorted. */
async function brokerList(s: AdminSession): Promise<[string, string, string, string][]> {
  const info = await s.clusterInfo();
  const out: [string, string, string, string][] = [];
  for (const cluster of Object.keys(info.clusterAddrTable).sort()) {
    for (const name of [...(info.clusterAddrTable[cluster] ?? [])].sort()) {
      const bd = info.brokerAddrTable[name];
      for (const [id, addr] of Object.entries(bd?.brokerAddrs ?? {}).sort(([a], [b]) => Number(a) - Number(b))) out.push([cluster, name, id, addr]);
    }
  }
  return out;
}

async function runtimeInfo(s: AdminSession, addr: string): Promise<Record<string, string>> {
  const res = await s.ok(addr, RequestCode.GET_BROKER_RUNTIME_INFO);
  return readable(parseKvTable(res.body), `${addr}'s runtime info`);
}

const firstNumber = (v: string | undefined): number => Number((v ?? "").split(" ")[0]) || 0;
const diff = (t: Record<string, string>, a: string, b: string): number => (Number(t[a]) || 0) - (Number(t[b]) || 0);

async function clusterRound(s: AdminSession, more: boolean): Promise<Output> {
  const rows = await mapLimit(await brokerList(s), 8, async ([cluster, brokerName, brokerId, addr]) => {
    const t = await runtimeInfo(s, addr).catch((): Record<string, string> => ({}));
    const base = { clusterName: cluster, brokerName, brokerId: Number(brokerId), addr };
    if (more) {
      const yest = {
        inTotalYest: diff(t, "msgPutTotalTodayMorning", "msgPutTotalYesterdayMorning"),
        outTotalYest: diff(t, "msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning"),
      };
      return {
        ...base,
        ...yest,
        inTotalToday: diff(t, "msgPutTotalTodayNow", "msgPutTotalTodayMorning"),
        outTotalToday: diff(t, "msgGetTotalTodayNow", "msgGetTotalTodayMorning"),
      };
    }
    const earliest = Number(t.earliestMessageTimeStamp);
    return {
      ...base,
      version: t.brokerVersionDesc ?? "",
      inTps: firstNumber(t.putTps),
      outTps: firstNumber(t.getTransferedTps),
      sendQueue: `${t.sendThreadPoolQueueSize ?? ""},${t.sendThreadPoolQueueHeadWaitTimeMills ?? ""}ms`,
      pullQueue: `${t.pullThreadPoolQueueSize ?? ""},${t.pullThreadPoolQueueHeadWaitTimeMills ?? ""}ms`,
      pageCacheLockTimeMills: t.pageCacheLockTimeMills ?? "",
      hours: earliest > 0 ? (Date.now() - earliest) / 3_600_000 : 0,
      space: Number(t.commitLogDiskRatio) || 0,
    };
  });
  if (more) {
    const table = renderTable({
      headers: ["Cluster Name", "Broker Name", "InTotalYest", "OutTotalYest", "InTotalToday", "OutTotalToday"],
      rows: rows.map((r) =>
        ["clusterName", "brokerName", "inTotalYest", "outTotalYest", "inTotalToday", "outTotalToday"].map(
          (k) => (r as Record<string, string | number>)[k],
        ),
      ),
      right: [2, 3, 4, 5],
    });
    return { json: rows, text: table };
  }
  const table = renderTable({
    headers: ["Cluster Name", "Broker Name", "BID", "Addr", "Version", "InTPS(LOAD)", "OutTPS(LOAD)", "PCWait(ms)", "Hour", "SPACE"],
    rows: rows.map((r) => {
      const x = r as Record<string, string | number>;
      const tps = (v: number, q: string) => `${v.toFixed(2)}(${q})`;
      return [
        x.clusterName,
        x.brokerName,
        x.brokerId,
        x.addr,
        x.version,
        tps(Number(x.inTps), String(x.sendQueue)),
        tps(Number(x.outTps), String(x.pullQueue)),
        x.pageCacheLockTimeMills,
        Number(x.hours).toFixed(2),
        Number(x.space).toFixed(4),
      ];
    }),
    right: [2, 5, 6, 7, 8, 9],
  });
  return { json: rows, text: table };
}

/** Runs `round` once, or (with -i) every `interval` seconds until Ctrl-C, emitting each round. */
async function repeat(ctx: CommandContext, intervalSec: number | undefined, round: () => Promise<Output>): Promise<Output> {
  if (intervalSec === undefined) return round();
  for (;;) {
    ctx.emit(await round());
    if (!(await ctx.pause(intervalSec * 1000))) return { json: null, text: "" };
  }
}

const clusterList: Command = {
  name: "clusterList",
  summary: "List the brokers of every cluster with their version, TPS, queue waits, data age and disk use (-m: message totals).",
  flags: [
    { short: "m", long: "moreStats", desc: "messages in and out yesterday and today instead" },
    { short: "i", long: "interval", value: "SECONDS", desc: "repeat every SECONDS until Ctrl-C" },
  ],
  examples: ["rocketbun admin clusterList -n 127.0.0.1:9876"],
  run(ctx) {
    const interval = ctx.flags.has("interval") ? ctx.flags.int("interval", 1, 1, 86400) : undefined;
    return repeat(ctx, interval, () => clusterRound(ctx.session, ctx.flags.has("moreStats")));
  },
};

const brokerStatus: Command = {
  name: "brokerStatus",
  summary: "Print a broker's runtime figures (GET_BROKER_RUNTIME_INFO), or those of every member of a cluster.",
  flags: [
    { short: "b", long: "brokerAddr", value: "ADDR", desc: "this broker" },
    { short: "c", long: "clusterName", value: "NAME", desc: "every master and slave of this cluster" },
  ],
  oneOf: [["brokerAddr", "clusterName"]],
  examples: ["rocketbun admin brokerStatus -n 127.0.0.1:9876 -b 127.0.0.1:10911"],
  async run({ session: s, flags: f }) {
    const one = f.str("brokerAddr");
    const addrs = one !== undefined ? [one] : await s.membersOf(f.req("clusterName"));
    const json: Record<string, Record<string, string>> = {};
    const text: string[] = [];
    for (const addr of addrs) {
      const t = await runtimeInfo(s, addr);
      const sorted = Object.keys(t).sort();
      json[addr] = Object.fromEntries(sorted.map((k) => [k, t[k]!]));
      text.push(renderPairs(sorted.map((k) => [one !== undefined ? k : `${addr.padEnd(24)} ${k}`, t[k]])));
    }
    return { json: one !== undefined ? json[one] : json, text: text.join("\n") };
  },
};

async function statsData(s: AdminSession, addr: string, statsName: string, statsKey: string): Promise<BrokerStatsData | undefined> {
  const res = await s.call(addr, RequestCode.VIEW_BROKER_STATS_DATA, { statsName, statsKey });
  if (res.code !== 0) return undefined;
  const d = parseBrokerStats(res.body);
  return "invalid" in d ? undefined : d;
}

/** StatsAllSubCommand.compute24HourSum: the day's sum, else the hour's, else the minute's. */
const sum24h = (d: BrokerStatsData): number => d.statsDay.sum || d.statsHour.sum || d.statsMinute.sum;

interface StatsRow {
  topic: string;
  consumerGroup: string;
  accumulation: number;
  inTps: number;
  outTps: number | null;
  inMsg24Hour: number;
  outMsg24Hour: number | null;
}

async function topicStats(s: AdminSession, topic: string, activeOnly: boolean): Promise<StatsRow[]> {
  const route = await s.requireRoute(topic);
  const masters = route.brokerDatas.map((bd) => bd.brokerAddrs[String(MASTER_ID)]).filter((a): a is string => a !== undefined);
  let inTps = 0;
  let inToday = 0;
  for (const addr of masters) {
    const d = await statsData(s, addr, "TOPIC_PUT_NUMS", topic);
    if (d) ((inTps += d.statsMinute.tps), (inToday += sum24h(d)));
  }
  const groups = await consumersOf(s, route, topic).catch(() => []);
  if (groups.length === 0) {
    return !activeOnly || inToday > 0
      ? [{ topic, consumerGroup: "", accumulation: 0, inTps, outTps: null, inMsg24Hour: inToday, outMsg24Hour: null }]
      : [];
  }
  const rows: StatsRow[] = [];
  for (const group of groups) {
    let outTps = 0;
    let outToday = 0;
    for (const addr of masters) {
      const d = await statsData(s, addr, "GROUP_GET_NUMS", `${topic}@${group}`);
      if (d) ((outTps += d.statsMinute.tps), (outToday += sum24h(d)));
    }
    const st = await consumeStats(s, group, topic).catch(() => undefined);
    const acc = st
      ? Math.max(
          0,
          st.offsets.reduce((a, [, o]) => a + o.brokerOffset - o.consumerOffset, 0),
        )
      : 0;
    if (!activeOnly || inToday > 0 || outToday > 0)
      rows.push({ topic, consumerGroup: group, accumulation: acc, inTps, outTps, inMsg24Hour: inToday, outMsg24Hour: outToday });
  }
  return rows;
}

const statsAll: Command = {
  name: "statsAll",
  summary: "Per topic and consumer group: accumulated lag, TPS in and out, and messages in and out in the last 24 hours.",
  flags: [
    { short: "a", long: "activeTopic", desc: "only topics with traffic in the last 24 hours" },
    { short: "t", long: "topic", value: "TOPIC", desc: "only this topic" },
  ],
  examples: ["rocketbun admin statsAll -n 127.0.0.1:9876 -a"],
  async run(ctx) {
    const s = ctx.session;
    const one = ctx.flags.str("topic");
    const res = await s.namesrvOk(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
    const topics = readable(parseNameList(res.body, "topicList"), "the name server's topic list")
      .filter((t) => !t.startsWith(RETRY_GROUP_TOPIC_PREFIX) && !t.startsWith(DLQ_GROUP_TOPIC_PREFIX) && (one === undefined || t === one))
      .sort();
    const progress = ctx.progress("statsAll", topics.length);
    const rows = (
      await mapLimit(topics, 4, async (t) => {
        // As mqadmin: a topic whose figures cannot be read is left out.
        const r = await topicStats(s, t, ctx.flags.has("activeTopic")).catch((): StatsRow[] => []);
        progress.tick();
        return r;
      })
    ).flat();
    progress.end();
    const table = renderTable({
      headers: ["Topic", "Consumer Group", "Accumulation", "InTPS", "OutTPS", "InMsg24Hour", "OutMsg24Hour"],
      rows: rows.map((r) => [
        r.topic,
        r.consumerGroup,
        r.accumulation,
        r.inTps.toFixed(2),
        r.outTps === null ? "" : r.outTps.toFixed(2),
        r.inMsg24Hour,
        r.outMsg24Hour ?? "NO_CONSUMER",
      ]),
      right: [2, 3, 4, 5, 6],
    });
    return { json: rows, text: table };
  },
};

async function rtRound(s: AdminSession, p: Producer, clusters: [string, string[]][], amount: number, body: string) {
  const rows: { clusterName: string; brokerName: string; rt: number; successCount: number; failCount: number }[] = [];
  for (const [cluster, names] of clusters) {
    for (const brokerName of names) {
      let elapsed = 0;
      let ok = 0;
      let failed = 0;
      for (let i = 0; i < amount; i++) {
        const t0 = performance.now();
        await p.send({ topic: brokerName, body }).then(
          () => ok++,
          () => failed++,
        );
        // As mqadmin: the first send (route look-up, connect) is left out of the average.
        if (i !== 0) elapsed += performance.now() - t0;
      }
      rows.push({ clusterName: cluster, brokerName, rt: amount > 1 ? elapsed / (amount - 1) : 0, successCount: ok, failCount: failed });
    }
  }
  return rows;
}

const clusterRT: Command = {
  name: "clusterRT",
  summary: "Send test messages to every broker (to the topic named after it) and print the average send RT.",
  flags: [
    { short: "a", long: "amount", value: "N", desc: "messages per broker (default 100)" },
    { short: "s", long: "size", value: "BYTES", desc: "body size (default 128)" },
    { short: "c", long: "cluster", value: "NAME", desc: "only this cluster" },
    { short: "p", long: "printLog", value: "true|false", desc: "print time|room|cluster|broker|rt lines instead of a table" },
    { short: "m", long: "machineRoom", value: "NAME", desc: "the room name of -p lines (default noname)" },
    { short: "i", long: "interval", value: "SECONDS", desc: "repeat every SECONDS until Ctrl-C" },
  ],
  examples: ["rocketbun admin clusterRT -n 127.0.0.1:9876 -a 20 -c DefaultCluster"],
  async run(ctx) {
    const f = ctx.flags;
    const s = ctx.session;
    const amount = f.int("amount", 100, 1, 1_000_000);
    const body = "a".repeat(f.int("size", 128, 1, 4 * 1024 * 1024));
    const only = f.str("cluster");
    const names = only !== undefined ? [[only, await s.brokerNamesOf(only)] as [string, string[]]] : await allClusters(s);
    const tlog = f.bool("printLog", false);
    const room = f.str("machineRoom") ?? "noname";
    const p = new Producer({ ...s.clientOptions(), group: `rocketbun-admin-rt-${Date.now()}`, retryTimesWhenSendFailed: 0 });
    await p.start();
    try {
      const interval = f.has("interval") ? f.int("interval", 10, 1, 86400) : undefined;
      return await repeat(ctx, interval, async () => {
        const rows = await rtRound(s, p, names, amount, body);
        const now = new Date().toISOString().replace("T", " ").slice(0, 19);
        const text = tlog
          ? rows.map((r) => `${now}|${room}|${r.clusterName}|${r.brokerName}|${Math.round(r.rt)}`).join("\n")
          : renderTable({
              headers: ["Cluster Name", "Broker Name", "RT", "successCount", "failCount"],
              rows: rows.map((r) => [r.clusterName, r.brokerName, r.rt.toFixed(2), r.successCount, r.failCount]),
              right: [2, 3, 4],
            });
        return { json: rows, text, failed: rows.some((r) => r.successCount === 0) };
      });
    } finally {
      await p.shutdown();
    }
  },
};

async function allClusters(s: AdminSession): Promise<[string, string[]][]> {
  const info = await s.clusterInfo();
  return Object.keys(info.clusterAddrTable)
    .sort()
    .map((c) => [c, [...(info.clusterAddrTable[c] ?? [])].sort()]);
}

export const CLUSTER_COMMANDS: readonly Command[] = [clusterList, brokerStatus, statsAll, clusterRT];
