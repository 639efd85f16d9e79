/**
 * The in-process broker fixture (imported only by tests and test/sim): a BrokerController on
 * virtual time (src/common/sim-clock.ts), in-memory sockets (MemNetwork) and a temp store dir (or an
 * in-memory disk), through the seams of docs/CONVENTIONS.md §6. No port is bound and no real
 * timer runs: a test sends RemotingCommands over a client connection and moves time with
 * `advance`, so long polling, holds and expiries are checked without waiting.
 *
 * The metadata files (topics.json, consumerOffset.json, …) are written to the real temp dir: the
 * metadata managers do not take the disk seam.
 *
 * Also here: request builders as the clients write them (SEND_MESSAGE_V2 with one-letter fields,
 * SEND_MESSAGE with the long ones, PULL_MESSAGE, POP_MESSAGE and ACK_MESSAGE with the receipt
 * handles a 5.3 client builds, HEART_BEAT, UPDATE_AND_CREATE_TOPIC) and a decoder
 * for pull bodies; and the record of the request codes each fixture broker served (FIXTURE_CODES_ENV).
 */
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SimClock, type ClockView } from "../common/sim-clock.ts";
import type { Logger } from "../common/log.ts";
import type { StoreDisk } from "../commitlog/disk.ts";
import type { HaTransport } from "../ha/index.ts";
import { decodeRecordAt, encodeMessageBatch, encodeProperties, javaStringHashCode, parseProperties, type DecodedRecord } from "../commitlog/index.ts";
import { popRetryTopic } from "../protocol/pop.ts";
import { defaultConfig, type Config } from "../config/schema.ts";
import {
  createRequest,
  createResponse,
  REMOTING_CLIENT_DEFAULTS,
  RemotingClient,
  RemotingServer,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
} from "../remoting/index.ts";
import { decodeRegisterBrokerBody } from "../protocol/register-broker-body.ts";
import { MemNetwork, recordingLogger } from "../remoting/test-support.ts";
import { BrokerController, type BrokerOptions } from "./broker.ts";
import { V1_TO_V2 } from "./processors/send-message.ts";
import { PullSysFlag } from "../protocol/pull-sys-flag.ts";

export const FIXTURE_HOST = "127.0.0.1";

/**
 * When this environment variable names a file, every fixture broker appends to it at stop one JSON
 * line per request code its request pipeline answered: `{"code":10,"responses":{"SUCCESS":3}}`
 * (the broker's own RequestStats, so a request counts only when the broker served it).
 * processors/in-process-coverage.test.ts runs the in-process tests with it set.
 */
export const FIXTURE_CODES_ENV = "ROCKETBUN_FIXTURE_CODES";

/** Appends the request codes the broker answered to the file FIXTURE_CODES_ENV names, if any. */
function recordAnsweredCodes(controller: BrokerController): void {
  const file = process.env[FIXTURE_CODES_ENV];
  if (!file) return;
  const lines = controller.info.requestStats().codes.map((c) => JSON.stringify({ code: c.code, responses: c.responses }));
  if (lines.length > 0) appendFileSync(file, lines.join("\n") + "\n");
}
export const FIXTURE_PORT = 10911;

export interface InProcessBrokerOptions {
  /** Defaults from the schema for this role (src/config/schema.ts defaultConfig), then the overrides. */
  role?: "master" | "slave" | "standalone";
  broker?: Partial<Config["broker"]>;
  store?: Partial<Config["store"]>;
  remoting?: Partial<Config["remoting"]>;
  /** Shared virtual time (several brokers, a simulation); default a new one. */
  sim?: SimClock;
  /** This incarnation's clock (a crash kills it); default a new view of `sim`. */
  clock?: ClockView;
  /** Shared sockets; default a new MemNetwork. */
  network?: MemNetwork;
  /** The HA link; default none (the HA port "listens" nowhere, a slave's connects fail). */
  haTransport?: HaTransport;
  /** The store's files; default the real disk in `dir`. */
  disk?: (clock: ClockView) => StoreDisk;
  /** The store dir (kept at stop); default a fresh temp dir, removed at stop. */
  dir?: string;
  configAccess?: BrokerOptions["configAccess"];
  /** Name servers to register with, on `network` (a test's own RemotingServer); default none. */
  namesrvAddr?: string[];
}

/** Test settings on top of the schema's defaults: small files (as config/test-min.yaml), a fixed address. */
export function fixtureConfig(o: InProcessBrokerOptions, dir: string): Pick<BrokerOptions, "broker" | "store" | "remoting"> {
  const d = defaultConfig(o.role ?? "master");
  return {
    broker: {
      ...d.broker,
      listen: { host: FIXTURE_HOST, port: FIXTURE_PORT },
      defaultTopicQueueNums: 4,
      maxMessageSizeBytes: 16384,
      ...o.broker,
    },
    store: {
      ...d.store,
      dir,
      commitLogSegmentBytes: 65536,
      consumeQueueUnitsPerFile: 64,
      indexSlotNum: 64,
      indexNum: 256,
      // No disk reserve: the simulation's in-memory disk would carry it in every crash model.
      diskReserveBytes: 0,
      ...o.store,
    },
    remoting: { ...d.remoting, frameSizeMaxBytes: 262144, connectionBufferMaxBytes: 1 << 20, ...o.remoting },
  };
}

const NO_HA_LINK: HaTransport = {
  listen: (_host, port) => ({ port, stop: () => {} }),
  connect: () => Promise.reject(new Error("the in-process fixture has no HA link")),
};

export class InProcessBroker implements AsyncDisposable {
  readonly controller: BrokerController;
  readonly sim: SimClock;
  readonly clock: ClockView;
  readonly network: MemNetwork;
  readonly dir: string;
  /** "127.0.0.1:10911": where clients connect (over `network`). */
  readonly addr: string;
  readonly log: Logger & { lines: { level: string; msg: string }[] };
  readonly #ownDir: boolean;
  readonly #clients: RemotingClient[] = [];
  #main: RemotingClient | null = null;
  #stopped = false;

  private constructor(o: InProcessBrokerOptions) {
    this.sim = o.sim ?? new SimClock();
    this.clock = o.clock ?? this.sim.view();
    this.network = o.network ?? new MemNetwork();
    this.#ownDir = o.dir === undefined;
    this.dir = o.dir ?? mkdtempSync(join(tmpdir(), "rocketbun-fixture-"));
    this.log = recordingLogger();
    const cfg = fixtureConfig(o, this.dir);
    this.controller = new BrokerController({
      ...cfg,
      clock: this.clock,
      network: this.network,
      haTransport: o.haTransport ?? NO_HA_LINK,
      ...(o.disk ? { disk: o.disk(this.clock) } : {}),
      ...(o.configAccess ? { configAccess: o.configAccess } : {}),
    });
    this.addr = `${FIXTURE_HOST}:${FIXTURE_PORT}`;
  }

  /** Builds, binds (in memory) and starts a broker; with no name servers (the default) registration sends nothing. */
  static start(o: InProcessBrokerOptions = {}): InProcessBroker {
    const b = new InProcessBroker(o);
    try {
      b.controller.bind();
      b.controller.start(o.namesrvAddr ?? []);
    } catch (e) {
      if (b.#ownDir) rmSync(b.dir, { recursive: true, force: true });
      throw e;
    }
    return b;
  }

  /** A new client with its own connection (as a separate client process). */
  client(onRequest?: (conn: RemotingConnection, cmd: RemotingCommand) => void): RemotingClient {
    const c = new RemotingClient({
      ...REMOTING_CLIENT_DEFAULTS,
      log: this.log,
      // Its own view of the shared time: a client is another process, whose timers outlive a broker crash.
      clock: this.sim.view(),
      network: this.network,
      ...(onRequest ? { onRequest } : {}),
    });
    this.#clients.push(c);
    return c;
  }

  /** One request over the fixture's main client connection. Responses need no virtual time to pass. */
  call(cmd: RemotingCommand, timeoutMs = 60_000): Promise<RemotingCommand> {
    this.#main ??= this.client();
    return this.#main.invoke(this.addr, cmd, timeoutMs);
  }

  /** Like `call`, and fails with the remark unless the answer is SUCCESS. */
  async ok(cmd: RemotingCommand): Promise<RemotingCommand> {
    const res = await this.call(cmd);
    if (res.code !== ResponseCode.SUCCESS) throw new Error(`request ${cmd.code} answered ${res.code}: ${res.remark ?? ""}`);
    return res;
  }

  /** Moves virtual time, running every broker timer due on the way. */
  advance(ms: number): Promise<void> {
    return this.sim.advance(ms);
  }

  /** Clean stop: broker stopped, clients closed, its clock dead, the temp dir removed. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    recordAnsweredCodes(this.controller);
    // The broker first: its stop answers the pulls still parked, as a real shutdown does.
    await this.controller.stop();
    for (const c of this.#clients.splice(0)) await c.close();
    this.clock.dead = true;
    if (this.#ownDir) rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * A process crash (kill -9): the broker's clock and listeners die where they stand, nothing is
   * flushed or persisted, the files stay (their written bytes in the page cache, as after a kill).
   * A broker started on the same `dir` then recovers them. The temp dir of a fixture that made its
   * own is kept: the caller passed none to reuse, so it is removed here.
   */
  async crash(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.clock.dead = true;
    this.network.kill(FIXTURE_HOST, FIXTURE_PORT);
    this.network.kill(FIXTURE_HOST, FIXTURE_PORT - 2);
    for (const c of this.#clients.splice(0)) await c.close();
    if (this.#ownDir) rmSync(this.dir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

// ----------------------------------------------------------------------------------- requests

const enc = new TextEncoder();

export interface SendOptions {
  queueId?: number;
  tags?: string;
  keys?: string;
  props?: Record<string, string>;
  reconsumeTimes?: number;
  maxReconsumeTimes?: number;
  bornTimestamp?: number;
  flag?: number;
  sysFlag?: number;
  producerGroup?: string;
}

function sendProps(o: SendOptions): Record<string, string> {
  return { ...(o.tags !== undefined ? { TAGS: o.tags } : {}), ...(o.keys !== undefined ? { KEYS: o.keys } : {}), ...o.props };
}

/** SEND_MESSAGE_V2 with the one-letter fields, as the Java client and ali-ons write it. */
export function sendV2Request(topic: string, body: string | Uint8Array, o: SendOptions = {}): RemotingCommand {
  const ext: Record<string, string> = {
    a: o.producerGroup ?? "PG",
    b: topic,
    c: "TBW102",
    d: "4",
    e: String(o.queueId ?? 0),
    f: String(o.sysFlag ?? 0),
    g: String(o.bornTimestamp ?? 1_700_000_000_000),
    h: String(o.flag ?? 0),
    i: encodeProperties(sendProps(o)),
    j: String(o.reconsumeTimes ?? 0),
    k: "false",
  };
  if (o.maxReconsumeTimes !== undefined) ext.l = String(o.maxReconsumeTimes);
  return createRequest(RequestCode.SEND_MESSAGE_V2, ext, typeof body === "string" ? enc.encode(body) : body);
}

/**
 * The same send with SendMessageRequestHeader's long field names under `code`: SEND_MESSAGE (the
 * default, as older clients and ali-ons' V1 path write it) or SEND_REPLY_MESSAGE.
 */
export function sendV1Request(topic: string, body: string | Uint8Array, o: SendOptions = {}, code: number = RequestCode.SEND_MESSAGE): RemotingCommand {
  const v2 = sendV2Request(topic, body, o);
  const ext: Record<string, string> = {};
  for (const [long, short] of Object.entries(V1_TO_V2)) {
    const v = v2.extFields![short];
    if (v !== undefined) ext[long] = v;
  }
  return createRequest(code, ext, v2.body);
}

/** SEND_BATCH_MESSAGE: one queue, the entries' own properties (tags, keys). */
export function sendBatchRequest(topic: string, entries: { body: string | Uint8Array; tags?: string }[], o: SendOptions = {}): RemotingCommand {
  const body = encodeMessageBatch(
    entries.map((e) => ({
      flag: 0,
      body: typeof e.body === "string" ? enc.encode(e.body) : e.body,
      properties: encodeProperties(e.tags !== undefined ? { TAGS: e.tags } : {}),
    })),
  );
  const cmd = sendV2Request(topic, body, o);
  cmd.code = RequestCode.SEND_BATCH_MESSAGE;
  cmd.extFields!.m = "true";
  return cmd;
}

export const PULL_COMMIT_OFFSET = PullSysFlag.COMMIT_OFFSET;
export const PULL_SUSPEND = PullSysFlag.SUSPEND;
export const PULL_SUBSCRIPTION = PullSysFlag.SUBSCRIPTION;

export interface PullOptions {
  group?: string;
  queueId?: number;
  offset?: number;
  max?: number;
  /** Default SUBSCRIPTION. */
  sysFlag?: number;
  subscription?: string;
  subVersion?: number;
  suspendMs?: number;
  commitOffset?: number;
}

export function pullRequest(topic: string, o: PullOptions = {}): RemotingCommand {
  const sysFlag = o.sysFlag ?? PULL_SUBSCRIPTION;
  const ext: Record<string, string> = {
    consumerGroup: o.group ?? "CG",
    topic,
    queueId: String(o.queueId ?? 0),
    queueOffset: String(o.offset ?? 0),
    maxMsgNums: String(o.max ?? 32),
    sysFlag: String(sysFlag),
    commitOffset: String(o.commitOffset ?? 0),
    suspendTimeoutMillis: String(o.suspendMs ?? 0),
    subVersion: String(o.subVersion ?? 0),
  };
  if (o.subscription !== undefined) ext.subscription = o.subscription;
  else if (sysFlag & PULL_SUBSCRIPTION) ext.subscription = "*";
  return createRequest(RequestCode.PULL_MESSAGE, ext);
}

export interface PopOptions {
  queueId?: number;
  max?: number;
  invisibleTime?: number;
  pollTime?: number;
  exp?: string;
  initMode?: number;
}

/** POP_MESSAGE as the 5.3 client sends it (TAG expression, order false); bornTime `now`. */
export function popMessageRequest(group: string, topic: string, now: number, o: PopOptions = {}): RemotingCommand {
  return createRequest(RequestCode.POP_MESSAGE, {
    consumerGroup: group,
    topic,
    queueId: String(o.queueId ?? -1),
    maxMsgNums: String(o.max ?? 32),
    invisibleTime: String(o.invisibleTime ?? 60_000),
    pollTime: String(o.pollTime ?? 0),
    bornTime: String(now),
    initMode: String(o.initMode ?? 0),
    expType: "TAG",
    exp: o.exp ?? "*",
    order: "false",
  });
}

/** A popped message's receipt handle and the topic an ack names (the POP retry topic for a retried one). */
export interface PoppedHandle {
  ackTopic: string;
  queueId: number;
  offset: number;
  extraInfo: string;
}

/** The handles the 5.3 client builds from a pop answer (MQClientAPIImpl.processPopResponse). */
export function poppedHandles(res: RemotingCommand, group: string, brokerName = "broker-a"): PoppedHandle[] {
  const ext = res.extFields ?? {};
  const start = new Map(
    (ext.startOffsetInfo ?? "").split(";").map((e) => {
      const [r, q, o] = e.split(" ");
      return [`${r}@${q}`, Number(o)];
    }),
  );
  return pulledRecords(res).map((rec) => {
    const ck = parseProperties(rec.properties).POP_CK;
    if (ck !== undefined) {
      const retry = ck.split(" ")[4] === "1";
      return { ackTopic: retry ? popRetryTopic(rec.topic, group) : rec.topic, queueId: rec.queueId, offset: rec.queueOffset, extraInfo: ck };
    }
    const so = start.get(`0@${rec.queueId}`);
    const extraInfo = `${so} ${ext.popTime} ${ext.invisibleTime} ${ext.reviveQid} 0 ${brokerName} ${rec.queueId} ${rec.queueOffset}`;
    return { ackTopic: rec.topic, queueId: rec.queueId, offset: rec.queueOffset, extraInfo };
  });
}

export function ackMessageRequest(group: string, h: PoppedHandle): RemotingCommand {
  return createRequest(RequestCode.ACK_MESSAGE, {
    consumerGroup: group,
    topic: h.ackTopic,
    queueId: String(h.queueId),
    extraInfo: h.extraInfo,
    offset: String(h.offset),
  });
}

/** HEART_BEAT of one client: a consumer group with TAG subscriptions and/or a producer group. */
export function heartbeatRequest(
  clientID: string,
  o: { group?: string; subs?: { topic: string; expr: string; subVersion?: number }[]; producer?: string } = {},
): RemotingCommand {
  const consumerDataSet = o.group
    ? [
        {
          groupName: o.group,
          consumeType: "CONSUME_PASSIVELY",
          messageModel: "CLUSTERING",
          consumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
          unitMode: false,
          subscriptionDataSet: (o.subs ?? []).map((s) => {
            const tags = s.expr === "*" ? [] : s.expr.split("||").map((t) => t.trim());
            return {
              topic: s.topic,
              subString: s.expr,
              tagsSet: tags,
              codeSet: tags.map(javaStringHashCode),
              classFilterMode: false,
              subVersion: s.subVersion ?? 1,
            };
          }),
        },
      ]
    : [];
  const producerDataSet = o.producer ? [{ groupName: o.producer }] : [];
  return createRequest(RequestCode.HEART_BEAT, undefined, enc.encode(JSON.stringify({ clientID, producerDataSet, consumerDataSet })));
}

/** UPDATE_AND_CREATE_TOPIC for a SINGLE_TAG topic (perm 6 = read + write). */
export function createTopicRequest(topic: string, queues: number, perm = 6): RemotingCommand {
  return createRequest(RequestCode.UPDATE_AND_CREATE_TOPIC, {
    topic,
    defaultTopic: "TBW102",
    readQueueNums: String(queues),
    writeQueueNums: String(queues),
    perm: String(perm),
    topicFilterType: "SINGLE_TAG",
    topicSysFlag: "0",
    order: "false",
  });
}

/** The records of a pull answer's body (CRC checked); none when there is no body. */
export function pulledRecords(res: RemotingCommand): DecodedRecord[] {
  const body = res.body;
  if (!body) return [];
  const out: DecodedRecord[] = [];
  let pos = 0;
  while (pos < body.length) {
    const r = decodeRecordAt(body, pos, { checkCrc: true });
    if (!("totalSize" in r)) throw new Error(`pull body does not decode at ${pos}: ${JSON.stringify(r)}`);
    out.push(r);
    pos += r.totalSize;
  }
  return out;
}

/** Where fakeNamesrv listens on the fixture's network (pass it as `namesrvAddr`). */
export const FAKE_NAMESRV_ADDR = "127.0.0.1:9876";

/**
 * A name server of the test's own on `network` that records the topic names each REGISTER_BROKER
 * carried. It answers at once, or with `hold` only when the test calls `release()`.
 */
export function fakeNamesrv(network: MemNetwork, o: { hold?: boolean } = {}) {
  const held: (() => void)[] = [];
  const registrations: string[][] = [];
  const server = new RemotingServer({
    host: "127.0.0.1",
    port: 9876,
    frameSizeMaxBytes: 1 << 20,
    connectionBufferMaxBytes: 1 << 20,
    log: recordingLogger(),
    network,
  });
  server.register(RequestCode.REGISTER_BROKER, {
    process: (_c, cmd) => {
      const body = decodeRegisterBrokerBody(cmd.body, cmd.extFields?.compressed === "true", cmd.version);
      if ("invalid" in body) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, body.invalid);
      registrations.push(Object.keys(body.topicConfigTable));
      const answer = createResponse(cmd, ResponseCode.SUCCESS);
      return o.hold ? new Promise<RemotingCommand>((resolve) => held.push(() => resolve(answer))) : answer;
    },
  });
  server.start();
  return {
    server,
    registrations,
    /** Answers every held registration. */
    release: () => {
      for (const r of held.splice(0)) r();
    },
    /** Some registration carried `topic`. */
    routes: (topic: string) => registrations.some((r) => r.includes(topic)),
  };
}
