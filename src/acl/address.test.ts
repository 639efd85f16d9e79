/** Address patterns against the verdicts of Java's RemoteAddressStrategyFactory (test/golden/acl/vectors.json). */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expandIp, parseAddressPattern, remoteHost } from "./address.ts";

interface AddressVector {
  pattern: string;
  error?: string;
  matches?: Record<string, boolean>;
}

const vectors = JSON.parse(readFileSync(join(import.meta.dir, "../../test/golden/acl/vectors.json"), "utf8")) as { addresses: AddressVector[] };

describe("address patterns = RocketMQ 4.9.8 RemoteAddressStrategyFactory", () => {
  for (const v of vectors.addresses) {
    test(`${JSON.stringify(v.pattern)} ${v.error !== undefined ? "is refused" : "matches as Java does"}`, () => {
      const m = parseAddressPattern(v.pattern);
      if (v.error !== undefined) {
        expect(typeof m).toBe("object");
        return;
      }
      if (typeof m !== "function") throw new Error(`refused: ${m.invalid}`);
      for (const [addr, want] of Object.entries(v.matches!)) expect([addr, m(addr)]).toEqual([addr, want]);
    });
  }
});

test("expandIp widens :: and pads groups, as AclUtils.expandIP", () => {
  expect(expandIp("::1", 8)).toBe("0000:0000:0000:0000:0000:0000:0000:0001");
  expect(expandIp("2001:db8::ff", 8)).toBe("2001:0DB8:0000:0000:0000:0000:0000:00FF");
});

test("remoteHost drops the port, and the brackets of an IPv6 address", () => {
  expect(remoteHost("10.0.0.1:4567")).toBe("10.0.0.1");
  expect(remoteHost("[::1]:4567")).toBe("::1");
  expect(remoteHost("10.0.0.1")).toBe("10.0.0.1");
});
