/**
 * The extFields readers accept what real peers send: Java's string values and ali-ons' native
 * JSON numbers and booleans (stringified by the JSON header codec), and turn a missing or
 * malformed required field into a HeaderError (input, not a bug).
 */
import { describe, expect, test } from "bun:test";
import type { RemotingCommand } from "./command.ts";
import { HeaderError, optBool, optInt, optString, reqInt, reqString } from "./ext-fields.ts";
import { FrameDecoder } from "./frame.ts";
import { frameBytes, readGoldenHex, utf8 } from "./test-support.ts";

function decodeOne(frame: Uint8Array): RemotingCommand {
  const r = new FrameDecoder().feed(frame);
  if (!Array.isArray(r) || r.length !== 1) throw new Error("expected one command");
  return r[0]!;
}

/** extFields exactly as the JSON codec produces them from an ali-ons header. */
function aliOnsExt(extJson: string): Record<string, string> {
  const header = `{"code":11,"language":"JAVA","opaque":1,"flag":0,"version":121,"extFields":${extJson}}`;
  return decodeOne(frameBytes(0, utf8(header))).extFields!;
}

describe("ext-fields readers on ali-ons values", () => {
  test("the golden ali-ons SEND_MESSAGE_V2 header reads as typed values", async () => {
    const ext = decodeOne(await readGoldenHex("ali-ons-send-message-v2.json-frame.hex")).extFields;
    expect(reqString(ext, "a")).toBe("PG");
    expect(reqString(ext, "b")).toBe("TopicA");
    expect(reqInt(ext, "d")).toBe(4);
    expect(reqInt(ext, "e")).toBe(2);
    expect(reqInt(ext, "f")).toBe(0);
    expect(reqInt(ext, "g")).toBe(1700000000000);
    expect(optInt(ext, "j")).toBe(0);
    expect(optBool(ext, "k")).toBe(false);
    expect(optString(ext, "i")).toBe("TAGS\u0001TagA\u0002");
  });

  test("native booleans, negative numbers and longs", () => {
    const ext = aliOnsExt('{"commitOffset":-1,"queueOffset":1700000000000,"suspend":true,"unit":false,"sysFlag":0}');
    expect(reqInt(ext, "commitOffset")).toBe(-1);
    expect(reqInt(ext, "queueOffset")).toBe(1700000000000);
    expect(optBool(ext, "suspend")).toBe(true);
    expect(optBool(ext, "unit")).toBe(false);
    expect(reqInt(ext, "sysFlag")).toBe(0);
  });

  test("a null value (ali-ons' NaN offsets serialize as null) counts as missing", () => {
    const ext = aliOnsExt('{"queueOffset":null,"queueId":2}');
    expect(optInt(ext, "queueOffset")).toBeUndefined();
    expect(() => reqInt(ext, "queueOffset")).toThrow(HeaderError);
    expect(reqInt(ext, "queueId")).toBe(2);
  });
});

describe("ext-fields readers on Java values", () => {
  const ext = { queueId: "3", commitOffset: "-1", suspend: "true", unit: "false", topic: "TopicA", empty: "" };

  test("string numbers and booleans", () => {
    expect(reqInt(ext, "queueId")).toBe(3);
    expect(optInt(ext, "commitOffset")).toBe(-1);
    expect(optBool(ext, "suspend")).toBe(true);
    expect(optBool(ext, "unit")).toBe(false);
    expect(reqString(ext, "topic")).toBe("TopicA");
  });

  test("an empty string is missing, as Java's binary decoding makes it null", () => {
    expect(optString(ext, "empty")).toBeUndefined();
    expect(optInt(ext, "empty")).toBeUndefined();
    expect(optBool(ext, "empty")).toBeUndefined();
    expect(() => reqString(ext, "empty")).toThrow("the custom field <empty> is null");
  });
});

describe("missing and malformed fields", () => {
  test("required fields throw HeaderError with Java's message", () => {
    expect(() => reqString({}, "topic")).toThrow(new HeaderError("the custom field <topic> is null"));
    expect(() => reqInt(undefined, "queueId")).toThrow(HeaderError);
    expect(() => reqInt({}, "queueId")).toThrow("the custom field <queueId> is null");
  });

  test("optional fields on a command without extFields are undefined", () => {
    expect(optString(undefined, "x")).toBeUndefined();
    expect(optInt(undefined, "x")).toBeUndefined();
    expect(optBool(undefined, "x")).toBeUndefined();
  });

  test("non-integers are HeaderErrors, not NaN", () => {
    for (const bad of ["abc", "1.5", "NaN", "Infinity", "4x"]) {
      expect(() => reqInt({ n: bad }, "n")).toThrow(HeaderError);
      expect(() => optInt({ n: bad }, "n")).toThrow(`the custom field <n> is not an integer: ${bad}`);
    }
  });

  test("an error quotes at most 64 characters of the value (found by the port fuzzer: a 200 KB field was echoed whole)", () => {
    const huge = "x".repeat(200_000);
    let message = "";
    try {
      reqInt({ n: huge }, "n");
    } catch (e) {
      message = e instanceof HeaderError ? e.message : "";
    }
    expect(message).toBe(`the custom field <n> is not an integer: ${"x".repeat(64)}… (200000 chars)`);
  });

  test("only decimal integers are accepted, as Java's Integer.parseInt / Long.parseLong do", () => {
    // Number() would read these as 0, 16, 1000, 3 and 4; Java rejects every one of them.
    for (const bad of [" ", "\t", " 4", "4 ", "0x10", "1e3", "0b11", "4.0", "--1", "+"]) {
      expect(() => reqInt({ n: bad }, "n")).toThrow(HeaderError);
      expect(() => optInt({ n: bad }, "n")).toThrow(HeaderError);
    }
    expect(reqInt({ n: "+5" }, "n")).toBe(5);
    expect(reqInt({ n: "007" }, "n")).toBe(7);
  });

  test("HeaderError is an Error with its own name", () => {
    const e = new HeaderError("x");
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe("HeaderError");
  });
});
