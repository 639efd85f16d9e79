/**
 * The admin response bodies `rocketbun admin` reads (docs/PROTOCOL.md §3.15, §3.16), from
 * RocketBun or from Apache RocketMQ: fastjson's object-keyed maps (`{{"brokerName":…}:…}`, docs/PROTOCOL.md §3.17)
 * and unquoted numeric keys are read with the tolerant parser (common/object-key-json.ts). Every
 * reader checks the shape it relies on and returns a reason instead of throwing on odd input. The
 * shapes read are the ones the broker and name server write (src/protocol/admin-bodies.ts, route.ts).
 */
import { parseObjectKeyedJson } from "../common/object-key-json.ts";
import type { Invalid } from "../common/invalid.ts";
import type { ClusterInfo, MessageQueue } from "../protocol/route.ts";
import type { BrokerStatsData, BrokerStatsItem, ClientConnection, OffsetWrapper, TopicOffset } from "../protocol/admin-bodies.ts";

export interface ConsumerConnectionInfo {
  connections: ClientConnection[];
  /** topic → subscription expression. */
  subscriptions: { topic: string; subString: string; tagsSet: string[] }[];
  consumeType: string;
  messageModel: string;
  consumeFromWhere: string;
}

const decoder = new TextDecoder("utf-8");

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Map);
}

/** The body as a JSON object (object-keyed maps inside become Maps), or a reason. */
function readObj(body: Uint8Array | undefined): { o: Obj } | Invalid {
  if (body === undefined || body.length === 0) return { invalid: "empty body" };
  const r = parseObjectKeyedJson(decoder.decode(body));
  if ("invalid" in r) return { invalid: `not JSON: ${r.invalid}` };
  return isObj(r.value) ? { o: r.value } : { invalid: "not a JSON object" };
}

/** Any JSON answer (object keys allowed), for output as it came. */
export function readBodyJson(body: Uint8Array | undefined): { value: unknown } | Invalid {
  if (body === undefined || body.length === 0) return { invalid: "empty body" };
  const r = parseObjectKeyedJson(decoder.decode(body));
  return "invalid" in r ? { invalid: `not JSON: ${r.invalid}` } : { value: r.value };
}

const num = (v: unknown): number => (typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : 0);
const str = (v: unknown): string => (v === undefined || v === null ? "" : String(v));

export function parseClusterInfo(body: Uint8Array | undefined): ClusterInfo | Invalid {
  const r = readObj(body);
  if ("invalid" in r) return r;
  const o = r.o;
  const brokers = isObj(o.brokerAddrTable) ? o.brokerAddrTable : {};
  const clusters = isObj(o.clusterAddrTable) ? o.clusterAddrTable : {};
  const out: ClusterInfo = { brokerAddrTable: {}, clusterAddrTable: {} };
  for (const [name, raw] of Object.entries(brokers)) {
    if (!isObj(raw)) continue;
    const addrs: Record<string, string> = {};
    if (isObj(raw.brokerAddrs)) for (const [id, a] of Object.entries(raw.brokerAddrs)) if (typeof a === "string") addrs[id] = a;
    out.brokerAddrTable[name] = { cluster: str(raw.cluster), brokerName: name, brokerAddrs: addrs };
  }
  for (const [c, names] of Object.entries(clusters)) out.clusterAddrTable[c] = Array.isArray(names) ? names.map(str) : [];
  return out;
}

/** `{"topicList":[…]}` (GET_ALL_TOPIC_LIST_FROM_NAMESERVER) or `{"groupList":[…]}` (QUERY_TOPIC_CONSUME_BY_WHO). */
export function parseNameList(body: Uint8Array | undefined, field: "topicList" | "groupList"): string[] | Invalid {
  const r = readObj(body);
  if ("invalid" in r) return r;
  const o = r.o;
  const list = o[field];
  return Array.isArray(list) ? list.map(str) : { invalid: `no ${field} array` };
}

/** `{"table":{k:v}}` (GET_BROKER_RUNTIME_INFO's KVTable). */
export function parseKvTable(body: Uint8Array | undefined): Record<string, string> | Invalid {
  const r = readObj(body);
  if ("invalid" in r) return r;
  const o = r.o;
  if (!isObj(o.table)) return { invalid: "no table object" };
  return Object.fromEntries(Object.entries(o.table).map(([k, v]) => [k, str(v)]));
}

/** The entries of a `Map<MessageQueue, V>` as fastjson writes it, queues sorted as Java sorts them. */
export function queueEntries(table: unknown): [MessageQueue, unknown][] {
  const out: [MessageQueue, unknown][] = [];
  if (!(table instanceof Map)) return out;
  for (const [k, v] of table) {
    if (!isObj(k)) continue;
    out.push([{ topic: str(k.topic), brokerName: str(k.brokerName), queueId: num(k.queueId) }, v]);
  }
  return out.sort(([a], [b]) =>
    a.topic !== b.topic ? cmp(a.topic, b.topic) : a.brokerName !== b.brokerName ? cmp(a.brokerName, b.brokerName) : a.queueId - b.queueId,
  );
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function parseTopicStats(body: Uint8Array | undefined): [MessageQueue, TopicOffset][] | Invalid {
  const r = readObj(body);
  if ("invalid" in r) return r;
  const o = r.o;
  return queueEntries(o.offsetTable).map(([mq, v]) => {
    const w = isObj(v) ? v : {};
    return [mq, { minOffset: num(w.minOffset), maxOffset: num(w.maxOffset), lastUpdateTimestamp: num(w.lastUpdateTimestamp) }];
  });
}

export function parseConsumeStats(body: Uint8Array | undefined): { consumeTps: number; offsets: [MessageQueue, OffsetWrapper][] } | Invalid {
  const r = readObj(body);
  if ("invalid" in r) return r;
  const o = r.o;
  const offsets = queueEntries(o.offsetTable).map(([mq, v]): [MessageQueue, OffsetWrapper] => {
    const w = isObj(v) ? v : {};
    return [mq, { brokerOffset: num(w.brokerOffset), consumerOffset: num(w.consumerOffset), lastTimestamp: num(w.lastTimestamp) }];
  });
  return { consumeTps: num(o.consumeTps), offsets };
}

function parseConnections(raw: unknown): ClientConnection[] {
  if (!Array.isArray(raw)) return [];
  return raw
    .filter(isObj)
    .map((c) => ({ clientId: str(c.clientId), clientAddr: str(c.clientAddr), language: str(c.language), version: num(c.version) }))
    .sort((a, b) => cmp(a.clientId, b.clientId));
}

export function parseConsumerConnection(body: Uint8Array | undefined): ConsumerConnectionInfo | Invalid {
  const r = readObj(body);
  if ("invalid" in r) return r;
  const o = r.o;
  const subs = isObj(o.subscriptionTable) ? Object.values(o.subscriptionTable).filter(isObj) : [];
  return {
    connections: parseConnections(o.connectionSet),
    subscriptions: subs
      .map((s) => ({ topic: str(s.topic), subString: str(s.subString), tagsSet: Array.isArray(s.tagsSet) ? s.tagsSet.map(str) : [] }))
      .sort((a, b) => cmp(a.topic, b.topic)),
    consumeType: str(o.consumeType),
    messageModel: str(o.messageModel),
    consumeFromWhere: str(o.consumeFromWhere),
  };
}

export function parseProducerConnection(body: Uint8Array | undefined): ClientConnection[] | Invalid {
  const r = readObj(body);
  if ("invalid" in r) return r;
  const o = r.o;
  return parseConnections(o.connectionSet);
}

export function parseBrokerStats(body: Uint8Array | undefined): BrokerStatsData | Invalid {
  const r = readObj(body);
  if ("invalid" in r) return r;
  const o = r.o;
  const item = (v: unknown): BrokerStatsItem => {
    const w = isObj(v) ? v : {};
    return { sum: num(w.sum), tps: num(w.tps), avgpt: num(w.avgpt) };
  };
  return { statsMinute: item(o.statsMinute), statsHour: item(o.statsHour), statsDay: item(o.statsDay) };
}

/** INVOKE_BROKER_TO_RESET_OFFSET's ResetOffsetBody: queue → new offset. */
export function parseResetOffsets(body: Uint8Array | undefined): [MessageQueue, number][] | Invalid {
  const r = readObj(body);
  if ("invalid" in r) return r;
  const o = r.o;
  return queueEntries(o.offsetTable).map(([mq, v]) => [mq, num(v)]);
}

/** The queues of a ConsumerRunningInfo's mqTable (GET_CONSUMER_RUNNING_INFO). */
export function parseRunningInfoQueues(body: Uint8Array | undefined): MessageQueue[] | Invalid {
  const r = readObj(body);
  if ("invalid" in r) return r;
  const o = r.o;
  return queueEntries(o.mqTable).map(([mq]) => mq);
}

/**
 * Java Properties text (GET_BROKER_CONFIG, GET_NAMESRV_CONFIG) → pairs in the order written.
 * `key=value` lines; `#`/`!` comments and blank lines skipped; `\:` `\=` `\\` unescaped.
 */
export function parseProperties(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith("!")) continue;
    const m = /^((?:\\.|[^=:\s\\])*)\s*[=:\s]\s*(.*)$/.exec(line);
    const unescape = (s: string) => s.replace(/\\(.)/g, "$1");
    if (m) out.push([unescape(m[1]!), unescape(m[2]!)]);
    else out.push([unescape(line), ""]);
  }
  return out;
}

/** Properties text as Java's MixAll.properties2String writes it: `key=value` lines. */
export function propertiesText(pairs: readonly (readonly [string, string])[]): string {
  return pairs.map(([k, v]) => `${k}=${v}\n`).join("");
}

const FIRST_3_0_0 = ["SNAPSHOT", "ALPHA1", "BETA1", "BETA2", "BETA3", "BETA4", "BETA5", "BETA6_SNAPSHOT", "BETA6"];
const LATER_3_0_0 = ["BETA7_SNAPSHOT", "BETA7", "BETA8_SNAPSHOT", "BETA8", "BETA9_SNAPSHOT", "BETA9", "FINAL"];

/**
 * Java MQVersion.getVersionDesc: a client's version ordinal → its enum name (409 = V4_9_8). The
 * enum is a list with a few irregular runs: 3.0.0's pre-releases (0–15), 3.0.1–3.0.15 (16–45),
 * 3.1.x–3.2.x with ten patches (46–85), 3.3–3.9 with patches 1–9 (86–211), then 4.x and 5.x with
 * ten patches each, every release after its SNAPSHOT (212–611), HIGHER_VERSION beyond.
 */
export function mqVersionName(ordinal: number): string {
  if (!Number.isInteger(ordinal) || ordinal < 0) return String(ordinal);
  if (ordinal < 16) return `V3_0_0_${[...FIRST_3_0_0, ...LATER_3_0_0][ordinal]}`;
  if (ordinal >= 612) return "HIGHER_VERSION";
  const pair = (base: number, major: number, minor: number, patch0: number, perMinor: number) => {
    const i = ordinal - base;
    const m = Math.floor(i / perMinor);
    const p = Math.floor((i % perMinor) / 2) + patch0;
    return `V${major}_${minor + m}_${p}${i % 2 === 0 ? "_SNAPSHOT" : ""}`;
  };
  if (ordinal < 46) return pair(16, 3, 0, 1, 30);
  if (ordinal < 86) return pair(46, 3, 1, 0, 20);
  if (ordinal < 212) return pair(86, 3, 3, 1, 18);
  if (ordinal < 412) return pair(212, 4, 0, 0, 20);
  return pair(412, 5, 0, 0, 20);
}
