/**
 * Automatic failover under chaos, with the Java client (issue #17's binary test): a real etcd, two
 * name servers, broker group A of three replicas with broker.failover.enable (SYNC_MASTER,
 * minInSyncReplicas 2, leaseTtlMs 2000) and a plain SYNC_MASTER group B with one slave, all the
 * compiled binary on 127.0.0.1. rocketmq-client 4.9.8 (ChaosClient.java) produces steadily (three
 * sync senders, retrying elsewhere as it always does) and consumes with a push consumer the whole
 * time. Faults on A's current master, each once A is healthy again (a writable master with all
 * three replicas in its sync state set):
 *
 *   kill -9       a replica of the sync state set takes over; the old master restarts on its store
 *                 and comes back as a replica, cutting what the group never acknowledged (kept in
 *                 store/truncated/, which must hold no acknowledged message);
 *   SIGSTOP       held until another replica is master of a newer epoch, then SIGCONT: it steps
 *                 down and acknowledges nothing in between at offsets of the new epoch;
 *   etcd cut      etcd paused for two leases: A's master fences itself but every replica keeps its
 *                 role, sends go on (to B, as the client retries), consumers go on; then resumed;
 *   and again: kill -9, SIGSTOP, kill -9 (of whichever replica is master by then).
 *
 * At the end: every acknowledged (SEND_OK) message was consumed and is in its group's final log at
 * the CommitLog offset, queue and queue offset it was acknowledged at; no two acknowledged messages
 * share (broker, queue, queue offset); consumers received messages sent after each fault.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { decodeOffsetMsgId, decodeRecordAt } from "../../src/commitlog/index.ts";
import { RequestCode, ResponseCode } from "../../src/remoting/index.ts";
import { waitFor } from "../harness/binary.ts";
import { ChaosClient, type ChaosAck } from "../harness/chaos-client.ts";
import { startEtcd, type RunningEtcd } from "../harness/etcd.ts";
import { brokerYaml, HaCluster, type Node } from "../harness/ha-cluster.ts";
import { toolsPresent } from "../harness/java.ts";
import { bodyJson } from "../harness/wire.ts";

const present = toolsPresent("failover chaos (Java client)", ["etcd", "java", "mvn"]);

const TOPIC = "ChaosTopic";
const A = "chaos-a";
const B = "chaos-b";
const LEASE_MS = 2000;

interface FailoverView {
  role: string;
  failover?: { replicaId?: number; role: string; epoch: number; writable: boolean; master?: { addr: string }; epochs: { epoch: number; startOffset: number }[] };
}

function failoverYaml(etcd: string): string {
  return brokerYaml({ broker: { brokerRole: "SYNC_MASTER", haSlaveTimeoutMs: 2000 } }).replace(
    "broker:\n",
    `broker:\n  failover:\n    enable: true\n    leaseTtlMs: ${LEASE_MS}\n    minInSyncReplicas: 2\n    etcd: ["${etcd}"]\n`,
  );
}

/** "ip:port" of an offset message id's store host, and its CommitLog offset. */
function ackedAt(a: ChaosAck): { host: string; offset: number } {
  const d = decodeOffsetMsgId(a.offsetMsgId);
  if ("invalid" in d) throw new Error(`bad offsetMsgId ${a.offsetMsgId} of ${a.body}: ${d.invalid}`);
  return { host: `${[...d.host.ip].join(".")}:${d.host.port}`, offset: d.offset };
}

interface StoredRecord {
  body: string;
  queueId: number;
  queueOffset: number;
  topic: string;
}

/** Every record of `bytes` (a CommitLog segment or a kept-aside range starting at `base`), by CommitLog offset. */
function recordsOf(bytes: Uint8Array, base: number, into: Map<number, StoredRecord>): void {
  for (let p = 0; p < bytes.length; ) {
    const r = decodeRecordAt(bytes, p, { checkCrc: true });
    if ("blank" in r || "end" in r || "invalid" in r) return; // a segment's end (its tail is zeros or a blank)
    into.set(base + p, { body: new TextDecoder().decode(r.body), queueId: r.queueId, queueOffset: r.queueOffset, topic: r.topic });
    p += r.totalSize;
  }
}

function logOf(n: Node): Map<number, StoredRecord> {
  const out = new Map<number, StoredRecord>();
  for (const [name, bytes] of n.commitLogFiles()) recordsOf(bytes, Number(name), out);
  return out;
}

/** store/truncated/<from>-<to>.commitlog files of `n`: what it cut, by CommitLog offset. */
function truncatedOf(n: Node): Map<number, StoredRecord> {
  const out = new Map<number, StoredRecord>();
  const dir = join(n.dir, "store", "truncated");
  if (!existsSync(dir)) return out;
  for (const f of readdirSync(dir)) {
    const m = /^(\d+)-\d+\.commitlog$/.exec(f);
    if (m) recordsOf(readFileSync(join(dir, f)), Number(m[1]), out);
  }
  return out;
}

/** One fault on group A, for the timeline in failure messages and the summary. */
interface Phase {
  name: string;
  at: number;
  node: string;
  epochBefore: number;
  epochAfter?: number;
  note?: string;
}

/**
 * Who won each election of group A: etcd's history of the group's `epoch` key (election.ts), read
 * backwards one revision at a time (the test's etcd never compacts).
 */
async function electionWinners(etcd: RunningEtcd): Promise<Map<number, number>> {
  const key = Buffer.from(`/rocketbun/HaCluster/${A}/epoch`).toString("base64");
  const winners = new Map<number, number>();
  let revision: number | undefined;
  for (;;) {
    const res = await fetch(`http://${etcd.endpoint}/v3/kv/range`, {
      method: "POST",
      body: JSON.stringify({ key, ...(revision !== undefined ? { revision: String(revision) } : {}) }),
    });
    const kv = ((await res.json()) as { kvs?: { value: string; mod_revision: string }[] }).kvs?.[0];
    if (!kv) return winners;
    const e = JSON.parse(Buffer.from(kv.value, "base64").toString()) as { epoch: number; brokerId: number };
    winners.set(e.epoch, e.brokerId);
    revision = Number(kv.mod_revision) - 1;
  }
}

class Chaos {
  readonly phases: Phase[] = [];
  /** The replica id of each address a replica of A had (slaves get a new port at each start). */
  readonly replicaOf = new Map<string, number>();
  /** What each restarted master cut: `<CommitLog offset>/<body>` → the node. */
  readonly truncated = new Map<string, string>();

  constructor(
    readonly c: HaCluster,
    readonly etcd: RunningEtcd,
    readonly client: ChaosClient,
  ) {}

  get nodes(): Node[] {
    return [this.c.master(A), this.c.slave(0, A), this.c.slave(1, A)];
  }

  /** GET /ha, or undefined when the node does not answer within a second (a stopped process never does). */
  async view(n: Node): Promise<FailoverView | undefined> {
    if (!n.running) return undefined;
    try {
      const r = await fetch(`${n.proc.adminUrl}/ha`, { signal: AbortSignal.timeout(1000) });
      return r.ok ? ((await r.json()) as FailoverView) : undefined;
    } catch {
      return undefined;
    }
  }

  async syncStateSet(n: Node): Promise<string> {
    const res = await this.c.call(n.addr, RequestCode.GET_BROKER_RUNTIME_INFO, undefined, undefined, 2000);
    return res.code === ResponseCode.SUCCESS ? (bodyJson<{ table: Record<string, string> }>(res).table.failoverSyncStateSet ?? "") : "";
  }

  /** A's writable master (with its epoch), if one is. */
  async master(): Promise<{ node: Node; epoch: number } | undefined> {
    for (const n of this.nodes) {
      const f = (await this.view(n))?.failover;
      if (f?.role === "master" && f.writable) return { node: n, epoch: f.epoch };
    }
    return undefined;
  }

  /** Every replica running and following a writable master whose sync state set holds all three. */
  async healthy(timeoutMs = 60_000): Promise<{ node: Node; epoch: number }> {
    return waitFor(
      async () => {
        const m = await this.master();
        if (!m || !this.nodes.every((n) => n.running)) return undefined;
        for (const n of this.nodes) {
          const f = (await this.view(n))?.failover;
          if (f?.replicaId !== undefined) this.replicaOf.set(n.addr, f.replicaId);
          if (n !== m.node && f?.master?.addr !== m.node.addr) return undefined;
        }
        return (await this.syncStateSet(m.node)).split(",").length === 3 ? m : undefined;
      },
      timeoutMs,
      () => `group ${A} to be healthy: ${this.diag()}`,
    );
  }

  /** SEND_OK answers from group A seen after `since` (stored by `addr`, if given). */
  ackedByA(since: number, addr?: string): ChaosAck[] {
    return this.client.acked().filter((a) => a.brokerName === A && a.seenAt > since && (addr === undefined || ackedAt(a).host === addr));
  }

  /** Remembers what `m` has cut so far (store/truncated/); returns how many records that is. */
  keepTruncated(m: Node): number {
    const cut = truncatedOf(m);
    for (const [offset, r] of cut) this.truncated.set(`${offset}/${r.body}`, m.name);
    return cut.size;
  }

  /** m runs as a replica of A's current writable master (which may have changed meanwhile). */
  async backAsReplica(m: Node, what: string): Promise<void> {
    await waitFor(async () => {
      const [v, cur] = [await this.view(m), await this.master()];
      return v?.role === "SLAVE" && v.failover?.role === "replica" && cur !== undefined && v.failover.master?.addr === cur.node.addr;
    }, 30_000, () => `${m.name} to come back as a replica ${what}: ${this.diag()}`);
  }

  /** A message acknowledged by group A after `since` has been consumed. */
  async consumersContinue(since: number, what: string): Promise<void> {
    await waitFor(
      () => {
        const bodies = new Set(this.ackedByA(since).map((a) => a.body));
        return this.client.recvs.some((r) => bodies.has(r.body));
      },
      60_000,
      () => `consumers to receive a message of ${A} acknowledged after ${what}: ${this.diag()}`,
    );
  }

  /** Sends to A flowing: 20 more acknowledged. */
  async flowing(): Promise<void> {
    const since = Date.now();
    await waitFor(() => this.ackedByA(since).length >= 20, 30_000, () => `sends to ${A} to flow: ${this.diag()}`);
  }

  diag(): string {
    const s = { acked: this.client.acked().length, fails: this.client.fails.length, recvs: this.client.recvs.length };
    const lastFails = this.client.fails.slice(-3).map((f) => f.error);
    return `\nphases ${JSON.stringify(this.phases)}\nclient ${JSON.stringify(s)} last fails ${JSON.stringify(lastFails)}\n${this.client.stderr()}\n${this.c.diag()}`;
  }
}

/**
 * CHAOS_LOG_DIR=dir (while debugging): each broker's whole output is written there before it is
 * killed and at the end (run with HA_LOG_LEVEL=info for the elections).
 */
function saveLog(n: Node, tag: string): void {
  const dir = process.env.CHAOS_LOG_DIR;
  if (!dir || !n.running) return;
  appendFileSync(join(dir, `${n.name}.log`), `=== ${tag} ===\n${n.proc.output.out()}${n.proc.output.err()}\n`);
}

/** kill -9 of A's master; a new one is elected and takes sends; the old one restarts as a replica. */
async function killMaster(x: Chaos, name: string): Promise<void> {
  const { node: m, epoch } = await x.healthy();
  await x.flowing();
  const phase: Phase = { name, at: Date.now(), node: m.name, epochBefore: epoch };
  x.phases.push(phase);
  saveLog(m, name);
  await m.kill();
  const next = await waitFor(async () => {
    const n = await x.master();
    return n && n.node !== m && n.epoch > epoch ? n : undefined;
  }, 30_000, () => `a new master after ${name}: ${x.diag()}`);
  phase.epochAfter = next.epoch;
  await waitFor(() => x.ackedByA(phase.at).length > 0, 30_000, () => `${A} to acknowledge sends again: ${x.diag()}`);
  await x.consumersContinue(phase.at, name);
  await m.start(); // on its store
  await x.backAsReplica(m, `after ${name}`);
  phase.note = `${x.keepTruncated(m)} records kept in its store/truncated/`;
}

/** SIGSTOP of A's master until another is master of a newer epoch, then SIGCONT: it steps down. */
async function pauseMaster(x: Chaos, name: string): Promise<void> {
  const { node: m, epoch } = await x.healthy();
  await x.flowing();
  const phase: Phase = { name, at: Date.now(), node: m.name, epochBefore: epoch };
  x.phases.push(phase);
  m.freeze();
  const next = await waitFor(async () => {
    const n = await x.master();
    return n && n.node !== m && n.epoch > epoch ? n : undefined;
  }, 30_000, () => `a new master while ${m.name} is stopped: ${x.diag()}`);
  phase.epochAfter = next.epoch;
  // Sends stuck on the stopped master's sockets are answered once it wakes: refused, never
  // acknowledged at an offset of the new epoch (checked at the end for every acknowledgement).
  await waitFor(() => x.ackedByA(phase.at).some((a) => ackedAt(a).host !== m.addr), 30_000, () => `another replica to acknowledge sends: ${x.diag()}`);
  m.thaw();
  await x.backAsReplica(m, "after SIGCONT");
  phase.note = `${x.keepTruncated(m)} records kept in its store/truncated/`;
  await x.consumersContinue(phase.at, name);
}

/** etcd paused for two leases: roles stay, A's master fences itself, sends and consumers go on. */
async function cutEtcd(x: Chaos): Promise<void> {
  const { node: m, epoch } = await x.healthy();
  await x.flowing();
  const phase: Phase = { name: "etcd cut", at: Date.now(), node: m.name, epochBefore: epoch };
  x.phases.push(phase);
  const recvsBefore = x.client.recvs.length;
  x.etcd.pause();
  try {
    await waitFor(async () => (await x.view(m))?.failover?.writable === false, LEASE_MS + 2000, () => `${m.name} to fence itself: ${x.diag()}`);
    // Held for two leases: sampled all along, every replica keeps its role and epoch.
    const until = phase.at + 2 * LEASE_MS;
    while (Date.now() < until) {
      for (const n of x.nodes) {
        const f = (await x.view(n))?.failover;
        const want = n === m ? "master" : "replica";
        if (f?.role !== want || f.epoch !== epoch) throw new Error(`${n.name} is ${f?.role} of epoch ${f?.epoch} during the etcd cut (was ${want} of ${epoch})${x.diag()}`);
      }
      await Bun.sleep(200);
    }
    await waitFor(() => x.client.acked().some((a) => a.brokerName === B && a.seenAt > phase.at + LEASE_MS), 20_000, () => `sends to go on (to ${B}) without etcd: ${x.diag()}`);
    await waitFor(() => x.client.recvs.length > recvsBefore, 20_000, () => `consumers to go on without etcd: ${x.diag()}`);
  } finally {
    x.etcd.resume();
  }
  const after = await waitFor(() => x.master(), 30_000, () => `a writable master of ${A} once etcd is back: ${x.diag()}`);
  phase.epochAfter = after.epoch;
  phase.note = after.node === m ? "same master" : `re-elected ${after.node.name}`;
  await x.flowing();
}

describe.skipIf(!present)("automatic failover under kill, pause and an etcd cut, with the Java client (compiled binary)", () => {
  let etcd: RunningEtcd | undefined;
  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterAll(async () => {
    await etcd?.stop();
  });

  test("no acknowledged message is lost or acknowledged twice at one queue offset, and consumers keep consuming", async () => {
    const yaml = failoverYaml(etcd!.endpoint);
    await using c = await HaCluster.start({
      namesrvs: 2,
      groups: [
        { name: A, role: "SYNC_MASTER", slaves: 2, masterYaml: yaml, slaveYaml: yaml },
        { name: B, role: "SYNC_MASTER", slaves: 1 },
      ],
    });
    await waitFor(async () => (await c.master(A).admin<FailoverView>("/ha")).failover?.writable, 30_000, () => `the first election: ${c.diag()}`);
    await c.createTopic(TOPIC, 4);
    const namesrv = c.namesrvs.map((n) => n.addr).join(";");
    await using client = await ChaosClient.start({ namesrv, topic: TOPIC, group: "chaos_consumer", seconds: 600 });
    const x = new Chaos(c, etcd!, client);

    await killMaster(x, "kill -9 #1");
    await killMaster(x, "kill -9 #2");
    await pauseMaster(x, "SIGSTOP #1");
    await cutEtcd(x);
    await killMaster(x, "kill -9 #3");
    await pauseMaster(x, "SIGSTOP #2");
    await killMaster(x, "kill -9 #4");
    const final = await x.healthy();
    for (const n of [...x.nodes, c.master(B), c.slave(0, B)]) saveLog(n, "end");

    await client.stopSending();
    const acked = client.acked();
    await waitFor(
      () => {
        const got = new Set(client.recvs.map((r) => r.body));
        return acked.every((a) => got.has(a.body));
      },
      60_000,
      () => {
        const got = new Set(client.recvs.map((r) => r.body));
        const missing = acked.filter((a) => !got.has(a.body));
        return `every acknowledged message to be consumed; ${missing.length} missing, e.g. ${JSON.stringify(missing.slice(0, 5))}${x.diag()}`;
      },
    );
    await c.caughtUp(A, 30_000);
    await c.caughtUp(B, 30_000);
    const epochs = (await x.view(final.node))!.failover!.epochs;
    checkAcks(x, acked, { [A]: logOf(final.node), [B]: logOf(c.master(B)) });
    checkEpochOwners(x, acked, epochs, await electionWinners(etcd!));
    console.log(summary(x, acked));
  }, 600_000);
});

/** The end-of-run checks on the acknowledged messages (see the top of this file). */
function checkAcks(x: Chaos, acked: ChaosAck[], logs: Record<string, Map<number, StoredRecord>>): void {
  const problems: string[] = [];
  const atQueueOffset = new Map<string, string>();
  for (const a of acked) {
    const key = `${a.brokerName}/${a.queueId}/${a.queueOffset}`;
    const other = atQueueOffset.get(key);
    if (other !== undefined && other !== a.body) problems.push(`${other} and ${a.body} both acknowledged at ${key}`);
    atQueueOffset.set(key, a.body);
    const { host, offset } = ackedAt(a);
    const r = logs[a.brokerName]?.get(offset);
    if (!r || r.body !== a.body || r.queueId !== a.queueId || r.queueOffset !== a.queueOffset || r.topic !== TOPIC) {
      problems.push(`${a.body} acknowledged by ${host} at ${a.brokerName}/${a.queueId}/${a.queueOffset}, offset ${offset}; the final log has ${JSON.stringify(r)}`);
    }
    if (a.brokerName !== A) continue;
    const cutBy = x.truncated.get(`${offset}/${a.body}`);
    if (cutBy !== undefined) problems.push(`${a.body} was acknowledged, but ${cutBy} cut it on its return (offset ${offset})`);
  }
  expect(problems.slice(0, 20), `${problems.length} problems${x.diag()}`).toEqual([]);
  // Both groups took acknowledged sends, and A after every fault.
  expect(acked.some((a) => a.brokerName === B)).toBe(true);
  for (const p of x.phases) expect(acked.some((a) => a.brokerName === A && a.seenAt > p.at)).toBe(true);
}

/**
 * Every acknowledgement of A came from the master of the epoch its offset belongs to (a master
 * deposed while stopped, or cut off, acknowledged nothing after the next election began).
 */
function checkEpochOwners(x: Chaos, acked: ChaosAck[], epochs: { epoch: number; startOffset: number }[], winners: Map<number, number>): void {
  const problems: string[] = [];
  for (const a of acked) {
    if (a.brokerName !== A) continue;
    const { host, offset } = ackedAt(a);
    const e = epochs.findLast((x) => x.startOffset <= offset);
    const by = x.replicaOf.get(host);
    if (!e || by === undefined || winners.get(e.epoch) !== by) {
      problems.push(`${a.body} at offset ${offset} acknowledged by ${host} (replica ${by}); epoch ${e?.epoch} was won by replica ${e && winners.get(e.epoch)}`);
    }
  }
  const context = `epochs ${JSON.stringify(epochs)}, winners ${JSON.stringify([...winners])}, replicas ${JSON.stringify([...x.replicaOf])}`;
  expect(problems.slice(0, 20), `${problems.length} problems; ${context}${x.diag()}`).toEqual([]);
}

function summary(x: Chaos, acked: ChaosAck[]): string {
  const byGroup = (g: string) => acked.filter((a) => a.brokerName === g).length;
  const phases = x.phases.map((p) => `${p.name} on ${p.node} (epoch ${p.epochBefore} → ${p.epochAfter}${p.note ? `, ${p.note}` : ""})`);
  return `failover chaos: ${acked.length} acknowledged (${A} ${byGroup(A)}, ${B} ${byGroup(B)}), ${x.client.fails.length} sends failed after retries, ${x.client.recvs.length} received; ${phases.join("; ")}`;
}
