import { describe, expect, test } from "bun:test";
import { OBJECT_KEY_JSON_DEPTH_MAX, objectKeyedJson, parseObjectKeyedJson } from "./object-key-json.ts";

// What fastjson writes for a TopicStatsTable with one queue (docs/PROTOCOL.md §3.17).
const GOLDEN = '{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":5,"minOffset":0}}}';

describe("object-keyed JSON", () => {
  test("writes fastjson's object-keyed map form", () => {
    const map = objectKeyedJson([
      [
        { brokerName: "b", queueId: 0, topic: "T" },
        { lastUpdateTimestamp: 1700000000000, maxOffset: 5, minOffset: 0 },
      ],
    ]);
    expect(`{"offsetTable":${map}}`).toBe(GOLDEN);
    expect(objectKeyedJson([])).toBe("{}");
  });

  test("reads it back: object keys make a Map, string keys a record", () => {
    const r = parseObjectKeyedJson(GOLDEN);
    if (!("value" in r)) throw new Error(r.invalid);
    const table = (r.value as { offsetTable: Map<unknown, unknown> }).offsetTable;
    expect(table).toBeInstanceOf(Map);
    expect([...table]).toEqual([
      [
        { brokerName: "b", queueId: 0, topic: "T" },
        { lastUpdateTimestamp: 1700000000000, maxOffset: 5, minOffset: 0 },
      ],
    ]);
  });

  test("reads unquoted numeric keys as strings, standard JSON as JSON.parse does", () => {
    expect(parseObjectKeyedJson('{"offsetTable":{"a@g":{0:12,1:-1}}}')).toEqual({ value: { offsetTable: { "a@g": { "0": 12, "1": -1 } } } });
    const std = '{"a":[1,2.5,-3e2,true,false,null,"x\\"y\\u00e9"],"b":{},"c":[]}';
    expect(parseObjectKeyedJson(std)).toEqual({ value: JSON.parse(std) });
    const proto = parseObjectKeyedJson('{"__proto__":{"x":1}}');
    expect("value" in proto && Object.keys(proto.value as object)).toEqual(["__proto__"]);
  });

  test("malformed input is a reason, never an exception", () => {
    for (const bad of ["", "{", '{"a":}', "{a:1}", '{"a":1,}', "[1 2]", '"abc', "tru", "{}x", '{"a" 1}', "-", '"\\x"']) {
      const r = parseObjectKeyedJson(bad);
      expect("invalid" in r).toBe(true);
    }
    const deep = "[".repeat(OBJECT_KEY_JSON_DEPTH_MAX + 2) + "]".repeat(OBJECT_KEY_JSON_DEPTH_MAX + 2);
    expect(parseObjectKeyedJson(deep)).toEqual({ invalid: expect.stringContaining("nesting") });
  });
});
