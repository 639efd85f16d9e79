import { describe, expect, test } from "bun:test";
import {
  closest,
  crossCheck,
  defaultConfig,
  editDistance,
  formatHostPort,
  getValue,
  KEYS,
  parseHostPort,
  portsToBind,
  ROLES,
  type Config,
} from "./schema.ts";

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
    }
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
    expect(formatHostPort(c.namesrv.admin)).toBe("0.0.0.0:9877");
    expect(formatHostPort(c.broker.listen)).toBe("0.0.0.0:10911");
    expect(formatHostPort(c.broker.admin)).toBe("0.0.0.0:10910");
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
