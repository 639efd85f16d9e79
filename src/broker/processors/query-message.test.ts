/**
 * The query processor's rules (docs/PROTOCOL.md §3.12), checked in process through the broker
 * fixture (../test-support.ts): VIEW_MESSAGE_BY_ID (33) by CommitLog offset and QUERY_MESSAGE (12)
 * by key or unique key through the IndexFiles — the codes and remarks, the records that come back
 * (count caps, topic and time filters, CommitLog order, the body size cap) and the index position
 * carried in the extFields. Store times come from the broker's virtual clock.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { decodeOffsetMsgId } from "../../common/message-record.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import { createTopicRequest, InProcessBroker, pulledRecords, sendV2Request, type SendOptions } from "../test-support.ts";
import { QueryMessageProcessor } from "./query-message.ts";

const dec = new TextDecoder();
const text = (r: { body: Uint8Array }) => dec.decode(r.body);

const NOT_FOUND_REMARK = "can not find message, maybe time range not correct";
const viewRemark = (offset: number) => `can not find message by the offset, ${offset}`;
/** An end of time range no store time reaches (what a client sends for "until now"). */
const END_OF_TIME = Number.MAX_SAFE_INTEGER;

function expectCode(res: RemotingCommand, code: number, remark?: string): void {
  expect({ code: res.code, remark: res.remark }).toMatchObject({ code });
  if (remark !== undefined) expect(res.remark ?? "").toBe(remark);
}

interface QueryOptions {
  maxNum?: number;
  begin?: number;
  end?: number;
  /** Sets `_UNIQUE_KEY_QUERY` to this text. */
  unique?: string;
}

function queryRequest(topic: string, key: string, o: QueryOptions = {}): RemotingCommand {
  const ext: Record<string, string> = {
    topic,
    key,
    maxNum: String(o.maxNum ?? 64),
    beginTimestamp: String(o.begin ?? 0),
    endTimestamp: String(o.end ?? END_OF_TIME),
  };
  if (o.unique !== undefined) ext._UNIQUE_KEY_QUERY = o.unique;
  return createRequest(RequestCode.QUERY_MESSAGE, ext);
}

function viewRequest(offset: number): RemotingCommand {
  return createRequest(RequestCode.VIEW_MESSAGE_BY_ID, { offset: String(offset) });
}

/** Sends one message and returns its CommitLog offset, decoded from the offset msgId of the answer. */
async function send(b: InProcessBroker, topic: string, body: string | Uint8Array, o: SendOptions = {}): Promise<number> {
  const res = await b.ok(sendV2Request(topic, body, o));
  const id = decodeOffsetMsgId(res.extFields!.msgId!);
  if ("invalid" in id) throw new Error(`send answered a bad msgId: ${id.invalid}`);
  return id.offset;
}

/** Both QUERY_MESSAGE answers carry the index position as decimal extFields. */
function indexPosition(res: RemotingCommand): { timestamp: number; phyOffset: number } {
  const e = res.extFields ?? {};
  expect(e.indexLastUpdateTimestamp).toMatch(/^\d+$/);
  expect(e.indexLastUpdatePhyoffset).toMatch(/^\d+$/);
  return { timestamp: Number(e.indexLastUpdateTimestamp), phyOffset: Number(e.indexLastUpdatePhyoffset) };
}

describe("query processor", () => {
  test("the processor serves QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33)", () => {
    expect([...QueryMessageProcessor.CODES].sort((x, y) => x - y)).toEqual([RequestCode.QUERY_MESSAGE, RequestCode.VIEW_MESSAGE_BY_ID]);
    expect([RequestCode.QUERY_MESSAGE, RequestCode.VIEW_MESSAGE_BY_ID]).toEqual([12, 33]);
  });

  test("VIEW_MESSAGE_BY_ID at the offset a record starts answers SUCCESS with that one record", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("V", 2));
    const first = await send(b, "V", "first", { tags: "TagA" });
    const second = await send(b, "V", "second", { queueId: 1, keys: "k" });
    for (const [offset, body, queueId] of [
      [first, "first", 0],
      [second, "second", 1],
    ] as const) {
      const res = await b.call(viewRequest(offset));
      expectCode(res, ResponseCode.SUCCESS);
      const recs = pulledRecords(res);
      expect(recs).toHaveLength(1);
      expect(recs[0]).toMatchObject({ topic: "V", queueId, queueOffset: 0, physicalOffset: offset });
      expect(text(recs[0]!)).toBe(body);
      expect(res.body!.length).toBe(recs[0]!.totalSize);
    }
  });

  test("VIEW_MESSAGE_BY_ID anywhere else is SYSTEM_ERROR naming the offset: inside a record, at or past the end, negative", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("V", 1));
    const first = await send(b, "V", "first record");
    const second = await send(b, "V", "second record");
    const size = second - first;
    // Every offset strictly inside the first record.
    for (let offset = first + 1; offset < second; offset++) {
      expectCode(await b.call(viewRequest(offset)), ResponseCode.SYSTEM_ERROR, viewRemark(offset));
    }
    const end = second + size; // the two records have the same layout and length
    expectCode(await b.call(viewRequest(end - 1)), ResponseCode.SYSTEM_ERROR, viewRemark(end - 1));
    expectCode(await b.call(viewRequest(end)), ResponseCode.SYSTEM_ERROR, viewRemark(end));
    expectCode(await b.call(viewRequest(end + 1_000_000)), ResponseCode.SYSTEM_ERROR, viewRemark(end + 1_000_000));
    expectCode(await b.call(viewRequest(-1)), ResponseCode.SYSTEM_ERROR, viewRemark(-1));
    // The records themselves are still there.
    expectCode(await b.call(viewRequest(second)), ResponseCode.SUCCESS);
  });

  test("VIEW_MESSAGE_BY_ID on an empty store is SYSTEM_ERROR", async () => {
    await using b = InProcessBroker.start();
    expectCode(await b.call(viewRequest(0)), ResponseCode.SYSTEM_ERROR, viewRemark(0));
  });

  test("QUERY_MESSAGE finds the topic's records with the key among their KEYS, in CommitLog order", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("Q", 2));
    await b.ok(createTopicRequest("Other", 1));
    const a = await send(b, "Q", "a", { keys: "k1 k2" });
    await send(b, "Other", "other", { keys: "k2" });
    const c = await send(b, "Q", "c", { queueId: 1, keys: "k2" });
    await send(b, "Q", "d", { keys: "k3" });
    await send(b, "Q", "e");
    const both = await b.call(queryRequest("Q", "k2"));
    expectCode(both, ResponseCode.SUCCESS);
    const recs = pulledRecords(both);
    expect(recs.map((r) => [r.physicalOffset, r.topic, text(r)])).toEqual([
      [a, "Q", "a"],
      [c, "Q", "c"],
    ]);
    expect(pulledRecords(await b.ok(queryRequest("Q", "k1"))).map(text)).toEqual(["a"]);
    expect(pulledRecords(await b.ok(queryRequest("Q", "k3"))).map(text)).toEqual(["d"]);
    expect(pulledRecords(await b.ok(queryRequest("Other", "k2"))).map(text)).toEqual(["other"]);
  });

  test("QUERY_MESSAGE that finds nothing is QUERY_NOT_FOUND with the remark and the index position", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("Q", 1));
    const empty = await b.call(queryRequest("Q", "k"));
    expectCode(empty, ResponseCode.QUERY_NOT_FOUND, NOT_FOUND_REMARK);
    indexPosition(empty);
    expect(empty.body ?? new Uint8Array(0)).toHaveLength(0);
    await send(b, "Q", "x", { keys: "k" });
    const last = await send(b, "Q", "y", { keys: "other" });
    // An unknown key, a key of another topic, a key that is only part of one of the KEYS.
    for (const [topic, key] of [
      ["Q", "nope"],
      ["Unknown", "k"],
      ["Q", "oth"],
    ] as const) {
      const res = await b.call(queryRequest(topic, key));
      expectCode(res, ResponseCode.QUERY_NOT_FOUND, NOT_FOUND_REMARK);
      expect(indexPosition(res).phyOffset).toBe(last);
    }
  });

  test("both QUERY_MESSAGE answers carry the newest indexed record's store time and CommitLog offset", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("Q", 1));
    await b.ok(createTopicRequest("Other", 1));
    await send(b, "Q", "x", { keys: "k" });
    await b.advance(5000);
    const last = await send(b, "Other", "y", { keys: "z" });
    // A record without keys is not indexed, so it does not move the position.
    await b.advance(5000);
    await send(b, "Q", "no keys");
    const [lastRec] = pulledRecords(await b.ok(viewRequest(last)));
    const found = await b.call(queryRequest("Q", "k"));
    expectCode(found, ResponseCode.SUCCESS);
    expect(indexPosition(found)).toEqual({ timestamp: lastRec!.storeTimestamp, phyOffset: last });
    const missing = await b.call(queryRequest("Q", "nope"));
    expectCode(missing, ResponseCode.QUERY_NOT_FOUND, NOT_FOUND_REMARK);
    expect(indexPosition(missing)).toEqual({ timestamp: lastRec!.storeTimestamp, phyOffset: last });
  });

  test("QUERY_MESSAGE returns only records stored within [beginTimestamp, endTimestamp], both ends included", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    const offsets: number[] = [];
    for (const body of ["t0", "t1", "t2"]) {
      offsets.push(await send(b, "T", body, { keys: "k" }));
      await b.advance(10_000);
    }
    const times: number[] = [];
    for (const o of offsets) times.push(pulledRecords(await b.ok(viewRequest(o)))[0]!.storeTimestamp);
    expect(times[1]! - times[0]!).toBe(10_000);
    const range = async (begin: number, end: number) => pulledRecords(await b.ok(queryRequest("T", "k", { begin, end }))).map(text);
    expect(await range(times[0]!, times[2]!)).toEqual(["t0", "t1", "t2"]);
    expect(await range(times[1]!, times[1]!)).toEqual(["t1"]);
    expect(await range(times[1]!, END_OF_TIME)).toEqual(["t1", "t2"]);
    expect(await range(0, times[0]! + 5000)).toEqual(["t0"]);
    const between = await b.call(queryRequest("T", "k", { begin: times[0]! + 1000, end: times[1]! - 1000 }));
    expectCode(between, ResponseCode.QUERY_NOT_FOUND, NOT_FOUND_REMARK);
    const after = await b.call(queryRequest("T", "k", { begin: times[2]! + 1000 }));
    expectCode(after, ResponseCode.QUERY_NOT_FOUND, NOT_FOUND_REMARK);
    const before = await b.call(queryRequest("T", "k", { begin: 0, end: times[0]! - 1000 }));
    expectCode(before, ResponseCode.QUERY_NOT_FOUND, NOT_FOUND_REMARK);
  });

  test("QUERY_MESSAGE returns at most maxNum and never more than 64 records: the newest, in CommitLog order", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("M", 1));
    const offsets: number[] = [];
    for (let i = 0; i < 70; i++) offsets.push(await send(b, "M", `m${i}`, { keys: "many" }));
    const capped = pulledRecords(await b.ok(queryRequest("M", "many", { maxNum: 1000 })));
    expect(capped.map((r) => r.physicalOffset)).toEqual(offsets.slice(6));
    expect(capped.map((r) => r.queueOffset)).toEqual(Array.from({ length: 64 }, (_, i) => i + 6));
    const five = pulledRecords(await b.ok(queryRequest("M", "many", { maxNum: 5 })));
    expect(five.map(text)).toEqual(["m65", "m66", "m67", "m68", "m69"]);
    expect(pulledRecords(await b.ok(queryRequest("M", "many", { maxNum: 64 })))).toHaveLength(64);
  });

  test("QUERY_MESSAGE with _UNIQUE_KEY_QUERY=true finds a record by its UNIQ_KEY, at most 32 whatever maxNum says", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("U", 1));
    const one = await send(b, "U", "one", { keys: "k", props: { UNIQ_KEY: "AC11000100002A9F0000000000000001" } });
    const single = await b.ok(queryRequest("U", "AC11000100002A9F0000000000000001", { unique: "true", maxNum: 1 }));
    expect(pulledRecords(single).map((r) => [r.physicalOffset, text(r)])).toEqual([[one, "one"]]);
    // Forty records under one unique key (a client resending the same message id).
    const offsets: number[] = [];
    for (let i = 0; i < 40; i++) offsets.push(await send(b, "U", `dup${i}`, { props: { UNIQ_KEY: "DUP" } }));
    const unique = pulledRecords(await b.ok(queryRequest("U", "DUP", { unique: "true", maxNum: 64 })));
    expect(unique.map((r) => r.physicalOffset)).toEqual(offsets.slice(8));
    // Only "true" turns the cap on: otherwise maxNum (at most 64) decides.
    expect(pulledRecords(await b.ok(queryRequest("U", "DUP", { unique: "false", maxNum: 64 })))).toHaveLength(40);
    expect(pulledRecords(await b.ok(queryRequest("U", "DUP", { maxNum: 64 })))).toHaveLength(40);
    const none = await b.call(queryRequest("U", "NOPE", { unique: "true" }));
    expectCode(none, ResponseCode.QUERY_NOT_FOUND, NOT_FOUND_REMARK);
    indexPosition(none);
  });

  test("QUERY_MESSAGE answers records from several IndexFiles in CommitLog order", async () => {
    // The fixture's IndexFiles hold 255 entries: the filler rolls over to a second file.
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("F", 1));
    const old = await send(b, "F", "old", { keys: "k" });
    for (let i = 0; i < 300; i++) await send(b, "F", "", { keys: `filler${i}` });
    const fresh = await send(b, "F", "new", { keys: "k" });
    expect(readdirSync(join(b.dir, "index")).filter((n) => /^\d{17}$/.test(n)).length).toBeGreaterThanOrEqual(2);
    const res = await b.ok(queryRequest("F", "k"));
    expect(pulledRecords(res).map((r) => [r.physicalOffset, text(r)])).toEqual([
      [old, "old"],
      [fresh, "new"],
    ]);
    expect(indexPosition(res).phyOffset).toBe(fresh);
  });

  test("QUERY_MESSAGE stops adding records once the body would pass 15 MiB, keeping the newest", async () => {
    const mib = 1024 * 1024;
    await using b = InProcessBroker.start({
      broker: { maxMessageSizeBytes: 4 * mib },
      store: { commitLogSegmentBytes: 32 * mib },
      // Inbound frames of one message; outbound room for the answer of three.
      remoting: { frameSizeMaxBytes: 8 * mib, connectionBufferMaxBytes: 32 * mib },
    });
    await b.ok(createTopicRequest("Big", 1));
    const offsets: number[] = [];
    for (let i = 0; i < 5; i++) offsets.push(await send(b, "Big", new Uint8Array(4 * mib).fill(i), { keys: "big" }));
    const res = await b.ok(queryRequest("Big", "big"));
    const recs = pulledRecords(res);
    // Each record is a little over 4 MiB: three fit under 15 MiB, a fourth would not.
    expect(recs.map((r) => r.physicalOffset)).toEqual(offsets.slice(2));
    expect(recs.map((r) => r.body[0])).toEqual([2, 3, 4]);
    expect(res.body!.length).toBeLessThanOrEqual(15 * mib);
  });

  test("QUERY_MESSAGE and VIEW_MESSAGE_BY_ID without a required field are SYSTEM_ERROR naming it", async () => {
    await using b = InProcessBroker.start();
    for (const field of ["topic", "key", "maxNum", "beginTimestamp", "endTimestamp"]) {
      const req = queryRequest("Q", "k");
      delete req.extFields![field];
      const res = await b.call(req);
      expect(res.code).toBe(ResponseCode.SYSTEM_ERROR);
      expect(res.remark ?? "").toContain(field);
    }
    const view = createRequest(RequestCode.VIEW_MESSAGE_BY_ID, {});
    const res = await b.call(view);
    expect(res.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(res.remark ?? "").toContain("offset");
  });
});
