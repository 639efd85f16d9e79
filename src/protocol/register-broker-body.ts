/**
 * The body of REGISTER_BROKER (docs/PROTOCOL.md §3.16), in its two forms.
 *
 * JSON (default):
 *   {"filterServerList":[...],"topicConfigSerializeWrapper":{"dataVersion":{..},"topicConfigTable":{..}}}
 *   Brokers older than V3_0_11 (version < 37) send the bare topicConfigSerializeWrapper.
 *
 * Compressed (extField compressed=true): a zlib stream (deflate with header) holding
 *   +-----------+-------------------+-----------+------------------------------------+-----------+-------------+
 *   | int len   | DataVersion JSON  | int count | count × (int len + "name r w perm filterType") | int len | filter JSON |
 *   +-----------+-------------------+-----------+------------------------------------+-----------+-------------+
 *   The short topic text loses `order` and `topicSysFlag`. Trailing bytes (5.x mapping info) are ignored.
 *
 * Input is validated into a typed body or a reason; nothing throws on bad bytes.
 */
import { parseJsonBytes } from "../common/json.ts";
import type { DataVersion } from "./data-version.ts";
import type { TopicConfig } from "./topics.ts";

/**
 * node:zlib on first use: only compressed register bodies need it (brokers send them with
 * compressedRegister, off by default), and loading it at start kept ~6 MiB of the executable and
 * 3 MiB of heap resident in every process (a compiled probe: 17 vs 11 MiB of file pages).
 */
function zlib(): typeof import("node:zlib") {
  return process.getBuiltinModule("node:zlib");
}

export interface RegisterBrokerBody {
  dataVersion: DataVersion;
  topicConfigTable: Record<string, TopicConfig>;
  filterServerList: string[];
}

const V3_0_11 = 37;
const utf8 = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

export function decodeRegisterBrokerBody(
  body: Uint8Array | undefined,
  compressed: boolean,
  version: number,
): RegisterBrokerBody | { invalid: string } {
  if (!body || body.length === 0) {
    return { dataVersion: { counter: 0, timestamp: 0 }, topicConfigTable: {}, filterServerList: [] };
  }
  try {
    if (compressed) return decodeCompressed(body);
    const raw = parseJsonBytes(body);
    if (!isObject(raw)) return { invalid: "register body is not a JSON object" };
    const wrapper = version >= V3_0_11 || "topicConfigSerializeWrapper" in raw ? raw.topicConfigSerializeWrapper : raw;
    const filters = version >= V3_0_11 ? raw.filterServerList : [];
    return validate(wrapper, filters);
  } catch (e) {
    return { invalid: `register body does not decode: ${e instanceof Error ? e.message : String(e)}` };
  }
}

function decodeCompressed(body: Uint8Array): RegisterBrokerBody | { invalid: string } {
  const data = zlib().inflateSync(body);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let pos = 0;
  const readChunk = (): Uint8Array => {
    if (pos + 4 > data.length) throw new Error("truncated length");
    const len = view.getInt32(pos);
    pos += 4;
    if (len < 0 || pos + len > data.length) throw new Error("length out of range");
    const chunk = data.subarray(pos, pos + len);
    pos += len;
    return chunk;
  };
  const dataVersion = parseJsonBytes(readChunk());
  if (pos + 4 > data.length) throw new Error("truncated topic count");
  const count = view.getInt32(pos);
  pos += 4;
  if (count < 0 || count > 1_000_000) throw new Error("topic count out of range");
  const table: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) {
    const parts = utf8.decode(readChunk()).split(" ");
    if (parts.length < 5) throw new Error("bad topic config text");
    const [topicName, r, w, perm, filterType] = parts as [string, string, string, string, string];
    table[topicName] = {
      topicName,
      readQueueNums: Number(r),
      writeQueueNums: Number(w),
      perm: Number(perm),
      topicFilterType: filterType,
    };
  }
  const filters = pos < data.length ? parseJsonBytes(readChunk()) : [];
  return validate({ dataVersion, topicConfigTable: table }, filters);
}

function validate(wrapper: unknown, filters: unknown): RegisterBrokerBody | { invalid: string } {
  if (!isObject(wrapper)) return { invalid: "topicConfigSerializeWrapper missing" };
  const dv = wrapper.dataVersion;
  const dataVersion: DataVersion = isObject(dv)
    ? { counter: Number(dv.counter ?? 0), timestamp: Number(dv.timestamp ?? 0) }
    : { counter: 0, timestamp: 0 };
  const topicConfigTable: Record<string, TopicConfig> = {};
  const table = wrapper.topicConfigTable ?? {};
  if (!isObject(table)) return { invalid: "topicConfigTable is not an object" };
  for (const [name, tc] of Object.entries(table)) {
    if (!isObject(tc)) return { invalid: `topic config of ${name} is not an object` };
    const r = Number(tc.readQueueNums ?? 16);
    const w = Number(tc.writeQueueNums ?? 16);
    const perm = Number(tc.perm ?? 6);
    if (![r, w, perm].every((n) => Number.isInteger(n) && n >= 0)) {
      return { invalid: `topic config of ${name} has bad queue numbers or perm` };
    }
    const cfg: TopicConfig = {
      topicName: typeof tc.topicName === "string" ? tc.topicName : name,
      readQueueNums: r,
      writeQueueNums: w,
      perm,
      topicFilterType: tc.topicFilterType === "MULTI_TAG" ? "MULTI_TAG" : "SINGLE_TAG",
      topicSysFlag: Number(tc.topicSysFlag ?? 0) | 0,
      order: tc.order === true,
    };
    topicConfigTable[name] = cfg;
  }
  const filterServerList = Array.isArray(filters) ? filters.filter((f): f is string => typeof f === "string") : [];
  return { dataVersion, topicConfigTable, filterServerList };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The JSON form, as our broker sends it (and as tests build it). */
export function encodeRegisterBrokerBody(b: RegisterBrokerBody): Uint8Array {
  return encoder.encode(
    JSON.stringify({
      filterServerList: b.filterServerList,
      topicConfigSerializeWrapper: { dataVersion: b.dataVersion, topicConfigTable: b.topicConfigTable },
    }),
  );
}

/** The compressed form (broker option compressedRegister), for tests and Java parity. */
export function encodeRegisterBrokerBodyCompressed(b: RegisterBrokerBody): Uint8Array {
  const parts: Uint8Array[] = [];
  const int = (n: number) => {
    const x = new Uint8Array(4);
    new DataView(x.buffer).setInt32(0, n);
    parts.push(x);
  };
  const chunk = (bytes: Uint8Array) => {
    int(bytes.length);
    parts.push(bytes);
  };
  chunk(encoder.encode(JSON.stringify(b.dataVersion)));
  const topics = Object.values(b.topicConfigTable);
  int(topics.length);
  for (const t of topics) {
    chunk(encoder.encode(`${t.topicName} ${t.readQueueNums} ${t.writeQueueNums} ${t.perm} ${t.topicFilterType ?? "SINGLE_TAG"}`));
  }
  chunk(encoder.encode(JSON.stringify(b.filterServerList)));
  return new Uint8Array(zlib().deflateSync(Buffer.concat(parts)));
}
