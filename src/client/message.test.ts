import { describe, expect, test } from "bun:test";
import { MessageConst } from "../protocol/message-const.ts";
import { parseProperties } from "../common/message-record.ts";
import { buildProperties, createUniqId } from "./message.ts";

describe("buildProperties", () => {
  test("user properties first, then the message's own fields, which win over user values of the same name", () => {
    const text = buildProperties(
      {
        topic: "T",
        body: "x",
        tags: "TagA",
        keys: ["k1", "k2"],
        delayLevel: 3,
        properties: { a: "1", TAGS: "user-tag", KEYS: "user-keys", UNIQ_KEY: "user-uniq", WAIT: "false", DELAY: "9", b: "2" },
      },
      "UNIQ1",
    );
    expect(parseProperties(text)).toEqual({ a: "1", b: "2", TAGS: "TagA", KEYS: "k1 k2", UNIQ_KEY: "UNIQ1", WAIT: "true", DELAY: "3" });
    expect(text.endsWith("\u0002")).toBe(false);
    expect(text.startsWith("a\u00011\u0002b\u00012\u0002")).toBe(true);
  });

  test("user TAGS / KEYS / DELAY stay when the message does not set its own", () => {
    const props = parseProperties(buildProperties({ topic: "T", body: "x", properties: { TAGS: "t", KEYS: "k", DELAY: "2" } }, "U", false));
    expect(props).toEqual({ TAGS: "t", KEYS: "k", DELAY: "2", UNIQ_KEY: "U", WAIT: "false" });
  });

  test("deliverAt becomes START_DELIVER_TIME; no properties at all gives just UNIQ_KEY and WAIT", () => {
    expect(parseProperties(buildProperties({ topic: "T", body: "x", deliverAt: 1234.9 }, "U"))[MessageConst.START_DELIVER_TIME]).toBe("1234");
    expect(buildProperties({ topic: "T", body: "x" }, "U")).toBe("UNIQ_KEY\u0001U\u0002WAIT\u0001true");
  });
});

describe("createUniqId", () => {
  test("32 upper-case hex digits: fixed prefix, ms since the month began, a counter", () => {
    const now = new Date(2026, 10, 30, 8, 0, 0, 5).getTime();
    const a = createUniqId(now);
    const b = createUniqId(now);
    expect(a).toMatch(/^[0-9A-F]{32}$/);
    expect(a.slice(0, 20)).toBe(b.slice(0, 20));
    const sinceMonth = now - new Date(2026, 10, 1).getTime();
    expect(parseInt(a.slice(20, 28), 16)).toBe(sinceMonth);
    expect((parseInt(b.slice(28), 16) - parseInt(a.slice(28), 16)) & 0xffff).toBe(1);
    // A new month starts counting from zero again.
    const next = createUniqId(new Date(2026, 11, 1, 0, 0, 1).getTime());
    expect(parseInt(next.slice(20, 28), 16)).toBe(1000);
    // And an earlier time (a clock stepping back) is measured from its own month.
    expect(parseInt(createUniqId(now).slice(20, 28), 16)).toBe(sinceMonth);
  });
});
