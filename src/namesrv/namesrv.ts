/**
 * NamesrvController: wires the name server together — the remoting server, the route registry,
 * the KV store, the broker expiry scan — and exposes plain info functions for the admin API.
 * The clock is injected so expiry can be tested without waiting two minutes.
 */
import { join } from "node:path";
import { scope } from "../common/log.ts";
import { RemotingServer } from "../remoting/index.ts";
import { KvConfigManager } from "./kv-config.ts";
import { NamesrvRequestProcessor } from "./processors.ts";
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
}

export class NamesrvController {
  readonly #opts: NamesrvOptions;
  readonly #log = scope("namesrv");
  readonly #routes = new RouteInfoManager();
  readonly #kv: KvConfigManager;
  readonly #server: RemotingServer;
  readonly #now: () => number;
  #scanTimer: ReturnType<typeof setInterval> | null = null;

  constructor(opts: NamesrvOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#kv = new KvConfigManager(opts.kvConfigPath || join(opts.storeDir, "namesrv", "kvConfig.json"));
    this.#server = new RemotingServer({
      host: opts.host,
      port: opts.port,
      frameSizeMaxBytes: opts.frameSizeMaxBytes,
      connectionBufferMaxBytes: opts.connectionBufferMaxBytes,
      log: scope("namesrv-remoting"),
    });
    const processor = new NamesrvRequestProcessor({
      routes: this.#routes,
      kv: this.#kv,
      orderMessageEnable: opts.orderMessageEnable,
      now: this.#now,
      log: this.#log,
    });
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
  };
}
