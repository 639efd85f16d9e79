/**
 * One simulated broker run (docs/CONVENTIONS.md §6): a whole BrokerController (through the
 * in-process fixture, src/broker/test-support.ts) on simulated time (src/common/sim-clock.ts), an in-memory
 * disk with its crash model (./disk.ts) and in-memory sockets, with producers sending
 * SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE and consumers pulling with long polling and committing
 * offsets, every choice drawn from one seeded PRNG. `runBrokerSimulation(seed)` returns what
 * happened, or throws on the first broken invariant with the step and the seed in the message.
 *
 * Invariants checked:
 *   B1  every pulled record is one that was sent (body and tags as sent), of the pulled topic and
 *       queue, and a consumer gets it at most once;
 *   B2  per queue, a consumer's records come in queue-offset order, consecutive for a "*"
 *       subscription; the offsets a tag subscription skips hold only messages it does not match;
 *       an acknowledged message is pulled at the queue offset its send answer named;
 *   B3  a parked pull is answered no later than the acknowledgement of the first matching message
 *       that arrived, while it was out, at or past its offset, and no later than its hold
 *       (≤ pullHoldMaxMs) plus one scan;
 *   B4  at the end (no more sends or crashes), each consumer has pulled every acknowledged message
 *       it subscribes to exactly once, and the broker's committed offsets are where it stands;
 *   B5  after a crash, every message acknowledged with SYNC_FLUSH is still in its queue at its
 *       offset (ASYNC_FLUSH acknowledgements past the recovered end are lost, as documented);
 *   N1  with `namesrv`, the broker registers with an in-process name server
 *       (src/namesrv/test-support.ts) on the same clock and network: once the topics exist, after
 *       every crash and at the end, the name server routes each topic to the broker with its queue
 *       numbers and holds the broker live.
 *
 * Simplifications: the metadata files (topics.json, consumerOffset.json) are on the real disk and
 * survive a crash whole; consumers keep their positions in memory across broker crashes (a client
 * process that did not die) and step back to a queue's recovered end when it lost messages.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseProperties, type DecodedRecord } from "../../src/commitlog/index.ts";
import { scope } from "../../src/common/log.ts";
import {
  createTopicRequest,
  FIXTURE_HOST,
  FIXTURE_PORT,
  InProcessBroker,
  PULL_COMMIT_OFFSET,
  PULL_SUBSCRIPTION,
  PULL_SUSPEND,
  pulledRecords,
  pullRequest,
  sendBatchRequest,
  sendV2Request,
} from "../../src/broker/test-support.ts";
import { REMOTING_CLIENT_DEFAULTS, RemotingClient, ResponseCode, type RemotingCommand } from "../../src/remoting/index.ts";
import { MemNetwork } from "../../src/remoting/test-support.ts";
import { InProcessNamesrv } from "../../src/namesrv/test-support.ts";
import { prng, type Rng } from "../harness/fuzz.ts";
import { SimClock, SIM_EPOCH_MS } from "../../src/common/sim-clock.ts";
import { MemDisk } from "./disk.ts";
import { PopConsumers, type PopSummary } from "./pop-consumers.ts";

export interface BrokerSimOptions {
  steps: number;
  trace?: boolean;
  /**
   * Register with an in-process name server and check N1. Off, a seed runs as it did before the
   * name server had seams: registering moves the interleaving (a clean stop's UNREGISTER_BROKER
   * round trip lets a send in flight get further before parked pulls are answered), so the same
   * seed takes another run with it.
   */
  namesrv?: boolean;
  /**
   * Add the POP consumers of ./pop-consumers.ts (P0–P3, P5) beside the PULL ones, their choices
   * drawn from a PRNG of their own. Off, a seed runs as it did before POP: the POP traffic moves
   * the interleaving, so the same seed takes another run with it.
   */
  pop?: boolean;
}

export interface BrokerSimResult {
  seed: number;
  config: string;
  steps: number;
  simulatedMs: number;
  sent: number;
  acked: number;
  refused: number;
  unanswered: number;
  pulls: number;
  parkedWakes: number;
  delivered: number;
  crashes: number;
  cleanRestarts: number;
  lostAsyncAcks: number;
  /** With `pop`: what the POP consumers did. */
  pop?: PopSummary;
}

interface Sent {
  id: number;
  /** When the broker got it (the in-memory sockets have no delay: the time it was sent). */
  sentAt: number;
  topic: string;
  tags: string | undefined;
  body: Uint8Array;
  /** Where the send answer put it. */
  at?: { queueId: number; offset: number };
  ackedAt?: number;
  flushAck?: boolean;
  /** An ASYNC_FLUSH acknowledgement lost in a crash: exempt from B4. */
  lost?: boolean;
}

interface Outstanding {
  queueId: number;
  offset: number;
  sentAt: number;
  deadline: number;
  /** The earliest acknowledgement of a matching message at or past `offset` that arrived while the pull was out. */
  wakeBy: number;
  answeredAt?: number;
  /** Its connection broke (crash, restart): no answer comes. */
  dropped?: boolean;
}

interface Consumer {
  group: string;
  topic: string;
  /** null = "*". */
  tags: readonly string[] | null;
  next: number[];
  outstanding: (Outstanding | null)[];
  /** Pulls out now or answered recently, to check each acknowledged message against (B3). */
  recent: Outstanding[];
  /** ids pulled, and where. */
  got: Map<number, { queueId: number; offset: number }>;
  /** Offsets a tag subscription skipped, per queue (checked at the end against what is there). */
  skipped: Set<string>;
  pulledOnce: boolean[];
}

const TOPICS: Record<string, number> = { TopicA: 4, TopicB: 2 };
const TAGS = ["A", "B", "C"] as const;
const TIMEOUT_MS = 600_000;
const SCAN_MS = 500;

export class BrokerInvariantError extends Error {
  override name = "BrokerInvariantError";
}

const enc = new TextEncoder();
const dec = new TextDecoder();

function bodyFor(id: number, rng: Rng): Uint8Array {
  const head = enc.encode(`m${id}|`);
  const body = new Uint8Array(head.length + rng.int(0, 1500));
  body.set(head);
  for (let k = head.length; k < body.length; k++) body[k] = (id * 31 + k) & 0xff;
  return body;
}

function idOf(body: Uint8Array): number {
  const s = dec.decode(body.subarray(0, 16));
  const m = /^m(\d+)\|/.exec(s);
  return m ? Number(m[1]) : -1;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export async function runBrokerSimulation(seed: number, opts: BrokerSimOptions): Promise<BrokerSimResult> {
  const trace: string[] | null = opts.trace ? [] : null;
  const dir = mkdtempSync(join(tmpdir(), "rocketbun-brokersim-"));
  // The broker draws the queue a pop starts from (and whether it reads the retry topic first)
  // with Math.random: seeded for the run, so that a POP seed replays.
  const random = Math.random;
  if (opts.pop) Math.random = prng((seed ^ 0x5eed0001) >>> 0).next;
  try {
    return await run(seed, opts, trace, dir);
  } catch (e) {
    if (trace)
      process.stderr.write(
        `broker sim: trace of seed ${seed} (last 60 events):\n${trace.slice(-Number(process.env.SIM_TRACE_LINES ?? 60)).join("\n")}\n`,
      );
    throw e;
  } finally {
    Math.random = random;
    rmSync(dir, { recursive: true, force: true });
  }
}

async function run(seed: number, opts: BrokerSimOptions, trace: string[] | null, dir: string): Promise<BrokerSimResult> {
  const rng = prng(seed);
  const sim = new SimClock();
  const note = (m: string) => trace?.push(`${sim.now - SIM_EPOCH_MS} ${m}`);
  const disk = new MemDisk(rng, rng.int(0, 8));
  const network = new MemNetwork();
  const flush = rng.bool() ? "SYNC_FLUSH" : "ASYNC_FLUSH";
  const holdMaxMs = rng.pick([1000, 5000, 20000]);
  const segmentBytes = rng.pick([16384, 65536]);
  const pCrash = process.env.SIM_NO_CRASH ? (rng.next(), 0) : rng.pick([0, 0.004, 0.01]);
  const pRestart = process.env.SIM_NO_RESTART ? 0 : 0.003;
  const config = `flush=${flush} pullHoldMaxMs=${holdMaxMs} segmentBytes=${segmentBytes} pCrash=${pCrash}`;
  note(`config ${config}`);
  const result: BrokerSimResult = {
    seed,
    config,
    steps: opts.steps,
    simulatedMs: 0,
    sent: 0,
    acked: 0,
    refused: 0,
    unanswered: 0,
    pulls: 0,
    parkedWakes: 0,
    delivered: 0,
    crashes: 0,
    cleanRestarts: 0,
    lostAsyncAcks: 0,
  };
  let step = 0;
  /** The first broken invariant: answers are checked in callbacks, the run loop rethrows it. */
  let broken: BrokerInvariantError | null = null;
  const fail = (what: string): never => {
    broken ??= new BrokerInvariantError(`seed ${seed} step ${step} t=${sim.now - SIM_EPOCH_MS}ms: ${what}\nconfig: ${config}`);
    throw broken;
  };
  const stopOnFailure = () => {
    if (broken) throw broken;
  };

  const namesrv = opts.namesrv ? InProcessNamesrv.start({ sim, network }) : null;
  const registerWith = namesrv ? [namesrv.addr] : [];
  const startBroker = (namesrvAddr = registerWith): InProcessBroker =>
    InProcessBroker.start({
      sim,
      network,
      dir,
      namesrvAddr,
      disk: (clock) => disk.view(clock),
      broker: { pullHoldMaxMs: holdMaxMs, maxMessageSizeBytes: 4096, autoCreateTopicEnable: false },
      store: {
        flushDiskType: flush,
        commitLogSegmentBytes: segmentBytes,
        flushIntervalMs: rng.pick([20, 100, 500]),
        syncFlushTimeoutMs: 5000,
      },
    });
  // The first incarnation registers once its topics exist: with a name server, creating a topic
  // waits for its registration (a 20 ms timer), and the setup does not move time.
  let broker: InProcessBroker | null = startBroker([]);
  const addr = `${FIXTURE_HOST}:${FIXTURE_PORT}`;
  const admin = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("sim-admin"), network, clock: sim.view() });
  for (const [t, n] of Object.entries(TOPICS)) {
    const r = await admin.invoke(addr, createTopicRequest(t, n), TIMEOUT_MS);
    if (r.code !== ResponseCode.SUCCESS) fail(`create topic ${t}: ${r.code} ${r.remark}`);
  }
  if (namesrv) await broker.controller.reconfigure({ namesrvAddr: registerWith });
  checkRoutes(broker);
  const producers = [0, 1].map((i) => new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope(`sim-producer-${i}`), network, clock: sim.view() }));
  const consumerClient = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("sim-consumer"), network, clock: sim.view() });
  const clientClock = sim.view();

  // ------------------------------------------------------------------ model
  const sent = new Map<number, Sent>();
  /** topic@queue@offset → id, from send answers. */
  const slots = new Map<string, number>();
  const consumers: Consumer[] = [
    { group: "CG-all-A", topic: "TopicA", tags: null },
    { group: "CG-tags-A", topic: "TopicA", tags: ["A", "B"] },
    { group: "CG-all-B", topic: "TopicB", tags: null },
  ].map((c) => ({
    ...c,
    next: Array<number>(TOPICS[c.topic]!).fill(0),
    outstanding: Array<Outstanding | null>(TOPICS[c.topic]!).fill(null),
    recent: [],
    got: new Map(),
    skipped: new Set<string>(),
    pulledOnce: Array<boolean>(TOPICS[c.topic]!).fill(false),
  }));
  const matches = (c: Consumer, tags: string | undefined) => c.tags === null || (tags !== undefined && c.tags.includes(tags));

  const pop: PopConsumers | null = opts.pop
    ? new PopConsumers({
        sim,
        rng: prng((seed ^ 0x5eed0002) >>> 0),
        network,
        addr,
        flush,
        sent,
        broker: () => broker,
        recordId: (who, topic, r) => recordId(who, topic, r),
        fail,
        note,
      })
    : null;
  await pop?.setup(admin);

  // ------------------------------------------------------------------ producers
  let nextId = 0;
  const onAck = (ids: number[], res: RemotingCommand, incarnation: InProcessBroker | null): void => {
    if (incarnation !== broker) return; // answered by a broker that has crashed since: never heard
    if (res.code !== ResponseCode.SUCCESS) {
      result.refused += ids.length;
      note(`send ${ids[0]}.. refused ${res.code} ${res.remark}`);
      return;
    }
    const queueId = Number(res.extFields!.queueId);
    const first = Number(res.extFields!.queueOffset);
    ids.forEach((id, i) => {
      const s = sent.get(id)!;
      s.at = { queueId, offset: first + i };
      s.ackedAt = sim.now;
      s.flushAck = flush === "SYNC_FLUSH";
      slots.set(`${s.topic}@${queueId}@${first + i}`, id);
      result.acked++;
      for (const c of consumers) {
        if (c.topic !== s.topic) continue;
        const g = c.got.get(id);
        if (g && (g.queueId !== queueId || g.offset !== first + i))
          fail(`${c.group} pulled message ${id} at ${g.queueId}/${g.offset}, its send answer says ${queueId}/${first + i}`);
        if (!matches(c, s.tags)) continue;
        // B3: a pull that was out when this message arrived, for an offset at or before it, is
        // answered by the time the send is (the answer may still be on its way at this instant).
        // Not sooner: parked pulls are woken once the put completes, after its flush in SYNC_FLUSH.
        for (const o of c.recent) {
          if (o.dropped || o.answeredAt !== undefined || o.queueId !== queueId || o.offset > first + i || o.sentAt > s.sentAt) continue;
          o.wakeBy = Math.min(o.wakeBy, sim.now);
        }
      }
    });
  };
  const send = (): void => {
    const topic = rng.pick(Object.keys(TOPICS));
    const queueId = rng.int(0, TOPICS[topic]! - 1);
    const client = rng.pick(producers);
    const n = rng.bool(0.25) ? rng.int(2, 5) : 1;
    const entries: Sent[] = [];
    for (let i = 0; i < n; i++) {
      const id = nextId++;
      const s: Sent = { id, sentAt: sim.now, topic, tags: rng.bool(0.8) ? rng.pick(TAGS) : undefined, body: bodyFor(id, rng) };
      sent.set(s.id, s);
      entries.push(s);
    }
    result.sent += n;
    const cmd =
      n === 1
        ? sendV2Request(topic, entries[0]!.body, { queueId, ...(entries[0]!.tags ? { tags: entries[0]!.tags } : {}) })
        : sendBatchRequest(
            topic,
            entries.map((e) => ({ body: e.body, ...(e.tags ? { tags: e.tags } : {}) })),
            { queueId },
          );
    const incarnation = broker;
    const ids = entries.map((e) => e.id);
    note(`send ${ids.join(",")} → ${topic}/${queueId}`);
    client
      .invoke(addr, cmd, TIMEOUT_MS)
      .then(
        (res) => onAck(ids, res, incarnation),
        () => {
          result.unanswered += n;
        },
      )
      .catch(() => undefined); // a broken invariant: recorded in `broken`
  };

  // ------------------------------------------------------------------ consumers
  /** B1 for a record a POP group got: one that was sent to `topic`, body and tags as sent; its id. */
  const recordId = (who: string, topic: string, r: DecodedRecord): number => {
    const id = idOf(r.body);
    const s = sent.get(id);
    if (!s) return fail(`${who} got a message that was never sent (${r.topic}/${r.queueId}@${r.queueOffset})`);
    if (s.topic !== topic || !equalBytes(s.body, r.body)) fail(`${who} got message ${id} with another topic or body than sent`);
    const tags = parseProperties(r.properties).TAGS;
    if (tags !== s.tags) fail(`${who} got message ${id} with tags ${tags}, sent ${s.tags}`);
    return id;
  };
  const checkRecords = (c: Consumer, queueId: number, from: number, res: RemotingCommand): void => {
    let expected = from;
    let records: DecodedRecord[] = [];
    try {
      records = pulledRecords(res);
    } catch (e) {
      fail(`${c.group} ${c.topic}/${queueId}@${from}: ${e instanceof Error ? e.message : String(e)}`);
    }
    for (const r of records) {
      if (r.topic !== c.topic || r.queueId !== queueId) fail(`${c.group} pulled ${r.topic}/${r.queueId} from ${c.topic}/${queueId}`);
      if (r.queueOffset < expected) fail(`${c.group} ${c.topic}/${queueId}: offset ${r.queueOffset} after ${expected - 1}`);
      if (c.tags === null && r.queueOffset !== expected) fail(`${c.group} ${c.topic}/${queueId}: offset ${r.queueOffset}, expected ${expected}`);
      for (let k = expected; k < r.queueOffset; k++) c.skipped.add(`${queueId}@${k}`);
      const id = idOf(r.body);
      const s = sent.get(id);
      if (!s) return fail(`${c.group} pulled a message that was never sent (${r.topic}/${queueId}@${r.queueOffset})`);
      if (s.topic !== r.topic || !equalBytes(s.body, r.body)) fail(`${c.group} pulled message ${id} with another topic or body than sent`);
      const tags = parseProperties(r.properties).TAGS;
      if (tags !== s.tags) fail(`${c.group} pulled message ${id} with tags ${tags}, sent ${s.tags}`);
      if (!matches(c, tags)) fail(`${c.group} (tags ${c.tags}) got message ${id} with tags ${tags}`);
      if (c.got.has(id)) fail(`${c.group} pulled message ${id} twice (${JSON.stringify(c.got.get(id))}, now ${queueId}/${r.queueOffset})`);
      if (s.at && (s.at.queueId !== queueId || s.at.offset !== r.queueOffset))
        fail(`${c.group} pulled message ${id} at ${queueId}/${r.queueOffset}, its send answer says ${s.at.queueId}/${s.at.offset}`);
      c.got.set(id, { queueId, offset: r.queueOffset });
      result.delivered++;
      expected = r.queueOffset + 1;
    }
  };
  const pull = (c: Consumer, queueId: number): void => {
    const offset = c.next[queueId]!;
    const suspendMs = rng.pick([500, 3000, 15000]);
    const o: Outstanding = { queueId, offset, sentAt: sim.now, deadline: sim.now + Math.min(suspendMs, holdMaxMs) + SCAN_MS, wakeBy: Infinity };
    c.outstanding[queueId] = o;
    // A send is answered within syncFlushTimeoutMs (5 s): pulls answered before that need no more checks.
    c.recent = c.recent.filter((x) => !x.dropped && (x.answeredAt === undefined || x.answeredAt > sim.now - 10_000));
    c.recent.push(o);
    result.pulls++;
    const sysFlag = PULL_SUBSCRIPTION | PULL_SUSPEND | PULL_COMMIT_OFFSET;
    const req = pullRequest(c.topic, {
      group: c.group,
      queueId,
      offset,
      max: rng.int(1, 32),
      sysFlag,
      subscription: c.tags === null ? "*" : c.tags.join(" || "),
      suspendMs,
      commitOffset: offset,
    });
    c.pulledOnce[queueId] = true;
    const again = (ms: number) => clientClock.setTimeout(() => pull(c, queueId), ms);
    consumerClient
      .invoke(addr, req, TIMEOUT_MS)
      .then(
        (res) => {
          if (c.outstanding[queueId] !== o) return; // superseded after a crash
          c.outstanding[queueId] = null;
          o.answeredAt = sim.now;
          if (sim.now > o.wakeBy)
            fail(
              `${c.group} ${c.topic}/${queueId}@${offset}: a matching message was acknowledged at ${o.wakeBy - SIM_EPOCH_MS}, the pull answered at ${sim.now - SIM_EPOCH_MS}`,
            );
          if (sim.now > o.deadline)
            fail(
              `${c.group} ${c.topic}/${queueId}@${offset}: parked past its hold (sent ${o.sentAt - SIM_EPOCH_MS}, answered ${sim.now - SIM_EPOCH_MS})`,
            );
          if (sim.now > o.sentAt && res.code === ResponseCode.SUCCESS) result.parkedWakes++;
          const next = Number(res.extFields?.nextBeginOffset);
          if (res.code === ResponseCode.SUCCESS) checkRecords(c, queueId, offset, res);
          else if (res.code === ResponseCode.PULL_OFFSET_MOVED) fail(`${c.group} ${c.topic}/${queueId}@${offset}: PULL_OFFSET_MOVED to ${next}`);
          else if (res.code !== ResponseCode.PULL_NOT_FOUND && res.code !== ResponseCode.PULL_RETRY_IMMEDIATELY)
            fail(`${c.group} ${c.topic}/${queueId}@${offset}: answered ${res.code} ${res.remark}`);
          if (res.code !== ResponseCode.PULL_NOT_FOUND && !(next > offset)) fail(`${c.group}: nextBeginOffset ${next} after a pull at ${offset}`);
          if (res.code === ResponseCode.PULL_NOT_FOUND && next !== offset) fail(`${c.group}: PULL_NOT_FOUND moved ${offset} to ${next}`);
          c.next[queueId] = next;
          again(rng.bool(0.5) ? 0 : rng.int(1, 200));
        },
        () => {
          // The broker went away (crash or restart): try again after a while, as a client does.
          o.dropped = true;
          if (c.outstanding[queueId] !== o) return;
          c.outstanding[queueId] = null;
          again(rng.int(100, 1000));
        },
      )
      .catch(() => undefined); // a broken invariant: recorded in `broken`
  };

  // ------------------------------------------------------------------ faults
  const queueEnds = (b: InProcessBroker, topic: string): number[] => b.controller.info.queueOffsets(topic).map((q) => q.maxOffset);
  const afterRestart = (b: InProcessBroker): void => {
    for (const topic of Object.keys(TOPICS)) {
      const ends = queueEnds(b, topic);
      for (const s of sent.values()) {
        if (s.topic !== topic || !s.at || s.lost || s.at.offset < ends[s.at.queueId]!) continue;
        if (s.flushAck)
          fail(
            `message ${s.id} was acknowledged after SYNC_FLUSH at ${topic}/${s.at.queueId}@${s.at.offset}, the recovered queue ends at ${ends[s.at.queueId]}`,
          );
        s.lost = true;
        result.lostAsyncAcks++;
      }
      // What the queue lost will be written again at the same offsets: consumers step back there.
      for (const c of consumers) {
        if (c.topic !== topic) continue;
        c.next = c.next.map((n, q) => Math.min(n, ends[q]!));
        // Skipped offsets at or past a queue's recovered end held messages that are gone.
        for (const key of [...c.skipped]) {
          const [q, off] = key.split("@").map(Number);
          if (off! >= ends[q!]!) c.skipped.delete(key);
        }
      }
    }
  };
  const crash = async (): Promise<void> => {
    if (!broker) return;
    result.crashes++;
    const b = broker;
    broker = null;
    b.clock.dead = true;
    network.kill(FIXTURE_HOST, FIXTURE_PORT);
    network.kill(FIXTURE_HOST, FIXTURE_PORT - 2);
    pop?.fault();
    const crashedAt = sim.now;
    const torn = disk.crash(dir, rng);
    note(`broker crashed (${torn.tornFiles} files torn)`);
    await sim.advance(rng.int(0, 2000));
    broker = startBroker();
    note(`broker up: ${JSON.stringify(broker.controller.info.store())}`);
    afterRestart(broker);
    await pop?.afterCrash(broker, crashedAt);
    await registeredAgain(broker);
  };
  /**
   * A clean stop waits for a store checkpoint in progress, whose fdatasyncs complete in simulated
   * time: when the stop has not finished once its own event-loop turn (a real setTimeout 0) is
   * over, time goes on, a millisecond at a time, until it has. A stop that needs no time (every
   * seed before POP) runs as it always did.
   */
  const stopCleanly = async (b: InProcessBroker): Promise<void> => {
    let done = false;
    const stopping = b.controller.stop().finally(() => {
      done = true;
    });
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setImmediate(r));
    while (!done) await sim.advance(1);
    await stopping;
  };
  const cleanRestart = async (): Promise<void> => {
    if (!broker) return;
    result.cleanRestarts++;
    pop?.fault();
    const b = broker;
    broker = null;
    await stopCleanly(b);
    if (namesrv && namesrv.controller.info.brokers().length > 0) fail("a cleanly stopped broker is still registered with the name server");
    b.clock.dead = true;
    await sim.advance(rng.int(0, 500));
    broker = startBroker();
    note("broker restarted cleanly");
    await registeredAgain(broker);
    for (const topic of Object.keys(TOPICS)) {
      const ends = queueEnds(broker, topic);
      for (const s of sent.values()) {
        if (s.topic === topic && s.at && !s.lost && s.at.offset >= ends[s.at.queueId]!) fail(`a clean restart lost message ${s.id}`);
      }
    }
  };

  // ------------------------------------------------------------------ run
  for (const c of consumers) for (let q = 0; q < c.next.length; q++) pull(c, q);
  pop?.start();
  for (step = 0; step < opts.steps; step++) {
    const r = rng.next();
    if (r < 0.45) send();
    else if (r < 0.85) await sim.advance(rng.int(1, 300));
    else if (r < 0.85 + pCrash) await crash();
    else if (r < 0.85 + pCrash + pRestart) await cleanRestart();
    else await sim.advance(rng.int(0, 20));
    pop?.checkTimely();
    stopOnFailure();
  }

  // Quiet: no sends, no faults; every consumer must reach the end of each of its queues.
  pop?.quiet();
  await sim.advance(6000);
  const b = broker!;
  const caughtUp = () =>
    consumers.every((c) => {
      const ends = queueEnds(b, c.topic);
      return c.next.every((n, q) => n === ends[q]);
    });
  const done = await sim.until(() => broken !== null || caughtUp(), 120_000, 50);
  stopOnFailure();
  if (!done) fail(`consumers did not catch up: ${JSON.stringify(consumers.map((c) => [c.group, c.next, queueEnds(b, c.topic)]))}`);
  if (pop) await settlePop(pop);
  // The last answers schedule one more pull each (≤ 200 ms later): it commits where the consumer stands.
  await sim.advance(500);
  stopOnFailure();
  checkEnd(b);
  checkRoutes(b);
  if (pop) {
    await pop.checkEnd(b);
    stopOnFailure();
    result.pop = pop.summary;
  }
  result.simulatedMs = sim.now - SIM_EPOCH_MS;
  for (const p of [...producers, consumerClient, admin]) await p.close();
  await pop?.close();
  await b.stop();
  await namesrv?.stop();
  clientClock.dead = true;
  return result;

  /** The POP groups settle (every delivery acked or in the DLQ), and stay settled past the longest invisible time. */
  async function settlePop(p: PopConsumers): Promise<void> {
    const settled = () => {
      p.checkTimely();
      return broken !== null || p.settled();
    };
    for (const round of [1, 2]) {
      const ok = await sim.until(settled, 120_000, 50);
      stopOnFailure();
      if (!ok) fail(`the POP groups did not settle (round ${round})`);
      await sim.advance(13_000);
      stopOnFailure();
    }
    if (!p.settled()) fail("the POP groups got more after settling");
  }

  /** N1 after a restart: the new incarnation registered as it started (no time passes for it). */
  async function registeredAgain(b: InProcessBroker): Promise<void> {
    if (!namesrv) return;
    await sim.advance(0);
    checkRoutes(b, sim.now);
  }

  /** N1: the name server routes every topic to this broker, with its queue numbers, and holds it live (registered at `at`, if given). */
  function checkRoutes(b: InProcessBroker, at?: number): void {
    if (!namesrv) return;
    const brokerAddr = b.controller.brokerAddr;
    const live = namesrv.controller.info.brokers().find((x) => x.brokerAddr === brokerAddr);
    if (!live) return fail(`the name server does not hold broker ${brokerAddr} live`);
    if (at !== undefined && live.lastUpdateTimestamp !== at) fail(`the restarted broker did not register: last registration at ${live.lastUpdateTimestamp}`);
    for (const [topic, queues] of Object.entries(TOPICS)) {
      const route = namesrv.controller.info.topicRoute(topic);
      const q = route?.queueDatas[0];
      const ok = route?.brokerDatas.length === 1 && route.brokerDatas[0]!.brokerAddrs["0"] === brokerAddr && q?.readQueueNums === queues && q.writeQueueNums === queues;
      if (!ok) fail(`the name server's route of ${topic} is ${JSON.stringify(route)}, not ${queues} queues on ${brokerAddr}`);
    }
  }

  /** B4, and the skipped offsets of B2. */
  function checkEnd(b: InProcessBroker): void {
    for (const c of consumers) {
      for (const s of sent.values()) {
        if (s.topic !== c.topic || !s.at || s.lost) continue;
        if (matches(c, s.tags) && !c.got.has(s.id))
          fail(`${c.group} never pulled acknowledged message ${s.id} (${s.topic}/${s.at.queueId}@${s.at.offset})`);
      }
      for (const key of c.skipped) {
        const [q, off] = key.split("@");
        const id = slots.get(`${c.topic}@${q}@${off}`);
        const s = id === undefined ? undefined : sent.get(id);
        if (s && !s.lost && matches(c, s.tags)) fail(`${c.group} skipped ${c.topic}/${q}@${off}, message ${s.id} with tags ${s.tags}`);
      }
      const committed = new Map(b.controller.info.groupOffsets(c.group).map((g) => [g.queueId, g.consumerOffset]));
      c.next.forEach((n, q) => {
        if (c.pulledOnce[q] && committed.get(q) !== n) fail(`${c.group} ${c.topic}/${q}: committed ${committed.get(q)}, the consumer is at ${n}`);
      });
    }
  }
}
