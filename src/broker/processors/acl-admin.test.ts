/**
 * The ACL admin requests 50–54 (./acl-admin.ts, docs/PROTOCOL.md §3.19) through the in-process
 * broker with broker.aclEnable and a plain_acl.yml in the fixture's dir: an admin account's change
 * is written to the file and in force for the very next request; a non-admin or unsigned request
 * is refused by the ACL hook and the file stays as it was; 54 is not served; with ACL off each
 * request says so with Java's failure code. test/integration/acl-admin.test.ts runs the same rules
 * against the compiled binary.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAclRules } from "../../acl/rules.ts";
import { signRequest, type AclCredentials } from "../../protocol/acl-signature.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import { InProcessBroker, sendV2Request } from "../test-support.ts";

const ADMIN: AclCredentials = { accessKey: "adminuser", secretKey: "adminsecret" };
const NORMAL: AclCredentials = { accessKey: "normaluser", secretKey: "normalsecret" };
const NEW: AclCredentials = { accessKey: "newuser1", secretKey: "newsecret1" };
const ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException: ";
const ACL_OFF = "The broker does not enable acl: set broker.aclEnable and broker.aclFile";

const ACL_YML = `# in-process ACL file
accounts:
  - accessKey: adminuser
    secretKey: adminsecret
    admin: true
  - accessKey: normaluser
    secretKey: normalsecret
    defaultTopicPerm: PUB
    defaultGroupPerm: SUB
`;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A broker whose store dir holds plain_acl.yml (the dir is the test's, removed after it). */
function start(aclEnable = true): { b: InProcessBroker; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "rocketbun-acl-admin-"));
  dirs.push(dir);
  const file = join(dir, "plain_acl.yml");
  writeFileSync(file, ACL_YML);
  return { b: InProcessBroker.start({ dir, broker: { aclEnable, aclFile: file, autoCreateTopicEnable: true } }), file };
}

function signed(code: number, ext: Record<string, string>, who: AclCredentials | undefined): RemotingCommand {
  const cmd = createRequest(code, { ...ext });
  if (who) signRequest(cmd, who);
  return cmd;
}

const send = (topic: string, who: AclCredentials) => {
  const cmd = sendV2Request(topic, "hello", { producerGroup: "AclPG" });
  signRequest(cmd, who);
  return cmd;
};
const answer = (res: RemotingCommand) => ({ code: res.code, remark: res.remark ?? null });

function accounts(file: string): string[] {
  const rules = parseAclRules(file, readFileSync(file, "utf8"));
  if ("errors" in rules) throw new Error(rules.errors.join("\n"));
  return [...rules.accounts.keys()];
}

describe("ACL admin with ACL on", () => {
  test("an admin account creates, updates and deletes an account: each change is in the file and in force at once", async () => {
    const { b, file } = start();
    await using _ = b;
    expect(answer(await b.call(send("AclT", NEW)))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: `${ACL_EXCEPTION}No acl config for newuser1` });

    const create = { accessKey: NEW.accessKey, secretKey: NEW.secretKey, admin: "false", topicPerms: "AclT=PUB" };
    expect(answer(await b.call(signed(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, create, ADMIN)))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(readFileSync(file, "utf8")).toStartWith("# in-process ACL file\n");
    expect(accounts(file)).toEqual(["adminuser", "normaluser", "newuser1"]);
    expect((await b.call(send("AclT", NEW))).code).toBe(ResponseCode.SUCCESS);
    expect((await b.call(send("OtherT", NEW))).remark).toBe(`${ACL_EXCEPTION}No default permission for topic:OtherT`);

    await b.advance(5000);
    const update = { accessKey: NEW.accessKey, secretKey: NEW.secretKey, admin: "false", defaultTopicPerm: "PUB" };
    expect((await b.call(signed(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, update, ADMIN))).code).toBe(ResponseCode.SUCCESS);
    expect((await b.call(send("OtherT", NEW))).code).toBe(ResponseCode.SUCCESS);

    const info = await b.call(signed(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}, ADMIN));
    expect(info.code).toBe(ResponseCode.SUCCESS);
    const ext = info.extFields!;
    const s = b.controller.info.settings();
    expect([ext.brokerName, ext.clusterName, ext.brokerAddr]).toEqual([s.brokerName, s.clusterName, b.addr]);
    // Two changes; the last one's time is the broker's (virtual) clock.
    const version = JSON.parse(ext.version!) as { counter: number; timestamp: number };
    expect(version).toEqual({ counter: 2, timestamp: b.sim.now });
    expect(JSON.parse(ext.allAclFileVersion!)).toEqual({ [file]: version });

    expect((await b.call(signed(RequestCode.DELETE_ACL_CONFIG, { accessKey: NEW.accessKey }, ADMIN))).code).toBe(ResponseCode.SUCCESS);
    expect(accounts(file)).toEqual(["adminuser", "normaluser"]);
    expect((await b.call(send("AclT", NEW))).remark).toBe(`${ACL_EXCEPTION}No acl config for newuser1`);
    expect(answer(await b.call(signed(RequestCode.DELETE_ACL_CONFIG, { accessKey: NEW.accessKey }, ADMIN)))).toEqual({
      code: ResponseCode.DELETE_ACL_CONFIG_FAILED,
      remark: "no account has accessKey newuser1",
    });
  });

  test("the global white list: an unsigned request from a white-listed address passes; a bad pattern or another file is refused", async () => {
    const { b, file } = start();
    await using _ = b;
    const unsigned = () => b.call(createRequest(RequestCode.GET_ALL_TOPIC_CONFIG, {}));
    expect((await unsigned()).remark).toBe(`${ACL_EXCEPTION}No accessKey is configured`);

    const white = (ext: Record<string, string>) => b.call(signed(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ext, ADMIN));
    expect(answer(await white({ globalWhiteAddrs: "10.*" }))).toEqual({
      code: ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
      remark: "globalWhiteRemoteAddresses: 10.*: an IPv4 pattern needs four parts (e.g. 10.*.*.*)",
    });
    const elsewhere = await white({ globalWhiteAddrs: "127.0.0.1", aclFileFullPath: "/etc/other.yml" });
    expect(elsewhere.code).toBe(ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED);
    expect(elsewhere.remark).toBe(`aclFileFullPath /etc/other.yml is not the broker's ACL file; this broker enforces ${file} only`);
    expect(answer(await white({}))).toEqual({ code: ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, remark: "globalWhiteAddrs is required" });
    expect(readFileSync(file, "utf8")).toBe(ACL_YML);
    expect((await unsigned()).code).toBe(ResponseCode.SYSTEM_ERROR);

    expect((await white({ globalWhiteAddrs: "10.1.1.1,127.0.0.1", aclFileFullPath: file })).code).toBe(ResponseCode.SUCCESS);
    expect(readFileSync(file, "utf8")).toContain("globalWhiteRemoteAddresses:\n  - 10.1.1.1\n  - 127.0.0.1\n");
    expect((await unsigned()).code).toBe(ResponseCode.SUCCESS);
    // Taken off the list, the unsigned peer is refused again at once.
    expect((await white({ globalWhiteAddrs: "10.1.1.1" })).code).toBe(ResponseCode.SUCCESS);
    expect((await unsigned()).remark).toBe(`${ACL_EXCEPTION}No accessKey is configured`);
  });

  test("a non-admin or unsigned request for 50–53 is refused and the file is unchanged; a bad account is refused; 54 is not served", async () => {
    const { b, file } = start();
    await using _ = b;
    const requests: [number, Record<string, string>][] = [
      [RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, { accessKey: NORMAL.accessKey, secretKey: NORMAL.secretKey, admin: "true" }],
      [RequestCode.DELETE_ACL_CONFIG, { accessKey: ADMIN.accessKey }],
      [RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}],
      [RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, { globalWhiteAddrs: "*" }],
    ];
    for (const [code, ext] of requests) {
      expect(answer(await b.call(signed(code, ext, NORMAL)))).toEqual({
        code: ResponseCode.SYSTEM_ERROR,
        remark: `${ACL_EXCEPTION}Need admin permission for request code=${code}, but accessKey=normaluser is not`,
      });
      expect((await b.call(signed(code, ext, undefined))).remark).toBe(`${ACL_EXCEPTION}No accessKey is configured`);
    }
    expect(readFileSync(file, "utf8")).toBe(ACL_YML);
    // The non-admin account is still what it was: it may send, not administer.
    expect((await b.call(send("AnyT", NORMAL))).code).toBe(ResponseCode.SUCCESS);

    const short = await b.call(signed(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, { accessKey: "abc", secretKey: "topsecret-2", admin: "false" }, ADMIN));
    expect(answer(short)).toEqual({
      code: ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED,
      remark: "accessKey is required and must be longer than 6 characters",
    });
    expect(readFileSync(file, "utf8")).toBe(ACL_YML);
    const removed = await b.call(signed(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}, ADMIN));
    expect(removed.code).toBe(ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
    expect(removed.remark).toContain("removed in RocketMQ 4.9.8");
  });
});

test("the other processors' admin-only writes: refused to a non-admin account (nothing changes), done for an admin", async () => {
  const { b } = start();
  await using _ = b;
  const enc = new TextEncoder();
  const group = (who: AclCredentials) => {
    const cmd = createRequest(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, enc.encode(JSON.stringify({ groupName: "AclG" })));
    signRequest(cmd, who);
    return cmd;
  };
  const topic = (who: AclCredentials) =>
    signed(RequestCode.UPDATE_AND_CREATE_TOPIC, { topic: "AclNewT", readQueueNums: "1", writeQueueNums: "1", perm: "6" }, who);
  const deleteGroup = (who: AclCredentials) => signed(RequestCode.DELETE_SUBSCRIPTIONGROUP, { groupName: "AclG" }, who);
  for (const [code, cmd] of [
    [RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, group(NORMAL)],
    [RequestCode.UPDATE_AND_CREATE_TOPIC, topic(NORMAL)],
  ] as const) {
    expect(answer(await b.call(cmd))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: `${ACL_EXCEPTION}Need admin permission for request code=${code}, but accessKey=normaluser is not`,
    });
  }
  expect([b.controller.info.group("AclG"), b.controller.info.topic("AclNewT")]).toEqual([undefined, undefined]);
  expect((await b.call(group(ADMIN))).code).toBe(ResponseCode.SUCCESS);
  expect((await b.call(topic(ADMIN))).code).toBe(ResponseCode.SUCCESS);
  expect(b.controller.info.group("AclG")?.groupName).toBe("AclG");
  expect(b.controller.info.topic("AclNewT")?.writeQueueNums).toBe(1);
  expect((await b.call(deleteGroup(NORMAL))).code).toBe(ResponseCode.SYSTEM_ERROR);
  expect(b.controller.info.group("AclG")?.groupName).toBe("AclG");
  expect((await b.call(deleteGroup(ADMIN))).code).toBe(ResponseCode.SUCCESS);
  expect(b.controller.info.group("AclG")).toBeUndefined();
});

test("with ACL off each request says that ACL is off, with Java's failure code; the file is not touched", async () => {
  const { b, file } = start(false);
  await using _ = b;
  const expected: [number, number][] = [
    [RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED],
    [RequestCode.DELETE_ACL_CONFIG, ResponseCode.DELETE_ACL_CONFIG_FAILED],
    [RequestCode.GET_BROKER_CLUSTER_ACL_INFO, ResponseCode.SYSTEM_ERROR],
    [RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED],
  ];
  for (const [code, failed] of expected) {
    const res = await b.call(signed(code, { accessKey: NEW.accessKey, secretKey: NEW.secretKey, globalWhiteAddrs: "*" }, ADMIN));
    expect(answer(res)).toEqual({ code: failed, remark: ACL_OFF });
  }
  expect(readFileSync(file, "utf8")).toBe(ACL_YML);
});
