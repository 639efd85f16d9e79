// rocketbun/client on plain Node 20 (no Bun): the bundle dist/client/index.js produces 50
// messages to an existing topic and a PushConsumer consumes them. Prints one JSON summary line
// on stdout and exits 0; on any failure prints the error on stderr and exits 1.
//   node test/client/node-scenario.mjs <namesrv host:port> <topic>
// With a third argument `failed-start`, it instead starts a PushConsumer on a missing topic,
// prints the error as JSON and returns without process.exit: Node must exit by itself.
import { Producer, PushConsumer, MQClientError } from "../../dist/client/index.js";

const [namesrv, topic, mode] = process.argv.slice(2);
if (!namesrv || !topic) {
  console.error("usage: node node-scenario.mjs <namesrv> <topic> [failed-start]");
  process.exit(2);
}

if (mode === "failed-start") {
  // A PushConsumer on a topic that does not exist: start() rejects, and the process must then be
  // able to exit by itself (no timers or connections left behind). No process.exit here.
  const c = new PushConsumer({ namesrv, group: `CG_node_fail_${process.pid}` });
  c.subscribe(`${topic}_missing`, "*", () => {});
  const error = await c.start().then(
    () => null,
    (e) => ({ isMQClientError: e instanceof MQClientError, code: e.code, message: e.message }),
  );
  console.log(JSON.stringify({ node: process.version, error }));
} else {
  await main();
}

async function main() {
  const N = 50;
  const started = Date.now();
  const bigBody = "node-big-".repeat(1200); // 10.8 KB: compressed by the producer
  const bodyOf = (i) => (i === 7 ? bigBody : `node-${i}`);

  const producer = new Producer({ namesrv, group: `PG_node_${process.pid}` });
  const consumer = new PushConsumer({ namesrv, group: `CG_node_${process.pid}`, rebalanceIntervalMs: 1000 });
  const received = [];
  let exitCode = 1;
  const timer = setTimeout(() => {
    console.error(`timed out with ${received.length} of ${N} messages`);
    process.exit(1);
  }, 30_000);

  try {
    await producer.start();
    const statuses = {};
    const sent = new Map();
    for (let i = 0; i < N; i++) {
      const r = await producer.send({ topic, body: bodyOf(i), tags: i % 2 ? "Odd" : "Even", keys: [`nk-${i}`], properties: { i: String(i) } });
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      sent.set(r.msgId, i);
    }

    consumer.subscribe(topic, "*", async (m) => {
      received.push(m);
    });
    await consumer.start();
    while (new Set(received.map((m) => m.msgId)).size < N) await new Promise((r) => setTimeout(r, 20));

    const problems = [];
    for (const m of received) {
      const i = sent.get(m.msgId);
      if (i === undefined) {
        problems.push(`unexpected message ${m.msgId}`);
        continue;
      }
      const body = new TextDecoder().decode(m.body);
      if (!(m.body instanceof Uint8Array)) problems.push(`${i}: body is not a Uint8Array`);
      if (body !== bodyOf(i)) problems.push(`${i}: body differs (${body.length} bytes)`);
      if (m.tags !== (i % 2 ? "Odd" : "Even")) problems.push(`${i}: tags ${m.tags}`);
      if (m.keys.join(",") !== `nk-${i}`) problems.push(`${i}: keys ${m.keys}`);
      if (m.properties.i !== String(i)) problems.push(`${i}: property i=${m.properties.i}`);
      if (m.topic !== topic) problems.push(`${i}: topic ${m.topic}`);
    }
    // Sending from a producer that was never started is a typed error on Node too.
    let notStartedError = null;
    try {
      await new Producer({ namesrv, group: "x" }).send({ topic, body: "x" });
    } catch (e) {
      notStartedError = { isMQClientError: e instanceof MQClientError, message: e.message };
    }
    console.log(
      JSON.stringify({
        node: process.version,
        bun: typeof globalThis.Bun !== "undefined",
        sent: sent.size,
        statuses,
        received: received.length,
        unique: new Set(received.map((m) => m.msgId)).size,
        queues: [...new Set(received.map((m) => m.queueId))].sort(),
        bigBodyBytes: received.find((m) => sent.get(m.msgId) === 7)?.body.length ?? -1,
        problems,
        notStartedError,
        elapsedMs: Date.now() - started,
      }),
    );
    exitCode = 0;
  } catch (e) {
    console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  } finally {
    clearTimeout(timer);
    await consumer.shutdown().catch((e) => console.error(`consumer shutdown: ${e}`));
    await producer.shutdown().catch((e) => console.error(`producer shutdown: ${e}`));
  }
  process.exit(exitCode);
}
