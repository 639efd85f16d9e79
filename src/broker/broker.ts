/**
 * BrokerController: wires one broker together — the MessageStore and metadata in the store dir,
 * the remoting server on the listen port and the "VIP" channel (listen − 2), the request
 * processors, client registries, long polling, name server registration — and exposes plain
 * info functions for the admin API. Start order: bind ports → open the store → register.
 */
import { networkInterfaces } from "node:os";
import type { Config } from "../config/schema.ts";
import { nowOf, systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import { scope, type Logger } from "../common/log.ts";
import type { TlsMaterial } from "../common/tls.ts";
import { MessageStore, parseHostAddress, type StoreRuntimeOptions } from "../commitlog/index.ts";
import type { StoreDisk } from "../commitlog/disk.ts";
import { ConsumerOffsetManager, DelayOffsetManager, SubscriptionGroupManager, TopicConfigManager, type SubscriptionGroupConfig } from "./metadata.ts";
import { type TopicConfig } from "../protocol/topics.ts";
import {
  createRequest,
  RemotingClient,
  RemotingServer,
  REMOTING_CLIENT_DEFAULTS,
  RequestCode,
  RequestStats,
  ResponseCode,
  type ConfigUpdateOutcome,
  type RequestProcessor,
  type RequestStatsSnapshot,
} from "../remoting/index.ts";
import type { RemotingNetwork } from "../remoting/transport.ts";
import { aclHookOrThrow, type AclHook } from "../acl/index.ts";
import { ConsumerManager, ProducerManager, type ClientChannel } from "./client-manager.ts";
import type { BrokerContext, BrokerSettings, BrokerSettingsInfo } from "./context.ts";
import { tlsTransport, type HaTransport } from "../ha/index.ts";
import { PullRequestHoldService } from "./long-polling.ts";
import { BrokerStats } from "./stats.ts";
import { brokerMetricsState, StoreTimeCache, type BrokerMetricsState } from "./metrics-state.ts";
import { NamesrvRegistration, PendingRoutes } from "./namesrv-registration.ts";
import { EpochCacheProcessor } from "./processors/epoch-cache.ts";
import { AclAdminProcessor } from "./processors/acl-admin.ts";
import { AdminProcessor } from "./processors/admin.ts";
import { BrokerToClientProcessor } from "./processors/broker-to-client.ts";
import { ClientManageProcessor } from "./processors/client-manage.ts";
import { ConsumerManageProcessor } from "./processors/consumer-manage.ts";
import { PullMessageProcessor } from "./processors/pull-message.ts";
import { ReplyMessageProcessor } from "./processors/reply-message.ts";
import { QueryMessageProcessor } from "./processors/query-message.ts";
import { EndTransactionProcessor } from "./processors/end-transaction.ts";
import { SendMessageProcessor } from "./processors/send-message.ts";
import { TopicAdminProcessor } from "./processors/topic-admin.ts";
import { brokerAdmin, type BrokerAdmin } from "./admin-api.ts";
import { brokerMessaging, type BrokerMessaging } from "./messaging-api.ts";
import { parseDelayLevels } from "../protocol/delay-levels.ts";
import { ensureScheduleTopic, ScheduleMessageService } from "./schedule/schedule-message-service.ts";
import { TransactionalMessageService, type TransactionStats } from "./transaction/transactional-message-service.ts";
import { clientsView, trafficCounters, type ClientsView, type TrafficCounters } from "./dashboard-info.ts";
import { ReplicaRole, type ReplicationInfo } from "./replica-role.ts";
import { PopService } from "./pop/pop-service.ts";
import { PopLongPolling } from "./pop/pop-long-polling.ts";
import { popConsumption, type PopConsumption } from "./pop/pop-view.ts";
import { PopMessageProcessor } from "./processors/pop-message.ts";
import { AckMessageProcessor } from "./processors/ack-message.ts";
import { MessageRequestModeManager } from "./message-request-mode.ts";
import { QueryAssignmentProcessor } from "./processors/query-assignment.ts";
import { TopicRouteInfoManager } from "./topic-route-info.ts";
import type { MessageRequestMode } from "../protocol/message-request-mode.ts";
import { isReadable } from "../protocol/permission.ts";

/**
 * The broker's configuration: the schema's broker, store and remoting sections exactly as loaded
 * and checked (src/config/schema.ts is the one place a key, its default and its range are named).
 */
export interface BrokerOptions {
  broker: Config["broker"];
  store: Config["store"];
  remoting: Config["remoting"];
  /**
   * The seams of docs/CONVENTIONS.md §6, for the in-process fixture (src/broker/test-support.ts)
   * and test/sim; production passes none of them. `clock`: the time and every timer of the broker
   * and its store (default the system clock). `network`: the remoting sockets — listen and VIP
   * ports, name servers, a slave's master (default TCP). `haTransport`: the HA link (default TCP).
   * `disk`: the store's files (default the real disk; the metadata files stay on the real disk
   * under store.dir).
   */
  clock?: Clock;
  network?: RemotingNetwork;
  haTransport?: HaTransport;
  disk?: StoreDisk;
  /** GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG (without it both answer REQUEST_CODE_NOT_SUPPORTED). */
  configAccess?: BrokerConfigAccess;
  /**
   * TLS (the process's TlsContext, built from the tls section): the mode of the listen, VIP and
   * HA ports, and whether registration, slave sync and the HA link connect with TLS. Absent:
   * plaintext everywhere. Not used with `network` / `haTransport`.
   */
  tls?: TlsMaterial;
}

/**
 * What the broker can change while it runs (config reload, UPDATE_BROKER_CONFIG). Deciding what
 * changed and logging it is the caller's job (src/runtime-config.ts); this only applies.
 */
export interface BrokerRuntimeOptions {
  /** The name servers to register with from now on (standalone: already resolved to its own). */
  namesrvAddr?: string[];
  slaveReadEnable?: boolean;
  /** Accept SQL92 subscriptions and filter by message properties (RocketMQ's enablePropertyFilter). */
  enablePropertyFilter?: boolean;
  haSlaveTimeoutMs?: number;
  autoCreateTopicEnable?: boolean;
  defaultTopicQueueNums?: number;
  registerNameServerPeriodMs?: number;
  maxMessageSizeBytes?: number;
  pullHoldMaxMs?: number;
  channelExpiredMs?: number;
  transactionCheckIntervalMs?: number;
  transactionTimeOutMs?: number;
  transactionCheckMax?: number;
  defaultMessageRequestMode?: MessageRequestMode;
  defaultPopShareQueueNum?: number;
  serverLoadBalancerEnable?: boolean;
  store?: StoreRuntimeOptions;
}

/** The broker configuration as the admin requests see it, owned by whoever owns the config. */
export interface BrokerConfigAccess {
  /** GET_BROKER_CONFIG: `key=value` lines and the DataVersion JSON. */
  get(): { properties: string; version: string };
  /** UPDATE_BROKER_CONFIG: apply a properties text; a refusal names the keys and why. */
  update(properties: string, from: string): Promise<ConfigUpdateOutcome>;
}

/** The context's members loaded from `<storeDir>/config/`. */
type Metadata = "topics" | "consumerOffsets" | "delayOffsets" | "groups" | "requestModes";

/** How long a request that created a topic waits for its registration (PendingRoutes): under the clients' 3 s timeouts. */
const ROUTE_WAIT_MAX_MS = 2000;

/** The VIP channel serves everything but pulls and pops (RocketMQ's fastRemotingServer). */
const NOT_ON_VIP = new Set<number>([
  RequestCode.PULL_MESSAGE,
  RequestCode.LITE_PULL_MESSAGE,
  RequestCode.POP_MESSAGE,
  RequestCode.PEEK_MESSAGE,
  RequestCode.NOTIFICATION,
  RequestCode.POLLING_INFO,
]);
/** POP's revive queues and revive tick (RocketMQ 5.3's reviveQueueNum and reviveInterval). */
const REVIVE_QUEUE_NUM = 8;
const REVIVE_INTERVAL_MS = 1000;

export interface BrokerInfo {
  /** Producer and consumer groups with their member connections (the dashboard, ./dashboard-info.ts). */
  clients(): ClientsView;
  /** Messages stored per topic and pulled per topic@group since start (the dashboard's charts sample them). */
  traffic(): TrafficCounters;
  replication(): ReplicationInfo;
  settings(): BrokerSettingsInfo;
  topics(): TopicConfig[];
  topic(name: string): TopicConfig | undefined;
  queueOffsets(topic: string): { queueId: number; minOffset: number; maxOffset: number }[];
  groupOffsets(group: string): { topic: string; queueId: number; consumerOffset: number; brokerOffset: number; lag: number }[];
  consumerGroups(): string[];
  /** A subscription group's config (subscriptionGroup.json), if there is one. */
  group(name: string): SubscriptionGroupConfig | undefined;
  store(): { minPhyOffset: number; maxPhyOffset: number; flushedOffset: number; diskUsageRatio: number };
  /** Half/op queue sizes, check cursors and counters of the transaction service. */
  transactions(): TransactionStats;
  /** Requests by code over the listen and VIP ports (counts, response codes, latency histogram). */
  requestStats(): RequestStatsSnapshot;
  /**
   * POP consumption per (topic, group) consuming by POP or with messages in flight (of `group`
   * only, when given): in flight, ready, and each checkpoint's invisible-until (./pop/pop-view.ts).
   */
  popConsumption(group?: string): PopConsumption[];
  /** What GET /metrics reads, in one call from memory (contract: ./metrics-state.ts). */
  metrics(): BrokerMetricsState;
  /** The admin operations (writes, test sends, message queries) of the admin API: ./admin-api.ts. */
  admin?(): BrokerAdmin;
}

export class BrokerController {
  readonly #o: BrokerOptions;
  readonly #log: Logger = scope("broker");
  readonly #clock: Clock;
  readonly #now: () => number;
  readonly #server: RemotingServer;
  readonly #vipServer: RemotingServer;
  readonly #requestStats = new RequestStats();
  /** Store times of first unconsumed messages, kept between scrapes (./metrics-state.ts). */
  readonly #metricsTimes = new StoreTimeCache();
  /** broker.aclEnable: RocketMQ's plain ACL, checked before any processor sees a request. */
  readonly #acl: AclHook | undefined;
  readonly #client: RemotingClient;
  #ctx: BrokerContext | null = null;
  /** The role in force, its transitions and the replication that goes with it (./replica-role.ts). */
  readonly #role: ReplicaRole;
  #admin: BrokerAdmin | null = null;
  #messaging: BrokerMessaging | null = null;
  #registration: NamesrvRegistration | null = null;
  readonly #pendingRoutes: PendingRoutes;
  #schedule: ScheduleMessageService | null = null;
  /** POP consumption's in-flight state and revive service, and its parked pops (./pop/). */
  #pop: PopService | null = null;
  #popPolling: PopLongPolling | null = null;
  /** Parked NOTIFICATIONs: apart from pops, as in Java (POLLING_INFO counts pops only). */
  #notifyPolling: PopLongPolling | null = null;
  #tx: TransactionalMessageService | null = null;
  #timers: TimerHandle[] = [];
  #ports = { listen: 0, vip: 0, ha: 0 };
  /** The name servers given at start (failover registers with them once the replica id is known). */
  #namesrvAddr: string[] = [];
  /** Values a reload may change after start, read where they are used. */
  readonly #live: { haSlaveTimeoutMs: number; channelExpiredMs: number };
  #expiryTimer: TimerHandle | null = null;

  constructor(o: BrokerOptions) {
    this.#o = o;
    this.#clock = o.clock ?? systemClock;
    this.#pendingRoutes = new PendingRoutes(this.#clock, ROUTE_WAIT_MAX_MS);
    this.#now = nowOf(this.#clock);
    this.#live = { haSlaveTimeoutMs: o.broker.haSlaveTimeoutMs, channelExpiredMs: o.broker.channelExpiredMs };
    this.#acl = o.broker.aclEnable ? aclHookOrThrow(o.broker.aclFile, "broker", this.#clock) : undefined;
    const serverOpts = {
      host: o.broker.listen.host,
      frameSizeMaxBytes: o.remoting.frameSizeMaxBytes,
      connectionBufferMaxBytes: o.remoting.connectionBufferMaxBytes,
      // maxConnections, idleTimeoutMs, frameTimeoutMs, partialFramesMaxBytes (ConnectionLimits).
      limits: o.remoting,
      // ACL first: a refused request is counted by the stats hook with its refusal.
      hooks: this.#acl ? [this.#acl, this.#requestStats] : [this.#requestStats],
      clock: this.#clock,
      network: o.network,
      ...(o.tls ? { tls: o.tls } : {}),
    };
    this.#server = new RemotingServer({ ...serverOpts, port: o.broker.listen.port, log: scope("broker-remoting") });
    // With an ephemeral listen port the VIP channel gets its own ephemeral port.
    this.#vipServer = new RemotingServer({
      ...serverOpts,
      port: o.broker.listen.port === 0 ? 0 : o.broker.listen.port - 2,
      log: scope("broker-vip"),
    });
    const tls = o.tls;
    this.#client = new RemotingClient({
      ...REMOTING_CLIENT_DEFAULTS,
      log: scope("broker-outer"),
      clock: this.#clock,
      network: o.network,
      ...(tls ? { tls: () => tls.client() } : {}),
    });
    this.#role = new ReplicaRole({
      broker: o.broker,
      storeDir: o.store.dir,
      requestTimeoutMs: o.remoting.requestTimeoutMs,
      clock: this.#clock,
      client: this.#client,
      haTransport: o.haTransport ?? (tls ? tlsTransport(tls, () => tls.client()) : undefined),
      haSlaveTimeoutMs: () => this.#live.haSlaveTimeoutMs,
    });
  }

  /** Binds the listen, VIP and HA ports; throws (nothing left bound) if one is taken. */
  bind(): { listen: number; vip: number; ha: number } {
    const listen = this.#server.start();
    let vip = 0;
    try {
      vip = this.#vipServer.start();
      this.#ports = { listen, vip, ha: this.#role.bindHa() };
    } catch (e) {
      this.#server.stop();
      if (vip) this.#vipServer.stop();
      throw e;
    }
    return this.#ports;
  }

  get ports(): { listen: number; vip: number; ha: number } {
    return this.#ports;
  }

  get brokerAddr(): string {
    return `${this.#advertisedIp()}:${this.#ports.listen}`;
  }

  #advertisedIp(): string {
    if (this.#o.broker.brokerIP1) return this.#o.broker.brokerIP1;
    if (this.#o.broker.listen.host !== "0.0.0.0" && this.#o.broker.listen.host !== "::") return this.#o.broker.listen.host;
    for (const list of Object.values(networkInterfaces())) {
      for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
    }
    return "127.0.0.1";
  }

  /**
   * Opens the store (recovering it), loads metadata, wires the processors and starts the
   * services. Call after bind(). Throws if the store cannot be opened.
   */
  start(namesrvAddr: string[] = this.#o.broker.namesrvAddr): void {
    const settings = this.#settings();
    // Built before the store opens: recovery dispatch needs its tag codes (due times).
    const schedule = this.#buildSchedule();
    const store = this.#openStore(settings, schedule);
    const ctx = this.#buildContext(settings, store, this.#loadMetadata());
    this.#namesrvAddr = namesrvAddr;
    this.#ctx = ctx;
    const tx = this.#buildTransactions(ctx, schedule);
    this.#registerProcessors(ctx, schedule, tx);
    this.#startServices(ctx, schedule, tx);
    if (this.#o.broker["failover.enable"]) this.#joinElection(namesrvAddr);
    else this.#startRegistration(ctx, namesrvAddr, this.#o.broker.brokerId);
  }

  #settings(): BrokerSettings {
    const b = this.#o.broker;
    return {
      clusterName: b.brokerClusterName,
      brokerName: b.brokerName,
      brokerAddr: this.brokerAddr,
      storeHost: parseHostAddress(this.brokerAddr),
      autoCreateTopicEnable: b.autoCreateTopicEnable,
      autoCreateSubscriptionGroup: true,
      defaultTopicQueueNums: b.defaultTopicQueueNums,
      maxMessageSizeBytes: b.maxMessageSizeBytes,
      regionId: "DefaultRegion",
      traceOn: true,
      pullHoldMaxMs: b.pullHoldMaxMs,
      slaveReadEnable: b.slaveReadEnable,
      enablePropertyFilter: b.enablePropertyFilter,
      defaultMessageRequestMode: b.defaultMessageRequestMode,
      defaultPopShareQueueNum: b.defaultPopShareQueueNum,
      serverLoadBalancerEnable: b.serverLoadBalancerEnable,
      timerMaxDelayMs: b.timerMaxDelaySec * 1000,
    };
  }

  #buildSchedule(): ScheduleMessageService {
    const levels = parseDelayLevels(this.#o.broker.messageDelayLevel);
    if ("invalid" in levels) throw new Error(`broker.messageDelayLevel: ${levels.invalid}`);
    return new ScheduleMessageService({
      levelDelaysMs: levels,
      timerMaxDelaySec: this.#o.broker.timerMaxDelaySec,
      clock: this.#clock,
      log: scope("schedule"),
    });
  }

  #openStore(settings: BrokerSettings, schedule: ScheduleMessageService): MessageStore {
    const o = this.#o;
    const store = MessageStore.open({
      ...o.store,
      segmentBytes: o.store.commitLogSegmentBytes,
      storeHost: settings.storeHost,
      readOnly: this.#role.isSlave,
      maxMessageSizeBytes: o.broker.maxMessageSizeBytes,
      tagsCodeFor: schedule.tagsCodeFor,
      // Every message that reaches a ConsumeQueue, by any writer, wakes the pulls parked for it here.
      messageArriving: {
        arriving: (topic, queueId, queueOffset, tagsCode) => {
          this.#ctx?.hold.notifyMessageArriving(topic, queueId, queueOffset, tagsCode);
          this.#popPolling?.arriving(topic, queueId, tagsCode);
          this.#notifyPolling?.arriving(topic, queueId, tagsCode);
        },
      },
      // The role streams appends, makes SYNC_MASTER puts wait for replicas and fences (./replica-role.ts).
      replication: this.#role,
      clock: this.#clock,
      ...(o.disk ? { disk: o.disk } : {}),
    });
    for (const p of store.recovery?.problems ?? []) this.#log.warn(`store recovery: ${p}`);
    return store;
  }

  /** topics.json, consumerOffset.json, delayOffset.json, subscriptionGroup.json, messageRequestMode.json, and the system topics. */
  #loadMetadata(): Pick<BrokerContext, Metadata> {
    const b = this.#o.broker;
    const dir = this.#o.store.dir;
    const now = this.#now;
    const topics = new TopicConfigManager({ dir, now });
    const consumerOffsets = new ConsumerOffsetManager({ dir, now });
    const delayOffsets = new DelayOffsetManager({ dir, now });
    const groups = new SubscriptionGroupManager({ dir, now });
    const requestModes = new MessageRequestModeManager({ dir, now });
    for (const m of [topics, consumerOffsets, delayOffsets, groups, requestModes]) for (const p of m.load()) this.#log.warn(`metadata: ${p}`);
    topics.ensureSystemTopics({
      clusterName: b.brokerClusterName,
      brokerName: b.brokerName,
      autoCreateTopicEnable: b.autoCreateTopicEnable,
      defaultTopicQueueNums: b.defaultTopicQueueNums,
    });
    ensureScheduleTopic(topics);
    return { topics, consumerOffsets, delayOffsets, groups, requestModes };
  }

  #buildContext(settings: BrokerSettings, store: MessageStore, meta: Pick<BrokerContext, Metadata>): BrokerContext {
    const hold = new PullRequestHoldService({
      holdMaxMs: settings.pullHoldMaxMs,
      checkIntervalMs: 500,
      maxHeldPerConnection: 4096,
      clock: this.#clock,
    });
    const { topics } = meta;
    return {
      settings,
      role: this.#role,
      store,
      ...meta,
      consumers: new ConsumerManager((group, members) => this.#notifyConsumerIdsChanged(group, members)),
      producers: new ProducerManager(),
      hold,
      stats: new BrokerStats({ now: this.#now }),
      log: this.#log,
      now: this.#now,
      topicsChanged: () => this.#registration?.topicsChanged(),
      createTopicIfAbsent: (topic, queueNums, perm) => {
        const existing = topics.get(topic);
        if (existing) return existing;
        const cfg: TopicConfig = {
          topicName: topic,
          readQueueNums: queueNums,
          writeQueueNums: queueNums,
          perm,
          topicFilterType: "SINGLE_TAG",
          topicSysFlag: 0,
          order: false,
        };
        const problem = topics.upsert(cfg);
        if (problem) throw new Error(`cannot create topic ${topic}: ${problem}`);
        this.#log.info(`created topic ${topic} (${queueNums} queues, perm ${perm})`);
        const registered = this.#registration?.topicsChanged();
        if (registered) this.#pendingRoutes.track(topic, registered);
        return cfg;
      },
      untilRoutable: (topic, other) => this.#pendingRoutes.until(topic, other),
    };
  }

  #buildTransactions(ctx: BrokerContext, schedule: ScheduleMessageService): TransactionalMessageService {
    const o = this.#o;
    const tx = new TransactionalMessageService(
      {
        checkIntervalMs: o.broker.transactionCheckIntervalMs,
        transactionTimeOutMs: o.broker.transactionTimeOutMs,
        transactionCheckMax: o.broker.transactionCheckMax,
        maxAgeMs: o.store.fileReservedTimeHours * 3_600_000,
        clock: this.#clock,
      },
      scope("transaction"),
      (req, props) => schedule.divert(req, props),
    );
    tx.attach(ctx);
    this.#tx = tx;
    return tx;
  }

  #registerProcessors(ctx: BrokerContext, schedule: ScheduleMessageService, tx: TransactionalMessageService): void {
    const send = new SendMessageProcessor(ctx, schedule, tx);
    // The admin API's operations run the processors' own functions (one implementation).
    this.#admin = brokerAdmin(ctx, send, this.#o.configAccess);
    // So do the gRPC endpoint's (src/grpc/): a second protocol in front of the same processors.
    this.#messaging = brokerMessaging(ctx, send);
    const pop = this.#popProcessors(ctx);
    const processors: [readonly number[], RequestProcessor][] = [
      [SendMessageProcessor.CODES, send],
      [ReplyMessageProcessor.CODES, new ReplyMessageProcessor(ctx)],
      [EndTransactionProcessor.CODES, new EndTransactionProcessor(ctx, tx)],
      [PullMessageProcessor.CODES, new PullMessageProcessor(ctx)],
      [ClientManageProcessor.CODES, new ClientManageProcessor(ctx)],
      [ConsumerManageProcessor.CODES, new ConsumerManageProcessor(ctx)],
      [TopicAdminProcessor.CODES, new TopicAdminProcessor(ctx)],
      [QueryMessageProcessor.CODES, new QueryMessageProcessor(ctx)],
      [AdminProcessor.CODES, new AdminProcessor(ctx, ctx.stats, undefined, this.#o.configAccess, this.#pop?.table)],
      [BrokerToClientProcessor.CODES, new BrokerToClientProcessor(ctx)],
      [AclAdminProcessor.CODES, new AclAdminProcessor(ctx, this.#acl)],
      [EpochCacheProcessor.CODES, new EpochCacheProcessor(() => this.#role.epochCache())],
      ...pop,
      [QueryAssignmentProcessor.CODES, new QueryAssignmentProcessor(ctx, this.#topicRoutes(ctx))],
    ];
    for (const [codes, p] of processors) {
      this.#server.registerAll(codes, p);
      this.#vipServer.registerAll(
        codes.filter((c) => !NOT_ON_VIP.has(c)),
        p,
      );
    }
    for (const s of [this.#server, this.#vipServer]) {
      s.onConnectionClose((conn) => {
        ctx.consumers.onConnectionClosed(conn);
        ctx.producers.onConnectionClosed(conn);
      });
    }
  }

  /** POP consumption (./pop/): its processors over one in-flight state and one set of parked pops. */
  #popProcessors(ctx: BrokerContext): [readonly number[], RequestProcessor][] {
    const storeDir = this.#o.store.dir;
    const pop = new PopService(ctx, { reviveQueueNum: REVIVE_QUEUE_NUM, reviveIntervalMs: REVIVE_INTERVAL_MS, clock: this.#clock, storeDir });
    // RocketMQ 5.3's popPollingSize and maxPopPollingSize; its service ticks every 20 ms.
    const polling = () => new PopLongPolling({ clock: this.#clock, maxPerKey: 1024, maxTotal: 100_000, checkIntervalMs: 20 });
    this.#pop = pop;
    this.#popPolling = polling();
    this.#notifyPolling = polling();
    return [
      [PopMessageProcessor.CODES, new PopMessageProcessor(ctx, pop, this.#popPolling, this.#notifyPolling)],
      [AckMessageProcessor.CODES, new AckMessageProcessor(ctx, pop, (t, g, q) => this.#popPolling?.wakeNext(t, g, q))],
    ];
  }

  /** QUERY_ASSIGNMENT's view of a topic's queues on every broker: the name servers' routes, else this broker's own. */
  #topicRoutes(ctx: BrokerContext): TopicRouteInfoManager {
    return new TopicRouteInfoManager({
      client: this.#client,
      namesrvs: () => this.#registration?.namesrvs ?? this.#namesrvAddr,
      localQueues: (topic) => {
        const tc = ctx.topics.get(topic);
        if (tc === undefined) return null;
        const n = isReadable(tc.perm) ? tc.readQueueNums : 0;
        return Array.from({ length: n }, (_, queueId) => ({ topic, brokerName: ctx.settings.brokerName, queueId }));
      },
      clock: this.#clock,
      log: this.#log,
    });
  }

  /** Long polling, replication, delayed delivery, transaction check-backs, client expiry, offset persistence. */
  #startServices(ctx: BrokerContext, schedule: ScheduleMessageService, tx: TransactionalMessageService): void {
    ctx.hold.start();
    this.#role.startReplication(ctx);
    this.#schedule = schedule;
    schedule.start(ctx); // not on a slave (it checks the role)
    this.#popPolling?.start();
    this.#notifyPolling?.start();
    this.#pop?.start(); // not on a slave (it checks the role)
    // Check-backs come from the master only; a slave's half queue is a replica.
    tx.start();
    this.#startExpiryScan();
    this.#timers.push(this.#clock.setInterval(() => void this.#persistOffsetsAsync(), 5000));
  }

  #startRegistration(ctx: BrokerContext, namesrvAddr: string[], brokerId: number): void {
    const o = this.#o;
    this.#registration = new NamesrvRegistration({
      client: this.#client,
      namesrvs: namesrvAddr,
      identity: {
        clusterName: o.broker.brokerClusterName,
        brokerAddr: this.brokerAddr,
        brokerName: o.broker.brokerName,
        brokerId,
        haServerAddr: `${this.#advertisedIp()}:${this.#ports.ha}`,
      },
      topics: () => ctx.topics.wrapper(),
      frameSizeMaxBytes: o.remoting.frameSizeMaxBytes,
      periodMs: o.broker.registerNameServerPeriodMs,
      log: this.#log,
      clock: this.#clock,
      // A slave (fixed roles) learns its master from the name servers.
      onResult: (r) => {
        if (r.ok && r.masterAddr) this.#role.masterRegistered(r.masterAddr, r.haServerAddr);
      },
    });
    this.#registration.start();
  }

  /** Closes producer/consumer connections silent for channelExpiredMs (restarted when that changes). */
  #startExpiryScan(): void {
    const ctx = this.#need();
    if (this.#expiryTimer) this.#clock.clearInterval(this.#expiryTimer);
    const expiredMs = this.#live.channelExpiredMs;
    this.#expiryTimer = this.#clock.setInterval(
      () => {
        const now = this.#now();
        for (const c of [...ctx.consumers.scanExpired(now, expiredMs), ...ctx.producers.scanExpired(now, expiredMs)]) c.close();
      },
      Math.min(10_000, expiredMs),
    );
  }

  /**
   * Applies runtime-changeable settings to the running broker (config reload,
   * UPDATE_BROKER_CONFIG). Only the fields present change. Resolves once a name server change
   * has registered with the new ones and unregistered from the dropped ones.
   */
  async reconfigure(p: BrokerRuntimeOptions): Promise<void> {
    const ctx = this.#need();
    const s = ctx.settings;
    if (p.maxMessageSizeBytes !== undefined) s.maxMessageSizeBytes = p.maxMessageSizeBytes;
    if (p.slaveReadEnable !== undefined) s.slaveReadEnable = p.slaveReadEnable;
    if (p.enablePropertyFilter !== undefined) s.enablePropertyFilter = p.enablePropertyFilter;
    if (p.defaultTopicQueueNums !== undefined) s.defaultTopicQueueNums = p.defaultTopicQueueNums;
    if (p.defaultMessageRequestMode !== undefined) s.defaultMessageRequestMode = p.defaultMessageRequestMode;
    if (p.defaultPopShareQueueNum !== undefined) s.defaultPopShareQueueNum = p.defaultPopShareQueueNum;
    if (p.serverLoadBalancerEnable !== undefined) s.serverLoadBalancerEnable = p.serverLoadBalancerEnable;
    if (p.autoCreateTopicEnable !== undefined) {
      s.autoCreateTopicEnable = p.autoCreateTopicEnable;
      // Clients find a broker for a new topic through TBW102's route; it exists only when auto
      // creation is on, so turning it on creates it (a slave's topics follow its master).
      if (p.autoCreateTopicEnable && !ctx.role.isSlave) {
        const added = ctx.topics.ensureSystemTopics({
          clusterName: s.clusterName,
          brokerName: s.brokerName,
          autoCreateTopicEnable: true,
          defaultTopicQueueNums: s.defaultTopicQueueNums,
        });
        if (added.length > 0) this.#registration?.topicsChanged();
      }
    }
    if (p.pullHoldMaxMs !== undefined) {
      s.pullHoldMaxMs = p.pullHoldMaxMs;
      ctx.hold.setHoldMaxMs(p.pullHoldMaxMs);
    }
    if (p.haSlaveTimeoutMs !== undefined) this.#live.haSlaveTimeoutMs = p.haSlaveTimeoutMs;
    if (p.channelExpiredMs !== undefined && p.channelExpiredMs !== this.#live.channelExpiredMs) {
      this.#live.channelExpiredMs = p.channelExpiredMs;
      if (this.#expiryTimer) this.#startExpiryScan();
    }
    const tx: Parameters<TransactionalMessageService["reconfigure"]>[0] = {};
    if (p.transactionCheckIntervalMs !== undefined) tx.checkIntervalMs = p.transactionCheckIntervalMs;
    if (p.transactionTimeOutMs !== undefined) tx.transactionTimeOutMs = p.transactionTimeOutMs;
    if (p.transactionCheckMax !== undefined) tx.transactionCheckMax = p.transactionCheckMax;
    if (p.store?.fileReservedTimeHours !== undefined) tx.maxAgeMs = p.store.fileReservedTimeHours * 3_600_000;
    this.#tx?.reconfigure(tx);
    const store: StoreRuntimeOptions = { ...p.store };
    if (p.maxMessageSizeBytes !== undefined) store.maxMessageSizeBytes = p.maxMessageSizeBytes;
    ctx.store.reconfigure(store);
    if (p.registerNameServerPeriodMs !== undefined) this.#registration?.setPeriodMs(p.registerNameServerPeriodMs);
    if (p.namesrvAddr !== undefined && this.#registration) {
      const { added, removed } = await this.#registration.setNamesrvs(p.namesrvAddr);
      if (added.length > 0 || removed.length > 0) {
        this.#log.info(`name servers: registered with [${added.join(", ")}], unregistered from [${removed.join(", ")}]`);
      }
    }
  }

  /** broker.failover.enable: the election decides the role (./replica-role.ts); registration waits for the replica id. */
  #joinElection(namesrvAddr: string[]): void {
    const ctx = this.#need();
    this.#namesrvAddr = namesrvAddr;
    const services = {
      promoted: () => {
        this.#schedule?.start(ctx);
        this.#pop?.start();
        this.#tx?.start();
      },
      steppedDown: () => {
        void this.#schedule?.stop();
        this.#pop?.stop();
        void this.#tx?.stop();
      },
      registerAs: (brokerId: number) => this.#registerAs(ctx, brokerId),
    };
    this.#role.joinElection(services, { addr: this.brokerAddr, haAddr: `${this.#advertisedIp()}:${this.#ports.ha}` });
  }

  /** Registers (again, at once) under `brokerId`: 0 as master, the replica id otherwise. */
  #registerAs(ctx: BrokerContext, brokerId: number): void {
    if (this.#registration === null) this.#startRegistration(ctx, this.#namesrvAddr, brokerId);
    else void this.#registration.setBrokerId(brokerId);
  }

  /**
   * The periodic write: its fsyncs run on the thread pool, so the event loop does not stall for
   * them (a synchronous write here cost W3 tens of ms every 5 s). Shutdown uses the sync one.
   */
  async #persistOffsetsAsync(): Promise<void> {
    const ctx = this.#ctx;
    if (!ctx) return;
    try {
      await Promise.all([ctx.consumerOffsets.persistIfDirtyAsync(), ctx.delayOffsets.persistIfDirtyAsync()]);
    } catch (e) {
      this.#log.rateLimited("error", "persist-offsets", `persisting offsets failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  #persistOffsets(): void {
    const ctx = this.#ctx;
    if (!ctx) return;
    try {
      ctx.consumerOffsets.persistIfDirty();
      ctx.delayOffsets.persistIfDirty();
    } catch (e) {
      this.#log.rateLimited("error", "persist-offsets", `persisting offsets failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** Tells every member of a group to rebalance now (oneway; ali-ons ignores it, Java acts on it). */
  #notifyConsumerIdsChanged(group: string, members: ClientChannel[]): void {
    const cfg = this.#ctx?.groups.get(group);
    if (cfg && !cfg.notifyConsumerIdsChangedEnable) return;
    for (const m of members) {
      if (m.conn.closed) continue;
      m.conn.invokeOneway(createRequest(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, { consumerGroup: group }));
    }
  }

  /** SIGHUP: re-read the files the broker enforces (the ACL file also reloads itself when it changes). */
  reloadFiles(): void {
    this.#acl?.reload();
  }

  /** Clean stop: unregister, answer parked pulls, stop serving, persist, flush and close the store. */
  async stop(): Promise<void> {
    this.#acl?.close();
    await this.#registration?.unregisterAll();
    for (const t of this.#timers) this.#clock.clearInterval(t);
    this.#timers = [];
    if (this.#expiryTimer) this.#clock.clearInterval(this.#expiryTimer);
    this.#expiryTimer = null;
    this.#ctx?.hold.stop();
    this.#popPolling?.stop();
    this.#notifyPolling?.stop();
    // Let the answers to parked pulls leave before the connections close (an event-loop turn, not
    // a time: it runs on the real loop whatever the clock).
    await new Promise((r) => setTimeout(r, 0));
    this.#role.stopReplication();
    this.#server.stop();
    this.#vipServer.stop();
    // Nothing is written any more: give the election lease back so a replica takes over now.
    await this.#role.leave();
    await this.#client.close();
    await this.#schedule?.stop();
    await this.#tx?.stop();
    this.#pop?.commitProgress();
    this.#pop?.stop();
    if (this.#ctx) {
      await Promise.all([this.#ctx.consumerOffsets.idle(), this.#ctx.delayOffsets.idle()]);
      this.#persistOffsets();
      await this.#ctx.store.shutdown();
    }
  }

  readonly info: BrokerInfo = {
    clients: () => clientsView(this.#need()),
    traffic: () => trafficCounters(this.#need()),
    replication: () => this.#role.replication(),
    settings: () => {
      // In the order the admin API has always listed them: the role after the names.
      const { clusterName, brokerName, ...rest } = this.#need().settings;
      return { clusterName, brokerName, brokerId: this.#role.brokerId, brokerRole: this.#role.current, ...rest };
    },
    topics: () => this.#need().topics.all(),
    topic: (name) => this.#need().topics.get(name),
    queueOffsets: (topic) => {
      const ctx = this.#need();
      const tc = ctx.topics.get(topic);
      const n = tc ? Math.max(tc.readQueueNums, tc.writeQueueNums) : 0;
      return Array.from({ length: n }, (_, queueId) => ({
        queueId,
        minOffset: ctx.store.getMinOffsetInQueue(topic, queueId),
        maxOffset: ctx.store.getMaxOffsetInQueue(topic, queueId),
      }));
    },
    groupOffsets: (group) => {
      const ctx = this.#need();
      const out: { topic: string; queueId: number; consumerOffset: number; brokerOffset: number; lag: number }[] = [];
      for (const topic of ctx.consumerOffsets.topicsOf(group)) {
        for (const [queueId, consumerOffset] of ctx.consumerOffsets.queryAll(group, topic)) {
          const brokerOffset = ctx.store.getMaxOffsetInQueue(topic, queueId);
          out.push({ topic, queueId, consumerOffset, brokerOffset, lag: Math.max(0, brokerOffset - Math.max(0, consumerOffset)) });
        }
      }
      return out.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.queueId - b.queueId));
    },
    consumerGroups: () => {
      const ctx = this.#need();
      return [...new Set([...ctx.groups.all().map((g) => g.groupName), ...ctx.consumers.groups().map((g) => g.groupName)])].sort();
    },
    group: (name) => this.#need().groups.get(name),
    store: () => {
      const s = this.#need().store;
      return {
        minPhyOffset: s.minPhyOffset,
        maxPhyOffset: s.maxPhyOffset,
        flushedOffset: s.commitLog.flushedOffset,
        diskUsageRatio: s.diskUsageRatio(),
      };
    },
    transactions: () => {
      this.#need();
      if (!this.#tx) throw new Error("broker not started");
      return this.#tx.stats();
    },
    requestStats: () => this.#requestStats.snapshot(),
    metrics: () =>
      brokerMetricsState(
        this.#need(),
        this.#metricsTimes,
        { listen: this.#server.connectionCount, vip: this.#vipServer.connectionCount },
        this.#pop?.table,
      ),
    popConsumption: (group) => popConsumption(this.#need(), this.#pop?.table, group),
    admin: () => {
      if (!this.#admin) throw new Error("broker not started");
      return this.#admin;
    },
  };

  /** What the 5.x gRPC endpoint asks of this broker (./messaging-api.ts); throws before start. */
  messaging(): BrokerMessaging {
    if (!this.#messaging) throw new Error("broker not started");
    return this.#messaging;
  }

  #need(): BrokerContext {
    if (!this.#ctx) throw new Error("broker not started");
    return this.#ctx;
  }
}
