/**
 * The POP consumers of the broker simulation (./broker-world.ts with `pop`): two POP groups, each
 * on a topic that PULL groups consume too, pop with queueId −1, a poll time and a random invisible
 * time (2–10 s of virtual time), then ack, batch-ack, change the invisible time of, or leave each
 * message they get; every choice is drawn from the POP mode's own PRNG. The model keeps what each
 * group was told: every delivery of a message (a message is its body's id; a revived copy keeps
 * the body), its receipt handle, until when it is invisible, the acks answered SUCCESS.
 *
 * A delivery is "in flight" from its pop until its invisible time (popTime + invisibleTime of its
 * handle, moved by CHANGE_MESSAGE_INVISIBLETIME); an ack is "in time" when it was sent at least
 * RACE_MS before that (later, it races the revive tick and its outcome is not asserted).
 *   P0  a stored message (topic or retry topic, queue, offset) is handed to a group once, unless a
 *       crash lost the checkpoint of the pop that took it (ASYNC_FLUSH: under SYNC_FLUSH a pop is
 *       answered after its checkpoint is flushed, and a lost one fails the run);
 *   P1  a message acked in time (SUCCESS) is never delivered to that group again — across crashes
 *       and restarts — unless a crash lost the ack record (ASYNC_FLUSH only, as P0); and no
 *       message is delivered while another delivery of it is in flight;
 *   P2  every acknowledged send of the topic reaches the group at least once; a delivery never
 *       acked is delivered again, within its invisible time + REDELIVERY_BOUND_MS when no crash or
 *       restart comes between, with reconsumeTimes one higher than a delivery before it;
 *   P3  no delivery has reconsumeTimes past the group's retryMaxTimes (POP_RETRY_MAX); at the end
 *       %DLQ%{group} holds each message at most once — twice only when a crash came between the
 *       two copies (a revive stores the copy, then the record resolving its checkpoint: a crash
 *       between them revives it again; RocketMQ has the same window) — with reconsumeTimes
 *       POP_RETRY_MAX + 1, never one acked in time, and every message whose last delivery (at
 *       POP_RETRY_MAX) was never acked;
 *   P4  pending (FIFO pops are refused by the broker): a FIFO queue never has two batches in flight.
 * PULL groups on the same topics keep their own offsets: B4 checks theirs, P2/P5 the POP group's.
 *   P5  at the end, each POP group's committed offset on each queue of its topic is the queue's end.
 */
import { parseProperties, type DecodedRecord } from "../../src/commitlog/index.ts";
import { scope } from "../../src/common/log.ts";
import type { SimClock } from "../../src/common/sim-clock.ts";
import { SIM_EPOCH_MS } from "../../src/common/sim-clock.ts";
import { PULL_SUBSCRIPTION, pulledRecords, pullRequest, type InProcessBroker } from "../../src/broker/test-support.ts";
import { decodeReceiptHandle, encodeBatchAckBits, popRetryTopic, reviveTopic } from "../../src/protocol/pop.ts";
import { dlqTopic } from "../../src/protocol/topics.ts";
import { createRequest, REMOTING_CLIENT_DEFAULTS, RemotingClient, RequestCode, ResponseCode, type RemotingCommand } from "../../src/remoting/index.ts";
import type { MemNetwork } from "../../src/remoting/test-support.ts";
import type { Rng } from "../harness/fuzz.ts";

export const POP_GROUPS = [
  { group: "GP-pop-A", topic: "TopicA" },
  { group: "GP-pop-B", topic: "TopicB" },
] as const;
/** The POP groups' retryMaxTimes (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP): low, so the DLQ is reached. */
export const POP_RETRY_MAX = 2;
const LOOPS_PER_GROUP = 2;
const REDELIVERY_BOUND_MS = 3000;
/** An ack or change this close to the end of the invisible time races the revive tick (1 s). */
const RACE_MS = 100;
/** A change is sent this long before the invisible time ends at the latest: its checkpoint's flush takes time. */
const CHANGE_LEAD_MS = 1000;
const TIMEOUT_MS = 600_000;
const BROKER_NAME = "broker-a";
const REVIVE_TOPIC = reviveTopic("DefaultCluster");

type Plan = "ack" | "batch" | "change" | "none";

interface Delivery {
  id: number;
  g: PopGroup;
  /** The pop's time at the broker (the handle's popTime). */
  popTime: number;
  at: number;
  retry: "0" | "1";
  realTopic: string;
  queueId: number;
  offset: number;
  reconsumeTimes: number;
  reviveQid: number;
  /** The current handle (a change gives a new one) and its checkpoint's key: topic@queue@startOffset@popTime. */
  extraInfo: string;
  ck: string;
  until: number;
  plan: Plan;
  ackSentAt?: number;
  /** An ack in time answered SUCCESS (and what its record is known as). */
  acked?: { sentAt: number; durable: boolean; lost: boolean };
  changing: boolean;
  /** The outcome is not asserted: an ack or change raced the revive, or the checkpoint was lost. */
  uncertain: boolean;
  ckLost: boolean;
  next?: Delivery;
}

interface PopGroup {
  group: string;
  topic: string;
  byMsg: Map<number, Delivery[]>;
  handedOut: Map<string, Delivery>;
  /** Messages with two checkpoints in flight at once (a change raced a revive): P0/P1 skip them. */
  racy: Set<number>;
}

export interface PopSentView {
  topic: string;
  at?: { queueId: number; offset: number };
  lost?: boolean;
}

export interface PopHost {
  sim: SimClock;
  rng: Rng;
  network: MemNetwork;
  addr: string;
  flush: "SYNC_FLUSH" | "ASYNC_FLUSH";
  sent: ReadonlyMap<number, PopSentView>;
  /** The broker incarnation up now (null while down): answers of an earlier one were never heard. */
  broker: () => InProcessBroker | null;
  /** B1's checks of a consumed record (sent, body and tags as sent, of `topic`): its message id. */
  recordId: (who: string, topic: string, rec: DecodedRecord) => number;
  fail: (what: string) => never;
  note: (m: string) => void;
}

export interface PopSummary {
  pops: number;
  delivered: number;
  redelivered: number;
  acked: number;
  batchAcks: number;
  changes: number;
  lostAcks: number;
  lostCheckpoints: number;
  uncertain: number;
  dlq: number;
  /** Second DLQ copies of a message, stored again after a crash came between a revive's copy and its bAck. */
  dlqAfterCrash: number;
}

export class PopConsumers {
  readonly #h: PopHost;
  readonly #client: RemotingClient;
  readonly #clock;
  readonly groups: PopGroup[];
  readonly summary: PopSummary = { pops: 0, delivered: 0, redelivered: 0, acked: 0, batchAcks: 0, changes: 0, lostAcks: 0, lostCheckpoints: 0, uncertain: 0, dlq: 0, dlqAfterCrash: 0 };
  /** Times of crashes and clean restarts (P2's bound does not hold across them). */
  readonly #faults: number[] = [];
  #quiet = false;
  #pending = 0;

  constructor(h: PopHost) {
    this.#h = h;
    this.#clock = h.sim.view();
    this.#client = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("sim-pop"), network: h.network, clock: h.sim.view() });
    this.groups = POP_GROUPS.map((g) => ({ ...g, byMsg: new Map(), handedOut: new Map(), racy: new Set() }));
  }

  /** The POP groups with their low retry limit, before anything pops. */
  async setup(admin: RemotingClient): Promise<void> {
    for (const g of this.groups) {
      const body = new TextEncoder().encode(JSON.stringify({ groupName: g.group, retryMaxTimes: POP_RETRY_MAX }));
      const r = await admin.invoke(this.#h.addr, createRequest(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, undefined, body), TIMEOUT_MS);
      if (r.code !== ResponseCode.SUCCESS) this.#h.fail(`create group ${g.group}: ${r.code} ${r.remark}`);
    }
  }

  start(): void {
    for (const g of this.groups) for (let i = 0; i < LOOPS_PER_GROUP; i++) this.#pop(g);
  }

  async close(): Promise<void> {
    this.#clock.dead = true;
    await this.#client.close();
  }

  // ---------------------------------------------------------------- popping

  #pop(g: PopGroup): void {
    const rng = this.#h.rng;
    const now = this.#h.sim.now;
    const invisibleTime = rng.int(2000, 10_000);
    const req = createRequest(RequestCode.POP_MESSAGE, {
      consumerGroup: g.group,
      topic: g.topic,
      queueId: "-1",
      maxMsgNums: String(rng.int(1, 8)),
      invisibleTime: String(invisibleTime),
      pollTime: String(rng.pick([1000, 5000, 15_000])),
      bornTime: String(now),
      initMode: "0",
      expType: "TAG",
      exp: "*",
      order: "false",
    });
    const incarnation = this.#h.broker();
    this.summary.pops++;
    const again = (ms: number) => this.#clock.setTimeout(() => this.#pop(g), ms);
    this.#client
      .invoke(this.#h.addr, req, TIMEOUT_MS)
      .then(
        (res) => {
          again(rng.bool(0.5) ? 0 : rng.int(1, 200));
          if (incarnation !== this.#h.broker()) return; // answered by a broker that crashed since: never heard
          this.#h.note(`${g.group} pop → ${res.code}`);
          if (res.code === ResponseCode.SUCCESS) this.#popped(g, res);
          else if (res.code !== 210 && res.code !== 209) this.#h.fail(`${g.group} pop answered ${res.code} ${res.remark}`);
        },
        () => again(rng.int(100, 1000)),
      )
      .catch(() => undefined); // a broken invariant: recorded by the host
  }

  #popped(g: PopGroup, res: RemotingCommand): void {
    const ext = res.extFields!;
    const start = new Map(
      (ext.startOffsetInfo ?? "").split(";").map((e) => {
        const [r, q, o] = e.split(" ");
        return [`${r}@${q}`, Number(o)] as const;
      }),
    );
    const batch: Delivery[] = [];
    for (const rec of pulledRecords(res)) {
      const id = this.#h.recordId(g.group, g.topic, rec);
      const ck = parseProperties(rec.properties).POP_CK;
      const so = start.get(`0@${rec.queueId}`);
      const extraInfo = ck ?? `${so} ${ext.popTime} ${ext.invisibleTime} ${ext.reviveQid} 0 ${BROKER_NAME} ${rec.queueId} ${rec.queueOffset}`;
      const hd = decodeReceiptHandle(extraInfo);
      if ("invalid" in hd) return this.#h.fail(`${g.group} got message ${id} with a bad handle ${extraInfo}: ${hd.invalid}`);
      const retry = hd.retry === "1" ? "1" : "0";
      if (hd.retry !== retry) this.#h.fail(`${g.group} got message ${id} with retry marker ${hd.retry}`);
      const realTopic = retry === "1" ? popRetryTopic(g.topic, g.group) : g.topic;
      const d: Delivery = {
        id,
        g,
        popTime: hd.popTime,
        at: this.#h.sim.now,
        retry,
        realTopic,
        queueId: rec.queueId,
        offset: rec.queueOffset,
        reconsumeTimes: rec.reconsumeTimes,
        reviveQid: hd.reviveQid,
        extraInfo,
        ck: `${realTopic}@${rec.queueId}@${hd.ckQueueOffset}@${hd.popTime}`,
        until: hd.popTime + hd.invisibleTime,
        plan: this.#plan(),
        changing: false,
        uncertain: false,
        ckLost: false,
      };
      this.#h.note(`${g.group} got ${id} ${d.ck} #${d.offset} r${d.reconsumeTimes} until ${rel(d.until)} plan ${d.plan}`);
      this.#deliver(d);
      if (d.plan === "batch") batch.push(d);
      else this.#act(d);
    }
    this.#batchAck(batch);
  }

  #plan(): Plan {
    if (this.#quiet) return "ack";
    const r = this.#h.rng.next();
    return r < 0.45 ? "ack" : r < 0.55 ? "batch" : r < 0.7 ? "change" : "none";
  }

  /** P0, P1 (no delivery while acked or in flight), P2's raised reconsumeTimes, P3's limit. */
  #deliver(d: Delivery): void {
    const { g, id } = d;
    const who = `${g.group} message ${id} (${d.realTopic}/${d.queueId}@${d.offset}, reconsumeTimes ${d.reconsumeTimes}, popped at ${rel(d.popTime)})`;
    this.summary.delivered++;
    if ((d.retry === "1") !== d.reconsumeTimes > 0) this.#h.fail(`${who}: from the ${d.retry === "1" ? "retry topic" : "topic"}`);
    if (d.reconsumeTimes > POP_RETRY_MAX) this.#h.fail(`P3: ${who}: delivered past retryMaxTimes ${POP_RETRY_MAX}`);
    const earlier = g.byMsg.get(id) ?? [];
    const racy = g.racy.has(id);
    const src = `${d.realTopic}@${d.queueId}@${d.offset}`;
    const before = g.handedOut.get(src);
    if (before && !before.ckLost && !racy) this.#h.fail(`P0: ${who}: handed out before, at ${rel(before.popTime)}`);
    g.handedOut.set(src, d);
    for (const e of earlier) {
      e.next ??= d;
      if (racy || e.ckLost) continue;
      if (e.acked && !e.acked.lost) this.#h.fail(`P1: ${who}: acked at ${rel(e.acked.sentAt)} (delivery popped at ${rel(e.popTime)})`);
      if (!e.uncertain && !e.changing && e.ackSentAt === undefined && d.popTime < e.until)
        this.#h.fail(`P1: ${who}: the delivery popped at ${rel(e.popTime)} is in flight until ${rel(e.until)}`);
    }
    if (d.reconsumeTimes > 0) this.summary.redelivered++;
    // One higher than a delivery before it; a pop answered by a broker that crashed since was never heard.
    const top = Math.max(-1, ...earlier.map((e) => e.reconsumeTimes));
    const last = earlier.length > 0 ? earlier[earlier.length - 1]!.at : -Infinity;
    if (!racy && d.reconsumeTimes > top + 1 && !this.#faults.some((t) => t >= last))
      this.#h.fail(`P2: ${who}: no delivery before it with reconsumeTimes ${d.reconsumeTimes - 1} (${earlier.map((e) => e.reconsumeTimes).join(",")})`);
    earlier.push(d);
    g.byMsg.set(id, earlier);
  }

  // ---------------------------------------------------------------- acks and changes

  /** Carries out a delivery's plan: an ack or a change after a while (perhaps too late), or nothing. */
  #act(d: Delivery): void {
    const rng = this.#h.rng;
    const life = d.until - this.#h.sim.now;
    if (d.plan === "ack") this.#later(this.#quiet ? 0 : rng.int(0, Math.floor(life * 1.3)), () => this.#ack(d));
    else if (d.plan === "change" && life > CHANGE_LEAD_MS) this.#later(rng.int(0, life - CHANGE_LEAD_MS), () => this.#change(d));
  }

  #later(ms: number, fn: () => void): void {
    this.#pending++;
    this.#clock.setTimeout(() => {
      this.#pending--;
      fn();
    }, ms);
  }

  /** Sends an ack-like request for `ds` and records its outcome; `inTime` when sent RACE_MS before each invisible time ends. */
  #request(ds: Delivery[], cmd: RemotingCommand, onSuccess: (res: RemotingCommand, inTime: boolean) => void): void {
    const sentAt = this.#h.sim.now;
    const inTime = ds.every((d) => sentAt < d.until - RACE_MS && !d.ckLost);
    const incarnation = this.#h.broker();
    this.#pending++;
    this.#h.note(`${ds[0]!.g.group} request ${cmd.code} for ${ds.map((d) => `${d.id}@${d.ck}#${d.offset}`).join(",")}${inTime ? "" : " (late)"}`);
    this.#client
      .invoke(this.#h.addr, cmd, TIMEOUT_MS)
      .then(
        (res) => {
          this.#pending--;
          this.#h.note(`${ds[0]!.g.group} request ${cmd.code} for ${ds.map((d) => d.id).join(",")} → ${res.code}`);
          if (incarnation !== this.#h.broker()) return ds.forEach((d) => this.#unsure(d));
          // The message (or its retry copy) was past the recovered end of its queue after a crash:
          // the offset is gone, and Java's answer to an ack or change of it is NO_MESSAGE.
          if (res.code === ResponseCode.NO_MESSAGE && ds.every((d) => this.#faults.some((t) => t >= d.at))) return ds.forEach((d) => this.#unsure(d));
          if (res.code !== ResponseCode.SUCCESS) this.#h.fail(`${ds[0]!.g.group} request ${cmd.code} for ${ds.map((d) => d.id)} answered ${res.code} ${res.remark}`);
          onSuccess(res, inTime);
        },
        () => {
          this.#pending--;
          ds.forEach((d) => this.#unsure(d));
        },
      )
      .catch(() => undefined);
  }

  #unsure(d: Delivery): void {
    if (!d.uncertain) this.summary.uncertain++;
    d.uncertain = true;
  }

  #ack(d: Delivery): void {
    if (!this.#h.broker()) return this.#later(500, () => this.#ack(d));
    d.ackSentAt = this.#h.sim.now;
    const cmd = createRequest(RequestCode.ACK_MESSAGE, {
      consumerGroup: d.g.group,
      topic: d.realTopic,
      queueId: String(d.queueId),
      extraInfo: d.extraInfo,
      offset: String(d.offset),
    });
    this.#request([d], cmd, (_res, inTime) => this.#acked(d, inTime));
  }

  /** Acks answered SUCCESS: in time, P1 from now on (and no delivery since it was sent). */
  #acked(d: Delivery, inTime: boolean): void {
    if (!inTime) return this.#unsure(d);
    this.summary.acked++;
    const sentAt = d.ackSentAt!;
    d.acked = { sentAt, durable: this.#h.flush === "SYNC_FLUSH", lost: false };
    if (d.g.racy.has(d.id)) return;
    const since = (d.g.byMsg.get(d.id) ?? []).find((e) => e !== d && e.popTime >= sentAt);
    if (since) this.#h.fail(`P1: ${d.g.group} message ${d.id} acked at ${rel(sentAt)}, popped again at ${rel(since.popTime)}`);
  }

  /** One BATCH_ACK_MESSAGE for the deliveries of one pop that chose it, an entry per checkpoint. */
  #batchAck(ds: Delivery[]): void {
    if (ds.length === 0) return;
    const life = Math.min(...ds.map((d) => d.until)) - this.#h.sim.now;
    this.#later(this.#h.rng.int(0, Math.floor(life * 1.3)), () => {
      if (!this.#h.broker()) return ds.forEach((d) => this.#unsure(d));
      const byCk = new Map<string, Delivery[]>();
      for (const d of ds) byCk.set(d.ck, [...(byCk.get(d.ck) ?? []), d]);
      const acks = [...byCk.values()].map((part) => {
        const h = decodeReceiptHandle(part[0]!.extraInfo) as Exclude<ReturnType<typeof decodeReceiptHandle>, { invalid: string }>;
        const b = encodeBatchAckBits(h.ckQueueOffset, part.map((d) => d.offset));
        return { c: part[0]!.g.group, t: part[0]!.g.topic, r: part[0]!.retry, so: h.ckQueueOffset, q: h.queueId, rq: h.reviveQid, pt: h.popTime, it: h.invisibleTime, b };
      });
      const body = new TextEncoder().encode(JSON.stringify({ brokerName: BROKER_NAME, acks }));
      const now = this.#h.sim.now;
      for (const d of ds) d.ackSentAt = now;
      this.summary.batchAcks++;
      this.#request(ds, createRequest(RequestCode.BATCH_ACK_MESSAGE, {}, body), (_res, inTime) => ds.forEach((d) => this.#acked(d, inTime)));
    });
  }

  /** CHANGE_MESSAGE_INVISIBLETIME: a new handle in flight until now + the new time; then an ack or nothing. */
  #change(d: Delivery): void {
    if (!this.#h.broker() || d.ckLost) return;
    const invisibleTime = this.#h.rng.int(2000, 10_000);
    const cmd = createRequest(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, {
      consumerGroup: d.g.group,
      topic: d.realTopic,
      queueId: String(d.queueId),
      extraInfo: d.extraInfo,
      offset: String(d.offset),
      invisibleTime: String(invisibleTime),
    });
    d.changing = true;
    this.summary.changes++;
    this.#request([d], cmd, (res, inTime) => {
      d.changing = false;
      const pt = Number(res.extFields!.popTime);
      // Answered after the old time ran out: the message may be revived and in flight again too.
      if (!inTime || this.#h.sim.now >= d.until) {
        d.g.racy.add(d.id);
        return this.#unsure(d);
      }
      d.extraInfo = `${d.offset} ${pt} ${invisibleTime} ${res.extFields!.reviveQid} ${d.retry} ${BROKER_NAME} ${d.queueId} ${d.offset}`;
      d.ck = `${d.realTopic}@${d.queueId}@${d.offset}@${pt}`;
      d.popTime = Math.min(d.popTime, pt);
      d.until = pt + invisibleTime;
      if (this.#h.rng.bool(0.5) || this.#quiet) {
        d.plan = "ack";
        this.#act(d);
      } else d.plan = "none";
    });
  }

  // ---------------------------------------------------------------- faults

  /** A crash or a clean restart at this instant (a clean one loses nothing). */
  fault(): void {
    this.#faults.push(this.#h.sim.now);
  }

  /**
   * After a crash: which checkpoints and acks the recovered revive log still holds. Under
   * SYNC_FLUSH every one answered is there; under ASYNC_FLUSH the others were lost with the
   * unflushed tail, and the deliveries or acks they stood for are exempt from P0/P1.
   */
  async afterCrash(b: InProcessBroker, crashedAt: number): Promise<void> {
    this.#h.note("reading the revive log");
    const { cks, acks } = await this.#readReviveLog(b);
    this.#h.note(`revive log: ${cks.size} checkpoints, ${acks.size} acks`);
    for (const g of this.groups) {
      for (const ds of g.byMsg.values()) {
        for (const d of ds) {
          if (d.ckLost || d.at > crashedAt) continue;
          if (!cks.has(d.ck) && !d.changing) {
            if (this.#h.flush === "SYNC_FLUSH") this.#h.fail(`P0: the checkpoint ${d.ck} of ${g.group} message ${d.id}, answered under SYNC_FLUSH, is not in the recovered revive log`);
            d.ckLost = true;
            this.summary.lostCheckpoints++;
            this.#h.note(`checkpoint ${d.ck} (${g.group} message ${d.id}) lost in the crash`);
          }
          if (!d.acked || d.acked.durable || d.acked.lost) continue;
          if (acks.has(`${d.ck}#${d.offset}`)) d.acked.durable = true;
          else {
            d.acked.lost = true;
            this.summary.lostAcks++;
            this.#h.note(`ack of ${g.group} message ${d.id} (${d.ck}#${d.offset}) lost in the crash`);
          }
        }
      }
    }
  }

  async #readReviveLog(b: InProcessBroker): Promise<{ cks: Set<string>; acks: Set<string> }> {
    const cks = new Set<string>();
    const acks = new Set<string>();
    const queues = b.controller.info.queueOffsets(REVIVE_TOPIC);
    for (const q of queues) {
      for (const rec of await this.#readQueue(REVIVE_TOPIC, q.queueId)) {
        const tag = parseProperties(rec.properties).TAGS;
        const o = JSON.parse(new TextDecoder().decode(rec.body)) as { t: string; q: number; so: number; pt: number; ao?: number; aol?: number[] };
        const ck = `${o.t}@${o.q}@${o.so}@${o.pt}`;
        if (tag === "ck") cks.add(ck);
        else for (const off of o.aol ?? [o.ao!]) acks.add(`${ck}#${off}`);
      }
    }
    return { cks, acks };
  }

  /** Every record of a queue, read with pulls that commit nothing. */
  async #readQueue(topic: string, queueId: number): Promise<DecodedRecord[]> {
    const out: DecodedRecord[] = [];
    for (let offset = 0; ; ) {
      const req = pullRequest(topic, { group: "sim-pop-reader", queueId, offset, max: 32, sysFlag: PULL_SUBSCRIPTION });
      const res = await this.#client.invoke(this.#h.addr, req, TIMEOUT_MS);
      if (res.code !== ResponseCode.SUCCESS) return out;
      out.push(...pulledRecords(res));
      const next = Number(res.extFields?.nextBeginOffset);
      if (!(next > offset)) return out;
      offset = next;
    }
  }

  // ---------------------------------------------------------------- checks

  /** P2's bound, each step: a delivery never acked is delivered again by its invisible time + REDELIVERY_BOUND_MS. */
  checkTimely(): void {
    const now = this.#h.sim.now;
    for (const g of this.groups) {
      for (const ds of g.byMsg.values()) {
        const d = ds[ds.length - 1]!;
        if (!this.#open(d) || d.reconsumeTimes >= POP_RETRY_MAX || now <= d.until + REDELIVERY_BOUND_MS) continue;
        if (this.#faults.some((t) => t >= d.at - 1 && t <= d.until + REDELIVERY_BOUND_MS)) continue;
        this.#h.fail(`P2: ${g.group} message ${d.id} popped at ${rel(d.popTime)}, never acked, not delivered again by ${rel(d.until + REDELIVERY_BOUND_MS)}`);
      }
    }
  }

  /** Never acked, no outcome in doubt: it must come back (or go to the DLQ). */
  #open(d: Delivery): boolean {
    if (d.uncertain || d.changing || d.g.racy.has(d.id)) return false;
    if (d.acked) return d.acked.lost;
    return d.ackSentAt === undefined && (d.plan === "none" || d.plan === "change");
  }

  /** From now on every delivery is acked at once: the groups settle. */
  quiet(): void {
    this.#quiet = true;
  }

  /** Every acknowledged send delivered, its last delivery acked or gone to the DLQ, nothing pending. */
  settled(): boolean {
    if (this.#pending > 0) return false;
    const now = this.#h.sim.now;
    for (const g of this.groups) {
      for (const [id, s] of this.#h.sent) {
        if (s.topic !== g.topic || !s.at || s.lost) continue;
        const ds = g.byMsg.get(id);
        if (!ds) return false;
        const d = ds[ds.length - 1]!;
        const resolved = (d.acked && !d.acked.lost) || now > d.until + REDELIVERY_BOUND_MS;
        if (!resolved) return false;
      }
    }
    return true;
  }

  /** P2 (at least once), P3 (the DLQ), P5 (the POP groups' offsets). */
  async checkEnd(b: InProcessBroker): Promise<void> {
    for (const g of this.groups) {
      const dlq = new Map<number, DecodedRecord>();
      for (const rec of await this.#readQueue(dlqTopic(g.group), 0)) {
        const id = this.#h.recordId(`${g.group}'s DLQ`, g.topic, rec);
        const first = dlq.get(id);
        // A revive stores the copy, then the bAck that resolves its checkpoint: a crash between the
        // two (a torn ASYNC_FLUSH tail, or before the bAck's SYNC_FLUSH) revives it again after the
        // restart. Counted (dlqAfterCrash), and only with a crash between the copies.
        if (first && !this.#faults.some((t) => t >= first.storeTimestamp && t <= rec.storeTimestamp))
          this.#h.fail(`P3: %DLQ%${g.group} holds message ${id} twice (offsets ${first.queueOffset} and ${rec.queueOffset}), no crash between`);
        if (first) {
          this.summary.dlqAfterCrash++;
          continue;
        }
        if (rec.reconsumeTimes !== POP_RETRY_MAX + 1) this.#h.fail(`P3: %DLQ%${g.group} holds message ${id} with reconsumeTimes ${rec.reconsumeTimes}`);
        dlq.set(id, rec);
      }
      this.summary.dlq += dlq.size;
      for (const [id, s] of this.#h.sent) {
        if (s.topic !== g.topic || !s.at || s.lost) continue;
        const ds = g.byMsg.get(id);
        if (!ds) this.#h.fail(`P2: ${g.group} never got acknowledged message ${id} (${s.topic}/${s.at.queueId}@${s.at.offset})`);
      }
      for (const [id, ds] of g.byMsg) this.#checkMessageEnd(g, id, ds, dlq.has(id));
      const committed = new Map(b.controller.info.groupOffsets(g.group).filter((o) => o.topic === g.topic).map((o) => [o.queueId, o.consumerOffset]));
      for (const q of b.controller.info.queueOffsets(g.topic)) {
        if (committed.get(q.queueId) !== q.maxOffset) this.#h.fail(`P5: ${g.group} ${g.topic}/${q.queueId}: committed ${committed.get(q.queueId)}, the queue ends at ${q.maxOffset}`);
      }
    }
  }

  #checkMessageEnd(g: PopGroup, id: number, ds: Delivery[], inDlq: boolean): void {
    if (g.racy.has(id)) return;
    // A message whose send was never acknowledged, or was lost with an ASYNC_FLUSH tail, may be gone from its queue.
    const s = this.#h.sent.get(id);
    if (!s?.at || s.lost) return;
    const acked = ds.find((d) => d.acked && !d.acked.lost && !d.ckLost);
    if (inDlq && acked) this.#h.fail(`P3: %DLQ%${g.group} holds message ${id}, acked at ${rel(acked.acked!.sentAt)}`);
    // (The delivery at the limit may have been answered by a broker that crashed before the client heard it.)
    const lastAt = ds[ds.length - 1]!.at;
    if (inDlq && !ds.some((d) => d.reconsumeTimes === POP_RETRY_MAX) && !this.#faults.some((t) => t >= lastAt)) this.#h.fail(`P3: %DLQ%${g.group} holds message ${id}, never delivered at reconsumeTimes ${POP_RETRY_MAX}`);
    for (const d of ds) {
      if (!this.#open(d) && !d.ckLost) continue;
      if (d.next) continue;
      // In the DLQ: from this delivery at the limit, or from a later one a crash kept the client from hearing.
      if (inDlq && (d.reconsumeTimes >= POP_RETRY_MAX || this.#faults.some((t) => t >= d.at))) continue;
      const where = d.reconsumeTimes >= POP_RETRY_MAX ? "is not in the DLQ" : "was not delivered again";
      this.#h.fail(`P2: ${g.group} message ${id} popped at ${rel(d.popTime)} (reconsumeTimes ${d.reconsumeTimes}${d.ckLost ? ", its checkpoint lost in a crash" : ""}) was never acked and ${where}`);
    }
  }
}

function rel(t: number): number {
  return t - SIM_EPOCH_MS;
}
