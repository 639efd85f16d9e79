/**
 * Plain ACL (issue #15 point 1) against the compiled binary: a standalone broker with
 * broker.aclEnable and the shared fixture file (test/harness/acl.ts) in its temp dir, driven by
 * rocketbun/client with `credentials` and by raw frames signed with src/protocol/acl-signature.ts.
 *
 *   right key → works; wrong secret, unknown key, no signature, a topic the account may not PUB, a
 *   group it may not SUB, a non-admin creating or deleting a topic → refused (SYSTEM_ERROR, Java's
 *   AclException remark) and nothing stored or changed (max offsets, consumer offsets, the topic
 *   table through the admin API); a white-listed address → allowed without a signature; the file
 *   rewritten while running (atomic rename, in-place write) → the new rules within seconds; a bad
 *   rewrite → the old rules stay and the log names file:line:col; SIGHUP also reloads; a few hundred
 *   malformed or wrongly signed frames → each refused or the connection closed, nothing stored, and
 *   a correctly signed client is still served. Then the name server with namesrv.aclEnable.
 *
 * Every test of the broker part is a row of docs/COMPATIBILITY.md (rocketbun-client column).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, renameSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MQBrokerError, Producer, PullConsumer, type MessageExt } from "rocketbun/client";
import { signRequest, type AclCredentials } from "../../src/protocol/acl-signature.ts";
import {
  createRequest,
  decodeCommand,
  encodeCommand,
  RequestCode,
  ResponseCode,
  type RemotingClient,
  type RemotingCommand,
} from "../../src/remoting/index.ts";
import {
  ACL_ADMIN,
  ACL_DENIED_GROUP,
  ACL_DENIED_TOPIC,
  ACL_REMARK,
  ACL_SUB_ONLY_TOPIC,
  ACL_UNKNOWN_KEY,
  ACL_USER,
  ACL_WHITE,
  ACL_WRONG_SECRET,
  aclYaml,
} from "../harness/acl.ts";
import { startRocketbun, tempDir, waitFor, type RunningBinary } from "../harness/binary.ts";
import { recordCompat } from "../harness/compat.ts";
import { fuzzSeed, prng, type Rng } from "../harness/fuzz.ts";
import { createTopicExt, newClient, registerBrokerRequest, routeRequest } from "../harness/wire.ts";
import { testMinYaml } from "../client/support.ts";

/** How long a rewritten file may take to apply: the 5 s stat poll plus the debounce, with slack. */
const RELOAD_WITHIN_MS = 8_000;

let seq = 0;
const uniq = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${seq++}`;

function signed(cmd: RemotingCommand, cred: AclCredentials | undefined): RemotingCommand {
  if (cred) signRequest(cmd, cred);
  return cmd;
}

function sendV2(topic: string, body: string, group = "PG_acl_raw"): RemotingCommand {
  return createRequest(
    RequestCode.SEND_MESSAGE_V2,
    { a: group, b: topic, c: "TBW102", d: "4", e: "0", f: "0", g: String(Date.now()), h: "0", i: "", j: "0", k: "false", m: "false" },
    new TextEncoder().encode(body),
  );
}

function expectAclRefusal(r: RemotingCommand, what: RegExp): void {
  expect({ code: r.code, remark: r.remark }).toMatchObject({ code: ResponseCode.SYSTEM_ERROR });
  expect(r.remark ?? "").toStartWith(ACL_REMARK);
  expect(r.remark ?? "").toMatch(what);
}

async function brokerAcl(): Promise<{ srv: RunningBinary; aclFile: string }> {
  const dir = tempDir("rocketbun-acl-");
  const aclFile = join(dir, "plain_acl.yml");
  writeFileSync(aclFile, aclYaml());
  const srv = await startRocketbun({ role: "standalone", dir, configYaml: testMinYaml({ broker: { aclEnable: true, aclFile } }) });
  return { srv, aclFile };
}

describe("broker ACL (standalone, broker.aclEnable)", () => {
  let srv: RunningBinary;
  let aclFile = "";
  let wire: RemotingClient;
  const clients: { shutdown(): Promise<void> }[] = [];
  const okTopic = uniq("AclOk");
  let broker = "";

  const invoke = (cmd: RemotingCommand, addr = broker) => wire.invoke(addr, cmd, 5000);
  const diag = () => `\nbroker stderr:\n${srv.output.err().slice(-3000)}\nstdout:\n${srv.output.out().slice(-2000)}`;

  async function maxOffsets(topic: string): Promise<number[]> {
    const out: number[] = [];
    for (let q = 0; q < 4; q++) {
      const r = await invoke(signed(createRequest(RequestCode.GET_MAX_OFFSET, { topic, queueId: String(q) }), ACL_ADMIN));
      out.push(r.code === ResponseCode.SUCCESS ? Number(r.extFields?.offset) : -1);
    }
    return out;
  }
  async function adminTopic(topic: string): Promise<number> {
    return (await fetch(`${srv.adminUrl}/topics/${encodeURIComponent(topic)}`)).status;
  }
  async function topicNames(): Promise<string[]> {
    const j = (await (await fetch(`${srv.adminUrl}/topics`)).json()) as { topics: { topicName: string }[] };
    const names = j.topics.map((t) => t.topicName).sort();
    expect(names).toContain(okTopic);
    return names;
  }
  async function createTopic(topic: string, cred: AclCredentials | undefined): Promise<RemotingCommand> {
    return invoke(signed(createRequest(RequestCode.UPDATE_AND_CREATE_TOPIC, createTopicExt(topic, 4)), cred));
  }
  async function waitRoute(topic: string): Promise<void> {
    await waitFor(async () => (await invoke(routeRequest(topic), srv.namesrvAddr)).code === ResponseCode.SUCCESS, 15_000, `the route of ${topic}`);
  }
  function producer(cred: AclCredentials | undefined): Producer {
    const p = new Producer({ namesrv: srv.namesrvAddr, group: uniq("PG_acl"), retryTimesWhenSendFailed: 0, ...(cred ? { credentials: cred } : {}) });
    clients.push(p);
    return p;
  }
  function puller(group: string, cred: AclCredentials | undefined): PullConsumer {
    const c = new PullConsumer({ namesrv: srv.namesrvAddr, group, fromWhere: "first", autoCommit: false, ...(cred ? { credentials: cred } : {}) });
    clients.push(c);
    return c;
  }
  /** Sends with `cred` and expects an ACL refusal whose remark matches `what`, with the topic's offsets unchanged. */
  async function refusedSend(cred: AclCredentials | undefined, topic: string, what: RegExp): Promise<void> {
    const before = await maxOffsets(topic);
    const p = producer(cred);
    await p.start();
    const err = await p.send({ topic, body: "must-not-be-stored" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MQBrokerError);
    expect((err as MQBrokerError).code).toBe(ResponseCode.SYSTEM_ERROR);
    expect((err as Error).message).toContain(ACL_REMARK);
    expect((err as Error).message).toMatch(what);
    expect(await maxOffsets(topic)).toEqual(before);
  }
  function rewrite(text: string, how: "rename" | "in-place"): void {
    if (how === "rename") {
      writeFileSync(`${aclFile}.tmp`, text);
      renameSync(`${aclFile}.tmp`, aclFile);
    } else {
      writeFileSync(aclFile, text);
    }
  }
  async function userMayPublishSubOnly(): Promise<boolean> {
    const r = await invoke(signed(sendV2(ACL_SUB_ONLY_TOPIC, "probe"), ACL_USER));
    return r.code === ResponseCode.SUCCESS;
  }

  /** Each test of this describe is also a row of the matrix. */
  function row(name: string, fn: () => Promise<void>, timeoutMs = 30_000): void {
    test(
      name,
      async () => {
        try {
          await fn();
        } catch (e) {
          recordCompat({
            scenario: `acl: ${name}`,
            client: "rocketbun-client",
            broker: "rocketbun",
            ok: false,
            detail: `${String(e).slice(0, 300)}`,
          });
          throw new Error(`${String(e)}${diag()}`);
        }
        recordCompat({ scenario: `acl: ${name}`, client: "rocketbun-client", broker: "rocketbun", ok: true });
      },
      timeoutMs,
    );
  }

  beforeAll(async () => {
    ({ srv, aclFile } = await brokerAcl());
    broker = `127.0.0.1:${srv.ports.broker}`;
    wire = newClient();
    for (const t of [okTopic, ACL_SUB_ONLY_TOPIC, ACL_DENIED_TOPIC]) {
      const r = await createTopic(t, ACL_ADMIN);
      if (r.code !== ResponseCode.SUCCESS) throw new Error(`admin could not create ${t}: ${r.code} ${r.remark}${diag()}`);
    }
    for (const t of [okTopic, ACL_SUB_ONLY_TOPIC]) await waitRoute(t);
  }, 60_000);

  afterAll(async () => {
    for (const c of clients.reverse()) await c.shutdown().catch(() => {});
    wire?.close();
    await srv?.[Symbol.asyncDispose]();
  }, 30_000);

  row("right key: a signed producer sends and a signed consumer receives", async () => {
    const p = producer(ACL_USER);
    await p.start();
    const bodies = ["a", "b", "c", "d", "e", "f"].map((x) => `ok-${x}`);
    for (const body of bodies) expect((await p.send({ topic: okTopic, body })).status).toBe("SEND_OK");
    const c = puller(uniq("GID_acl_ok"), ACL_USER);
    await c.start();
    c.assign(await c.fetchQueues(okTopic));
    const got: MessageExt[] = [];
    await waitFor(
      async () => {
        got.push(...(await c.poll(300)));
        return got.length >= bodies.length;
      },
      15_000,
      () => `${bodies.length} messages (have ${got.length})`,
    );
    expect(got.map((m) => new TextDecoder().decode(m.body)).sort()).toEqual(bodies);
    // The admin account may do everything, including admin requests.
    expect((await invoke(signed(sendV2(ACL_DENIED_TOPIC, "admin"), ACL_ADMIN))).code).toBe(ResponseCode.SUCCESS);
  });

  row("wrong secret: refused with 'Check signature failed', nothing stored", async () => {
    await refusedSend(ACL_WRONG_SECRET, okTopic, /Check signature failed for accessKey=RbAclUser$/);
    const raw = await invoke(signed(sendV2(okTopic, "x"), ACL_WRONG_SECRET));
    expectAclRefusal(raw, /Check signature failed for accessKey=RbAclUser/);
  });

  row("unknown access key: refused with 'No acl config', nothing stored", async () => {
    await refusedSend(ACL_UNKNOWN_KEY, okTopic, /No acl config for RbAclNobody/);
  });

  row("no signature: a client without credentials and an unsigned frame are refused, nothing stored", async () => {
    // The client fetches routes from the name server (not checked: namesrv.aclEnable is off) and then sends unsigned.
    await refusedSend(undefined, okTopic, /No accessKey is configured/);
    const before = await maxOffsets(okTopic);
    expectAclRefusal(await invoke(sendV2(okTopic, "unsigned")), /No accessKey is configured/);
    // A signature without its AccessKey, and an AccessKey with a signature of other content.
    const stripped = signed(sendV2(okTopic, "stripped"), ACL_USER);
    delete stripped.extFields!.AccessKey;
    expectAclRefusal(await invoke(stripped), /No accessKey is configured/);
    const tampered = signed(sendV2(okTopic, "tampered"), ACL_USER);
    tampered.body = new TextEncoder().encode("tampered!");
    expectAclRefusal(await invoke(tampered), /Check signature failed/);
    expect(await maxOffsets(okTopic)).toEqual(before);
  });

  row("a topic the account may not PUB: refused, nothing stored; SUB is still allowed", async () => {
    await refusedSend(ACL_USER, ACL_SUB_ONLY_TOPIC, /No default permission for topic:AclSubOnlyTopic/);
    await refusedSend(ACL_USER, ACL_DENIED_TOPIC, /No default permission for topic:AclDeniedTopic/);
    // SUB on the SUB-only topic: a pull is let through (and finds nothing new).
    const pull = await invoke(
      signed(
        createRequest(RequestCode.PULL_MESSAGE, {
          consumerGroup: uniq("GID_acl_subonly"),
          topic: ACL_SUB_ONLY_TOPIC,
          queueId: "0",
          queueOffset: "0",
          maxMsgNums: "32",
          sysFlag: "0",
          commitOffset: "0",
          suspendTimeoutMillis: "0",
          subscription: "*",
          subVersion: "0",
          expressionType: "TAG",
        }),
        ACL_USER,
      ),
    );
    expect(pull.remark ?? "").not.toContain(ACL_REMARK);
  });

  row("a group the account may not SUB: heartbeat, pull and offset commit refused, no member, offsets unchanged", async () => {
    const before = await maxOffsets(okTopic);
    const c = puller(ACL_DENIED_GROUP, ACL_USER);
    const started = await c.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    const got: MessageExt[] = [];
    if (started === undefined) {
      try {
        c.assign(await c.fetchQueues(okTopic));
        const deadline = Date.now() + 2500;
        while (Date.now() < deadline) got.push(...(await c.poll(300).catch(() => [])));
      } catch {
        // refused: what we expect
      }
    }
    expect(got.length).toBe(0);
    const pull = await invoke(
      signed(
        createRequest(RequestCode.PULL_MESSAGE, {
          consumerGroup: ACL_DENIED_GROUP,
          topic: okTopic,
          queueId: "0",
          queueOffset: "0",
          maxMsgNums: "32",
          sysFlag: "0",
          commitOffset: "0",
          suspendTimeoutMillis: "0",
          subscription: "*",
          subVersion: "0",
        }),
        ACL_USER,
      ),
    );
    expectAclRefusal(pull, /No default permission for group:AclDeniedGroup/);
    const commit = await invoke(
      signed(
        createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: ACL_DENIED_GROUP, topic: okTopic, queueId: "0", commitOffset: "3" }),
        ACL_USER,
      ),
    );
    expectAclRefusal(commit, /No default permission for group:AclDeniedGroup/);
    const offset = await invoke(
      signed(createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: ACL_DENIED_GROUP, topic: okTopic, queueId: "0" }), ACL_ADMIN),
    );
    expect(offset.code === ResponseCode.SUCCESS ? Number(offset.extFields?.offset) : -1).toBeLessThan(1);
    const members = await invoke(signed(createRequest(RequestCode.GET_CONSUMER_LIST_BY_GROUP, { consumerGroup: ACL_DENIED_GROUP }), ACL_ADMIN));
    const ids =
      members.code === ResponseCode.SUCCESS && members.body
        ? (JSON.parse(new TextDecoder().decode(members.body)) as { consumerIdList: string[] }).consumerIdList
        : [];
    expect(ids).toEqual([]);
    expect(await maxOffsets(okTopic)).toEqual(before);
  });

  row("a non-admin creating, deleting or configuring: refused, the topic table unchanged", async () => {
    const t = uniq("AclNotCreated");
    expectAclRefusal(await createTopic(t, ACL_USER), /Need admin permission for request code=17, but accessKey=RbAclUser is not/);
    expectAclRefusal(await createTopic(t, undefined), /No accessKey is configured/);
    expect(await adminTopic(t)).toBe(404);
    expect(await adminTopic(okTopic)).toBe(200);
    const del = await invoke(signed(createRequest(RequestCode.DELETE_TOPIC_IN_BROKER, { topic: okTopic }), ACL_USER));
    expectAclRefusal(del, /Need admin permission for request code=215/);
    expect(await adminTopic(okTopic)).toBe(200);
    const cfg = await invoke(signed(createRequest(RequestCode.UPDATE_BROKER_CONFIG, {}, new TextEncoder().encode("brokerPermission=4\n")), ACL_USER));
    expectAclRefusal(cfg, /Need admin permission for request code=25/);
    const group = await invoke(
      signed(
        createRequest(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, new TextEncoder().encode(JSON.stringify({ groupName: "GID_x" }))),
        ACL_USER,
      ),
    );
    expectAclRefusal(group, /Need admin permission for request code=200/);
    // And the admin may.
    expect((await createTopic(t, ACL_ADMIN)).code).toBe(ResponseCode.SUCCESS);
    expect(await adminTopic(t)).toBe(200);
  });

  row("white-listed address: the account's whiteRemoteAddress lets 127.0.0.1 in without a signature", async () => {
    const before = await maxOffsets(okTopic);
    const unsigned = sendV2(okTopic, "white");
    unsigned.extFields!.AccessKey = ACL_WHITE.accessKey;
    expect((await invoke(unsigned)).code).toBe(ResponseCode.SUCCESS);
    const wrong = signed(sendV2(okTopic, "white-wrong-sig"), { ...ACL_WHITE, secretKey: "wrong" });
    expect((await invoke(wrong)).code).toBe(ResponseCode.SUCCESS);
    const after = await maxOffsets(okTopic);
    expect(after.reduce((a, b) => a + b, 0) - before.reduce((a, b) => a + b, 0)).toBe(2);
  });

  row(
    "the file rewritten while running (atomic rename, then in place) applies within seconds; globalWhiteRemoteAddresses",
    async () => {
      expect(await userMayPublishSubOnly()).toBe(false);
      const t0 = Date.now();
      rewrite(aclYaml({ userTopicPerms: [`${ACL_SUB_ONLY_TOPIC}=PUB|SUB`] }), "rename");
      await waitFor(userMayPublishSubOnly, RELOAD_WITHIN_MS, "the renamed file's rules (PUB on the SUB-only topic)");
      const renameMs = Date.now() - t0;
      // In place: 127.0.0.1 white-listed globally, so an unsigned request passes.
      const t1 = Date.now();
      rewrite(aclYaml({ globalWhite: ["127.0.0.1"], userTopicPerms: [`${ACL_SUB_ONLY_TOPIC}=PUB|SUB`] }), "in-place");
      await waitFor(
        async () => (await invoke(sendV2(okTopic, "global-white"))).code === ResponseCode.SUCCESS,
        RELOAD_WITHIN_MS,
        "the in-place file's rules (127.0.0.1 globally white-listed)",
      );
      const inPlaceMs = Date.now() - t1;
      // Back to the fixture: refused again.
      rewrite(aclYaml(), "in-place");
      await waitFor(async () => !(await userMayPublishSubOnly()), RELOAD_WITHIN_MS, "the original rules again");
      expectAclRefusal(await invoke(sendV2(okTopic, "unsigned-again")), /No accessKey is configured/);
      console.log(`acl reload: rename applied in ${renameMs} ms, in-place write in ${inPlaceMs} ms`);
    },
    40_000,
  );

  row(
    "a bad rewrite keeps the old rules and the log names file:line:col",
    async () => {
      const bad = `${aclYaml({ globalWhite: ["127.0.0.1"] })}\n  - accessKey: [unclosed\n`;
      rewrite(bad, "in-place");
      const logs = () => srv.output.err() + srv.output.out();
      await waitFor(
        () => logs().includes(`ACL file ${aclFile} refused`),
        RELOAD_WITHIN_MS,
        () => `the refusal in the log${diag()}`,
      );
      const refusal = logs().slice(logs().indexOf(`ACL file ${aclFile} refused`));
      expect(refusal).toMatch(new RegExp(`${aclFile.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:\\d+:\\d+`));
      // The old rules: an unsigned request is still refused although the bad file white-lists 127.0.0.1.
      expectAclRefusal(await invoke(sendV2(okTopic, "bad-file")), /No accessKey is configured/);
      rewrite(aclYaml(), "in-place");
      await Bun.sleep(500);
    },
    30_000,
  );

  row(
    "SIGHUP re-reads the file (a change the watcher cannot see: same size, same mtime)",
    async () => {
      // Same length as the fixture with a different secret for the user, and the old mtime put back:
      // neither the stat poll nor the watcher's stat compare sees a change, only SIGHUP re-reads it.
      const old = readFileSync(aclFile, "utf8");
      const rotated = { ...ACL_USER, secretKey: ACL_USER.secretKey.replace(/1$/, "2") };
      const changed = old.replace(ACL_USER.secretKey, rotated.secretKey);
      expect(changed.length).toBe(old.length);
      const st = statSync(aclFile);
      try {
        writeFileSync(aclFile, changed);
        // Seconds as numbers keep the sub-millisecond part (a Date would round it, and the stat would differ).
        utimesSync(aclFile, st.atimeMs / 1000, st.mtimeMs / 1000);
        expect(statSync(aclFile).mtimeMs).toBe(st.mtimeMs);
        await Bun.sleep(6_000);
        expect((await invoke(signed(sendV2(okTopic, "old-secret"), ACL_USER))).code).toBe(ResponseCode.SUCCESS);
        srv.proc.kill("SIGHUP");
        await waitFor(
          async () => (await invoke(signed(sendV2(okTopic, "new-secret"), rotated))).code === ResponseCode.SUCCESS,
          5_000,
          "the rotated secret after SIGHUP",
        );
        expectAclRefusal(await invoke(signed(sendV2(okTopic, "old-secret-2"), ACL_USER)), /Check signature failed/);
      } finally {
        writeFileSync(aclFile, aclYaml());
        srv.proc.kill("SIGHUP");
        await waitFor(
          async () => (await invoke(signed(sendV2(okTopic, "restored"), ACL_USER))).code === ResponseCode.SUCCESS,
          5_000,
          "the fixture again",
        );
      }
    },
    30_000,
  );

  row(
    "fuzz smoke: a few hundred malformed or wrongly signed frames are each refused or closed, nothing stored, signed clients still served",
    async () => {
      const seed = fuzzSeed();
      console.log(`acl frame fuzz seed ${seed} (SEED=${seed} replays)`);
      const rng = prng(seed);
      const topicsBefore = await topicNames();
      const offsetsBefore = await Promise.all([okTopic, ACL_SUB_ONLY_TOPIC, ACL_DENIED_TOPIC].map(maxOffsets));
      const outcomes = { refused: 0, closed: 0, silentTruncated: 0 };
      const N = 300;
      const port = srv.ports.broker!;
      for (let i = 0; i < N; i += 20) {
        const batch = Array.from({ length: Math.min(20, N - i) }, (_, k) => fuzzFrame(rng, okTopic, i + k));
        const results = await Promise.all(batch.map((f) => exchange(port, f.bytes, f.truncated ? 400 : 5000)));
        results.forEach((r, k) => {
          const f = batch[k]!;
          const where = `seed ${seed} frame ${i + k} (${f.kind})`;
          if (r.kind === "response") {
            expect({ where, code: r.cmd.code === ResponseCode.SUCCESS ? "SUCCESS" : "refused" }).toEqual({ where, code: "refused" });
            // A well-formed request is refused by the ACL check itself, before any processor.
            if (f.kind === "signed-wrong") expect({ where, remark: r.cmd.remark?.startsWith(ACL_REMARK) }).toEqual({ where, remark: true });
            outcomes.refused++;
          } else if (r.kind === "closed") outcomes.closed++;
          else {
            expect({ where, silent: true, truncated: f.truncated }).toEqual({ where, silent: true, truncated: true });
            outcomes.silentTruncated++;
          }
        });
      }
      console.log(`acl frame fuzz: ${JSON.stringify(outcomes)}`);
      // A correctly signed client is still served…
      const p = producer(ACL_USER);
      await p.start();
      expect((await p.send({ topic: okTopic, body: "after-fuzz" })).status).toBe("SEND_OK");
      // …and nothing the fuzz sent was stored or created (only that one message).
      const offsetsAfter = await Promise.all([okTopic, ACL_SUB_ONLY_TOPIC, ACL_DENIED_TOPIC].map(maxOffsets));
      expect(offsetsAfter[0]!.reduce((a, b) => a + b, 0)).toBe(offsetsBefore[0]!.reduce((a, b) => a + b, 0) + 1);
      expect(offsetsAfter.slice(1)).toEqual(offsetsBefore.slice(1));
      expect(await topicNames()).toEqual(topicsBefore);
    },
    90_000,
  );
});

interface FuzzFrame {
  kind: string;
  bytes: Uint8Array;
  /** A frame cut short: the broker may wait for the rest. */
  truncated: boolean;
}

const FUZZ_CODES = [
  RequestCode.SEND_MESSAGE,
  RequestCode.SEND_MESSAGE_V2,
  RequestCode.PULL_MESSAGE,
  RequestCode.HEART_BEAT,
  RequestCode.UPDATE_AND_CREATE_TOPIC,
  RequestCode.UPDATE_CONSUMER_OFFSET,
  RequestCode.DELETE_TOPIC_IN_BROKER,
  RequestCode.UPDATE_BROKER_CONFIG,
  RequestCode.SEND_BATCH_MESSAGE,
];

function fuzzValue(rng: Rng): string {
  switch (rng.int(0, 5)) {
    case 0:
      return "";
    case 1:
      return "t".repeat(rng.int(1, 20_000));
    case 2:
      return "a\uD800b";
    case 3:
      return new TextDecoder().decode(rng.bytes(rng.int(1, 40)));
    case 4:
      return ACL_USER.accessKey;
    default:
      return `v${rng.int(0, 9)}`;
  }
}

function frameOf(header: string | Uint8Array, body?: Uint8Array): Uint8Array {
  const h = typeof header === "string" ? new TextEncoder().encode(header) : header;
  const b = body ?? new Uint8Array();
  const out = Buffer.alloc(8 + h.length + b.length);
  out.writeInt32BE(4 + h.length + b.length, 0);
  out.writeInt32BE(h.length, 4); // JSON serialization type (0) in the top byte
  out.set(h, 8);
  out.set(b, 8 + h.length);
  return out;
}

/** One malformed or wrongly signed request frame (never oneway: a refused oneway request gets no answer). */
function fuzzFrame(rng: Rng, topic: string, i: number): FuzzFrame {
  const kind = rng.int(0, 9);
  const signedWrong = (): RemotingCommand => {
    const code = rng.pick(FUZZ_CODES);
    const ext: Record<string, string> =
      code === RequestCode.SEND_MESSAGE_V2
        ? { ...sendV2(rng.pick([topic, ACL_SUB_ONLY_TOPIC, `fuzz_${i}`]), "x").extFields }
        : code === RequestCode.UPDATE_AND_CREATE_TOPIC
          ? createTopicExt(`fuzz_created_${i}`, 4)
          : { topic: rng.pick([topic, `fuzz_${i}`]), consumerGroup: rng.pick(["GID_fuzz", ACL_DENIED_GROUP]), queueId: "0" };
    for (let n = rng.int(0, 3); n > 0; n--)
      ext[rng.pick(["topic", "b", "a", "AccessKey", "Signature", "SecurityToken", "x", "_UNIQUE_KEY_QUERY"])] = fuzzValue(rng);
    const cmd = createRequest(code, ext, rng.bool() ? rng.bytes(rng.int(0, 256)) : undefined);
    signRequest(cmd, rng.pick([ACL_USER, ACL_ADMIN, ACL_WRONG_SECRET, ACL_UNKNOWN_KEY]));
    const e = cmd.extFields!;
    switch (rng.int(0, 5)) {
      case 0:
        delete e.Signature;
        break;
      case 1:
        e.Signature = fuzzValue(rng);
        break;
      case 2:
        e[rng.pick(["topic", "b", "zz", "queueId"])] = `changed${rng.int(0, 1e6)}`;
        break;
      case 3:
        cmd.body = Uint8Array.from([...(cmd.body ?? []), rng.int(0, 255)]);
        break;
      case 4:
        e.AccessKey = rng.pick([ACL_UNKNOWN_KEY.accessKey, "", `${e.AccessKey} `]);
        break;
      default:
        e.Signature = e.Signature!.slice(0, -2) + (e.Signature!.endsWith("A=") ? "B=" : "A=");
    }
    // The wrong-secret and unknown-key signatures fail whatever the mutation did.
    return cmd;
  };
  switch (kind) {
    case 0:
    case 1:
    case 2:
    case 3:
      return { kind: "signed-wrong", bytes: encodeCommand(signedWrong()), truncated: false };
    case 4: {
      // extFields of the wrong JSON types, or with the ACL fields as non-strings.
      const ext = rng.pick<unknown>([
        { AccessKey: 5, Signature: null, topic },
        { AccessKey: [ACL_USER.accessKey], Signature: {}, b: topic },
        { AccessKey: ACL_ADMIN.accessKey, Signature: true },
        "not-an-object",
        [1, 2, 3],
        { AccessKey: { toString: "x" } },
      ]);
      const header = JSON.stringify({ code: rng.pick(FUZZ_CODES), language: "JAVA", version: 409, opaque: i + 1, flag: 0, extFields: ext });
      return { kind: "bad-types", bytes: frameOf(header), truncated: false };
    }
    case 5: {
      const header = rng.pick(["{", "null", "[]", '{"code":"x"}', `{"code":10,"opaque":${i},"flag":0,"extFields":{"a":`, "\u0000\u0001"]);
      return { kind: "bad-json", bytes: frameOf(header), truncated: false };
    }
    case 6: {
      // ROCKETMQ serialization (type 1) with random header bytes.
      const h = rng.bytes(rng.int(0, 64));
      const f = Buffer.from(frameOf(h));
      f[4] = 1;
      return { kind: "bad-rocketmq-header", bytes: f, truncated: false };
    }
    case 7: {
      // Header length bigger than the frame, or negative frame length.
      const f = Buffer.from(encodeCommand(signedWrong()));
      if (rng.bool()) f.writeInt32BE(f.length * 4, 4);
      else f.writeInt32BE(-5, 0);
      return { kind: "bad-lengths", bytes: f, truncated: false };
    }
    case 8: {
      // Cut short: the length promises more than arrives.
      const f = encodeCommand(signedWrong());
      return { kind: "truncated", bytes: f.slice(0, rng.int(1, f.length - 1)), truncated: true };
    }
    default:
      return { kind: "garbage", bytes: rng.bytes(rng.int(1, 200)), truncated: true };
  }
}

type Exchange = { kind: "response"; cmd: RemotingCommand } | { kind: "closed" } | { kind: "silent" };

/** Writes `bytes` on a fresh connection; the first whole frame back, the connection closing, or silence after `silenceMs`. */
async function exchange(port: number, bytes: Uint8Array, silenceMs: number): Promise<Exchange> {
  const { promise, resolve } = Promise.withResolvers<Exchange>();
  let buf = Buffer.alloc(0);
  const sock = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_s, chunk) {
        buf = Buffer.concat([buf, chunk]);
        if (buf.length >= 4) {
          const len = buf.readInt32BE(0);
          if (buf.length >= 4 + len) {
            const cmd = decodeCommand(buf.subarray(4, 4 + len));
            if ("invalid" in cmd) throw new Error(`the broker answered an undecodable frame: ${cmd.invalid}`);
            resolve({ kind: "response", cmd });
          }
        }
      },
      close() {
        resolve({ kind: "closed" });
      },
      error() {
        resolve({ kind: "closed" });
      },
    },
  });
  sock.write(bytes);
  const timer = setTimeout(() => resolve({ kind: "silent" }), silenceMs);
  const r = await promise;
  clearTimeout(timer);
  sock.end();
  return r;
}

describe("name server ACL (namesrv.aclEnable)", () => {
  let ns: RunningBinary | undefined;
  let master: RunningBinary | undefined;
  let aclFile = "";
  let wire: RemotingClient;

  beforeAll(async () => {
    const dir = tempDir("rocketbun-ns-acl-");
    aclFile = join(dir, "plain_acl.yml");
    // 127.0.0.1 is not white-listed yet: the broker below cannot register until it is.
    writeFileSync(aclFile, aclYaml({ noWhiteAccount: true }));
    ns = await startRocketbun({
      role: "namesrv",
      dir,
      configYaml: `logLevel: warn\nnamesrv:\n  listen: 127.0.0.1:0\n  admin: 127.0.0.1:0\n  aclEnable: true\n  aclFile: ${aclFile}\n`,
    });
    wire = newClient();
  }, 30_000);

  afterAll(async () => {
    wire?.close();
    await master?.[Symbol.asyncDispose]();
    await ns?.[Symbol.asyncDispose]();
  }, 30_000);

  const invoke = (cmd: RemotingCommand) => wire.invoke(ns!.namesrvAddr, cmd, 5000);
  const kv = (value: string) => createRequest(RequestCode.PUT_KV_CONFIG, { namespace: "ACL_TEST", key: "k", value });
  const getKv = async () => (await invoke(createRequest(RequestCode.GET_KV_CONFIG, { namespace: "ACL_TEST", key: "k" }))).extFields?.value;

  test("unsigned and non-admin writes are refused and change nothing; admin writes and unsigned reads pass", async () => {
    expectAclRefusal(await invoke(kv("unsigned")), /No accessKey is configured/);
    expectAclRefusal(await invoke(signed(kv("user"), ACL_USER)), /Need admin permission for request code=100, but accessKey=RbAclUser is not/);
    expectAclRefusal(await invoke(signed(kv("wrong"), ACL_WRONG_SECRET)), /Check signature failed/);
    expect(await getKv()).toBeUndefined();
    expect((await invoke(signed(kv("admin"), ACL_ADMIN))).code).toBe(ResponseCode.SUCCESS);
    expect(await getKv()).toBe("admin");
    const cfg = createRequest(RequestCode.UPDATE_NAMESRV_CONFIG, {}, new TextEncoder().encode("brokerExpiredMs=7000\n"));
    expectAclRefusal(await invoke(cfg), /No accessKey is configured/);
    expectAclRefusal(await invoke(createRequest(RequestCode.DELETE_TOPIC_IN_NAMESRV, { topic: "TBW102" })), /No accessKey is configured/);
    const reg = registerBrokerRequest(
      { clusterName: "AclCluster", brokerAddr: "127.0.0.1:1", brokerName: "acl-fake", brokerId: 0, haServerAddr: "127.0.0.1:2" },
      {
        AclFakeTopic: {
          topicName: "AclFakeTopic",
          readQueueNums: 1,
          writeQueueNums: 1,
          perm: 6,
          topicFilterType: "SINGLE_TAG",
          topicSysFlag: 0,
          order: false,
        },
      } as never,
    );
    expectAclRefusal(await invoke(reg), /No accessKey is configured/);
    // Reads are not checked: the fake broker's topic was not registered.
    const route = await invoke(routeRequest("AclFakeTopic"));
    expect(route.code).toBe(ResponseCode.TOPIC_NOT_EXIST);
    expect(route.remark ?? "").not.toContain(ACL_REMARK);
    const info = await invoke(createRequest(RequestCode.GET_BROKER_CLUSTER_INFO, {}));
    expect(info.code).toBe(ResponseCode.SUCCESS);
    expect(new TextDecoder().decode(info.body ?? new Uint8Array())).not.toContain("acl-fake");
  });

  test("a broker registers once 127.0.0.1 is white-listed (the file changed while running)", async () => {
    master = await startRocketbun({
      role: "master",
      configYaml: `logLevel: warn\nbroker:\n  listen: 127.0.0.1:0\n  admin: 127.0.0.1:0\n  brokerName: acl-broker\n  brokerClusterName: AclCluster\n  registerNameServerPeriodMs: 1000\n`,
      args: ["--namesrv", ns!.namesrvAddr],
    });
    const registered = async () => {
      const info = await invoke(createRequest(RequestCode.GET_BROKER_CLUSTER_INFO, {}));
      return new TextDecoder().decode(info.body ?? new Uint8Array()).includes("acl-broker");
    };
    await Bun.sleep(2500);
    expect(await registered()).toBe(false);
    writeFileSync(aclFile, aclYaml({ noWhiteAccount: true, globalWhite: ["127.0.0.1"] }));
    await waitFor(
      registered,
      RELOAD_WITHIN_MS + 2000,
      () => `the broker to register\n${master!.output.err().slice(-2000)}\n${ns!.output.err().slice(-2000)}`,
    );
  }, 40_000);
});
