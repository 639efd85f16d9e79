import { describe, expect, test } from "bun:test";
import {
  checkFlagValue,
  checkValue,
  closest,
  crossCheck,
  defaultConfig,
  editDistance,
  formatHostPort,
  getValue,
  KEYS,
  parseDeleteWhen,
  parseHostPort,
  portsToBind,
  ROLES,
  type Config,
  type KeyDef,
} from "./schema.ts";
import { indexFileBytes } from "../protocol/store-layout.ts";

function leafKeys(obj: Record<string, unknown>, prefix = ""): string[] {
  return Object.entries(obj).flatMap(([k, v]) => {
    const isSection = typeof v === "object" && v !== null && !Array.isArray(v) && !("port" in v);
    return isSection ? leafKeys(v as Record<string, unknown>, `${prefix}${k}.`) : [`${prefix}${k}`];
  });
}

describe("schema table", () => {
  test("KEYS lists every Config key exactly once", () => {
    const fromConfig = leafKeys(defaultConfig("standalone") as unknown as Record<string, unknown>).sort();
    const fromTable: string[] = KEYS.map((d) => d.key).sort();
    expect(fromTable).toEqual(fromConfig);
    expect(new Set(fromTable).size).toBe(fromTable.length);
  });

  test("every key has a doc, and unit-suffixed keys declare their unit", () => {
    for (const d of KEYS) {
      expect(d.doc.length).toBeGreaterThan(0);
      if (d.key.endsWith("Ms")) expect(d.unit).toBe("ms");
      if (d.key.endsWith("Bytes")) expect(d.unit).toBe("bytes");
      if (d.key.endsWith("Hours")) expect(d.unit).toBe("hours");
      if (d.key.includes("TransferBytes")) expect(d.unit).toBe("bytes");
    }
  });

  test("store defaults are RocketMQ's, and the default IndexFile is RocketMQ's 420000040 bytes", () => {
    const s = defaultConfig("master").store;
    expect(indexFileBytes(s.indexSlotNum, s.indexNum)).toBe(420000040);
    expect(s.consumeQueueUnitsPerFile * 20).toBe(6000000);
    expect([s.fileReservedTimeHours, s.deleteWhen, s.diskMaxUsedSpaceRatio, s.diskCriticalRatio]).toEqual([72, "04", 0.75, 0.9]);
  });

  test("role-dependent defaults", () => {
    expect(defaultConfig("master").broker.brokerId).toBe(0);
    expect(defaultConfig("slave").broker.brokerId).toBe(1);
    expect(defaultConfig("slave").broker.brokerRole).toBe("SLAVE");
    expect(defaultConfig("master").broker.brokerRole).toBe("ASYNC_MASTER");
    expect(defaultConfig("standalone").broker.autoCreateTopicEnable).toBe(true);
    expect(defaultConfig("master").broker.autoCreateTopicEnable).toBe(false);
    const c = defaultConfig("namesrv");
    expect(formatHostPort(c.namesrv.listen)).toBe("0.0.0.0:9876");
    expect(formatHostPort(c.namesrv.admin)).toBe("127.0.0.1:9877");
    expect(formatHostPort(c.broker.listen)).toBe("0.0.0.0:10911");
    expect(formatHostPort(c.broker.admin)).toBe("127.0.0.1:10910");
    expect(c.remoting.frameSizeMaxBytes).toBe(16777216);
    expect(getValue(c, "store.flushDiskType")).toBe("ASYNC_FLUSH");
  });

  test("the defaults of every role pass the cross-key rules (except the required namesrvAddr)", () => {
    for (const role of ROLES) {
      const problems = crossCheck(defaultConfig(role)).map((p) => p.key);
      expect(problems).toEqual(role === "master" || role === "slave" ? ["broker.namesrvAddr"] : []);
    }
  });
});

describe("value types", () => {
  const numberDef: KeyDef = { key: "store.diskCriticalRatio", type: { kind: "number", min: 0, max: 10 }, roles: ["master"], doc: "x" };
  const ratio = KEYS.find((d) => d.key === "store.diskMaxUsedSpaceRatio");
  if (ratio === undefined) throw new Error("store.diskMaxUsedSpaceRatio missing");

  test("a number key accepts integers and fractions, written any YAML way", () => {
    expect(checkValue(numberDef, 3, "3")).toEqual({ ok: true, value: 3 });
    expect(checkValue(numberDef, 2.5, "2.5")).toEqual({ ok: true, value: 2.5 });
    expect(checkValue(numberDef, 1000, "1e3")).toEqual({ ok: false, problem: "out of range: must be between 0 and 10, got 1000" });
    expect(checkValue(numberDef, 0.5, ".5")).toEqual({ ok: true, value: 0.5 });
    expect(checkValue(numberDef, Number.NaN, ".nan")).toEqual({ ok: false, problem: "expected a number, got .nan" });
    expect(checkValue(numberDef, false, "false")).toEqual({ ok: false, problem: "expected a number, got false" });
  });

  test("a number key given as a flag", () => {
    expect(checkFlagValue(numberDef, "7")).toEqual({ ok: true, value: 7 });
    expect(checkFlagValue(numberDef, "0.25")).toEqual({ ok: true, value: 0.25 });
    expect(checkFlagValue(numberDef, "1,5")).toEqual({ ok: false, problem: 'expected a number, got "1,5"' });
    expect(checkFlagValue(ratio, "80")).toEqual({
      ok: false,
      problem: "out of range: must be between 0.1 and 0.95, got 80 (a fraction: write 0.8 for 80%)",
    });
    // Only a whole percent whose fraction is in range gets the hint.
    expect(checkFlagValue(ratio, "99")).toEqual({ ok: false, problem: "out of range: must be between 0.1 and 0.95, got 99" });
  });

  test("parseDeleteWhen reads RocketMQ's hours of the day", () => {
    expect(parseDeleteWhen("04")).toEqual([4]);
    expect(parseDeleteWhen("04;16")).toEqual([4, 16]);
    expect(parseDeleteWhen("23;00")).toEqual([23, 0]);
    for (const bad of ["", "4", "004", "24", "04;", ";04", "04;04", "04 ;16", "-1", "aa"]) {
      expect(parseDeleteWhen(bad)).toHaveProperty("invalid");
    }
  });
});

describe("parseHostPort", () => {
  test("accepts host:port, [ipv6]:port and port 0", () => {
    expect(parseHostPort("127.0.0.1:9876")).toEqual({ host: "127.0.0.1", port: 9876 });
    expect(parseHostPort("[::1]:9876")).toEqual({ host: "::1", port: 9876 });
    expect(parseHostPort("localhost:0")).toEqual({ host: "localhost", port: 0 });
    expect(parseHostPort("ns-1.example.com:65535")).toEqual({ host: "ns-1.example.com", port: 65535 });
  });

  test("rejects malformed addresses with a reason", () => {
    for (const bad of ["9876", ":9876", "host:", "host:x", "host:65536", "::1:9876", "[nope]:1", "a b:1", "host:-1"]) {
      expect(parseHostPort(bad)).toHaveProperty("invalid");
    }
    expect(parseHostPort("h:0", 1)).toHaveProperty("invalid");
  });

  test("formatHostPort brackets IPv6 and round-trips", () => {
    for (const s of ["[::1]:1", "10.0.0.1:10911", "example.org:80"]) {
      const hp = parseHostPort(s);
      if ("invalid" in hp) throw new Error(hp.invalid);
      expect(formatHostPort(hp)).toBe(s);
    }
  });
});

describe("portsToBind", () => {
  const ports = (c: Config) => portsToBind(c).map((p) => `${p.key}=${p.hostPort.port}`);

  test("lists each role's ports, HA = listen + 1 and VIP = listen - 2", () => {
    expect(ports(defaultConfig("namesrv"))).toEqual(["namesrv.listen=9876", "namesrv.admin=9877"]);
    const broker = ["broker.listen=10911", "broker.listen=10912", "broker.listen=10909", "broker.admin=10910"];
    expect(ports(defaultConfig("master"))).toEqual(broker);
    expect(ports(defaultConfig("slave"))).toEqual(broker);
    expect(ports(defaultConfig("standalone"))).toEqual(["namesrv.listen=9876", "namesrv.admin=9877", ...broker]);
  });

  test("skips the derived HA and VIP ports when the listen port is 0", () => {
    const c = defaultConfig("master");
    c.broker.listen = { host: "127.0.0.1", port: 0 };
    c.broker.admin = { host: "127.0.0.1", port: 0 };
    expect(ports(c)).toEqual(["broker.listen=0", "broker.admin=0"]);
  });

  test("crossCheck reports two keys binding the same port", () => {
    const c = defaultConfig("master");
    c.broker.namesrvAddr = ["127.0.0.1:9876"];
    c.broker.admin = { host: "127.0.0.1", port: 10912 };
    expect(crossCheck(c)).toEqual([{ key: "broker.admin", problem: "port 10912 (broker admin) is also bound by broker.listen (HA)" }]);
  });
});

describe("store cross-key rules", () => {
  test("diskCriticalRatio above diskMaxUsedSpaceRatio, told from both sides", () => {
    const c = defaultConfig("standalone");
    c.store.diskMaxUsedSpaceRatio = 0.9;
    const [p] = crossCheck(c);
    expect(p?.key).toBe("store.diskCriticalRatio");
    expect(p?.other?.key).toBe("store.diskMaxUsedSpaceRatio");
    c.store.diskCriticalRatio = 0.91;
    expect(crossCheck(c)).toEqual([]);
  });

  test("an IndexFile larger than 2147483647 bytes", () => {
    const c = defaultConfig("standalone");
    c.store.indexNum = Math.floor((2147483647 - 40 - c.store.indexSlotNum * 4) / 20);
    expect(crossCheck(c)).toEqual([]);
    c.store.indexNum += 1;
    expect(crossCheck(c).map((p) => [p.key, p.other?.key])).toEqual([["store.indexNum", "store.indexSlotNum"]]);
  });

  test("store rules are skipped for the name server", () => {
    const c = defaultConfig("namesrv");
    c.store.diskMaxUsedSpaceRatio = 0.95;
    expect(crossCheck(c)).toEqual([]);
  });
});

describe("suggestions", () => {
  test("a swap of two letters is one edit", () => {
    expect(editDistance("brokerNmae", "brokerName")).toBe(1);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("kitten", "sitting")).toBe(3);
  });

  test("closest only suggests plausible typos", () => {
    expect(closest("brokerNmae", ["brokerName", "brokerId"])).toBe("brokerName");
    expect(closest("LISTEN", ["listen", "admin"])).toBe("listen");
    expect(closest("zzzzzz", ["listen", "admin"])).toBeUndefined();
  });
});
