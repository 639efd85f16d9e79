/**
 * Master/slave replication on the compiled binary (docs/PROTOCOL.md §5.5, §5.6, docs/STORAGE.md §10): every broker
 * is its own process on 127.0.0.1, driven over the real wire and the admin API through the
 * HaCluster DSL (test/harness/ha-cluster.ts). CommitLogs are compared as files, byte for byte.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { decodeRecordAt, type DecodedRecord } from "../../src/commitlog/index.ts";
import { jsonBytes } from "../../src/common/json.ts";
import { RequestCode, ResponseCode, type RemotingCommand } from "../../src/remoting/index.ts";
import { encodeChunkHeader, ReportDecoder } from "../../src/ha/index.ts";
import { waitFor } from "../harness/binary.ts";
import { brokerYaml, HaCluster, Node } from "../harness/ha-cluster.ts";
import { bodyJson } from "../harness/wire.ts";

const TOPIC = "HaTopic";

function records(res: RemotingCommand): DecodedRecord[] {
  const out: DecodedRecord[] = [];
  for (let pos = 0; res.body && pos < res.body.length;) {
    const r = decodeRecordAt(res.body, pos, { checkCrc: true });
    if (!("totalSize" in r)) throw new Error(`bad record at ${pos}`);
    out.push(r);
    pos += r.totalSize;
  }
  return out;
}

/** The two nodes' CommitLog files are the same files with the same bytes. */
function expectSameCommitLog(a: Node, b: Node): void {
  const fa = a.commitLogFiles();
  const fb = b.commitLogFiles();
  expect([...fb.keys()]).toEqual([...fa.keys()]);
  for (const [name, bytes] of fa) {
    const other = fb.get(name)!;
    if (!bytes.equals(other)) {
      let i = 0;
      while (i < bytes.length && bytes[i] === other[i]) i++;
      throw new Error(`${b.name}'s ${name} differs from ${a.name}'s at byte ${i}`);
    }
  }
}

/** A slave (broker "broker-fake", not started) replicating from a fake master on 127.0.0.1:`port`. */
function slaveOfFakeMaster(c: HaCluster, port: number): Node {
  return new Node("slave", "broker-fake-slave", brokerYaml({ broker: { haMasterAddress: `127.0.0.1:${port}` } }), () => [
    "--namesrv",
    c.namesrvs[0]!.addr,
    "--broker-name",
    "broker-fake",
  ]);
}

async function slaveConnected(c: HaCluster): Promise<void> {
  await waitFor(async () => ((await c.master().ha()).slaves ?? []).some((s) => s.ackOffset >= 0), 15_000, `the slave to connect: ${c.diag()}`);
}

describe("master/slave replication (compiled binary)", () => {
  test("a master and its slave both register: the route lists broker ids 0 and 1, and the slave follows the master's HA address", async () => {
    await using c = await HaCluster.start({ groups: [{ name: "broker-a", role: "ASYNC_MASTER" }] });
    await c.createTopic(TOPIC);
    const route = await waitFor(
      async () => {
        const r = await c.route(c.namesrvs[0]!, TOPIC);
        return r && Object.keys(r.brokerDatas[0]?.brokerAddrs ?? {}).length === 2 ? r : null;
      },
      10_000,
      "the route to list the master and the slave",
    );
    expect(route.brokerDatas[0]!.brokerAddrs).toEqual({ "0": c.master().addr, "1": c.slave().addr });
    await waitFor(async () => (await c.slave().ha()).master?.connected, 10_000, "the slave's HA connection");
    const ha = (await c.slave().ha()).master!;
    expect(ha.masterAddr).toBe(c.master().addr);
    expect(ha.masterHaAddr).toBe(c.master().haAddr);
  }, 30_000);

  test("an empty slave copies the CommitLog byte for byte across segment rollovers and builds its own queues and index", async () => {
    const yaml = brokerYaml({ broker: { maxMessageSizeBytes: 16384 }, store: { commitLogSegmentBytes: 65536 } });
    await using c = await HaCluster.start({
      groups: [{ name: "broker-a", role: "ASYNC_MASTER", masterYaml: yaml, slaveYaml: yaml, startSlaves: false }],
    });
    await c.createTopic(TOPIC);
    await c.send(TOPIC, 200, { bodyBytes: 700, concurrency: 8 });
    await c.slave().start();
    await c.send(TOPIC, 200, { bodyBytes: 700, concurrency: 8 });
    const end = await c.caughtUp();
    expect(end).toBeGreaterThan(4 * 65536);
    expectSameCommitLog(c.master(), c.slave());
    // Its ConsumeQueues: the same queue offsets as the master's.
    const m = await c.master().admin<{ queues: unknown[] }>(`/topics/${TOPIC}`);
    await waitFor(
      async () => JSON.stringify((await c.slave().admin<{ queues: unknown[] }>(`/topics/${TOPIC}`)).queues) === JSON.stringify(m.queues),
      10_000,
      "the slave's queues",
    );
  }, 60_000);

  test("the slave refuses sends (SERVICE_NOT_AVAILABLE, with a remark) and serves pulls, offset queries and QUERY_MESSAGE", async () => {
    await using c = await HaCluster.start({ groups: [{ name: "broker-a", role: "ASYNC_MASTER", startSlaves: false }] });
    await c.createTopic(TOPIC);
    await c.send(TOPIC, 40);
    await c.slave().start();
    await c.caughtUp();
    await waitFor(
      async () => (await c.slave().admin<{ topics: { topicName: string }[] }>("/topics")).topics.some((t) => t.topicName === TOPIC),
      15_000,
      "the topic on the slave",
    );

    const refused = await c.sendOne(TOPIC, { addr: c.slave().addr });
    expect(refused.code).toBe(ResponseCode.SERVICE_NOT_AVAILABLE);
    expect(refused.remark).toMatch(/slave/);

    const fromMaster = records(await c.pull(c.master().addr, TOPIC, { queueId: 1 }));
    const fromSlave = await c.pull(c.slave().addr, TOPIC, { queueId: 1 });
    expect(fromSlave.code).toBe(ResponseCode.SUCCESS);
    expect(records(fromSlave).map((r) => r.physicalOffset)).toEqual(fromMaster.map((r) => r.physicalOffset));
    expect(records(fromSlave).map((r) => Buffer.from(r.body).toString())).toEqual(fromMaster.map((r) => Buffer.from(r.body).toString()));

    for (const code of [RequestCode.GET_MAX_OFFSET, RequestCode.GET_MIN_OFFSET]) {
      const ext = { topic: TOPIC, queueId: "1" };
      const [a, b] = await Promise.all([c.call(c.master().addr, code, ext), c.call(c.slave().addr, code, ext)]);
      expect(b.code).toBe(ResponseCode.SUCCESS);
      expect(b.extFields?.offset).toBe(a.extFields?.offset);
    }
    const byTime = await c.call(c.slave().addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, { topic: TOPIC, queueId: "1", timestamp: "0" });
    expect(byTime.extFields?.offset).toBe("0");

    const key = (fromMaster[3]!.properties.match(/KEYS\u0001([^\u0002]*)/) ?? [])[1]!;
    const q = await waitFor(
      async () => {
        const res = await c.call(c.slave().addr, RequestCode.QUERY_MESSAGE, {
          topic: TOPIC,
          key,
          maxNum: "4",
          beginTimestamp: "0",
          endTimestamp: String(Date.now() + 60_000),
        });
        return res.code === ResponseCode.SUCCESS ? res : null;
      },
      5000,
      "QUERY_MESSAGE on the slave",
    );
    expect(records(q).map((r) => r.physicalOffset)).toEqual([fromMaster[3]!.physicalOffset]);
  }, 30_000);

  test("metadata follows the master at start, every 10 s, and at once for a new topic's first message: topics, offsets, groups", async () => {
    await using c = await HaCluster.start({ groups: [{ name: "broker-a", role: "ASYNC_MASTER", startSlaves: false }] });
    await c.createTopic(TOPIC);
    await c.send(TOPIC, 8);
    const commit = (offset: number) =>
      c.call(c.master().addr, RequestCode.UPDATE_CONSUMER_OFFSET, {
        consumerGroup: "GID_follow",
        topic: TOPIC,
        queueId: "0",
        commitOffset: String(offset),
      });
    expect((await commit(1)).code).toBe(ResponseCode.SUCCESS);
    const group = (name: string) =>
      c.call(c.master().addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, jsonBytes({ groupName: name, retryMaxTimes: 7 }));
    expect((await group("GID_first")).code).toBe(ResponseCode.SUCCESS);
    const slaveOffset = async () => {
      const r = await c.call(c.slave().addr, RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: "GID_follow", topic: TOPIC, queueId: "0" });
      return r.code === ResponseCode.SUCCESS ? Number(r.extFields?.offset) : -1;
    };
    const slaveGroups = async () => {
      const r = await c.call(c.slave().addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG);
      return Object.keys(bodyJson<{ subscriptionGroupTable: Record<string, unknown> }>(r).subscriptionGroupTable);
    };
    const slaveTopics = async () => (await c.slave().admin<{ topics: { topicName: string }[] }>("/topics")).topics.map((t) => t.topicName);

    // At start: as soon as the slave knows its master.
    const started = Date.now();
    await c.slave().start();
    await waitFor(
      async () => (await slaveOffset()) === 1 && (await slaveGroups()).includes("GID_first") && (await slaveTopics()).includes(TOPIC),
      8000,
      `the first sync: ${c.diag()}`,
    );
    expect(Date.now() - started).toBeLessThan(8000);

    // A topic created since then arrives with its first replicated message (no 10 s wait).
    const fastAt = Date.now();
    await c.createTopic("HaTopicFast");
    expect((await c.sendOne("HaTopicFast")).code).toBe(ResponseCode.SUCCESS);
    await waitFor(async () => (await slaveTopics()).includes("HaTopicFast"), 5000, "the new topic on the slave");
    expect(Date.now() - fastAt).toBeLessThan(5000);

    // Later changes arrive with the next round (every 10 s).
    expect((await commit(5)).code).toBe(ResponseCode.SUCCESS);
    expect((await group("GID_later")).code).toBe(ResponseCode.SUCCESS);
    await c.createTopic("HaTopicLater");
    await waitFor(
      async () => (await slaveOffset()) === 5 && (await slaveGroups()).includes("GID_later") && (await slaveTopics()).includes("HaTopicLater"),
      15_000,
      `the periodic sync: ${c.diag()}`,
    );
    expect((await c.slave().ha()).master!.lastMetadataSyncAt).toBeGreaterThan(started);
  }, 45_000);

  test("SYNC_MASTER: SEND_OK once the slave has it, FLUSH_SLAVE_TIMEOUT while it is frozen (lag on both sides), SLAVE_NOT_AVAILABLE without one", async () => {
    const masterYaml = brokerYaml({ broker: { haSlaveTimeoutMs: 800 } });
    await using c = await HaCluster.start({ groups: [{ name: "broker-a", role: "SYNC_MASTER", masterYaml }] });
    await c.createTopic(TOPIC);
    await slaveConnected(c);
    const ok = await c.sendOne(TOPIC);
    expect(ok.code).toBe(ResponseCode.SUCCESS);
    await c.caughtUp();

    c.slave().freeze();
    try {
      const t0 = Date.now();
      const late = await c.sendOne(TOPIC);
      expect(late.code).toBe(ResponseCode.FLUSH_SLAVE_TIMEOUT);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(700);
      // Stored all the same: the send header carries its queue offset.
      expect(late.queueOffset).toBeGreaterThanOrEqual(0);
      await Bun.sleep(300);
      const lag = (await c.master().ha()).slaves![0]!;
      expect(lag.lagBytes).toBeGreaterThan(0);
      expect(lag.lagSeconds).toBeGreaterThanOrEqual(0.5);
    } finally {
      c.slave().thaw();
    }
    await c.caughtUp();
    await waitFor(async () => (await c.master().ha()).slaves![0]!.lagBytes === 0, 5000, "the master to see the slave caught up");
    await waitFor(
      async () => {
        const m = (await c.slave().ha()).master!;
        return m.masterMaxOffset === (await c.master().maxOffset()) && m.lagBytes === 0 && m.lagSeconds === 0;
      },
      5000,
      "the slave to report no lag",
    );

    await c.slave().stop();
    await waitFor(async () => ((await c.master().ha()).slaves ?? []).length === 0, 5000, "the master to see the slave gone");
    const alone = await c.sendOne(TOPIC);
    expect(alone.code).toBe(ResponseCode.SLAVE_NOT_AVAILABLE);
    expect(alone.queueOffset).toBeGreaterThanOrEqual(0);
    // Back again: it catches up, including the message stored without it.
    await c.slave().start();
    await c.caughtUp();
    expectSameCommitLog(c.master(), c.slave());
    await slaveConnected(c);
    expect((await c.sendOne(TOPIC)).code).toBe(ResponseCode.SUCCESS);
  }, 60_000);

  test("a slave killed (-9) and restarted catches up from where it stopped, not from the start", async () => {
    await using c = await HaCluster.start({ groups: [{ name: "broker-a", role: "ASYNC_MASTER" }] });
    await c.createTopic(TOPIC);
    await c.send(TOPIC, 200, { bodyBytes: 1000, concurrency: 8 });
    const stoppedAt = await c.caughtUp();
    // Time for the slave's flush (500 ms) and checkpoint (1 s): what a checkpoint names flushed is
    // kept; without one a killed slave fetches its whole log again.
    await Bun.sleep(2500);
    await c.slave().kill();
    await c.send(TOPIC, 300, { bodyBytes: 1000, concurrency: 8 });
    await c.slave().start();
    const end = await c.caughtUp();
    // Only the bytes it missed came over the new connection, and what the kill left unflushed
    // (a power cut could have torn it where no CRC looks: the slave cuts it and fetches it again).
    const cut = /the log past (\d+) was not flushed before the crash/.exec(c.slave().output());
    const from = cut ? Math.min(Number(cut[1]), stoppedAt) : stoppedAt;
    expect(stoppedAt - from).toBeLessThan(stoppedAt / 2);
    expect((await c.slave().ha()).master!.bytesReceived).toBe(end - from);
    expectSameCommitLog(c.master(), c.slave());
  }, 60_000);

  test("a master back from a crash with a shorter log (its page cache lost): the slave cuts the lost tail, keeps it in truncated/, and then holds the master's log byte for byte", async () => {
    await using c = await HaCluster.start({ groups: [{ name: "broker-a", role: "ASYNC_MASTER" }] });
    await c.createTopic(TOPIC);
    await c.send(TOPIC, 100, { bodyBytes: 1000, concurrency: 8 });
    const kept = await c.caughtUp();
    await c.send(TOPIC, 100, { bodyBytes: 1000, concurrency: 8 });
    const slaveEnd = await c.caughtUp();
    // kill -9, then lose what a power cut would: the CommitLog bytes past `kept` (one 1 MiB segment).
    await c.master().kill();
    const segment = join(c.master().dir, "store", "commitlog", "00000000000000000000");
    const bytes = readFileSync(segment);
    bytes.fill(0, kept, slaveEnd);
    writeFileSync(segment, bytes);
    await c.master().start();
    expect(await c.master().maxOffset()).toBe(kept);
    // New records at the lost offsets: fewer bytes than the slave holds past `kept`.
    await c.send(TOPIC, 50, { bodyBytes: 1000, concurrency: 8 });
    const end = await c.caughtUp();
    expect(end).toBeLessThan(slaveEnd);
    expectSameCommitLog(c.master(), c.slave());
    const cut = readFileSync(join(c.slave().dir, "store", "truncated", `${kept}-${slaveEnd}.commitlog`));
    expect(cut.length).toBe(slaveEnd - kept);
    // The epochs both brokers went through: the master began one at each start.
    const epochs = (d: string) => readFileSync(join(d, "store", "epochs"), "utf8");
    expect(epochs(c.master().dir)).toBe(`1 0\n2 ${kept}\n`);
    expect(epochs(c.slave().dir)).toBe(epochs(c.master().dir));
  }, 60_000);

  test("an empty slave catches up a master holding 32 MiB, across 1 MiB segments", async () => {
    await using c = await HaCluster.start({ groups: [{ name: "broker-a", role: "ASYNC_MASTER", startSlaves: false }] });
    await c.createTopic(TOPIC);
    await c.send(TOPIC, 2048, { bodyBytes: 16 * 1024, concurrency: 32 });
    const end = await c.master().maxOffset();
    expect(end).toBeGreaterThan(32 * 1024 * 1024);
    const t0 = performance.now();
    await c.slave().start();
    await c.caughtUp("broker-a", 30_000);
    const seconds = (performance.now() - t0) / 1000;
    if (process.env.HA_DEBUG) console.log(`[ha] empty slave caught up ${(end / 1048576).toFixed(1)} MiB in ${seconds.toFixed(2)} s (incl. start-up)`);
    expectSameCommitLog(c.master(), c.slave());
  }, 90_000);

  test("a broken stream — wrong offsets, a damaged record — is refused: the slave reconnects, writes nothing wrong, and resumes", async () => {
    // Real CommitLog bytes from a master; a fake master in this process serves them, badly at first.
    await using c = await HaCluster.start({ groups: [{ name: "broker-a", role: "ASYNC_MASTER", startSlaves: false }] });
    await c.createTopic(TOPIC);
    await c.send(TOPIC, 300, { bodyBytes: 500, concurrency: 8 });
    const end = await c.master().maxOffset();
    const log = c.master().commitLogFiles().get("00000000000000000000")!.subarray(0, end);
    const half = Math.floor(end / 2);
    // A record three quarters in; the byte flipped is inside its body (bodies are 500 bytes).
    let damagedRecord = 0;
    while (damagedRecord < (end * 3) / 4) damagedRecord += (decodeRecordAt(log, damagedRecord, { checkCrc: false }) as DecodedRecord).totalSize;
    const damaged = damagedRecord + 300;
    const connections: number[] = [];
    const fake = Bun.listen<{ reports: ReportDecoder; n: number }>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open(s) {
          s.data = { reports: new ReportDecoder(), n: connections.length + 1 };
        },
        data(s, chunk) {
          const from = s.data.reports.feed(chunk);
          if (from === undefined) return;
          if (connections.length < s.data.n) connections.push(from);
          else return; // acknowledgements
          const chunkAt = (at: number, bytes: Uint8Array) => {
            s.write(encodeChunkHeader(at, bytes.length));
            s.write(bytes);
          };
          switch (s.data.n) {
            case 1: // an empty slave is offered bytes that do not start a segment
              chunkAt(100, log.subarray(100, 5000));
              break;
            case 2: // half the log, then a chunk that skips ahead
              chunkAt(0, log.subarray(0, half));
              chunkAt(half + 500, log.subarray(half + 500, half + 9000));
              break;
            case 3: {
              // the rest, with one body byte flipped three quarters in
              const rest = Uint8Array.from(log.subarray(from, end)); // a copy (Buffer#slice is a view)
              rest[damaged - from] = rest[damaged - from]! ^ 0x5a;
              chunkAt(from, rest);
              break;
            }
            default:
              chunkAt(from, log.subarray(from, end));
          }
        },
      },
    });
    const slave = slaveOfFakeMaster(c, fake.port);
    try {
      await slave.start();
      await waitFor(async () => (await slave.maxOffset()) === end, 20_000, `the slave to take the whole log (${end} bytes)`);
      const ha = (await slave.ha()).master!;
      expect(ha.streamErrors).toBe(3);
      // Each reconnect resumed from the slave's own end: nothing, then a record boundary at or
      // below `half`, then the start of the damaged record.
      expect(connections[0]).toBe(0);
      expect(connections[1]).toBe(0);
      expect(connections[2]).toBeGreaterThan(0);
      expect(connections[2]).toBeLessThanOrEqual(half);
      expect(connections[3]).toBe(damagedRecord);
      // Append-only, so equal files mean no wrong byte was ever written.
      const got = slave.commitLogFiles().get("00000000000000000000")!;
      expect(got.subarray(0, end).equals(log)).toBe(true);
      expect(got.subarray(end).every((b) => b === 0)).toBe(true);
    } finally {
      await slave.dispose();
      fake.stop(true);
    }
  }, 60_000);

  test("a master whose log has a damaged range (sent the same, twice): the slave refuses it once, then stores it as is, lists it in corrupt.json and goes on", async () => {
    await using c = await HaCluster.start({ groups: [{ name: "broker-a", role: "ASYNC_MASTER", startSlaves: false }] });
    await c.createTopic(TOPIC);
    await c.send(TOPIC, 200, { bodyBytes: 400, concurrency: 8 });
    const end = await c.master().maxOffset();
    // The master's log with one record's body damaged, as a crash can leave it (recovery keeps the
    // records after it and never serves the damaged one): this fake master always sends it so.
    const log = Uint8Array.from(c.master().commitLogFiles().get("00000000000000000000")!.subarray(0, end));
    let damagedRecord = 0;
    while (damagedRecord < end / 2) damagedRecord += (decodeRecordAt(log, damagedRecord, { checkCrc: false }) as DecodedRecord).totalSize;
    const next = damagedRecord + (decodeRecordAt(log, damagedRecord, { checkCrc: false }) as DecodedRecord).totalSize;
    log[damagedRecord + 200] = log[damagedRecord + 200]! ^ 0x5a;
    const connections: number[] = [];
    const fake = Bun.listen<{ reports: ReportDecoder; sent: boolean }>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open(s) {
          s.data = { reports: new ReportDecoder(), sent: false };
        },
        data(s, chunk) {
          const from = s.data.reports.feed(chunk);
          if (from === undefined || s.data.sent) return;
          s.data.sent = true;
          connections.push(from);
          s.write(encodeChunkHeader(from, end - from));
          s.write(log.subarray(from, end));
        },
      },
    });
    const slave = slaveOfFakeMaster(c, fake.port);
    try {
      await slave.start();
      await waitFor(async () => (await slave.maxOffset()) === end, 20_000, `the slave to take the whole log (${end} bytes)`);
      expect((await slave.ha()).master!.streamErrors).toBe(1);
      // First connection from the empty store, the second from the damaged record's offset.
      expect(connections).toEqual([0, damagedRecord]);
      // The slave holds exactly the master's bytes, damage included.
      expect(slave.commitLogFiles().get("00000000000000000000")!.subarray(0, end).equals(log)).toBe(true);
      const corrupt = JSON.parse(readFileSync(join(slave.dir, "store", "corrupt.json"), "utf8")) as { from: number; to: number }[];
      expect(corrupt.map((r) => [r.from, r.to])).toEqual([[damagedRecord, next]]);
    } finally {
      await slave.dispose();
      fake.stop(true);
    }
  }, 60_000);

  test("slow consumer: with slaveReadEnable, a pull of data far behind the tail is told to go to the slave, which serves it", async () => {
    const masterYaml = brokerYaml({ broker: { slaveReadEnable: true }, store: { accessMessageInMemoryMaxBytes: 4096 } });
    await using c = await HaCluster.start({ groups: [{ name: "broker-a", role: "ASYNC_MASTER", masterYaml, startSlaves: false }] });
    await c.createTopic(TOPIC, 1);
    await c.send(TOPIC, 60, { queueId: 0 });
    await c.slave().start();
    await c.caughtUp();
    const old = await c.pull(c.master().addr, TOPIC, { offset: 0, max: 4 });
    expect(old.code).toBe(ResponseCode.SUCCESS);
    expect(old.extFields?.suggestWhichBrokerId).toBe("1");
    const fresh = await c.pull(c.master().addr, TOPIC, { offset: 58, max: 4 });
    expect(records(fresh)).toHaveLength(2);
    expect(fresh.extFields?.suggestWhichBrokerId).toBe("0");
    // The consumer follows the suggestion: the slave has the same messages.
    const fromSlave = await waitFor(
      async () => {
        const r = await c.pull(c.slave().addr, TOPIC, { offset: 0, max: 4 });
        return r.code === ResponseCode.SUCCESS ? r : null;
      },
      15_000,
      "the slave to serve the pull",
    );
    expect(records(fromSlave).map((r) => r.physicalOffset)).toEqual(records(old).map((r) => r.physicalOffset));
  }, 30_000);
});
