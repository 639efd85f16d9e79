/**
 * SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325) through the in-process broker
 * (./reply-message.ts): the requester is the test's own producer client, which records the
 * PUSH_REPLY_MESSAGE_TO_CLIENT the broker sends it and answers it. The reply is pushed to the client
 * its REPLY_TO_CLIENT names and stored in its topic too; the answer is the push's outcome with
 * Java's remarks; the send checks (role, topic, queue) come first.
 */
import { describe, expect, test } from "bun:test";
import { parseProperties } from "../../commitlog/index.ts";
import { createResponse, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import { createTopicRequest, heartbeatRequest, InProcessBroker, pulledRecords, pullRequest, sendV1Request, sendV2Request, type SendOptions } from "../test-support.ts";

const dec = new TextDecoder();
const REQUESTER = "10.0.0.1@requester";
const answer = (res: RemotingCommand) => ({ code: res.code, remark: res.remark ?? null });

/** SEND_REPLY_MESSAGE_V2: the V2 send with the reply's code. */
function replyV2(topic: string, body: string, o: SendOptions = {}): RemotingCommand {
  const cmd = sendV2Request(topic, body, o);
  cmd.code = RequestCode.SEND_REPLY_MESSAGE_V2;
  return cmd;
}
const replyV1 = (topic: string, body: string, o: SendOptions = {}) => sendV1Request(topic, body, o, RequestCode.SEND_REPLY_MESSAGE);
const to = (clientId: string) => ({ props: { REPLY_TO_CLIENT: clientId, CORRELATION_ID: "corr-1" } });

/** The requester: a producer client of group RPG on its own connection, answering pushes with `code`. */
async function requester(b: InProcessBroker, code: number = ResponseCode.SUCCESS) {
  const pushed: RemotingCommand[] = [];
  const client = b.client((conn, cmd) => {
    if (cmd.code !== RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT) return;
    pushed.push(cmd);
    conn.send(createResponse(cmd, code, code === ResponseCode.SUCCESS ? undefined : "requester gone"));
  });
  expect((await client.invoke(b.addr, heartbeatRequest(REQUESTER, { producer: "RPG" }), 10_000)).code).toBe(ResponseCode.SUCCESS);
  return pushed;
}

const stored = async (b: InProcessBroker) => pulledRecords(await b.call(pullRequest("ReplyT", { group: "Reader" }))).map((r) => dec.decode(r.body));

describe("reply messages", () => {
  test("V2 and V1: pushed to the requester with the reply header, stored in the reply topic, answered with the stored record", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("ReplyT", 1));
    const pushed = await requester(b);
    await b.advance(1234);

    const v2 = await b.call(replyV2("ReplyT", "answer-2", { ...to(REQUESTER), producerGroup: "Replier" }));
    expect(answer(v2)).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(v2.extFields).toMatchObject({ queueId: "0", queueOffset: "0" });
    expect(v2.extFields!.msgId).toMatch(/^[0-9A-F]{32}$/);
    const v1 = await b.call(replyV1("ReplyT", "answer-1", to(REQUESTER)));
    expect([v1.code, v1.extFields!.queueOffset]).toEqual([ResponseCode.SUCCESS, "1"]);

    expect(pushed.map((p) => dec.decode(p.body))).toEqual(["answer-2", "answer-1"]);
    const h = pushed[0]!.extFields!;
    expect(h).toMatchObject({ producerGroup: "Replier", topic: "ReplyT", queueId: "0", storeHost: b.addr, storeTimestamp: String(b.sim.now) });
    expect(h.bornHost).toStartWith("127.0.0.1:");
    expect(parseProperties(h.properties!)).toEqual({ REPLY_TO_CLIENT: REQUESTER, CORRELATION_ID: "corr-1", PUSH_REPLY_TIME: String(b.sim.now) });
    expect(await stored(b)).toEqual(["answer-2", "answer-1"]);
  });

  test("no REPLY_TO_CLIENT, an unknown requester or one that refuses the push: SYSTEM_ERROR with Java's remark, the reply still stored", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("ReplyT", 1));
    expect(answer(await b.call(replyV2("ReplyT", "r1")))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "reply message properties[REPLY_TO_CLIENT] is null",
    });
    expect(answer(await b.call(replyV2("ReplyT", "r2", to("10.9.9.9@nobody"))))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "push reply message fail, channel of <10.9.9.9@nobody> not found.",
    });
    const pushed = await requester(b, ResponseCode.SYSTEM_ERROR);
    expect(answer(await b.call(replyV2("ReplyT", "r3", to(REQUESTER))))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: `push reply message to ${REQUESTER}fail.`,
    });
    expect(pushed.length).toBe(1);
    expect(await stored(b)).toEqual(["r1", "r2", "r3"]);
  });

  test("the send checks come first: unknown topic, queue id out of range, bad topic name; nothing pushed or stored", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("ReplyT", 1));
    const pushed = await requester(b);
    expect(answer(await b.call(replyV2("NoSuchT", "x", to(REQUESTER))))).toEqual({
      code: ResponseCode.TOPIC_NOT_EXIST,
      remark: "topic[NoSuchT] not exist, apply first please!",
    });
    expect(answer(await b.call(replyV2("ReplyT", "x", { ...to(REQUESTER), queueId: 4 })))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "request queueId[4] is illegal, ReplyT has 1 queues",
    });
    const bad = await b.call(replyV2("bad topic!", "x", to(REQUESTER)));
    expect(bad.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(pushed).toEqual([]);
    expect(await stored(b)).toEqual([]);
  });

  test("a slave refuses replies (SERVICE_NOT_AVAILABLE), V1 and V2", async () => {
    await using b = InProcessBroker.start({ role: "slave" });
    const name = b.controller.info.settings().brokerName;
    const remark = `broker ${name} is a slave: it does not take writes, send to its master`;
    expect(answer(await b.call(replyV2("ReplyT", "x", to(REQUESTER))))).toEqual({ code: ResponseCode.SERVICE_NOT_AVAILABLE, remark });
    expect(answer(await b.call(replyV1("ReplyT", "x", to(REQUESTER))))).toEqual({ code: ResponseCode.SERVICE_NOT_AVAILABLE, remark });
  });
});
