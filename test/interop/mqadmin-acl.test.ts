/**
 * The real mqadmin's ACL commands (rocketmq-tools 4.9.8: updateAclConfig, clusterAclConfigVersion,
 * updateGlobalWhiteAddr, deleteAclConfig) against RocketBun with broker.aclEnable. mqadmin signs
 * every request with the AccessKey/SecretKey of ${ROCKETMQ_HOME}/conf/tools.yml
 * (AclUtils.getAclRPCHook); one home holds an admin account's, another a plain account's.
 * Checked: what mqadmin prints, what the file then says (docs/PROTOCOL.md §3.19), and that a plain
 * account's command fails and changes nothing.
 *
 * Not side by side with Apache RocketMQ (test/harness/interop-cluster.ts starts it without ACL);
 * the Java facts these requests follow are cited in src/acl/edit.ts and processors/acl-admin.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseAclRules, type AclRules } from "../../src/acl/rules.ts";
import { startRocketbun, tempDir, type RunningBinary } from "../harness/binary.ts";
import { JVM_FLAGS, mavenClasspath, toolsPresent } from "../harness/java.ts";

const enabled = toolsPresent("mqadmin ACL interop", ["java", "mvn"]);

const CLUSTER = "AclCluster";
const BROKER = "broker-acl";

const ACL_YML = `# plain ACL for the mqadmin test
accounts:
  - accessKey: adminuser
    secretKey: adminsecret
    admin: true
  - accessKey: normaluser
    secretKey: normalsecret
    defaultTopicPerm: PUB
`;

const TOOLS_LOGBACK = `<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>\${user.home}/tools.log</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5p %c{0} - %m%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="F"/></root>
</configuration>
`;

interface Run {
  code: number | null;
  out: string;
  err: string;
}

let dir = "";
let aclFile = "";
let cp = "";
let broker: RunningBinary | undefined;
let brokerAddr = "";
const homes = { admin: "", normal: "" };

/** A ROCKETMQ_HOME whose conf/tools.yml holds these credentials. */
function home(name: string, accessKey: string, secretKey: string): string {
  const h = join(dir, name);
  mkdirSync(join(h, "conf"), { recursive: true });
  writeFileSync(join(h, "conf", "logback_tools.xml"), TOOLS_LOGBACK);
  writeFileSync(join(h, "conf", "tools.yml"), `accessKey: ${accessKey}\nsecretKey: ${secretKey}\n`);
  return h;
}

async function mqadmin(h: string, args: string[]): Promise<Run> {
  const argv = [
    "java",
    ...JVM_FLAGS,
    "-Xmx128m",
    `-Drocketmq.home.dir=${h}`,
    `-Duser.home=${h}`,
    `-Drocketmq.client.logRoot=${join(h, "logs")}`,
    "-cp",
    cp,
    "org.apache.rocketmq.tools.command.MQAdminStartup",
    ...args,
    "-n",
    broker!.namesrvAddr,
  ];
  const p = Bun.spawn(argv, { cwd: h, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, HOME: h, ROCKETMQ_HOME: h } });
  const timer = setTimeout(() => p.kill("SIGKILL"), 60_000);
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  clearTimeout(timer);
  return { code, out, err };
}

/** mqadmin exits 0 even when the command failed; a failure shows as an exception on stderr. */
function expectOk(r: Run): void {
  const failed = r.code !== 0 || /Exception|command failed/.test(r.err + r.out);
  if (failed) throw new Error(`mqadmin failed (exit ${r.code}):\n${r.out}\n${r.err}`.slice(0, 3000));
}

function fileRules(): AclRules {
  const r = parseAclRules(aclFile, readFileSync(aclFile, "utf8"));
  if ("errors" in r) throw new Error(r.errors.join("\n"));
  return r;
}

describe.skipIf(!enabled)("mqadmin 4.9.8 ACL commands against RocketBun", () => {
  beforeAll(async () => {
    cp = mavenClasspath("mqadmin");
    dir = tempDir("mqadmin-acl-");
    aclFile = join(dir, "plain_acl.yml");
    writeFileSync(aclFile, ACL_YML);
    homes.admin = home("admin-home", "adminuser", "adminsecret");
    homes.normal = home("normal-home", "normaluser", "normalsecret");
    const config = `logLevel: warn
namesrv:
  listen: 127.0.0.1:0
  admin: 127.0.0.1:0
broker:
  listen: 127.0.0.1:0
  brokerName: ${BROKER}
  brokerClusterName: ${CLUSTER}
  brokerIP1: 127.0.0.1
  registerNameServerPeriodMs: 1000
  aclEnable: true
  aclFile: ${aclFile}
`;
    mkdirSync(join(dir, "rocketbun"));
    broker = await startRocketbun({ role: "standalone", dir: join(dir, "rocketbun"), configYaml: config });
    brokerAddr = `127.0.0.1:${broker.ports.broker}`;
  }, 240_000);

  afterAll(async () => {
    await broker?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("updateAclConfig by an admin account creates the account in plain_acl.yml", async () => {
    const r = await mqadmin(homes.admin, [
      "updateAclConfig",
      "-b",
      brokerAddr,
      "-a",
      "newuser1",
      "-s",
      "newsecret1",
      "-i",
      "DENY",
      "-u",
      "SUB",
      "-t",
      "AclT=PUB,AclT2=PUB|SUB",
      "-g",
      "AclG=SUB",
    ]);
    expectOk(r);
    expect(r.out).toStartWith(`create or update plain access config to ${brokerAddr} success.\n`);
    const rules = fileRules();
    const a = rules.accounts.get("newuser1")!;
    expect([a.secretKey, a.admin, a.defaultTopicPerm, a.defaultGroupPerm]).toEqual(["newsecret1", false, 1, 8]);
    expect([...a.perms.keys()]).toEqual(["%RETRY%AclG", "AclT", "AclT2"]);
    expect(rules.dataVersion.counter).toBe(1);
    expect(readFileSync(aclFile, "utf8")).toStartWith("# plain ACL for the mqadmin test\n");
  }, 120_000);

  test("clusterAclConfigVersion lists the file and its dataVersion (-c and -b)", async () => {
    const [byCluster, byBroker] = await Promise.all([
      mqadmin(homes.admin, ["clusterAclConfigVersion", "-c", CLUSTER]),
      mqadmin(homes.admin, ["clusterAclConfigVersion", "-b", brokerAddr]),
    ]);
    expectOk(byCluster);
    expectOk(byBroker);
    const lines = byCluster.out.trim().split("\n");
    expect(lines[0]!.trim().split(/\s+/)).toEqual([
      "#Cluster",
      "Name",
      "#Broker",
      "Name",
      "#Broker",
      "Addr",
      "#AclFilePath",
      "#AclConfigVersionNum",
      "#AclLastUpdateTime",
    ]);
    expect(lines[1]!.trim().split(/\s+/).slice(0, 5)).toEqual([CLUSTER, BROKER, brokerAddr, aclFile, "1"]);
    expect(lines[1]!.trimEnd()).toMatch(/\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(lines[2]).toBe("get cluster's plain access config version success.");
    expect(byBroker.out.trim().split("\n")[0]!.trim().split(/\s+/).slice(0, 5)).toEqual([CLUSTER, BROKER, brokerAddr, aclFile, "1"]);
  }, 120_000);

  test("updateGlobalWhiteAddr replaces the global white list", async () => {
    const r = await mqadmin(homes.admin, ["updateGlobalWhiteAddr", "-c", CLUSTER, "-g", "10.10.103.*,192.168.0.*"]);
    expectOk(r);
    expect(r.out).toContain(`update global white remote addresses to ${brokerAddr} success.`);
    expect(readFileSync(aclFile, "utf8")).toContain("globalWhiteRemoteAddresses:\n  - 10.10.103.*\n  - 192.168.0.*\n");
    expect(fileRules().dataVersion.counter).toBe(2);
  }, 120_000);

  test("a plain account's updateAclConfig and deleteAclConfig fail with the admin refusal; the file is unchanged", async () => {
    const before = readFileSync(aclFile, "utf8");
    const [update, del] = await Promise.all([
      mqadmin(homes.normal, ["updateAclConfig", "-b", brokerAddr, "-a", "normaluser", "-s", "normalsecret", "-m", "true"]),
      mqadmin(homes.normal, ["deleteAclConfig", "-b", brokerAddr, "-a", "adminuser"]),
    ]);
    expect(update.err).toContain("Need admin permission for request code=50, but accessKey=normaluser is not");
    expect(del.err).toContain("Need admin permission for request code=51, but accessKey=normaluser is not");
    expect(readFileSync(aclFile, "utf8")).toBe(before);
  }, 120_000);

  test("deleteAclConfig by an admin account removes the account", async () => {
    const r = await mqadmin(homes.admin, ["deleteAclConfig", "-b", brokerAddr, "-a", "newuser1"]);
    expectOk(r);
    expect(r.out).toBe(`delete plain access config account from ${brokerAddr} success.\naccount's accesskey is:newuser1`);
    const rules = fileRules();
    expect([...rules.accounts.keys()]).toEqual(["adminuser", "normaluser"]);
    expect(rules.dataVersion.counter).toBe(3);
  }, 120_000);
});
