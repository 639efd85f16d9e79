/**
 * Helpers for driving ali-ons (the Node RocketMQ 4.x client nobody here wrote) against the
 * compiled binary: a name server and a master as two separate processes, topic creation and
 * route waits over the wire, raw inspection (ali-ons' own MQClientAPI pulling with ali-ons' own
 * decoder, the broker admin API), and ali-ons producers/consumers that are tracked and closed —
 * together with ali-ons' static internal producer — when the cluster is disposed.
 */
import { join } from "node:path";
import { createRequest, RequestCode, type RemotingClient } from "../../src/remoting/index.ts";
import { ROOT, startRocketbun, type RunningBinary, waitFor } from "../harness/binary.ts";
import { bodyJson, createTopicRequest, newClient, routeRequest } from "../harness/wire.ts";
// @ts-expect-error ali-ons ships no type declarations
import { Consumer as OnsConsumerClass, Message as OnsMessageClass, Producer as OnsProducerClass } from "ali-ons";
// @ts-expect-error ali-ons ships no type declarations
import MQClientAPI from "ali-ons/lib/mq_client_api.js";

/** What ali-ons hands to a handler (lib/message/message.js after lib/message/message_decoder.js). */
export interface OnsMessage {
  topic: string;
  readonly tags: string | null;
  readonly keys: string | undefined;
  body: Buffer;
  msgId: string;
  queueId: number;
  queueOffset: number;
  commitLogOffset: number;
  sysFlag: number;
  reconsumeTimes: number;
  bornTimestamp: number;
  storeTimestamp: number;
  properties: Record<string, string>;
  readonly originMessageId: string | undefined;
  readonly retryTopic: string | undefined;
  delayTimeLevel: number;
  setStartDeliverTime(ms: number): void;
}

export interface SendResult {
  sendStatus: string;
  msgId: string;
  queueOffset: number;
  messageQueue: { topic: string; brokerName: string; queueId: number };
}

interface Base {
  ready(): Promise<void>;
  close(): Promise<void>;
  on(event: "error", listener: (e: Error) => void): void;
}

export interface OnsProducer extends Base {
  send(msg: OnsMessage): Promise<SendResult>;
}

export interface OnsConsumer extends Base {
  subscribe(topic: string, subExpression: string, handler: (msg: OnsMessage) => Promise<unknown>): void;
  readonly processQueueTable: Map<string, { messageQueue: { topic: string; queueId: number } }>;
}

interface PullResult {
  pullStatus: string;
  nextBeginOffset: number;
  minOffset: number;
  maxOffset: number;
  msgFoundList: OnsMessage[];
}

interface OnsApi {
  ready(): Promise<void>;
  close(): Promise<void>;
  pullMessage(addr: string, header: Record<string, unknown>, timeoutMs: number): Promise<PullResult>;
}

interface ProducerStatics {
  new (options: Record<string, unknown>): OnsProducer;
  defaultProducer: OnsProducer | null | undefined;
  getDefaultProducer(options: Record<string, unknown>): Promise<OnsProducer>;
}

export const Producer = OnsProducerClass as ProducerStatics;
export const Consumer = OnsConsumerClass as new (options: Record<string, unknown>) => OnsConsumer;
export const Message = OnsMessageClass as new (topic: string, tags: string | null, body: string | Buffer) => OnsMessage;

export const silentLogger = { info() {}, warn() {}, error() {}, debug() {} };
/** ali-ons only uses its HTTP client to ask an address server; with nameSrv set it must not. */
export const noHttp = {
  request() {
    throw new Error("ali-ons tried HTTP although nameSrv is set");
  },
};

/**
 * The master's config: test-min timings (fast registration), but segments and limits big enough
 * for 64 KiB bodies (test-min's 64 KiB segments and 16 KiB message limit are too small for that).
 */
export const BROKER_YAML = `
logLevel: warn
remoting:
  frameSizeMaxBytes: 16777216
  connectionBufferMaxBytes: 67108864
  requestTimeoutMs: 3000
broker:
  listen: 127.0.0.1:0
  admin: 127.0.0.1:0
  brokerClusterName: InteropCluster
  brokerName: broker-ali
  defaultTopicQueueNums: 8
  registerNameServerPeriodMs: 1000
  maxMessageSizeBytes: 4194304
store:
  commitLogSegmentBytes: 16777216
  flushIntervalMs: 50
  consumeQueueUnitsPerFile: 4096
  indexSlotNum: 4096
  indexNum: 16384
`;

const INSPECTOR_GROUP = "GID_interop_inspector";
const PULL_SUBSCRIPTION_FLAG = 4;

/** Polling with a deadline: the harness's waitFor. */
export const until = waitFor;

async function bounded(p: Promise<unknown>, ms: number, what: string, problems: string[]): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), ms)));
  try {
    if ((await Promise.race([p.then(() => "ok" as const), timeout])) === "timeout") problems.push(`${what}: did not finish in ${ms} ms`);
  } catch (e) {
    problems.push(`${what}: ${String(e)}`);
  } finally {
    clearTimeout(timer);
  }
}

/** Queue ids of `topic` an ali-ons consumer currently owns (its rebalance result). */
export function assignedQueues(c: OnsConsumer, topic: string): number[] {
  const ids: number[] = [];
  for (const { messageQueue } of c.processQueueTable.values()) if (messageQueue.topic === topic) ids.push(messageQueue.queueId);
  return ids.sort((a, b) => a - b);
}

export class Cluster implements AsyncDisposable {
  readonly ns: RunningBinary;
  readonly broker: RunningBinary;
  readonly wire: RemotingClient;
  readonly inspector: OnsApi;
  /** Errors ali-ons emitted (pull errors, handler errors, route misses), for diagnostics. */
  readonly errors: string[] = [];
  readonly #closables: { what: string; close: () => Promise<void> }[] = [];

  private constructor(ns: RunningBinary, broker: RunningBinary, wire: RemotingClient, inspector: OnsApi) {
    this.ns = ns;
    this.broker = broker;
    this.wire = wire;
    this.inspector = inspector;
  }

  /** Name server, then a master registered with it: two processes of dist/rocketbun. */
  static async start(): Promise<Cluster> {
    const ns = await startRocketbun({ role: "namesrv", args: ["--config", join(ROOT, "config/test-min.yaml")] });
    let broker: RunningBinary | undefined;
    try {
      broker = await startRocketbun({ role: "master", configYaml: BROKER_YAML, args: ["--namesrv", ns.namesrvAddr] });
      const inspector = new MQClientAPI({ nameSrv: ns.namesrvAddr, logger: silentLogger, httpclient: noHttp, responseTimeout: 5000 }) as OnsApi;
      await inspector.ready();
      const c = new Cluster(ns, broker, newClient(), inspector);
      // ali-ons keeps one static internal producer per process (group CLIENT_INNER_PRODUCER, client
      // <ip>@DEFAULT) made from the options of the first client; make it point at this name server.
      Producer.defaultProducer = null;
      const inner = await Producer.getDefaultProducer(c.#options({}));
      inner.on("error", (e) => c.errors.push(`inner producer: ${e.message}`));
      return c;
    } catch (e) {
      await broker?.[Symbol.asyncDispose]();
      await ns[Symbol.asyncDispose]();
      throw e;
    }
  }

  get nsAddr(): string {
    return this.ns.namesrvAddr;
  }

  get brokerAddr(): string {
    return `127.0.0.1:${this.broker.ports.broker}`;
  }

  #options(extra: Record<string, unknown>): Record<string, unknown> {
    return { nameSrv: this.nsAddr, httpclient: noHttp, logger: silentLogger, ...extra };
  }

  /** UPDATE_AND_CREATE_TOPIC on the master, then wait until the name server routes it. */
  async createTopic(topic: string, queues = 8): Promise<void> {
    const req = createTopicRequest(topic, queues);
    const res = await this.wire.invoke(this.brokerAddr, req, 3000);
    if (res.code !== 0) throw new Error(`UPDATE_AND_CREATE_TOPIC ${topic} answered ${res.code} ${res.remark ?? ""}`);
    await this.waitRoute(topic, queues);
  }

  async waitRoute(topic: string, queues: number): Promise<void> {
    await until(
      async () => {
        const res = await this.wire.invoke(this.nsAddr, routeRequest(topic), 3000);
        if (res.code !== 0) return false;
        const route = bodyJson<{ queueDatas: { writeQueueNums: number; readQueueNums: number }[] }>(res);
        return route.queueDatas.some((q) => q.writeQueueNums === queues && q.readQueueNums === queues);
      },
      15_000,
      () => `the name server to route ${topic} with ${queues} queues`,
    );
  }

  /** GET_CONSUMER_LIST_BY_GROUP on the master ([] when it answers "no consumer"). */
  async consumerIds(group: string): Promise<string[]> {
    const res = await this.wire.invoke(this.brokerAddr, createRequest(RequestCode.GET_CONSUMER_LIST_BY_GROUP, { consumerGroup: group }), 3000);
    if (res.code !== 0) return [];
    return bodyJson<{ consumerIdList: string[] }>(res).consumerIdList;
  }

  async #admin<T>(path: string): Promise<T | null> {
    const r = await fetch(`${this.broker.adminUrl}${path}`);
    if (r.status === 404) return null;
    if (!r.ok) throw new Error(`GET ${path}: HTTP ${r.status} ${await r.text()}`);
    return (await r.json()) as T;
  }

  /** Committed offsets of `group` on `topic` by queue id, from the broker admin API. */
  async committedOffsets(group: string, topic: string): Promise<Map<number, number>> {
    const g = await this.#admin<{ queues: { topic: string; queueId: number; consumerOffset: number }[] }>(`/groups/${encodeURIComponent(group)}`);
    return new Map((g?.queues ?? []).filter((q) => q.topic === topic).map((q) => [q.queueId, q.consumerOffset]));
  }

  /** Per-queue min/max offsets of a topic from the broker admin API (null if the topic is unknown). */
  async queueOffsets(topic: string): Promise<{ queueId: number; minOffset: number; maxOffset: number }[] | null> {
    const t = await this.#admin<{ queues: { queueId: number; minOffset: number; maxOffset: number }[] }>(`/topics/${encodeURIComponent(topic)}`);
    return t?.queues ?? null;
  }

  /**
   * Everything in one queue from `offset` on, read with PULL_MESSAGE (SUBSCRIPTION flag, no
   * suspend) through ali-ons' own API and decoder, so the broker's tag filter applies.
   */
  async pullAll(topic: string, queueId: number, subscription = "*", offset = 0): Promise<OnsMessage[]> {
    const out: OnsMessage[] = [];
    for (let i = 0; i < 1000; i++) {
      const r = await this.inspector.pullMessage(
        this.brokerAddr,
        {
          consumerGroup: INSPECTOR_GROUP,
          topic,
          queueId,
          queueOffset: offset,
          maxMsgNums: 32,
          sysFlag: PULL_SUBSCRIPTION_FLAG,
          commitOffset: 0,
          suspendTimeoutMillis: 0,
          subscription,
          subVersion: 0,
        },
        5000,
      );
      out.push(...r.msgFoundList);
      if (r.pullStatus === "NO_NEW_MSG" || r.pullStatus === "OFFSET_ILLEGAL" || r.nextBeginOffset <= offset) break;
      offset = r.nextBeginOffset;
      if (r.pullStatus === "NO_MATCHED_MSG" && offset >= r.maxOffset) break;
    }
    return out;
  }

  async producer(name: string): Promise<OnsProducer> {
    const p = new Producer(this.#options({ producerGroup: name, instanceName: name }));
    p.on("error", (e) => this.errors.push(`producer ${name}: ${e.message}`));
    this.#track(`producer ${name}`, () => p.close());
    await p.ready();
    return p;
  }

  /** A push consumer; `opts` needs consumerGroup and a unique instanceName (one ali-ons client per name). */
  consumer(opts: { consumerGroup: string; instanceName: string } & Record<string, unknown>): OnsConsumer {
    const c = new Consumer(this.#options(opts));
    c.on("error", (e) => this.errors.push(`consumer ${opts.instanceName}: ${e.message}`));
    let closed: Promise<void> | undefined;
    const close = c.close.bind(c);
    // Closing twice (by the test, then on dispose) must not unregister twice.
    c.close = () => (closed ??= close());
    this.#track(`consumer ${opts.instanceName}`, () => c.close());
    return c;
  }

  #track(what: string, close: () => Promise<void>): void {
    this.#closables.push({ what, close });
  }

  /** Broker stderr (warnings and errors) and ali-ons errors, for failure messages. */
  diag(): string {
    const errs = this.errors.slice(-15).join("\n  ");
    return `\nali-ons errors (${this.errors.length}, last 15):\n  ${errs}\nbroker stderr:\n${this.broker.output.err().slice(-3000)}`;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (process.env.ALI_ONS_DEBUG) console.log(`[ali-ons-cluster] ${this.errors.length} ali-ons errors:\n  ${this.errors.join("\n  ")}`);
    const problems: string[] = [];
    for (const c of this.#closables.splice(0).reverse()) await bounded(c.close(), 10_000, `closing ${c.what}`, problems);
    const inner = Producer.defaultProducer;
    Producer.defaultProducer = null;
    if (inner) await bounded(inner.close(), 10_000, "closing ali-ons' internal producer", problems);
    await bounded(this.inspector.close(), 5000, "closing the inspector", problems);
    await bounded(this.wire.close(), 5000, "closing the wire client", problems);
    await this.broker[Symbol.asyncDispose]();
    await this.ns[Symbol.asyncDispose]();
    if (problems.length) throw new Error(`cleanup problems:\n${problems.join("\n")}`);
  }
}
