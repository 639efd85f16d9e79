/**
 * Producer (RocketMQ's DefaultMQProducer): routes from the name server, round-robin over the
 * topic's writable queues (`sendWhichQueue`), a retry after a failure on another broker with the
 * failed broker avoided for a while (latency fault tolerance), zlib compression of large bodies,
 * batches, oneway sends, ordered sends through a queue selector, delayed and timed messages.
 */
import { deflateSync } from "node:zlib";
import { encodeMessageBatch } from "../common/message-batch.ts";
import { MessageConst } from "../protocol/message-const.ts";
import { SysFlag } from "../protocol/sys-flag.ts";
import { RequestCode, ResponseCode, type ExtFields } from "../remoting/index.ts";
import { ClientInstance, errText, type ClientInstanceOptions } from "./client-instance.ts";
import { MQBrokerError, MQClientError } from "./errors.ts";
import { bodyBytes, buildProperties, createUniqId, type Message } from "./message.ts";
import { publishQueues } from "./route.ts";
import { MASTER_ID, type MessageQueue } from "../protocol/route.ts";
import { AUTO_CREATE_TOPIC } from "../protocol/topics.ts";

export interface ProducerOptions extends ClientInstanceOptions {
  group: string;
  sendTimeoutMs?: number;
  /** Extra attempts on another broker after a failed send (default 2, as Java's sync sends). */
  retryTimesWhenSendFailed?: number;
  /** Bodies at least this long are zlib-compressed (default 4096). */
  compressThresholdBytes?: number;
  /** Bound on concurrent sends; further sends wait (default 1024). */
  maxInFlight?: number;
  /** Topic used as a route template when a topic is unknown (broker auto-creation). */
  createTopicKey?: string;
  defaultTopicQueueNums?: number;
}

export type SendStatus = "SEND_OK" | "FLUSH_DISK_TIMEOUT" | "FLUSH_SLAVE_TIMEOUT" | "SLAVE_NOT_AVAILABLE";

export interface SendResult {
  status: SendStatus;
  /** The client unique id (UNIQ_KEY); for a batch, the ids joined with ','. */
  msgId: string;
  /** The broker's offset message id(s). */
  offsetMsgId: string;
  queue: MessageQueue;
  queueOffset: number;
}

export interface SendOptions<A = unknown> {
  /** Ordered sends: pick the queue yourself (e.g. by order id). */
  selector?: (queues: readonly MessageQueue[], arg: A) => MessageQueue;
  arg?: A;
  timeoutMs?: number;
}

const STATUS_BY_CODE: Record<number, SendStatus> = {
  [ResponseCode.SUCCESS]: "SEND_OK",
  [ResponseCode.FLUSH_DISK_TIMEOUT]: "FLUSH_DISK_TIMEOUT",
  [ResponseCode.FLUSH_SLAVE_TIMEOUT]: "FLUSH_SLAVE_TIMEOUT",
  [ResponseCode.SLAVE_NOT_AVAILABLE]: "SLAVE_NOT_AVAILABLE",
};

/** Codes after which Java producers try another broker. */
const RETRY_CODES: ReadonlySet<number> = new Set<number>([
  ResponseCode.TOPIC_NOT_EXIST,
  ResponseCode.SERVICE_NOT_AVAILABLE,
  ResponseCode.SYSTEM_ERROR,
  ResponseCode.NO_PERMISSION,
  ResponseCode.NO_BUYER_ID,
  ResponseCode.NOT_IN_CURRENT_UNIT,
  ResponseCode.SYSTEM_BUSY,
]);

/** How long a broker that just failed is avoided. */
const FAULT_AVOID_MS = 30_000;

export class Producer {
  readonly #o: ProducerOptions;
  readonly #client: ClientInstance;
  readonly #publish = new Map<string, { queues: MessageQueue[]; fetchedAt: number }>();
  readonly #faulty = new Map<string, number>();
  #sendWhichQueue = Math.floor(Math.random() * 1024);
  #inFlight = 0;
  readonly #waiting: (() => void)[] = [];
  #state: "new" | "running" | "shutdown" = "new";

  constructor(o: ProducerOptions) {
    if (!o.group) throw new MQClientError("producer group is required (option `group`)");
    this.#o = o;
    this.#client = new ClientInstance(o);
  }

  get clientId(): string {
    return this.#client.clientId;
  }

  get group(): string {
    return this.#o.group;
  }

  /** For subclasses (TransactionProducer): the connection pool and broker addresses. */
  protected get client(): ClientInstance {
    return this.#client;
  }

  async start(): Promise<void> {
    if (this.#state !== "new") throw new MQClientError(`producer ${this.#o.group} cannot start: it is ${this.#state}`);
    this.#client.registerProducer(this.#o.group);
    this.#client.start();
    this.#state = "running";
  }

  async shutdown(): Promise<void> {
    if (this.#state === "shutdown") return;
    this.#state = "shutdown";
    await this.#client.shutdown();
  }

  /** Sends one message and waits for the broker's answer (retrying on another broker on failure). */
  async send<A = unknown>(msg: Message, opts: SendOptions<A> = {}): Promise<SendResult> {
    this.#checkRunning();
    // A free slot is taken without an await: every await on this path is a microtask hop per message.
    if (this.#inFlight < (this.#o.maxInFlight ?? 1024)) this.#inFlight++;
    else await this.#acquire();
    try {
      return await this.#sendWithRetries([msg], opts, false);
    } finally {
      this.#release();
    }
  }

  /** Sends several messages of one topic as one batch (stored contiguously, one queue). */
  async sendBatch(msgs: readonly Message[], opts: SendOptions = {}): Promise<SendResult> {
    this.#checkRunning();
    if (msgs.length === 0) throw new MQClientError("sendBatch needs at least one message");
    const topic = msgs[0]!.topic;
    for (const m of msgs) {
      if (m.topic !== topic) throw new MQClientError("all messages of a batch must have the same topic");
      if (m.delayLevel || m.deliverAt) throw new MQClientError("batch messages cannot be delayed");
    }
    await this.#acquire();
    try {
      return await this.#sendWithRetries(msgs, opts, true);
    } finally {
      this.#release();
    }
  }

  /** Fire and forget: no answer, no retry. */
  sendOneway(msg: Message): void {
    this.#checkRunning();
    void this.#sendOneway(msg).catch((e) => this.#client.log.rateLimited("warn", "oneway", `oneway send failed: ${errText(e)}`));
  }

  async #sendOneway(msg: Message): Promise<void> {
    const queues = await this.#queues(msg.topic);
    const mq = this.#pickQueue(queues, undefined);
    const addr = this.#masterAddr(mq);
    const { ext, body } = this.#request([msg], mq, false);
    await this.#client.invokeBrokerOneway(addr, RequestCode.SEND_MESSAGE_V2, ext, body);
  }

  #checkRunning(): void {
    if (this.#state !== "running") throw new MQClientError(`producer ${this.#o.group} is not running (call start() first)`);
  }

  async #acquire(): Promise<void> {
    const max = this.#o.maxInFlight ?? 1024;
    while (this.#inFlight >= max) await new Promise<void>((r) => this.#waiting.push(r));
    this.#inFlight++;
  }

  #release(): void {
    this.#inFlight--;
    this.#waiting.shift()?.();
  }

  /** The topic's publish queues if the cached route is fresh (the common case: no await). */
  #cachedQueues(topic: string): MessageQueue[] | undefined {
    const cached = this.#publish.get(topic);
    return cached && Date.now() - cached.fetchedAt < 30_000 && cached.queues.length > 0 ? cached.queues : undefined;
  }

  async #queues(topic: string): Promise<MessageQueue[]> {
    const cached = this.#cachedQueues(topic);
    if (cached) return cached;
    this.#client.notePublishTopic(topic);
    let route = await this.#client.fetchRoute(topic);
    let queues = route ? publishQueues(topic, route) : [];
    if (!route) {
      // Unknown topic: use the auto-create template's route (the broker creates the topic on first send).
      const key = this.#o.createTopicKey ?? AUTO_CREATE_TOPIC;
      route = await this.#client.fetchRoute(key);
      const n = this.#o.defaultTopicQueueNums ?? 4;
      queues = route ? publishQueues(topic, route).filter((q) => q.queueId < n) : [];
    }
    if (queues.length === 0) {
      throw new MQClientError(
        `no route to publish to topic ${topic}: create it on a broker first (UPDATE_AND_CREATE_TOPIC) or enable autoCreateTopicEnable`,
        ResponseCode.TOPIC_NOT_EXIST,
      );
    }
    this.#publish.set(topic, { queues, fetchedAt: Date.now() });
    void this.#client.sendHeartbeatToAllBrokers();
    return queues;
  }

  #pickQueue(queues: readonly MessageQueue[], avoidBroker: string | undefined): MessageQueue {
    const now = Date.now();
    for (let i = 0; i < queues.length; i++) {
      const mq = queues[Math.abs(this.#sendWhichQueue++) % queues.length]!;
      if (mq.brokerName === avoidBroker) continue;
      const until = this.#faulty.get(mq.brokerName);
      if (until !== undefined && until > now) continue;
      return mq;
    }
    // Every broker is avoided: take the next one anyway rather than fail.
    return queues[Math.abs(this.#sendWhichQueue++) % queues.length]!;
  }

  #masterAddr(mq: MessageQueue): string {
    const addr = this.#client.brokerAddr(mq.brokerName, MASTER_ID);
    if (!addr) throw new MQClientError(`broker ${mq.brokerName} has no master in the route`);
    return addr;
  }

  #request(msgs: readonly Message[], mq: MessageQueue, batch: boolean): { ext: ExtFields; body: Uint8Array; uniqIds: string[] } {
    const uniqIds = msgs.map(() => createUniqId());
    let sysFlag = 0;
    let body: Uint8Array;
    let properties = "";
    if (batch) {
      body = encodeMessageBatch(msgs.map((m, i) => ({ flag: m.flag ?? 0, body: bodyBytes(m.body), properties: buildProperties(m, uniqIds[i]!) })));
    } else {
      const m = msgs[0]!;
      body = bodyBytes(m.body);
      properties = buildProperties(m, uniqIds[0]!);
      // A transactional half message (TransactionProducer sets TRAN_MSG), as the Java client marks it.
      if (m.properties?.[MessageConst.TRAN_MSG] === "true") sysFlag |= SysFlag.TRANSACTION_PREPARED_TYPE;
      const threshold = this.#o.compressThresholdBytes ?? 4096;
      if (body.length >= threshold) {
        body = new Uint8Array(deflateSync(body, { level: 5 }));
        sysFlag |= SysFlag.COMPRESSED;
      }
    }
    const m0 = msgs[0]!;
    const ext: ExtFields = {
      a: this.#o.group,
      b: m0.topic,
      c: this.#o.createTopicKey ?? AUTO_CREATE_TOPIC,
      d: String(this.#o.defaultTopicQueueNums ?? 4),
      e: String(mq.queueId),
      f: String(sysFlag),
      g: String(Date.now()),
      h: String(m0.flag ?? 0),
      i: properties,
      j: "0",
      k: "false",
    };
    if (batch) ext.m = "true";
    return { ext, body, uniqIds };
  }

  async #sendWithRetries<A>(msgs: readonly Message[], opts: SendOptions<A>, batch: boolean): Promise<SendResult> {
    const topic = msgs[0]!.topic;
    const timeoutMs = opts.timeoutMs ?? this.#o.sendTimeoutMs ?? 3000;
    const deadline = Date.now() + timeoutMs;
    const attempts = 1 + (opts.selector ? 0 : (this.#o.retryTimesWhenSendFailed ?? 2));
    let lastBroker: string | undefined;
    let lastError: unknown;
    for (let attempt = 0; attempt < attempts; attempt++) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const queues = this.#cachedQueues(topic) ?? (await this.#queues(topic));
      const mq = opts.selector ? opts.selector(queues, opts.arg as A) : this.#pickQueue(queues, lastBroker);
      if (!mq) throw new MQClientError("the queue selector returned no queue");
      const { ext, body, uniqIds } = this.#request(msgs, mq, batch);
      try {
        const addr = this.#masterAddr(mq);
        const res = await this.#client.invokeBroker(addr, batch ? RequestCode.SEND_BATCH_MESSAGE : RequestCode.SEND_MESSAGE_V2, ext, body, left);
        const status = STATUS_BY_CODE[res.code];
        if (status) {
          this.#faulty.delete(mq.brokerName);
          return {
            status,
            msgId: uniqIds.length === 1 ? uniqIds[0]! : uniqIds.join(","),
            offsetMsgId: res.extFields?.msgId ?? "",
            queue: { topic, brokerName: mq.brokerName, queueId: Number(res.extFields?.queueId ?? mq.queueId) },
            queueOffset: Number(res.extFields?.queueOffset ?? -1),
          };
        }
        const err = new MQBrokerError(res.code, res.remark, addr);
        if (!RETRY_CODES.has(res.code)) throw err;
        lastError = err;
        if (res.code === ResponseCode.TOPIC_NOT_EXIST) this.#publish.delete(topic);
      } catch (e) {
        if (e instanceof MQBrokerError && !RETRY_CODES.has(e.code)) throw e;
        lastError = e;
      }
      lastBroker = mq.brokerName;
      this.#faulty.set(mq.brokerName, Date.now() + FAULT_AVOID_MS);
      // Gone, or not the master any more (failover): the next attempt may find the new master.
      // (The queues stay: a failover keeps the broker name; the master's address comes from the route.)
      if (!(lastError instanceof MQBrokerError) || lastError.code === ResponseCode.SERVICE_NOT_AVAILABLE) this.#client.brokerFailed(mq.brokerName);
    }
    if (lastError instanceof MQClientError) throw lastError;
    throw new MQClientError(`send to ${topic} failed after ${attempts} attempt(s) within ${timeoutMs} ms: ${errText(lastError)}`, -1, {
      cause: lastError,
    });
  }
}
