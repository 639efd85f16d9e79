/**
 * The pull processor's rules (docs/PROTOCOL.md §3.5) and long polling, checked in process through
 * the broker fixture (../test-support.ts). Holds end by moving the virtual clock: nothing here
 * waits for real time. test/integration/broker-wire.test.ts checks the same against the binary.
 */
import { describe, expect, test } from "bun:test";
import { SysFlag } from "../../protocol/sys-flag.ts";
import { decodeOffsetMsgId } from "../../commitlog/index.ts";
import { PullSysFlag } from "../../protocol/pull-sys-flag.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import {
  createTopicRequest,
  heartbeatRequest,
  InProcessBroker,
  PULL_COMMIT_OFFSET,
  PULL_SUBSCRIPTION,
  PULL_SUSPEND,
  pulledRecords,
  pullRequest,
  sendV2Request,
} from "../test-support.ts";

const dec = new TextDecoder();
const text = (r: { body: Uint8Array }) => dec.decode(r.body);

function expectCode(res: RemotingCommand, code: number, remark?: string): void {
  expect({ code: res.code, remark: res.remark }).toMatchObject({ code });
  if (remark !== undefined) expect(res.remark ?? "").toContain(remark);
}

/** Codes 0/19/20/21 always carry the four offsets (docs/PROTOCOL.md §3.5). */
function expectPull(res: RemotingCommand, code: number, f: { next?: number; min?: number; max?: number } = {}): void {
  expectCode(res, code);
  const e = res.extFields ?? {};
  for (const k of ["suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"]) expect(e[k]).toMatch(/^-?\d+$/);
  if (f.next !== undefined) expect(Number(e.nextBeginOffset)).toBe(f.next);
  if (f.min !== undefined) expect(Number(e.minOffset)).toBe(f.min);
  if (f.max !== undefined) expect(Number(e.maxOffset)).toBe(f.max);
}

/** A pending answer whose arrival can be looked at without awaiting it. */
function watch(p: Promise<RemotingCommand>): { done: () => boolean; result: Promise<RemotingCommand> } {
  let done = false;
  const result = p.then((r) => ((done = true), r));
  return { done: () => done, result };
}

const SUSPENDED = PULL_SUBSCRIPTION | PULL_SUSPEND;

describe("pull processor", () => {
  test("unknown topic, bad group name, bad queue id, write-only topic, missing header", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("P", 2));
    await b.ok(createTopicRequest("WO", 1, 2));
    expectCode(await b.call(pullRequest("Nope")), ResponseCode.TOPIC_NOT_EXIST, "topic[Nope] not exist");
    expectCode(await b.call(pullRequest("P", { group: "bad/group" })), ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "bad/group");
    expectCode(await b.call(pullRequest("P", { queueId: 2 })), ResponseCode.SYSTEM_ERROR, "queueId[2] is illegal");
    expectCode(await b.call(pullRequest("P", { queueId: -1 })), ResponseCode.SYSTEM_ERROR, "illegal");
    expectCode(await b.call(pullRequest("WO")), ResponseCode.NO_PERMISSION, "forbidden");
    const missing = pullRequest("P");
    delete missing.extFields!.consumerGroup;
    expectCode(await b.call(missing), ResponseCode.SYSTEM_ERROR, "consumerGroup");
  });

  test("a group the broker has not seen is created on its first pull (autoCreateSubscriptionGroup)", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("P", 1));
    expectPull(await b.call(pullRequest("P", { group: "Fresh" })), ResponseCode.PULL_NOT_FOUND);
    expect(b.controller.info.consumerGroups()).toContain("Fresh");
  });

  test("offsets: empty queue, found, at the end, past the end, below the minimum", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("P", 2));
    for (let i = 0; i < 5; i++) await b.ok(sendV2Request("P", `m${i}`));
    // Empty queue: offset 0 is "nothing yet", any other has moved (to 0).
    expectPull(await b.call(pullRequest("P", { queueId: 1 })), ResponseCode.PULL_NOT_FOUND, { next: 0, min: 0, max: 0 });
    expectPull(await b.call(pullRequest("P", { queueId: 1, offset: 3 })), ResponseCode.PULL_OFFSET_MOVED, { next: 0 });
    const found = await b.call(pullRequest("P", { max: 3 }));
    expectPull(found, ResponseCode.SUCCESS, { next: 3, min: 0, max: 5 });
    expect(pulledRecords(found).map(text)).toEqual(["m0", "m1", "m2"]);
    expect(pulledRecords(await b.call(pullRequest("P", { offset: 3 }))).map((r) => r.queueOffset)).toEqual([3, 4]);
    expectPull(await b.call(pullRequest("P", { offset: 5 })), ResponseCode.PULL_NOT_FOUND, { next: 5, max: 5 });
    expectPull(await b.call(pullRequest("P", { offset: 9 })), ResponseCode.PULL_OFFSET_MOVED, { next: 5, max: 5 });
    expectPull(await b.call(pullRequest("P", { offset: -1 })), ResponseCode.PULL_OFFSET_MOVED, { next: 0, min: 0 });
  });

  test("tag filtering with the SUBSCRIPTION flag; everything filtered out is PULL_RETRY_IMMEDIATELY past what was scanned", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("F", 1));
    const tags = ["TagA", "TagB", undefined, "TagA", "TagC"];
    for (const [i, t] of tags.entries()) await b.ok(sendV2Request("F", `f${i}`, t === undefined ? {} : { tags: t }));
    const a = await b.call(pullRequest("F", { subscription: "TagA" }));
    expectPull(a, ResponseCode.SUCCESS, { next: 5 });
    expect(pulledRecords(a).map(text)).toEqual(["f0", "f3"]);
    expect(pulledRecords(await b.call(pullRequest("F", { subscription: "TagA || TagC" }))).map(text)).toEqual(["f0", "f3", "f4"]);
    expect(pulledRecords(await b.call(pullRequest("F", { subscription: "*" })))).toHaveLength(5);
    const none = await b.call(pullRequest("F", { subscription: "TagZ" }));
    expectPull(none, ResponseCode.PULL_RETRY_IMMEDIATELY, { next: 5 });
    expect(none.body).toBeUndefined();
    expectCode(await b.call(pullRequest("F", { subscription: "|| ||" })), ResponseCode.SUBSCRIPTION_PARSE_FAILED);
    const sql = pullRequest("F", { subscription: "a > 1" });
    sql.extFields!.expressionType = "SQL92";
    expectCode(await b.call(sql), ResponseCode.SYSTEM_ERROR, "SQL92");
  });

  test("without the SUBSCRIPTION flag the heartbeat's subscription decides: SUBSCRIPTION_NOT_EXIST, SUBSCRIPTION_NOT_LATEST, its tags", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("H", 1));
    for (const t of ["TagA", "TagB", "TagA"]) await b.ok(sendV2Request("H", t, { tags: t }));
    expectCode(await b.call(pullRequest("H", { group: "HG", sysFlag: 0 })), ResponseCode.SUBSCRIPTION_NOT_EXIST, "subscription not exist");
    await b.ok(heartbeatRequest("hb-1", { group: "HG", subs: [{ topic: "H", expr: "TagB", subVersion: 100 }] }));
    expect(pulledRecords(await b.call(pullRequest("H", { group: "HG", sysFlag: 0, subVersion: 100 }))).map(text)).toEqual(["TagB"]);
    expectCode(await b.call(pullRequest("H", { group: "HG", sysFlag: 0, subVersion: 200 })), ResponseCode.SUBSCRIPTION_NOT_LATEST);
  });

  test("COMMIT_OFFSET stores the group's offset; without the flag nothing is stored", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("C", 1));
    await b.ok(sendV2Request("C", "x"));
    await b.call(pullRequest("C", { group: "OG", offset: 1, commitOffset: 1 }));
    expect(b.controller.info.groupOffsets("OG")).toEqual([]);
    await b.call(pullRequest("C", { group: "OG", offset: 1, commitOffset: 1, sysFlag: PULL_SUBSCRIPTION | PULL_COMMIT_OFFSET }));
    expect(b.controller.info.groupOffsets("OG")).toEqual([{ topic: "C", queueId: 0, consumerOffset: 1, brokerOffset: 1, lag: 0 }]);
    const query = await b.ok(createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: "OG", topic: "C", queueId: "0" }));
    expect(query.extFields!.offset).toBe("1");
  });
});

describe("long polling", () => {
  test("a parked pull is answered when a matching message arrives, with no time passing", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("L", 2));
    const consumer = b.client();
    const parked = watch(consumer.invoke(b.addr, pullRequest("L", { sysFlag: SUSPENDED, suspendMs: 10_000 }), 60_000));
    await b.advance(200);
    expect(parked.done()).toBe(false);
    const t0 = b.clock.now();
    await b.ok(sendV2Request("L", "wake-up"));
    const res = await parked.result;
    expect(b.clock.now()).toBe(t0);
    expectPull(res, ResponseCode.SUCCESS, { next: 1 });
    expect(pulledRecords(res).map(text)).toEqual(["wake-up"]);
  });

  test("every writer wakes parked pulls through the store's arrival listener: a transaction's commit and a delayed delivery, not a half message", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("L", 1));
    const consumer = b.client();
    const forCommit = watch(consumer.invoke(b.addr, pullRequest("L", { sysFlag: SUSPENDED, suspendMs: 60_000 }), 120_000));
    const half = await b.ok(sendV2Request("L", "half", { sysFlag: SysFlag.TRANSACTION_PREPARED_TYPE, props: { TRAN_MSG: "true", PGROUP: "PG" } }));
    await b.advance(200);
    expect(forCommit.done()).toBe(false);
    const phy = decodeOffsetMsgId(half.extFields!.msgId!);
    if ("invalid" in phy) throw new Error(phy.invalid);
    const end = createRequest(RequestCode.END_TRANSACTION, {
      producerGroup: "PG",
      tranStateTableOffset: half.extFields!.queueOffset!,
      commitLogOffset: String(phy.offset),
      commitOrRollback: String(SysFlag.TRANSACTION_COMMIT_TYPE),
      fromTransactionCheck: "false",
      msgId: half.extFields!.msgId!,
    });
    await b.ok(end);
    expect(pulledRecords(await forCommit.result).map(text)).toEqual(["half"]);
    // A delayed message: parked in SCHEDULE_TOPIC_XXXX, then put by the schedule service when due.
    const forDelay = watch(consumer.invoke(b.addr, pullRequest("L", { offset: 1, sysFlag: SUSPENDED, suspendMs: 60_000 }), 120_000));
    await b.ok(sendV2Request("L", "later", { props: { DELAY: "1" } }));
    await b.advance(500);
    expect(forDelay.done()).toBe(false);
    await b.advance(700);
    expect(pulledRecords(await forDelay.result).map(text)).toEqual(["later"]);
  });

  test("a message for another queue, or one the subscription filters out, leaves the pull parked", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("L", 2));
    const consumer = b.client();
    const parked = watch(consumer.invoke(b.addr, pullRequest("L", { subscription: "TagA", sysFlag: SUSPENDED, suspendMs: 10_000 }), 60_000));
    await b.ok(sendV2Request("L", "other-queue", { queueId: 1, tags: "TagA" }));
    await b.ok(sendV2Request("L", "wrong-tag", { tags: "TagB" }));
    await b.advance(1000);
    expect(parked.done()).toBe(false);
    await b.ok(sendV2Request("L", "right-tag", { tags: "TagA" }));
    expect(pulledRecords(await parked.result).map(text)).toEqual(["right-tag"]);
  });

  test("nothing arrives: PULL_NOT_FOUND once the suspend time has passed (the scan runs every 500 ms)", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("L", 1));
    const parked = watch(b.client().invoke(b.addr, pullRequest("L", { sysFlag: SUSPENDED, suspendMs: 1200 }), 60_000));
    await b.advance(1000);
    expect(parked.done()).toBe(false);
    await b.advance(500);
    expect(parked.done()).toBe(true);
    expectPull(await parked.result, ResponseCode.PULL_NOT_FOUND, { next: 0, max: 0 });
  });

  test("a hold is capped at pullHoldMaxMs whatever the client asks; the cap changes live", async () => {
    await using b = InProcessBroker.start({ broker: { pullHoldMaxMs: 2000 } });
    await b.ok(createTopicRequest("L", 1));
    const consumer = b.client();
    const capped = watch(consumer.invoke(b.addr, pullRequest("L", { sysFlag: SUSPENDED, suspendMs: 30_000 }), 60_000));
    await b.advance(2500);
    expect(capped.done()).toBe(true);
    await b.controller.reconfigure({ pullHoldMaxMs: 5000 });
    const longer = watch(consumer.invoke(b.addr, pullRequest("L", { sysFlag: SUSPENDED, suspendMs: 30_000 }), 60_000));
    await b.advance(4000);
    expect(longer.done()).toBe(false);
    await b.advance(1500);
    expect(longer.done()).toBe(true);
  });

  test("without SUSPEND, or with pullHoldMaxMs 0, nothing is parked: answered at once", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("L", 1));
    expectPull(await b.call(pullRequest("L", { suspendMs: 5000 })), ResponseCode.PULL_NOT_FOUND);
    await b.controller.reconfigure({ pullHoldMaxMs: 0 });
    expectPull(await b.call(pullRequest("L", { sysFlag: SUSPENDED, suspendMs: 5000 })), ResponseCode.PULL_NOT_FOUND);
  });

  test("a parked pull's connection closing drops the hold; the broker's stop answers those still parked", async () => {
    const b = InProcessBroker.start();
    await b.ok(createTopicRequest("L", 1));
    const gone = b.client();
    void gone.invoke(b.addr, pullRequest("L", { sysFlag: SUSPENDED, suspendMs: 10_000 }), 60_000).catch(() => undefined);
    await b.advance(10);
    await gone.close();
    await b.ok(sendV2Request("L", "nobody-waits"));
    const parked = watch(b.client().invoke(b.addr, pullRequest("L", { offset: 1, sysFlag: SUSPENDED, suspendMs: 10_000 }), 60_000));
    await b.advance(10);
    expect(parked.done()).toBe(false);
    const stopping = b.stop();
    expectPull(await parked.result, ResponseCode.PULL_NOT_FOUND, { next: 1 });
    await stopping;
  });
});

describe("LITE_PULL_MESSAGE", () => {
  const litePull = (o: Parameters<typeof pullRequest>[1]) => {
    const cmd = pullRequest("LP", { group: "LiteGroup", ...o });
    cmd.code = RequestCode.LITE_PULL_MESSAGE;
    cmd.extFields!.sysFlag = String(Number(cmd.extFields!.sysFlag) | PullSysFlag.LITE_PULL);
    return cmd;
  };

  test("the 5.x lite pull is answered as a pull: found, not found, offset moved, and its commit offset is stored", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("LP", 1));
    expectPull(await b.call(litePull({})), ResponseCode.PULL_NOT_FOUND, { next: 0, max: 0 });
    for (const m of ["a", "b", "c"]) await b.ok(sendV2Request("LP", m));
    const found = await b.call(litePull({ max: 2 }));
    expectPull(found, ResponseCode.SUCCESS, { next: 2, min: 0, max: 3 });
    expect(pulledRecords(found).map(text)).toEqual(["a", "b"]);
    expectPull(await b.call(litePull({ offset: 9 })), ResponseCode.PULL_OFFSET_MOVED, { next: 3 });

    const withCommit = await b.call(litePull({ offset: 2, sysFlag: PULL_SUBSCRIPTION | PULL_COMMIT_OFFSET, commitOffset: 2 }));
    expect(pulledRecords(withCommit).map(text)).toEqual(["c"]);
    const q = await b.ok(createRequest(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: "LiteGroup", topic: "LP", queueId: "0" }));
    expect(q.extFields!.offset).toBe("2");
  });
});
