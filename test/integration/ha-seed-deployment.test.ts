/**
 * The seed deployment, as separate processes of the compiled binary on loopback: two name
 * servers, masters broker-a and broker-b (SYNC_MASTER) and one slave each, with ali-ons 3.12 as
 * the only client that produces and consumes. It shows, in order:
 *
 *   1. both name servers route both masters and both slaves;
 *   2. ali-ons sends land on both masters and their slaves hold the same CommitLog, byte for byte;
 *   3. after kill -9 of master-a, a consumer group started then receives every message that was
 *      acknowledged (SEND_OK) — broker-a's from slave-a — while the producer goes on with broker-b;
 *   4. after master-a restarts on its store, replication resumes (SEND_OK from broker-a again,
 *      equal CommitLogs), the consumers pull from master-a again, and no queue offset of either
 *      broker was skipped.
 *
 * Deterministic: every wait polls a condition with a deadline, the kill is by PID, and every
 * process (and ali-ons client) is stopped in `finally` / on dispose.
 */
import { expect, test } from "bun:test";
import { RequestCode, ResponseCode } from "../../src/remoting/index.ts";
import { waitFor } from "../harness/binary.ts";
import { HaCluster, type Node } from "../harness/ha-cluster.ts";
import { bodyJson } from "../harness/wire.ts";
import {
  Consumer,
  Message,
  noHttp,
  Producer,
  silentLogger,
  type OnsConsumer,
  type OnsMessage,
  type OnsProducer,
} from "../interop/ali-ons-cluster.ts";

const TOPIC = "SeedTopic";
const GROUP = "GID_seed";
const QUEUES = 4;

interface Sent {
  body: string;
  status: string;
  brokerName: string;
  phase: "before" | "down" | "back";
}

interface Got {
  body: string;
  storeHost: string;
  queueId: number;
  queueOffset: number;
  at: number;
}

function sameCommitLog(master: Node, slave: Node): string | null {
  const a = master.commitLogFiles();
  const b = slave.commitLogFiles();
  if (JSON.stringify([...a.keys()]) !== JSON.stringify([...b.keys()])) return `files differ: ${[...a.keys()]} vs ${[...b.keys()]}`;
  for (const [name, bytes] of a) if (!bytes.equals(b.get(name)!)) return `${name} differs`;
  return null;
}

async function brokerAddrs(c: HaCluster, ns: Node): Promise<Record<string, Record<string, string>>> {
  const route = await c.route(ns, TOPIC);
  return Object.fromEntries((route?.brokerDatas ?? []).map((b) => [b.brokerName, b.brokerAddrs]));
}

async function runtimeGets(c: HaCluster, node: Node): Promise<number> {
  const res = await c.call(node.addr, RequestCode.GET_BROKER_RUNTIME_INFO);
  return Number(bodyJson<{ table: Record<string, string> }>(res).table.msgGetTotalTodayNow);
}

test("seed deployment: 2 name servers, broker-a/b SYNC_MASTER + a slave each; ali-ons rides out kill -9 of master-a and its return", async () => {
  await using c = await HaCluster.start({
    namesrvs: 2,
    groups: [
      { name: "broker-a", role: "SYNC_MASTER" },
      { name: "broker-b", role: "SYNC_MASTER" },
    ],
  });
  const [a, b] = [c.master("broker-a"), c.master("broker-b")];
  const [sa, sb] = [c.slave(0, "broker-a"), c.slave(0, "broker-b")];
  const closables: (() => Promise<void>)[] = [];
  const onsErrors: string[] = [];
  const options = (extra: Record<string, unknown>) => ({
    nameSrv: c.namesrvs.map((n) => n.addr),
    httpclient: noHttp,
    logger: silentLogger,
    pollNameServerInteval: 1000,
    heartbeatBrokerInterval: 1000,
    persistConsumerOffsetInterval: 1000,
    ...extra,
  });
  let producing = false;
  let loop: Promise<void> = Promise.resolve();
  try {
    // ---- 1. Routes on both name servers list masters and slaves.
    await c.createTopic(TOPIC, QUEUES);
    const full = { "broker-a": { "0": a.addr, "1": sa.addr }, "broker-b": { "0": b.addr, "1": sb.addr } };
    for (const ns of c.namesrvs) {
      await waitFor(async () => JSON.stringify(await brokerAddrs(c, ns)) === JSON.stringify(full), 15_000, `${ns.name} to route all four brokers`);
    }
    for (const g of ["broker-a", "broker-b"]) {
      await waitFor(async () => ((await c.master(g).ha()).slaves ?? []).some((s) => s.ackOffset >= 0), 15_000, `${g}'s slave to connect`);
    }

    // ---- 2. ali-ons sends land on both masters; each slave holds the same CommitLog.
    // ali-ons keeps one process-wide inner producer (send-back); make it from these options, quiet.
    Producer.defaultProducer = null;
    const inner = await Producer.getDefaultProducer(options({}));
    inner.on("error", (e) => onsErrors.push(`inner producer: ${e.message}`));
    const producer: OnsProducer = new Producer(options({ producerGroup: "PID_seed", instanceName: "seed-producer" }));
    producer.on("error", (e) => onsErrors.push(`producer: ${e.message}`));
    closables.push(() => producer.close());
    await producer.ready();
    const sent: Sent[] = [];
    let seq = 0;
    const sendOne = async (phase: Sent["phase"]) => {
      const body = `seed-${seq++}`;
      try {
        const r = await producer.send(new Message(TOPIC, "TagA", body));
        sent.push({ body, status: r.sendStatus, brokerName: r.messageQueue.brokerName, phase });
      } catch (e) {
        sent.push({ body, status: `error: ${e instanceof Error ? e.message : String(e)}`, brokerName: "", phase });
      }
    };
    for (let i = 0; i < 200; i++) await sendOne("before");
    expect(sent.filter((s) => s.status !== "SEND_OK")).toEqual([]);
    expect(new Set(sent.map((s) => s.brokerName))).toEqual(new Set(["broker-a", "broker-b"]));
    for (const g of ["broker-a", "broker-b"]) await c.caughtUp(g);
    expect(sameCommitLog(a, sa)).toBeNull();
    expect(sameCommitLog(b, sb)).toBeNull();
    // The slaves know the topic too (metadata follows the master), so they can serve it.
    for (const s of [sa, sb]) {
      await waitFor(
        async () => (await s.admin<{ topics: { topicName: string }[] }>("/topics")).topics.some((t) => t.topicName === TOPIC),
        15_000,
        `${s.name} to know ${TOPIC}`,
      );
    }

    // ---- 3. kill -9 master-a. The producer goes on; a consumer group starts and reads broker-a from slave-a.
    const mark = (phase: Sent["phase"]) => {
      producing = true;
      loop = (async () => {
        while (producing) {
          await sendOne(phase);
          await Bun.sleep(10);
        }
      })();
    };
    const pause = async () => {
      producing = false;
      await loop;
    };
    await a.kill();
    const killedAt = Date.now();
    mark("down");
    for (const ns of c.namesrvs) {
      await waitFor(
        async () => JSON.stringify((await brokerAddrs(c, ns))["broker-a"]) === JSON.stringify({ "1": sa.addr }),
        10_000,
        `${ns.name} to drop master-a`,
      );
    }
    await waitFor(() => sent.filter((s) => s.phase === "down" && s.status === "SEND_OK").length >= 30, 15_000, "sends to go on with broker-b");

    const got: Got[] = [];
    const consumers: OnsConsumer[] = [];
    for (const name of ["seed-consumer-1", "seed-consumer-2"]) {
      const consumer: OnsConsumer = new Consumer(
        options({
          consumerGroup: GROUP,
          instanceName: name,
          rebalanceInterval: 1000,
          brokerSuspendMaxTimeMillis: 3000,
          pullTimeDelayMillsWhenException: 500,
        }),
      );
      consumer.on("error", (e) => onsErrors.push(`${name}: ${e.message}`));
      closables.push(() => consumer.close());
      consumer.subscribe(TOPIC, "*", async (m: OnsMessage) => {
        const storeHost = (m as OnsMessage & { storeHost: string }).storeHost;
        got.push({ body: m.body.toString(), storeHost, queueId: m.queueId, queueOffset: m.queueOffset, at: Date.now() });
      });
      consumers.push(consumer);
    }
    await Promise.all(consumers.map((x) => x.ready()));
    const received = () => new Set(got.map((g) => g.body));
    const ackedSoFar = () => sent.filter((s) => s.status === "SEND_OK").map((s) => s.body);
    await waitFor(
      () => {
        const r = received();
        return ackedSoFar().every((x) => r.has(x));
      },
      30_000,
      `the group to receive every acknowledged message while master-a is down (${got.length} received)`,
    );
    await pause();
    // Master-a was dead the whole time: broker-a's messages came from slave-a, which served those pulls.
    expect(a.running).toBe(false);
    const fromA = got.filter((g) => g.storeHost === a.addr);
    expect(fromA.length).toBe(sent.filter((s) => s.phase === "before" && s.brokerName === "broker-a").length);
    expect(fromA.every((g) => g.at > killedAt)).toBe(true);
    expect(await runtimeGets(c, sa)).toBeGreaterThanOrEqual(fromA.length);
    // The producer went on with broker-b.
    const down = sent.filter((s) => s.phase === "down" && s.status === "SEND_OK");
    expect(down.length).toBeGreaterThanOrEqual(30);
    expect(down.every((s) => s.brokerName === "broker-b")).toBe(true);

    // ---- 4. master-a restarts on its store: replication resumes, consumers come back to it.
    await a.start();
    for (const ns of c.namesrvs) {
      await waitFor(async () => JSON.stringify(await brokerAddrs(c, ns)) === JSON.stringify(full), 15_000, `${ns.name} to route master-a again`);
    }
    mark("back");
    await waitFor(
      () => sent.filter((s) => s.phase === "back" && s.status === "SEND_OK" && s.brokerName === "broker-a").length >= 20,
      20_000,
      "SEND_OK from broker-a again (slave-a acknowledging)",
    );
    await pause();
    await waitFor(
      () => {
        const r = received();
        return ackedSoFar().every((x) => r.has(x));
      },
      20_000,
      `the group to receive every acknowledged message after master-a is back (${got.length} received)`,
    );
    // The consumers pull from master-a again: once a pull answered by slave-a suggests the master
    // (brokerId 0), the next one goes there, so new messages are soon served by master-a.
    await waitFor(
      async () => {
        for (let i = 0; i < 8; i++) await sendOne("back");
        await waitFor(() => ackedSoFar().every((x) => received().has(x)), 10_000, "the latest messages");
        return (await runtimeGets(c, a)) > 0;
      },
      20_000,
      "pulls served by the restarted master-a",
    );
    for (const g of ["broker-a", "broker-b"]) await c.caughtUp(g);
    expect(sameCommitLog(a, sa)).toBeNull();
    expect(sameCommitLog(b, sb)).toBeNull();

    // Nothing lost or skipped: for each queue of each broker, every queue offset up to the end was
    // delivered (messages stored with another status than SEND_OK included).
    for (const m of [a, b]) {
      for (let q = 0; q < QUEUES; q++) {
        const res = await c.call(m.addr, RequestCode.GET_MAX_OFFSET, { topic: TOPIC, queueId: String(q) });
        expect(res.code).toBe(ResponseCode.SUCCESS);
        const max = Number(res.extFields?.offset);
        await waitFor(
          () => new Set(got.filter((g) => g.storeHost === m.addr && g.queueId === q).map((g) => g.queueOffset)).size === max,
          10_000,
          `${m.name} queue ${q}: all ${max} offsets delivered`,
        );
        const offsets = new Set(got.filter((g) => g.storeHost === m.addr && g.queueId === q).map((g) => g.queueOffset));
        expect([...offsets].sort((x, y) => x - y)).toEqual(Array.from({ length: max }, (_, i) => i));
      }
    }
    if (process.env.HA_DEBUG) {
      const count = (p: Sent["phase"]) => sent.filter((s) => s.phase === p && s.status === "SEND_OK").length;
      console.log(
        `[seed] SEND_OK before/down/back: ${count("before")}/${count("down")}/${count("back")}; received ${got.length}; ali-ons errors ${onsErrors.length}`,
      );
    }
  } catch (e) {
    const uniq = [...new Set(onsErrors.map((x) => x.slice(0, 300)))];
    throw new Error(
      `${e instanceof Error ? e.message : String(e)}\nali-ons errors (${onsErrors.length}, distinct last 10):\n  ${uniq.slice(-10).join("\n  ")}\n${c.diag()}`,
    );
  } finally {
    producing = false;
    await loop;
    for (const close of closables.reverse()) {
      await Promise.race([close().catch(() => {}), Bun.sleep(5000)]);
    }
    const inner = Producer.defaultProducer;
    Producer.defaultProducer = null;
    if (inner) await Promise.race([inner.close().catch(() => {}), Bun.sleep(5000)]);
  }
}, 90_000);
