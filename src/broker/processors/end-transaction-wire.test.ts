/**
 * END_TRANSACTION (./end-transaction.ts) through the in-process broker, where
 * end-transaction.test.ts checks the processor against a stub service: a half message is invisible
 * until committed, a rollback never shows it, a second end is a duplicate, an end that names no
 * half message (or the wrong group or half-queue offset) is refused, UNKNOWN leaves it open, and a
 * slave refuses the request.
 */
import { describe, expect, test } from "bun:test";
import { decodeOffsetMsgId } from "../../commitlog/index.ts";
import { SysFlag } from "../../protocol/sys-flag.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import { createTopicRequest, InProcessBroker, pulledRecords, pullRequest, sendV2Request } from "../test-support.ts";

const dec = new TextDecoder();
const answer = (res: RemotingCommand) => ({ code: res.code, remark: res.remark ?? null });

/** A half message of producer group PG on T: its msgId, half-queue offset and CommitLog offset. */
async function half(b: InProcessBroker, body: string) {
  const res = await b.ok(sendV2Request("T", body, { sysFlag: SysFlag.TRANSACTION_PREPARED_TYPE, props: { TRAN_MSG: "true", PGROUP: "PG" } }));
  const id = decodeOffsetMsgId(res.extFields!.msgId!);
  if ("invalid" in id) throw new Error(id.invalid);
  return { msgId: res.extFields!.msgId!, queueOffset: Number(res.extFields!.queueOffset), offset: id.offset };
}

function end(h: { msgId: string; queueOffset: number; offset: number }, type: number, o: { group?: string; queueOffset?: number } = {}): RemotingCommand {
  return createRequest(RequestCode.END_TRANSACTION, {
    producerGroup: o.group ?? "PG",
    tranStateTableOffset: String(o.queueOffset ?? h.queueOffset),
    commitLogOffset: String(h.offset),
    commitOrRollback: String(type),
    fromTransactionCheck: "false",
    msgId: h.msgId,
  });
}

const visible = async (b: InProcessBroker) => pulledRecords(await b.call(pullRequest("T", { group: "Reader" }))).map((r) => dec.decode(r.body));

describe("END_TRANSACTION", () => {
  test("commit makes the half message visible, rollback never does, UNKNOWN leaves it open; a second end is a duplicate", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    const a = await half(b, "committed");
    const r = await half(b, "rolled back");
    const u = await half(b, "unknown");
    expect(await visible(b)).toEqual([]);

    expect(answer(await b.call(end(a, SysFlag.TRANSACTION_COMMIT_TYPE)))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(answer(await b.call(end(r, SysFlag.TRANSACTION_ROLLBACK_TYPE)))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(answer(await b.call(end(u, SysFlag.TRANSACTION_NOT_TYPE)))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(await visible(b)).toEqual(["committed"]);
    expect(b.controller.info.transactions()).toMatchObject({ committed: 1, rolledBack: 1 });

    // The same end again, and a commit after the rollback: duplicates, nothing more is stored.
    expect((await b.call(end(a, SysFlag.TRANSACTION_COMMIT_TYPE))).code).toBe(ResponseCode.SUCCESS);
    expect((await b.call(end(r, SysFlag.TRANSACTION_COMMIT_TYPE))).code).toBe(ResponseCode.SUCCESS);
    expect(await visible(b)).toEqual(["committed"]);
    expect(b.controller.info.transactions()).toMatchObject({ committed: 1, rolledBack: 1 });
    // UNKNOWN left it open: it can still be committed.
    await b.ok(end(u, SysFlag.TRANSACTION_COMMIT_TYPE));
    expect(await visible(b)).toEqual(["committed", "unknown"]);
  });

  test("an end naming no half message, another producer group or another half-queue offset is SYSTEM_ERROR; nothing is stored", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest("T", 1));
    const h = await half(b, "half");
    const plain = await b.ok(sendV2Request("T", "plain"));
    const plainId = decodeOffsetMsgId(plain.extFields!.msgId!);
    if ("invalid" in plainId) throw new Error(plainId.invalid);
    const commit = SysFlag.TRANSACTION_COMMIT_TYPE;
    expect(answer(await b.call(end({ ...h, offset: plainId.offset }, commit)))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: `Find prepared transaction message failed (commitLogOffset ${plainId.offset})`,
    });
    expect(answer(await b.call(end(h, commit, { group: "OtherPG" })))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "The producer group wrong: OtherPG" });
    expect(answer(await b.call(end(h, commit, { queueOffset: h.queueOffset + 5 })))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: `The transaction state table offset wrong: ${h.queueOffset + 5}`,
    });
    const { commitLogOffset: _drop, ...partial } = end(h, commit).extFields!;
    expect(answer(await b.call(createRequest(RequestCode.END_TRANSACTION, partial)))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "the custom field <commitLogOffset> is null",
    });
    expect(await visible(b)).toEqual(["plain"]);
    expect(b.controller.info.transactions()).toMatchObject({ committed: 0, rolledBack: 0 });
  });

  test("a slave refuses it with SLAVE_NOT_AVAILABLE", async () => {
    await using b = InProcessBroker.start({ role: "slave" });
    const name = b.controller.info.settings().brokerName;
    expect(answer(await b.call(end({ msgId: "X", queueOffset: 0, offset: 0 }, SysFlag.TRANSACTION_COMMIT_TYPE)))).toEqual({
      code: ResponseCode.SLAVE_NOT_AVAILABLE,
      remark: `broker ${name} is a slave: end the transaction on its master`,
    });
  });
});
