/**
 * The validator against the verdicts of Java's PlainAccessValidator over the same plain_acl.yml
 * (test/golden/acl/vectors.json, "validator"), and the check order of validator.ts step by step.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { signRequest } from "../protocol/acl-signature.ts";
import { createRequest, type RemotingCommand } from "../remoting/command.ts";
import { RequestCode } from "../remoting/request-code.ts";
import { remoteHost } from "./address.ts";
import { parseAclRules, type AclRules } from "./rules.ts";
import { checkAccess } from "./validator.ts";

interface Case {
  name: string;
  remote: string;
  code: number;
  extFields?: Record<string, string> | null;
  bodyBase64?: string | null;
  allowed: boolean;
  error?: string;
}

const golden = JSON.parse(readFileSync(join(import.meta.dir, "../../test/golden/acl/vectors.json"), "utf8")) as {
  validator: { plainAclYml: string; cases: Case[] };
};

function rulesOf(text: string): AclRules {
  const r = parseAclRules("plain_acl.yml", text);
  if ("errors" in r) throw new Error(r.errors.join("\n"));
  return r;
}

const JAVA_PREFIX = "org.apache.rocketmq.acl.common.AclException: ";

describe("verdicts = RocketMQ 4.9.8 PlainAccessValidator (golden)", () => {
  const rules = rulesOf(golden.validator.plainAclYml);
  for (const c of golden.validator.cases) {
    test(c.name, () => {
      const cmd = createRequest(c.code, c.extFields ?? undefined, c.bodyBase64 ? new Uint8Array(Buffer.from(c.bodyBase64, "base64")) : undefined);
      const denial = checkAccess(rules, remoteHost(c.remote), cmd);
      expect(denial?.message).toBe(c.allowed ? undefined : c.error!.slice(JAVA_PREFIX.length));
    });
  }
});

describe("check order and resources", () => {
  const rules = rulesOf(`
globalWhiteRemoteAddresses: [10.0.0.*]
accounts:
  - accessKey: normal-ak
    secretKey: normal-sk
    whiteRemoteAddress: 192.168.9.9
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
    topicPerms: [pubOnly=PUB, denied=DENY]
    groupPerms: [gDeny=DENY]
  - accessKey: admin-ak
    secretKey: admin-sk
    admin: true
    topicPerms: [denied=DENY]
`);
  const signed = (code: number, ext: Record<string, string>, ak = "normal-ak", sk = "normal-sk", body?: Uint8Array): RemotingCommand => {
    const cmd = createRequest(code, { ...ext }, body);
    signRequest(cmd, { accessKey: ak, secretKey: sk });
    return cmd;
  };
  const check = (cmd: RemotingCommand, host = "172.16.0.1") => checkAccess(rules, host, cmd)?.message;

  test("the global white list comes before everything, the account's white list before the signature", () => {
    expect(check(createRequest(RequestCode.UPDATE_AND_CREATE_TOPIC, { topic: "t" }), "10.0.0.7")).toBeUndefined();
    const bad = signed(RequestCode.UPDATE_AND_CREATE_TOPIC, { topic: "t" });
    bad.extFields!.Signature = "forged";
    expect(check(bad, "192.168.9.9")).toBeUndefined();
    expect(check(bad)).toBe("Check signature failed for accessKey=normal-ak");
  });

  test("an unknown key is refused before its signature is looked at; a changed body breaks the signature", () => {
    expect(check(signed(RequestCode.PULL_MESSAGE, { topic: "t" }, "nobody-ak", "x"))).toBe("No acl config for nobody-ak");
    const cmd = signed(RequestCode.SEND_MESSAGE_V2, { a: "g", b: "pubOnly" }, undefined, undefined, new Uint8Array([1, 2]));
    expect(check(cmd)).toBeUndefined();
    cmd.body = new Uint8Array([1, 3]);
    expect(check(cmd)).toBe("Check signature failed for accessKey=normal-ak");
  });

  test("admin-only codes, before resources; an admin without listed perms may do anything", () => {
    for (const code of [17, 25, 215, 200, 207, 50, 51, 52, 53])
      expect(check(signed(code, { topic: "t" }))).toContain("Need admin permission for request code=");
    expect(check(signed(RequestCode.UPDATE_AND_CREATE_TOPIC, { topic: "t" }, "admin-ak", "admin-sk"))).toBeUndefined();
    // An admin with some perms listed is held to them.
    expect(check(signed(RequestCode.SEND_MESSAGE, { topic: "denied", group: "g" }, "admin-ak", "admin-sk"))).toBe(
      "No default permission for topic:denied",
    );
  });

  test("resources per request code, %RETRY% groups, defaults", () => {
    expect(check(signed(RequestCode.SEND_MESSAGE, { topic: "other", group: "g" }))).toBe("No default permission for topic:other");
    expect(check(signed(RequestCode.SEND_MESSAGE, { topic: "pubOnly", group: "g" }))).toBeUndefined();
    expect(check(signed(RequestCode.SEND_MESSAGE_V2, { b: "%RETRY%gDeny", a: "gDeny" }))).toBe("No default permission for group:gDeny");
    expect(check(signed(RequestCode.CONSUMER_SEND_MSG_BACK, { group: "gDeny" }))).toBe("No default permission for group:gDeny");
    expect(check(signed(RequestCode.PULL_MESSAGE, { topic: "pubOnly", consumerGroup: "g" }))).toBe("No default permission for topic:pubOnly");
    expect(check(signed(RequestCode.QUERY_MESSAGE, { topic: "denied" }))).toBe("No default permission for topic:denied");
    expect(check(signed(RequestCode.UNREGISTER_CLIENT, { clientID: "c", consumerGroup: "gDeny" }))).toBe("No default permission for group:gDeny");
    expect(check(signed(RequestCode.GET_CONSUMER_LIST_BY_GROUP, { consumerGroup: "gDeny" }))).toBe("No default permission for group:gDeny");
    expect(check(signed(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: "g", topic: "denied" }))).toBe("No default permission for topic:denied");
    // As on a Java 4.9 broker: a signature, but no resource permission.
    expect(check(signed(RequestCode.SEND_BATCH_MESSAGE, { a: "g", b: "denied" }))).toBeUndefined();
    expect(check(signed(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: "gDeny", topic: "denied" }))).toBeUndefined();
  });

  test("5.x POP requests need SUB on the topic (the one a POP retry topic names) and on the group; setConsumeMode is admin-only", () => {
    for (const code of [RequestCode.POP_MESSAGE, RequestCode.PEEK_MESSAGE, RequestCode.NOTIFICATION, RequestCode.ACK_MESSAGE, RequestCode.CHANGE_MESSAGE_INVISIBLETIME]) {
      expect(check(signed(code, { consumerGroup: "g", topic: "ok" }))).toBeUndefined();
      expect(check(signed(code, { consumerGroup: "g", topic: "denied" }))).toBe("No default permission for topic:denied");
      expect(check(signed(code, { consumerGroup: "gDeny", topic: "ok" }))).toBe("No default permission for group:gDeny");
    }
    // An ack of a retried message names the POP retry topic: the topic it retries is checked.
    expect(check(signed(RequestCode.ACK_MESSAGE, { consumerGroup: "g", topic: "%RETRY%g_denied" }))).toBe("No default permission for topic:denied");
    const query = (topic: string) => new TextEncoder().encode(JSON.stringify({ topic, consumerGroup: "g", clientId: "c", strategyName: "AVG", messageModel: "CLUSTERING" }));
    expect(check(signed(RequestCode.QUERY_ASSIGNMENT, {}, undefined, undefined, query("ok")))).toBeUndefined();
    expect(check(signed(RequestCode.QUERY_ASSIGNMENT, {}, undefined, undefined, query("denied")))).toBe("No default permission for topic:denied");
    expect(checkAccess(rules, "172.16.0.1", signed(RequestCode.SET_MESSAGE_REQUEST_MODE, {}))?.reason).toBe("not-admin");
  });

  test("a heartbeat names its consumer groups and subscribed topics; a body that is not JSON is refused", () => {
    const body = (topic: string) =>
      new TextEncoder().encode(JSON.stringify({ clientID: "c", consumerDataSet: [{ groupName: "g", subscriptionDataSet: [{ topic }] }] }));
    expect(check(signed(RequestCode.HEART_BEAT, {}, undefined, undefined, body("ok")))).toBeUndefined();
    expect(check(signed(RequestCode.HEART_BEAT, {}, undefined, undefined, body("denied")))).toBe("No default permission for topic:denied");
    expect(check(signed(RequestCode.HEART_BEAT, {}, undefined, undefined, new Uint8Array([0xff])))).toBe("the heartbeat body is not JSON");
  });

  test("namesrv scope: only write codes are checked, and they are admin-only", () => {
    expect(checkAccess(rules, "172.16.0.1", createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: "t" }), "namesrv")).toBeUndefined();
    expect(checkAccess(rules, "172.16.0.1", signed(RequestCode.PUT_KV_CONFIG, { namespace: "n", key: "k", value: "v" }), "namesrv")?.reason).toBe(
      "not-admin",
    );
    const admin = signed(RequestCode.PUT_KV_CONFIG, { namespace: "n", key: "k", value: "v" }, "admin-ak", "admin-sk");
    expect(checkAccess(rules, "172.16.0.1", admin, "namesrv")).toBeUndefined();
    expect(checkAccess(rules, "172.16.0.1", createRequest(RequestCode.REGISTER_BROKER, {}), "namesrv")?.reason).toBe("no-access-key");
  });
});
