/**
 * Interop: ali-ons 3.12 with `accessKey`/`secretKey` against the compiled binary with plain ACL on
 * (a name server and a master with broker.aclEnable and the fixture of test/harness/acl.ts).
 *
 * How ali-ons signs (lib/channel.js beforeRequest): HmacSHA1 with the secret over the values of
 * {AccessKey, OnsChannel: "ALIYUN", every non-null field of the request's custom header}, sorted
 * by key, then the body; it sends Signature, AccessKey and OnsChannel as extFields next to the
 * header fields. Java's AclClientRPCHook signs the same way without OnsChannel. The broker
 * verifies over every extField but Signature, so it verifies OnsChannel too: the signatures agree
 * as long as the header's fields are exactly the extFields, which they are (ali-ons'
 * makeCustomHeaderToNet copies the same non-null fields; numbers and booleans reach the broker as
 * JSON numbers and booleans, whose text is the toString ali-ons signed). So ali-ons is compatible.
 *
 * ali-ons' producer hides the broker's refusal (SYSTEM_ERROR is retried and ends as "Send [n]
 * times, still failed"), so the refusal's code and remark are read from each attempt's error
 * (its sendKernelImpl, wrapped) and through ali-ons' own MQClientAPI, which signs with the same
 * Channel and surfaces both.
 */
import { afterAll, beforeAll, expect } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
// @ts-expect-error ali-ons ships no type declarations
import MQClientAPI from "ali-ons/lib/mq_client_api.js";
import { ACL_ADMIN, ACL_REMARK, ACL_SUB_ONLY_TOPIC, ACL_UNKNOWN_KEY, ACL_USER, ACL_WRONG_SECRET, aclYaml } from "../harness/acl.ts";
import { ROOT, startRocketbun, tempDir, waitFor, type RunningBinary } from "../harness/binary.ts";
import type { AclCredentials } from "../../src/protocol/acl-signature.ts";
import { compatTest } from "../harness/compat.ts";
import { newClient, routeRequest } from "../harness/wire.ts";
import { BROKER_YAML, Consumer, Message, noHttp, Producer, silentLogger, type OnsConsumer, type OnsProducer } from "./ali-ons-cluster.ts";

const test = compatTest("ali-ons", "rocketbun");

interface OnsApi {
  ready(): Promise<void>;
  close(): Promise<void>;
  createTopic(addr: string, defaultTopic: string, cfg: Record<string, unknown>, timeoutMs: number): Promise<void>;
  getMaxOffset(addr: string, topic: string, queueId: number, timeoutMs: number): Promise<number>;
}

const QUEUES = 4;
let ns: RunningBinary;
let broker: RunningBinary;
let brokerAddr = "";
const apis: OnsApi[] = [];
const clients: { close(): Promise<void> }[] = [];

const creds = (c: AclCredentials) => ({ accessKey: c.accessKey, secretKey: c.secretKey });
const options = (extra: Record<string, unknown>) => ({ nameSrv: ns.namesrvAddr, httpclient: noHttp, logger: silentLogger, ...extra });

async function api(c: AclCredentials): Promise<OnsApi> {
  const a = new MQClientAPI(options({ responseTimeout: 5000, ...creds(c) })) as OnsApi;
  await a.ready();
  apis.push(a);
  return a;
}

/** UPDATE_AND_CREATE_TOPIC through ali-ons' MQClientAPI (signed by its Channel); `wait`: until the name server routes it. */
async function createTopic(a: OnsApi, topic: string, wait = true): Promise<void> {
  await a.createTopic(
    brokerAddr,
    "TBW102",
    { topicName: topic, readQueueNums: QUEUES, writeQueueNums: QUEUES, perm: 6, topicFilterType: "SINGLE_TAG", topicSysFlag: 0, order: false },
    5000,
  );
  if (!wait) return;
  const wire = newClient();
  try {
    await waitFor(
      async () => (await wire.invoke(ns.namesrvAddr, routeRequest(topic), 3000)).code === 0,
      15_000,
      () => `the route of ${topic}${diag()}`,
    );
  } finally {
    wire.close();
  }
}

/** The error an ali-ons call rejected with (MQClientException: code and the broker's remark). */
async function refusal(p: Promise<unknown>): Promise<{ name: string; code: number; message: string }> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err as { name: string; code: number; message: string },
  );
  if (!e) throw new Error("the request was accepted");
  return e;
}

async function totalMaxOffset(topic: string): Promise<number> {
  const admin = await api(ACL_ADMIN);
  let sum = 0;
  for (let q = 0; q < QUEUES; q++) sum += await admin.getMaxOffset(brokerAddr, topic, q, 5000);
  return sum;
}

/** An ali-ons producer whose per-attempt errors (ali-ons' sendKernelImpl: MQClientException with the broker's code and remark) are kept in `attempts`. */
async function producer(group: string, c: AclCredentials): Promise<OnsProducer & { attempts: { code: number; message: string }[] }> {
  const p = new Producer(options({ producerGroup: group, instanceName: group, retryTimesWhenSendFailed: 0, ...creds(c) })) as OnsProducer & {
    attempts: { code: number; message: string }[];
    sendKernelImpl: (...args: unknown[]) => Promise<unknown>;
  };
  p.on("error", () => {});
  clients.push(p);
  p.attempts = [];
  const kernel = p.sendKernelImpl.bind(p);
  p.sendKernelImpl = async (...args: unknown[]) => {
    try {
      return await kernel(...args);
    } catch (e) {
      p.attempts.push(e as { code: number; message: string });
      throw e;
    }
  };
  await p.ready();
  return p;
}

const diag = () => `\nbroker stderr:\n${broker.output.err().slice(-3000)}`;

beforeAll(async () => {
  const dir = tempDir("ali-ons-acl-");
  const aclFile = join(dir, "plain_acl.yml");
  writeFileSync(aclFile, aclYaml());
  ns = await startRocketbun({ role: "namesrv", args: ["--config", join(ROOT, "config/test-min.yaml")] });
  broker = await startRocketbun({
    role: "master",
    dir,
    configYaml: BROKER_YAML.replace("\nbroker:\n", `\nbroker:\n  aclEnable: true\n  aclFile: ${aclFile}\n`),
    args: ["--namesrv", ns.namesrvAddr],
  });
  brokerAddr = `127.0.0.1:${broker.ports.broker}`;
  // ali-ons' static internal producer (made from the first client's options): signed, on this name server.
  Producer.defaultProducer = null;
  const inner = await Producer.getDefaultProducer(options(creds(ACL_USER)));
  inner.on("error", () => {});
  clients.push(inner);
  const admin = await api(ACL_ADMIN);
  // Until the broker has registered (ali-ons finds the broker through TBW102's route), then the route.
  await waitFor(
    async () => {
      try {
        await createTopic(admin, ACL_SUB_ONLY_TOPIC, false);
        return true;
      } catch {
        return false; // the broker has not registered yet
      }
    },
    15_000,
    () => `the admin's createTopic${diag()}`,
  );
  await createTopic(admin, ACL_SUB_ONLY_TOPIC);
}, 60_000);

afterAll(async () => {
  for (const c of clients.reverse()) await Promise.race([c.close().catch(() => {}), Bun.sleep(5000)]);
  Producer.defaultProducer = null;
  for (const a of apis) await a.close().catch(() => {});
  await broker?.[Symbol.asyncDispose]();
  await ns?.[Symbol.asyncDispose]();
}, 60_000);

test("acl-signed: a producer and a consumer with accessKey/secretKey send and consume; an admin's signed createTopic works", async () => {
  const topic = "ali_acl_signed";
  await createTopic(await api(ACL_ADMIN), topic);
  const got = new Set<string>();
  const consumer: OnsConsumer = new Consumer(
    options({ consumerGroup: "GID_ali_acl", instanceName: "ali-acl-c", rebalanceInterval: 1000, ...creds(ACL_USER) }),
  );
  consumer.on("error", () => {});
  clients.push(consumer);
  consumer.subscribe(topic, "*", async (msg) => {
    got.add(msg.body.toString());
  });
  await consumer.ready();
  const p = await producer("PID_ali_acl", ACL_USER);
  const want = Array.from({ length: 12 }, (_, i) => `acl-${i}`);
  await waitFor(
    async () => {
      try {
        return (await p.send(new Message(topic, "TagA", "probe"))).sendStatus === "SEND_OK";
      } catch {
        return false; // the route is not there yet
      }
    },
    15_000,
    () => `the first signed send${diag()}`,
  );
  for (const body of want) expect((await p.send(new Message(topic, "TagA", body))).sendStatus).toBe("SEND_OK");
  await waitFor(
    () => want.every((b) => got.has(b)),
    30_000,
    () => `every body at the signed consumer (have ${got.size})${diag()}`,
  );
  expect(broker.output.err()).not.toContain("ACL refused PULL_MESSAGE");
}, 60_000);

test("acl-wrong-secret: refused with code 1 and the AclException remark, nothing stored; an unknown key too", async () => {
  const topic = "ali_acl_wrong";
  await createTopic(await api(ACL_ADMIN), topic);
  const before = await totalMaxOffset(topic);
  const wrong = await api(ACL_WRONG_SECRET);
  const e = await refusal(wrong.getMaxOffset(brokerAddr, topic, 0, 5000));
  expect({ name: e.name, code: e.code }).toEqual({ name: "MQClientException", code: 1 });
  expect(e.message).toBe(`${ACL_REMARK}Check signature failed for accessKey=${ACL_USER.accessKey}`);
  const unknown = await refusal((await api(ACL_UNKNOWN_KEY)).getMaxOffset(brokerAddr, topic, 0, 5000));
  expect(unknown.message).toBe(`${ACL_REMARK}No acl config for ${ACL_UNKNOWN_KEY.accessKey}`);
  // The producer: the send fails (ali-ons retries SYSTEM_ERROR and then says so), the broker logged why.
  const p = await producer("PID_ali_acl_wrong", ACL_WRONG_SECRET);
  const sent = await refusal(p.send(new Message(topic, "TagA", "must-not-be-stored")));
  expect(sent.message).toContain("still failed");
  expect(p.attempts.map((a) => ({ code: a.code, message: a.message }))).toEqual([
    { code: 1, message: `${ACL_REMARK}Check signature failed for accessKey=${ACL_USER.accessKey}` },
  ]);
  expect(await totalMaxOffset(topic)).toBe(before);
}, 30_000);

test("acl-no-pub: a topic the account may not PUB is refused, nothing stored; a non-admin createTopic is refused", async () => {
  const before = await totalMaxOffset(ACL_SUB_ONLY_TOPIC);
  const p = await producer("PID_ali_acl_nopub", ACL_USER);
  const sent = await refusal(p.send(new Message(ACL_SUB_ONLY_TOPIC, "TagA", "must-not-be-stored")));
  expect(sent.message).toContain("still failed");
  await waitFor(
    () => broker.output.err().includes(`No default permission for topic:${ACL_SUB_ONLY_TOPIC}`),
    5000,
    () => `the refusal in the log${diag()}`,
  );
  expect(await totalMaxOffset(ACL_SUB_ONLY_TOPIC)).toBe(before);
  const user = await api(ACL_USER);
  const create = await refusal(createTopic(user, "ali_acl_not_created", false));
  expect({ code: create.code, message: create.message }).toEqual({
    code: 1,
    message: `${ACL_REMARK}Need admin permission for request code=17, but accessKey=${ACL_USER.accessKey} is not`,
  });
  expect((await fetch(`${broker.adminUrl}/topics/ali_acl_not_created`)).status).toBe(404);
}, 30_000);
