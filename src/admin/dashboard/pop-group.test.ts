/**
 * A POP group on the admin API's `GET /groups/{group}` and the dashboard's group page, from an
 * in-process broker (src/broker/test-support.ts, simulated time): pops over the wire, then the
 * JSON's pop entries and total lag, and the page's in-flight table with each batch's
 * invisible-until, where RocketMQ's own dashboard shows -1.
 */
import { describe, expect, test } from "bun:test";
import {
  ackMessageRequest,
  createTopicRequest,
  heartbeatRequest,
  InProcessBroker,
  popMessageRequest,
  poppedHandles,
  sendV2Request,
} from "../../broker/test-support.ts";
import { createRequest, RequestCode } from "../../remoting/index.ts";
import { buildAdminApp } from "../app.ts";

const G = "GP";
const T = "TP";

/** TP with 2 queues of 3 messages; GP pops 2 of queue 0 (10 s invisible) and 3 of queue 1 (30 s), acks one. */
async function popped(b: InProcessBroker): Promise<number> {
  await b.ok(createTopicRequest(T, 2));
  for (let i = 0; i < 6; i++) await b.ok(sendV2Request(T, `m${i}`, { queueId: i % 2 }));
  const t0 = b.sim.now;
  await b.ok(popMessageRequest(G, T, t0, { queueId: 0, max: 2, invisibleTime: 10_000 }));
  const q1 = poppedHandles(await b.ok(popMessageRequest(G, T, t0, { queueId: 1, max: 3, invisibleTime: 30_000 })), G);
  await b.ok(ackMessageRequest(G, q1[1]!));
  return t0;
}

function app(b: InProcessBroker) {
  return buildAdminApp({ role: "master", version: "1", startedAt: 0, broker: b.controller.info });
}

describe("a POP group for operators", () => {
  test("GET /groups/{group}: its pop entries (in flight, ready, checkpoints) and a total lag that counts the messages in flight", async () => {
    await using b = InProcessBroker.start();
    const t0 = await popped(b);
    const r = await app(b).request(`/groups/${G}`);
    expect(r.status).toBe(200);
    const body = (await r.json()) as { totalLag: number; queues: { lag: number }[]; pop: unknown[] };
    // Queue 0: committed 2 of 3 (1 ready), queue 1: 3 of 3; 2 + 2 in flight.
    expect(body.queues.map((q) => q.lag)).toEqual([1, 0]);
    expect(body.totalLag).toBe(5);
    expect(body.pop).toEqual([
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
          { queueId: 1, startOffset: 0, offsets: [0, 2], popTime: t0, invisibleUntil: t0 + 30_000 },
        ],
      },
      { group: G, topic: T, isRetry: true, queueTopic: `%RETRY%${G}_${T}`, mode: "PULL", inflight: 0, ready: 0, checkpoints: [] },
    ]);
  });

  test("the dashboard's group page: lag with ready and in flight, the POP table, each batch's invisible-until", async () => {
    await using b = InProcessBroker.start();
    const t0 = await popped(b);
    const r = await app(b).request(`/ui/groups/${G}`);
    expect(r.status).toBe(200);
    const html = await r.text();
    expect(html).toContain('<strong id="total-lag">5</strong>');
    expect(html).toContain('<span id="total-inflight">4</span>');
    expect(html).toContain('<span id="total-ready">1</span>');
    const inflight = html.slice(html.indexOf('id="group-inflight"'));
    const utc = (ms: number) => `${new Date(ms).toISOString().slice(0, 19).replace("T", " ")} UTC`;
    expect(inflight).toContain(utc(t0 + 10_000));
    expect(inflight).toContain(utc(t0 + 30_000));
    expect(inflight).toContain("0, 2");
    expect(inflight).toContain("30.0 s");
    expect(html).not.toContain(">-1<");
    // The list of groups counts the messages in flight in its lag column too.
    const list = await (await app(b).request("/ui/groups")).text();
    expect(list).toContain('<span class="lag">5</span>');
  });

  test("a group that only pulls: no POP section, an empty pop list", async () => {
    await using b = InProcessBroker.start();
    await b.ok(createTopicRequest(T, 1));
    await b.ok(sendV2Request(T, "m"));
    await b.ok(createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, { consumerGroup: "PULLER", topic: T, queueId: "0", commitOffset: "0" }));
    await b.ok(heartbeatRequest("client-1", { group: "PULLER", subs: [{ topic: T, expr: "*" }] }));
    const body = (await (await app(b).request("/groups/PULLER")).json()) as { totalLag: number; pop: unknown[] };
    expect(body).toMatchObject({ totalLag: 1, pop: [] });
    const page = await app(b).request("/ui/groups/PULLER");
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<strong id="total-lag">1</strong>');
    expect(html).not.toContain("group-inflight");
  });
});
