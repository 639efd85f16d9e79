import { describe, expect, test } from "bun:test";
import { humanTime, renderPairs, renderTable } from "./table.ts";
import { mqVersionName, parseClusterInfo, parseConsumeStats, parseProperties } from "./bodies.ts";
import { parseResetTime } from "./commands-offset.ts";

describe("admin table formatter", () => {
  test("headers get mqadmin's #, columns are as wide as their widest cell, numbers may align right", () => {
    const t = renderTable({
      headers: ["Topic", "QID", "Offset"],
      rows: [
        ["OrderTopic", 0, 12],
        ["T", 10, 3],
      ],
      right: [1, 2],
    });
    expect(t.split("\n")).toEqual(["#Topic      #QID  #Offset", "OrderTopic     0       12", "T             10        3"]);
  });

  test("empty and missing cells, trailing blanks trimmed, a table with no rows is its header", () => {
    expect(
      renderTable({
        headers: ["A", "B"],
        rows: [
          ["x", undefined],
          [null, "y"],
        ],
      }).split("\n"),
    ).toEqual(["#A  #B", "x", "    y"]);
    expect(renderTable({ headers: ["Group", "Count"], rows: [] })).toBe("#Group  #Count");
  });

  test("key : value pairs padded to the longest key", () => {
    expect(
      renderPairs([
        ["a", 1],
        ["long", "v"],
      ]),
    ).toBe("a    : 1\nlong : v");
  });

  test("times as mqadmin prints them, nothing for 0", () => {
    const ms = new Date(2024, 4, 1, 2, 3, 4, 5).getTime();
    expect(humanTime(ms)).toBe("2024-05-01 02:03:04,005");
    expect(humanTime(ms, false)).toBe("2024-05-01 02:03:04");
    expect(humanTime(0)).toBe("");
  });
});

describe("admin body readers", () => {
  test("MQVersion names: the irregular runs of the Java enum", () => {
    expect(mqVersionName(0)).toBe("V3_0_0_SNAPSHOT");
    expect(mqVersionName(15)).toBe("V3_0_0_FINAL");
    expect(mqVersionName(45)).toBe("V3_0_15");
    expect(mqVersionName(86)).toBe("V3_3_1_SNAPSHOT");
    expect(mqVersionName(211)).toBe("V3_9_9");
    expect(mqVersionName(212)).toBe("V4_0_0_SNAPSHOT");
    expect(mqVersionName(409)).toBe("V4_9_8");
    expect(mqVersionName(413)).toBe("V5_0_0");
    expect(mqVersionName(611)).toBe("V5_9_9");
    expect(mqVersionName(612)).toBe("HIGHER_VERSION");
  });

  test("ClusterInfo with fastjson's unquoted broker ids", () => {
    const body = new TextEncoder().encode(
      '{"brokerAddrTable":{"b":{"brokerAddrs":{0:"1.2.3.4:10911",1:"1.2.3.5:10911"},"brokerName":"b","cluster":"C"}},"clusterAddrTable":{"C":["b"]}}',
    );
    expect(parseClusterInfo(body)).toEqual({
      brokerAddrTable: { b: { cluster: "C", brokerName: "b", brokerAddrs: { "0": "1.2.3.4:10911", "1": "1.2.3.5:10911" } } },
      clusterAddrTable: { C: ["b"] },
    });
    expect(parseClusterInfo(new TextEncoder().encode("not json"))).toHaveProperty("invalid");
    expect(parseClusterInfo(undefined)).toEqual({ invalid: "empty body" });
  });

  test("ConsumeStats with object keys, queues sorted as Java sorts MessageQueue", () => {
    const mq = (t: string, q: number) => `{"brokerName":"b","queueId":${q},"topic":"${t}"}`;
    const w = (b: number, c: number) => `{"brokerOffset":${b},"consumerOffset":${c},"lastTimestamp":0}`;
    const body = new TextEncoder().encode(
      `{"consumeTps":1.5,"offsetTable":{${mq("T", 1)}:${w(5, 3)},${mq("A", 0)}:${w(2, 2)},${mq("T", 0)}:${w(1, 0)}}}`,
    );
    const r = parseConsumeStats(body);
    if ("invalid" in r) throw new Error(r.invalid);
    expect(r.consumeTps).toBe(1.5);
    expect(r.offsets.map(([q, o]) => `${q.topic}:${q.queueId}:${o.brokerOffset - o.consumerOffset}`)).toEqual(["A:0:0", "T:0:1", "T:1:2"]);
  });

  test("Java properties text", () => {
    expect(parseProperties("# c\na=1\nb = two words\n\nc\\:d=x\ne\n")).toEqual([
      ["a", "1"],
      ["b", "two words"],
      ["c:d", "x"],
      ["e", ""],
    ]);
  });

  test("resetOffsetByTime's times: now, milliseconds, mqadmin's date form; anything else is refused", () => {
    expect(parseResetTime("now")).toBe(-1);
    expect(parseResetTime("1700000000000")).toBe(1700000000000);
    expect(parseResetTime("2024-05-01#02:03:04:005")).toBe(new Date(2024, 4, 1, 2, 3, 4, 5).getTime());
    expect(parseResetTime("2024-02-30#00:00:00:000")).toBeUndefined();
    expect(parseResetTime("yesterday")).toBeUndefined();
  });
});
