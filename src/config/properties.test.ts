import { describe, expect, test } from "bun:test";
import { BROKER_PROPERTY_KEYS, keyForProperty, parseProperties, propertyName, readPropertyChanges, toProperties } from "./properties.ts";
import { defaultConfig, getValue } from "./schema.ts";

describe("broker config as properties (GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG)", () => {
  test("written with RocketMQ's names and units where RocketMQ has the key", () => {
    const text = toProperties(defaultConfig("master"));
    const p = parseProperties(text);
    expect(p.get("maxMessageSize")).toBe("4194304");
    expect(p.get("flushIntervalCommitLog")).toBe("500");
    expect(p.get("fileReservedTime")).toBe("72");
    expect(p.get("diskMaxUsedSpaceRatio")).toBe("75"); // a percent in RocketMQ, a fraction here
    expect(p.get("mappedFileSizeConsumeQueue")).toBe("6000000"); // bytes there, units here
    expect(p.get("brokerName")).toBe("broker-a");
    expect(p.get("diskCriticalRatio")).toBe("0.9"); // no RocketMQ key: our name and unit
    expect(text.endsWith("\n")).toBe(true);
    // The name server's section is not part of a broker's configuration.
    expect(p.has("brokerExpiredMs")).toBe(false);
    expect(p.size).toBe(BROKER_PROPERTY_KEYS.filter((d) => !d.secret).length);
  });

  test("a secret is never listed, and cannot be set over the wire", () => {
    const c = defaultConfig("standalone");
    c.admin.token = "s3cret-token-value";
    expect(toProperties(c)).not.toContain("s3cret");
    expect(toProperties(c, "namesrv")).not.toContain("s3cret");
    const r = readPropertyChanges("token=other\nadmin.token=x\n");
    expect(r.values.size).toBe(0);
    expect(r.problems).toEqual([
      "token: a secret; it is set in the config file, never over the wire",
      "admin.token: a secret; it is set in the config file, never over the wire",
    ]);
  });

  test("every key reads back to the value it was written from", () => {
    const c = defaultConfig("standalone");
    c.broker.namesrvAddr = ["127.0.0.1:9876", "10.0.0.2:9876"];
    const r = readPropertyChanges(toProperties(c));
    expect(r.problems).toEqual([]);
    for (const d of BROKER_PROPERTY_KEYS.filter((x) => !x.secret))
      expect({ key: d.key, v: r.values.get(d.key) }).toEqual({ key: d.key, v: getValue(c, d.key) });
  });

  test("RocketMQ's name, our name and the dotted path all name the key", () => {
    for (const name of ["maxMessageSize", "maxMessageSizeBytes", "broker.maxMessageSizeBytes"]) {
      expect(keyForProperty(name)).toBe("broker.maxMessageSizeBytes");
    }
    expect(propertyName("store.fileReservedTimeHours")).toBe("fileReservedTime");
  });

  test("values are checked by the schema; unknown keys and bad values are named", () => {
    const r = readPropertyChanges("maxMessageSize=65536\nfoo=1\nflushIntervalCommitLog=-3\ndiskMaxUsedSpaceRatio=80\n");
    expect(r.values.get("broker.maxMessageSizeBytes")).toBe(65536);
    expect(r.values.get("store.diskMaxUsedSpaceRatio")).toBe(0.8);
    expect(r.problems).toEqual(["foo: unknown key", expect.stringContaining("flushIntervalCommitLog: expected an integer")]);
    expect(readPropertyChanges("diskMaxUsedSpaceRatio=0.6").values.get("store.diskMaxUsedSpaceRatio")).toBe(0.6);
    expect(readPropertyChanges("mappedFileSizeConsumeQueue=30").problems).toEqual([expect.stringContaining("multiple of 20")]);
  });

  test("Java properties syntax: = or : or space, comments, blank lines, last one wins", () => {
    const p = parseProperties("# c\n! c\n\n a = 1 \nb:2\nc 3\na=4\r\nd\n");
    expect([...p]).toEqual([
      ["a", "4"],
      ["b", "2"],
      ["c", "3"],
      ["d", ""],
    ]);
  });
});
