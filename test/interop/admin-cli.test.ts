/**
 * `rocketbun admin` (the compiled binary) against RocketBun and against Apache RocketMQ 4.9.7
 * (test/harness/interop-cluster.ts), the same commands on both: exit codes, the --json output
 * parsed and checked field by field, table headers, and the state each command leaves (a topic
 * created shows in topicList and topicRoute, a message sent is found by every query, a group's
 * offsets move after resetOffsetByTime, configuration changes read back). The ACL commands run
 * against a third cluster, RocketBun with broker.aclEnable (Apache's harness cluster runs without
 * ACL). One cluster per kind for the whole file; the two kinds run side by side.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Producer, PushConsumer } from "../../src/client/index.ts";
import { parseJsonBytes } from "../../src/common/json.ts";
import { createRequest, RequestCode } from "../../src/remoting/index.ts";
import { ACL_ADMIN, ACL_USER, aclYaml } from "../harness/acl.ts";
import { ensureBinary, tempDir, waitFor } from "../harness/binary.ts";
import { BROKER_KINDS, BROKER_NAME, CLUSTER_NAME, startCluster, type BrokerKind, type InteropCluster } from "../harness/interop-cluster.ts";
import { toolsPresent } from "../harness/java.ts";
import { makeCerts, opensslPresent, type CertSet } from "../harness/certs.ts";
import { newClient } from "../harness/wire.ts";

const enabled = toolsPresent("rocketbun admin interop", ["java", "mvn"]);
const withTls = enabled && opensslPresent("rocketbun admin over TLS");

interface Run {
  code: number | null;
  out: string;
  err: string;
}

/** The environment of every run: nothing inherited that the CLI reads. */
const CLEAN_ENV = (() => {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const k of ["NAMESRV_ADDR", "ROCKETMQ_HOME", "ROCKETMQ_ACCESS_KEY", "ROCKETMQ_SECRET_KEY"]) delete env[k];
  return env;
})();

async function admin(namesrv: string | null, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const argv = [ensureBinary(), "admin", ...args, ...(namesrv !== null ? ["-n", namesrv] : [])];
  const p = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...CLEAN_ENV, ...env } });
  const timer = setTimeout(() => p.kill("SIGKILL"), 45_000);
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  clearTimeout(timer);
  return { code, out, err };
}

function show(args: string[], r: Run): string {
  return `rocketbun admin ${args.join(" ")} → exit ${r.code}\n--- stdout\n${r.out.slice(0, 3000)}\n--- stderr\n${r.err.slice(0, 3000)}`;
}

/** Runs a command that must succeed; its stdout. */
async function ok(c: InteropCluster, args: string[], env?: Record<string, string>): Promise<string> {
  const r = await admin(c.namesrvAddr, args, env);
  if (r.code !== 0) throw new Error(show(args, r));
  return r.out;
}

/** Runs a command with --json that must succeed; its parsed output. */
async function json<T>(c: InteropCluster, args: string[], env?: Record<string, string>): Promise<T> {
  const out = await ok(c, [...args, "--json"], env);
  try {
    return JSON.parse(out) as T;
  } catch {
    throw new Error(`not JSON from ${args.join(" ")}:\n${out}`);
  }
}

/** Polls a command until `check` accepts its JSON (index builds, re-registrations and stats are asynchronous on Apache's side). */
async function eventually<T>(c: InteropCluster, args: string[], check: (v: T) => boolean): Promise<T> {
  let last: unknown;
  return waitFor(
    async () => {
      const r = await admin(c.namesrvAddr, [...args, "--json"]);
      last = r;
      if (r.code !== 0) return null;
      const v = JSON.parse(r.out) as T;
      return check(v) ? v : null;
    },
    20_000,
    () => `${args.join(" ")} on ${c.kind} to match; last: ${JSON.stringify(last)}`,
  );
}

const clusters = new Map<BrokerKind, InteropCluster>();
let aclCluster: InteropCluster | undefined;
let tlsCluster: InteropCluster | undefined;
let certs: CertSet | undefined;
let home = "";

describe.skipIf(!enabled)("rocketbun admin against RocketBun and Apache RocketMQ", () => {
  beforeAll(async () => {
    ensureBinary();
    home = tempDir("admin-cli-");
    if (withTls) certs = makeCerts();
    const tls = certs && {
      yaml: `tls:\n  serverMode: enforcing\n  certPath: ${certs.serverCert}\n  keyPath: ${certs.serverKey}\n  enable: true\n  clientTrustCertPath: ${certs.ca}\n`,
      client: { verify: "chain" as const, ca: certs.read(certs.ca) },
    };
    const [a, b, acl, secure] = await Promise.all([
      ...BROKER_KINDS.map((k) => startCluster(k)),
      startCluster("rocketbun", { aclYaml: aclYaml() }),
      tls ? startCluster("rocketbun", { tls }) : undefined,
    ]);
    for (const c of [a!, b!]) clusters.set(c.kind, c as InteropCluster);
    aclCluster = acl;
    tlsCluster = secure;
  }, 120_000);

  afterAll(async () => {
    await Promise.all([...clusters.values(), aclCluster, tlsCluster].map((c) => c?.stop()));
    certs?.remove();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  test("bad usage exits 2 with the problem named; an unreachable name server exits 1", async () => {
    const missing = await admin("127.0.0.1:9", ["updateTopic", "-t", "X"]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain("one of -b/--brokerAddr, -c/--clusterName is required");
    expect(missing.out).toBe("");
    const unknown = await admin("127.0.0.1:9", ["updatTopic"]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain("did you mean updateTopic?");
    const badValue = await admin("127.0.0.1:9", ["updateTopic", "-c", "C", "-t", "T", "-r", "many"]);
    expect(badValue.code).toBe(2);
    expect(badValue.err).toContain('-r/--readQueueNums: expected a whole number from 0 to 65535, got "many"');
    const noNamesrv = await admin(null, ["topicList"]);
    expect(noNamesrv.code).toBe(2);
    expect(noNamesrv.err).toContain("NAMESRV_ADDR");
    const down = await admin("127.0.0.1:9", ["clusterList"]);
    expect(down.code).toBe(1);
    expect(down.err).toContain("no name server answered (127.0.0.1:9)");
    const help = await admin(null, ["resetOffsetByTime", "-h"]);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/-s, --timestamp TIME\s+now, milliseconds/);
    const list = await admin(null, ["--help"]);
    expect(list.code).toBe(0);
    for (const name of ["updateTopic", "statsAll", "clusterRT", "updateAclConfig", "clusterAclConfigVersion"]) expect(list.out).toContain(name);
  });

  for (const kind of BROKER_KINDS) {
    describe(kind, () => {
      const c = () => clusters.get(kind)!;

      test("clusterList and brokerStatus show the broker", async () => {
        const rows = await json<{ clusterName: string; brokerName: string; brokerId: number; addr: string; version: string }[]>(c(), ["clusterList"]);
        expect(rows).toContainEqual(
          expect.objectContaining({ clusterName: CLUSTER_NAME, brokerName: BROKER_NAME, brokerId: 0, addr: c().brokerAddr }),
        );
        expect(rows[0]!.version).toMatch(/^V4_9_\d$/);
        const table = await ok(c(), ["clusterList"]);
        expect(table.split("\n")[0]).toMatch(/^#Cluster Name\s+#Broker Name\s+#BID\s+#Addr\s+#Version\s+#InTPS\(LOAD\)/);
        const status = await json<Record<string, string>>(c(), ["brokerStatus", "-b", c().brokerAddr]);
        expect(status.brokerVersionDesc).toMatch(/^V4_9_\d$/);
        expect(Object.keys(status)).toContain("putTps");
      });

      test("updateTopic creates a topic that topicList, topicRoute and topicStatus then show; deleteTopic removes it", async () => {
        const created = await json<{ topicName: string; brokers: string[] }>(c(), [
          "updateTopic",
          "-c",
          CLUSTER_NAME,
          "-t",
          "AdmT",
          "-r",
          "2",
          "-w",
          "2",
        ]);
        expect(created).toMatchObject({ topicName: "AdmT", readQueueNums: 2, writeQueueNums: 2, perm: 6, brokers: [c().brokerAddr] });
        await eventually<string[]>(c(), ["topicList"], (topics) => topics.includes("AdmT"));
        const route = await eventually<{ queueDatas: { brokerName: string; readQueueNums: number; writeQueueNums: number }[] }>(
          c(),
          ["topicRoute", "-t", "AdmT"],
          (r) => r.queueDatas[0]?.readQueueNums === 2,
        );
        expect(route.queueDatas).toEqual([expect.objectContaining({ brokerName: BROKER_NAME, readQueueNums: 2, writeQueueNums: 2 })]);
        expect((await ok(c(), ["topicRoute", "-t", "AdmT", "-l"])).split("\n")[0]).toMatch(
          /^#ClusterName\s+#BrokerName\s+#BrokerAddrs\s+#ReadQueue\s+#WriteQueue\s+#Perm$/,
        );
        const withGroups = await json<{ clusterName: string; topic: string; consumerGroups: string[] }[]>(c(), ["topicList", "-c"]);
        expect(withGroups).toContainEqual({ clusterName: CLUSTER_NAME, topic: "AdmT", consumerGroups: [] });
        expect(withGroups.some((r) => r.topic.startsWith("%RETRY%"))).toBe(false);
        expect((await ok(c(), ["topicList", "-c"])).split("\n")[0]).toMatch(/^#Cluster Name\s+#Topic\s+#Consumer Group$/);
        const status = await json<{ brokerName: string; queueId: number; maxOffset: number }[]>(c(), ["topicStatus", "-t", "AdmT"]);
        expect(status.map((q) => q.queueId)).toEqual([0, 1]);
        await ok(c(), ["updateTopic", "-b", c().brokerAddr, "-t", "AdmDel"]);
        await eventually<string[]>(c(), ["topicList"], (topics) => topics.includes("AdmDel"));
        const del = await ok(c(), ["deleteTopic", "-c", CLUSTER_NAME, "-t", "AdmDel"]);
        expect(del).toContain("delete topic [AdmDel] from NameServer success.");
        await eventually<string[]>(c(), ["topicList"], (topics) => !topics.includes("AdmDel"));
      });

      test("sendMessage, then every query finds the message and consumeMessage reads it", async () => {
        const sent = await json<{ sendStatus: string; msgId: string; offsetMsgId: string; brokerName: string; queueId: number; queueOffset: number }>(
          c(),
          ["sendMessage", "-t", "AdmT", "-p", "hello admin", "-k", "admkey", "-c", "TagA", "-b", BROKER_NAME, "-i", "1"],
        );
        expect(sent).toMatchObject({ sendStatus: "SEND_OK", brokerName: BROKER_NAME, queueId: 1 });
        const byId = await json<{ body: string; msgId: string; tags: string; keys: string; queueId: number }>(c(), [
          "queryMsgById",
          "-i",
          sent.offsetMsgId,
        ]);
        expect(byId).toMatchObject({ body: "hello admin", msgId: sent.msgId, tags: "TagA", keys: "admkey", queueId: 1 });
        const byKey = await eventually<{ msgId: string }[]>(c(), ["queryMsgByKey", "-t", "AdmT", "-k", "admkey"], (l) => l.length > 0);
        expect(byKey.map((m) => m.msgId)).toEqual([sent.msgId]);
        expect((await ok(c(), ["queryMsgByKey", "-t", "AdmT", "-k", "admkey"])).split("\n")[0]).toMatch(/^#Message ID\s+#QID\s+#Offset$/);
        const byUnique = await eventually<{ body: string; offsetMsgId: string }>(
          c(),
          ["queryMsgByUniqueKey", "-t", "AdmT", "-i", sent.msgId],
          (m) => !!m.body,
        );
        expect(byUnique).toMatchObject({ body: "hello admin", offsetMsgId: sent.offsetMsgId });
        const byOffset = await json<{ body: string; msgId: string }>(c(), [
          "queryMsgByOffset",
          "-t",
          "AdmT",
          "-b",
          BROKER_NAME,
          "-i",
          "1",
          "-o",
          String(sent.queueOffset),
        ]);
        expect(byOffset).toMatchObject({ body: "hello admin", msgId: sent.msgId });
        const consumed = await json<{ body: string; msgId: string }[]>(c(), [
          "consumeMessage",
          "-t",
          "AdmT",
          "-b",
          BROKER_NAME,
          "-i",
          "1",
          "-o",
          "0",
        ]);
        expect(consumed.map((m) => m.body)).toEqual(["hello admin"]);
        const all = await json<{ body: string }[]>(c(), ["consumeMessage", "-t", "AdmT", "-c", "5"]);
        expect(all.map((m) => m.body)).toContain("hello admin");
        const missing = await admin(c().namesrvAddr, ["queryMsgByUniqueKey", "-t", "AdmT", "-i", "0A0000000000000000000000000000FF"]);
        expect(missing.code).toBe(1);
      });

      test("updateSubGroup creates a group on the broker and deleteSubGroup removes it", async () => {
        const groups = async (): Promise<string[]> => {
          const client = newClient();
          try {
            const res = await client.invoke(c().brokerAddr, createRequest(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG), 5000);
            return Object.keys((parseJsonBytes(res.body!) as { subscriptionGroupTable: Record<string, unknown> }).subscriptionGroupTable);
          } finally {
            await client.close();
          }
        };
        const made = await json<{ groupName: string; retryMaxTimes: number }>(c(), ["updateSubGroup", "-c", CLUSTER_NAME, "-g", "AdmSG", "-r", "3"]);
        expect(made).toMatchObject({ groupName: "AdmSG", retryMaxTimes: 3, consumeEnable: true, brokers: [c().brokerAddr] });
        expect(await groups()).toContain("AdmSG");
        expect(await ok(c(), ["deleteSubGroup", "-c", CLUSTER_NAME, "-g", "AdmSG"])).toContain(
          `delete subscription group [AdmSG] from broker [${c().brokerAddr}]`,
        );
        expect(await groups()).not.toContain("AdmSG");
      });

      test("a real consumer group: consumerConnection, producerConnection, consumerProgress with its lag, resetOffsetByTime online and offline", async () => {
        await groupScenario(c());
      }, 60_000);

      test("getBrokerConfig / updateBrokerConfig and getNamesrvConfig / updateNamesrvConfig read back the change", async () => {
        const before = await json<Record<string, string>>(c(), ["getBrokerConfig", "-b", c().brokerAddr]);
        expect(before.brokerName).toBe(BROKER_NAME);
        expect(await ok(c(), ["updateBrokerConfig", "-b", c().brokerAddr, "-k", "maxMessageSize", "-v", "4000000"])).toContain(
          `update broker config success, ${c().brokerAddr}`,
        );
        expect((await json<Record<string, string>>(c(), ["getBrokerConfig", "-b", c().brokerAddr])).maxMessageSize).toBe("4000000");
        const text = await ok(c(), ["getBrokerConfig", "-c", CLUSTER_NAME]);
        expect(text).toContain(`============Master: ${c().brokerAddr}============`);
        await ok(c(), ["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"]);
        const ns = await json<Record<string, Record<string, string>>>(c(), ["getNamesrvConfig"]);
        expect(ns[c().namesrvAddr]?.orderMessageEnable).toBe("true");
      });

      test("statsAll and clusterRT", async () => {
        const stats = await json<{ topic: string; consumerGroup: string; inMsg24Hour: number }[]>(c(), ["statsAll", "-t", "AdmT"]);
        expect(stats.length).toBeGreaterThan(0);
        expect(stats.every((r) => r.topic === "AdmT")).toBe(true);
        expect((await ok(c(), ["statsAll", "-t", "AdmT"])).split("\n")[0]).toMatch(
          /^#Topic\s+#Consumer Group\s+#Accumulation\s+#InTPS\s+#OutTPS\s+#InMsg24Hour\s+#OutMsg24Hour$/,
        );
        const everything = await json<{ topic: string }[]>(c(), ["statsAll"]);
        expect(everything.map((r) => r.topic)).toContain("AdmT");
        const rt = await json<{ clusterName: string; brokerName: string; successCount: number; failCount: number; rt: number }[]>(c(), [
          "clusterRT",
          "-a",
          "3",
          "-c",
          CLUSTER_NAME,
        ]);
        expect(rt).toEqual([expect.objectContaining({ clusterName: CLUSTER_NAME, brokerName: BROKER_NAME, successCount: 3, failCount: 0 })]);
      });
    });
  }

  test.skipIf(!withTls)(
    "over TLS (RocketBun, tls.serverMode enforcing): --tls connects; --tls-ca checks the chain; plaintext and a wrong CA fail with exit 1",
    async () => {
      const c = tlsCluster!;
      const rows = await json<{ brokerName: string; version: string }[]>(c, ["clusterList", "--tls"]);
      expect(rows).toContainEqual(expect.objectContaining({ brokerName: BROKER_NAME }));
      expect(rows[0]!.version).toMatch(/^V4_9_\d$/);
      const checked = await json<Record<string, string>>(c, ["brokerStatus", "-b", c.brokerAddr, "--tls-ca", certs!.ca]);
      expect(Object.keys(checked)).toContain("putTps");
      const plain = await admin(c.namesrvAddr, ["topicList"]);
      expect(plain.code).toBe(1);
      const wrongCa = await admin(c.namesrvAddr, ["topicList", "--tls-ca", certs!.wrongCa]);
      expect(wrongCa.code).toBe(1);
      const noFile = await admin(c.namesrvAddr, ["topicList", "--tls-ca", join(home, "missing.pem")]);
      expect(noFile.code).toBe(2);
    },
  );

  test("ACL commands against an ACL-enabled RocketBun, signed by flags, the environment or tools.yml", async () => {
    await aclScenario(aclCluster!);
  }, 60_000);
});

async function groupScenario(c: InteropCluster): Promise<void> {
  const t0 = Date.now();
  await ok(c, ["updateTopic", "-c", CLUSTER_NAME, "-t", "AdmQ", "-r", "1", "-w", "1"]);
  await eventually<{ queueDatas: unknown[] }>(c, ["topicRoute", "-t", "AdmQ"], (r) => r.queueDatas.length > 0);
  const producer = new Producer({ namesrv: c.namesrvAddr, group: "AdmPG" });
  await producer.start();
  const consumer = new PushConsumer({ namesrv: c.namesrvAddr, group: "AdmCG", fromWhere: "first", persistOffsetIntervalMs: 300 });
  let received = 0;
  consumer.subscribe("AdmQ", "*", () => {
    received++;
  });
  try {
    for (let i = 0; i < 3; i++) await producer.send({ topic: "AdmQ", body: `q${i}` });
    await consumer.start();
    await waitFor(() => received >= 3, 20_000, "the consumer to receive 3 messages");
    const progress = await eventually<{ diffTotal: number; queues: { topic: string; consumerOffset: number; brokerOffset: number }[] }>(
      c,
      ["consumerProgress", "-g", "AdmCG"],
      (p) => p.queues.some((q) => q.topic === "AdmQ" && q.consumerOffset === 3),
    );
    expect(progress.queues.find((q) => q.topic === "AdmQ")).toMatchObject({ brokerOffset: 3, consumerOffset: 3 });
    const conn = await json<{ connections: { clientId: string; language: string }[]; subscriptions: { topic: string }[]; consumeType: string }>(c, [
      "consumerConnection",
      "-g",
      "AdmCG",
    ]);
    expect(conn.connections).toHaveLength(1);
    expect(conn.subscriptions.map((x) => x.topic)).toContain("AdmQ");
    expect(conn.consumeType).toBe("CONSUME_PASSIVELY");
    const prod = await json<{ clientId: string }[]>(c, ["producerConnection", "-g", "AdmPG", "-t", "AdmQ"]);
    expect(prod.map((p) => p.clientId)).toContain(producer.clientId);
    const groups = await json<{ group: string; count: number }[]>(c, ["consumerProgress"]);
    expect(groups).toContainEqual(expect.objectContaining({ group: "AdmCG", count: 1 }));
    // Online: the broker has the client seek; the answer lists each queue's new offset.
    const online = await json<{ online: boolean; queues: { queueId: number; offset: number }[] }>(c, [
      "resetOffsetByTime",
      "-g",
      "AdmCG",
      "-t",
      "AdmQ",
      "-s",
      String(t0 - 1000),
    ]);
    expect(online).toMatchObject({ online: true, queues: [{ queueId: 0, offset: 0 }] });
    await consumer.shutdown();
    // Offline, with lag: two more messages nobody consumes.
    for (let i = 3; i < 5; i++) await producer.send({ topic: "AdmQ", body: `q${i}` });
    const lagging = await eventually<{ queues: { topic: string; brokerOffset: number; consumerOffset: number; diff: number }[] }>(
      c,
      ["consumerProgress", "-g", "AdmCG"],
      (p) => p.queues.some((q) => q.topic === "AdmQ" && q.brokerOffset === 5),
    );
    const q = lagging.queues.find((x) => x.topic === "AdmQ")!;
    expect(q.diff).toBe(5 - q.consumerOffset);
    expect(q.diff).toBeGreaterThanOrEqual(2);
    const offline = await json<{ online: boolean; queues: { queueId: number; timestampOffset: number; rollbackOffset: number }[] }>(c, [
      "resetOffsetByTime",
      "-g",
      "AdmCG",
      "-t",
      "AdmQ",
      "-s",
      "now",
    ]);
    expect(offline).toMatchObject({ online: false, queues: [{ queueId: 0, timestampOffset: 5, rollbackOffset: 5 }] });
    const after = await json<{ diffTotal: number; queues: { topic: string; consumerOffset: number }[] }>(c, ["consumerProgress", "-g", "AdmCG"]);
    expect(after.queues.find((x) => x.topic === "AdmQ")?.consumerOffset).toBe(5);
    const table = await ok(c, ["consumerProgress", "-g", "AdmCG"]);
    expect(table.split("\n")[0]).toMatch(/^#Topic\s+#Broker Name\s+#QID\s+#Broker Offset\s+#Consumer Offset\s+#Diff\s+#LastTime$/);
    expect(table).toContain("Diff Total:");
  } finally {
    await consumer.shutdown();
    await producer.shutdown();
  }
}

async function aclScenario(c: InteropCluster): Promise<void> {
  const aclFile = join(dirname(c.storeDir), "plain_acl.yml");
  const asAdmin = ["--access-key", ACL_ADMIN.accessKey, "--secret-key", ACL_ADMIN.secretKey];
  // Unsigned: the broker refuses, exit 1 with its refusal.
  const unsigned = await admin(c.namesrvAddr, ["brokerStatus", "-b", c.brokerAddr]);
  expect(unsigned.code).toBe(1);
  expect(unsigned.err).toContain("refused GET_BROKER_RUNTIME_INFO");
  const versions = await json<{ brokerName: string; aclConfigVersionNum: number; aclFilePath: string }[]>(c, [
    "clusterAclConfigVersion",
    "-c",
    CLUSTER_NAME,
    ...asAdmin,
  ]);
  expect(versions).toEqual([expect.objectContaining({ brokerName: BROKER_NAME })]);
  await ok(c, ["updateAclConfig", "-b", c.brokerAddr, "-a", "AdmNewUser", "-s", "adm-new-secret", "-i", "PUB|SUB", "-u", "SUB", ...asAdmin]);
  expect(readFileSync(aclFile, "utf8")).toContain("AdmNewUser");
  // The new account signs through the environment.
  const env = { ROCKETMQ_ACCESS_KEY: "AdmNewUser", ROCKETMQ_SECRET_KEY: "adm-new-secret" };
  const sent = await json<{ sendStatus: string }>(c, ["sendMessage", "-t", "AdmAclT", "-p", "x"], env);
  expect(sent.sendStatus).toBe("SEND_OK");
  // A plain account may not change the file: refused, exit 1, nothing written.
  const before = readFileSync(aclFile, "utf8");
  const refused = await admin(c.namesrvAddr, [
    "updateGlobalWhiteAddr",
    "-b",
    c.brokerAddr,
    "-g",
    "10.9.9.*",
    "--access-key",
    ACL_USER.accessKey,
    "--secret-key",
    ACL_USER.secretKey,
  ]);
  expect(refused.code).toBe(1);
  expect(readFileSync(aclFile, "utf8")).toBe(before);
  // mqadmin's own tools.yml, found through ROCKETMQ_HOME.
  const rocketmqHome = join(home, "rocketmq-home");
  mkdirSync(join(rocketmqHome, "conf"), { recursive: true });
  writeFileSync(join(rocketmqHome, "conf", "tools.yml"), `accessKey: ${ACL_ADMIN.accessKey}\nsecretKey: ${ACL_ADMIN.secretKey}\n`);
  await ok(c, ["updateGlobalWhiteAddr", "-b", c.brokerAddr, "-g", "10.9.9.*"], { ROCKETMQ_HOME: rocketmqHome });
  expect(readFileSync(aclFile, "utf8")).toContain("10.9.9.*");
  await ok(c, ["deleteAclConfig", "-c", CLUSTER_NAME, "-a", "AdmNewUser"], { ROCKETMQ_HOME: rocketmqHome });
  expect(readFileSync(aclFile, "utf8")).not.toContain("AdmNewUser");
  const after = await json<{ aclConfigVersionNum: number }[]>(c, ["clusterAclConfigVersion", "-b", c.brokerAddr, ...asAdmin]);
  expect(after[0]!.aclConfigVersionNum).toBeGreaterThan(versions[0]!.aclConfigVersionNum);
}
