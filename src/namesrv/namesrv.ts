/**
 * NamesrvController: wires the name server together — the remoting server, the route registry,
 * the KV store, the broker expiry scan — and exposes plain info functions for the admin API.
 * The clock is injected so expiry can be tested without waiting two minutes.
 */
import { join } from "node:path";
import { scope } from "../common/log.ts";
import { RemotingServer, RequestStats, type ConfigUpdateOutcome, type RequestStatsSnapshot } from "../remoting/index.ts";
import { KvConfigManager } from "./kv-config.ts";
import { NamesrvRequestProcessor, type NamesrvProcessorDeps } from "./processors.ts";
import { RouteInfoManager, type TopicRouteData } from "./route-info-manager.ts";

export interface NamesrvOptions {
  host: string;
  port: number;
  brokerExpiredMs: number;
  brokerScanIntervalMs: number;
  orderMessageEnable: boolean;
  /** "" = <storeDir>/namesrv/kvConfig.json */
  kvConfigPath: string;
  storeDir: string;
  frameSizeMaxBytes: number;
  connectionBufferMaxBytes: number;
  now?: () => number;
  /** GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG; without it both answer REQUEST_CODE_NOT_SUPPORTED. */
  configAccess?: NamesrvConfigAccess;
}

/** The name server's configuration as RocketMQ's admin requests carry it (runtime-config.ts serves it). */
export interface NamesrvConfigAccess {
  /** GET_NAMESRV_CONFIG: `key=value` lines. */
  get(): { properties: string };
  /** UPDATE_NAMESRV_CONFIG: apply a properties text; a refusal names the keys and why. */
  update(properties: string, from: string): Promise<ConfigUpdateOutcome>;
}

export interface LiveBrokerInfo {
  brokerName: string;
  brokerId: number;
  brokerAddr: string;
  clusterName: string;
  haServerAddr: string;
  lastUpdateTimestamp: number;
  silentForMs: number;
  dataVersion: { counter: number; timestamp: number };
}

/** What the admin API and tests may read; nothing else of the name server is visible. */
export interface NamesrvInfo {
  cluster(): ReturnType<RouteInfoManager["getClusterInfo"]>;
  brokers(): LiveBrokerInfo[];
  topics(): string[];
  topicRoute(topic: string): TopicRouteData | null;
  /** Requests by code (counts, response codes, latency histogram). */
  requestStats(): RequestStatsSnapshot;
}

/** What NamesrvController.reconfigure can change while it runs. */
export type NamesrvRuntimeOptions = Partial<Pick<NamesrvOptions, "brokerExpiredMs" | "brokerScanIntervalMs" | "orderMessageEnable">>;

export class NamesrvController {
  readonly #opts: NamesrvOptions;
  /** The processor's deps, kept so a reload can change orderMessageEnable in place. */
  readonly #deps: NamesrvProcessorDeps;
  readonly #log = scope("namesrv");
  readonly #routes = new RouteInfoManager();
  readonly #kv: KvConfigManager;
  readonly #server: RemotingServer;
  readonly #requestStats = new RequestStats();
  readonly #now: () => number;
  #scanTimer: ReturnType<typeof setInterval> | null = null;

  constructor(opts: NamesrvOptions) {
    // A copy: reconfigure() changes it.
    this.#opts = { ...opts };
    this.#now = opts.now ?? Date.now;
    this.#kv = new KvConfigManager(opts.kvConfigPath || join(opts.storeDir, "namesrv", "kvConfig.json"));
    this.#server = new RemotingServer({
      host: opts.host,
      port: opts.port,
      frameSizeMaxBytes: opts.frameSizeMaxBytes,
      connectionBufferMaxBytes: opts.connectionBufferMaxBytes,
      log: scope("namesrv-remoting"),
      hooks: [this.#requestStats],
    });
    this.#deps = {
      routes: this.#routes,
      kv: this.#kv,
      orderMessageEnable: opts.orderMessageEnable,
      now: this.#now,
      log: this.#log,
      ...(opts.configAccess ? { config: opts.configAccess } : {}),
    };
    const processor = new NamesrvRequestProcessor(this.#deps);
    this.#server.registerAll(processor.codes, processor);
    this.#server.onConnectionClose((conn) => {
      for (const addr of this.#routes.onConnectionClosed(conn.id)) {
        this.#log.info(`broker ${addr} removed: its connection ${conn.remoteAddress} closed`);
      }
    });
  }

  /** Loads the KV store and binds the port. Returns the bound port. */
  start(): number {
    this.#kv.load();
    const port = this.#server.start();
    this.#scanTimer = setInterval(() => this.scanNotActiveBroker(), this.#opts.brokerScanIntervalMs);
    return port;
  }

  /** Config reload: expiry and scan interval (the scan timer restarts), ORDER_TOPIC_CONFIG in routes. */
  reconfigure(patch: NamesrvRuntimeOptions): void {
    const scanChanged = patch.brokerScanIntervalMs !== undefined && patch.brokerScanIntervalMs !== this.#opts.brokerScanIntervalMs;
    Object.assign(this.#opts, patch);
    if (patch.orderMessageEnable !== undefined) this.#deps.orderMessageEnable = patch.orderMessageEnable;
    if (scanChanged && this.#scanTimer) {
      clearInterval(this.#scanTimer);
      this.#scanTimer = setInterval(() => this.scanNotActiveBroker(), this.#opts.brokerScanIntervalMs);
    }
  }

  /** Drops brokers silent for longer than brokerExpiredMs (and closes their connections). */
  scanNotActiveBroker(): void {
    for (const e of this.#routes.scanNotActiveBroker(this.#now(), this.#opts.brokerExpiredMs)) {
      this.#log.warn(`broker ${e.brokerAddr} expired: no registration for ${this.#opts.brokerExpiredMs} ms`);
    }
  }

  get port(): number {
    return this.#server.port;
  }

  stop(): void {
    if (this.#scanTimer) clearInterval(this.#scanTimer);
    this.#scanTimer = null;
    this.#server.stop();
  }

  readonly info: NamesrvInfo = {
    cluster: () => this.#routes.getClusterInfo(),
    brokers: () => {
      const now = this.#now();
      return this.#routes.getLiveBrokers().map((b) => ({
        brokerName: b.brokerName,
        brokerId: b.brokerId,
        brokerAddr: b.brokerAddr,
        clusterName: b.clusterName,
        haServerAddr: b.haServerAddr,
        lastUpdateTimestamp: b.lastUpdateTimestamp,
        silentForMs: now - b.lastUpdateTimestamp,
        dataVersion: b.dataVersion,
      }));
    },
    topics: () => this.#routes.getAllTopics(),
    topicRoute: (topic) => this.#routes.getTopicRoute(topic),
    requestStats: () => this.#requestStats.snapshot(),
  };
}
