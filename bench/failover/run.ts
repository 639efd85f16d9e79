/**
 * Automatic failover under load (issue #17's benchmark): a real etcd, a name server and one broker
 * group of `--replicas` (failover on, `--role` SYNC_MASTER or ASYNC_MASTER, `--min-isr`), all the
 * compiled binary on 127.0.0.1; rocketbun/client producing steadily (4 sends in flight, keys) and
 * a push consumer consuming. `--kills` times: wait until the group is healthy (a writable master,
 * every replica in its sync state set, sends succeeding), kill -9 the current master, measure
 *   - kill → the first send acknowledged after it (to this, the only group: the new master),
 *   - kill → the first message received that was sent after the kill,
 * then restart the killed replica on its store (it comes back as a replica, truncating what the
 * group never acknowledged). At the end every acknowledged message must have been received
 * (SYNC_MASTER: zero loss expected; ASYNC_MASTER may lose the last ones the dead master
 * acknowledged alone, counted) and the report gives median and max against the targets
 * (median ≤ 2 × leaseTtlMs, max ≤ 3 ×).
 *
 *   npx bun bench/failover/run.ts [--kills 20] [--lease 3000] [--replicas 3] [--role SYNC_MASTER]
 *        [--min-isr 2] [--binary FILE]
 *
 * Needs `etcd` (Debian etcd-server). Apache RocketMQ 5's controller mode is not compared: its
 * broker and controller are not published on Maven Central in a form this harness can start
 * (the 4.9.7 reference of test/harness/interop-cluster.ts has no controller). Not a test.
 */
import { Producer, PushConsumer } from "../../src/client/index.ts";

const { brokerYaml, HaCluster } = await import("../../test/harness/ha-cluster.ts");
const { waitFor } = await import("../../test/harness/binary.ts");
const { etcdPresent, startEtcd } = await import("../../test/harness/etcd.ts");

interface Args {
  kills: number;
  lease: number;
  replicas: number;
  role: "SYNC_MASTER" | "ASYNC_MASTER";
  minIsr: number;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { kills: 20, lease: 3000, replicas: 3, role: "SYNC_MASTER", minIsr: 2 };
  for (let i = 0; i < argv.length; i += 2) {
    const v = argv[i + 1] ?? "";
    if (argv[i] === "--kills") a.kills = Number(v);
    else if (argv[i] === "--lease") a.lease = Number(v);
    else if (argv[i] === "--replicas") a.replicas = Number(v);
    else if (argv[i] === "--role") a.role = v === "ASYNC_MASTER" ? "ASYNC_MASTER" : "SYNC_MASTER";
    else if (argv[i] === "--min-isr") a.minIsr = Number(v);
    else if (argv[i] === "--binary") process.env.ROCKETBUN_BINARY = v;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return a;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)]!;
};

interface HaView {
  failover?: { role: string; epoch: number; writable: boolean };
}

const args = parseArgs(process.argv.slice(2));
if (!etcdPresent("bench/failover")) process.exit(0);
const etcd = await startEtcd();
const yaml = brokerYaml({ broker: { haSlaveTimeoutMs: 2000 } }).replace(
  "broker:\n",
  `broker:\n  failover:\n    enable: true\n    leaseTtlMs: ${args.lease}\n    minInSyncReplicas: ${args.minIsr}\n    etcd: ["${etcd.endpoint}"]\n`,
);
const c = await HaCluster.start({ groups: [{ name: "bench-fo", role: args.role, slaves: args.replicas - 1, masterYaml: yaml, slaveYaml: yaml }] });
// Whatever happens below, nothing is left running (every process is ours, stopped by PID).
const cleanup = async () => {
  await c[Symbol.asyncDispose]();
  await etcd.stop();
};
process.on("SIGINT", () => void cleanup().then(() => process.exit(130)));
const nodes = [c.master(), ...Array.from({ length: args.replicas - 1 }, (_, i) => c.slave(i))];
const TOPIC = "FailoverBench";
try {
  await waitFor(async () => (await c.master().admin<HaView>("/ha")).failover?.writable, 30_000, "the first election");
  await c.createTopic(TOPIC);
} catch (e) {
  await cleanup();
  throw e;
}

let lostCount = 0;
const sendGaps: number[] = [];
const recvGaps: number[] = [];
let ackedCount = 0;
let failures = 0;
try {
  const namesrv = c.namesrvs[0]!.addr;
  const producer = new Producer({ namesrv, group: "bench-fo-producer", sendTimeoutMs: 2000, retryTimesWhenSendFailed: 2 });
  await producer.start();
  const consumer = new PushConsumer({ namesrv, group: "bench-fo-consumer", fromWhere: "first" });
  const received = new Map<string, number>(); // key → first receive time
  consumer.subscribe(TOPIC, "*", (m) => {
    const key = m.keys[0];
    if (key !== undefined && !received.has(key)) received.set(key, Date.now());
  });
  await consumer.start();

  /** key → when its send started and when it was acknowledged (only sends started after a kill count for the gap). */
  const acked = new Map<string, { startedAt: number; ackedAt: number }>();
  let seq = 0;
  let running = true;
  const senders = Array.from({ length: 4 }, async () => {
    while (running) {
      const key = `k${seq++}`;
      try {
        const startedAt = Date.now();
        await producer.send({ topic: TOPIC, body: `failover bench ${key}`, keys: key });
        acked.set(key, { startedAt, ackedAt: Date.now() });
      } catch {
        failures++;
        await Bun.sleep(50);
      }
    }
  });

  async function current(): Promise<{ master: (typeof nodes)[number] | undefined; healthy: boolean }> {
    let master: (typeof nodes)[number] | undefined;
    let running = 0;
    for (const n of nodes) {
      if (!n.running) continue;
      running++;
      const h = await n.admin<HaView>("/ha").catch(() => undefined);
      if (h?.failover?.role === "master" && h.failover.writable) master = n;
    }
    return { master, healthy: master !== undefined && running === nodes.length };
  }

  for (let k = 0; k < args.kills; k++) {
    // Healthy: a writable master, every replica up and (after two lease periods) back in its sync state set.
    const { master } = await waitFor(
      async () => {
        const s = await current();
        return s.healthy && s.master ? s : null;
      },
      60_000,
      "a healthy group",
    );
    await Bun.sleep(2 * args.lease);
    const before = acked.size;
    await waitFor(() => acked.size > before + 10, 30_000, "sends to flow");
    const killedAt = Date.now();
    await master!.kill();
    // Only sends started once the master is gone count: an ack it sent just before it died would not
    // say anything about the new one. The gaps are still measured from the kill.
    const deadAt = Date.now();
    const firstAck = await waitFor(
      () => [...acked.values()].find((a) => a.startedAt > deadAt)?.ackedAt,
      60_000,
      "a send started after the kill to be acknowledged",
    );
    const firstRecv = await waitFor(
      () => {
        let first = Infinity;
        for (const [key, a] of acked) if (a.startedAt > deadAt) first = Math.min(first, received.get(key) ?? Infinity);
        return first < Infinity ? first : undefined;
      },
      60_000,
      "a message sent after the kill to be received",
    );
    sendGaps.push(firstAck - killedAt);
    recvGaps.push(firstRecv - killedAt);
    process.stdout.write(`kill ${k + 1}: ${master!.name} → send after ${firstAck - killedAt} ms, receive after ${firstRecv - killedAt} ms\n`);
    await master!.start();
  }

  running = false;
  await Promise.all(senders);
  await waitFor(() => [...acked.keys()].every((key) => received.has(key)), 60_000, "every acknowledged message to be received").catch(
    () => undefined,
  );
  const lost = [...acked.keys()].filter((key) => !received.has(key));
  await consumer.shutdown();
  await producer.shutdown();

  lostCount = lost.length;
  ackedCount = acked.size;
} finally {
  await cleanup();
}

const lines = [
  `failover bench: ${args.kills} kills, ${args.replicas} replicas, ${args.role}, minInSyncReplicas ${args.minIsr}, leaseTtlMs ${args.lease}`,
  `kill → first acknowledged send: median ${median(sendGaps)} ms, max ${Math.max(...sendGaps)} ms (target median ≤ ${2 * args.lease}, max ≤ ${3 * args.lease})`,
  `kill → first message received: median ${median(recvGaps)} ms, max ${Math.max(...recvGaps)} ms`,
  `acknowledged ${ackedCount}, received ${ackedCount - lostCount}, lost ${lostCount}, send failures (retried by the loop) ${failures}`,
];
process.stdout.write(`${lines.join("\n")}\n`);
