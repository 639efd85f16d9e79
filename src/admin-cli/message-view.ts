/**
 * Messages as the query commands show them: stored records (a VIEW_MESSAGE_BY_ID, QUERY_MESSAGE or
 * PULL_MESSAGE body, docs/PROTOCOL.md §4.1) decoded with their hosts and properties, printed as
 * mqadmin's QueryMsgByIdSubCommand prints one, and the "message track": for each group that
 * consumes the topic, whether it has consumed the message (DefaultMQAdminExtImpl.messageTrackDetail).
 */
import { MessageConst } from "../protocol/message-const.ts";
import { SysFlag } from "../protocol/sys-flag.ts";
import { createOffsetMsgId, decodeRecordAt, formatHostAddress, parseProperties } from "../common/message-record.ts";
import { decompressBody } from "../client/compression.ts";
import { ResponseCode } from "../remoting/index.ts";
import { consumeStats, consumerConnection } from "./commands-group.ts";
import { consumersOf } from "./commands-topic.ts";
import { AdminError, type AdminSession } from "./session.ts";
import { humanTime, renderPairs } from "./table.ts";

export interface MessageView {
  /** UNIQ_KEY when the producer set one, else the offset id (MessageClientExt.getMsgId). */
  msgId: string;
  offsetMsgId: string;
  topic: string;
  tags: string | undefined;
  keys: string | undefined;
  queueId: number;
  queueOffset: number;
  commitLogOffset: number;
  reconsumeTimes: number;
  bornTimestamp: number;
  storeTimestamp: number;
  bornHost: string;
  storeHost: string;
  sysFlag: number;
  properties: Record<string, string>;
  body: Uint8Array;
}

/** The records of a body, back to back; stops at the first that does not decode. */
export function decodeViews(body: Uint8Array | undefined): MessageView[] {
  const out: MessageView[] = [];
  let pos = 0;
  while (body !== undefined && pos < body.length) {
    const r = decodeRecordAt(body, pos, { checkCrc: false });
    if (!("totalSize" in r)) break;
    pos += r.totalSize;
    const props = parseProperties(r.properties);
    let payload = r.body;
    if ((r.sysFlag & SysFlag.COMPRESSED) !== 0) {
      const inflated = decompressBody(payload, r.sysFlag);
      if (inflated instanceof Uint8Array) payload = inflated;
    }
    const offsetMsgId = createOffsetMsgId(r.storeHost, r.physicalOffset);
    out.push({
      msgId: props[MessageConst.UNIQ_KEY] ?? offsetMsgId,
      offsetMsgId,
      topic: r.topic,
      tags: props[MessageConst.TAGS],
      keys: props[MessageConst.KEYS],
      queueId: r.queueId,
      queueOffset: r.queueOffset,
      commitLogOffset: r.physicalOffset,
      reconsumeTimes: r.reconsumeTimes,
      bornTimestamp: r.bornTimestamp,
      storeTimestamp: r.storeTimestamp,
      bornHost: formatHostAddress(r.bornHost),
      storeHost: formatHostAddress(r.storeHost),
      sysFlag: r.sysFlag,
      properties: props,
      body: Uint8Array.prototype.slice.call(payload),
    });
  }
  return out;
}

const utf8 = new TextDecoder("utf-8");
const BODY_SHOWN_MAX_CHARS = 4096;

export function bodyText(body: Uint8Array): string {
  return utf8.decode(body);
}

/** For --json: everything, the body as UTF-8 text and as base64 (it may be binary). */
export function viewJson(m: MessageView, track?: TrackEntry[]): Record<string, unknown> {
  const { body, ...rest } = m;
  return { ...rest, body: bodyText(body), bodyBase64: Buffer.from(body).toString("base64"), ...(track ? { track } : {}) };
}

/** The "OffsetID: …" block of queryMsgById (the body inline instead of a file under /tmp). */
export function renderView(m: MessageView, track?: TrackEntry[]): string {
  const text = bodyText(m.body);
  const shown = text.length > BODY_SHOWN_MAX_CHARS ? `${text.slice(0, BODY_SHOWN_MAX_CHARS)}… (${m.body.length} bytes; --json has all)` : text;
  const pairs: [string, string | number][] = [
    ["OffsetID:", m.offsetMsgId],
    ["MsgId:", m.msgId],
    ["Topic:", m.topic],
    ["Tags:", `[${m.tags ?? "null"}]`],
    ["Keys:", `[${m.keys ?? "null"}]`],
    ["Queue ID:", m.queueId],
    ["Queue Offset:", m.queueOffset],
    ["CommitLog Offset:", m.commitLogOffset],
    ["Reconsume Times:", m.reconsumeTimes],
    ["Born Timestamp:", humanTime(m.bornTimestamp)],
    ["Store Timestamp:", humanTime(m.storeTimestamp)],
    ["Born Host:", m.bornHost],
    ["Store Host:", m.storeHost],
    ["System Flag:", m.sysFlag],
    [
      "Properties:",
      `{${Object.entries(m.properties)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ")}}`,
    ],
    ["Message Body:", shown],
  ];
  const lines = [renderPairs(pairs, " ")];
  if (track !== undefined) {
    lines.push("");
    if (track.length === 0) lines.push("WARN: No Consumer");
    for (const t of track)
      lines.push(`MessageTrack [consumerGroup=${t.consumerGroup}, trackType=${t.trackType}, exceptionDesc=${t.exceptionDesc ?? "null"}]`);
  }
  return lines.join("\n");
}

export interface TrackEntry {
  consumerGroup: string;
  trackType: "CONSUMED" | "CONSUMED_BUT_FILTERED" | "PULL" | "NOT_CONSUME_YET" | "NOT_ONLINE" | "UNKNOWN";
  exceptionDesc?: string;
}

/** Per consuming group: consumed (its offset on the message's queue is past it), not yet, or offline. */
export async function trackMessage(s: AdminSession, m: MessageView): Promise<TrackEntry[]> {
  const route = await s.route(m.topic);
  if (route === null) return [];
  const out: TrackEntry[] = [];
  for (const group of await consumersOf(s, route, m.topic)) {
    try {
      const cc = await consumerConnection(s, group);
      if (cc.consumeType === "CONSUME_ACTIVELY") {
        out.push({ consumerGroup: group, trackType: "PULL" });
        continue;
      }
      const stats = await consumeStats(s, group);
      const brokerName = await brokerNameOfHost(s, m.storeHost);
      const q = stats.offsets.find(([mq]) => mq.topic === m.topic && mq.queueId === m.queueId && mq.brokerName === brokerName);
      const consumed = q !== undefined && q[1].consumerOffset > m.queueOffset;
      const sub = cc.subscriptions.find((x) => x.topic === m.topic);
      const filtered = consumed && sub !== undefined && sub.tagsSet.length > 0 && !sub.tagsSet.includes("*") && !sub.tagsSet.includes(m.tags ?? "");
      out.push({ consumerGroup: group, trackType: !consumed ? "NOT_CONSUME_YET" : filtered ? "CONSUMED_BUT_FILTERED" : "CONSUMED" });
    } catch (e) {
      const offline = e instanceof AdminError && e.code === ResponseCode.CONSUMER_NOT_ONLINE;
      out.push({ consumerGroup: group, trackType: offline ? "NOT_ONLINE" : "UNKNOWN", exceptionDesc: e instanceof Error ? e.message : String(e) });
    }
  }
  return out;
}

async function brokerNameOfHost(s: AdminSession, storeHost: string): Promise<string | undefined> {
  try {
    return await s.brokerNameOf(storeHost);
  } catch {
    return undefined;
  }
}
