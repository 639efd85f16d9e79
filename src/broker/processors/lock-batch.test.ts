/**
 * LOCK_BATCH_MQ / UNLOCK_BATCH_MQ through the in-process broker (../test-support.ts): orderly
 * consumers' queue locks, and the notification that makes a hand-over quick (../rebalance-lock.ts):
 * a member refused a queue hears NOTIFY_CONSUMER_IDS_CHANGED as soon as its holder unlocks it.
 */
import { describe, expect, test } from "bun:test";
import { createRequest, RequestCode, type RemotingCommand } from "../../remoting/index.ts";
import { heartbeatRequest, InProcessBroker } from "../test-support.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const GROUP = "OrderlyGroup";
const mq = (queueId: number) => ({ topic: "T", brokerName: "broker-a", queueId });

function lockBody(clientId: string, queueIds: number[]): Uint8Array {
  return enc.encode(JSON.stringify({ consumerGroup: GROUP, clientId, mqSet: queueIds.map(mq) }));
}

/** A member on its own connection, recording the requests the broker sends it. */
function member(b: InProcessBroker, clientId: string) {
  const notified: RemotingCommand[] = [];
  const client = b.client((_conn, cmd) => notified.push(cmd));
  const call = (cmd: RemotingCommand) => client.invoke(b.addr, cmd, 10_000);
  return {
    notified,
    heartbeat: () => call(heartbeatRequest(clientId, { group: GROUP, subs: [{ topic: "T", expr: "*" }] })),
    lock: async (queueIds: number[]) => {
      const res = await call(createRequest(RequestCode.LOCK_BATCH_MQ, undefined, lockBody(clientId, queueIds)));
      const body = JSON.parse(dec.decode(res.body)) as { lockOKMQSet: { queueId: number }[] };
      return body.lockOKMQSet.map((q) => q.queueId).sort();
    },
    unlock: () => call(createRequest(RequestCode.UNLOCK_BATCH_MQ, undefined, lockBody(clientId, [0, 1, 2, 3]))),
  };
}

const notifies = (cmds: RemotingCommand[]) => cmds.filter((c) => c.code === RequestCode.NOTIFY_CONSUMER_IDS_CHANGED).length;

describe("orderly queue locks", () => {
  test("a member refused a queue is told to rebalance when the holder unlocks it, and gets it on its next lock", async () => {
    await using b = InProcessBroker.start();
    const old = member(b, "10.0.0.1@old");
    const newcomer = member(b, "10.0.0.2@new");
    await old.heartbeat();
    expect(await old.lock([0, 1, 2, 3])).toEqual([0, 1, 2, 3]);
    await newcomer.heartbeat();
    // Each join notified every member, the new one included (as Java's ConsumerManager does on a new channel).
    await b.advance(0);
    expect([notifies(old.notified), notifies(newcomer.notified)]).toEqual([2, 1]);
    expect(await newcomer.lock([2, 3])).toEqual([]);
    await old.unlock();
    await b.advance(0);
    expect([notifies(old.notified), notifies(newcomer.notified)]).toEqual([2, 2]);
    expect(newcomer.notified.at(-1)!.extFields).toEqual({ consumerGroup: GROUP });
    expect(await newcomer.lock([2, 3])).toEqual([2, 3]);
    // Nobody waits any more: a second unlock notifies no one.
    await old.lock([0]);
    await old.unlock();
    await b.advance(0);
    expect([notifies(old.notified), notifies(newcomer.notified)]).toEqual([2, 2]);
  });
});
