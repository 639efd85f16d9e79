import { describe, expect, test } from "bun:test";
import { parseJsonBytes, parseJsonLenient, quoteNumericKeys } from "./json.ts";

describe("quoteNumericKeys", () => {
  test("quotes fastjson's bare integer keys, negative ones and those with blanks before the colon", () => {
    expect(quoteNumericKeys('{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}}')).toBe(
      '{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}}',
    );
    expect(quoteNumericKeys('{ -1 : 5,\n\t12\r\n:6}')).toBe('{ "-1" : 5,\n\t"12"\r\n:6}');
  });

  test("leaves strings, values and arrays alone, and returns the same string when nothing changes", () => {
    const same = ['{"a":"{1:2}","b":[1,2,3]}', '{"a":"x\\",1:"}', "[1,2,{}]", '{"a":1,"b":-2}', "x".repeat(300)];
    for (const t of same) expect(quoteNumericKeys(t)).toBe(t);
    // A number that is a value after a comma, not a key.
    expect(quoteNumericKeys("[1, 2, 3]")).toBe("[1, 2, 3]");
  });

  test("a key after an escaped quote inside a string is still seen as inside the string", () => {
    expect(quoteNumericKeys('{"k\\"":{7:1},"s":"a\\\\"}')).toBe('{"k\\"":{"7":1},"s":"a\\\\"}');
  });
});

describe("parseJsonLenient", () => {
  test("parses what JSON.parse parses, and fastjson's integer-keyed maps", () => {
    expect(parseJsonLenient('{"a":[1,2]}')).toEqual({ a: [1, 2] });
    expect(parseJsonLenient('{"offsetTable":{3:{"x":1},-1:2}}')).toEqual({ offsetTable: { "3": { x: 1 }, "-1": 2 } });
  });

  test("garbage is an error, not a crash or a hang", () => {
    expect(() => parseJsonBytes(new Uint8Array(256))).toThrow();
    expect(() => parseJsonLenient("{1:")).toThrow();
    expect(() => parseJsonLenient(",".repeat(100_000) + "1")).toThrow();
  });
});
