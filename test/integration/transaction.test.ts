/**
 * Transactional messages end to end against the compiled binary (standalone, test-min settings
 * with a short transaction check interval), with the client library's TransactionProducer and a
 * PushConsumer: commit is delivered exactly once, rollback never, an UNKNOWN transaction is
 * settled by the broker's check-back (both ways), the half topic never shows up in the real
 * topic, and a broker restart between the half message and its END_TRANSACTION loses nothing.
 */
import { expect, test } from "bun:test";
import { TransactionProducer, type MessageExt, type TransactionState } from "rocketbun/client";
import { SysFlag } from "../../src/protocol/sys-flag.ts";
import { decodeOffsetMsgId } from "../../src/common/message-record.ts";
import { createRequest, RequestCode, ResponseCode } from "../../src/remoting/index.ts";
import { dupes, Env, tempDirScope, text, uniq, until, within } from "../client/support.ts";

/** Check-backs after ~1 s: scanned every 300 ms, a half message is checked once 1 s old. */
const FAST_CHECKS = { broker: { transactionCheckIntervalMs: 300, transactionTimeOutMs: 1000, transactionCheckMax: 5 } };

function txProducer(env: Env, group: string, checkListener: (m: MessageExt) => TransactionState): TransactionProducer {
  return env.track("transaction producer", new TransactionProducer({ namesrv: env.namesrv, group, checkListener }));
}

/** A push consumer of `topic` from its first offset, collecting bodies. */
async function collect(env: Env, topic: string): Promise<{ bodies: string[]; msgs: MessageExt[] }> {
  const out = { bodies: [] as string[], msgs: [] as MessageExt[] };
  const c = env.push({ group: uniq("CG"), fromWhere: "first" });
  c.subscribe(topic, "*", (m) => {
    out.bodies.push(text(m.body));
    out.msgs.push(m);
  });
  await c.start();
  return out;
}

async function transactionStats(env: Env): Promise<Record<string, number>> {
  const r = await fetch(`${env.srv.adminUrl}/transactions`);
  expect(r.status).toBe(200);
  return (await r.json()) as Record<string, number>;
}

test("commit is delivered exactly once, rollback never; the real topic holds committed messages only", async () => {
  await using env = await Env.start({ config: FAST_CHECKS });
  const topic = uniq("T_tx");
  await env.createTopic(topic, 4);
  const checks: string[] = [];
  const p = txProducer(env, uniq("PG"), (m) => {
    checks.push(text(m.body));
    return "ROLLBACK";
  });
  await p.start();
  const got = await collect(env, topic);

  const results = [];
  for (let i = 0; i < 6; i++) {
    const body = i % 2 === 0 ? `commit-${i}` : `rollback-${i}`;
    const local = i % 2 === 0 ? "COMMIT" : "ROLLBACK";
    const r = await p.sendMessageInTransaction(
      { topic, body, tags: "tx" },
      (msg, arg) => {
        expect(text(typeof msg.body === "string" ? new TextEncoder().encode(msg.body) : msg.body)).toBe(body);
        expect(arg).toBe(i);
        return local;
      },
      i,
    );
    expect(r.status).toBe("SEND_OK");
    expect(r.localState).toBe(local);
    expect(r.transactionId).toBe(r.msgId);
    results.push(r);
  }
  await until(
    () => got.bodies.length >= 3,
    15_000,
    () => `3 committed messages (have ${got.bodies})${env.diag()}`,
  );
  // Long enough for several check passes: nothing else arrives and nothing was left to check.
  await Bun.sleep(2000);
  expect(got.bodies.sort()).toEqual(["commit-0", "commit-2", "commit-4"]);
  expect(dupes(got.bodies)).toEqual([]);
  expect(checks).toEqual([]);
  for (const m of got.msgs) {
    expect(m.transactionId).toBe(m.msgId);
    expect(m.properties.TRAN_MSG).toBe("true");
    expect(m.properties.REAL_TOPIC).toBeUndefined();
  }
  // What the broker stored under the real topic: the three commits (COMMIT_TYPE, prepared offset
  // = their half record), no half message and nothing rolled back.
  const stored = (await Promise.all([0, 1, 2, 3].map((q) => env.rawRecords(topic, q)))).flat();
  expect(stored.map((r) => text(r.body)).sort()).toEqual(["commit-0", "commit-2", "commit-4"]);
  for (const r of stored) {
    expect(r.sysFlag & SysFlag.TRANSACTION_TYPE_MASK).toBe(SysFlag.TRANSACTION_COMMIT_TYPE);
    const half = results.find((x) => x.msgId === r.properties.match(/UNIQ_KEY\u0001([0-9A-F]+)/)?.[1]);
    expect(half).toBeDefined();
    const halfOffset = decodeOffsetMsgId(half!.offsetMsgId);
    if ("invalid" in halfOffset) throw new Error(halfOffset.invalid);
    expect(r.preparedTransactionOffset).toBe(halfOffset.offset);
  }
  // The six half messages sit in the half topic; six ops resolved them.
  expect((await env.rawRecords("RMQ_SYS_TRANS_HALF_TOPIC", 0)).map((r) => text(r.body)).sort()).toEqual([
    "commit-0",
    "commit-2",
    "commit-4",
    "rollback-1",
    "rollback-3",
    "rollback-5",
  ]);
  expect(await transactionStats(env)).toMatchObject({ committed: 3, rolledBack: 3, opMaxOffset: 6, checksSent: 0 });
});

test("UNKNOWN: the broker checks back after transactionTimeOut; COMMIT is then delivered once, ROLLBACK never", async () => {
  await using env = await Env.start({ config: FAST_CHECKS });
  const topic = uniq("T_txcheck");
  await env.createTopic(topic, 2);
  const checks: string[] = [];
  const p = txProducer(env, uniq("PG"), (m) => {
    const body = text(m.body);
    checks.push(body);
    expect(m.topic).toBe(topic); // the half message comes back under its real topic
    expect(m.transactionId).toMatch(/^[0-9A-F]{32}$/);
    return body.startsWith("late-commit") ? "COMMIT" : "ROLLBACK";
  });
  await p.start();
  const got = await collect(env, topic);
  const t0 = Date.now();
  for (const body of ["late-commit-1", "late-rollback-1", "late-commit-2", "late-rollback-2"]) {
    const r = await p.sendMessageInTransaction({ topic, body }, () => "UNKNOWN");
    expect(r.localState).toBe("UNKNOWN");
  }
  // executeLocal throwing is UNKNOWN too, and the check settles it.
  const thrown = await p.sendMessageInTransaction({ topic, body: "late-commit-3" }, () => {
    throw new Error("database unreachable");
  });
  expect(thrown.localState).toBe("UNKNOWN");
  expect(String(thrown.localError)).toContain("database unreachable");

  await until(
    () => got.bodies.length >= 3,
    20_000,
    () => `3 messages committed by check-back (have ${got.bodies}, checks ${checks})${env.diag()}`,
  );
  // Not before the transaction timeout (1 s).
  expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
  await until(async () => (await transactionStats(env)).rolledBack === 2, 10_000, "both rollbacks to be recorded");
  await Bun.sleep(1500); // more check passes: nothing is asked again, nothing else arrives
  expect(got.bodies.sort()).toEqual(["late-commit-1", "late-commit-2", "late-commit-3"]);
  expect(dupes(checks)).toEqual([]);
  expect(checks.sort()).toEqual(["late-commit-1", "late-commit-2", "late-commit-3", "late-rollback-1", "late-rollback-2"]);
  expect(await transactionStats(env)).toMatchObject({ committed: 3, rolledBack: 2, checksSent: 5 });
});

test("broker restart between the half message and its END_TRANSACTION: the commit and the check-back still work", async () => {
  using tmp = tempDirScope("rocketbun-tx-restart-");
  const topic = uniq("T_txrestart");
  const group = uniq("PG");
  let halves: { offsetMsgId: string; queueOffset: number; msgId: string }[];
  {
    // No check-back during this run (the interval is an hour).
    await using env = await Env.start({ dir: tmp.dir, config: { broker: { transactionCheckIntervalMs: 3_600_000 } } });
    await env.createTopic(topic, 1);
    const p = txProducer(env, group, () => "UNKNOWN");
    await p.start();
    halves = [];
    for (const body of ["before-restart-1", "before-restart-2"]) {
      const r = await p.sendMessageInTransaction({ topic, body }, () => "UNKNOWN");
      halves.push(r);
    }
    expect(await env.maxOffset(topic, 0)).toBe(0);
  }
  await using env = await Env.start({ dir: tmp.dir, config: FAST_CHECKS });
  // The restarted name server knows the topic once the broker has registered with it.
  await env.waitRoute(topic, 1);
  const got = await collect(env, topic);
  // 1. The producer's END_TRANSACTION arrives at the restarted broker (sent here as a normal
  //    request so its answer can be read; the offsets are the ones the send returned).
  const first = halves[0]!;
  const off = decodeOffsetMsgId(first.offsetMsgId);
  if ("invalid" in off) throw new Error(off.invalid);
  const end = (type: number) =>
    createRequest(RequestCode.END_TRANSACTION, {
      producerGroup: group,
      tranStateTableOffset: String(first.queueOffset),
      commitLogOffset: String(off.offset),
      commitOrRollback: String(type),
      fromTransactionCheck: "false",
      msgId: first.msgId,
      transactionId: first.msgId,
    });
  const res = await env.wire.invoke(env.brokerAddr, end(SysFlag.TRANSACTION_COMMIT_TYPE), 5000);
  expect({ code: res.code, remark: res.remark }).toEqual({ code: ResponseCode.SUCCESS, remark: undefined });
  // A wrong producer group is refused, a repeat commits nothing more.
  const wrong = end(SysFlag.TRANSACTION_COMMIT_TYPE);
  wrong.extFields!.producerGroup = "someone-else";
  expect((await env.wire.invoke(env.brokerAddr, wrong, 5000)).code).toBe(ResponseCode.SYSTEM_ERROR);
  expect((await env.wire.invoke(env.brokerAddr, end(SysFlag.TRANSACTION_COMMIT_TYPE), 5000)).code).toBe(ResponseCode.SUCCESS);
  await until(
    () => got.bodies.includes("before-restart-1"),
    15_000,
    () => `the commit after the restart${env.diag()}`,
  );

  // 2. The other transaction is still open: a producer of the group comes back and the
  //    check-back commits it.
  const p = txProducer(env, group, (m) => (text(m.body) === "before-restart-2" ? "COMMIT" : "ROLLBACK"));
  await p.start();
  // A producer is known to the broker after its first heartbeat, which follows its first route lookup.
  await within(p.send({ topic, body: "plain" }), 10_000, "a plain send");
  await until(
    () => got.bodies.includes("before-restart-2"),
    20_000,
    () => `the check-back commit after the restart${env.diag()}`,
  );
  await Bun.sleep(1000);
  expect(got.bodies.sort()).toEqual(["before-restart-1", "before-restart-2", "plain"]);
});
