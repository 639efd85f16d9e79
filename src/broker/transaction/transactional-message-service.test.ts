import { afterEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { scope } from "../../common/log.ts";
import { SysFlag } from "../../protocol/sys-flag.ts";
import { decodeRecordAt, MessageStore, parseHostAddress, parseProperties, type DecodedRecord } from "../../commitlog/index.ts";
import { ConsumerOffsetManager } from "../metadata.ts";
import { TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, type TopicConfig } from "../../protocol/topics.ts";
import { message, tempStoreDir, testStoreOptions } from "../../commitlog/test-support.ts";
import { RequestCode, ResponseCode, type RemotingCommand, type RemotingConnection } from "../../remoting/index.ts";
import { ProducerManager } from "../client-manager.ts";
import { TRANS_SYS_GROUP } from "./half-message.ts";
import { TransactionalMessageService, type EndTransactionRequest, type TransactionContext } from "./transactional-message-service.ts";

const T0 = 1_700_000_000_000;
const COMMIT = SysFlag.TRANSACTION_COMMIT_TYPE;
const ROLLBACK = SysFlag.TRANSACTION_ROLLBACK_TYPE;

/** A producer connection that records the oneway requests the broker sends it. */
class FakeConn {
  closed = false;
  readonly sent: RemotingCommand[] = [];
  readonly remoteAddress = "127.0.0.1:40000";
  invokeOneway(cmd: RemotingCommand): boolean {
    this.sent.push(cmd);
    return true;
  }
}

/** Store in a temp dir, consumer offsets, a producer registry, the service; clock injected. */
class Rig {
  readonly dir = tempStoreDir("tx-test-");
  t = T0;
  readonly now = () => this.t;
  readonly conn = new FakeConn();
  store!: MessageStore;
  offsets!: ConsumerOffsetManager;
  producers!: ProducerManager;
  svc!: TransactionalMessageService;
  readonly topics = new Map<string, TopicConfig>();

  constructor(readonly checkMax = 3) {
    this.open();
  }

  open(): void {
    this.store = MessageStore.open(testStoreOptions(this.dir, { now: this.now }));
    this.offsets = new ConsumerOffsetManager({ dir: this.dir, now: this.now });
    expect(this.offsets.load()).toEqual([]);
    this.producers = new ProducerManager();
    this.producers.register("PG", {
      clientId: "c1",
      conn: this.conn as unknown as RemotingConnection,
      language: "JAVA",
      version: 0,
      lastUpdateTimestamp: this.t,
    });
    const ctx: TransactionContext = {
      role: { isSlave: false },
      settings: { storeHost: parseHostAddress("127.0.0.1:10911"), brokerName: "b" },
      store: this.store,
      consumerOffsets: this.offsets,
      producers: this.producers,
      createTopicIfAbsent: (topic, n, perm) => {
        const cfg = {
          topicName: topic,
          readQueueNums: n,
          writeQueueNums: n,
          perm,
          topicFilterType: "SINGLE_TAG",
          topicSysFlag: 0,
          order: false,
        } as TopicConfig;
        if (!this.topics.has(topic)) this.topics.set(topic, cfg);
        return this.topics.get(topic)!;
      },
      now: this.now,
    };
    this.svc = new TransactionalMessageService(
      { checkIntervalMs: 60_000, transactionTimeOutMs: 6_000, transactionCheckMax: this.checkMax, maxAgeMs: 0 },
      scope("tx-test"),
    );
    this.svc.attach(ctx);
  }

  async restart(): Promise<void> {
    this.offsets.persistIfDirty();
    await this.store.shutdown();
    this.open();
  }

  /** Stores a half message for `topic` queue `qid` as the send processor does. */
  async half(topic: string, qid: number, body: string): Promise<{ commitLogOffset: number; tranStateTableOffset: number }> {
    const req = message(topic, qid, body, { TRAN_MSG: "true", PGROUP: "PG", UNIQ_KEY: `U-${body}` });
    req.bornTimestamp = this.t;
    const r = await this.store.putMessage(this.svc.prepare(req, "PG"));
    const a = r.appended[0]!;
    return { commitLogOffset: a.physicalOffset, tranStateTableOffset: a.queueOffset };
  }

  end(
    h: { commitLogOffset: number; tranStateTableOffset: number },
    type: number,
    group = "PG",
  ): ReturnType<TransactionalMessageService["endTransaction"]> {
    const req: EndTransactionRequest = { producerGroup: group, ...h, commitOrRollback: type, fromTransactionCheck: false };
    return this.svc.endTransaction(req);
  }

  /** Bodies in a topic's queue, as a consumer would read them. */
  bodies(topic: string, qid = 0): string[] {
    const r = this.store.getMessage(topic, qid, 0, 100);
    return r.messages.map((b) => {
      const rec = decodeRecordAt(b, 0, { checkCrc: true }) as DecodedRecord;
      return new TextDecoder().decode(rec.body);
    });
  }

  async close(): Promise<void> {
    await this.svc.stop();
    await this.store.shutdown();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const rigs: Rig[] = [];
function rig(checkMax?: number): Rig {
  const r = new Rig(checkMax);
  rigs.push(r);
  return r;
}
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.close();
});

describe("TransactionalMessageService", () => {
  test("a half message is invisible; commit stores it once in its real queue and writes an op", async () => {
    const r = rig();
    const h = await r.half("Orders", 2, "a");
    expect(r.bodies("Orders", 2)).toEqual([]);
    expect(r.bodies(TRANS_HALF_TOPIC)).toEqual(["a"]);
    expect(await r.end(h, COMMIT)).toMatchObject({ code: ResponseCode.SUCCESS, action: "committed" });
    expect(r.bodies("Orders", 2)).toEqual(["a"]);
    const committed = decodeRecordAt(r.store.getMessage("Orders", 2, 0, 1).messages[0]!, 0, { checkCrc: false }) as DecodedRecord;
    expect(committed.sysFlag & SysFlag.TRANSACTION_TYPE_MASK).toBe(COMMIT);
    expect(committed.preparedTransactionOffset).toBe(h.commitLogOffset);
    expect(parseProperties(committed.properties).REAL_TOPIC).toBeUndefined();
    expect(r.bodies(TRANS_OP_HALF_TOPIC)).toEqual([String(h.tranStateTableOffset)]);
    // The same END_TRANSACTION again (a retry, or a check-back answer) commits nothing more.
    expect(await r.end(h, COMMIT)).toMatchObject({ code: ResponseCode.SUCCESS, action: "duplicate" });
    expect(await r.end(h, ROLLBACK)).toMatchObject({ action: "duplicate" });
    expect(r.bodies("Orders", 2)).toEqual(["a"]);
    expect(r.svc.stats()).toMatchObject({ committed: 1, rolledBack: 0, halfMaxOffset: 1, opMaxOffset: 1 });
  });

  test("rollback writes only the op; unknown leaves the transaction open; bad requests are refused", async () => {
    const r = rig();
    const h = await r.half("Orders", 0, "b");
    expect(await r.end(h, 0)).toMatchObject({ code: ResponseCode.SUCCESS, action: "ignored" });
    expect(await r.end(h, COMMIT, "OtherGroup")).toMatchObject({
      code: ResponseCode.SYSTEM_ERROR,
      remark: expect.stringContaining("producer group"),
    });
    expect(await r.end({ ...h, tranStateTableOffset: 9 }, COMMIT)).toMatchObject({
      code: ResponseCode.SYSTEM_ERROR,
      remark: expect.stringContaining("state table offset"),
    });
    expect(await r.end({ ...h, commitLogOffset: h.commitLogOffset + 1 }, COMMIT)).toMatchObject({ code: ResponseCode.SYSTEM_ERROR });
    expect(await r.end({ commitLogOffset: 10_000_000, tranStateTableOffset: 0 }, COMMIT)).toMatchObject({ code: ResponseCode.SYSTEM_ERROR });
    expect(await r.end(h, ROLLBACK)).toMatchObject({ code: ResponseCode.SUCCESS, action: "rolled-back" });
    expect(await r.end(h, COMMIT)).toMatchObject({ action: "duplicate" });
    expect(r.bodies("Orders", 0)).toEqual([]);
    expect(r.bodies(TRANS_OP_HALF_TOPIC)).toEqual(["0"]);
  });

  test("check pass: waits for the timeout, then checks back with a copy under its real topic; its answer commits", async () => {
    const r = rig();
    await r.half("Orders", 1, "c");
    r.t += 1000;
    expect(await r.svc.runOnce()).toMatchObject({ scanned: 1, checks: 0 });
    expect(r.conn.sent).toEqual([]);
    r.t += 6000;
    expect(await r.svc.runOnce()).toMatchObject({ checks: 1 });
    expect(r.conn.sent).toHaveLength(1);
    const check = r.conn.sent[0]!;
    expect(check.code).toBe(RequestCode.CHECK_TRANSACTION_STATE);
    const ext = check.extFields!;
    expect(ext.tranStateTableOffset).toBe("1"); // the copy
    expect(ext.msgId).toBe("U-c");
    expect(ext.transactionId).toBe("U-c");
    const body = decodeRecordAt(check.body!, 0, { checkCrc: true }) as DecodedRecord;
    expect(body.topic).toBe("Orders");
    expect(body.queueId).toBe(1);
    expect(body.physicalOffset).toBe(Number(ext.commitLogOffset));
    expect(parseProperties(body.properties).TRANSACTION_CHECK_TIMES).toBe("1");
    // The scan cursor moved past the original and is kept as CID_RMQ_SYS_TRANS's offset.
    expect(r.offsets.query(TRANS_SYS_GROUP, TRANS_HALF_TOPIC, 0)).toBe(1);
    // The producer answers for the copy.
    expect(await r.end({ commitLogOffset: Number(ext.commitLogOffset), tranStateTableOffset: 1 }, COMMIT)).toMatchObject({ action: "committed" });
    expect(r.bodies("Orders", 1)).toEqual(["c"]);
    r.t += 60_000;
    expect(await r.svc.runOnce()).toMatchObject({ checks: 0 });
    expect(r.offsets.query(TRANS_SYS_GROUP, TRANS_HALF_TOPIC, 0)).toBe(2);
    expect(r.offsets.query(TRANS_SYS_GROUP, TRANS_OP_HALF_TOPIC, 0)).toBe(1);
  });

  test("a late commit of the original after a check-back copy: committed once, the copy is not checked again", async () => {
    const r = rig();
    const h = await r.half("Orders", 0, "d");
    r.t += 7000;
    await r.svc.runOnce();
    expect(r.conn.sent).toHaveLength(1);
    expect(await r.end(h, COMMIT)).toMatchObject({ action: "committed" });
    const ext = r.conn.sent[0]!.extFields!;
    expect(await r.end({ commitLogOffset: Number(ext.commitLogOffset), tranStateTableOffset: 1 }, COMMIT)).toMatchObject({ action: "duplicate" });
    r.t += 60_000;
    expect(await r.svc.runOnce()).toMatchObject({ checks: 0 });
    expect(r.conn.sent).toHaveLength(1);
    expect(r.bodies("Orders", 0)).toEqual(["d"]);
  });

  test("no answer: checked transactionCheckMax times, then moved to TRANS_CHECK_MAX_TIME_TOPIC and never checked again", async () => {
    const r = rig(3);
    await r.half("Orders", 0, "e");
    for (let i = 0; i < 5; i++) {
      r.t += 7000;
      await r.svc.runOnce();
    }
    expect(r.conn.sent).toHaveLength(3);
    expect(
      r.conn.sent.map((c) => parseProperties((decodeRecordAt(c.body!, 0, { checkCrc: false }) as DecodedRecord).properties).TRANSACTION_CHECK_TIMES),
    ).toEqual(["1", "2", "3"]);
    expect(r.bodies(TRANS_CHECK_MAX_TIME_TOPIC)).toEqual(["e"]);
    expect(r.svc.stats()).toMatchObject({ checksSent: 3, discarded: 1 });
    expect(r.bodies("Orders", 0)).toEqual([]);
  });

  test("no producer connected: the check is counted and nothing is sent", async () => {
    const r = rig();
    r.conn.closed = true;
    await r.half("Orders", 0, "f");
    r.t += 7000;
    expect(await r.svc.runOnce()).toMatchObject({ checks: 1 });
    expect(r.conn.sent).toEqual([]);
  });

  test("restart: the scan resumes from its persisted cursor and resolved transactions stay resolved", async () => {
    const r = rig();
    const a = await r.half("Orders", 0, "g1");
    const b = await r.half("Orders", 0, "g2");
    expect(await r.end(a, COMMIT)).toMatchObject({ action: "committed" });
    r.t += 7000;
    await r.svc.runOnce();
    expect(r.conn.sent.map((c) => c.extFields!.msgId)).toEqual(["U-g2"]);
    await r.restart();
    // A commit of a resolved transaction after the restart is still a duplicate.
    expect(await r.end(a, COMMIT)).toMatchObject({ action: "duplicate" });
    // b's original was copied (to 2) before the restart: that copy is what is checked now (copy 3).
    r.t += 60_000;
    await r.svc.runOnce();
    expect(r.conn.sent.map((c) => c.extFields!.tranStateTableOffset)).toEqual(["2", "3"]);
    expect(await r.end(b, COMMIT)).toMatchObject({ action: "committed" });
    expect(r.bodies("Orders", 0)).toEqual(["g1", "g2"]);
  });
});
