/**
 * SQL92 subscriptions end to end (RocketMQ's MessageSelector.bySql): the compiled standalone
 * binary with broker.enablePropertyFilter, the client library's `{ sql }` subscriptions (push and
 * pull), and the broker's refusal when the filter is off or the expression is invalid.
 */
import { expect } from "bun:test";
import { compatTest } from "../harness/compat.ts";
import { MQBrokerError } from "rocketbun/client";
import { Env, text, uniq, until } from "./support.ts";

/** Each test is a row of docs/COMPATIBILITY.md (rocketbun-client against RocketBun). */
const test = compatTest("rocketbun-client", "rocketbun");

const SELECTOR = "i >= 10 AND i < 20 AND TAGS IN ('A', 'B') AND region <> 'eu'";
const wanted = (i: number) => i >= 10 && i < 20 && i % 3 !== 2 && i % 5 !== 0;

async function sendAll(env: Env, topic: string): Promise<void> {
  const p = await env.producer();
  for (let i = 0; i < 40; i++) {
    // Tags A, B, C in turn; every fifth message is from region eu.
    await p.send({ topic, body: `m-${i}`, tags: "ABC"[i % 3]!, properties: { i: String(i), region: i % 5 === 0 ? "eu" : "us" } });
  }
}

/** What start() rejected with (null if it started). */
const startError = (c: { start(): Promise<void> }): Promise<unknown> =>
  c.start().then(
    () => null,
    (e: unknown) => e,
  );

const expected = Array.from({ length: 40 }, (_, i) => i)
  .filter(wanted)
  .map((i) => `m-${i}`);

test("enablePropertyFilter: a push consumer subscribed with SQL92 gets exactly the matching messages", async () => {
  await using env = await Env.start({ config: { broker: { enablePropertyFilter: true } } });
  const topic = uniq("T_sql");
  await env.createTopic(topic, 4);
  const got: string[] = [];
  const c = env.push({ group: uniq("G_sql"), fromWhere: "first" });
  c.subscribe(topic, { sql: SELECTOR }, async (m) => {
    got.push(text(m.body));
  });
  await c.start();
  await sendAll(env, topic);
  await until(
    () => got.length >= expected.length,
    20_000,
    () => `the ${expected.length} matching messages (have ${got.length}: ${got.join(",")})`,
  );
  await Bun.sleep(300); // nothing else arrives
  expect(got.sort()).toEqual([...expected].sort());
});

test("enablePropertyFilter: a pull consumer with SQL92 reads only matching messages and moves past the rest", async () => {
  await using env = await Env.start({ config: { broker: { enablePropertyFilter: true } } });
  const topic = uniq("T_sqlp");
  await env.createTopic(topic, 2);
  await sendAll(env, topic);
  const c = env.pull({ group: uniq("G_sqlp"), fromWhere: "first" });
  c.subscribe(topic, { sql: SELECTOR });
  await c.start();
  const got: string[] = [];
  await until(
    async () => {
      for (const m of await c.poll(200)) got.push(text(m.body));
      return got.length >= expected.length;
    },
    20_000,
    () => `the matching messages by pull (have ${got.length})`,
  );
  expect(got.sort()).toEqual([...expected].sort());
});

test("SQL92 is refused at start when the broker's filter is off, and an invalid expression is refused with the reason", async () => {
  await using env = await Env.start();
  const topic = uniq("T_sqloff");
  await env.createTopic(topic, 1);
  const off = env.push({ group: uniq("G_sqloff") });
  off.subscribe(topic, { sql: "a > 1" }, async () => {});
  const e1 = await startError(off);
  expect(e1).toBeInstanceOf(MQBrokerError);
  expect(String((e1 as Error).message)).toContain("does not support consumer to filter message by SQL92");

  await using on = await Env.start({ config: { broker: { enablePropertyFilter: true } } });
  await on.createTopic(topic, 1);
  const bad = on.push({ group: uniq("G_sqlbad") });
  bad.subscribe(topic, { sql: "a > 'x'" }, async () => {});
  const e2 = await startError(bad);
  expect(e2).toBeInstanceOf(MQBrokerError);
  expect((e2 as MQBrokerError).code).toBe(23); // SUBSCRIPTION_PARSE_FAILED
  expect(String((e2 as Error).message)).toContain("Invalid MessageSelector");
});
