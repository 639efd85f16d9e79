/**
 * decodeHeartbeat: HeartbeatData JSON from a socket is input; it becomes a typed value or a reason,
 * never an exception (docs/PROTOCOL.md §3.2).
 */
import { describe, expect, test } from "bun:test";
import { javaStringHashCode } from "../../commitlog/index.ts";
import { decodeHeartbeat } from "./client-manage.ts";

const enc = new TextEncoder();
const hb = (v: unknown) => decodeHeartbeat(enc.encode(JSON.stringify(v)));

describe("decodeHeartbeat", () => {
  test("an ali-ons heartbeat: consumers with tag subscriptions, producers, defaults for what is left out", () => {
    const r = hb({
      clientID: "10.0.0.9@12345",
      producerDataSet: [{ groupName: "PG" }, { groupName: "" }, null],
      consumerDataSet: [
        {
          groupName: "CG",
          consumeType: "CONSUME_PASSIVELY",
          messageModel: "CLUSTERING",
          consumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
          unitMode: false,
          subscriptionDataSet: [
            { topic: "TopicA", subString: "TagA || TagB", tagsSet: ["TagA", "TagB"], codeSet: [2598919, 2598920], subVersion: 1700000000000 },
            { topic: "%RETRY%CG", subString: "*", subVersion: 1700000000001, expressionType: "TAG" },
          ],
        },
        { groupName: "CG2" },
      ],
    });
    if ("invalid" in r) throw new Error(r.invalid);
    expect(r.clientID).toBe("10.0.0.9@12345");
    expect(r.producers).toEqual(["PG"]);
    expect(r.consumers[0]).toMatchObject({ groupName: "CG", consumeFromWhere: "CONSUME_FROM_FIRST_OFFSET" });
    expect(r.consumers[0]!.subscriptions).toEqual([
      {
        topic: "TopicA",
        subString: "TagA || TagB",
        tagsSet: ["TagA", "TagB"],
        codeSet: [2598919, 2598920],
        subVersion: 1700000000000,
        expressionType: "TAG",
      },
      { topic: "%RETRY%CG", subString: "*", tagsSet: [], codeSet: [], subVersion: 1700000000001, expressionType: "TAG" },
    ]);
    expect(r.consumers[1]).toEqual({
      groupName: "CG2",
      consumeType: "CONSUME_PASSIVELY",
      messageModel: "CLUSTERING",
      consumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
      subscriptions: [],
    });
  });

  test("the broker computes tag codes itself; a subVersion sent as a string is read, a garbage one is 0", () => {
    const r = hb({
      clientID: "c",
      consumerDataSet: [
        {
          groupName: "G",
          subscriptionDataSet: [
            { topic: "A", subString: "x", codeSet: [1], subVersion: "1700000000000" },
            { topic: "B", subString: "*", subVersion: "soon" },
            { topic: "C", subString: "*", subVersion: null },
          ],
        },
      ],
    });
    if ("invalid" in r) throw new Error(r.invalid);
    expect(r.consumers[0]!.subscriptions.map((s) => [s.topic, s.subVersion, s.codeSet])).toEqual([
      ["A", 1700000000000, [javaStringHashCode("x")]],
      ["B", 0, []],
      ["C", 0, []],
    ]);
  });

  test("refusals come back as reasons", () => {
    expect(decodeHeartbeat(undefined)).toEqual({ invalid: "heartbeat has no body" });
    expect(decodeHeartbeat(new Uint8Array(0))).toEqual({ invalid: "heartbeat has no body" });
    expect(decodeHeartbeat(enc.encode("{oops"))).toMatchObject({ invalid: expect.stringContaining("not JSON") });
    expect(hb(42)).toEqual({ invalid: "heartbeat body is not an object" });
    expect(hb({ producerDataSet: [] })).toEqual({ invalid: "heartbeat has no clientID" });
    expect(hb({ clientID: "c", consumerDataSet: [{ groupName: 7 }] })).toEqual({ invalid: "consumer data without groupName" });
    expect(hb({ clientID: "c", consumerDataSet: [{ groupName: "G", subscriptionDataSet: [5] }] })).toEqual({ invalid: "subscription without topic" });
    const sql = hb({
      clientID: "c",
      consumerDataSet: [{ groupName: "G", subscriptionDataSet: [{ topic: "T", subString: "a>1", expressionType: "SQL92" }] }],
    });
    expect(sql).toMatchObject({ invalid: expect.stringContaining("SQL92") });
  });
});
