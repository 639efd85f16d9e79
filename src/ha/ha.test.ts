/**
 * HAService and HAClient in one process (component test): a master store streaming to a slave
 * store over loopback TCP, SYNC_MASTER acknowledgements, lag figures on both sides, and a fake
 * master whose stream is broken. The compiled-binary scenarios are in test/integration/ha.test.ts.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Socket } from "bun";
import { scope, setLogLevel } from "../common/log.ts";
import { MessageStore, type StoreReplication } from "../commitlog/index.ts";
import { message, tempStoreDir, testStoreOptions } from "../commitlog/test-support.ts";
import { HAClient } from "./ha-client.ts";
import { HAService } from "./ha-service.ts";
import { LagTracker } from "./lag.ts";
import { encodeChunkHeader, ReportDecoder } from "./transfer.ts";

setLogLevel("warn");
const log = scope("ha-test");
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A store's replication listener, as the broker's ReplicaRole is for a master: appends are streamed by `ha` once master() names it. */
const streams = new Map<MessageStore, { ha?: HAService }>();

function openStore(readOnly: boolean): MessageStore {
  const dir = tempStoreDir(readOnly ? "ha-slave-" : "ha-master-");
  const to: { ha?: HAService } = {};
  const replication: StoreReplication = { appended: () => to.ha?.notifyNewData(), waitReplicas: () => undefined, fence: () => null };
  const s = MessageStore.open(testStoreOptions(dir, { readOnly, replication }));
  streams.set(s, to);
  cleanups.push(async () => {
    await s.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });
  return s;
}

function master(store: MessageStore, batchBytes = 32 * 1024, epoch?: number): HAService {
  const ha = new HAService({
    host: "127.0.0.1",
    port: 0,
    batchBytes,
    heartbeatMs: 200,
    idleTimeoutMs: 5000,
    slaveFallbehindMaxBytes: 1 << 30,
    log,
    ...(epoch !== undefined ? { epoch: () => epoch } : {}),
  });
  ha.start();
  ha.attachStore(store);
  const to = streams.get(store);
  if (to) to.ha = ha;
  cleanups.push(() => ha.stop());
  return ha;
}

function slave(store: MessageStore, addr: () => string | undefined, replicaId?: number, expectedEpoch?: number): HAClient {
  const c = new HAClient({
    store,
    masterHaAddr: addr,
    reportIntervalMs: 200,
    idleTimeoutMs: 5000,
    reconnectMs: 50,
    log,
    ...(replicaId !== undefined ? { replicaId: () => replicaId } : {}),
    ...(expectedEpoch !== undefined ? { expectedEpoch: () => expectedEpoch } : {}),
  });
  c.start();
  cleanups.push(() => c.stop());
  return c;
}

async function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

function commitLogBytes(store: MessageStore): Buffer {
  return Buffer.concat(store.commitLog.segments.map((s) => readFileSync(s.path).subarray(0, s.wrotePosition)));
}

async function send(store: MessageStore, n: number, from = 0): Promise<void> {
  for (let i = from; i < from + n; i++) {
    const r = await store.putMessage(message(`T${i % 2}`, i % 4, `m${i}`.padEnd(500 + (i % 9) * 300, "y"), { KEYS: `k${i}` }));
    expect(r.status).toBe("PUT_OK");
  }
}

describe("HA in process", () => {
  test("an empty slave copies the master's CommitLog byte for byte, builds its queues, and keeps up", async () => {
    const m = openStore(false);
    await send(m, 150);
    const ha = master(m);
    const s = openStore(true);
    const client = slave(s, () => `127.0.0.1:${ha.port}`);
    await until(() => s.maxPhyOffset === m.maxPhyOffset, "the slave to catch up");
    await send(m, 50, 150);
    await until(() => s.maxPhyOffset === m.maxPhyOffset && s.dispatchedOffset === m.maxPhyOffset, "the slave to follow");
    expect(commitLogBytes(s).equals(commitLogBytes(m))).toBe(true);
    for (let q = 0; q < 4; q++) expect(s.getMaxOffsetInQueue("T1", q)).toBe(m.getMaxOffsetInQueue("T1", q));
    expect(s.queryMessage("T1", "k101", 4, 0, Date.now() + 1000).messages).toHaveLength(1);
    await until(() => ha.status()[0]?.ackOffset === m.maxPhyOffset, "the last acknowledgement");
    expect(ha.status()[0]).toMatchObject({ lagBytes: 0, lagSeconds: 0 });
    client.noteMasterMaxOffset(m.maxPhyOffset);
    expect(client.status()).toMatchObject({ connected: true, lagBytes: 0, lagSeconds: 0, streamErrors: 0 });
    expect(client.status().lastAppliedStoreTimestamp).toBeGreaterThan(Date.now() - 60_000);
  });

  test("SYNC_MASTER: an acknowledgement resolves the wait; no slave → NO_SLAVE; a stopped slave → TIMEOUT", async () => {
    const m = openStore(false);
    const ha = master(m);
    await send(m, 1);
    expect(await ha.waitForAck(m.maxPhyOffset, 200)).toBe("NO_SLAVE");
    const s = openStore(true);
    const client = slave(s, () => `127.0.0.1:${ha.port}`);
    await until(() => ha.status()[0]?.ackOffset === m.maxPhyOffset, "the slave's first report");
    await send(m, 1, 1);
    expect(await ha.waitForAck(m.maxPhyOffset, 3000)).toBe("OK");
    client.stop();
    await until(() => ha.status().length === 0, "the master to notice the slave left");
    await send(m, 1, 2);
    expect(await ha.waitForAck(m.maxPhyOffset, 200)).toBe("NO_SLAVE");
  });

  test("failover: only eligible replicas' acknowledgements count (replicas name themselves on the stream)", async () => {
    const m = openStore(false);
    const ha = master(m);
    await send(m, 1);
    const s1 = openStore(true);
    slave(s1, () => `127.0.0.1:${ha.port}`, 1);
    await until(() => ha.status()[0]?.ackOffset === m.maxPhyOffset, "replica 1's first report");
    await send(m, 1, 1);
    // Replica 1 holds the write, but only replica 2 counts: no eligible slave at all.
    expect(await ha.waitForAck(m.maxPhyOffset, 300, 1, (id) => id === 2)).toBe("NO_SLAVE");
    expect(await ha.waitForAck(m.maxPhyOffset, 3000, 1, (id) => id === 1)).toBe("OK");
    const s2 = openStore(true);
    slave(s2, () => `127.0.0.1:${ha.port}`, 2);
    await until(() => ha.status().length === 2 && ha.status().every((x) => x.ackOffset === m.maxPhyOffset), "replica 2 to catch up");
    await send(m, 1, 2);
    expect(await ha.waitForAck(m.maxPhyOffset, 3000, 2, (id) => id === 1 || id === 2)).toBe("OK");
    // A slave that never named itself does not count for an eligible wait.
    expect(await ha.waitForAck(m.maxPhyOffset, 300, 1, (id) => id === undefined)).toBe("NO_SLAVE");
  });

  test("failover: a replica takes the stream of a master of its epoch, and refuses an older one", async () => {
    const m = openStore(false);
    await send(m, 20);
    const ha = master(m, 32 * 1024, 3);
    const current = openStore(true);
    slave(current, () => `127.0.0.1:${ha.port}`, 1, 3);
    await until(() => current.maxPhyOffset === m.maxPhyOffset, "the replica of epoch 3 to catch up");
    const ahead = openStore(true);
    const refusing = slave(ahead, () => `127.0.0.1:${ha.port}`, 2, 4);
    await until(() => refusing.status().streamErrors >= 2, "the replica of epoch 4 to refuse the stream");
    expect(refusing.status().lastStreamError).toContain("the master streams as epoch 3, older than epoch 4");
    expect(ahead.maxPhyOffset).toBe(0);
  });

  test("lag: the master measures the age of the first unacknowledged record; the slave from polled master offsets", async () => {
    const m = openStore(false);
    const ha = master(m);
    // A "slave" that reports 0 once and then nothing: it is behind by everything.
    const sock = await Bun.connect({ hostname: "127.0.0.1", port: ha.port, socket: { data() {} } });
    cleanups.push(() => sock.terminate());
    await send(m, 3);
    sock.write(new Uint8Array(8));
    await until(() => ha.status()[0]?.ackOffset === 0, "the report");
    await Bun.sleep(50);
    const st = ha.status()[0]!;
    expect(st.lagBytes).toBe(m.maxPhyOffset);
    expect(st.lagSeconds).toBeGreaterThanOrEqual(0.05);

    const t = new LagTracker();
    expect(t.lagMs(0, 1000)).toBe(0);
    t.record(100, 1000);
    t.record(200, 2000);
    t.record(200, 2500); // no growth: ignored
    expect(t.lagMs(50, 3000)).toBe(2000);
    expect(t.lagMs(150, 3000)).toBe(1000);
    expect(t.lagMs(200, 3000)).toBe(0);
    expect(t.latest).toEqual({ offset: 200, at: 2000 });
  });

  test("a broken stream (chunk at the wrong offset) is refused: the slave reconnects, writes nothing wrong, then resumes", async () => {
    const m = openStore(false);
    await send(m, 20);
    const s = openStore(true);
    // A fake master: the first connection gets a chunk at a wrong offset, later ones the truth.
    let connections = 0;
    const listener = Bun.listen<{ n: number; reports: ReportDecoder; sent: boolean }>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open(sock) {
          sock.data = { n: ++connections, reports: new ReportDecoder(), sent: false };
        },
        data(sock: Socket<{ n: number; reports: ReportDecoder; sent: boolean }>, chunk) {
          const from = sock.data.reports.feed(chunk);
          if (from === undefined || sock.data.sent) return;
          sock.data.sent = true;
          const seg = m.commitLog.segments[0]!;
          const bytes = seg.buf.slice(0, seg.wrotePosition);
          const at = sock.data.n === 1 ? 4096 : 0; // the first time at a wrong offset (not a segment start)
          sock.write(encodeChunkHeader(at, bytes.length));
          sock.write(bytes);
        },
      },
    });
    cleanups.push(() => listener.stop(true));
    const client = slave(s, () => `127.0.0.1:${listener.port}`);
    await until(() => client.status().streamErrors >= 1, "the slave to refuse the first stream");
    expect(client.status().lastStreamError).toMatch(/not a segment start/);
    expect(s.commitLog.segments.length).toBe(0);
    await until(() => s.maxPhyOffset === m.commitLog.segments[0]!.wrotePosition, "the slave to resume on a new connection");
    expect(connections).toBeGreaterThanOrEqual(2);
    const first = m.commitLog.segments[0]!;
    expect(
      Buffer.from(readFileSync(join(s.commitLog.segments[0]!.path)).subarray(0, first.wrotePosition)).equals(
        Buffer.from(first.buf.subarray(0, first.wrotePosition)),
      ),
    ).toBe(true);
  });
});
