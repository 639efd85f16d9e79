/**
 * Message commands: queryMsgById, queryMsgByKey, queryMsgByUniqueKey, queryMsgByOffset
 * (mqadmin 4.9.8's QueryMsg*SubCommand; docs/PROTOCOL.md §3.12, §3.5, §3.14). Sending and
 * consuming (sendMessage, consumeMessage) are in commands-produce.ts.
 */
import { decodeOffsetMsgId, formatHostAddress } from "../common/message-record.ts";
import { RequestCode, ResponseCode } from "../remoting/index.ts";
import { UNIQUE_KEY_QUERY_FLAG } from "../protocol/acl-signature.ts";
import { PullSysFlag } from "../protocol/pull-sys-flag.ts";
import { TOOLS_CONSUMER_GROUP } from "../protocol/topics.ts";
import { readable, type Command } from "./command.ts";
import { UsageError, type Flags } from "./flags.ts";
import { readBodyJson } from "./bodies.ts";
import { decodeViews, renderView, trackMessage, viewJson, type MessageView } from "./message-view.ts";
import { AdminError, selectBrokerAddr, type AdminSession } from "./session.ts";
import { renderTable } from "./table.ts";

/** Java's Long.MAX_VALUE, the end of QUERY_MESSAGE's time range in mqadmin. */
const END_OF_TIME = "9223372036854775807";

/** VIEW_MESSAGE_BY_ID at the store host an offset message id names. */
export async function viewById(s: AdminSession, id: string): Promise<MessageView> {
  const decoded = decodeOffsetMsgId(id);
  if ("invalid" in decoded)
    throw new UsageError(
      `${JSON.stringify(id)} is not an offset message id (${decoded.invalid}); for a producer's id use queryMsgByUniqueKey -t TOPIC -i ID`,
    );
  const addr = formatHostAddress(decoded.host);
  const res = await s.ok(addr, RequestCode.VIEW_MESSAGE_BY_ID, { offset: String(decoded.offset) });
  const view = decodeViews(res.body)[0];
  if (view === undefined) throw new AdminError(`${addr} answered VIEW_MESSAGE_BY_ID for ${id} without a readable record`);
  return view;
}

/** CONSUME_MESSAGE_DIRECTLY: the broker that stored the message hands it to one client of the group. */
async function consumeDirectly(s: AdminSession, group: string, clientId: string, m: MessageView): Promise<unknown> {
  const res = await s.ok(m.storeHost, RequestCode.CONSUME_MESSAGE_DIRECTLY, { consumerGroup: group, clientId, msgId: m.offsetMsgId }, undefined, {
    timeoutMs: s.timeoutMs * 3,
  });
  return readable(readBodyJson(res.body), `${m.storeHost}'s CONSUME_MESSAGE_DIRECTLY answer`).value;
}

const DIRECT_FLAGS = [
  { short: "g", long: "consumerGroup", value: "GROUP", desc: "with -d: have this group's client consume the message again" },
  { short: "d", long: "clientId", value: "CLIENT_ID", desc: "with -g: the client (see consumerConnection)" },
] as const;

function directTarget(f: Flags): { group: string; clientId: string } | undefined {
  const group = f.str("consumerGroup");
  const clientId = f.str("clientId");
  if ((group === undefined) !== (clientId === undefined)) throw new UsageError(`${f.label("consumerGroup")} and ${f.label("clientId")} go together`);
  return group !== undefined && clientId !== undefined ? { group, clientId } : undefined;
}

const queryMsgById: Command = {
  name: "queryMsgById",
  summary: "Show a message by its offset message id (several: comma-separated), and which groups consumed it.",
  flags: [{ short: "i", long: "msgId", value: "ID[,ID]", desc: "offset message id(s)", required: true }, ...DIRECT_FLAGS],
  examples: ["rocketbun admin queryMsgById -n 127.0.0.1:9876 -i 7F00000100002A9F0000000000000000"],
  async run({ session: s, flags: f }) {
    const ids = f
      .req("msgId")
      .split(",")
      .map((x) => x.trim())
      .filter(Boolean);
    const direct = directTarget(f);
    const json: unknown[] = [];
    const text: string[] = [];
    for (const id of ids) {
      const m = await viewById(s, id);
      if (direct) {
        const result = await consumeDirectly(s, direct.group, direct.clientId, m);
        json.push({ msgId: id, result });
        text.push(`${id}: ${JSON.stringify(result)}`);
        continue;
      }
      const track = await trackMessage(s, m);
      json.push(viewJson(m, track));
      text.push(renderView(m, track));
    }
    return { json: ids.length === 1 ? json[0] : json, text: text.join("\n\n") };
  },
};

/** QUERY_MESSAGE to every broker of the topic; the records whose key (or unique key) matches. */
async function queryByKey(s: AdminSession, topic: string, key: string, unique: boolean): Promise<MessageView[]> {
  const route = await s.requireRoute(topic);
  const found: MessageView[] = [];
  for (const bd of route.brokerDatas) {
    const addr = selectBrokerAddr(bd);
    if (addr === undefined) continue;
    const ext: Record<string, string> = { topic, key, maxNum: unique ? "32" : "64", beginTimestamp: "0", endTimestamp: END_OF_TIME };
    if (unique) ext[UNIQUE_KEY_QUERY_FLAG] = "true";
    const res = await s.call(addr, RequestCode.QUERY_MESSAGE, ext, undefined, { timeoutMs: s.timeoutMs * 3 });
    if (res.code === ResponseCode.QUERY_NOT_FOUND) continue;
    if (res.code !== ResponseCode.SUCCESS) throw new AdminError(`${addr} refused QUERY_MESSAGE: ${res.code} ${res.remark ?? ""}`, res.code);
    // The index is a hash: check the key itself, as the Java client does.
    for (const m of decodeViews(res.body)) {
      if (m.topic !== topic) continue;
      if (unique ? m.msgId === key : (m.keys ?? "").split(" ").includes(key)) found.push(m);
    }
  }
  return found.sort((a, b) => a.storeTimestamp - b.storeTimestamp || a.commitLogOffset - b.commitLogOffset);
}

const queryMsgByKey: Command = {
  name: "queryMsgByKey",
  summary: "List the messages of a topic that carry a key (at most 64 per broker).",
  flags: [
    { short: "t", long: "topic", value: "TOPIC", desc: "topic", required: true },
    { short: "k", long: "msgKey", value: "KEY", desc: "message key", required: true },
  ],
  examples: ["rocketbun admin queryMsgByKey -n 127.0.0.1:9876 -t Orders -k order-42"],
  async run({ session: s, flags: f }) {
    const found = await queryByKey(s, f.req("topic"), f.req("msgKey"), false);
    const rows = found.map((m) => ({
      msgId: m.msgId,
      offsetMsgId: m.offsetMsgId,
      queueId: m.queueId,
      queueOffset: m.queueOffset,
      storeHost: m.storeHost,
    }));
    const table = renderTable({
      headers: ["Message ID", "QID", "Offset"],
      rows: rows.map((r) => [r.msgId, r.queueId, r.queueOffset]),
      right: [1, 2],
    });
    return { json: rows, text: table };
  },
};

const queryMsgByUniqueKey: Command = {
  name: "queryMsgByUniqueKey",
  summary: "Show a message by the id its producer gave it (UNIQ_KEY); -a shows every copy (a resent message has several).",
  flags: [
    { short: "i", long: "msgId", value: "ID", desc: "the producer's message id", required: true },
    { short: "t", long: "topic", value: "TOPIC", desc: "topic", required: true },
    { short: "a", long: "showAll", desc: "every stored copy (at most 32), not only the first" },
    ...DIRECT_FLAGS,
  ],
  examples: ["rocketbun admin queryMsgByUniqueKey -n 127.0.0.1:9876 -t Orders -i 7F0000010B1C18B4AAC2123456780000"],
  async run({ session: s, flags: f }) {
    const id = f.req("msgId");
    const found = await queryByKey(s, f.req("topic"), id, true);
    if (found.length === 0) throw new AdminError(`no message with the unique key ${id} in topic ${f.req("topic")}`, ResponseCode.NO_MESSAGE);
    const direct = directTarget(f);
    if (direct) {
      const result = await consumeDirectly(s, direct.group, direct.clientId, found[0]!);
      return { json: { msgId: id, result }, text: JSON.stringify(result) };
    }
    const shown = f.has("showAll") ? found : found.slice(0, 1);
    const views = [];
    for (const m of shown) views.push({ m, track: await trackMessage(s, m) });
    const json = views.map((v) => viewJson(v.m, v.track));
    return { json: f.has("showAll") ? json : json[0], text: views.map((v) => renderView(v.m, v.track)).join("\n\n") };
  },
};

/** PULL_MESSAGE of up to `max` records at `offset`, as mqadmin's tools consumer pulls (no commit, no hold). */
export async function pullAt(s: AdminSession, addr: string, topic: string, queueId: number, offset: number, max: number, group: string) {
  const res = await s.call(addr, RequestCode.PULL_MESSAGE, {
    consumerGroup: group,
    topic,
    queueId: String(queueId),
    queueOffset: String(offset),
    maxMsgNums: String(max),
    sysFlag: String(PullSysFlag.SUBSCRIPTION),
    commitOffset: "0",
    suspendTimeoutMillis: "0",
    subscription: "*",
    subVersion: "0",
    expressionType: "TAG",
  });
  const next = Number(res.extFields?.nextBeginOffset ?? offset);
  if (res.code === ResponseCode.SUCCESS) return { status: "FOUND" as const, next, messages: decodeViews(res.body) };
  if (res.code === ResponseCode.PULL_NOT_FOUND) return { status: "NO_NEW_MSG" as const, next, messages: [] };
  if (res.code === ResponseCode.PULL_RETRY_IMMEDIATELY) return { status: "NO_MATCHED_MSG" as const, next, messages: [] };
  if (res.code === ResponseCode.PULL_OFFSET_MOVED) return { status: "OFFSET_ILLEGAL" as const, next, messages: [] };
  throw new AdminError(`${addr} refused PULL_MESSAGE of ${topic}:${queueId}@${offset}: ${res.code} ${res.remark ?? ""}`, res.code);
}

const queryMsgByOffset: Command = {
  name: "queryMsgByOffset",
  summary: "Show the message at a queue offset.",
  flags: [
    { short: "t", long: "topic", value: "TOPIC", desc: "topic", required: true },
    { short: "b", long: "brokerName", value: "NAME", desc: "broker name", required: true },
    { short: "i", long: "queueId", value: "N", desc: "queue id", required: true },
    { short: "o", long: "offset", value: "N", desc: "queue offset", required: true },
  ],
  examples: ["rocketbun admin queryMsgByOffset -n 127.0.0.1:9876 -t Orders -b broker-a -i 0 -o 12"],
  async run({ session: s, flags: f }) {
    const topic = f.req("topic");
    const queueId = f.int("queueId", 0, 0, 65535);
    const offset = f.int("offset", 0, 0, Number.MAX_SAFE_INTEGER);
    const addr = await s.addrOfBrokerName(f.req("brokerName"));
    const r = await pullAt(s, addr, topic, queueId, offset, 1, TOOLS_CONSUMER_GROUP);
    const m = r.messages[0];
    if (m === undefined)
      throw new AdminError(`no message at ${topic} ${f.req("brokerName")}:${queueId} offset ${offset} (${r.status})`, ResponseCode.NO_MESSAGE);
    const track = await trackMessage(s, m);
    return { json: viewJson(m, track), text: renderView(m, track) };
  },
};

export const MESSAGE_COMMANDS: readonly Command[] = [queryMsgById, queryMsgByKey, queryMsgByUniqueKey, queryMsgByOffset];
