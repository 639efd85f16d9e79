/**
 * POP consumption as operators see it, through the in-process broker on virtual time: pops and
 * acks over the wire, then GET_CONSUME_STATS (the OffsetWrapper mqadmin 5.3.3 consumerProgress
 * reads) and BrokerInfo.popConsumption (the admin API and the dashboard) agree on what is in
 * flight, what is ready, and when each checkpoint's messages come back.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseObjectKeyedJson } from "../../common/object-key-json.ts";
import { popRetryTopic } from "../../protocol/pop.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import {
  ackMessageRequest,
  createTopicRequest,
  heartbeatRequest,
  InProcessBroker,
  popMessageRequest,
  poppedHandles,
  sendV2Request,
} from "../test-support.ts";

const G = "GP";
const T = "TP";
const RETRY = popRetryTopic(T, G);

interface Wrapper {
  brokerOffset: number;
  consumerOffset: number;
  lastTimestamp: number;
  pullOffset: number;
}

/** GET_CONSUME_STATS of G: "topic/queueId" → OffsetWrapper. */
async function consumeStats(b: InProcessBroker, group = G): Promise<Record<string, Wrapper>> {
  const res = await b.ok(createRequest(RequestCode.GET_CONSUME_STATS, { consumerGroup: group }));
  const parsed = parseObjectKeyedJson(new TextDecoder().decode(res.body));
  if ("invalid" in parsed) throw new Error(parsed.invalid);
  // An empty table `{}` parses as a plain record, not a Map.
  const table = (parsed.value as { offsetTable: Map<{ topic: string; queueId: number }, Wrapper> | Record<string, never> }).offsetTable;
  return table instanceof Map ? Object.fromEntries([...table].map(([mq, w]) => [`${mq.topic}/${mq.queueId}`, w])) : {};
}

async function pop(b: InProcessBroker, queueId: number, max: number, invisibleTime: number): Promise<RemotingCommand> {
  return b.ok(popMessageRequest(G, T, b.sim.now, { queueId, max, invisibleTime }));
}

/** TP with 2 queues of 3 messages each. */
async function withTopic(b: InProcessBroker): Promise<void> {
  await b.ok(createTopicRequest(T, 2));
  for (let i = 0; i < 6; i++) await b.ok(sendV2Request(T, `m${i}`, { queueId: i % 2 }));
}

describe("POP state for operators", () => {
  test("in flight and ready per queue, in GET_CONSUME_STATS's pullOffset and in popConsumption with each checkpoint's invisible-until", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b);
    const t0 = b.sim.now;
    const q0 = poppedHandles(await pop(b, 0, 2, 10_000), G);
    expect(q0.map((h) => h.offset)).toEqual([0, 1]);
    await b.advance(1000);
    const q1 = poppedHandles(await pop(b, 1, 3, 30_000), G);
    expect((await b.call(ackMessageRequest(G, q1[1]!))).code).toBe(ResponseCode.SUCCESS);

    // mqadmin 5.3.3: #Inflight = pullOffset − consumerOffset, Diff = brokerOffset − consumerOffset (ready).
    expect(await consumeStats(b)).toEqual({
      "TP/0": { brokerOffset: 3, consumerOffset: 2, lastTimestamp: expect.any(Number), pullOffset: 4 },
      "TP/1": { brokerOffset: 3, consumerOffset: 3, lastTimestamp: expect.any(Number), pullOffset: 5 },
    });
    expect(b.controller.info.popConsumption()).toEqual([
      {
        group: G,
        topic: T,
        isRetry: false,
        queueTopic: T,
        mode: "PULL",
        inflight: 4,
        ready: 1,
        checkpoints: [
          { queueId: 0, startOffset: 0, offsets: [0, 1], popTime: t0, invisibleUntil: t0 + 10_000 },
          { queueId: 1, startOffset: 0, offsets: [0, 2], popTime: t0 + 1000, invisibleUntil: t0 + 31_000 },
        ],
      },
      { group: G, topic: T, isRetry: true, queueTopic: RETRY, mode: "PULL", inflight: 0, ready: 0, checkpoints: [] },
    ]);

    // Queue 0's two come back into the retry topic: ready there (a pop reads it from its start), no longer in flight.
    await b.advance(11_000);
    const revived = b.controller.info.popConsumption(G);
    expect(revived.map((c) => [c.queueTopic, c.inflight, c.ready, c.checkpoints.length])).toEqual([
      [T, 2, 1, 1],
      [RETRY, 0, 2, 0],
    ]);

    // One pop takes the ready one of queue 0 and, to fill its batch, both from the retry topic.
    const again = poppedHandles(await b.ok(popMessageRequest(G, T, b.sim.now, { max: 32, invisibleTime: 60_000 })), G);
    expect(again.map((h) => h.ackTopic).sort()).toEqual([RETRY, RETRY, T]);
    const stats = await consumeStats(b);
    expect(stats["TP/0"]).toMatchObject({ brokerOffset: 3, consumerOffset: 3, pullOffset: 4 });
    expect(stats[`${RETRY}/0`]).toMatchObject({ brokerOffset: 2, consumerOffset: 2, pullOffset: 4 });
    expect(b.controller.info.popConsumption(G).map((c) => [c.queueTopic, c.inflight, c.ready])).toEqual([
      [T, 3, 0],
      [RETRY, 2, 0],
    ]);

    // An online consumer of TP: its POP retry topic's queues stay in the consume stats (Java drops them).
    await b.ok(heartbeatRequest("client-1", { group: G, subs: [{ topic: T, expr: "*" }] }));
    expect(Object.keys(await consumeStats(b)).sort()).toEqual([`${RETRY}/0`, "TP/0", "TP/1"]);

    // Every ack: nothing in flight, pullOffset = consumerOffset; the pair stays listed (its POP retry topic exists).
    for (const h of [q1[0]!, q1[2]!, ...again]) expect((await b.call(ackMessageRequest(G, h))).code).toBe(ResponseCode.SUCCESS);
    for (const w of Object.values(await consumeStats(b))) expect(w.pullOffset).toBe(w.consumerOffset);
    expect(b.controller.info.popConsumption().map((c) => [c.queueTopic, c.inflight, c.ready, c.checkpoints])).toEqual([
      [T, 0, 0, []],
      [RETRY, 0, 0, []],
    ]);
  });

  test("a pair set to POP is listed with nothing in flight; a PULL group's queues have pullOffset = consumerOffset and are not listed", async () => {
    await using b = InProcessBroker.start();
    await withTopic(b);
    const mode = { consumerGroup: "GQ", mode: "POP", popShareQueueNum: 0, topic: T };
    const set = await b.call(createRequest(RequestCode.SET_MESSAGE_REQUEST_MODE, undefined, new TextEncoder().encode(JSON.stringify(mode))));
    expect(set.code).toBe(ResponseCode.SUCCESS);
    const commit = (group: string, queueId: number, offset: number) =>
      createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: group, topic: T, queueId: String(queueId), commitOffset: String(offset) });
    await b.ok(commit("GQ", 0, 1));
    await b.ok(commit("PULLER", 1, 2));
    expect(b.controller.info.popConsumption()).toEqual([
      { group: "GQ", topic: T, isRetry: false, queueTopic: T, mode: "POP", inflight: 0, ready: 2, checkpoints: [] },
      { group: "GQ", topic: T, isRetry: true, queueTopic: RETRY.replace(G, "GQ"), mode: "POP", inflight: 0, ready: 0, checkpoints: [] },
    ]);
    expect(b.controller.info.popConsumption("PULLER")).toEqual([]);
    expect((await consumeStats(b, "PULLER"))["TP/1"]).toMatchObject({ brokerOffset: 3, consumerOffset: 2, pullOffset: 2 });
  });

  test("after a crash the in-flight checkpoints are read back: the same view, the same invisible-until", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rocketbun-popview-"));
    try {
      const first = InProcessBroker.start({ dir });
      await withTopic(first);
      await pop(first, 0, 2, 30_000);
      const before = first.controller.info.popConsumption();
      expect(before[0]!.inflight).toBe(2);
      await first.crash();
      await using second = InProcessBroker.start({ dir });
      expect(second.controller.info.popConsumption()).toEqual(before);
      expect((await consumeStats(second))["TP/0"]).toMatchObject({ consumerOffset: 2, pullOffset: 4 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
