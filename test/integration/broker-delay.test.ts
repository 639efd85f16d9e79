/**
 * The compiled binary as a master broker: delayed delivery over the real wire (docs/STORAGE.md
 * §6, docs/PROTOCOL.md §4.4). A message sent with DELAY=1 (1 s) or `__STARTDELIVERTIME` (ali-ons'
 * setStartDeliverTime) is not pullable from its topic before its due time, and is after it; a
 * delivery time in the past is delivered at once. No fixed sleeps: pulls are polled until a deadline.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { decodeRecordAt, parseProperties, type DecodedRecord } from "../../src/commitlog/index.ts";
import { PullSysFlag } from "../../src/protocol/pull-sys-flag.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingClient, type RemotingCommand } from "../../src/remoting/index.ts";
import { ROOT, startRocketbun, waitFor } from "../harness/binary.ts";
import { createTopicRequest, newClient } from "../harness/wire.ts";

const TEST_MIN = join(ROOT, "config", "test-min.yaml");
const TOPIC = "DelayT";
const TIMEOUT_MS = 3000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startMaster(): Promise<{ addr: string; c: RemotingClient; adminUrl: string }> {
  const ns = await startRocketbun({ role: "namesrv" });
  cleanups.push(() => ns[Symbol.asyncDispose]());
  const proc = await startRocketbun({ role: "master", args: ["--namesrv", ns.namesrvAddr, "--config", TEST_MIN] });
  cleanups.push(() => proc[Symbol.asyncDispose]());
  const c = newClient();
  cleanups.push(() => c.close());
  const addr = `127.0.0.1:${proc.ports.broker}`;
  const res = await c.invoke(addr, createTopicRequest(TOPIC, 2), TIMEOUT_MS);
  expect(res.code).toBe(ResponseCode.SUCCESS);
  return { addr, c, adminUrl: proc.adminUrl };
}

/** SEND_MESSAGE_V2 to queue 1 of TOPIC with the given properties; returns the send time. */
async function send(c: RemotingClient, addr: string, body: string, props: Record<string, string>): Promise<number> {
  // ali-ons form: every entry followed by 0x02.
  const i = Object.entries({ TAGS: "tagD", KEYS: body, ...props })
    .map(([k, v]) => `${k}\u0001${v}\u0002`)
    .join("");
  const sentAt = Date.now();
  const ext = { a: "PG", b: TOPIC, c: "TBW102", d: "4", e: "1", f: "0", g: String(sentAt), h: "7", i };
  const res = await c.invoke(addr, createRequest(RequestCode.SEND_MESSAGE_V2, ext, new TextEncoder().encode(body)), TIMEOUT_MS);
  expect({ code: res.code, remark: res.remark ?? "" }).toEqual({ code: ResponseCode.SUCCESS, remark: "" });
  return sentAt;
}

/** One non-suspending PULL_MESSAGE of queue 1 from offset 0 with subscription "*". */
async function pull(c: RemotingClient, addr: string): Promise<DecodedRecord[]> {
  const ext = {
    consumerGroup: "CG_DELAY",
    topic: TOPIC,
    queueId: "1",
    queueOffset: "0",
    maxMsgNums: "32",
    sysFlag: String(PullSysFlag.SUBSCRIPTION),
    commitOffset: "0",
    suspendTimeoutMillis: "0",
    subscription: "*",
    subVersion: "0",
    expressionType: "TAG",
  };
  const res: RemotingCommand = await c.invoke(addr, createRequest(RequestCode.PULL_MESSAGE, ext), TIMEOUT_MS);
  if (res.code !== ResponseCode.SUCCESS) {
    expect([ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY] as number[]).toContain(res.code);
    return [];
  }
  const out: DecodedRecord[] = [];
  for (let pos = 0; res.body && pos < res.body.length;) {
    const r = decodeRecordAt(res.body, pos, { checkCrc: true });
    if (!("totalSize" in r)) throw new Error(`bad record at ${pos}: ${JSON.stringify(r)}`);
    out.push(r);
    pos += r.totalSize;
  }
  return out;
}

/**
 * Polls the real queue until `body` shows up. Returns when it was first seen and when it was last
 * seen absent, so a test can bound the delivery time from both sides without sleeping.
 */
async function pollUntilDelivered(
  c: RemotingClient,
  addr: string,
  body: string,
): Promise<{ rec: DecodedRecord; lastAbsentAt: number; seenAt: number }> {
  let lastAbsentAt = 0;
  const rec = await waitFor(
    async () => {
      const before = Date.now();
      const found = (await pull(c, addr)).find((r) => new TextDecoder().decode(r.body) === body);
      if (!found) lastAbsentAt = before;
      return found;
    },
    10_000,
    `message ${body} in ${TOPIC}`,
  );
  return { rec, lastAbsentAt, seenAt: Date.now() };
}

describe("broker binary: delayed and timed delivery", () => {
  test("DELAY=1 is not pullable before ~1 s and is pullable after, with its properties restored", async () => {
    const { addr, c } = await startMaster();
    const sentAt = await send(c, addr, "delayed-1s", { DELAY: "1" });
    expect(await pull(c, addr)).toEqual([]);
    const { rec, lastAbsentAt, seenAt } = await pollUntilDelivered(c, addr, "delayed-1s");
    // Absent until (nearly) the due time: polls started 800 ms after the send still found nothing.
    expect(lastAbsentAt - sentAt).toBeGreaterThanOrEqual(800);
    expect(rec.storeTimestamp - sentAt).toBeGreaterThanOrEqual(1000 - 50);
    // Lateness, measured: delivered within a second of the due time.
    expect(seenAt - sentAt).toBeLessThan(1000 + 1000);
    const props = parseProperties(rec.properties);
    expect([props.TAGS, props.KEYS, props.DELAY, props.REAL_TOPIC, props.REAL_QID]).toEqual(["tagD", "delayed-1s", undefined, undefined, undefined]);
    expect([rec.topic, rec.queueId, rec.flag]).toEqual([TOPIC, 1, 7]);
  });

  test("__STARTDELIVERTIME = now + 1500 ms is delivered at that time; a past one at once", async () => {
    const { addr, c, adminUrl } = await startMaster();
    const due = Date.now() + 1500;
    const sentAt = await send(c, addr, "timed-1500", { __STARTDELIVERTIME: String(due) });
    await send(c, addr, "timed-past", { __STARTDELIVERTIME: String(sentAt - 60_000) });
    // The past one is there on the first pull, the timed one is not.
    expect((await pull(c, addr)).map((r) => new TextDecoder().decode(r.body))).toEqual(["timed-past"]);
    // Parked in the timer queue: SCHEDULE_TOPIC_XXXX has 18 level queues + queue 18.
    const schedule = (await (await fetch(`${adminUrl}/topics/SCHEDULE_TOPIC_XXXX`)).json()) as {
      readQueueNums: number;
      queues: { queueId: number; maxOffset: number }[];
    };
    expect(schedule.readQueueNums).toBe(19);
    expect(schedule.queues[18]).toMatchObject({ queueId: 18, maxOffset: 1 });
    const { rec, lastAbsentAt, seenAt } = await pollUntilDelivered(c, addr, "timed-1500");
    expect(lastAbsentAt).toBeGreaterThanOrEqual(due - 300);
    expect(rec.storeTimestamp).toBeGreaterThanOrEqual(due);
    expect(seenAt - due).toBeLessThan(1000);
    expect(parseProperties(rec.properties).__STARTDELIVERTIME).toBe(String(due));
  });
});
