import { describe, expect, test } from "bun:test";
import { MessageConst } from "../../protocol/message-const.ts";
import { SysFlag } from "../../protocol/sys-flag.ts";
import { parseHostAddress, parseProperties, type DecodedRecord } from "../../commitlog/index.ts";
import { message } from "../../commitlog/test-support.ts";
import {
  checkTimesOf,
  isTransactionPrepare,
  originOf,
  parseOpRecord,
  toCommitRequest,
  toHalfRequest,
  toOpRequest,
  toRenewedHalfRequest,
} from "./half-message.ts";
import { realQueueOf } from "../reput.ts";

const HALF = "RMQ_SYS_TRANS_HALF_TOPIC";
const host = parseHostAddress("127.0.0.1:10911");
const enc = new TextEncoder();

/** A half record as the store would hand it back. */
function halfRecord(props: Record<string, string>, o: { queueOffset?: number; physicalOffset?: number; sysFlag?: number } = {}): DecodedRecord {
  const req = message(HALF, 0, "payload", props);
  return {
    totalSize: 200,
    magic: 0,
    bodyCrc: 0,
    queueId: 0,
    flag: 7,
    queueOffset: o.queueOffset ?? 5,
    physicalOffset: o.physicalOffset ?? 4096,
    sysFlag: o.sysFlag ?? 0,
    bornTimestamp: 1000,
    bornHost: req.bornHost,
    storeTimestamp: 2000,
    storeHost: host,
    reconsumeTimes: 2,
    preparedTransactionOffset: 0,
    body: req.body,
    topic: HALF,
    properties: req.properties,
  };
}

describe("half message", () => {
  test("isTransactionPrepare: TRAN_MSG (any case) or a prepared/rollback sysFlag; not a delayed re-send", () => {
    expect(isTransactionPrepare({ TRAN_MSG: "true" }, 0, 0)).toBe(true);
    expect(isTransactionPrepare({ TRAN_MSG: "TRUE" }, 0, 0)).toBe(true);
    expect(isTransactionPrepare({ TRAN_MSG: "false" }, 0, 0)).toBe(false);
    expect(isTransactionPrepare({}, SysFlag.TRANSACTION_PREPARED_TYPE, 0)).toBe(true);
    expect(isTransactionPrepare({}, SysFlag.TRANSACTION_ROLLBACK_TYPE | SysFlag.COMPRESSED, 0)).toBe(true);
    expect(isTransactionPrepare({}, SysFlag.TRANSACTION_COMMIT_TYPE, 0)).toBe(false);
    expect(isTransactionPrepare({ TRAN_MSG: "true", DELAY: "3" }, 0, 1)).toBe(false);
    expect(isTransactionPrepare({ TRAN_MSG: "true", DELAY: "3" }, 0, 0)).toBe(true);
  });

  test("toHalfRequest parks the message in the half topic, queue 0, NOT_TYPE, real topic/queue in properties", () => {
    const req = message("Orders", 3, "x", { TRAN_MSG: "true", TAGS: "t" });
    req.sysFlag = SysFlag.TRANSACTION_PREPARED_TYPE | SysFlag.COMPRESSED;
    const half = toHalfRequest(req, HALF, "PG");
    expect(half.topic).toBe(HALF);
    expect(half.queueId).toBe(0);
    expect(half.sysFlag).toBe(SysFlag.COMPRESSED);
    const props = parseProperties(half.properties);
    expect(props).toMatchObject({ REAL_TOPIC: "Orders", REAL_QID: "3", TRAN_MSG: "true", TAGS: "t", PGROUP: "PG" });
    // A PGROUP the producer set is kept.
    const own = toHalfRequest(message("Orders", 1, "x", { PGROUP: "Mine" }), HALF, "PG");
    expect(parseProperties(own.properties).PGROUP).toBe("Mine");
    // The caller's request is not modified.
    expect(req.topic).toBe("Orders");
  });

  test("toCommitRequest restores topic and queue, COMMIT_TYPE, prepared offset = the half's CommitLog offset", () => {
    const rec = halfRecord(
      {
        TRAN_MSG: "true",
        PGROUP: "PG",
        REAL_TOPIC: "Orders",
        REAL_QID: "2",
        TAGS: "t",
        UNIQ_KEY: "U1",
        TRANSACTION_CHECK_TIMES: "3",
        TRAN_PREPARED_QUEUE_OFFSET: "1",
      },
      { sysFlag: SysFlag.COMPRESSED },
    );
    const c = toCommitRequest(rec);
    if ("invalid" in c) throw new Error(c.invalid);
    expect(c).toMatchObject({
      topic: "Orders",
      queueId: 2,
      flag: 7,
      reconsumeTimes: 2,
      bornTimestamp: 1000,
      preparedTransactionOffset: 4096,
      tags: "t",
      uniqKey: "U1",
    });
    expect(c.sysFlag).toBe(SysFlag.COMPRESSED | SysFlag.TRANSACTION_COMMIT_TYPE);
    expect(parseProperties(c.properties)).toEqual(Object.assign(Object.create(null), { TRAN_MSG: "true", PGROUP: "PG", TAGS: "t", UNIQ_KEY: "U1" }));
    expect(new TextDecoder().decode(c.body)).toBe("payload");
    expect(toCommitRequest(halfRecord({ REAL_QID: "1" }))).toEqual({ invalid: "half message has no REAL_TOPIC" });
    expect(realQueueOf({ REAL_TOPIC: "T", REAL_QID: "-1" })).toMatchObject({ invalid: expect.stringContaining("REAL_QID") });
  });

  test("renewed copies keep the origin and count check-backs", () => {
    const first = halfRecord({ REAL_TOPIC: "T", REAL_QID: "0" }, { queueOffset: 5 });
    expect(originOf(first, parseProperties(first.properties))).toBe(5);
    const copy = toRenewedHalfRequest(first, true);
    const p1 = parseProperties(copy.properties);
    expect(p1[MessageConst.TRAN_PREPARED_QUEUE_OFFSET]).toBe("5");
    expect(checkTimesOf(p1)).toBe(1);
    expect(copy.topic).toBe(HALF);
    // A copy of a copy (stored at 9) still names the first one; an uncounted copy keeps the count.
    const second = halfRecord({ ...p1 }, { queueOffset: 9 });
    expect(originOf(second, parseProperties(second.properties))).toBe(5);
    expect(checkTimesOf(parseProperties(toRenewedHalfRequest(second, false).properties))).toBe(1);
    expect(checkTimesOf(parseProperties(toRenewedHalfRequest(second, true).properties))).toBe(2);
    // An origin above the record's own offset cannot be right: the record's own offset is used.
    expect(originOf({ queueOffset: 3 }, { TRAN_PREPARED_QUEUE_OFFSET: "7" })).toBe(3);
    expect(checkTimesOf({ TRANSACTION_CHECK_TIMES: "x" })).toBe(0);
  });

  test("op records: ours round-trip, Java's (no origin) read with origin = body, others refused", () => {
    const req = toOpRequest("OP", 12, 4, host, 1);
    expect(req.tags).toBe("d");
    expect(new TextDecoder().decode(req.body)).toBe("12");
    expect(parseOpRecord({ queueOffset: 30, body: req.body, properties: req.properties })).toEqual({ opOffset: 30, halfOffset: 12, origin: 4 });
    expect(parseOpRecord({ queueOffset: 31, body: enc.encode("12"), properties: "TAGS\u0001d" })).toEqual({
      opOffset: 31,
      halfOffset: 12,
      origin: 12,
    });
    expect(parseOpRecord({ queueOffset: 1, body: enc.encode("12"), properties: "TAGS\u0001x" })).toHaveProperty("invalid");
    expect(parseOpRecord({ queueOffset: 1, body: enc.encode("twelve"), properties: "TAGS\u0001d" })).toHaveProperty("invalid");
    expect(parseOpRecord({ queueOffset: 1, body: enc.encode("-1"), properties: "TAGS\u0001d" })).toHaveProperty("invalid");
  });
});
