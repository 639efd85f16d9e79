/**
 * The ACL admin requests (docs/PROTOCOL.md §3.19) against the compiled binary with broker.aclEnable:
 * signed raw requests by an admin account change plain_acl.yml and the change is in force for the
 * very next request; a non-admin account is refused and the file stays as it was; code 54 is not
 * served; with ACL off the requests say so.
 */
import { afterEach, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseAclRules } from "../../src/acl/rules.ts";
import { signRequest, type AclCredentials } from "../../src/protocol/acl-signature.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingClient, type RemotingCommand } from "../../src/remoting/index.ts";
import { startRocketbun, tempDir } from "../harness/binary.ts";
import { newClient } from "../harness/wire.ts";

const TIMEOUT_MS = 5000;
const ADMIN: AclCredentials = { accessKey: "adminuser", secretKey: "adminsecret" };
const NORMAL: AclCredentials = { accessKey: "normaluser", secretKey: "normalsecret" };
const NEW: AclCredentials = { accessKey: "newuser1", secretKey: "newsecret1" };

const ACL_YML = `# RocketBun ACL test file
accounts:
  - accessKey: adminuser
    secretKey: adminsecret
    admin: true
  - accessKey: normaluser
    secretKey: normalsecret
    defaultTopicPerm: PUB
    defaultGroupPerm: SUB
`;

const config = (aclEnable: boolean, aclFile: string) => `logLevel: info
namesrv:
  listen: 127.0.0.1:0
  admin: 127.0.0.1:0
broker:
  listen: 127.0.0.1:0
  brokerName: broker-acl
  brokerClusterName: AclCluster
  brokerIP1: 127.0.0.1
  autoCreateTopicEnable: true
  aclEnable: ${aclEnable}
  aclFile: ${aclFile}
`;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(aclEnable = true): Promise<{ addr: string; file: string; client: RemotingClient }> {
  const dir = tempDir("acl-admin-");
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "plain_acl.yml");
  writeFileSync(file, ACL_YML);
  const proc = await startRocketbun({ role: "standalone", dir, configYaml: config(aclEnable, file) });
  cleanups.push(() => proc.stop().then(() => undefined));
  const client = newClient();
  cleanups.push(() => client.close());
  return { addr: `127.0.0.1:${proc.ports.broker}`, file, client };
}

function signed(code: number, ext: Record<string, string>, who: AclCredentials | undefined, body?: Uint8Array): RemotingCommand {
  const cmd = createRequest(code, { ...ext }, body);
  if (who) signRequest(cmd, who);
  return cmd;
}

function send(topic: string, who: AclCredentials): RemotingCommand {
  const ext = { a: "AclPG", b: topic, c: "TBW102", d: "4", e: "0", f: "0", g: String(Date.now()), h: "0", i: "", j: "0", k: "false" };
  return signed(RequestCode.SEND_MESSAGE_V2, ext, who, new TextEncoder().encode("hello"));
}

const createAccount = (who: AclCredentials, ext: Record<string, string>) => signed(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, ext, who);

test("an admin account creates, updates and deletes an account; each change is in the file and in force at once", async () => {
  const { addr, file, client } = await start();
  const call = (cmd: RemotingCommand) => client.invoke(addr, cmd, TIMEOUT_MS);
  expect((await call(send("AclT", NEW))).remark).toBe("org.apache.rocketmq.acl.common.AclException: No acl config for newuser1");

  const created = await call(createAccount(ADMIN, { accessKey: NEW.accessKey, secretKey: NEW.secretKey, admin: "false", topicPerms: "AclT=PUB" }));
  expect([created.code, created.remark]).toEqual([ResponseCode.SUCCESS, undefined]);
  const text = readFileSync(file, "utf8");
  expect(text).toStartWith("# RocketBun ACL test file\n");
  const rules = parseAclRules(file, text);
  if ("errors" in rules) throw new Error(rules.errors.join("\n"));
  expect([...rules.accounts.keys()]).toEqual(["adminuser", "normaluser", "newuser1"]);
  expect(rules.dataVersion.counter).toBe(1);
  expect((await call(send("AclT", NEW))).code).toBe(ResponseCode.SUCCESS);
  expect((await call(send("OtherT", NEW))).remark).toBe("org.apache.rocketmq.acl.common.AclException: No default permission for topic:OtherT");

  const updated = await call(createAccount(ADMIN, { accessKey: NEW.accessKey, secretKey: NEW.secretKey, admin: "false", defaultTopicPerm: "PUB" }));
  expect(updated.code).toBe(ResponseCode.SUCCESS);
  expect((await call(send("OtherT", NEW))).code).toBe(ResponseCode.SUCCESS);

  const version = await call(signed(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}, ADMIN));
  expect(version.code).toBe(ResponseCode.SUCCESS);
  const ext = version.extFields!;
  expect([ext.brokerName, ext.clusterName, ext.brokerAddr]).toEqual(["broker-acl", "AclCluster", addr]);
  const v = JSON.parse(ext.version!) as { counter: number; timestamp: number };
  expect(v.counter).toBe(2);
  expect(Math.abs(v.timestamp - Date.now())).toBeLessThan(60_000);
  expect(JSON.parse(ext.allAclFileVersion!)).toEqual({ [file]: v });

  const deleted = await call(signed(RequestCode.DELETE_ACL_CONFIG, { accessKey: NEW.accessKey }, ADMIN));
  expect(deleted.code).toBe(ResponseCode.SUCCESS);
  expect(readFileSync(file, "utf8")).not.toContain("newuser1");
  expect((await call(send("AclT", NEW))).remark).toBe("org.apache.rocketmq.acl.common.AclException: No acl config for newuser1");
  const again = await call(signed(RequestCode.DELETE_ACL_CONFIG, { accessKey: NEW.accessKey }, ADMIN));
  expect([again.code, again.remark]).toEqual([ResponseCode.DELETE_ACL_CONFIG_FAILED, "no account has accessKey newuser1"]);
}, 30_000);

test("the global white list: set by an admin, a white-listed peer needs no signature; a bad pattern is refused", async () => {
  const { addr, file, client } = await start();
  const call = (cmd: RemotingCommand) => client.invoke(addr, cmd, TIMEOUT_MS);
  const unsigned = () => call(createRequest(RequestCode.GET_ALL_TOPIC_CONFIG, {}));
  expect((await unsigned()).remark).toBe("org.apache.rocketmq.acl.common.AclException: No accessKey is configured");

  const bad = await call(signed(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, { globalWhiteAddrs: "10.*" }, ADMIN));
  expect([bad.code, bad.remark]).toEqual([
    ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
    "globalWhiteRemoteAddresses: 10.*: an IPv4 pattern needs four parts (e.g. 10.*.*.*)",
  ]);
  expect(readFileSync(file, "utf8")).toBe(ACL_YML);
  const elsewhere = await call(
    signed(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, { globalWhiteAddrs: "127.0.0.1", aclFileFullPath: "/etc/other.yml" }, ADMIN),
  );
  expect(elsewhere.code).toBe(ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED);
  expect(elsewhere.remark).toContain("is not the broker's ACL file");

  const ok = await call(
    signed(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, { globalWhiteAddrs: "10.1.1.1,127.0.0.1", aclFileFullPath: file }, ADMIN),
  );
  expect(ok.code).toBe(ResponseCode.SUCCESS);
  expect(readFileSync(file, "utf8")).toContain("globalWhiteRemoteAddresses:\n  - 10.1.1.1\n  - 127.0.0.1\n");
  expect((await unsigned()).code).toBe(ResponseCode.SUCCESS);
}, 30_000);

test("a non-admin account is refused for 50–53 and the file is unchanged; 54 is not served", async () => {
  const { addr, file, client } = await start();
  const call = (cmd: RemotingCommand) => client.invoke(addr, cmd, TIMEOUT_MS);
  const requests: [number, Record<string, string>][] = [
    [RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, { accessKey: NORMAL.accessKey, secretKey: NORMAL.secretKey, admin: "true" }],
    [RequestCode.DELETE_ACL_CONFIG, { accessKey: ADMIN.accessKey }],
    [RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}],
    [RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, { globalWhiteAddrs: "*" }],
  ];
  for (const [code, ext] of requests) {
    const res = await call(signed(code, ext, NORMAL));
    expect([res.code, res.remark]).toEqual([
      ResponseCode.SYSTEM_ERROR,
      `org.apache.rocketmq.acl.common.AclException: Need admin permission for request code=${code}, but accessKey=normaluser is not`,
    ]);
    // Unsigned: refused before anything else.
    expect((await call(signed(code, ext, undefined))).remark).toBe("org.apache.rocketmq.acl.common.AclException: No accessKey is configured");
  }
  expect(readFileSync(file, "utf8")).toBe(ACL_YML);
  const short = await call(createAccount(ADMIN, { accessKey: "abc", secretKey: "topsecret-2", admin: "false" }));
  expect([short.code, short.remark]).toEqual([
    ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED,
    "accessKey is required and must be longer than 6 characters",
  ]);
  expect(readFileSync(file, "utf8")).toBe(ACL_YML);
  const removed = await call(signed(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}, ADMIN));
  expect(removed.code).toBe(ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
  expect(removed.remark).toContain("removed in RocketMQ 4.9.8");
}, 30_000);

test("with ACL off the requests say that ACL is off, with Java's failure codes", async () => {
  const { addr, file, client } = await start(false);
  const call = (cmd: RemotingCommand) => client.invoke(addr, cmd, TIMEOUT_MS);
  const expected: [number, number][] = [
    [RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED],
    [RequestCode.DELETE_ACL_CONFIG, ResponseCode.DELETE_ACL_CONFIG_FAILED],
    [RequestCode.GET_BROKER_CLUSTER_ACL_INFO, ResponseCode.SYSTEM_ERROR],
    [RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED],
  ];
  for (const [code, answer] of expected) {
    const res = await call(signed(code, { accessKey: NEW.accessKey, secretKey: NEW.secretKey, globalWhiteAddrs: "*" }, ADMIN));
    expect([res.code, res.remark]).toEqual([answer, "The broker does not enable acl: set broker.aclEnable and broker.aclFile"]);
  }
  expect(readFileSync(file, "utf8")).toBe(ACL_YML);
}, 30_000);
