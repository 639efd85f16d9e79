/**
 * Request-reply over the wire (found by the Go interop suite: client-go's replier sends
 * SEND_REPLY_MESSAGE, which the broker refused as unsupported): the broker pushes a reply
 * (SEND_REPLY_MESSAGE / _V2) to the producer client named by its REPLY_TO_CLIENT property with
 * PUSH_REPLY_MESSAGE_TO_CLIENT, stores it in the reply topic, and answers SYSTEM_ERROR with the
 * Java broker's remarks when there is no such client or no property.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { scope } from "../../src/common/log.ts";
import { encodeProperties, parseProperties } from "../../src/commitlog/index.ts";
import {
  createRequest,
  createResponse,
  RemotingClient,
  REMOTING_CLIENT_DEFAULTS,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type ExtFields,
} from "../../src/remoting/index.ts";
import { ROOT, startRocketbun, waitFor } from "../harness/binary.ts";

const REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC";
const enc = new TextEncoder();

function reply(code: number, props: Record<string, string>, body: string): RemotingCommand {
  const header: ExtFields =
    code === RequestCode.SEND_REPLY_MESSAGE_V2
      ? {
          a: "replyPG",
          b: REPLY_TOPIC,
          c: "TBW102",
          d: "4",
          e: "0",
          f: "0",
          g: "1700000000000",
          h: "0",
          i: encodeProperties(props),
          j: "0",
          k: "false",
        }
      : {
          producerGroup: "replyPG",
          topic: REPLY_TOPIC,
          defaultTopic: "TBW102",
          defaultTopicQueueNums: "4",
          queueId: "0",
          sysFlag: "0",
          bornTimestamp: "1700000000000",
          flag: "0",
          properties: encodeProperties(props),
          reconsumeTimes: "0",
          unitMode: "false",
        };
  return createRequest(code, header, enc.encode(body));
}

test("SEND_REPLY_MESSAGE(_V2): pushed to the requester's connection and stored; unknown or missing requester = SYSTEM_ERROR", async () => {
  await using ns = await startRocketbun({ role: "namesrv" });
  await using broker = await startRocketbun({
    role: "master",
    args: ["--namesrv", ns.namesrvAddr, "--config", join(ROOT, "config", "test-min.yaml")],
  });
  const addr = `127.0.0.1:${broker.ports.broker}`;
  const pushes: RemotingCommand[] = [];
  const requester = new RemotingClient({
    ...REMOTING_CLIENT_DEFAULTS,
    log: scope("requester"),
    onRequest: (conn, cmd) => {
      pushes.push(cmd);
      conn.reply(cmd, createResponse(cmd, ResponseCode.SUCCESS));
    },
  });
  const replier = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("replier") });
  try {
    // The requester is known by the client id of its heartbeat (a producer group member).
    const hb = { clientID: "requester@1", producerDataSet: [{ groupName: "reqPG" }], consumerDataSet: [] };
    const r = await requester.invoke(addr, createRequest(RequestCode.HEART_BEAT, undefined, enc.encode(JSON.stringify(hb))), 3000);
    expect(r.code).toBe(ResponseCode.SUCCESS);

    for (const code of [RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2]) {
      pushes.length = 0;
      const props = { REPLY_TO_CLIENT: "requester@1", CORRELATION_ID: `c${code}`, MSG_TYPE: "reply" };
      const res = await replier.invoke(addr, reply(code, props, `pong ${code}`), 5000);
      expect({ code: res.code, remark: res.remark }).toEqual({ code: ResponseCode.SUCCESS, remark: undefined });
      expect(res.extFields?.msgId).toMatch(/^[0-9A-F]{32}$/);
      const push = await waitFor(() => pushes[0], 5000, "the pushed reply");
      expect(push.code).toBe(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT);
      expect(new TextDecoder().decode(push.body)).toBe(`pong ${code}`);
      const h = push.extFields ?? {};
      expect({ topic: h.topic, producerGroup: h.producerGroup, queueId: h.queueId, bornTimestamp: h.bornTimestamp, storeHost: h.storeHost }).toEqual({
        topic: REPLY_TOPIC,
        producerGroup: "replyPG",
        queueId: "0",
        bornTimestamp: "1700000000000",
        storeHost: addr,
      });
      const pushedProps = parseProperties(h.properties ?? "");
      expect(pushedProps.CORRELATION_ID).toBe(`c${code}`);
      expect(Number(pushedProps.PUSH_REPLY_TIME)).toBeGreaterThan(0);
      expect(h.bornHost).toMatch(/^127\.0\.0\.1:\d+$/);
    }

    // Stored too (Java's storeReplyMessageEnable): two records in the reply topic's queue 0.
    const max = await replier.invoke(addr, createRequest(RequestCode.GET_MAX_OFFSET, { topic: REPLY_TOPIC, queueId: "0" }), 3000);
    expect(max.extFields?.offset).toBe("2");

    pushes.length = 0;
    const unknown = await replier.invoke(addr, reply(RequestCode.SEND_REPLY_MESSAGE_V2, { REPLY_TO_CLIENT: "nobody@1" }, "x"), 5000);
    expect({ code: unknown.code, remark: unknown.remark }).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "push reply message fail, channel of <nobody@1> not found.",
    });
    const missing = await replier.invoke(addr, reply(RequestCode.SEND_REPLY_MESSAGE, {}, "x"), 5000);
    expect({ code: missing.code, remark: missing.remark }).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "reply message properties[REPLY_TO_CLIENT] is null",
    });
    expect(pushes).toEqual([]);
  } finally {
    requester.close();
    replier.close();
  }
});
