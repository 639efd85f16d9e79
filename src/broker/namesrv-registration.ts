/**
 * Registration with every name server (RocketMQ's BrokerOuterAPI): REGISTER_BROKER to all of
 * them in parallel at start, every `periodMs`, and soon after topics change; UNREGISTER_BROKER
 * at shutdown. One long-lived connection per name server, because a name server treats the
 * close of that connection as "broker gone".
 */
import { systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import { jsonBytes, parseJsonBytes } from "../common/json.ts";
import type { Logger } from "../common/log.ts";
import { createRequest, RemotingClient, RequestCode, ResponseCode } from "../remoting/index.ts";
import { encodeRegisterBrokerBodyCompressed } from "../protocol/register-broker-body.ts";
import type { TopicConfigWrapper } from "./metadata.ts";

export interface RegistrationIdentity {
  clusterName: string;
  brokerAddr: string;
  brokerName: string;
  brokerId: number;
  haServerAddr: string;
}

export interface RegisterResult {
  namesrv: string;
  ok: boolean;
  masterAddr?: string;
  haServerAddr?: string;
  /** ORDER_TOPIC_CONFIG KV table the name server returned. */
  orderTopicConfig?: Record<string, string>;
  error?: string;
}

const REGISTER_TIMEOUT_MS = 6000;
/** The frame's length words and a REGISTER_BROKER header, generously: what the body leaves room for. */
const FRAME_OVERHEAD_BYTES = 1024;

export class NamesrvRegistration {
  readonly #client: RemotingClient;
  #namesrvs: string[];
  #id: RegistrationIdentity;
  readonly #topics: () => TopicConfigWrapper;
  readonly #log: Logger;
  #periodMs: number;
  readonly #onResult: (r: RegisterResult) => void;
  readonly #clock: Clock;
  #timer: TimerHandle | null = null;
  #pending: TimerHandle | null = null;
  /** Settled when the registration `#pending` will send has been answered. */
  #pendingDone: PromiseWithResolvers<void> | null = null;
  #lastSuccessAt = 0;
  /** Set by unregisterAll: nothing registers again (a late topic change must not undo the leave). */
  #stopped = false;
  readonly #frameSizeMaxBytes: number;

  constructor(o: {
    client: RemotingClient;
    namesrvs: string[];
    identity: RegistrationIdentity;
    topics: () => TopicConfigWrapper;
    periodMs: number;
    log: Logger;
    onResult?: (r: RegisterResult) => void;
    /** Default: the system clock. */
    clock?: Clock;
    /**
     * remoting.frameSizeMaxBytes: a registration larger than this is refused by a name server with
     * the same limit (it closes the connection); the failure then says so. Default: no check.
     */
    frameSizeMaxBytes?: number;
  }) {
    this.#frameSizeMaxBytes = o.frameSizeMaxBytes ?? Number.POSITIVE_INFINITY;
    this.#clock = o.clock ?? systemClock;
    this.#client = o.client;
    this.#namesrvs = [...o.namesrvs];
    this.#id = o.identity;
    this.#topics = o.topics;
    this.#periodMs = o.periodMs;
    this.#log = o.log;
    this.#onResult = o.onResult ?? (() => {});
  }

  start(): void {
    void this.registerAll();
    this.#timer ??= this.#clock.setInterval(() => void this.registerAll(), this.#periodMs);
  }

  get namesrvs(): readonly string[] {
    return this.#namesrvs;
  }

  /** Config reload: the next registrations follow the new period (the timer restarts now). */
  setPeriodMs(ms: number): void {
    if (ms === this.#periodMs) return;
    this.#periodMs = ms;
    if (this.#timer && !this.#stopped) {
      this.#clock.clearInterval(this.#timer);
      this.#timer = this.#clock.setInterval(() => void this.registerAll(), this.#periodMs);
    }
  }

  /**
   * Config reload: register with the new set at once and unregister from the name servers that
   * were dropped, so they stop routing to this broker now instead of after their expiry scan.
   * Name servers in both sets are left alone until the next periodic registration.
   */
  async setNamesrvs(next: readonly string[]): Promise<{ added: string[]; removed: string[] }> {
    const before = this.#namesrvs;
    const added = next.filter((a) => !before.includes(a));
    const removed = before.filter((a) => !next.includes(a));
    this.#namesrvs = [...next];
    if (this.#stopped) return { added, removed };
    const leave = async () => {
      await this.#unregisterFrom(removed, REGISTER_TIMEOUT_MS);
      // The connection would otherwise stay open to a name server we no longer use.
      await Promise.all(removed.map((a) => this.#client.disconnect(a)));
    };
    await Promise.all([added.length > 0 ? this.#registerWith(added) : Promise.resolve([]), leave()]);
    return { added, removed };
  }

  get lastSuccessAt(): number {
    return this.#lastSuccessAt;
  }

  /**
   * Automatic failover: the broker now registers as `brokerId` (0 as master, its replica id
   * otherwise), at once. A name server replaces the entry this address had under its old id.
   */
  async setBrokerId(brokerId: number): Promise<RegisterResult[]> {
    if (brokerId === this.#id.brokerId) return [];
    this.#id = { ...this.#id, brokerId };
    if (this.#stopped) return [];
    return this.registerAll();
  }

  /**
   * Topics changed: register again shortly (changes made together ride on one registration).
   * Resolves once that registration has been answered, or has failed, at every name server.
   */
  topicsChanged(): Promise<void> {
    if (this.#stopped || this.#namesrvs.length === 0) return Promise.resolve();
    if (this.#pending) return this.#pendingDone!.promise;
    const done = (this.#pendingDone = Promise.withResolvers<void>());
    this.#pending = this.#clock.setTimeout(() => {
      this.#pending = null;
      this.#pendingDone = null;
      void this.registerAll().finally(() => done.resolve());
    }, 20);
    return done.promise;
  }

  async registerAll(): Promise<RegisterResult[]> {
    return this.#registerWith(this.#namesrvs);
  }

  /**
   * The JSON body, or, when that would not fit in a frame, RocketMQ's compressed form (its broker
   * option compressedRegister: zlib, a short text per topic; a Java 4.x name server reads it too).
   * The compressed text carries no `order` or `topicSysFlag`, so it is only the fallback.
   *
   * Found by the port fuzz: 2,356 auto-created topics made a 375 KB registration; the
   * name server's frame limit (256 KiB there) closed the connection, all the log said was
   * "connection closed", and new topics got no route. `tooBig`: what to say when even the
   * compressed form does not fit (RocketMQ has the same limit).
   */
  #body(wrapper: TopicConfigWrapper): { body: Uint8Array; compressed: boolean; tooBig?: string } {
    const json = jsonBytes({ filterServerList: [], topicConfigSerializeWrapper: wrapper });
    const limit = this.#frameSizeMaxBytes - FRAME_OVERHEAD_BYTES;
    if (json.length <= limit) return { body: json, compressed: false };
    const topics = Object.keys(wrapper.topicConfigTable).length;
    const body = encodeRegisterBrokerBodyCompressed({ ...wrapper, filterServerList: [] });
    const what = `the registration of ${topics} topics is ${json.length} bytes, over remoting.frameSizeMaxBytes (${this.#frameSizeMaxBytes})`;
    if (body.length <= limit) {
      this.#log.rateLimited("warn", "register-compressed", `${what}: sent compressed (${body.length} bytes; routes lose topicSysFlag and order)`, 3_600_000);
      return { body, compressed: true };
    }
    const tooBig =
      `${what}, ${body.length} compressed: a name server with that limit refuses it, and new topics get no route; ` +
      "raise remoting.frameSizeMaxBytes on the brokers and name servers, or delete unused topics";
    return { body, compressed: true, tooBig };
  }

  async #registerWith(namesrvs: readonly string[]): Promise<RegisterResult[]> {
    if (this.#stopped) return [];
    const wrapper = this.#topics();
    const { body, compressed, tooBig } = this.#body(wrapper);
    const crc = String(Bun.hash.crc32(body) & 0x7fffffff);
    const results = await Promise.all(
      namesrvs.map(async (addr): Promise<RegisterResult> => {
        const req = createRequest(
          RequestCode.REGISTER_BROKER,
          {
            brokerName: this.#id.brokerName,
            brokerAddr: this.#id.brokerAddr,
            clusterName: this.#id.clusterName,
            haServerAddr: this.#id.haServerAddr,
            brokerId: String(this.#id.brokerId),
            compressed: String(compressed),
            bodyCrc32: crc,
          },
          body,
        );
        try {
          const res = await this.#client.invoke(addr, req, REGISTER_TIMEOUT_MS);
          if (res.code !== ResponseCode.SUCCESS) return { namesrv: addr, ok: false, error: `code ${res.code}: ${res.remark ?? ""}` };
          const r: RegisterResult = { namesrv: addr, ok: true };
          if (res.extFields?.masterAddr) r.masterAddr = res.extFields.masterAddr;
          if (res.extFields?.haServerAddr) r.haServerAddr = res.extFields.haServerAddr;
          if (res.body && res.body.length > 0) {
            const kv = parseJsonBytes(res.body) as { table?: Record<string, string> } | null;
            if (kv?.table) r.orderTopicConfig = kv.table;
          }
          return r;
        } catch (e) {
          const error = e instanceof Error ? e.message : String(e);
          return { namesrv: addr, ok: false, error: tooBig === undefined ? error : `${error}; ${tooBig}` };
        }
      }),
    );
    for (const r of results) {
      if (r.ok) this.#lastSuccessAt = this.#clock.now();
      else this.#log.rateLimited("warn", `register-${r.namesrv}`, `register to name server ${r.namesrv} failed: ${r.error}`, 30_000);
      this.#onResult(r);
    }
    return results;
  }

  /** Stops the timer and tells every name server we are leaving (best effort, bounded). */
  async unregisterAll(timeoutMs = 3000): Promise<void> {
    this.#stopped = true;
    if (this.#timer) this.#clock.clearInterval(this.#timer);
    if (this.#pending) this.#clock.clearTimeout(this.#pending);
    this.#timer = this.#pending = null;
    this.#pendingDone?.resolve();
    this.#pendingDone = null;
    await this.#unregisterFrom(this.#namesrvs, timeoutMs);
  }

  async #unregisterFrom(namesrvs: readonly string[], timeoutMs: number): Promise<void> {
    await Promise.all(
      namesrvs.map(async (addr) => {
        const req = createRequest(RequestCode.UNREGISTER_BROKER, {
          brokerName: this.#id.brokerName,
          brokerAddr: this.#id.brokerAddr,
          clusterName: this.#id.clusterName,
          brokerId: String(this.#id.brokerId),
        });
        try {
          await this.#client.invoke(addr, req, timeoutMs);
        } catch (e) {
          this.#log.warn(`unregister from ${addr} failed: ${e instanceof Error ? e.message : String(e)}`);
        }
      }),
    );
  }
}

/**
 * Topics the broker created on a client's behalf (a group's retry topic at its first heartbeat, a
 * DLQ, a topic auto-created by a send) whose registration is still on its way to the name servers.
 * The request that created one is answered only once the name servers route it, as Java's broker
 * registers inside createTopicInSendMessageBackMethod / createTopicInSendMessageMethod before it
 * answers: a client's look-up right after the answer (a new push consumer's first rebalances read
 * %RETRY%<group>) then finds the topic instead of waiting for its next 30 s route poll. The wait is
 * bounded by `maxWaitMs`, kept under the clients' 3 s request timeouts: a name server that does not
 * answer must not stall clients (the periodic registration carries the topic later).
 */
export class PendingRoutes {
  readonly #pending = new Map<string, Promise<void>>();
  readonly #clock: Clock;
  readonly #maxWaitMs: number;

  constructor(clock: Clock, maxWaitMs: number) {
    this.#clock = clock;
    this.#maxWaitMs = maxWaitMs;
  }

  /** `topic` was created; `registered` settles when a registration carrying it was answered. */
  track(topic: string, registered: Promise<void>): void {
    const { promise, resolve } = Promise.withResolvers<void>();
    const timer = this.#clock.setTimeout(resolve, this.#maxWaitMs);
    void registered.finally(() => {
      this.#clock.clearTimeout(timer);
      resolve();
    });
    this.#pending.set(topic, promise);
    void promise.then(() => {
      if (this.#pending.get(topic) === promise) this.#pending.delete(topic);
    });
  }

  /**
   * Settles when `topic` (and `other`) are routable; null when neither is pending, the send path's
   * common case, which costs one size check and no allocation.
   */
  until(topic: string, other?: string): Promise<void> | null {
    if (this.#pending.size === 0) return null;
    const a = this.#pending.get(topic);
    const b = other === undefined || other === topic ? undefined : this.#pending.get(other);
    if (a === undefined || b === undefined) return a ?? b ?? null;
    return Promise.all([a, b]).then(() => {});
  }
}
