/**
 * ClientInstance (RocketMQ's MQClientInstance, one per Producer/Consumer here): the connection
 * pool, topic routes from one name server at a time (random start, switch on failure, refreshed
 * every 30 s), heartbeats to every broker every 30 s, and UNREGISTER_CLIENT at shutdown.
 * Server→client requests (NOTIFY_CONSUMER_IDS_CHANGED, GET_CONSUMER_RUNNING_INFO, …) are routed
 * to the registered consumer.
 */
import { networkInterfaces } from "node:os";
import { jsonBytes, parseJsonBytes } from "../common/json.ts";
import { scope, type Logger } from "../common/log.ts";
import type { ClientTls, TlsVerify } from "../common/tls.ts";
import { MessageConst } from "../protocol/message-const.ts";
import { decodeRecordAt, parseProperties } from "../common/message-record.ts";
import {
  createRequest,
  createResponse,
  RemotingClient,
  RemotingTimeoutError,
  REMOTING_CLIENT_DEFAULTS,
  RequestCode,
  ResponseCode,
  type ExtFields,
  type RemotingCommand,
  type RemotingConnection,
} from "../remoting/index.ts";
import { answerBrokerRequest, isConsumerAdminRequest, type ConsumerAdminHooks } from "./broker-requests.ts";
import { MQBrokerError, MQClientError, MQTimeoutError } from "./errors.ts";
import { parseRoute } from "./route.ts";
import { MASTER_ID, type TopicRouteData } from "../protocol/route.ts";
import { signRequest, type AclCredentials } from "../protocol/acl-signature.ts";

export interface ClientInstanceOptions {
  namesrv: string | string[];
  instanceName?: string;
  requestTimeoutMs?: number;
  routeRefreshMs?: number;
  heartbeatMs?: number;
  /**
   * RocketMQ plain-ACL credentials (Java `SessionCredentials`): when set, every request this
   * client sends — heartbeats, route lookups and oneways included — is signed as the Java client's
   * AclClientRPCHook signs it (src/protocol/acl-signature.ts), just before it is sent.
   */
  credentials?: AclCredentials;
  /**
   * TLS to the name servers and the brokers alike (Java: -Dtls.enable=true). `true`: encrypt,
   * accept any certificate (Java's default tls.test.mode.enable). An object: PEM texts; with a
   * `ca` the server's chain is checked (host names are not: broker addresses are IPs, as in
   * Java), `verify` says otherwise ("none" | "chain" | "full"). `cert`/`key`: for mutual TLS.
   */
  tls?: true | ClientTlsOptions;
}

export interface ClientTlsOptions {
  ca?: string;
  cert?: string;
  key?: string;
  passphrase?: string;
  verify?: TlsVerify;
}

/** The connect options for a ClientInstanceOptions.tls value. */
export function clientTls(o: true | ClientTlsOptions | undefined): ClientTls | undefined {
  if (o === undefined) return undefined;
  if (o === true) return { verify: "none" };
  const { verify, ...pem } = o;
  return { ...pem, verify: verify ?? (o.ca !== undefined ? "chain" : "none") };
}

export interface HeartbeatConsumerData {
  groupName: string;
  consumeType: "CONSUME_PASSIVELY" | "CONSUME_ACTIVELY";
  messageModel: "CLUSTERING" | "BROADCASTING";
  consumeFromWhere: string;
  unitMode: boolean;
  subscriptionDataSet: {
    topic: string;
    subString: string;
    tagsSet: string[];
    codeSet: number[];
    classFilterMode: boolean;
    subVersion: number;
    expressionType: string;
  }[];
}

/** Answers one CHECK_TRANSACTION_STATE (on `conn`, the broker's connection). */
export type TransactionCheckHandler = (conn: RemotingConnection, cmd: RemotingCommand) => void;

/** What a consumer registered with the instance must provide. */
export interface ConsumerHooks {
  heartbeatData(): HeartbeatConsumerData;
  /** The broker said the group's membership changed: rebalance now. */
  onConsumerIdsChanged(): void;
  /** Topics whose routes this consumer needs. */
  topics(): string[];
  /** Answers the broker's RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_STATUS_FROM_CLIENT, GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY. */
  admin?: ConsumerAdminHooks;
}

let instanceCounter = 0;

function localIp(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return "127.0.0.1";
}

/** brokerFailed: the routes are fetched again at most this often per broker name. */
const ROUTE_RETRY_MIN_MS = 1000;

export class ClientInstance {
  readonly clientId: string;
  readonly remoting: RemotingClient;
  readonly log: Logger = scope("client");
  readonly requestTimeoutMs: number;
  readonly #namesrvs: string[];
  #namesrvIndex: number;
  readonly #routes = new Map<string, TopicRouteData>();
  /** brokerFailed: when the routes were last fetched again because of each broker name. */
  readonly #routeRetryAt = new Map<string, number>();
  readonly #producerGroups = new Set<string>();
  readonly #consumers = new Map<string, ConsumerHooks>();
  /** Producer group → handler of the broker's CHECK_TRANSACTION_STATE for it. */
  readonly #txCheckers = new Map<string, TransactionCheckHandler>();
  readonly #publishTopics = new Set<string>();
  readonly #opts: ClientInstanceOptions;
  #timers: ReturnType<typeof setInterval>[] = [];
  #started = false;
  #shutdown = false;

  constructor(o: ClientInstanceOptions) {
    this.#opts = o;
    this.#namesrvs = (Array.isArray(o.namesrv) ? o.namesrv : o.namesrv.split(";")).map((s) => s.trim()).filter((s) => s.length > 0);
    if (this.#namesrvs.length === 0) throw new MQClientError("no name server address: set namesrv to 'host:port' (or several joined by ';')");
    this.#namesrvIndex = Math.floor(Math.random() * this.#namesrvs.length);
    this.requestTimeoutMs = o.requestTimeoutMs ?? 3000;
    this.clientId = `${localIp()}@${o.instanceName ?? `${process.pid}#${Date.now().toString(36)}${instanceCounter++}`}`;
    const tls = clientTls(o.tls);
    this.remoting = new RemotingClient({
      ...REMOTING_CLIENT_DEFAULTS,
      log: scope("client-remoting"),
      onRequest: (conn, cmd) => this.#onServerRequest(conn, cmd),
      ...(tls ? { tls: () => tls } : {}),
    });
  }

  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#timers.push(
      setInterval(() => void this.refreshRoutes(), this.#opts.routeRefreshMs ?? 30_000),
      setInterval(() => void this.sendHeartbeatToAllBrokers(), this.#opts.heartbeatMs ?? 30_000),
    );
  }

  /** Adds the ACL fields (AccessKey, SecurityToken, Signature) when the client has credentials; call last, right before sending. */
  sign(cmd: RemotingCommand): RemotingCommand {
    if (this.#opts.credentials !== undefined) signRequest(cmd, this.#opts.credentials);
    return cmd;
  }

  registerProducer(group: string): void {
    this.#producerGroups.add(group);
  }

  /** A transaction producer of `group` answers the broker's check-backs for it. */
  registerTransactionChecker(group: string, handler: TransactionCheckHandler): void {
    this.#txCheckers.set(group, handler);
  }

  registerConsumer(group: string, hooks: ConsumerHooks): void {
    if (this.#consumers.has(group)) throw new MQClientError(`consumer group ${group} is already started in this client`);
    this.#consumers.set(group, hooks);
  }

  notePublishTopic(topic: string): void {
    this.#publishTopics.add(topic);
  }

  // -------------------------------------------------------------- name server

  /** Asks name servers in turn (starting at a random one) until one answers. */
  async #invokeNamesrv(cmd: () => RemotingCommand): Promise<RemotingCommand> {
    let last: unknown;
    for (let i = 0; i < this.#namesrvs.length; i++) {
      const addr = this.#namesrvs[this.#namesrvIndex % this.#namesrvs.length]!;
      try {
        return await this.remoting.invoke(addr, this.sign(cmd()), this.requestTimeoutMs);
      } catch (e) {
        last = e;
        this.#namesrvIndex++;
      }
    }
    throw new MQClientError(`no name server answered (${this.#namesrvs.join(", ")}): ${errText(last)}`, -1, { cause: last });
  }

  /** The topic's route, fetched now (and cached); null if the name server knows no such topic. */
  async fetchRoute(topic: string): Promise<TopicRouteData | null> {
    const res = await this.#invokeNamesrv(() => createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic }));
    if (res.code === ResponseCode.TOPIC_NOT_EXIST) return null;
    if (res.code !== ResponseCode.SUCCESS) throw new MQBrokerError(res.code, res.remark, "name server");
    if (!res.body) throw new MQClientError(`name server returned an empty route for ${topic}`);
    const route = parseRoute(parseJsonBytes(res.body));
    if ("invalid" in route) throw new MQClientError(`name server returned a bad route for ${topic}: ${route.invalid}`);
    this.#routes.set(topic, route);
    return route;
  }

  /** Closes every connection, name servers and the brokers of cached routes (a failed start; the client stays usable). */
  async disconnectAll(): Promise<void> {
    await Promise.all([...this.#namesrvs, ...this.allBrokerAddrs(false)].map((addr) => this.remoting.disconnect(addr)));
  }

  /** Cached route, fetched on first use. */
  async route(topic: string): Promise<TopicRouteData | null> {
    return this.#routes.get(topic) ?? (await this.fetchRoute(topic));
  }

  cachedRoute(topic: string): TopicRouteData | undefined {
    return this.#routes.get(topic);
  }

  async refreshRoutes(): Promise<void> {
    const topics = new Set<string>(this.#publishTopics);
    for (const c of this.#consumers.values()) for (const t of c.topics()) topics.add(t);
    await Promise.all(
      [...topics].map((t) =>
        this.fetchRoute(t).catch((e) => this.log.rateLimited("warn", `route-${t}`, `route refresh for ${t} failed: ${errText(e)}`, 30_000)),
      ),
    );
  }

  /**
   * A request to a broker of `brokerName` failed in a way a new route may fix (the broker is gone,
   * or answered that it is not the master): the routes are fetched again at once instead of at
   * the next periodic refresh (30 s), at most once a second, and heartbeats sent. With automatic failover the new
   * master is in the name servers' routes as soon as it is elected (docs/STORAGE.md §10.5).
   */
  brokerFailed(brokerName: string): void {
    const now = Date.now();
    if (now - (this.#routeRetryAt.get(brokerName) ?? 0) < ROUTE_RETRY_MIN_MS) return;
    this.#routeRetryAt.set(brokerName, now);
    // Then a heartbeat to every broker of the new routes: a new master knows this client's
    // consumer groups only from heartbeats (every 30 s otherwise), and its NOTIFY_CONSUMER_IDS_CHANGED
    // makes the group rebalance onto it at once.
    void this.refreshRoutes().then(() => this.sendHeartbeatToAllBrokers());
  }

  /** Address of a broker name's member `brokerId` (master by default), from cached routes. */
  brokerAddr(brokerName: string, brokerId = MASTER_ID): string | undefined {
    for (const r of this.#routes.values()) {
      const bd = r.brokerDatas.find((b) => b.brokerName === brokerName);
      const addr = bd?.brokerAddrs[String(brokerId)];
      if (addr) return addr;
    }
    return undefined;
  }

  /** Where to read a broker name's queues: the suggested id if listed, else any listed member. */
  brokerAddrForRead(brokerName: string, suggestedId: number): { addr: string; brokerId: number } | undefined {
    for (const r of this.#routes.values()) {
      const bd = r.brokerDatas.find((b) => b.brokerName === brokerName);
      if (!bd) continue;
      const exact = bd.brokerAddrs[String(suggestedId)];
      if (exact) return { addr: exact, brokerId: suggestedId };
      const ids = Object.keys(bd.brokerAddrs)
        .map(Number)
        .sort((a, b) => a - b);
      if (ids.length > 0) return { addr: bd.brokerAddrs[String(ids[0])]!, brokerId: ids[0]! };
    }
    return undefined;
  }

  allBrokerAddrs(mastersOnly: boolean): string[] {
    const out = new Set<string>();
    for (const r of this.#routes.values()) {
      for (const b of r.brokerDatas) {
        for (const [id, addr] of Object.entries(b.brokerAddrs)) if (!mastersOnly || Number(id) === MASTER_ID) out.add(addr);
      }
    }
    return [...out];
  }

  // -------------------------------------------------------------- brokers

  /** A request to a broker; a non-success code is returned, not thrown (callers decide). */
  invokeBroker(addr: string, code: number, ext?: ExtFields, body?: Uint8Array, timeoutMs = this.requestTimeoutMs): Promise<RemotingCommand> {
    // Not async: the send path pays one promise here, and only failures take the mapping below.
    return this.remoting.invoke(addr, this.sign(createRequest(code, ext, body)), timeoutMs).catch((e: unknown) => {
      if (e instanceof RemotingTimeoutError)
        throw new MQTimeoutError(`${addr} did not answer request ${code} within ${timeoutMs} ms`, -1, { cause: e });
      throw new MQClientError(`request ${code} to ${addr} failed: ${errText(e)}`, -1, { cause: e });
    });
  }

  async invokeBrokerOneway(addr: string, code: number, ext?: ExtFields, body?: Uint8Array): Promise<void> {
    await this.remoting.invokeOneway(addr, this.sign(createRequest(code, ext, body)));
  }

  heartbeatBody(): Uint8Array {
    return jsonBytes({
      clientID: this.clientId,
      producerDataSet: [...this.#producerGroups].map((groupName) => ({ groupName })),
      consumerDataSet: [...this.#consumers.values()].map((c) => c.heartbeatData()),
    });
  }

  /** Heartbeat to every known broker (producers only need masters). */
  async sendHeartbeatToAllBrokers(): Promise<void> {
    const body = this.heartbeatBody();
    const addrs = this.allBrokerAddrs(this.#consumers.size === 0);
    await Promise.all(
      addrs.map(async (addr) => {
        try {
          const res = await this.invokeBroker(addr, RequestCode.HEART_BEAT, undefined, body);
          if (res.code !== ResponseCode.SUCCESS) this.log.rateLimited("warn", `hb-${addr}`, `heartbeat to ${addr}: ${res.code} ${res.remark ?? ""}`);
        } catch (e) {
          this.log.rateLimited("warn", `hb-${addr}`, `heartbeat to ${addr} failed: ${errText(e)}`, 30_000);
        }
      }),
    );
  }

  #onServerRequest(conn: RemotingConnection, cmd: RemotingCommand): void {
    if (cmd.code === RequestCode.CHECK_TRANSACTION_STATE) {
      // Oneway: the answer is a separate END_TRANSACTION. The body is the half message; its
      // PGROUP names the producer group (as the Java client looks it up).
      const rec = cmd.body ? decodeRecordAt(cmd.body, 0, { checkCrc: false, readBody: false }) : undefined;
      const group = rec && "totalSize" in rec ? parseProperties(rec.properties)[MessageConst.PGROUP] : undefined;
      const handler = group !== undefined ? this.#txCheckers.get(group) : undefined;
      if (handler) handler(conn, cmd);
      else
        this.log.rateLimited(
          "warn",
          "tx-check",
          `transaction check from ${conn.remoteAddress} for producer group ${group ?? "?"}: no transaction producer here`,
        );
      return;
    }
    if (cmd.code === RequestCode.NOTIFY_CONSUMER_IDS_CHANGED) {
      const group = cmd.extFields?.consumerGroup;
      const c = group ? this.#consumers.get(group) : undefined;
      c?.onConsumerIdsChanged();
      return;
    }
    if (isConsumerAdminRequest(cmd.code)) {
      const props = () => ({ PROP_NAMESERVER_ADDR: this.#namesrvs.join(";"), PROP_CLIENT_VERSION: "V4_9_8" });
      answerBrokerRequest(conn, cmd, (group) => this.#consumers.get(group)?.admin, props).catch((e: unknown) => {
        this.log.warn(`answering ${cmd.code} from ${conn.remoteAddress} failed: ${errText(e)}`);
        conn.reply(cmd, createResponse(cmd, ResponseCode.SYSTEM_ERROR, errText(e)));
      });
      return;
    }
    conn.reply(cmd, createResponse(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, `client does not serve request ${cmd.code}`));
  }

  /** Unregisters every group from every broker, then closes connections. */
  async shutdown(): Promise<void> {
    if (this.#shutdown) return;
    this.#shutdown = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    const addrs = this.allBrokerAddrs(false);
    const calls: Promise<unknown>[] = [];
    for (const addr of addrs) {
      for (const g of this.#producerGroups)
        calls.push(this.invokeBroker(addr, RequestCode.UNREGISTER_CLIENT, { clientID: this.clientId, producerGroup: g }).catch(() => {}));
      for (const g of this.#consumers.keys())
        calls.push(this.invokeBroker(addr, RequestCode.UNREGISTER_CLIENT, { clientID: this.clientId, consumerGroup: g }).catch(() => {}));
    }
    await Promise.all(calls);
    await this.remoting.close();
  }
}

export function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
