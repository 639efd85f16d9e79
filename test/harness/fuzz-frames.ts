/**
 * Structure-aware generators of remoting input (docs/PROTOCOL.md §1.1, §1.7) for the port
 * fuzzer (./fuzz-remoting.ts): frames with a real or random request code, a JSON or ROCKETMQ
 * header whose extFields are written by hand (so a key may repeat, a value may be huge, empty or
 * not UTF-8), the headers of the requests that carry most logic (SEND_MESSAGE_V2 with mutated
 * property strings, SEND_BATCH_MESSAGE with mutated batch bodies, PULL_MESSAGE, QUERY_MESSAGE and
 * admin requests with out-of-range numbers), and raw garbage, truncated frames and oversized
 * length prefixes. Pure: bytes from a seeded Rng, nothing sent.
 *
 * Every name a frame carries (topic, group, key) is either one of the campaign's own topics or a
 * fresh token that occurs in this one frame only, so a test can later tell which request created
 * a topic or group: a token seen only in refused requests must exist nowhere.
 */
import { encodeMessageBatch } from "../../src/common/message-batch.ts";
import { RequestCode } from "../../src/remoting/request-code.ts";
import { concat, frameBytes, rocketmqHeaderBytes, u32, utf8 } from "../../src/remoting/test-support.ts";
import type { Rng } from "./fuzz.ts";

export interface FrameFuzzNames {
  /** Topics created for the campaign: fuzzed requests may name them (and change them). */
  topics: readonly string[];
  /** A name used nowhere else (the token is recorded with the frame). */
  fresh(): string;
}

export interface GeneratedFrame {
  bytes: Uint8Array;
  /** Fresh names the frame carries. */
  tokens: string[];
  /** What the generator aimed at, for the campaign's counts. */
  kind: string;
}

type ExtEntry = [Uint8Array, Uint8Array];

const REQUEST_CODES: readonly number[] = Object.values(RequestCode);

/** Numbers a Java `int`/`long` parser or our toInt must refuse or clamp. */
const ODD_NUMBERS = ["-1", "0", "2147483647", "2147483648", "-2147483649", "9007199254740993", "1e309", "NaN", "0x10", "1.5", " 1", "", "99999999999999999999", "-0"];

/** Property strings as RocketMQ writes them (name\u0001value\u0002...), then bent. */
const PROPERTY_KEYS = ["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "__STARTDELIVERTIME", "TRAN_MSG", "PGROUP", "WAIT", "MAX_OFFSET", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID", "CLUSTER", "MSG_REGION", "TIMER_DELAY_SEC", "INNER_NUM"];

function oddString(rng: Rng): string {
  const pieces = ["a", "Z", "0", "%RETRY%", "%DLQ%", "\u0001", "\u0002", "é", "😀", "\\", '"', " ", "\u0000", "|", ";", "*", "||"];
  let s = "";
  for (let n = rng.int(0, 12); n > 0; n--) s += rng.pick(pieces);
  return s;
}

function value(rng: Rng, names: FrameFuzzNames, tokens: string[]): string {
  switch (rng.int(0, 5)) {
    case 0:
      return rng.pick(ODD_NUMBERS);
    case 1:
      return names.topics.length > 0 ? rng.pick(names.topics) : "fz";
    case 2: {
      const t = names.fresh();
      tokens.push(t);
      return t;
    }
    case 3:
      return String(rng.int(-5, 40));
    case 4:
      return oddString(rng);
    default:
      return rng.pick(["true", "false", "*", "TBW102", "DefaultCluster", "JAVA"]);
  }
}

function fresh(names: FrameFuzzNames, tokens: string[]): string {
  const t = names.fresh();
  tokens.push(t);
  return t;
}

export function fuzzProperties(rng: Rng): string {
  const parts: string[] = [];
  for (let n = rng.int(0, 6); n > 0; n--) {
    const k = rng.bool(0.8) ? rng.pick(PROPERTY_KEYS) : oddString(rng);
    const v = rng.pick([...ODD_NUMBERS, oddString(rng), "tag", "x".repeat(rng.int(0, 3000))]);
    parts.push(rng.bool(0.9) ? `${k}\u0001${v}` : k);
  }
  let s = parts.join("\u0002");
  if (rng.bool(0.3)) s += "\u0002";
  if (rng.bool(0.05)) s = "\u0001".repeat(rng.int(1, 40000));
  return s;
}

/** The extFields of one request kind, as long-name → value (values may be refused by design). */
function templateFields(rng: Rng, code: number, names: FrameFuzzNames, tokens: string[]): Record<string, string> {
  const topic = rng.bool(0.6) && names.topics.length > 0 ? rng.pick(names.topics) : fresh(names, tokens);
  const v = () => value(rng, names, tokens);
  const num = (lo: number, hi: number) => (rng.bool(0.8) ? String(rng.int(lo, hi)) : rng.pick(ODD_NUMBERS));
  switch (code) {
    case RequestCode.SEND_MESSAGE_V2:
    case RequestCode.SEND_BATCH_MESSAGE:
      return { a: fresh(names, tokens), b: topic, c: "TBW102", d: num(1, 8), e: num(0, 4), f: num(0, 16), g: String(Date.now()), h: num(0, 3), i: fuzzProperties(rng), j: num(0, 20), k: v(), l: num(-1, 20), m: rng.pick(["true", "false", v()]) };
    case RequestCode.PULL_MESSAGE:
    case RequestCode.LITE_PULL_MESSAGE:
      // suspendTimeoutMillis is kept short so parked pulls end within a campaign.
      return { consumerGroup: fresh(names, tokens), topic, queueId: num(-2, 8), queueOffset: num(-5, 100), maxMsgNums: num(-1, 40), sysFlag: num(0, 15), commitOffset: num(-1, 50), suspendTimeoutMillis: num(0, 500), subscription: rng.pick(["*", "a||b", oddString(rng), "a > 1 AND", "TAGS IN ('x'"]), subVersion: num(0, 9), expressionType: rng.pick(["TAG", "SQL92", v()]) };
    case RequestCode.QUERY_MESSAGE:
      return { topic, key: v(), maxNum: num(-1, 64), beginTimestamp: num(-1, 2 ** 31), endTimestamp: rng.pick([String(Date.now()), ...ODD_NUMBERS]) };
    case RequestCode.UPDATE_AND_CREATE_TOPIC:
      return { topic: fresh(names, tokens), defaultTopic: "TBW102", readQueueNums: num(-1, 2000), writeQueueNums: num(-1, 2000), perm: num(-1, 9), topicFilterType: rng.pick(["SINGLE_TAG", "MULTI_TAG", v()]), topicSysFlag: num(0, 7), order: rng.pick(["true", "false", v()]) };
    default: {
      const keys = ["topic", "consumerGroup", "queueId", "offset", "key", "group", "brokerName", "clusterName", "timestamp", "msgId", "commitLogOffset", "producerGroup", "tranStateTableOffset", "isForce", "namespace", "value"];
      const out: Record<string, string> = {};
      for (let n = rng.int(0, 6); n > 0; n--) out[rng.pick(keys)] = rng.bool(0.5) ? v() : fresh(names, tokens);
      return out;
    }
  }
}

function entriesOf(fields: Record<string, string>): ExtEntry[] {
  return Object.entries(fields).map(([k, val]) => [utf8(k), utf8(val)]);
}

const NOT_UTF8 = [Uint8Array.of(0xff), Uint8Array.of(0xc3), Uint8Array.of(0xed, 0xa0, 0x80), Uint8Array.of(0xf8, 0x88, 0x80, 0x80, 0x80)];

/** One mutation of the entry list: drop, duplicate, huge, empty, not UTF-8, odd number, odd key. */
function mutateEntries(rng: Rng, entries: ExtEntry[]): ExtEntry[] {
  const out = entries.slice();
  const at = rng.int(0, Math.max(0, out.length - 1));
  const cur = out[at];
  switch (rng.int(0, 6)) {
    case 0:
      out.splice(at, 1);
      break;
    case 1:
      if (cur) out.push([cur[0], utf8(rng.pick(ODD_NUMBERS))]);
      break;
    case 2:
      if (cur) out[at] = [cur[0], utf8("x".repeat(rng.pick([4096, 65536, 200_000])))];
      break;
    case 3:
      if (cur) out[at] = [cur[0], new Uint8Array(0)];
      break;
    case 4:
      if (cur) out[at] = [cur[0], concat(cur[1], rng.pick(NOT_UTF8))];
      break;
    case 5:
      if (cur) out[at] = [cur[0], utf8(rng.pick(ODD_NUMBERS))];
      break;
    default:
      out.push([rng.bool(0.5) ? rng.pick(NOT_UTF8) : utf8(oddString(rng)), utf8(oddString(rng))]);
  }
  return out;
}

function jsonString(bytes: Uint8Array): Uint8Array {
  // Valid UTF-8 goes through JSON.stringify; anything else is put between quotes raw, as a
  // broken client would.
  try {
    return utf8(JSON.stringify(new TextDecoder("utf-8", { fatal: true }).decode(bytes)));
  } catch {
    return concat(utf8('"'), bytes, utf8('"'));
  }
}

interface HeaderFields {
  code: number;
  opaque: number;
  flag: number;
  version: number;
  entries: ExtEntry[];
  remark?: string;
}

/** A JSON header written as text, so that keys may repeat and strings may be broken. */
function jsonHeader(h: HeaderFields): Uint8Array {
  const ext: Uint8Array[] = [];
  h.entries.forEach(([k, val], i) => ext.push(i > 0 ? utf8(",") : new Uint8Array(0), jsonString(k), utf8(":"), jsonString(val)));
  const remark = h.remark === undefined ? "" : `,"remark":${JSON.stringify(h.remark)}`;
  const head = `{"code":${h.code},"language":"JAVA","version":${h.version},"opaque":${h.opaque},"flag":${h.flag}${remark}`;
  return h.entries.length === 0 ? utf8(`${head}}`) : concat(utf8(`${head},"extFields":{`), ...ext, utf8("}}"));
}

function rocketmqHeader(h: HeaderFields): Uint8Array {
  return rocketmqHeaderBytes({ code: h.code & 0xffff, languageByte: 0, version: h.version & 0xffff, opaque: h.opaque, flag: h.flag, ...(h.remark ? { remark: utf8(h.remark) } : {}), ext: h.entries });
}

/** A SEND_BATCH_MESSAGE body: a valid batch, sometimes bent (sizes, lengths, truncation). */
export function fuzzBatchBody(rng: Rng): Uint8Array {
  const msgs = Array.from({ length: rng.int(1, 6) }, () => ({ flag: rng.int(0, 3), body: rng.bytes(rng.int(0, 200)), properties: rng.bool(0.7) ? "TAGS\u0001t\u0002KEYS\u0001k" : fuzzProperties(rng).slice(0, 30000) }));
  let body: Uint8Array;
  try {
    body = encodeMessageBatch(msgs);
  } catch {
    body = rng.bytes(64);
  }
  if (rng.bool(0.4)) return body;
  const out = Uint8Array.from(body);
  const view = new DataView(out.buffer);
  switch (rng.int(0, 4)) {
    case 0:
      if (out.length >= 4) view.setInt32(0, rng.pick([-1, 0, 21, 22, 0x7fffffff, out.length + 1]));
      return out;
    case 1:
      if (out.length >= 20) view.setInt32(16, rng.pick([-1, 0x7fffffff, out.length]));
      return out;
    case 2:
      return out.subarray(0, rng.int(0, out.length - 1));
    case 3:
      return concat(out, rng.bytes(rng.int(1, 30)));
    default:
      for (let i = rng.int(1, 6); i > 0; i--) out[rng.int(0, out.length - 1)] = rng.int(0, 255);
      return out;
  }
}

function requestBody(rng: Rng, code: number): Uint8Array | undefined {
  if (code === RequestCode.SEND_BATCH_MESSAGE) return fuzzBatchBody(rng);
  switch (rng.int(0, 4)) {
    case 0:
      return undefined;
    case 1:
      return rng.bytes(rng.int(0, 300));
    case 2:
      return utf8(rng.pick(['{"a":1}', "[]", "null", '{"consumerIdList":[1]}', '{"topicConfigTable":{}}', "{", "brokerPermission=6\n", "x=y"]));
    case 3:
      return new Uint8Array(rng.pick([0, 1, 16_384, 100_000]));
    default:
      return utf8(oddString(rng));
  }
}

/** A well-formed frame with structured, mutated fields; `opaque` identifies it on its connection. */
export function structuredFrame(rng: Rng, names: FrameFuzzNames, opaque: number): GeneratedFrame {
  const tokens: string[] = [];
  const code = rng.bool(0.85) ? rng.pick(REQUEST_CODES) : rng.int(-40000, 70000);
  let entries = entriesOf(templateFields(rng, code, names, tokens));
  for (let n = rng.int(0, 2); n > 0; n--) entries = mutateEntries(rng, entries);
  // flag: mostly a plain request; sometimes oneway (no answer), a "response" or odd bits.
  const flag = rng.pick([0, 0, 0, 0, 2, 1, 3, rng.int(0, 0xffff)]);
  const h: HeaderFields = { code, opaque, flag, version: rng.pick([409, 0, -1, 0x7fff]), entries, ...(rng.bool(0.1) ? { remark: oddString(rng) } : {}) };
  const json = rng.bool(0.5);
  const header = json ? jsonHeader(h) : rocketmqHeader(h);
  const body = requestBody(rng, code);
  return { bytes: frameBytes(json ? 0 : 1, header, body), tokens, kind: `code ${REQUEST_CODES.includes(code) ? code : "random"}` };
}

/** Input the decoder must refuse (or wait on): garbage, bad prefixes, broken headers, cut frames. */
export function malformedFrame(rng: Rng, names: FrameFuzzNames, frameSizeMaxBytes: number): GeneratedFrame {
  const tokens: string[] = [];
  switch (rng.int(0, 7)) {
    case 0:
      return { bytes: rng.bytes(rng.int(1, 512)), tokens, kind: "garbage" };
    case 1:
      return { bytes: concat(u32(rng.pick([0, 1, 3, 0xffffffff, 0x80000000, frameSizeMaxBytes, frameSizeMaxBytes + 1])), rng.bytes(rng.int(0, 40))), tokens, kind: "length prefix" };
    case 2: {
      const h = utf8('{"code":10}');
      return { bytes: concat(u32(4 + h.length), u32(h.length + rng.int(1, 5000)), h), tokens, kind: "header length" };
    }
    case 3:
      return { bytes: frameBytes(rng.int(2, 255), utf8('{"code":34}')), tokens, kind: "serialize type" };
    case 4:
      return { bytes: frameBytes(0, utf8(rng.pick(["[]", "null", "{", '{"code":"1"}', '{"code":1.5}', '{"opaque":1}', '{"code":1,"extFields":[1]}', '{"code":1,"extFields":{"a":{"b":1}}}']))), tokens, kind: "JSON header" };
    case 5:
      return { bytes: frameBytes(1, rng.bytes(rng.int(0, 40))), tokens, kind: "ROCKETMQ header" };
    case 6: {
      // 1025 extFields: over EXT_FIELDS_MAX.
      const ext: ExtEntry[] = Array.from({ length: 1025 }, (_, i) => [utf8(`k${i}`), utf8("v")]);
      return { bytes: frameBytes(1, rocketmqHeaderBytes({ code: 34, languageByte: 0, version: 409, opaque: 1, flag: 0, ext })), tokens, kind: "too many extFields" };
    }
    default: {
      const f = structuredFrame(rng, names, rng.int(1, 1000));
      return { bytes: f.bytes.subarray(0, rng.int(1, f.bytes.length - 1)), tokens: f.tokens, kind: "truncated" };
    }
  }
}
