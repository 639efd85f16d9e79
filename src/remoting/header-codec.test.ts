/**
 * Header codecs: the shared conformance suite on both serialize types, golden frames built by hand
 * from the documented layout (docs/PROTOCOL.md §1.1, §1.2, §1.7), and the format-specific ways a
 * header can be malformed. Every malformed input must come back as `{ invalid }`, never a throw.
 */
import { describe, expect, test } from "bun:test";
import { FLAG_RESPONSE, type RemotingCommand, SerializeType } from "./command.ts";
import { decodeCommand, encodeCommand, EXT_FIELDS_MAX, FrameDecoder } from "./frame.ts";
import { decodeJsonHeader, encodeJsonHeader, type HeaderResult } from "./header-json.ts";
import { decodeRocketmqHeader, ROCKETMQ_HEADER_FIXED_SIZE } from "./header-rocketmq.ts";
import { runHeaderCodecSuite } from "./header-codec.suite.ts";
import { languageFromByte, languageToByte } from "./language.ts";
import { concat, frameBytes, readGoldenHex, rocketmqHeaderBytes, u16, u32, u8, utf8 } from "./test-support.ts";

runHeaderCodecSuite(SerializeType.JSON);
runHeaderCodecSuite(SerializeType.ROCKETMQ);

function decodeOne(frame: Uint8Array): RemotingCommand {
  const r = new FrameDecoder().feed(frame);
  if (!Array.isArray(r)) throw new Error(`unexpected invalid: ${r.invalid}`);
  expect(r.length).toBe(1);
  return r[0]!;
}

function reason(r: HeaderResult): string {
  if (!("invalid" in r)) throw new Error(`expected invalid, got ${JSON.stringify(r)}`);
  return r.invalid;
}

describe("golden frames (hand-built from the documented layout, checked-in hex)", () => {
  // The ali-ons request of docs/PROTOCOL.md §1.2, with the extFields values as native JSON scalars.
  const aliOnsHeader =
    '{"code":310,"language":"JAVA","opaque":7,"flag":0,"version":121,"extFields":{"a":"PG","b":"TopicA","c":"TBW102",' +
    '"d":4,"e":2,"f":0,"g":1700000000000,"h":0,"i":"TAGS\\u0001TagA\\u0002","j":0,"k":false}}';
  const aliOnsBody = utf8("Hello RocketBun");

  test("ali-ons JSON SEND_MESSAGE_V2 request: fixture equals the layout, decodes with stringified ext values", async () => {
    const built = frameBytes(0, utf8(aliOnsHeader), aliOnsBody);
    const golden = await readGoldenHex("ali-ons-send-message-v2.json-frame.hex");
    expect(golden).toEqual(built);
    // Outer frame words, checked by offset.
    const view = new DataView(golden.buffer);
    expect(view.getUint32(0)).toBe(golden.length - 4);
    expect(view.getUint8(4)).toBe(0);
    expect(view.getUint32(4) & 0xffffff).toBe(utf8(aliOnsHeader).length);

    const c = decodeOne(golden);
    expect(c).toEqual({
      code: 310,
      language: "JAVA",
      version: 121,
      opaque: 7,
      flag: 0,
      serializeType: SerializeType.JSON,
      extFields: {
        a: "PG",
        b: "TopicA",
        c: "TBW102",
        d: "4",
        e: "2",
        f: "0",
        g: "1700000000000",
        h: "0",
        i: "TAGS\u0001TagA\u0002",
        j: "0",
        k: "false",
      },
      body: aliOnsBody,
    });
  });

  test("ali-ons JSON frame re-encodes (as JSON, with string values) to an equal command", async () => {
    const c = decodeOne(await readGoldenHex("ali-ons-send-message-v2.json-frame.hex"));
    const again = encodeCommand(c);
    expect(decodeOne(again)).toEqual(c);
    // What we write back uses string values only, like Java.
    const headerLength = new DataView(again.buffer).getUint32(4) & 0xffffff;
    const json = JSON.parse(new TextDecoder().decode(again.subarray(8, 8 + headerLength))) as { extFields: Record<string, unknown> };
    for (const v of Object.values(json.extFields)) expect(typeof v).toBe("string");
  });

  const remark = utf8("héllo");
  const binaryHeader = rocketmqHeaderBytes({
    code: 310,
    languageByte: 0,
    version: 409,
    opaque: 0x01020304,
    flag: 0,
    remark,
    ext: [
      [utf8("a"), utf8("PG")],
      [utf8("b"), utf8("TopicA")],
    ],
  });
  const binaryBody = utf8("hi");

  test("ROCKETMQ binary request with remark and 2 extFields: fixture equals the layout and decodes", async () => {
    const golden = await readGoldenHex("rocketmq-send-message-v2.binary-frame.hex");
    expect(golden).toEqual(frameBytes(1, binaryHeader, binaryBody));
    // Header length = 21 fixed + R + X, the remark length counts bytes (é is two).
    const X = 2 + 1 + 4 + 2 + (2 + 1 + 4 + 6);
    expect(binaryHeader.length).toBe(ROCKETMQ_HEADER_FIXED_SIZE + remark.length + X);
    expect(remark.length).toBe(6);
    expect(golden[4]).toBe(1);

    expect(decodeOne(golden)).toEqual({
      code: 310,
      language: "JAVA",
      version: 409,
      opaque: 16909060,
      flag: 0,
      remark: "héllo",
      serializeType: SerializeType.ROCKETMQ,
      extFields: { a: "PG", b: "TopicA" },
      body: binaryBody,
    });
  });

  test("ROCKETMQ binary fixture re-encodes byte for byte", async () => {
    const golden = await readGoldenHex("rocketmq-send-message-v2.binary-frame.hex");
    expect(encodeCommand(decodeOne(golden))).toEqual(golden);
  });

  test("Java-style JSON response decodes, and our encoder writes exactly the same bytes", async () => {
    const header =
      '{"code":0,"extFields":{"MSG_REGION":"DefaultRegion","TRACE_ON":"true","msgId":"0A00000100002A9F0000000000001F40",' +
      '"queueId":"2","queueOffset":"17"},"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":409}';
    const golden = await readGoldenHex("java-send-message-v2-response.json-frame.hex");
    expect(golden).toEqual(frameBytes(0, utf8(header)));
    const expected: RemotingCommand = {
      code: 0,
      language: "JAVA",
      version: 409,
      opaque: 7,
      flag: FLAG_RESPONSE,
      serializeType: SerializeType.JSON,
      extFields: {
        MSG_REGION: "DefaultRegion",
        TRACE_ON: "true",
        msgId: "0A00000100002A9F0000000000001F40",
        queueId: "2",
        queueOffset: "17",
      },
    };
    expect(decodeOne(golden)).toEqual(expected);
    expect(encodeCommand(expected)).toEqual(golden);
  });
});

describe("ROCKETMQ header layout (docs/PROTOCOL.md §1.7)", () => {
  test("ROCKETMQ_HEADER_FIXED_SIZE = code 2 + language 1 + version 2 + opaque 4 + flag 4 + remark length 4 + ext length 4", () => {
    expect(ROCKETMQ_HEADER_FIXED_SIZE).toBe(2 + 1 + 2 + 4 + 4 + 4 + 4);
  });

  test("a header with no remark and no ext is exactly the fixed size and decodes", () => {
    const bytes = rocketmqHeaderBytes({ code: 11, languageByte: 9, version: 121, opaque: -1, flag: 2 });
    expect(bytes.length).toBe(ROCKETMQ_HEADER_FIXED_SIZE);
    expect(decodeRocketmqHeader(bytes, EXT_FIELDS_MAX)).toEqual({ code: 11, language: "GO", version: 121, opaque: -1, flag: 2 });
  });

  test("the language byte table matches docs/PROTOCOL.md §1.5", () => {
    const names = ["JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS"];
    names.forEach((name, i) => {
      expect(languageToByte(name)).toBe(i);
      expect(languageFromByte(i)).toBe(name);
    });
    expect(languageFromByte(200)).toBe("OTHER");
    expect(languageToByte("COBOL")).toBe(7);
  });

  test("empty remark and empty key/value are decoded as absent (Java reads zero-length strings as null)", () => {
    const bytes = rocketmqHeaderBytes({
      code: 0,
      languageByte: 0,
      version: 0,
      opaque: 1,
      flag: 1,
      ext: [
        [utf8("empty"), new Uint8Array(0)],
        [new Uint8Array(0), utf8("orphan")],
        [utf8("kept"), utf8("v")],
      ],
    });
    expect(decodeRocketmqHeader(bytes, EXT_FIELDS_MAX)).toEqual({
      code: 0,
      language: "JAVA",
      version: 0,
      opaque: 1,
      flag: 1,
      extFields: { kept: "v" },
    });
  });

  test("the encoder does not emit empty remark or empty ext values (same bytes as leaving them out)", () => {
    const base = { code: 0, language: "JAVA", version: 409, opaque: 3, flag: 1, serializeType: SerializeType.ROCKETMQ } as const;
    const withEmpties = encodeCommand({ ...base, remark: "", extFields: { a: "", b: "x" } });
    const without = encodeCommand({ ...base, extFields: { b: "x" } });
    expect(withEmpties).toEqual(without);
    expect(withEmpties).toEqual(
      frameBytes(1, rocketmqHeaderBytes({ code: 0, languageByte: 0, version: 409, opaque: 3, flag: 1, ext: [[utf8("b"), utf8("x")]] })),
    );
  });

  const fixed = (remarkLen: number, rest: Uint8Array = new Uint8Array(0)) => concat(u16(310), u8(0), u16(409), u32(7), u32(0), u32(remarkLen), rest);

  const malformed: [string, Uint8Array, string][] = [
    ["shorter than the fixed size", new Uint8Array(20), "shorter than 21"],
    ["negative remark length", concat(fixed(-1), u32(0)), "remark length"],
    ["remark length past the end", concat(fixed(100), u32(0)), "remark length"],
    ["remark leaves no room for the ext length word", concat(fixed(4), utf8("abcd")), "remark length"],
    ["ext length larger than the rest", concat(fixed(0), u32(10), utf8("abc")), "extFields length"],
    ["ext length smaller than the rest (trailing bytes)", concat(fixed(0), u32(0), utf8("abc")), "extFields length"],
    ["negative ext length", concat(fixed(0), u32(-4)), "extFields length"],
    ["ext entry cut inside the key length", concat(fixed(0), u32(1), u8(0)), "truncated extFields key length"],
    ["ext entry key runs past the section", concat(fixed(0), u32(5), u16(9), utf8("abc")), "key overruns"],
    ["ext entry cut before the value length", concat(fixed(0), u32(4), u16(1), utf8("a"), u8(0)), "key overruns"],
    ["ext entry value runs past the section", concat(fixed(0), u32(9), u16(1), utf8("a"), u32(5), utf8("xy")), "value overruns"],
    ["ext entry with negative value length", concat(fixed(0), u32(7), u16(1), utf8("a"), u32(-1)), "value overruns"],
    ["invalid UTF-8 remark", concat(fixed(2), Uint8Array.of(0xc3, 0x28), u32(0)), "UTF-8"],
    ["invalid UTF-8 key", concat(fixed(0), u32(9), u16(1), u8(0xff), u32(2), utf8("ok")), "UTF-8"],
    ["invalid UTF-8 value", concat(fixed(0), u32(8), u16(1), utf8("a"), u32(1), u8(0x80)), "UTF-8"],
  ];
  for (const [name, bytes, why] of malformed) {
    test(`invalid: ${name}`, () => {
      expect(reason(decodeRocketmqHeader(bytes, EXT_FIELDS_MAX))).toContain(why);
      // And through the frame decoder: invalid, nothing buffered.
      const d = new FrameDecoder();
      const r = d.feed(frameBytes(1, bytes));
      expect(Array.isArray(r)).toBe(false);
      expect(d.bufferedBytes).toBe(0);
    });
  }
});

describe("JSON header (docs/PROTOCOL.md §1.2)", () => {
  const dec = (text: string) => decodeJsonHeader(utf8(text), EXT_FIELDS_MAX);

  test("Java's alphabetical key order, string values and serializeTypeCurrentRPC are accepted", () => {
    expect(dec('{"code":34,"extFields":{"x":"1"},"flag":0,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":409}')).toEqual({
      code: 34,
      language: "JAVA",
      version: 409,
      opaque: 9,
      flag: 0,
      extFields: { x: "1" },
    });
  });

  test("ext values of every JSON scalar type become their Java string form", () => {
    expect(dec('{"code":15,"extFields":{"n":-1,"z":0,"big":1700000000000,"t":true,"f":false,"s":"str","dbl":1.5}}')).toMatchObject({
      extFields: { n: "-1", z: "0", big: "1700000000000", t: "true", f: "false", s: "str", dbl: "1.5" },
    });
  });

  test("null ext values are left out, as ali-ons leaves out undefined ones", () => {
    expect(dec('{"code":11,"extFields":{"queueOffset":null,"queueId":1}}')).toMatchObject({ extFields: { queueId: "1" } });
  });

  test("missing opaque/flag/version default to 0, missing language to OTHER, no extFields key means none", () => {
    expect(dec('{"code":105}')).toEqual({ code: 105, language: "OTHER", version: 0, opaque: 0, flag: 0 });
    expect(dec('{"code":105,"extFields":null,"remark":null}')).toEqual({ code: 105, language: "OTHER", version: 0, opaque: 0, flag: 0 });
  });

  test("a remark survives; unknown top-level keys are ignored", () => {
    expect(dec('{"code":1,"remark":"boom","whatever":[1,2],"flag":1}')).toEqual({
      code: 1,
      language: "OTHER",
      version: 0,
      opaque: 0,
      flag: 1,
      remark: "boom",
    });
  });

  test("an opaque above int32 max is wrapped like a Java int", () => {
    expect(dec('{"code":1,"opaque":4294967295}')).toMatchObject({ opaque: -1 });
  });

  test("an extFields key named __proto__ neither throws nor pollutes prototypes", () => {
    const r = dec('{"code":1,"extFields":{"__proto__":"x","a":"1"}}');
    expect(r).toMatchObject({ extFields: { a: "1" } });
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  const malformed: [string, Uint8Array, string][] = [
    ["invalid UTF-8", Uint8Array.of(0x7b, 0x22, 0xff, 0x22, 0x7d), "UTF-8"],
    ["empty header", new Uint8Array(0), "does not parse"],
    ["truncated JSON", utf8('{"code":1'), "does not parse"],
    ["an array", utf8("[1,2]"), "not an object"],
    ["a number", utf8("42"), "not an object"],
    ["a string", utf8('"code"'), "not an object"],
    ["null", utf8("null"), "not an object"],
    ["no code", utf8('{"opaque":1}'), "code"],
    ["code as a string", utf8('{"code":"310"}'), "code"],
    ["fractional code", utf8('{"code":1.5}'), "code"],
    ["code beyond 32 bits", utf8('{"code":99999999999}'), "code"],
    ["opaque as a string", utf8('{"code":1,"opaque":"7"}'), "opaque"],
    ["flag as a boolean", utf8('{"code":1,"flag":true}'), "flag"],
    ["version as an object", utf8('{"code":1,"version":{}}'), "version"],
    ["extFields as an array", utf8('{"code":1,"extFields":["a","b"]}'), "extFields is not an object"],
    ["extFields as a string", utf8('{"code":1,"extFields":"a=b"}'), "extFields is not an object"],
    ["a nested object in extFields", utf8('{"code":1,"extFields":{"a":{"b":"c"}}}'), "extFields.a is not a scalar"],
    ["an array in extFields", utf8('{"code":1,"extFields":{"a":[1]}}'), "extFields.a is not a scalar"],
  ];
  for (const [name, bytes, why] of malformed) {
    test(`invalid: ${name}`, () => {
      expect(reason(decodeJsonHeader(bytes, EXT_FIELDS_MAX))).toContain(why);
      const d = new FrameDecoder();
      expect(Array.isArray(d.feed(frameBytes(0, bytes)))).toBe(false);
      expect(d.bufferedBytes).toBe(0);
    });
  }

  test("encodeJsonHeader leaves out absent remark and extFields", () => {
    const text = new TextDecoder().decode(encodeJsonHeader({ code: 0, language: "JAVA", version: 409, opaque: 5, flag: 1 }));
    expect(JSON.parse(text)).toEqual({ code: 0, flag: 1, language: "JAVA", opaque: 5, serializeTypeCurrentRPC: "JSON", version: 409 });
  });
});

describe("decodeCommand", () => {
  test("a header length beyond the frame is invalid", () => {
    const frame = concat(u32(100), utf8("{}"));
    expect(decodeCommand(frame)).toEqual({ invalid: "header length exceeds frame length" });
  });

  test("serialize types 2..255 are invalid", () => {
    for (let type = 2; type <= 255; type++) {
      const r = decodeCommand(concat(u32((type << 24) | 2), utf8("{}")));
      expect(r).toEqual({ invalid: `unknown serialize type ${type}` });
    }
  });
});
