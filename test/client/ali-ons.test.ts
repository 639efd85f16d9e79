/**
 * Cross-client: ali-ons 3.12 (a RocketMQ 4.x Node client nobody here wrote) and rocketbun/client
 * on the same broker (standalone binary, test-min settings with a bigger message limit).
 *   ali-ons Producer → our PushConsumer: tags, keys, user properties, a > 4 KiB body that
 *     ali-ons zlib-compresses, and its offset message ids.
 *   our Producer → ali-ons Consumer: the same, with our compression and our UNIQ_KEY ids.
 * ali-ons needs `nameSrv` and an `httpclient` it must never use (a stub that throws). It keeps one
 * static internal producer per process, made from the first client's options; it is reset to this
 * test's name server before and closed after.
 */
import { expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import type { MessageExt } from "rocketbun/client";
import { SysFlag } from "../../src/protocol/sys-flag.ts";
import {
  Consumer as OnsConsumer,
  Message as OnsMessage,
  noHttp,
  Producer as OnsProducer,
  silentLogger,
  type OnsMessage as OnsMsg,
} from "../interop/ali-ons-cluster.ts";
import { Env, text, uniq, until, within } from "./support.ts";

const CONFIG = { broker: { maxMessageSizeBytes: 60_000 } };

/** Runs `body` with ali-ons' static internal producer pointed at `env`, closing it after. */
async function withAliOns(env: Env, body: (opts: Record<string, unknown>) => Promise<void>): Promise<void> {
  const opts = { nameSrv: env.namesrv, httpclient: noHttp, logger: silentLogger };
  OnsProducer.defaultProducer = null;
  const inner = await OnsProducer.getDefaultProducer({ ...opts });
  try {
    await body(opts);
  } finally {
    OnsProducer.defaultProducer = null;
    await within(inner.close(), 10_000, "closing ali-ons' internal producer");
  }
}

test("what an ali-ons Producer sends, our PushConsumer receives intact (tags, keys, properties, a compressed 6 KiB body)", async () => {
  await using env = await Env.start({ config: CONFIG });
  const topic = uniq("T_ons2rb");
  await env.createTopic(topic, 4);
  const got: MessageExt[] = [];
  const c = env.push({ group: uniq("G_ons2rb") });
  c.subscribe(topic, "*", (m) => void got.push(m));
  await c.start();

  await withAliOns(env, async (opts) => {
    const producer = new OnsProducer({ ...opts, producerGroup: uniq("PID_ons"), instanceName: uniq("ons_p") });
    try {
      await producer.ready();
      const big = randomBytes(3 * 1024).toString("hex"); // 6 KiB of text: over ali-ons' 4 KiB compression threshold
      const sent: { body: string; msgId: string; i: number }[] = [];
      for (let i = 0; i < 20; i++) {
        const body = i === 7 ? big : `ons-${i}`;
        const msg = new OnsMessage(topic, `Tag${i % 2}`, body);
        // @ts-expect-error ali-ons' keys setter takes an array (its getter returns the joined string)
        msg.keys = [`key-${i}`, "shared"];
        msg.properties.myProp = `v${i}`;
        const r = await producer.send(msg);
        expect(r.sendStatus).toBe("SEND_OK");
        sent.push({ body, msgId: r.msgId, i });
      }
      await until(
        () => got.length >= 20,
        15_000,
        () => `our consumer to receive 20 (has ${got.length})${env.diag()}`,
      );
      const byBody = new Map(got.map((m) => [text(m.body), m]));
      for (const s of sent) {
        const m = byBody.get(s.body);
        expect(m).toBeDefined();
        expect(m!.topic).toBe(topic);
        expect(m!.tags).toBe(`Tag${s.i % 2}`);
        expect(m!.keys).toEqual([`key-${s.i}`, "shared"]);
        expect(m!.properties.myProp).toBe(`v${s.i}`);
        // ali-ons sets no UNIQ_KEY: the message id is the broker's offset id, as ali-ons' send result says.
        expect(m!.msgId).toBe(s.msgId);
        expect(m!.offsetMsgId).toBe(s.msgId);
      }
      expect(got.length).toBe(20);
      // The big body really was compressed by ali-ons (the stored record says so), and arrived inflated.
      const bigMsg = byBody.get(big)!;
      const stored = (await env.rawRecords(topic, bigMsg.queueId, bigMsg.queueOffset))[0]!;
      expect(stored.sysFlag & SysFlag.COMPRESSED).toBe(SysFlag.COMPRESSED);
      expect(stored.body.length).toBeLessThan(big.length);
      expect(text(bigMsg.body)).toBe(big);
    } finally {
      await within(producer.close(), 10_000, "closing the ali-ons producer");
    }
  });
}, 40_000);

test("what our Producer sends, an ali-ons Consumer receives intact (tags, keys, properties, a compressed 10 KiB body)", async () => {
  await using env = await Env.start({ config: CONFIG });
  const topic = uniq("T_rb2ons");
  await env.createTopic(topic, 4);
  const p = await env.producer();

  await withAliOns(env, async (opts) => {
    const got: OnsMsg[] = [];
    const consumer = new OnsConsumer({
      ...opts,
      consumerGroup: uniq("GID_rb2ons"),
      instanceName: uniq("ons_c"),
      rebalanceInterval: 1000,
    });
    const errors: string[] = [];
    consumer.on("error", (e) => errors.push(e.message));
    try {
      consumer.subscribe(topic, "*", async (m) => {
        got.push(m);
      });
      await consumer.ready();
      const big = randomBytes(5 * 1024).toString("hex"); // 10 KiB of text
      const bin = new Uint8Array(randomBytes(300));
      const sent: { body: string | Uint8Array; msgId: string; offsetMsgId: string; i: number }[] = [];
      for (let i = 0; i < 20; i++) {
        const body = i === 5 ? big : i === 6 ? bin : `rb-${i}`;
        const r = await p.send({ topic, body, tags: `Tag${i % 3}`, keys: [`key-${i}`, "shared"], properties: { myProp: `v${i}` } });
        sent.push({ body, msgId: r.msgId, offsetMsgId: r.offsetMsgId, i });
      }
      await until(
        () => got.length >= 20,
        20_000,
        () => `the ali-ons consumer to receive 20 (has ${got.length}; errors ${errors.join("; ")})${env.diag()}`,
      );
      expect(got.length).toBe(20);
      const byOffsetId = new Map(got.map((m) => [m.msgId, m]));
      for (const s of sent) {
        const m = byOffsetId.get(s.offsetMsgId);
        expect(m).toBeDefined();
        expect(m!.topic).toBe(topic);
        expect(m!.tags).toBe(`Tag${s.i % 3}`);
        expect(m!.keys).toBe(`key-${s.i} shared`);
        expect(m!.properties.myProp).toBe(`v${s.i}`);
        expect(m!.properties.UNIQ_KEY).toBe(s.msgId);
        if (typeof s.body === "string") expect(m!.body.toString()).toBe(s.body);
        else expect([...m!.body]).toEqual([...s.body]);
      }
      const bigMsg = got.find((m) => m.body.length === big.length)!;
      expect(bigMsg.sysFlag & SysFlag.COMPRESSED).toBe(SysFlag.COMPRESSED);
      expect(bigMsg.body.toString()).toBe(big);
    } finally {
      await within(consumer.close(), 10_000, "closing the ali-ons consumer");
    }
  });
}, 40_000);
