/**
 * What the dashboard's pages show, gathered from the info functions of the components a process
 * runs (the same functions the JSON routes read), shaped for the pages in ./pages/.
 */
import {
  AUTO_CREATE_TOPIC,
  DLQ_GROUP_TOPIC_PREFIX,
  isNotAllowedSendTopic,
  RETRY_GROUP_TOPIC_PREFIX,
  type BrokerInfo,
  type TopicConfig,
} from "../../broker/index.ts";
import type { ConfigEntry } from "./pages/process.tsx";
import type { DlqTopic } from "./pages/messages.tsx";
import type { GroupRow } from "./pages/groups.tsx";
import type { TopicRow } from "./pages/topics.tsx";
import type { SampleHistory } from "./sampler.ts";

export function topicKind(name: string, b: BrokerInfo): string {
  if (name.startsWith(RETRY_GROUP_TOPIC_PREFIX)) return "retry";
  if (name.startsWith(DLQ_GROUP_TOPIC_PREFIX)) return "dead letters";
  const s = b.settings();
  const system = isNotAllowedSendTopic(name) || name === AUTO_CREATE_TOPIC || name === s.clusterName || name === s.brokerName;
  return system || name.startsWith("RMQ_SYS_") ? "system" : "normal";
}

/** The newest sampled value of a series, if it has one. */
function latest(series: Record<string, (number | null)[]>, name: string): number | undefined {
  const v = series[name]?.at(-1);
  return v === null ? undefined : v;
}

export function topicRow(b: BrokerInfo, config: TopicConfig, h: SampleHistory | undefined): TopicRow {
  const name = config.topicName;
  const inTps = h ? (latest(h.inTps, name) ?? (h.times.length > 0 ? 0 : undefined)) : undefined;
  const outTps = h ? (latest(h.outTps, name) ?? (h.times.length > 0 ? 0 : undefined)) : undefined;
  return {
    config,
    kind: topicKind(name, b),
    queues: b.queueOffsets(name),
    ...(inTps !== undefined ? { inTps } : {}),
    ...(outTps !== undefined ? { outTps } : {}),
  };
}

export function topicRows(b: BrokerInfo, all: boolean, h: SampleHistory | undefined): TopicRow[] {
  const rows = b
    .topics()
    .map((t) => topicRow(b, t, h))
    .sort((x, y) => (x.config.topicName < y.config.topicName ? -1 : 1));
  return all ? rows : rows.filter((r) => r.kind === "normal");
}

export function groupRows(b: BrokerInfo): GroupRow[] {
  const online = new Map(b.clients().consumers.map((g) => [g.group, g]));
  const pop = Map.groupBy(b.popConsumption(), (p) => p.group);
  return b.consumerGroups().map((group) => {
    const g = online.get(group);
    return { group, queues: b.groupOffsets(group), pop: pop.get(group) ?? [], ...(g ? { online: g } : {}) };
  });
}

export function dlqTopics(b: BrokerInfo): DlqTopic[] {
  return b
    .topics()
    .filter((t) => t.topicName.startsWith(DLQ_GROUP_TOPIC_PREFIX))
    .map((t) => ({
      group: t.topicName.slice(DLQ_GROUP_TOPIC_PREFIX.length),
      topic: t.topicName,
      messages: b.queueOffsets(t.topicName).reduce((n, q) => n + Math.max(0, q.maxOffset - Math.max(0, q.minOffset)), 0),
    }))
    .sort((x, y) => (x.group < y.group ? -1 : 1));
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** GET /config's answer ({file, liveKeys, config}) as one row per key, dotted; a live key is never split. */
export function configEntries(described: unknown): { file: string | null; entries: ConfigEntry[] } {
  if (!isRecord(described)) return { file: null, entries: [] };
  const live = new Set(Array.isArray(described.liveKeys) ? described.liveKeys.map(String) : []);
  const entries: ConfigEntry[] = [];
  const walk = (prefix: string, v: unknown) => {
    if (isRecord(v) && !live.has(prefix)) {
      for (const [k, x] of Object.entries(v)) walk(prefix === "" ? k : `${prefix}.${k}`, x);
      return;
    }
    entries.push({ key: prefix, value: v, live: live.has(prefix) });
  };
  walk("", described.config);
  return { file: typeof described.file === "string" ? described.file : null, entries };
}

/** The name servers a process's configuration names (broker.namesrvAddr), as addresses. */
export function namesrvAddrs(described: unknown): string[] {
  if (!isRecord(described) || !isRecord(described.config) || !isRecord(described.config.broker)) return [];
  const list = described.config.broker.namesrvAddr;
  return Array.isArray(list) ? list.map(String) : [];
}
