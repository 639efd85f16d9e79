/**
 * resetOffsetByTime (mqadmin 4.9.8's ResetOffsetByTimeCommand): move a group's offsets on a topic
 * to the first message stored at or after a time. With the group online each broker asks the
 * group's clients to seek (INVOKE_BROKER_TO_RESET_OFFSET, docs/PROTOCOL.md §3.14); when the broker
 * answers CONSUMER_NOT_ONLINE the offsets are written directly, queue by queue, as mqadmin's
 * fallback (ResetOffsetByTimeOldCommand) does: SEARCH_OFFSET_BY_TIMESTAMP (or GET_MAX_OFFSET for
 * "now"), then UPDATE_CONSUMER_OFFSET when forced or when it moves the offset back.
 */
import { RequestCode, ResponseCode } from "../remoting/index.ts";
import type { MessageQueue, TopicRouteData } from "../protocol/route.ts";
import type { OffsetWrapper } from "../protocol/admin-bodies.ts";
import { readable, type Command, type CommandContext, type Output } from "./command.ts";
import { UsageError, type Flags } from "./flags.ts";
import { parseConsumeStats, parseResetOffsets, parseTopicStats } from "./bodies.ts";
import { AdminError, selectBrokerAddr } from "./session.ts";
import { renderTable } from "./table.ts";

/** `now` (-1: the end of every queue), milliseconds, or `yyyy-MM-dd#HH:mm:ss:SSS` in local time. */
export function parseResetTime(text: string): number | undefined {
  if (text === "now") return -1;
  if (/^\d+$/.test(text)) return Number(text);
  const m = /^(\d{4})-(\d{2})-(\d{2})#(\d{2}):(\d{2}):(\d{2}):(\d{3})$/.exec(text);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s, ms] = m.slice(1).map(Number) as [number, number, number, number, number, number, number];
  const t = new Date(y, mo - 1, d, h, mi, s, ms);
  return t.getMonth() === mo - 1 && t.getDate() === d ? t.getTime() : undefined;
}

function resetTime(f: Flags): number {
  const text = f.req("timestamp");
  const t = parseResetTime(text);
  if (t === undefined)
    throw new UsageError(`${f.label("timestamp")}: expected now, milliseconds or yyyy-MM-dd#HH:mm:ss:SSS, got ${JSON.stringify(text)}`);
  return t;
}

interface OfflineRow {
  brokerName: string;
  queueId: number;
  brokerOffset: number;
  consumerOffset: number;
  timestampOffset: number;
  rollbackOffset: number;
}

const resetOffsetByTime: Command = {
  name: "resetOffsetByTime",
  summary: "Move a consumer group's offsets on a topic to a point in time (online clients seek; offline: offsets are rewritten).",
  flags: [
    { short: "g", long: "group", value: "GROUP", desc: "consumer group", required: true },
    { short: "t", long: "topic", value: "TOPIC", desc: "topic", required: true },
    { short: "s", long: "timestamp", value: "TIME", desc: "now, milliseconds since the epoch, or yyyy-MM-dd#HH:mm:ss:SSS", required: true },
    { short: "f", long: "force", value: "true|false", desc: "also move offsets forward (default true)" },
    { short: "c", long: "cplus", desc: "the group's clients are the C++ client" },
  ],
  examples: ["rocketbun admin resetOffsetByTime -n 127.0.0.1:9876 -g OrderConsumers -t Orders -s 2024-05-01#00:00:00:000"],
  async run(ctx) {
    const f = ctx.flags;
    const s = ctx.session;
    const group = f.req("group");
    const topic = f.req("topic");
    const timestamp = resetTime(f);
    const force = f.bool("force", true);
    const route = await s.requireRoute(topic);
    const queues: { brokerName: string; queueId: number; offset: number }[] = [];
    for (const bd of route.brokerDatas) {
      const addr = selectBrokerAddr(bd);
      if (addr === undefined) continue;
      const ext = { topic, group, timestamp: String(timestamp), isForce: String(force) };
      const res = await s.call(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext, undefined, f.has("cplus") ? { language: "CPP" } : {});
      if (res.code === ResponseCode.CONSUMER_NOT_ONLINE) return resetOffline(ctx, route, { group, topic, timestamp, force });
      if (res.code !== ResponseCode.SUCCESS)
        throw new AdminError(`${addr} refused to reset ${group} on ${topic}: ${res.code} ${res.remark ?? ""}`, res.code);
      if (res.body === undefined) continue;
      for (const [mq, offset] of readable(parseResetOffsets(res.body), `${addr}'s reset answer`)) {
        queues.push({ brokerName: mq.brokerName, queueId: mq.queueId, offset });
      }
    }
    const head = headLine(group, topic, force, f.req("timestamp"), timestamp);
    const table = renderTable({
      headers: ["brokerName", "queueId", "offset"],
      rows: queues.map((q) => [q.brokerName, q.queueId, q.offset]),
      right: [1, 2],
    });
    return { json: { group, topic, force, timestamp, online: true, queues }, text: `${head}\n${table}` };
  },
};

function headLine(group: string, topic: string, force: boolean, text: string, ms: number): string {
  return `rollback consumer offset by specified group[${group}], topic[${topic}], force[${force}], timestamp(string)[${text}], timestamp(long)[${ms}]`;
}

interface ResetRequest {
  group: string;
  topic: string;
  timestamp: number;
  force: boolean;
}

/** The group is offline: every queue's offset written here (resetOffsetByTimestampOld). */
async function resetOffline(ctx: CommandContext, route: TopicRouteData, r: ResetRequest): Promise<Output> {
  const s = ctx.session;
  const work: { addr: string; mq: MessageQueue; o: OffsetWrapper }[] = [];
  for (const bd of route.brokerDatas) {
    const addr = selectBrokerAddr(bd);
    if (addr === undefined) continue;
    const res = await s.ok(addr, RequestCode.GET_CONSUME_STATS, { consumerGroup: r.group }, undefined, { timeoutMs: s.timeoutMs * 3 });
    const mine = readable(parseConsumeStats(res.body), `${addr}'s consume stats`).offsets.filter(([mq]) => mq.topic === r.topic);
    if (mine.length > 0) {
      for (const [mq, o] of mine) work.push({ addr, mq, o });
      continue;
    }
    // Never consumed here: every readable queue, from its first offset.
    const st = await s.ok(addr, RequestCode.GET_TOPIC_STATS_INFO, { topic: r.topic });
    const stats = new Map(readable(parseTopicStats(st.body), `${addr}'s stats of ${r.topic}`).map(([mq, t]) => [mq.queueId, t]));
    const readQueues = route.queueDatas.find((q) => q.brokerName === bd.brokerName)?.readQueueNums ?? 0;
    for (let q = 0; q < readQueues; q++) {
      const t = stats.get(q);
      work.push({
        addr,
        mq: { topic: r.topic, brokerName: bd.brokerName, queueId: q },
        o: { brokerOffset: t?.maxOffset ?? 0, consumerOffset: t?.minOffset ?? 0, lastTimestamp: 0 },
      });
    }
  }
  const progress = ctx.progress("resetOffsetByTime", work.length);
  const rows: OfflineRow[] = [];
  for (const { addr, mq, o } of work) {
    rows.push(await resetQueue(ctx, addr, mq, o, r));
    progress.tick();
  }
  progress.end();
  const table = renderTable({
    headers: ["brokerName", "queueId", "brokerOffset", "consumerOffset", "timestampOffset", "rollbackOffset"],
    rows: rows.map((x) => [x.brokerName, x.queueId, x.brokerOffset, x.consumerOffset, x.timestampOffset, x.rollbackOffset]),
    right: [1, 2, 3, 4, 5],
  });
  const head = headLine(r.group, r.topic, r.force, ctx.flags.req("timestamp"), r.timestamp);
  return { json: { group: r.group, topic: r.topic, force: r.force, timestamp: r.timestamp, online: false, queues: rows }, text: `${head}\n${table}` };
}

async function resetQueue(ctx: CommandContext, addr: string, mq: MessageQueue, o: OffsetWrapper, r: ResetRequest): Promise<OfflineRow> {
  const s = ctx.session;
  const q = { topic: mq.topic, queueId: String(mq.queueId) };
  const found =
    r.timestamp === -1
      ? await s.ok(addr, RequestCode.GET_MAX_OFFSET, q)
      : await s.ok(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, { ...q, timestamp: String(r.timestamp) });
  const target = Number(found.extFields?.offset ?? NaN);
  if (!Number.isSafeInteger(target)) throw new AdminError(`${addr} answered no offset for ${mq.topic}:${mq.queueId}`);
  const row = {
    brokerName: mq.brokerName,
    queueId: mq.queueId,
    brokerOffset: o.brokerOffset,
    consumerOffset: o.consumerOffset,
    timestampOffset: target,
    rollbackOffset: o.consumerOffset,
  };
  if (r.force || target <= o.consumerOffset) {
    await s.ok(addr, RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: r.group, ...q, commitOffset: String(target) });
    row.rollbackOffset = target;
  }
  return row;
}

export const OFFSET_COMMANDS: readonly Command[] = [resetOffsetByTime];
