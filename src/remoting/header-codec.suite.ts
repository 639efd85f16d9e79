/**
 * One conformance suite for both header serialize types (docs/CONVENTIONS.md §7): every case here must
 * hold for JSON (type 0) and ROCKETMQ (type 1). The few places where the two formats differ by
 * design are spelled out as `Traits`, each with the reason, instead of being skipped.
 */
import { describe, expect, test } from "bun:test";
import { FLAG_ONEWAY, FLAG_RESPONSE, type RemotingCommand, SerializeType } from "./command.ts";
import { decodeCommand, encodeCommand, EXT_FIELDS_MAX, FrameDecoder } from "./frame.ts";
import { decodeJsonHeader, encodeJsonHeader, type DecodedHeader, type HeaderResult } from "./header-json.ts";
import { decodeRocketmqHeader, encodeRocketmqHeader } from "./header-rocketmq.ts";

interface Traits {
  name: string;
  encodeHeader: (h: DecodedHeader) => Uint8Array;
  decodeHeader: (bytes: Uint8Array, extFieldsMax: number) => HeaderResult;
  /** JSON carries the language as a name; ROCKETMQ as a byte, so unknown names become OTHER. */
  keepsUnknownLanguage: boolean;
  /** Java decodes a zero-length binary string as null, so ROCKETMQ drops empty remarks/values. */
  dropsEmptyStrings: boolean;
  /** ROCKETMQ writes an empty map as ext length 0, which is also "no extFields" (Java: null map). */
  emptyExtFieldsIsAbsent: boolean;
}

const TRAITS: Record<SerializeType, Traits> = {
  [SerializeType.JSON]: {
    name: "JSON",
    encodeHeader: encodeJsonHeader,
    decodeHeader: decodeJsonHeader,
    keepsUnknownLanguage: true,
    dropsEmptyStrings: false,
    emptyExtFieldsIsAbsent: false,
  },
  [SerializeType.ROCKETMQ]: {
    name: "ROCKETMQ",
    encodeHeader: encodeRocketmqHeader,
    decodeHeader: decodeRocketmqHeader,
    keepsUnknownLanguage: false,
    dropsEmptyStrings: true,
    emptyExtFieldsIsAbsent: true,
  },
};

function cmd(serializeType: SerializeType, over: Partial<RemotingCommand> = {}): RemotingCommand {
  return { code: 310, language: "JAVA", version: 409, opaque: 7, flag: 0, serializeType, ...over };
}

/** Frame → decodeCommand (the path after the length word is consumed). */
function viaDecodeCommand(frame: Uint8Array): RemotingCommand {
  const r = decodeCommand(frame.subarray(4));
  if ("invalid" in r) throw new Error(`unexpected invalid: ${r.invalid}`);
  return r;
}

/** Frame → FrameDecoder, fed in one piece. */
function viaDecoder(frame: Uint8Array): RemotingCommand {
  const r = new FrameDecoder().feed(frame);
  if (!Array.isArray(r)) throw new Error(`unexpected invalid: ${r.invalid}`);
  expect(r.length).toBe(1);
  return r[0]!;
}

export function runHeaderCodecSuite(serializeType: SerializeType): void {
  const t = TRAITS[serializeType];

  describe(`header codec conformance: ${t.name} (serialize type ${serializeType})`, () => {
    const roundTrips: [string, Partial<RemotingCommand>][] = [
      ["a minimal request", {}],
      ["a response with a remark", { flag: FLAG_RESPONSE, code: 1, remark: "something went wrong" }],
      ["a oneway request", { flag: FLAG_ONEWAY, code: 15 }],
      ["extFields with several entries", { extFields: { a: "PG", b: "TopicA", d: "4", k: "false", g: "1700000000000" } }],
      ["non-ASCII remark, keys and values", { remark: "fehler: ü€😀", extFields: { schlüssel: "wert€", k: "😀" } }],
      ["control characters in values (the property separators)", { extFields: { i: "TAGS\u0001TagA\u0002" } }],
      ["opaque at int32 max", { opaque: 0x7fffffff }],
      ["negative opaque (Java int wrap)", { opaque: -5 }],
      ["opaque at int32 min", { opaque: -0x80000000 }],
      ["code and version at int16 max", { code: 0x7fff, version: 0x7fff }],
      ["code 0 (SUCCESS) and version 0", { code: 0, version: 0, flag: FLAG_RESPONSE }],
      ["a body", { body: Uint8Array.of(0, 1, 2, 0xff, 0xfe) }],
      ["a 70 KiB body", { body: new Uint8Array(70 * 1024).map((_, i) => i & 0xff) }],
      ["a long remark", { remark: "x".repeat(5000) }],
      ["a 1000-byte key with a 3000-byte value", { extFields: { ["k".repeat(1000)]: "v".repeat(3000) } }],
    ];

    for (const [name, over] of roundTrips) {
      test(`round-trips ${name}`, () => {
        const c = cmd(serializeType, over);
        const frame = encodeCommand(c);
        for (const decoded of [viaDecodeCommand(frame), viaDecoder(frame)]) {
          expect(decoded).toEqual(c);
          expect(decoded.serializeType).toBe(serializeType);
        }
      });
    }

    test("every known language name round-trips", () => {
      const languages = ["JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER"];
      languages.push("HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS");
      for (const language of languages) {
        expect(viaDecoder(encodeCommand(cmd(serializeType, { language })))).toEqual(cmd(serializeType, { language }));
      }
    });

    test(`an unknown language name ${t.keepsUnknownLanguage ? "is kept" : "becomes OTHER"}`, () => {
      const decoded = viaDecoder(encodeCommand(cmd(serializeType, { language: "COBOL" })));
      expect(decoded.language).toBe(t.keepsUnknownLanguage ? "COBOL" : "OTHER");
    });

    test(`empty remark and empty ext values ${t.dropsEmptyStrings ? "are dropped (Java reads them as null)" : "are kept"}`, () => {
      const decoded = viaDecoder(encodeCommand(cmd(serializeType, { remark: "", extFields: { empty: "", full: "x" } })));
      if (t.dropsEmptyStrings) {
        expect(decoded.remark).toBeUndefined();
        expect(decoded.extFields).toEqual({ full: "x" });
      } else {
        expect(decoded.remark).toBe("");
        expect(decoded.extFields).toEqual({ empty: "", full: "x" });
      }
    });

    test(`an empty extFields map ${t.emptyExtFieldsIsAbsent ? "decodes as no extFields" : "round-trips"}`, () => {
      const decoded = viaDecoder(encodeCommand(cmd(serializeType, { extFields: {} })));
      if (t.emptyExtFieldsIsAbsent) expect(decoded).toEqual(cmd(serializeType));
      else expect(decoded).toEqual(cmd(serializeType, { extFields: {} }));
    });

    test("an empty body decodes as no body", () => {
      const decoded = viaDecoder(encodeCommand(cmd(serializeType, { body: new Uint8Array(0) })));
      expect(decoded.body).toBeUndefined();
    });

    test("the length words follow docs/PROTOCOL.md §1.1: length = 4 + header + body, top byte = serialize type", () => {
      const body = Uint8Array.of(9, 9, 9);
      const frame = encodeCommand(cmd(serializeType, { remark: "r", extFields: { a: "1" }, body }));
      const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
      const length = view.getUint32(0);
      const word = view.getUint32(4);
      const headerLength = word & 0xffffff;
      expect(length).toBe(frame.length - 4);
      expect(word >>> 24).toBe(serializeType);
      expect(length).toBe(4 + headerLength + body.length);
      expect(frame.subarray(8 + headerLength)).toEqual(body);
      // The header bytes alone decode with this type's header codec.
      const header = t.decodeHeader(frame.subarray(8, 8 + headerLength), EXT_FIELDS_MAX);
      expect(header).toEqual({ code: 310, language: "JAVA", version: 409, opaque: 7, flag: 0, remark: "r", extFields: { a: "1" } });
    });

    test("the header codec alone round-trips a header", () => {
      const h: DecodedHeader = { code: 105, language: "GO", version: 121, opaque: 123456, flag: 0, remark: "ok" };
      h.extFields = { topic: "T" };
      expect(t.decodeHeader(t.encodeHeader(h), EXT_FIELDS_MAX)).toEqual(h);
    });

    test("more than extFieldsMax entries is invalid, exactly extFieldsMax is fine", () => {
      const ext: Record<string, string> = {};
      for (let i = 0; i < 5; i++) ext[`k${i}`] = `v${i}`;
      const bytes = t.encodeHeader({ code: 1, language: "JAVA", version: 0, opaque: 1, flag: 0, extFields: ext });
      expect(t.decodeHeader(bytes, 5)).toMatchObject({ extFields: ext });
      const r = t.decodeHeader(bytes, 4);
      expect("invalid" in r && r.invalid).toContain("more than 4 extFields");
    });

    test("truncating the header anywhere gives invalid, never a throw", () => {
      const h: DecodedHeader = { code: 310, language: "JAVA", version: 409, opaque: 7, flag: 0, remark: "rem" };
      h.extFields = { a: "PG", b: "TopicA" };
      const bytes = t.encodeHeader(h);
      for (let n = 0; n < bytes.length; n++) {
        const r = t.decodeHeader(bytes.subarray(0, n), EXT_FIELDS_MAX);
        expect("invalid" in r).toBe(true);
      }
    });

    test("a decoded body is a private copy of the input bytes", () => {
      const frame = encodeCommand(cmd(serializeType, { body: Uint8Array.of(1, 2, 3) }));
      const decoded = viaDecoder(frame);
      frame.fill(0);
      expect(decoded.body).toEqual(Uint8Array.of(1, 2, 3));
    });
  });
}
