/** plain_acl.yml parsing: RocketMQ's own example file, and every problem at file:line:col. */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AclPerm, parseAclRules, parsePerm, parseResourcePerm, permits } from "./rules.ts";

test("the shipped example (RocketMQ's distribution/conf/plain_acl.yml, commented) parses", () => {
  const r = parseAclRules("plain_acl.yml", readFileSync(join(import.meta.dir, "../../config/plain_acl.yml"), "utf8"));
  if ("errors" in r) throw new Error(r.errors.join("\n"));
  const a = r.accounts.get("RocketMQ")!;
  expect(a.secretKey).toBe("12345678"); // a YAML number, read as its text
  expect(a.admin).toBe(false);
  expect(a.defaultTopicPerm).toBe(AclPerm.DENY);
  expect(a.defaultGroupPerm).toBe(AclPerm.SUB);
  expect(a.perms.get("topicB")).toBe(AclPerm.PUB | AclPerm.SUB);
  expect(a.perms.get("%RETRY%groupA")).toBe(AclPerm.DENY);
  expect(a.white("1.2.3.4")).toBe(false);
  expect(r.accounts.get("rocketmq2")!.admin).toBe(true);
  expect(r.accounts.get("rocketmq2")!.white("192.168.1.7")).toBe(true);
  expect(r.globalWhite.some((m) => m("10.10.103.1"))).toBe(true);
});

test("an empty file is no rules: everybody without a white-listed address is refused", () => {
  const r = parseAclRules("a.yml", "# nothing\n");
  expect("errors" in r ? r.errors : r.accounts.size).toBe(0);
});

test("every problem is reported at its line and column, in file order", () => {
  const text = [
    "globalWhiteRemoteAddresses:",
    "  - 10.*", // 2
    "accounts:",
    "  - accessKey: short", // 4
    "    secretKey: 1234567",
    "    topicPerm: [a=PUB]", // 6: typo
    "    defaultTopicPerm: READ", // 7
    "  - accessKey: goodkey1",
    "    secretKey: goodsecret",
    "    whiteRemoteAddress: 300.1.1.1", // 10
    "    admin: yes please", // 11
    "    groupPerms: [g1=PUB, g2, g3=ALL]", // 12
    "  - accessKey: goodkey1", // 13: twice
    "    secretKey: goodsecret",
    "colour: red", // 15
  ].join("\n");
  const r = parseAclRules("acl.yml", text);
  if (!("errors" in r)) throw new Error("accepted");
  expect(r.errors).toEqual([
    "acl.yml:2:5: globalWhiteRemoteAddresses[0]: 10.*: an IPv4 pattern needs four parts (e.g. 10.*.*.*)",
    "acl.yml:4:16: accounts[0].accessKey: required, longer than 6 characters",
    'acl.yml:6:5: accounts[0].topicPerm: unknown key "topicPerm" (did you mean "topicPerms"?)',
    'acl.yml:7:23: accounts[0].defaultTopicPerm: "READ" is not DENY, PUB, SUB or PUB|SUB',
    "acl.yml:10:25: accounts[1].whiteRemoteAddress: 300.1.1.1 is not an IPv4 or IPv6 address",
    "acl.yml:11:12: accounts[1].admin: expected true or false",
    'acl.yml:12:26: accounts[1].groupPerms[1]: "g2" is not Resource=Perm (e.g. topicA=SUB)',
    'acl.yml:12:30: accounts[1].groupPerms[2]: "ALL" is not DENY, PUB, SUB or PUB|SUB',
    "acl.yml:13:5: accounts[2].accessKey: accessKey goodkey1 is defined twice",
    'acl.yml:15:1: colour: unknown key "colour"',
  ]);
});

test("a YAML syntax error is reported alone, with its position", () => {
  const r = parseAclRules("acl.yml", "accounts:\n  - accessKey: [unclosed\n");
  expect("errors" in r && r.errors.length === 1 && r.errors[0]!.startsWith("acl.yml:")).toBe(true);
});

test("permission words and checks as Java's Permission", () => {
  expect([parsePerm("PUB"), parsePerm(" SUB "), parsePerm("SUB|PUB"), parsePerm("DENY"), parsePerm("pub")]).toEqual([4, 8, 12, 1, undefined]);
  expect(parseResourcePerm("topicA = PUB|SUB")).toEqual(["topicA", 12]);
  expect(permits(AclPerm.PUB, AclPerm.PUB | AclPerm.SUB)).toBe(true);
  expect(permits(AclPerm.PUB, AclPerm.SUB)).toBe(false);
  expect(permits(AclPerm.SUB, AclPerm.DENY | AclPerm.SUB)).toBe(false);
  expect(permits(AclPerm.ANY, AclPerm.SUB)).toBe(true);
});
