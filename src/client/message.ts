/**
 * Messages as the client library's users see them, and their conversion to and from the wire:
 * the property string of a send, the client unique id (UNIQ_KEY), zlib compression of large
 * bodies, and decoding of the stored records a pull returns.
 */
import { networkInterfaces } from "node:os";
import { inflateSync } from "node:zlib";
import { createOffsetMsgId, decodeRecordAt, encodeProperties, MessageConst, parseProperties, SysFlag } from "../common/message-record.ts";

export interface Message {
  topic: string;
  body: string | Uint8Array;
  tags?: string;
  keys?: string | string[];
  properties?: Record<string, string>;
  /** 1..18: RocketMQ's delay levels (1s 5s 10s 30s 1m … 2h). */
  delayLevel?: number;
  /** Absolute delivery time in ms since the epoch. */
  deliverAt?: number;
  /** User flag stored with the message. */
  flag?: number;
}

export interface MessageExt {
  topic: string;
  body: Uint8Array;
  tags: string | undefined;
  keys: string[];
  properties: Record<string, string>;
  /** The client unique id when the producer set one, else the offset message id. */
  msgId: string;
  offsetMsgId: string;
  brokerName: string;
  queueId: number;
  queueOffset: number;
  commitLogOffset: number;
  bornTimestamp: number;
  storeTimestamp: number;
  reconsumeTimes: number;
  flag: number;
  /** Transactional messages (TRAN_MSG=true): the producer's transaction id (its UNIQ_KEY). */
  transactionId?: string;
}

const encoder = new TextEncoder();

export function bodyBytes(body: string | Uint8Array): Uint8Array {
  return typeof body === "string" ? encoder.encode(body) : body;
}

/** The property string a producer sends for `msg` (Java form, no trailing separator). */
export function buildProperties(msg: Message, uniqKey: string, waitStoreMsgOK = true): string {
  const props: Record<string, string> = { ...(msg.properties ?? {}) };
  if (msg.tags) props[MessageConst.TAGS] = msg.tags;
  const keys = Array.isArray(msg.keys) ? msg.keys.join(MessageConst.PROPERTY_KEY_SEPARATOR) : msg.keys;
  if (keys) props[MessageConst.KEYS] = keys;
  props[MessageConst.UNIQ_KEY] = uniqKey;
  props[MessageConst.WAIT] = String(waitStoreMsgOK);
  if (msg.delayLevel !== undefined && msg.delayLevel > 0) props[MessageConst.DELAY] = String(Math.floor(msg.delayLevel));
  if (msg.deliverAt !== undefined) props[MessageConst.START_DELIVER_TIME] = String(Math.floor(msg.deliverAt));
  return encodeProperties(props);
}

function ipBytes(): number[] {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address.split(".").map(Number);
  }
  return [127, 0, 0, 1];
}

const FIX_PREFIX = (() => {
  const b = new Uint8Array(10);
  b.set(ipBytes(), 0);
  new DataView(b.buffer).setUint16(4, process.pid & 0xffff);
  new DataView(b.buffer).setInt32(6, (Math.random() * 0x7fffffff) | 0);
  return Buffer.from(b).toString("hex").toUpperCase();
})();
let uniqCounter = 0;

/** RocketMQ's client message id: ip(4) pid(2) random(4) ms-since-month-start(4) counter(2), hex. */
export function createUniqId(now = Date.now()): string {
  const d = new Date(now);
  const monthStart = new Date(d.getFullYear(), d.getMonth(), 1).getTime();
  const tail = new Uint8Array(6);
  const v = new DataView(tail.buffer);
  v.setUint32(0, (now - monthStart) >>> 0);
  v.setUint16(4, uniqCounter++ & 0xffff);
  return FIX_PREFIX + Buffer.from(tail).toString("hex").toUpperCase();
}

/** Decodes a pull body (stored records back to back) into messages; stops at the first bad record. */
export function decodeMessages(body: Uint8Array, brokerName: string): MessageExt[] {
  const out: MessageExt[] = [];
  let pos = 0;
  while (pos < body.length) {
    const r = decodeRecordAt(body, pos, { checkCrc: false });
    if (!("totalSize" in r)) break;
    pos += r.totalSize;
    const props = parseProperties(r.properties);
    let payload = r.body;
    if ((r.sysFlag & SysFlag.COMPRESSED) !== 0) {
      try {
        payload = new Uint8Array(inflateSync(payload));
      } catch {
        // Not zlib after all (or another codec): hand over the bytes as stored.
      }
    }
    // Otherwise the body stays a view: the response frame is already a private copy (the frame
    // decoder cuts each frame out of the socket's buffer), so copying again would only cost time.
    const offsetMsgId = createOffsetMsgId(r.storeHost, r.physicalOffset);
    const keys = props[MessageConst.KEYS];
    out.push({
      topic: r.topic,
      body: payload,
      tags: props[MessageConst.TAGS],
      keys: keys ? keys.split(MessageConst.PROPERTY_KEY_SEPARATOR).filter((k) => k.length > 0) : [],
      properties: props,
      msgId: props[MessageConst.UNIQ_KEY] ?? offsetMsgId,
      offsetMsgId,
      brokerName,
      queueId: r.queueId,
      queueOffset: r.queueOffset,
      commitLogOffset: r.physicalOffset,
      bornTimestamp: r.bornTimestamp,
      storeTimestamp: r.storeTimestamp,
      reconsumeTimes: r.reconsumeTimes,
      flag: r.flag,
      // Always present (undefined when not transactional): one object shape on the pull path.
      transactionId: props[MessageConst.TRAN_MSG] === "true" ? props[MessageConst.UNIQ_KEY] : undefined,
    });
  }
  return out;
}
