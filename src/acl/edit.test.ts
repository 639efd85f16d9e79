/** plain_acl.yml rewrites of the mqadmin ACL requests: Java's field rules, dataVersion bumps, refusals that change nothing. */
import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deleteAccount, javaSplit, rewriteAclFile, setGlobalWhite, upsertAccount, type AclEdit } from "./edit.ts";
import { AclPerm, parseAclRules, type AclRules } from "./rules.ts";

const FILE = `# who may do what
globalWhiteRemoteAddresses: [10.10.103.*] # office
accounts:
  # the producers
  - accessKey: "RocketMQ"
    secretKey: 12345678
    whiteRemoteAddress: 192.168.0.*
    admin: false
    defaultTopicPerm: DENY
    topicPerms: [topicA=PUB]
  - accessKey: rocketmq2
    secretKey: '12345678'
    admin: true
dataVersion:
  - counter: 7
    timestamp: 1600000000000
`;
const NOW = 1_700_000_000_000;

function text(e: AclEdit): string {
  if ("invalid" in e) throw new Error(e.invalid);
  return e.text;
}
function rules(t: string): AclRules {
  const r = parseAclRules("plain_acl.yml", t);
  if ("errors" in r) throw new Error(r.errors.join("\n"));
  return r;
}

test("a new account is appended with the fields the request carries, in Java's order; comments stay; dataVersion +1 at now", () => {
  const out = upsertAccount(
    "f",
    FILE,
    {
      accessKey: "newuser1",
      secretKey: "newsecret1",
      admin: false,
      defaultTopicPerm: "SUB",
      topicPerms: ["t1=PUB", "t2=PUB|SUB"],
      groupPerms: ["g1=SUB"],
    },
    NOW,
  );
  const t = text(out);
  expect(t).toContain("# who may do what");
  expect(t).toContain("# the producers");
  expect(t).toContain("globalWhiteRemoteAddresses: [10.10.103.*] # office");
  expect(t).toContain(
    "  - accessKey: newuser1\n    secretKey: newsecret1\n    admin: false\n    defaultTopicPerm: SUB\n    topicPerms:\n      - t1=PUB\n      - t2=PUB|SUB\n    groupPerms:\n      - g1=SUB\n",
  );
  expect(t).toContain(`dataVersion:\n  - counter: 8\n    timestamp: ${NOW}\n`);
  expect("dataVersion" in out && out.dataVersion).toEqual({ counter: 8, timestamp: NOW });
  const r = rules(t);
  expect([...r.accounts.keys()]).toEqual(["RocketMQ", "rocketmq2", "newuser1"]);
  const a = r.accounts.get("newuser1")!;
  expect([a.admin, a.defaultTopicPerm, a.defaultGroupPerm]).toEqual([false, AclPerm.SUB, AclPerm.DENY]);
  expect([...a.perms]).toEqual([
    ["%RETRY%g1", AclPerm.SUB],
    ["t1", AclPerm.PUB],
    ["t2", AclPerm.PUB | AclPerm.SUB],
  ]);
});

test("an update sets what the request carries, keeps what it leaves out, and keeps the account in its place", () => {
  const t = text(upsertAccount("f", FILE, { accessKey: "RocketMQ", secretKey: "87654321", admin: true, topicPerms: ["topicB=SUB"] }, NOW));
  const r = rules(t);
  expect([...r.accounts.keys()]).toEqual(["RocketMQ", "rocketmq2"]);
  const a = r.accounts.get("RocketMQ")!;
  expect([a.secretKey, a.admin, a.whiteRemoteAddress, a.defaultTopicPerm]).toEqual(["87654321", true, "192.168.0.*", AclPerm.DENY]);
  expect([...a.perms]).toEqual([["topicB", AclPerm.SUB]]);
  // A one-line list stays one line; a numeric-looking secret is quoted so it stays a string.
  expect(t).toContain("    topicPerms: [topicB=SUB]\n");
  expect(t).toContain('secretKey: "87654321"');
  expect(r.dataVersion.counter).toBe(8);
  // whiteRemoteAddress present but empty is written (Java: not null), and then matches nobody.
  const blank = rules(text(upsertAccount("f", t, { accessKey: "RocketMQ", secretKey: "87654321", admin: false, whiteRemoteAddress: "" }, NOW + 1)));
  expect(blank.accounts.get("RocketMQ")!.whiteRemoteAddress).toBe("");
  expect(blank.accounts.get("RocketMQ")!.white("192.168.0.1")).toBe(false);
  expect(blank.dataVersion).toEqual({ counter: 9, timestamp: NOW + 1 });
});

test("delete removes the account; an unknown accessKey is refused", () => {
  const r = rules(text(deleteAccount("f", FILE, "rocketmq2", NOW)));
  expect([...r.accounts.keys()]).toEqual(["RocketMQ"]);
  expect(r.dataVersion.counter).toBe(8);
  expect(deleteAccount("f", FILE, "nobody123", NOW)).toEqual({ invalid: "no account has accessKey nobody123" });
  expect(deleteAccount("f", "", "nobody123", NOW)).toEqual({ invalid: "no account has accessKey nobody123" });
});

test("the global white list is replaced; an empty file gets one; a file without dataVersion starts at 1", () => {
  const t = text(setGlobalWhite("f", FILE, ["1.2.3.4", "10.*.*.*"], NOW));
  expect(t).toContain("globalWhiteRemoteAddresses: [1.2.3.4, 10.*.*.*] # office\n");
  expect(rules(t).globalWhite.map((m) => m("10.9.9.9"))).toEqual([false, true]);
  const fresh = text(setGlobalWhite("f", "", ["127.0.0.1"], NOW));
  expect(fresh).toBe(`globalWhiteRemoteAddresses:\n  - 127.0.0.1\ndataVersion:\n  - counter: 1\n    timestamp: ${NOW}\n`);
});

test("bad values are refused, naming the field and never the secret", () => {
  const base = { accessKey: "newuser1", secretKey: "topsecret-1", admin: false };
  const cases: [Parameters<typeof upsertAccount>[2], string][] = [
    [{ ...base, accessKey: "short" }, "accessKey is required and must be longer than 6 characters"],
    [{ ...base, secretKey: "123456" }, "secretKey is required and must be longer than 6 characters"],
    [{ admin: false }, "accessKey is required and must be longer than 6 characters"],
    [{ ...base, defaultTopicPerm: "WRITE" }, 'defaultTopicPerm: "WRITE" is not DENY, PUB, SUB or PUB|SUB'],
    [{ ...base, topicPerms: ["topicA"] }, 'topicPerms: "topicA" is not Resource=Perm (e.g. topicA=SUB)'],
    [{ ...base, groupPerms: ["g=ALL"] }, 'groupPerms: "ALL" is not DENY, PUB, SUB or PUB|SUB'],
    [{ ...base, whiteRemoteAddress: "10.*" }, "whiteRemoteAddress: 10.*: an IPv4 pattern needs four parts (e.g. 10.*.*.*)"],
  ];
  for (const [change, why] of cases) {
    const out = upsertAccount("f", FILE, change, NOW);
    expect(out).toEqual({ invalid: why });
  }
  expect(setGlobalWhite("f", FILE, ["10.0.0.1", "300.1.1.1"], NOW)).toEqual({
    invalid: "globalWhiteRemoteAddresses: 300.1.1.1 is not an IPv4 or IPv6 address",
  });
  // A problem elsewhere in the file: the new text would not load, so it is refused with the file's problems.
  const broken = FILE.replace("admin: true", "admin: yes");
  const out = upsertAccount("f", broken, base, NOW);
  expect("invalid" in out && out.invalid).toBe("the ACL file would not load: f:13:12: accounts[1].admin: expected true or false");
  expect(upsertAccount("f", "accounts: [", base, NOW)).toMatchObject({ invalid: expect.stringContaining("not valid YAML") });
});

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

test("rewriteAclFile writes the accepted text atomically and leaves the file untouched on a refusal", () => {
  const dir = mkdtempSync(join(tmpdir(), "acl-edit-"));
  dirs.push(dir);
  const file = join(dir, "plain_acl.yml");
  writeFileSync(file, FILE);
  const bad = rewriteAclFile(file, (t) => setGlobalWhite(file, t, ["nope"], NOW));
  expect("invalid" in bad).toBe(true);
  expect(readFileSync(file, "utf8")).toBe(FILE);
  expect(existsSync(`${file}.bak`)).toBe(false);
  const ok = rewriteAclFile(file, (t) => deleteAccount(file, t, "rocketmq2", NOW));
  expect(readFileSync(file, "utf8")).toBe(text(ok));
  expect(readFileSync(`${file}.bak`, "utf8")).toBe(FILE);
  expect(rewriteAclFile(join(dir, "none.yml"), (t) => deleteAccount(file, t, "x", NOW))).toMatchObject({
    invalid: expect.stringContaining("cannot read"),
  });
});

test("javaSplit drops trailing empty parts, as Java's String.split", () => {
  expect(javaSplit("a,b", ",")).toEqual(["a", "b"]);
  expect(javaSplit("a,,b,,", ",")).toEqual(["a", "", "b"]);
  expect(javaSplit("", ",")).toEqual([""]);
  expect(javaSplit(",", ",")).toEqual([]);
});
