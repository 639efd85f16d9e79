/**
 * sendMessage and consumeMessage (mqadmin 4.9.8's SendMessageCommand, ConsumeMessageCommand).
 * sendMessage sends with the client library's Producer (a producer group named after the time, as
 * mqadmin's); consumeMessage pulls queue ranges as mqadmin's tools consumer does, committing
 * nothing, so it never moves a group's offsets.
 */
import { Producer } from "../client/producer.ts";
import { subscribeQueues } from "../client/route.ts";
import { RequestCode } from "../remoting/index.ts";
import type { MessageQueue } from "../protocol/route.ts";
import { TOOLS_CONSUMER_GROUP } from "../protocol/topics.ts";
import type { Command } from "./command.ts";
import { UsageError, type Flags } from "./flags.ts";
import { pullAt } from "./commands-message.ts";
import { parseResetTime } from "./commands-offset.ts";
import { bodyText, viewJson, type MessageView } from "./message-view.ts";
import { AdminError, type AdminSession } from "./session.ts";
import { renderTable } from "./table.ts";

const sendMessage: Command = {
  name: "sendMessage",
  summary: "Send one message (to a chosen queue with -b and -i).",
  flags: [
    { short: "t", long: "topic", value: "TOPIC", desc: "topic", required: true },
    { short: "p", long: "body", value: "TEXT", desc: "the body, as UTF-8 text", required: true },
    { short: "k", long: "key", value: "KEYS", desc: "message keys (several: separated by spaces)" },
    { short: "c", long: "tags", value: "TAG", desc: "message tag" },
    { short: "b", long: "broker", value: "NAME", desc: "send to this broker name (with -i)" },
    { short: "i", long: "qid", value: "N", desc: "send to this queue id (needs -b)" },
    { short: "m", long: "msgTraceEnable", value: "false", desc: "message trace (not supported: only false)" },
  ],
  examples: ["rocketbun admin sendMessage -n 127.0.0.1:9876 -t Orders -p 'hello' -k order-42 -c TagA"],
  async run({ session: s, flags: f }) {
    const topic = f.req("topic");
    const broker = f.str("broker");
    const qid = f.has("qid") ? f.int("qid", 0, 0, 65535) : undefined;
    if (qid !== undefined && broker === undefined) throw new UsageError(`${f.label("qid")} needs ${f.label("broker")}`);
    if (f.bool("msgTraceEnable", false)) throw new UsageError(`${f.label("msgTraceEnable")}: message trace is not supported`);
    const p = new Producer({ ...s.clientOptions(), group: `rocketbun-admin-${Date.now()}`, retryTimesWhenSendFailed: 2 });
    await p.start();
    try {
      const keys = f.str("key");
      const tags = f.str("tags");
      const msg = { topic, body: f.req("body"), ...(keys !== undefined ? { keys } : {}), ...(tags !== undefined ? { tags } : {}) };
      const pick = (queues: readonly MessageQueue[]) => {
        const q = queues.find((x) => x.brokerName === broker && x.queueId === qid);
        if (q === undefined) throw new AdminError(`topic ${topic} has no writable queue ${broker}:${qid}`);
        return q;
      };
      const r = await p.send(msg, qid !== undefined ? { selector: pick } : {});
      const row = {
        brokerName: r.queue.brokerName,
        queueId: r.queue.queueId,
        sendStatus: r.status,
        msgId: r.msgId,
        offsetMsgId: r.offsetMsgId,
        queueOffset: r.queueOffset,
      };
      const table = renderTable({
        headers: ["Broker Name", "QID", "Send Result", "MsgId"],
        rows: [[row.brokerName, row.queueId, row.sendStatus, row.msgId]],
      });
      return { json: row, text: table };
    } catch (e) {
      if (e instanceof AdminError || e instanceof UsageError) throw e;
      throw new AdminError(`send to ${topic} failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      await p.shutdown();
    }
  },
};

interface Range {
  mq: MessageQueue;
  from: number;
  /** Exclusive. */
  to: number;
}

async function queueOffset(s: AdminSession, addr: string, mq: MessageQueue, code: number, extra: Record<string, string> = {}): Promise<number> {
  const res = await s.ok(addr, code, { topic: mq.topic, queueId: String(mq.queueId), ...extra });
  const n = Number(res.extFields?.offset);
  if (!Number.isSafeInteger(n)) throw new AdminError(`${addr} answered no offset for ${mq.topic}:${mq.queueId}`);
  return n;
}

function timeFlag(f: Flags, long: string, now: number): number {
  const text = f.str(long);
  if (text === undefined) return 0;
  const t = parseResetTime(text);
  if (t === undefined || t < 0)
    throw new UsageError(`${f.label(long)}: expected milliseconds or yyyy-MM-dd#HH:mm:ss:SSS, got ${JSON.stringify(text)}`);
  if (t > now) throw new UsageError(`${f.label(long)}: ${text} is in the future`);
  return t;
}

/** The queues to read and the offsets [from, to) of each (executeDefault / executeByCondition). */
async function ranges(s: AdminSession, f: Flags, topic: string, count: number): Promise<Range[]> {
  const now = Date.now();
  const begin = timeFlag(f, "beginTimestamp", now);
  const end = timeFlag(f, "endTimestamp", now);
  if (end > 0 && begin > end) throw new UsageError(`${f.label("beginTimestamp")} is after ${f.label("endTimestamp")}`);
  const brokerName = f.str("brokerName");
  if (f.has("queueId") && brokerName === undefined) throw new UsageError(`${f.label("queueId")} needs ${f.label("brokerName")}`);
  if (f.has("offset") && !f.has("queueId")) throw new UsageError(`${f.label("offset")} needs ${f.label("queueId")}`);
  const route = await s.requireRoute(topic);
  let queues = subscribeQueues(topic, route);
  if (brokerName !== undefined) queues = queues.filter((q) => q.brokerName === brokerName);
  if (f.has("queueId")) queues = queues.filter((q) => q.queueId === f.int("queueId", 0, 0, 65535));
  if (queues.length === 0)
    throw new AdminError(`topic ${topic} has no readable queue${brokerName !== undefined ? ` on ${brokerName}` : ""} matching the flags`);
  const out: Range[] = [];
  let left = count;
  for (const mq of queues) {
    if (left <= 0) break;
    const addr = await s.addrOfBrokerName(mq.brokerName);
    let from =
      begin > 0
        ? await queueOffset(s, addr, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, { timestamp: String(begin) })
        : await queueOffset(s, addr, mq, RequestCode.GET_MIN_OFFSET);
    const to =
      end > 0
        ? await queueOffset(s, addr, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, { timestamp: String(end) })
        : await queueOffset(s, addr, mq, RequestCode.GET_MAX_OFFSET);
    if (f.has("offset")) from = Math.max(from, f.int("offset", 0, 0, Number.MAX_SAFE_INTEGER));
    const n = Math.max(0, Math.min(to - from, left));
    out.push({ mq, from, to: from + n });
    left -= n;
  }
  return out;
}

const consumeMessage: Command = {
  name: "consumeMessage",
  summary: "Print messages of a topic, a broker's queues or one queue from an offset (commits nothing).",
  flags: [
    { short: "t", long: "topic", value: "TOPIC", desc: "topic", required: true },
    { short: "b", long: "brokerName", value: "NAME", desc: "only this broker's queues" },
    { short: "i", long: "queueId", value: "N", desc: "only this queue (needs -b)" },
    { short: "o", long: "offset", value: "N", desc: "start at this queue offset (needs -i)" },
    { short: "g", long: "consumerGroup", value: "GROUP", desc: "the group the pulls name (default TOOLS_CONSUMER)" },
    { short: "s", long: "beginTimestamp", value: "TIME", desc: "from the first message stored at or after this time" },
    { short: "e", long: "endTimestamp", value: "TIME", desc: "up to this time" },
    { short: "c", long: "MessageNumber", value: "N", desc: "at most this many messages (default 128)" },
  ],
  examples: ["rocketbun admin consumeMessage -n 127.0.0.1:9876 -t Orders -b broker-a -i 0 -o 10 -c 5"],
  async run({ session: s, flags: f }) {
    const topic = f.req("topic");
    const count = f.int("MessageNumber", 128, 1, 1_000_000);
    const group = f.str("consumerGroup") ?? TOOLS_CONSUMER_GROUP;
    const got: MessageView[] = [];
    for (const r of await ranges(s, f, topic, count)) {
      const addr = await s.addrOfBrokerName(r.mq.brokerName);
      let offset = r.from;
      while (offset < r.to) {
        const p = await pullAt(s, addr, topic, r.mq.queueId, offset, Math.min(32, r.to - offset), group);
        if (p.status !== "FOUND" && p.status !== "NO_MATCHED_MSG") break;
        got.push(...p.messages.filter((m) => m.queueOffset < r.to));
        if (p.next <= offset) break;
        offset = p.next;
      }
    }
    const lines = got.map(
      (m) =>
        `MSGID: ${m.msgId} topic=${m.topic} queueId=${m.queueId} queueOffset=${m.queueOffset} tags=${m.tags ?? ""} keys=${m.keys ?? ""} ` +
        `BODY: ${bodyText(m.body)}`,
    );
    return { json: got.map((m) => viewJson(m)), text: lines.length > 0 ? lines.join("\n") : "no messages in the range" };
  },
};

export const PRODUCE_COMMANDS: readonly Command[] = [sendMessage, consumeMessage];
