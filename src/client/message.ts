/**
 * Messages as the client library's users see them, and their conversion to and from the wire:
 * the property string of a send, the client unique id (UNIQ_KEY), and decoding of the stored
 * records a pull returns (compressed bodies through compression.ts: zlib, LZ4, ZSTD).
 */
import { networkInterfaces } from "node:os";
import { MessageConst } from "../protocol/message-const.ts";
import { SysFlag } from "../protocol/sys-flag.ts";
import { createOffsetMsgId, decodeRecordAt, NAME_VALUE_SEPARATOR, parseProperties, PROPERTY_SEPARATOR } from "../common/message-record.ts";
import { decompressBody } from "./compression.ts";

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
  /**
   * Set when the body is marked compressed but does not decompress (an unknown codec in sysFlag
   * bits 8-10, or bad bytes): `body` is then the bytes as stored. The message is still delivered,
   * so one bad producer cannot stall a queue; the listener decides what to do with it.
   */
  bodyError?: string;
}

const encoder = new TextEncoder();

export function bodyBytes(body: string | Uint8Array): Uint8Array {
  return typeof body === "string" ? encoder.encode(body) : body;
}

/**
 * The property string a producer sends for `msg` (Java form, no trailing separator). Built as
 * one string on this per-message path (no intermediate map): the user's properties, except those
 * the message's own fields set, then ours.
 */
export function buildProperties(msg: Message, uniqKey: string, waitStoreMsgOK = true): string {
  const keys = Array.isArray(msg.keys) ? msg.keys.join(MessageConst.PROPERTY_KEY_SEPARATOR) : msg.keys;
  const delay = msg.delayLevel !== undefined && msg.delayLevel > 0 ? String(Math.floor(msg.delayLevel)) : undefined;
  const deliverAt = msg.deliverAt !== undefined ? String(Math.floor(msg.deliverAt)) : undefined;
  let out = "";
  const add = (k: string, v: string): void => {
    out += out.length > 0 ? PROPERTY_SEPARATOR + k + NAME_VALUE_SEPARATOR + v : k + NAME_VALUE_SEPARATOR + v;
  };
  const user = msg.properties;
  if (user) {
    for (const k in user) {
      const v = user[k];
      if (v === undefined || v === null) continue;
      if (k === MessageConst.UNIQ_KEY || k === MessageConst.WAIT) continue;
      if ((k === MessageConst.TAGS && msg.tags) || (k === MessageConst.KEYS && keys)) continue;
      if ((k === MessageConst.DELAY && delay) || (k === MessageConst.START_DELIVER_TIME && deliverAt !== undefined)) continue;
      add(k, v);
    }
  }
  if (msg.tags) add(MessageConst.TAGS, msg.tags);
  if (keys) add(MessageConst.KEYS, keys);
  add(MessageConst.UNIQ_KEY, uniqKey);
  add(MessageConst.WAIT, waitStoreMsgOK ? "true" : "false");
  if (delay) add(MessageConst.DELAY, delay);
  if (deliverAt !== undefined) add(MessageConst.START_DELIVER_TIME, deliverAt);
  return out;
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
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).toUpperCase().padStart(2, "0"));
let monthStart = 0;
let nextMonthStart = 0;

/** RocketMQ's client message id: ip(4) pid(2) random(4) ms-since-month-start(4) counter(2), hex. */
export function createUniqId(now = Date.now()): string {
  if (now >= nextMonthStart || now < monthStart) {
    const d = new Date(now);
    monthStart = new Date(d.getFullYear(), d.getMonth(), 1).getTime();
    nextMonthStart = new Date(d.getFullYear(), d.getMonth() + 1, 1).getTime();
  }
  const t = (now - monthStart) >>> 0;
  const c = uniqCounter++ & 0xffff;
  return FIX_PREFIX + HEX[t >>> 24]! + HEX[(t >>> 16) & 0xff]! + HEX[(t >>> 8) & 0xff]! + HEX[t & 0xff]! + HEX[c >>> 8]! + HEX[c & 0xff]!;
}

/** Decodes a pull body (stored records back to back) into messages; stops at the first bad record. */
export function decodeMessages(body: Uint8Array, brokerName: string): MessageExt[] {
  const out: MessageExt[] = [];
  let pos = 0;
  while (pos < body.length) {
    // Host views: the pull body is this response's private copy, and the hosts are not kept.
    const r = decodeRecordAt(body, pos, { checkCrc: false, hostViews: true });
    if (!("totalSize" in r)) break;
    pos += r.totalSize;
    const props = parseProperties(r.properties);
    let payload = r.body;
    let bodyError: string | undefined;
    if ((r.sysFlag & SysFlag.COMPRESSED) !== 0) {
      const inflated = decompressBody(payload, r.sysFlag);
      if (inflated instanceof Uint8Array) payload = inflated;
      else bodyError = inflated.invalid;
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
      // Always present (undefined when not transactional / not failed): one object shape on the pull path.
      transactionId: props[MessageConst.TRAN_MSG] === "true" ? props[MessageConst.UNIQ_KEY] : undefined,
      bodyError,
    });
  }
  return out;
}
