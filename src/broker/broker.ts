/**
 * BrokerController: wires one broker together — the MessageStore and metadata in the store dir,
 * the remoting server on the listen port and the "VIP" channel (listen − 2), the request
 * processors, client registries, long polling, name server registration — and exposes plain
 * info functions for the admin API. Start order: bind ports → open the store → register.
 */
import { networkInterfaces } from "node:os";
import { scope, type Logger } from "../common/log.ts";
import {
  ConsumerOffsetManager,
  DelayOffsetManager,
  MessageStore,
  parseHostAddress,
  SubscriptionGroupManager,
  TopicConfigManager,
  type MessageStoreOptions,
  type TopicConfig,
} from "../commitlog/index.ts";
import { createRequest, RemotingClient, RemotingServer, REMOTING_CLIENT_DEFAULTS, RequestCode, type RequestProcessor } from "../remoting/index.ts";
import { ConsumerManager, ProducerManager, type ClientChannel } from "./client-manager.ts";
import type { BrokerContext, BrokerRole, BrokerSettings } from "./context.ts";
import { PullRequestHoldService } from "./long-polling.ts";
import { NamesrvRegistration } from "./namesrv-registration.ts";
import { ClientManageProcessor } from "./processors/client-manage.ts";
import { ConsumerManageProcessor } from "./processors/consumer-manage.ts";
import { PullMessageProcessor } from "./processors/pull-message.ts";
import { SendMessageProcessor } from "./processors/send-message.ts";
import { TopicAdminProcessor } from "./processors/topic-admin.ts";

export interface BrokerOptions {
  host: string;
  port: number;
  /** Advertised IP ("" = derive from host). */
  brokerIP1: string;
  namesrvAddr: string[];
  clusterName: string;
  brokerName: string;
  brokerId: number;
  brokerRole: BrokerRole;
  autoCreateTopicEnable: boolean;
  defaultTopicQueueNums: number;
  registerNameServerPeriodMs: number;
  maxMessageSizeBytes: number;
  frameSizeMaxBytes: number;
  connectionBufferMaxBytes: number;
  /** Store options except those the broker derives (storeHost, readOnly). */
  store: Omit<MessageStoreOptions, "storeHost" | "readOnly" | "maxMessageSizeBytes">;
  channelExpiredMs?: number;
  pullHoldMaxMs?: number;
  now?: () => number;
}

export interface BrokerInfo {
  settings(): BrokerSettings;
  topics(): TopicConfig[];
  topic(name: string): TopicConfig | undefined;
  queueOffsets(topic: string): { queueId: number; minOffset: number; maxOffset: number }[];
  groupOffsets(group: string): { topic: string; queueId: number; consumerOffset: number; brokerOffset: number; lag: number }[];
  consumerGroups(): string[];
  store(): { minPhyOffset: number; maxPhyOffset: number; flushedOffset: number; diskUsageRatio: number };
}

export class BrokerController {
  readonly #o: BrokerOptions;
  readonly #log: Logger = scope("broker");
  readonly #now: () => number;
  readonly #server: RemotingServer;
  readonly #vipServer: RemotingServer;
  readonly #client: RemotingClient;
  #ctx: BrokerContext | null = null;
  #registration: NamesrvRegistration | null = null;
  #timers: ReturnType<typeof setInterval>[] = [];
  #ports = { listen: 0, vip: 0 };

  constructor(o: BrokerOptions) {
    this.#o = o;
    this.#now = o.now ?? Date.now;
    const serverOpts = { host: o.host, frameSizeMaxBytes: o.frameSizeMaxBytes, connectionBufferMaxBytes: o.connectionBufferMaxBytes };
    this.#server = new RemotingServer({ ...serverOpts, port: o.port, log: scope("broker-remoting") });
    // With an ephemeral listen port the VIP channel gets its own ephemeral port.
    this.#vipServer = new RemotingServer({ ...serverOpts, port: o.port === 0 ? 0 : o.port - 2, log: scope("broker-vip") });
    this.#client = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("broker-outer") });
  }

  /** Binds the listen and VIP ports; throws (nothing left bound) if either is taken. */
  bind(): { listen: number; vip: number } {
    const listen = this.#server.start();
    try {
      this.#ports = { listen, vip: this.#vipServer.start() };
    } catch (e) {
      this.#server.stop();
      throw e;
    }
    return this.#ports;
  }

  get ports(): { listen: number; vip: number } {
    return this.#ports;
  }

  get brokerAddr(): string {
    return `${this.#advertisedIp()}:${this.#ports.listen}`;
  }

  #advertisedIp(): string {
    if (this.#o.brokerIP1) return this.#o.brokerIP1;
    if (this.#o.host !== "0.0.0.0" && this.#o.host !== "::") return this.#o.host;
    for (const list of Object.values(networkInterfaces())) {
      for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
    }
    return "127.0.0.1";
  }

  /**
   * Opens the store (recovering it), loads metadata, wires the processors and starts the
   * services. Call after bind(). Throws if the store cannot be opened.
   */
  start(namesrvAddr: string[] = this.#o.namesrvAddr): void {
    const o = this.#o;
    const dir = o.store.dir;
    const settings: BrokerSettings = {
      clusterName: o.clusterName,
      brokerName: o.brokerName,
      brokerId: o.brokerId,
      brokerRole: o.brokerRole,
      brokerAddr: this.brokerAddr,
      storeHost: parseHostAddress(this.brokerAddr),
      autoCreateTopicEnable: o.autoCreateTopicEnable,
      autoCreateSubscriptionGroup: true,
      defaultTopicQueueNums: o.defaultTopicQueueNums,
      maxMessageSizeBytes: o.maxMessageSizeBytes,
      regionId: "DefaultRegion",
      traceOn: true,
      pullHoldMaxMs: o.pullHoldMaxMs ?? 20_000,
      slaveReadEnable: false,
    };
    const store = MessageStore.open({
      ...o.store,
      storeHost: settings.storeHost,
      readOnly: o.brokerRole === "SLAVE",
      maxMessageSizeBytes: o.maxMessageSizeBytes,
    });
    for (const p of store.recovery?.problems ?? []) this.#log.warn(`store recovery: ${p}`);
    const topics = new TopicConfigManager({ dir, now: this.#now });
    const consumerOffsets = new ConsumerOffsetManager({ dir, now: this.#now });
    const delayOffsets = new DelayOffsetManager({ dir, now: this.#now });
    const groups = new SubscriptionGroupManager({ dir, now: this.#now });
    for (const m of [topics, consumerOffsets, delayOffsets, groups]) for (const p of m.load()) this.#log.warn(`metadata: ${p}`);
    topics.ensureSystemTopics({
      clusterName: o.clusterName,
      brokerName: o.brokerName,
      autoCreateTopicEnable: o.autoCreateTopicEnable,
      defaultTopicQueueNums: o.defaultTopicQueueNums,
    });

    const hold = new PullRequestHoldService({ holdMaxMs: settings.pullHoldMaxMs, checkIntervalMs: 500, maxHeldPerConnection: 4096, now: this.#now });
    const consumers = new ConsumerManager((group, members) => this.#notifyConsumerIdsChanged(group, members));
    const producers = new ProducerManager();
    const ctx: BrokerContext = {
      settings,
      store,
      topics,
      consumerOffsets,
      delayOffsets,
      groups,
      consumers,
      producers,
      hold,
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
        this.#registration?.topicsChanged();
        return cfg;
      },
    };
    this.#ctx = ctx;

    const processors: [readonly number[], RequestProcessor][] = [
      [SendMessageProcessor.CODES, new SendMessageProcessor(ctx)],
      [PullMessageProcessor.CODES, new PullMessageProcessor(ctx)],
      [ClientManageProcessor.CODES, new ClientManageProcessor(ctx)],
      [ConsumerManageProcessor.CODES, new ConsumerManageProcessor(ctx)],
      [TopicAdminProcessor.CODES, new TopicAdminProcessor(ctx)],
    ];
    for (const [codes, p] of processors) {
      this.#server.registerAll(codes, p);
      // The VIP channel serves everything but pulls (RocketMQ's fastRemotingServer).
      this.#vipServer.registerAll(
        codes.filter((c) => c !== RequestCode.PULL_MESSAGE),
        p,
      );
    }
    for (const s of [this.#server, this.#vipServer]) {
      s.onConnectionClose((conn) => {
        consumers.onConnectionClosed(conn);
        producers.onConnectionClosed(conn);
      });
    }
    hold.start();
    const expiredMs = o.channelExpiredMs ?? 120_000;
    this.#timers.push(
      setInterval(
        () => {
          const now = this.#now();
          for (const c of [...consumers.scanExpired(now, expiredMs), ...producers.scanExpired(now, expiredMs)]) c.close();
        },
        Math.min(10_000, expiredMs),
      ),
      setInterval(() => this.#persistOffsets(), 5000),
    );

    this.#registration = new NamesrvRegistration({
      client: this.#client,
      namesrvs: namesrvAddr,
      identity: {
        clusterName: o.clusterName,
        brokerAddr: this.brokerAddr,
        brokerName: o.brokerName,
        brokerId: o.brokerId,
        haServerAddr: `${this.#advertisedIp()}:${this.#ports.listen + 1}`,
      },
      topics: () => topics.wrapper(),
      periodMs: o.registerNameServerPeriodMs,
      log: this.#log,
    });
    this.#registration.start();
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

  /** Clean stop: unregister, answer parked pulls, stop serving, persist, flush and close the store. */
  async stop(): Promise<void> {
    await this.#registration?.unregisterAll();
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    this.#ctx?.hold.stop();
    this.#server.stop();
    this.#vipServer.stop();
    await this.#client.close();
    if (this.#ctx) {
      this.#persistOffsets();
      await this.#ctx.store.shutdown();
    }
  }

  readonly info: BrokerInfo = {
    settings: () => this.#need().settings,
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
    store: () => {
      const s = this.#need().store;
      return {
        minPhyOffset: s.minPhyOffset,
        maxPhyOffset: s.maxPhyOffset,
        flushedOffset: s.commitLog.flushedOffset,
        diskUsageRatio: s.diskUsageRatio(),
      };
    },
  };

  #need(): BrokerContext {
    if (!this.#ctx) throw new Error("broker not started");
    return this.#ctx;
  }
}
