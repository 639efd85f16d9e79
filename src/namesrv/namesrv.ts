/**
 * NamesrvController: wires the name server together — the remoting server, the route registry,
 * the KV store, the broker expiry scan — and exposes plain info functions for the admin API.
 * The clock is injected so expiry can be tested without waiting two minutes.
 */
import { join } from "node:path";
import type { Config } from "../config/schema.ts";
import { aclHookOrThrow, type AclHook } from "../acl/index.ts";
import { nowOf, systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import { scope } from "../common/log.ts";
import type { TlsServerSide } from "../common/tls.ts";
import { RemotingServer, RequestStats, type ConfigUpdateOutcome, type RequestStatsSnapshot } from "../remoting/index.ts";
import type { RemotingNetwork } from "../remoting/transport.ts";
import { KvConfigManager } from "./kv-config.ts";
import { NamesrvRequestProcessor, type NamesrvProcessorDeps } from "./processors.ts";
import { RouteInfoManager } from "./route-info-manager.ts";
import type { ClusterInfo, TopicRouteData } from "../protocol/route.ts";

/** The name server's configuration: the schema's namesrv and remoting sections as loaded and checked. */
export interface NamesrvOptions {
  namesrv: Config["namesrv"];
  remoting: Config["remoting"];
  /** store.dir: kvConfig.json lives under it unless namesrv.kvConfigPath says otherwise. */
  storeDir: string;
  /**
   * The seams of docs/CONVENTIONS.md §6, as the broker's (BrokerOptions), for the in-process
   * fixture (./test-support.ts) and test/sim; production passes neither. `clock`: every time read
   * and timer of the name server — registration and heartbeat times, the liveness scan, the
   * brokers' silence (default the system clock). `network`: the listen port's sockets (default TCP).
   */
  clock?: Clock;
  network?: RemotingNetwork;
  /** GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG; without it both answer REQUEST_CODE_NOT_SUPPORTED. */
  configAccess?: NamesrvConfigAccess;
  /** The listen port's TLS mode and certificate (the process's TlsContext); absent = plaintext only. Not used with `network`. */
  tls?: TlsServerSide;
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
  cluster(): ClusterInfo;
  brokers(): LiveBrokerInfo[];
  topics(): string[];
  topicRoute(topic: string): TopicRouteData | null;
  /** Requests by code (counts, response codes, latency histogram). */
  requestStats(): RequestStatsSnapshot;
  /** Open remoting connections of the name server's port. */
  connections(): number;
  /** The admin API's writes: the functions the wire requests use. */
  admin?(): NamesrvAdmin;
}

/** The name server's admin operations, each what its wire request does (one implementation). */
export interface NamesrvAdmin {
  /** DELETE_TOPIC_IN_NAMESRV: the topic's routes (of one cluster's brokers when named); whether it had any. */
  deleteTopic(topic: string, clusterName?: string): boolean;
  /** UPDATE_NAMESRV_CONFIG with a properties text; absent when the process gave the name server no config access. */
  updateConfig?(properties: string, from: string): Promise<ConfigUpdateOutcome>;
}

/** What NamesrvController.reconfigure can change while it runs. */
export type NamesrvRuntimeOptions = Partial<Pick<Config["namesrv"], "brokerExpiredMs" | "brokerScanIntervalMs" | "orderMessageEnable">>;

export class NamesrvController {
  /** The settings a reload may change (a copy: reconfigure() changes it). */
  readonly #live: { brokerExpiredMs: number; brokerScanIntervalMs: number };
  /** The processor's deps, kept so a reload can change orderMessageEnable in place. */
  readonly #deps: NamesrvProcessorDeps;
  readonly #log = scope("namesrv");
  readonly #routes = new RouteInfoManager();
  readonly #kv: KvConfigManager;
  readonly #server: RemotingServer;
  readonly #requestStats: RequestStats;
  /** namesrv.aclEnable: the name server's write requests need an admin account (or a white-listed address). */
  readonly #acl: AclHook | undefined;
  readonly #clock: Clock;
  readonly #now: () => number;
  #scanTimer: TimerHandle | null = null;

  constructor(opts: NamesrvOptions) {
    const ns = opts.namesrv;
    this.#live = { brokerExpiredMs: ns.brokerExpiredMs, brokerScanIntervalMs: ns.brokerScanIntervalMs };
    this.#clock = opts.clock ?? systemClock;
    this.#now = nowOf(this.#clock);
    this.#requestStats = new RequestStats(this.#now);
    this.#kv = new KvConfigManager(ns.kvConfigPath || join(opts.storeDir, "namesrv", "kvConfig.json"));
    this.#acl = ns.aclEnable ? aclHookOrThrow(ns.aclFile, "namesrv", this.#clock) : undefined;
    this.#server = new RemotingServer({
      host: ns.listen.host,
      port: ns.listen.port,
      frameSizeMaxBytes: opts.remoting.frameSizeMaxBytes,
      connectionBufferMaxBytes: opts.remoting.connectionBufferMaxBytes,
      // maxConnections, idleTimeoutMs, frameTimeoutMs, partialFramesMaxBytes (ConnectionLimits).
      limits: opts.remoting,
      log: scope("namesrv-remoting"),
      hooks: this.#acl ? [this.#acl, this.#requestStats] : [this.#requestStats],
      network: opts.network,
      clock: this.#clock,
      ...(opts.tls ? { tls: opts.tls } : {}),
    });
    this.#deps = {
      routes: this.#routes,
      kv: this.#kv,
      orderMessageEnable: ns.orderMessageEnable,
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
    this.#scanTimer = this.#clock.setInterval(() => this.scanNotActiveBroker(), this.#live.brokerScanIntervalMs);
    return port;
  }

  /** Config reload: expiry and scan interval (the scan timer restarts), ORDER_TOPIC_CONFIG in routes. */
  reconfigure(patch: NamesrvRuntimeOptions): void {
    const scanChanged = patch.brokerScanIntervalMs !== undefined && patch.brokerScanIntervalMs !== this.#live.brokerScanIntervalMs;
    if (patch.brokerExpiredMs !== undefined) this.#live.brokerExpiredMs = patch.brokerExpiredMs;
    if (patch.brokerScanIntervalMs !== undefined) this.#live.brokerScanIntervalMs = patch.brokerScanIntervalMs;
    if (patch.orderMessageEnable !== undefined) this.#deps.orderMessageEnable = patch.orderMessageEnable;
    if (scanChanged && this.#scanTimer) {
      this.#clock.clearInterval(this.#scanTimer);
      this.#scanTimer = this.#clock.setInterval(() => this.scanNotActiveBroker(), this.#live.brokerScanIntervalMs);
    }
  }

  /** Drops brokers silent for longer than brokerExpiredMs (their connections stay open; Java's closes them). */
  scanNotActiveBroker(): void {
    for (const e of this.#routes.scanNotActiveBroker(this.#now(), this.#live.brokerExpiredMs)) {
      this.#log.warn(`broker ${e.brokerAddr} expired: no registration for ${this.#live.brokerExpiredMs} ms`);
    }
  }

  get port(): number {
    return this.#server.port;
  }

  /** SIGHUP: re-read the ACL file (it also reloads itself when it changes). */
  reloadFiles(): void {
    this.#acl?.reload();
  }

  stop(): void {
    this.#acl?.close();
    if (this.#scanTimer) this.#clock.clearInterval(this.#scanTimer);
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
    connections: () => this.#server.connectionCount,
    admin: () => {
      const config = this.#deps.config;
      return {
        deleteTopic: (topic, clusterName) => this.#routes.deleteTopic(topic, clusterName),
        ...(config ? { updateConfig: (properties: string, from: string) => config.update(properties, from) } : {}),
      };
    },
  };
}
