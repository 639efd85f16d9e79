/**
 * Consumers that misbehave or crowd a broker, over the wire with no client library, for
 * test/integration/slow-consumers.test.ts and bench/abuse/consumers.ts (issue #18, item 5):
 *
 *   DeadConsumer   one raw socket that sends PULL_MESSAGE requests for a backlog and never reads
 *                  (Bun's `pause()`: the kernel's receive window fills, then the broker's sends)
 *   ParkedPolls    long polls (PULL_MESSAGE with SUSPEND) spread over a few connections, each
 *                  answer recorded with its code and the time it took
 *   GroupMembers   a consumer group of emulated members, several client ids per connection as
 *                  a process with many consumer instances has: HEART_BEAT per member, the member
 *                  list by GET_CONSUMER_LIST_BY_GROUP, and the client library's own average
 *                  allocation (`allocateAveragely`, what PushConsumer runs) over it; every
 *                  NOTIFY_CONSUMER_IDS_CHANGED the broker pushes is counted
 */
import type { Socket } from "bun";
import { readFileSync } from "node:fs";
import { allocateAveragely } from "../../src/client/route.ts";
import { jsonBytes, parseJsonBytes } from "../../src/common/json.ts";
import { scope } from "../../src/common/log.ts";
import { PullSysFlag } from "../../src/protocol/pull-sys-flag.ts";
import {
  createRequest,
  encodeCommand,
  RemotingClient,
  REMOTING_CLIENT_DEFAULTS,
  RequestCode,
  ResponseCode,
  splitHostPort,
  type RemotingCommand,
} from "../../src/remoting/index.ts";

export interface PullSpec {
  group: string;
  topic: string;
  queueId: number;
  offset: number;
  maxMsgNums?: number;
  /** 0: answer at once; otherwise park up to this long when nothing is there. */
  suspendMs?: number;
}

/** A PULL_MESSAGE with its subscription (`*`) in the header, so no heartbeat is needed first. */
export function pullRequest(p: PullSpec): RemotingCommand {
  const suspend = (p.suspendMs ?? 0) > 0;
  return createRequest(RequestCode.PULL_MESSAGE, {
    consumerGroup: p.group,
    topic: p.topic,
    queueId: String(p.queueId),
    queueOffset: String(p.offset),
    maxMsgNums: String(p.maxMsgNums ?? 32),
    sysFlag: String(PullSysFlag.SUBSCRIPTION | (suspend ? PullSysFlag.SUSPEND : 0)),
    commitOffset: "0",
    suspendTimeoutMillis: String(p.suspendMs ?? 0),
    subscription: "*",
    subVersion: "0",
    expressionType: "TAG",
  });
}

/** HEART_BEAT of one consumer client (CONSUME_PASSIVELY, clustering, `*` on `topic`). */
export function consumerHeartbeat(clientId: string, group: string, topic: string): RemotingCommand {
  const body = jsonBytes({
    clientID: clientId,
    producerDataSet: [],
    consumerDataSet: [
      {
        groupName: group,
        consumeType: "CONSUME_PASSIVELY",
        messageModel: "CLUSTERING",
        consumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
        unitMode: false,
        subscriptionDataSet: [
          { topic, subString: "*", tagsSet: [], codeSet: [], classFilterMode: false, subVersion: Date.now(), expressionType: "TAG" },
        ],
      },
    ],
  });
  return createRequest(RequestCode.HEART_BEAT, undefined, body);
}

export function newWireClient(onRequest?: (cmd: RemotingCommand) => void): RemotingClient {
  return new RemotingClient({
    ...REMOTING_CLIENT_DEFAULTS,
    log: scope("consumer-abuse"),
    ...(onRequest ? { onRequest: (_conn, cmd) => onRequest(cmd) } : {}),
  });
}

/**
 * A consumer that stops reading: connects, pauses its socket's reads, then writes `pulls`
 * requests for `spec`'s queue (offsets cycling over `backlog` messages in steps of maxMsgNums),
 * what the kernel does not take at once written on drain (writing goes on; only reading stopped).
 * A paused socket is not told that the broker closed it (the broker's FIN waits behind the
 * answers this side never reads), so `DeadConsumer.checkClosed` asks the kernel for the broker's end of the
 * connection (/proc/net/tcp: gone, or past ESTABLISHED once the broker closed it).
 */
export class DeadConsumer {
  closed = false;
  sentBytes = 0;
  #socket: Socket<undefined> | undefined;
  #pending: Uint8Array = new Uint8Array(0);
  #brokerPort = 0;

  static async open(addr: string): Promise<DeadConsumer> {
    const d = new DeadConsumer();
    const { host, port } = splitHostPort(addr);
    d.#brokerPort = port;
    const gone = () => {
      d.closed = true;
    };
    d.#socket = await Bun.connect({
      hostname: host,
      port,
      socket: { open: (s) => void s.pause(), data: () => {}, drain: () => d.#write(), end: gone, close: gone, error: gone },
    });
    d.#socket.pause();
    return d;
  }

  sendPulls(spec: PullSpec, pulls: number, backlog: number): void {
    const step = spec.maxMsgNums ?? 32;
    const frames = Array.from({ length: pulls }, (_, i) => encodeCommand(pullRequest({ ...spec, offset: (i * step) % Math.max(1, backlog) })));
    this.#pending = Buffer.concat([this.#pending, ...frames]);
    this.#write();
  }

  #write(): void {
    if (this.closed || !this.#socket || this.#pending.length === 0) return;
    const n = this.#socket.write(this.#pending);
    if (n < 0) {
      this.closed = true;
      return;
    }
    this.sentBytes += n;
    this.#pending = this.#pending.subarray(n);
  }

  /**
   * Marks those of `dead` the broker closed; true when all are. One read of /proc/net/tcp for
   * all (it can hold tens of thousands of lines on a busy machine: call it seldom).
   */
  static checkClosed(dead: readonly DeadConsumer[]): boolean {
    const open = dead.filter((d) => !d.closed && d.#socket);
    if (open.length === 0) return true;
    const states = tcpStates();
    for (const d of open) d.closed = states.get(`${d.#brokerPort}>${d.#socket!.localPort}`) !== TCP_ESTABLISHED;
    return dead.every((d) => d.closed);
  }

  close(): void {
    this.#socket?.terminate();
    this.closed = true;
  }
}

const TCP_ESTABLISHED = 1;

/** The kernel's 127.0.0.1 TCP sockets (/proc/net/tcp): state by "localPort>remotePort". */
function tcpStates(): Map<string, number> {
  const out = new Map<string, number>();
  const LOOPBACK = "0100007F:";
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n")) {
    const f = line.trim().split(/\s+/);
    if (!f[1]?.startsWith(LOOPBACK) || !f[2]?.startsWith(LOOPBACK)) continue;
    out.set(`${parseInt(f[1].slice(9), 16)}>${parseInt(f[2].slice(9), 16)}`, parseInt(f[3] ?? "", 16));
  }
  return out;
}

export interface PollAnswer {
  code: number;
  ms: number;
  /** Queue offset of the first record returned (-1 when none). */
  nextBeginOffset: number;
}

/** Long polls from `connections` connections; `answers` fills in as they come back. */
export class ParkedPolls {
  readonly clients: RemotingClient[];
  readonly answers: PollAnswer[] = [];
  failures = 0;

  constructor(connections: number) {
    this.clients = Array.from({ length: connections }, () => newWireClient());
  }

  /** Parks `n` polls, poll i on queue i % queues at `offset`; resolves when every answer is in. */
  park(addr: string, n: number, spec: Omit<PullSpec, "queueId"> & { queues: number }, timeoutMs: number): Promise<void> {
    const all: Promise<void>[] = [];
    for (let i = 0; i < n; i++) {
      const c = this.clients[i % this.clients.length]!;
      const t0 = performance.now();
      all.push(
        c.invoke(addr, pullRequest({ ...spec, queueId: i % spec.queues }), timeoutMs).then(
          (r) => {
            this.answers.push({ code: r.code, ms: performance.now() - t0, nextBeginOffset: Number(r.extFields?.nextBeginOffset ?? -1) });
          },
          () => {
            this.failures++;
          },
        ),
      );
    }
    return Promise.all(all).then(() => {});
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.close().catch(() => {})));
  }
}

/**
 * Long-poll consumers that never stop: `n` pollers over `connections` connections, poller i on
 * queue i % queues, each parking a pull and parking the next as soon as it is answered (at the
 * offset the answer gives), as a push consumer on an idle topic does.
 */
export class PollLoop {
  readonly clients: RemotingClient[];
  readonly counts = { outstanding: 0, answered: 0, found: 0, notFound: 0, failures: 0 };
  #running = true;
  readonly #loops: Promise<void>[] = [];

  constructor(connections: number) {
    this.clients = Array.from({ length: connections }, () => newWireClient());
  }

  start(addr: string, n: number, spec: Omit<PullSpec, "queueId" | "offset"> & { queues: number }): void {
    for (let i = 0; i < n; i++) {
      const c = this.clients[i % this.clients.length]!;
      this.#loops.push(
        (async () => {
          for (let offset = 0; this.#running;) {
            this.counts.outstanding++;
            try {
              const r = await c.invoke(addr, pullRequest({ ...spec, queueId: i % spec.queues, offset }), (spec.suspendMs ?? 0) + 30_000);
              this.counts.answered++;
              if (r.code === ResponseCode.SUCCESS) this.counts.found++;
              else if (r.code === ResponseCode.PULL_NOT_FOUND) this.counts.notFound++;
              offset = Number(r.extFields?.nextBeginOffset ?? offset);
            } catch {
              this.counts.failures++;
              await Bun.sleep(1000);
            } finally {
              this.counts.outstanding--;
            }
          }
        })(),
      );
    }
  }

  async close(): Promise<void> {
    this.#running = false;
    await Promise.all(this.clients.map((c) => c.close().catch(() => {})));
    await Promise.all(this.#loops);
  }
}

/** A consumer that reads everything: pulls queue 0 of `topic` from 0 to `backlog` round and round, counting messages. */
export function readingConsumer(addr: string, group: string, topic: string, backlog: number) {
  const c = newWireClient();
  let received = 0;
  let running = true;
  const done = (async () => {
    for (let offset = 0; running;) {
      const r = await c.invoke(addr, pullRequest({ group, topic, queueId: 0, offset, maxMsgNums: 32 }), 10_000);
      if (r.code !== ResponseCode.SUCCESS) throw new Error(`pull at ${offset}: ${r.code} ${r.remark ?? ""}`);
      const next = Number(r.extFields?.nextBeginOffset);
      received += next - offset;
      offset = next >= backlog ? 0 : next;
    }
  })();
  return {
    received: () => received,
    /** Messages per second over the next `ms`. */
    rateOver: async (ms: number) => {
      const n0 = received;
      await Bun.sleep(ms);
      return ((received - n0) * 1000) / ms;
    },
    stop: async () => {
      running = false;
      await done;
      await c.close();
    },
  };
}

interface MemberState {
  view: string[];
  owned: number[];
  /** performance.now() when the pass whose answer is `view` asked for it. */
  viewAskedAt: number;
  /** A pass runs (its Promise) and whether another was asked for meanwhile. */
  running: Promise<void> | null;
  again: boolean;
}

/**
 * Member i is `${prefix}-${i}` on connection i % connections. Each member rebalances as the
 * client library's PushConsumer does: a pass on every NOTIFY_CONSUMER_IDS_CHANGED reaching its
 * connection (a notice names the group, not the member, so every member on that connection
 * takes it), one pass at a time, a notice during a pass asking for one more.
 */
export class GroupMembers {
  readonly ids: string[];
  readonly clients: RemotingClient[];
  /** NOTIFY_CONSUMER_IDS_CHANGED frames received for the group, per connection. */
  readonly notified: number[];
  /** GET_CONSUMER_LIST_BY_GROUP requests made by all members. */
  listRequests = 0;
  readonly #left = new Set<number>();
  readonly #state: MemberState[];
  readonly #queues: number[];

  constructor(
    readonly addr: string,
    readonly group: string,
    readonly topic: string,
    queues: number,
    members: number,
    connections: number,
    prefix = "member",
  ) {
    this.ids = Array.from({ length: members }, (_, i) => `${prefix}-${i}`);
    this.#queues = Array.from({ length: queues }, (_, q) => q);
    this.#state = this.ids.map(() => ({ view: [], owned: [], viewAskedAt: -1, running: null, again: false }));
    this.notified = new Array<number>(connections).fill(0);
    this.clients = Array.from({ length: connections }, (_, k) =>
      newWireClient((cmd) => {
        if (cmd.code !== RequestCode.NOTIFY_CONSUMER_IDS_CHANGED || cmd.extFields?.consumerGroup !== group) return;
        this.notified[k]!++;
        for (let i = k; i < members; i += connections) if (!this.#left.has(i)) this.#trigger(i);
      }),
    );
  }

  get totalNotified(): number {
    return this.notified.reduce((a, b) => a + b, 0);
  }

  clientOf(i: number): RemotingClient {
    return this.clients[i % this.clients.length]!;
  }

  /** Members still in the group. */
  live(): number[] {
    return this.ids.flatMap((_, i) => (this.#left.has(i) ? [] : [i]));
  }

  /** Whether no member has a pass running or asked for. */
  get idle(): boolean {
    return this.#state.every((m) => m.running === null);
  }

  /** Whether every live member is idle with a view it asked for at or after `t` (performance.now()). */
  refreshedSince(t: number): boolean {
    return this.live().every((i) => this.#state[i]!.running === null && this.#state[i]!.viewAskedAt >= t);
  }

  /** Every live member's latest view and queues. */
  views(): Map<string, { view: string[]; owned: number[] }> {
    return new Map(this.live().map((i) => [this.ids[i]!, { view: this.#state[i]!.view, owned: this.#state[i]!.owned }]));
  }

  /** Joins: a HEART_BEAT per member (`parallel` at a time), then its first pass, as a client's start does. */
  async join(parallel = 32): Promise<void> {
    const todo = this.live();
    const worker = async () => {
      for (let i = todo.shift(); i !== undefined; i = todo.shift()) {
        const r = await this.clientOf(i).invoke(this.addr, consumerHeartbeat(this.ids[i]!, this.group, this.topic), 10_000);
        if (r.code !== ResponseCode.SUCCESS) throw new Error(`heartbeat of ${this.ids[i]}: ${r.code} ${r.remark ?? ""}`);
        this.#trigger(i);
      }
    };
    await Promise.all(Array.from({ length: parallel }, worker));
  }

  /** Members `which`, gone before, join again. */
  async rejoin(which: number[]): Promise<void> {
    for (const i of which) this.#left.delete(i);
    for (const i of which) {
      const r = await this.clientOf(i).invoke(this.addr, consumerHeartbeat(this.ids[i]!, this.group, this.topic), 10_000);
      if (r.code !== ResponseCode.SUCCESS) throw new Error(`heartbeat of ${this.ids[i]}: ${r.code} ${r.remark ?? ""}`);
      this.#trigger(i);
    }
  }

  /** UNREGISTER_CLIENT for members `which` (a clean shutdown of those consumers). */
  async leave(which: number[]): Promise<void> {
    for (const i of which) {
      const id = this.ids[i]!;
      this.#left.add(i);
      const r = await this.clientOf(i).invoke(
        this.addr,
        createRequest(RequestCode.UNREGISTER_CLIENT, { clientID: id, consumerGroup: this.group }),
        10_000,
      );
      if (r.code !== ResponseCode.SUCCESS) throw new Error(`unregister of ${id}: ${r.code} ${r.remark ?? ""}`);
    }
  }

  /** Connection k closed abruptly: every member on it is gone (a crashed process). */
  async dropConnection(k: number): Promise<void> {
    this.ids.forEach((_, i) => i % this.clients.length === k && this.#left.add(i));
    await this.clients[k]!.close();
  }

  #trigger(i: number): void {
    const m = this.#state[i]!;
    if (m.running) {
      m.again = true;
      return;
    }
    m.running = (async () => {
      do {
        m.again = false;
        await this.#pass(i, m).catch(() => {});
      } while (m.again && !this.#left.has(i));
      m.running = null;
    })();
  }

  async #pass(i: number, m: MemberState): Promise<void> {
    this.listRequests++;
    const askedAt = performance.now();
    const r = await this.clientOf(i).invoke(this.addr, createRequest(RequestCode.GET_CONSUMER_LIST_BY_GROUP, { consumerGroup: this.group }), 10_000);
    if (r.code !== ResponseCode.SUCCESS || !r.body) return;
    m.view = (parseJsonBytes(r.body) as { consumerIdList?: string[] }).consumerIdList ?? [];
    m.viewAskedAt = askedAt;
    m.owned = allocateAveragely(this.#queues, [...m.view].sort(), this.ids[i]!);
  }

  async close(): Promise<void> {
    for (let i = 0; i < this.ids.length; i++) this.#left.add(i);
    await Promise.all(this.#state.map((m) => m.running));
    await Promise.all(this.clients.map((c) => c.close().catch(() => {})));
  }
}

/**
 * What a settled rebalance means: every member saw the same list, of exactly the live members,
 * and every queue has exactly one owner. Returns the problems (none when settled).
 */
export function ownershipProblems(result: Map<string, { view: string[]; owned: number[] }>, liveIds: string[], queues: number): string[] {
  const problems: string[] = [];
  const want = [...liveIds].sort().join(",");
  let diverged = 0;
  for (const { view } of result.values()) if ([...view].sort().join(",") !== want) diverged++;
  if (diverged > 0) problems.push(`${diverged} of ${result.size} members saw a member list other than the ${liveIds.length} live members`);
  const owners = new Array<number>(queues).fill(0);
  for (const { owned } of result.values()) for (const q of owned) owners[q]!++;
  const none = owners.filter((n) => n === 0).length;
  const shared = owners.filter((n) => n > 1).length;
  if (none > 0) problems.push(`${none} queues have no owner`);
  if (shared > 0) problems.push(`${shared} queues have more than one owner`);
  return problems;
}
