/**
 * The client-manage processor's rules (docs/PROTOCOL.md §3.2, §3.3), checked over the wire through
 * the in-process broker (../test-support.ts), where client-manage.test.ts checks only the heartbeat
 * decoder: HEART_BEAT registers consumer members and producers before it answers and makes the
 * group's %RETRY% topic (not on a slave); a body that does not decode is SYSTEM_ERROR with the
 * reason and registers nothing; a new member, an UNREGISTER_CLIENT and a closed connection each
 * send NOTIFY_CONSUMER_IDS_CHANGED to the group's members, an unchanged heartbeat does not; and
 * CHECK_CLIENT_CONFIG answers by expression type and by broker.enablePropertyFilter. The state
 * after is read through GET_CONSUMER_LIST_BY_GROUP and the controller's info (clients, topic).
 */
import { describe, expect, test } from "bun:test";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import { heartbeatRequest, InProcessBroker } from "../test-support.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const GROUP = "WireGroup";
const SQL_OFF_REMARK = "The broker does not support consumer to filter message by SQL92";

const listRequest = (group: string) => createRequest(RequestCode.GET_CONSUMER_LIST_BY_GROUP, { consumerGroup: group });

/** The answer's code and remark (null when none), compared in one assertion so a failure shows both. */
const answer = (res: RemotingCommand) => ({ code: res.code, remark: res.remark ?? null });

/** The group's member ids as GET_CONSUMER_LIST_BY_GROUP lists them; [] when it answers "no consumer". */
async function listed(b: InProcessBroker, group: string): Promise<string[]> {
  const res = await b.call(listRequest(group));
  if (res.code !== ResponseCode.SUCCESS) {
    expect(answer(res)).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: `no consumer for this group, ${group}` });
    return [];
  }
  return (JSON.parse(dec.decode(res.body)) as { consumerIdList: string[] }).consumerIdList;
}

/** The member ids per consumer group and per producer group, from the dashboard's clients view. */
function registered(b: InProcessBroker): { consumers: Record<string, string[]>; producers: Record<string, string[]> } {
  const v = b.controller.info.clients();
  return {
    consumers: Object.fromEntries(v.consumers.map((g) => [g.group, g.members.map((m) => m.clientId)])),
    producers: Object.fromEntries(v.producers.map((g) => [g.group, g.members.map((m) => m.clientId)])),
  };
}

/** A client process on its own connection, recording the NOTIFY_CONSUMER_IDS_CHANGED it is sent. */
function member(b: InProcessBroker, clientId: string) {
  const notified: RemotingCommand[] = [];
  const client = b.client((_conn, cmd) => {
    if (cmd.code === RequestCode.NOTIFY_CONSUMER_IDS_CHANGED) notified.push(cmd);
  });
  const call = (cmd: RemotingCommand) => client.invoke(b.addr, cmd, 10_000);
  return {
    notified,
    client,
    call,
    heartbeat: (producer?: string) =>
      call(heartbeatRequest(clientId, { group: GROUP, subs: [{ topic: "T", expr: "*" }], ...(producer ? { producer } : {}) })),
    unregister: (ext: Record<string, string>) => call(createRequest(RequestCode.UNREGISTER_CLIENT, { clientID: clientId, ...ext })),
  };
}

/** The notifications each recorder holds, after the oneway writes in flight have arrived. */
async function notifyCounts(b: InProcessBroker, ...members: { notified: RemotingCommand[] }[]): Promise<number[]> {
  await b.advance(0);
  return members.map((m) => m.notified.length);
}

const heartbeatBody = (o: object) => createRequest(RequestCode.HEART_BEAT, undefined, enc.encode(JSON.stringify(o)));

describe("HEART_BEAT", () => {
  test("a heartbeat registers its consumer member and producer before it is answered, and makes the group's retry topic", async () => {
    await using b = InProcessBroker.start();
    const hb = heartbeatRequest("10.0.0.1@a", { group: GROUP, subs: [{ topic: "T", expr: "TagA || TagB" }], producer: "PG" });
    expect(answer(await b.call(hb))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(await listed(b, GROUP)).toEqual(["10.0.0.1@a"]);
    expect(registered(b)).toEqual({ consumers: { [GROUP]: ["10.0.0.1@a"] }, producers: { PG: ["10.0.0.1@a"] } });
    const view = b.controller.info.clients().consumers[0]!;
    expect(view).toMatchObject({ consumeType: "CONSUME_PASSIVELY", messageModel: "CLUSTERING", consumeFromWhere: "CONSUME_FROM_LAST_OFFSET" });
    expect(view.subscriptions).toEqual([{ topic: "T", expressionType: "TAG", expression: "TagA || TagB" }]);
    // The subscription group was auto-created, and its retry topic with its retryQueueNums queues, perm 6.
    const retryQueues = b.controller.info.group(GROUP)!.retryQueueNums;
    expect(b.controller.info.topic(`%RETRY%${GROUP}`)).toMatchObject({ readQueueNums: retryQueues, writeQueueNums: retryQueues, perm: 6 });
  });

  test("a producer-only heartbeat registers the producer and no consumer group", async () => {
    await using b = InProcessBroker.start();
    expect(answer(await b.call(heartbeatRequest("10.0.0.1@p", { producer: "OnlyPG" })))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(registered(b)).toEqual({ consumers: {}, producers: { OnlyPG: ["10.0.0.1@p"] } });
  });

  test("on a slave a heartbeat registers the member but makes no retry topic", async () => {
    await using b = InProcessBroker.start({ role: "slave" });
    expect(answer(await b.call(heartbeatRequest("10.0.0.1@s", { group: GROUP, subs: [{ topic: "T", expr: "*" }] })))).toEqual({
      code: ResponseCode.SUCCESS,
      remark: null,
    });
    expect(await listed(b, GROUP)).toEqual(["10.0.0.1@s"]);
    // The group is there (its retryQueueNums would make a retry topic on a master); the topic is not.
    expect(b.controller.info.settings().brokerRole).toBe("SLAVE");
    expect(b.controller.info.group(GROUP)?.retryQueueNums).toBeGreaterThan(0);
    expect(b.controller.info.topic(`%RETRY%${GROUP}`)).toBeUndefined();
  });

  test("a body that does not decode is SYSTEM_ERROR with the reason, and registers nothing", async () => {
    await using b = InProcessBroker.start();
    const good = { groupName: "Fine", subscriptionDataSet: [{ topic: "T", subString: "*" }] };
    const sqlSub = { topic: "T", subString: "a > 1", expressionType: "SQL92" };
    const cases: [RemotingCommand, string][] = [
      [createRequest(RequestCode.HEART_BEAT), "heartbeat has no body"],
      [createRequest(RequestCode.HEART_BEAT, undefined, enc.encode("{not json")), "heartbeat body is not JSON"],
      [heartbeatBody([1, 2]), "heartbeat has no clientID"],
      [heartbeatBody({ producerDataSet: [{ groupName: "PG" }] }), "heartbeat has no clientID"],
      // A good consumer and producer before the bad one are not registered either.
      [
        heartbeatBody({ clientID: "c", producerDataSet: [{ groupName: "PG" }], consumerDataSet: [good, { consumeType: "X" }] }),
        "consumer data without groupName",
      ],
      [heartbeatBody({ clientID: "c", consumerDataSet: [{ groupName: "Fine", subscriptionDataSet: [{ subString: "*" }] }] }), "subscription without topic"],
      [
        heartbeatBody({ clientID: "c", consumerDataSet: [{ groupName: "Fine", subscriptionDataSet: [sqlSub] }] }),
        "expression type SQL92 is not supported by this broker",
      ],
    ];
    for (const [cmd, reason] of cases) {
      const res = await b.call(cmd);
      expect({ code: res.code, reason: (res.remark ?? "").startsWith(reason) }).toEqual({ code: ResponseCode.SYSTEM_ERROR, reason: true });
    }
    expect(registered(b)).toEqual({ consumers: {}, producers: {} });
    expect(await listed(b, "Fine")).toEqual([]);
    expect(b.controller.info.topic("%RETRY%Fine")).toBeUndefined();
  });

  test("a new member's heartbeat notifies every member of the group; an unchanged repeat notifies no one", async () => {
    await using b = InProcessBroker.start();
    const first = member(b, "10.0.0.1@first");
    const second = member(b, "10.0.0.2@second");
    await first.heartbeat();
    expect(await notifyCounts(b, first, second)).toEqual([1, 0]);
    await second.heartbeat();
    expect(await notifyCounts(b, first, second)).toEqual([2, 1]);
    for (const m of [...first.notified, ...second.notified]) {
      expect({ ext: m.extFields, body: m.body ?? null }).toEqual({ ext: { consumerGroup: GROUP }, body: null });
    }
    await first.heartbeat();
    await second.heartbeat();
    await b.advance(30_000);
    await first.heartbeat();
    expect(await notifyCounts(b, first, second)).toEqual([2, 1]);
    expect(await listed(b, GROUP)).toEqual(["10.0.0.1@first", "10.0.0.2@second"]);
  });
});

describe("UNREGISTER_CLIENT and closed connections", () => {
  test("UNREGISTER_CLIENT removes the member and the producer, answers SUCCESS with no extFields, and notifies the rest", async () => {
    await using b = InProcessBroker.start();
    const stays = member(b, "10.0.0.1@stays");
    const leaves = member(b, "10.0.0.2@leaves");
    await stays.heartbeat("PG");
    await leaves.heartbeat("PG");
    expect(await notifyCounts(b, stays, leaves)).toEqual([2, 1]);
    const res = await leaves.unregister({ consumerGroup: GROUP, producerGroup: "PG" });
    expect({ ...answer(res), ext: res.extFields ?? {} }).toEqual({ code: ResponseCode.SUCCESS, remark: null, ext: {} });
    expect(await notifyCounts(b, stays, leaves)).toEqual([3, 1]);
    expect(stays.notified.at(-1)!.extFields).toEqual({ consumerGroup: GROUP });
    expect(await listed(b, GROUP)).toEqual(["10.0.0.1@stays"]);
    expect(registered(b)).toEqual({ consumers: { [GROUP]: ["10.0.0.1@stays"] }, producers: { PG: ["10.0.0.1@stays"] } });
    // The last member leaving empties the group: nobody is left to notify.
    expect(answer(await stays.unregister({ consumerGroup: GROUP }))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(await notifyCounts(b, stays, leaves)).toEqual([3, 1]);
    expect(await listed(b, GROUP)).toEqual([]);
  });

  test("UNREGISTER_CLIENT of a producer group only leaves the client's consumer membership in place; clientID is required", async () => {
    await using b = InProcessBroker.start();
    const m = member(b, "10.0.0.1@m");
    await m.heartbeat("PG");
    expect(answer(await m.unregister({ producerGroup: "PG" }))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(registered(b)).toEqual({ consumers: { [GROUP]: ["10.0.0.1@m"] }, producers: {} });
    // Unknown groups and clients are no error.
    const unknown = await m.unregister({ consumerGroup: "NoSuchGroup", producerGroup: "NoSuchPG" });
    expect(answer(unknown)).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    // clientID is required: its absence is SYSTEM_ERROR naming it, and nothing is removed.
    const noId = await m.call(createRequest(RequestCode.UNREGISTER_CLIENT, { consumerGroup: GROUP }));
    expect({ code: noId.code, names: (noId.remark ?? "").includes("clientID") }).toEqual({ code: ResponseCode.SYSTEM_ERROR, names: true });
    expect(await listed(b, GROUP)).toEqual(["10.0.0.1@m"]);
  });

  test("a closed connection drops its consumer and producer memberships and notifies the rest of the group", async () => {
    await using b = InProcessBroker.start();
    const stays = member(b, "10.0.0.1@stays");
    const gone = member(b, "10.0.0.2@gone");
    await stays.heartbeat();
    await gone.heartbeat("PG");
    expect(await notifyCounts(b, stays, gone)).toEqual([2, 1]);
    await gone.client.close();
    expect(await notifyCounts(b, stays, gone)).toEqual([3, 1]);
    expect(await listed(b, GROUP)).toEqual(["10.0.0.1@stays"]);
    expect(registered(b)).toEqual({ consumers: { [GROUP]: ["10.0.0.1@stays"] }, producers: {} });
  });
});

const checkConfig = (subscriptionData?: object, raw?: string) =>
  createRequest(
    RequestCode.CHECK_CLIENT_CONFIG,
    undefined,
    enc.encode(raw ?? JSON.stringify({ clientId: "10.0.0.1@c", group: GROUP, ...(subscriptionData ? { subscriptionData } : {}) })),
  );

const sub = (expressionType: string, subString: string) => ({ topic: "T", subString, expressionType, classFilterMode: false, subVersion: 1 });

describe("CHECK_CLIENT_CONFIG", () => {
  test("without enablePropertyFilter: TAG is SUCCESS, SQL92 is SYSTEM_ERROR \"does not support\"", async () => {
    await using b = InProcessBroker.start();
    expect(answer(await b.call(checkConfig(sub("TAG", "TagA || TagB"))))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(answer(await b.call(checkConfig(sub("SQL92", "a > 1"))))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: SQL_OFF_REMARK });
    // The type is refused before the expression is looked at.
    expect(answer(await b.call(checkConfig(sub("SQL92", "a >"))))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: SQL_OFF_REMARK });
    expect(answer(await b.call(checkConfig()))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(answer(await b.call(checkConfig(undefined, "{not json")))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "CHECK_CLIENT_CONFIG body is not JSON",
    });
  });

  test("with enablePropertyFilter: a good SQL92 expression is SUCCESS, a bad one SUBSCRIPTION_PARSE_FAILED, another type SYSTEM_ERROR", async () => {
    await using b = InProcessBroker.start({ broker: { enablePropertyFilter: true } });
    expect(answer(await b.call(checkConfig(sub("SQL92", "a > 1 AND b = 'x'"))))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(answer(await b.call(checkConfig(sub("TAG", "*"))))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    const bad = await b.call(checkConfig(sub("SQL92", "a >")));
    expect(bad.code).toBe(ResponseCode.SUBSCRIPTION_PARSE_FAILED);
    expect(bad.remark ?? "").toContain("(a >)");
    expect(answer(await b.call(checkConfig(sub("CLASS", "x"))))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "The broker does not support consumer to filter message by CLASS",
    });
  });

  test("with enablePropertyFilter a SQL92 subscription's heartbeat registers it as SQL92", async () => {
    await using b = InProcessBroker.start({ broker: { enablePropertyFilter: true } });
    const hb = heartbeatBody({
      clientID: "10.0.0.1@sql",
      consumerDataSet: [{ groupName: GROUP, subscriptionDataSet: [{ topic: "T", subString: " a > 1 ", expressionType: "SQL92" }] }],
    });
    expect(answer(await b.call(hb))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(b.controller.info.clients().consumers[0]!.subscriptions).toEqual([{ topic: "T", expressionType: "SQL92", expression: "a > 1" }]);
  });
});
