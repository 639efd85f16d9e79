/**
 * The one typed schema of RocketBun's configuration (docs/CONVENTIONS.md §4 and §10).
 *
 * `KEYS` lists every key once, in the order `--print-config` prints them: its type, unit, range or
 * allowed values, the roles that read it and a one-line doc. Validation (`checkValue`), the shipped
 * YAML files, `--print-config` and `--help` all follow this table, so a key cannot exist in one
 * place and be missing from another. Keys keep RocketMQ's names so operators recognise them, with
 * the unit added last (`...Ms`, `...Bytes`) where RocketMQ leaves it out.
 *
 * This module is pure: no file system and no network. Reading YAML, flags and network interfaces
 * lives in load.ts; binding ports lives in preflight.ts.
 */
import { isIP } from "node:net";
import type { LogLevel } from "../common/log.ts";
import type { BrokerRole, FlushDiskType } from "../protocol/broker-config.ts";
import { TLS_CLIENT_AUTHS, TLS_SERVER_MODES, type TlsSettings } from "../common/tls.ts";
import { DEFAULT_MESSAGE_DELAY_LEVEL, parseDelayLevels } from "../protocol/delay-levels.ts";
import { CQ_UNIT_SIZE, indexFileBytes, INDEX_ENTRY_SIZE_BYTES, INDEX_HEADER_SIZE_BYTES, INDEX_SLOT_SIZE_BYTES } from "../protocol/store-layout.ts";
import { MASTER_ID } from "../protocol/route.ts";
import { INT32_MAX } from "../common/int32.ts";
import { MESSAGE_REQUEST_MODES, type MessageRequestMode } from "../protocol/message-request-mode.ts";

export type Role = "namesrv" | "master" | "slave" | "standalone";
export const ROLES: readonly Role[] = ["namesrv", "master", "slave", "standalone"];

export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

/** Port 0 means "any free port"; the server reports what it actually bound (--ports-file). */
export interface HostPort {
  host: string;
  port: number;
}

export interface Config {
  role: Role;
  logLevel: LogLevel;
  remoting: {
    frameSizeMaxBytes: number;
    connectionBufferMaxBytes: number;
    requestTimeoutMs: number;
    maxConnections: number;
    idleTimeoutMs: number;
    frameTimeoutMs: number;
    partialFramesMaxBytes: number;
    maxNewConnectionsPerSecondPerAddress: number;
  };
  namesrv: {
    listen: HostPort;
    admin: HostPort;
    brokerExpiredMs: number;
    brokerScanIntervalMs: number;
    orderMessageEnable: boolean;
    kvConfigPath: string;
    aclEnable: boolean;
    aclFile: string;
  };
  broker: {
    listen: HostPort;
    admin: HostPort;
    namesrvAddr: string[];
    brokerClusterName: string;
    brokerName: string;
    brokerId: number;
    brokerRole: BrokerRole;
    brokerIP1: string;
    haMasterAddress: string;
    slaveReadEnable: boolean;
    enablePropertyFilter: boolean;
    haSlaveTimeoutMs: number;
    haTransferBatchBytes: number;
    autoCreateTopicEnable: boolean;
    defaultTopicQueueNums: number;
    registerNameServerPeriodMs: number;
    maxMessageSizeBytes: number;
    pullHoldMaxMs: number;
    channelExpiredMs: number;
    /** RocketMQ's delay levels, e.g. "1s 5s 10s"; `parseDelayLevels` (src/protocol/delay-levels.ts) reads it. */
    messageDelayLevel: string;
    /** A timer message (TIMER_DELAY_SEC / TIMER_DELAY_MS / TIMER_DELIVER_MS) due further ahead is refused. */
    timerMaxDelaySec: number;
    transactionCheckIntervalMs: number;
    transactionTimeOutMs: number;
    transactionCheckMax: number;
    /** QUERY_ASSIGNMENT (server-side rebalance, RocketMQ 5.x): see the keys' docs below. */
    defaultMessageRequestMode: MessageRequestMode;
    defaultPopShareQueueNum: number;
    serverLoadBalancerEnable: boolean;
    aclEnable: boolean;
    aclFile: string;
    /** Automatic failover on etcd: `broker.failover.*` in YAML, one level deeper. */
    "failover.enable": boolean;
    "failover.etcd": string[];
    "failover.leaseTtlMs": number;
    "failover.minInSyncReplicas": number;
    "failover.allowUncleanElection": boolean;
  };
  store: {
    dir: string;
    flushDiskType: FlushDiskType;
    commitLogSegmentBytes: number;
    flushIntervalMs: number;
    flushCommitLogLeastPages: number;
    flushCommitLogThoroughIntervalMs: number;
    flushConsumeQueueLeastPages: number;
    flushConsumeQueueThoroughIntervalMs: number;
    syncFlushTimeoutMs: number;
    checkCrcOnRecover: boolean;
    consumeQueueUnitsPerFile: number;
    indexSlotNum: number;
    indexNum: number;
    fileReservedTimeHours: number;
    /** RocketMQ format: two-digit hours joined by ";", e.g. "04;16". `parseDeleteWhen` reads it. */
    deleteWhen: string;
    deleteCommitLogFilesIntervalMs: number;
    /** A fraction of the disk, 0.1..0.95. */
    diskMaxUsedSpaceRatio: number;
    /** A fraction of the disk, above diskMaxUsedSpaceRatio and at most 0.99. */
    diskCriticalRatio: number;
    diskReserveBytes: number;
    maxTransferBytesOnMessageInMemory: number;
    maxTransferCountOnMessageInMemory: number;
    maxTransferBytesOnMessageInDisk: number;
    maxTransferCountOnMessageInDisk: number;
    /** Percent of physical RAM, 1..100. */
    accessMessageInMemoryMaxRatio: number;
    /** 0 = use accessMessageInMemoryMaxRatio; otherwise the distance in bytes. */
    accessMessageInMemoryMaxBytes: number;
  };
  /** TLS on every remoting and HA port, and for outgoing connections (src/common/tls.ts). */
  tls: TlsSettings;
  /** The admin HTTP API's access (its addresses are namesrv.admin and broker.admin). */
  admin: {
    /** Bearer token; "" = none. A secret: never shown (docs/CONVENTIONS.md §10). */
    token: string;
    /** A file holding the token (read at start and on every SIGHUP); "" = none. */
    tokenFile: string;
    /** Serve the admin API over HTTPS with tls.certPath / tls.keyPath. */
    https: boolean;
  };
}

export type SectionName = "remoting" | "namesrv" | "broker" | "store" | "tls" | "admin";
export const SECTIONS: readonly SectionName[] = ["remoting", "namesrv", "broker", "store", "tls", "admin"];

export type KeyPath =
  | "role"
  | "logLevel"
  | `remoting.${keyof Config["remoting"]}`
  | `namesrv.${keyof Config["namesrv"]}`
  | `broker.${keyof Config["broker"]}`
  | `store.${keyof Config["store"]}`
  | `tls.${keyof Config["tls"]}`
  | `admin.${keyof Config["admin"]}`;

export type ConfigValue = string | number | boolean | HostPort | string[];

/** Largest HA chunk a slave accepts (the slave side's limit; see src/ha/transfer.ts, which config may not import). */
export const HA_CHUNK_MAX_BYTES = 16 * 1024 * 1024;

export const NAMESRV_PORT = 9876;
export const BROKER_PORT = 10911;
/** The broker's HA port is listen + 1 and its VIP channel listen - 2, as in RocketMQ. */
export const HA_PORT_OFFSET = 1;
export const VIP_PORT_OFFSET = -2;
/** Admin HTTP: name server listen + 1 (9877), broker listen - 1 (10910). */
export const NAMESRV_ADMIN_OFFSET = 1;
export const BROKER_ADMIN_OFFSET = -1;

export type ValueType =
  | { kind: "int"; min: number; max: number }
  /** A YAML number (integers accepted too), finite and within [min, max]. */
  | { kind: "number"; min: number; max: number }
  | { kind: "bool" }
  | { kind: "enum"; values: readonly string[] }
  /** Cluster and broker names: they end up in routes, file names and admin URLs. */
  | { kind: "name" }
  /** An advertised address: "" (derive it) or an IP / host name. */
  | { kind: "hostOrEmpty" }
  | { kind: "hostPort"; minPort: number; allowEmpty: boolean }
  | { kind: "hostPortList" }
  | { kind: "path"; allowEmpty: boolean }
  /** Any string (a password). */
  | { kind: "text" }
  /** Hours of the day as RocketMQ's deleteWhen writes them: "04" or "04;16" (00..23 each). */
  | { kind: "hoursOfDay" }
  /** RocketMQ's messageDelayLevel: durations like "1s 5m 2h" separated by spaces. */
  | { kind: "delayLevels" }
  /** A credential: "" (none) or printable characters without spaces. */
  | { kind: "token" };

export interface KeyDef {
  readonly key: KeyPath;
  readonly type: ValueType;
  readonly unit?: "bytes" | "ms" | "s" | "hours" | "percent";
  /** Roles whose processes read this key; others accept it and ignore it. */
  readonly roles: readonly Role[];
  /**
   * The running process applies a change of this key on SIGHUP or UPDATE_BROKER_CONFIG
   * (src/runtime-config.ts); any other key is reported as "needs a restart" and left as it is.
   */
  readonly live?: true;
  /** A credential: shown as REDACTED wherever the config is shown (GET /config, --print-config, properties, logs). */
  readonly secret?: true;
  readonly doc: string;
  /** How the default is found when it is not a constant (role-dependent or derived). */
  readonly defaultDoc?: string;
}

const ALL: readonly Role[] = ROLES;
const NAMESRV_ROLES: readonly Role[] = ["namesrv", "standalone"];
const BROKER_ROLES: readonly Role[] = ["master", "slave", "standalone"];
/** A broker group's replicas; standalone (name server and broker in one process) has none to fail over to. */
const REPLICA_ROLES: readonly Role[] = ["master", "slave"];

export function runsNamesrv(role: Role): boolean {
  return NAMESRV_ROLES.includes(role);
}

export function runsBroker(role: Role): boolean {
  return BROKER_ROLES.includes(role);
}

const int = (min: number, max = INT32_MAX): ValueType => ({ kind: "int", min, max });
const num = (min: number, max: number): ValueType => ({ kind: "number", min, max });

const listenType: ValueType = { kind: "hostPort", minPort: 0, allowEmpty: false };

export const KEYS: readonly KeyDef[] = [
  { key: "role", type: { kind: "enum", values: ROLES }, roles: ALL, doc: "which process to run; --role overrides it", defaultDoc: "none (required)" },
  { key: "logLevel", live: true, type: { kind: "enum", values: LOG_LEVELS }, roles: ALL, doc: "lowest log level written" },

  {
    key: "remoting.frameSizeMaxBytes",
    type: int(1024),
    unit: "bytes",
    roles: ALL,
    doc: "largest remoting frame accepted; a bigger one closes the connection",
  },
  {
    key: "remoting.connectionBufferMaxBytes",
    type: int(0),
    unit: "bytes",
    roles: ALL,
    doc:
      "pending outbound bytes one connection may buffer before it is closed; once a quarter of it (at most 1 MiB) waits on a peer " +
      "that is not reading, that peer's further requests wait too (4,096 at most, then it is closed)",
  },
  { key: "remoting.requestTimeoutMs", type: int(1), unit: "ms", roles: ALL, doc: "how long an outgoing request waits for its response" },
  {
    key: "remoting.maxConnections",
    type: int(0),
    roles: ALL,
    doc: "sockets open at once on each remoting port (listen, VIP); one more is closed at once with a warning; 0 = no limit",
  },
  {
    key: "remoting.idleTimeoutMs",
    type: int(0),
    unit: "ms",
    roles: ALL,
    doc: "a remoting connection with no traffic either way for this long is closed (Java: 120 s), a silent new one too; 0 = never",
  },
  {
    key: "remoting.frameTimeoutMs",
    type: int(0),
    unit: "ms",
    roles: ALL,
    doc: "a frame (or TLS handshake) begun must be complete within this, or the connection is closed (slow senders); 0 = never",
  },
  {
    key: "remoting.partialFramesMaxBytes",
    type: int(0),
    unit: "bytes",
    roles: ALL,
    doc:
      "memory all connections of one remoting port may hold for frames still arriving (peers that announce big frames and stall); " +
      "the connection whose read takes it past this is closed with a warning; 0 = no limit",
  },
  {
    key: "remoting.maxNewConnectionsPerSecondPerAddress",
    type: int(0),
    roles: ALL,
    doc:
      "new connections a second one client host may open on each remoting port (a second's worth at once, then this rate); " +
      "one more is closed before a byte is read, with a warning (a reconnect storm from one host); 0 = no limit",
  },

  { key: "namesrv.listen", type: listenType, roles: NAMESRV_ROLES, doc: "name server remoting address (HOST:PORT; port 0 = any free port)" },
  {
    key: "namesrv.admin",
    type: listenType,
    roles: NAMESRV_ROLES,
    doc: "name server admin HTTP address",
    defaultDoc: "127.0.0.1 (or a loopback listen host), listen port + 1 (0 if listen port is 0)",
  },
  {
    key: "namesrv.brokerExpiredMs",
    live: true,
    type: int(1),
    unit: "ms",
    roles: NAMESRV_ROLES,
    doc: "a broker that has not registered for this long is dropped from routes",
  },
  {
    key: "namesrv.brokerScanIntervalMs",
    live: true,
    type: int(1),
    unit: "ms",
    roles: NAMESRV_ROLES,
    doc: "how often expired brokers are looked for",
  },
  {
    key: "namesrv.orderMessageEnable",
    live: true,
    type: { kind: "bool" },
    roles: NAMESRV_ROLES,
    doc: "copy the ORDER_TOPIC_CONFIG KV entry into topic routes",
  },
  {
    key: "namesrv.kvConfigPath",
    type: { kind: "path", allowEmpty: true },
    roles: NAMESRV_ROLES,
    doc: "KV config file",
    defaultDoc: '"" = <store.dir>/namesrv/kvConfig.json',
  },
  // ACL (src/acl/): RocketMQ 4.9 has none on the name server; here it guards its write requests.
  {
    key: "namesrv.aclEnable",
    type: { kind: "bool" },
    roles: NAMESRV_ROLES,
    doc: "check the name server's write requests (KV config, broker registration, write perms) against aclFile: admin accounts only",
  },
  {
    key: "namesrv.aclFile",
    type: { kind: "path", allowEmpty: true },
    roles: NAMESRV_ROLES,
    doc: "ACL rules in RocketMQ's plain_acl.yml format, re-read when it changes",
    defaultDoc: '"" = <store.dir>/conf/plain_acl.yml',
  },

  { key: "broker.listen", type: listenType, roles: BROKER_ROLES, doc: "broker remoting address; HA binds port + 1 and the VIP channel port - 2" },
  {
    key: "broker.admin",
    type: listenType,
    roles: BROKER_ROLES,
    doc: "broker admin HTTP address",
    defaultDoc: "127.0.0.1 (or a loopback listen host), listen port - 1 (0 if listen port is 0)",
  },
  {
    key: "broker.namesrvAddr",
    live: true,
    type: { kind: "hostPortList" },
    roles: BROKER_ROLES,
    doc: 'name servers to register with (list of HOST:PORT, or one "A;B" string)',
    defaultDoc: "[] (required for master/slave; standalone: its own name server)",
  },
  { key: "broker.brokerClusterName", type: { kind: "name" }, roles: BROKER_ROLES, doc: "cluster this broker belongs to" },
  { key: "broker.brokerName", type: { kind: "name" }, roles: BROKER_ROLES, doc: "name shared by a master and its slaves" },
  { key: "broker.brokerId", type: int(0), roles: BROKER_ROLES, doc: "0 = master, ≥ 1 = slave", defaultDoc: "0; 1 for role slave" },
  {
    key: "broker.brokerRole",
    type: { kind: "enum", values: ["ASYNC_MASTER", "SYNC_MASTER", "SLAVE"] },
    roles: BROKER_ROLES,
    doc: "SYNC_MASTER waits for a slave ack before answering a send; with failover.enable, the role a replica takes when elected (slaves too)",
    defaultDoc: "ASYNC_MASTER; SLAVE for role slave (always, without failover)",
  },
  {
    key: "broker.brokerIP1",
    type: { kind: "hostOrEmpty" },
    roles: BROKER_ROLES,
    doc: "address advertised to clients",
    defaultDoc: '"" = listen host, or the first non-internal IPv4 when listening on 0.0.0.0',
  },
  {
    key: "broker.haMasterAddress",
    type: { kind: "hostPort", minPort: 1, allowEmpty: true },
    roles: ["slave"],
    doc: "slave only: the master's HA HOST:PORT",
    defaultDoc: '"" = learned from the name server',
  },
  {
    key: "broker.slaveReadEnable",
    live: true,
    type: { kind: "bool" },
    roles: BROKER_ROLES,
    doc: "pulls of data no longer in memory (see store.accessMessageInMemoryMaxRatio) are told to go to a slave",
  },
  {
    key: "broker.enablePropertyFilter",
    live: true,
    type: { kind: "bool" },
    roles: BROKER_ROLES,
    doc: "accept SQL92 subscriptions (MessageSelector.bySql) and filter messages by their properties; off, they are refused",
  },
  {
    key: "broker.haSlaveTimeoutMs",
    live: true,
    type: int(1),
    unit: "ms",
    roles: ["master", "standalone"],
    doc: "SYNC_MASTER: how long a send waits for a slave's ack before answering FLUSH_SLAVE_TIMEOUT",
  },
  // A slave refuses chunks over 16 MiB (HA_CHUNK_MAX_BYTES in src/ha/transfer.ts).
  {
    key: "broker.haTransferBatchBytes",
    type: int(4096, HA_CHUNK_MAX_BYTES),
    unit: "bytes",
    roles: ["master", "standalone"],
    doc: "largest chunk of CommitLog bytes sent to a slave at once",
  },
  {
    key: "broker.autoCreateTopicEnable",
    live: true,
    type: { kind: "bool" },
    roles: BROKER_ROLES,
    doc: "create a topic on first send instead of rejecting it",
    defaultDoc: "true for standalone, false for master/slave",
  },
  { key: "broker.defaultTopicQueueNums", live: true, type: int(1, 1024), roles: BROKER_ROLES, doc: "queues given to an auto-created topic" },
  {
    key: "broker.registerNameServerPeriodMs",
    live: true,
    type: int(1000, 60000),
    unit: "ms",
    roles: BROKER_ROLES,
    doc: "how often the broker registers with every name server",
  },
  { key: "broker.maxMessageSizeBytes", live: true, type: int(1), unit: "bytes", roles: BROKER_ROLES, doc: "largest message body accepted" },
  {
    key: "broker.pullHoldMaxMs",
    live: true,
    type: int(0, 600_000),
    unit: "ms",
    roles: BROKER_ROLES,
    doc: "longest a pull that found nothing is parked (long polling), whatever the client asks; 0 = answer at once",
  },
  {
    key: "broker.channelExpiredMs",
    live: true,
    type: int(1000, 3_600_000),
    unit: "ms",
    roles: BROKER_ROLES,
    doc: "a producer or consumer connection without a heartbeat for this long is closed",
  },
  {
    key: "broker.messageDelayLevel",
    type: { kind: "delayLevels" },
    roles: BROKER_ROLES,
    doc: 'delay of each level 1..18 (message property DELAY), e.g. "1s 5s 10s"; units ms, s, m, h, d',
  },
  {
    key: "broker.timerMaxDelaySec",
    type: int(1, 10 * 365 * 86_400),
    unit: "s",
    roles: BROKER_ROLES,
    doc:
      "a message whose delivery time (TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS, __STARTDELIVERTIME) is further ahead " +
      "is refused with MESSAGE_ILLEGAL, as RocketMQ 5.x's timerMaxDelaySec",
  },
  // Transactions (RocketMQ BrokerConfig transactionCheckInterval / transactionTimeOut / transactionCheckMax).
  {
    key: "broker.transactionCheckIntervalMs",
    live: true,
    type: int(100, 3_600_000),
    unit: "ms",
    roles: ["master", "standalone"],
    doc: "how often the half messages of open transactions are scanned for check-backs (master only)",
  },
  {
    key: "broker.transactionTimeOutMs",
    live: true,
    type: int(0, 86_400_000),
    unit: "ms",
    roles: ["master", "standalone"],
    doc: "a half message is checked back once it is this old (its CHECK_IMMUNITY_TIME_IN_SECONDS property overrides)",
  },
  {
    key: "broker.transactionCheckMax",
    live: true,
    type: int(1, 10_000),
    roles: ["master", "standalone"],
    doc: "check-backs per half message before it is given up (moved to TRANS_CHECK_MAX_TIME_TOPIC)",
  },
  // Server-side rebalance (RocketMQ 5.x BrokerConfig, same names and defaults).
  {
    key: "broker.defaultMessageRequestMode",
    live: true,
    type: { kind: "enum", values: MESSAGE_REQUEST_MODES },
    roles: BROKER_ROLES,
    doc: "consume mode QUERY_ASSIGNMENT gives a (topic, group) that setConsumeMode never set: PULL, or POP (the client pops instead of pulling)",
  },
  {
    key: "broker.defaultPopShareQueueNum",
    live: true,
    type: int(-INT32_MAX - 1),
    roles: BROKER_ROLES,
    doc: "with defaultMessageRequestMode POP: how many other members' queues each member also pops; -1 (or ≤ 0) = every member pops every queue",
  },
  {
    key: "broker.serverLoadBalancerEnable",
    live: true,
    type: { kind: "bool" },
    roles: BROKER_ROLES,
    doc: "QUERY_ASSIGNMENT splits a clustering group's queues among its members; off, every member is given every queue",
  },
  // ACL as RocketMQ 4.9's plain ACL (BrokerConfig aclEnable, ${ROCKETMQ_HOME}/conf/plain_acl.yml).
  {
    key: "broker.aclEnable",
    type: { kind: "bool" },
    roles: BROKER_ROLES,
    doc: "check every request's signature and permissions against aclFile (RocketMQ's aclEnable)",
  },
  {
    key: "broker.aclFile",
    type: { kind: "path", allowEmpty: true },
    roles: BROKER_ROLES,
    doc: "ACL rules in RocketMQ's plain_acl.yml format, re-read when it changes and on SIGHUP; the ACL admin requests rewrite it",
    defaultDoc: '"" = <store.dir>/conf/plain_acl.yml',
  },
  {
    key: "broker.failover.enable",
    type: { kind: "bool" },
    roles: REPLICA_ROLES,
    doc: "elect the broker group's master on etcd when it dies; brokerId and brokerRole become the starting role only",
  },
  {
    key: "broker.failover.etcd",
    type: { kind: "hostPortList" },
    roles: REPLICA_ROLES,
    doc: "etcd client endpoints (HOST:PORT list; --etcd 'a:2379;b:2379'); required with failover.enable",
  },
  {
    key: "broker.failover.leaseTtlMs",
    type: int(2000, 600_000),
    unit: "ms",
    roles: REPLICA_ROLES,
    doc: "the master's etcd lease: a dead master is replaced about this long after it stops renewing (etcd counts whole seconds)",
  },
  {
    key: "broker.failover.minInSyncReplicas",
    type: int(1, 16),
    roles: REPLICA_ROLES,
    doc: "SYNC_MASTER: replicas (the master included) that must hold a write before it is acknowledged",
  },
  {
    key: "broker.failover.allowUncleanElection",
    type: { kind: "bool" },
    roles: REPLICA_ROLES,
    doc: "let a replica outside the in-sync set become master when no in-sync one is alive (may lose acknowledged messages)",
  },

  {
    key: "store.dir",
    type: { kind: "path", allowEmpty: false },
    roles: ALL,
    doc: "data directory (made absolute at load time, relative to the working directory)",
  },
  {
    key: "store.flushDiskType",
    type: { kind: "enum", values: ["ASYNC_FLUSH", "SYNC_FLUSH"] },
    roles: BROKER_ROLES,
    doc: "SYNC_FLUSH fsyncs before answering a send",
  },
  { key: "store.commitLogSegmentBytes", type: int(65536), unit: "bytes", roles: BROKER_ROLES, doc: "size of one CommitLog segment file" },
  { key: "store.flushIntervalMs", live: true, type: int(1), unit: "ms", roles: BROKER_ROLES, doc: "ASYNC_FLUSH: how often dirty pages are flushed" },
  // Each fdatasync is a device flush; these keep a trickle of small writes from costing one per tick.
  {
    key: "store.flushCommitLogLeastPages",
    live: true,
    type: int(0),
    roles: BROKER_ROLES,
    doc: "ASYNC_FLUSH: a CommitLog segment is flushed on a tick only with this many dirty 4 KiB pages (or when full); 0 = always",
  },
  {
    key: "store.flushCommitLogThoroughIntervalMs",
    live: true,
    type: int(0),
    unit: "ms",
    roles: BROKER_ROLES,
    doc: "ASYNC_FLUSH: at least this often a tick flushes the CommitLog whatever flushCommitLogLeastPages says",
  },
  {
    key: "store.flushConsumeQueueLeastPages",
    live: true,
    type: int(0),
    roles: BROKER_ROLES,
    doc: "a ConsumeQueue file is flushed on the 1 s tick only with this many dirty 4 KiB pages (or when full); 0 = always",
  },
  {
    key: "store.flushConsumeQueueThoroughIntervalMs",
    live: true,
    type: int(0),
    unit: "ms",
    roles: BROKER_ROLES,
    doc: "at least this often (and at shutdown) every ConsumeQueue is flushed whatever flushConsumeQueueLeastPages says",
  },
  {
    key: "store.syncFlushTimeoutMs",
    live: true,
    type: int(1),
    unit: "ms",
    roles: BROKER_ROLES,
    doc: "SYNC_FLUSH: how long a send waits for fsync before answering FLUSH_DISK_TIMEOUT",
  },
  {
    key: "store.checkCrcOnRecover",
    type: { kind: "bool" },
    roles: BROKER_ROLES,
    doc: "check each record's body CRC when recovering the CommitLog after a crash",
  },
  // A file's byte size must fit a signed 32-bit position, like commitLogSegmentBytes.
  {
    key: "store.consumeQueueUnitsPerFile",
    type: int(1, Math.floor(INT32_MAX / CQ_UNIT_SIZE)),
    roles: BROKER_ROLES,
    doc: `ConsumeQueue units per file (each unit is ${CQ_UNIT_SIZE} bytes)`,
  },
  { key: "store.indexSlotNum", type: int(1), roles: BROKER_ROLES, doc: "hash slots per IndexFile (4 bytes each)" },
  // IndexFile entry 0 is never used, so a file needs 2 entries to hold one key.
  { key: "store.indexNum", type: int(2), roles: BROKER_ROLES, doc: "entries per IndexFile (20 bytes each); a file holds indexNum - 1 keys" },
  {
    key: "store.fileReservedTimeHours",
    live: true,
    type: int(0),
    unit: "hours",
    roles: BROKER_ROLES,
    doc: "how long after its last write a CommitLog or ConsumeQueue file expires; 0 = at once",
  },
  {
    key: "store.deleteWhen",
    live: true,
    type: { kind: "hoursOfDay" },
    roles: BROKER_ROLES,
    doc: 'hours of the day when expired files are deleted: two-digit hours joined by ";", e.g. "04;16"',
  },
  {
    key: "store.deleteCommitLogFilesIntervalMs",
    live: true,
    type: int(1),
    unit: "ms",
    roles: BROKER_ROLES,
    doc: "how often the file retention check runs",
  },
  {
    key: "store.diskMaxUsedSpaceRatio",
    live: true,
    type: num(0.1, 0.95),
    roles: BROKER_ROLES,
    doc: "disk usage (fraction) above which the oldest files are deleted, expired or not",
  },
  {
    key: "store.diskCriticalRatio",
    live: true,
    type: num(0.1, 0.99),
    roles: BROKER_ROLES,
    doc: "disk usage (fraction, above diskMaxUsedSpaceRatio) above which writes are refused",
  },
  {
    key: "store.diskReserveBytes",
    type: int(0),
    unit: "bytes",
    roles: BROKER_ROLES,
    doc: "a file of this size kept in the store directory and deleted when the broker starts on a full disk, so recovery can write; 0 = none",
  },
  {
    key: "store.maxTransferBytesOnMessageInMemory",
    live: true,
    type: int(1),
    unit: "bytes",
    roles: BROKER_ROLES,
    doc: "pull batch byte limit for data still in memory; a pull always returns at least one message",
  },
  {
    key: "store.maxTransferCountOnMessageInMemory",
    live: true,
    type: int(1),
    roles: BROKER_ROLES,
    doc: "pull batch message limit for data still in memory",
  },
  {
    key: "store.maxTransferBytesOnMessageInDisk",
    live: true,
    type: int(1),
    unit: "bytes",
    roles: BROKER_ROLES,
    doc: "pull batch byte limit for data read from disk",
  },
  {
    key: "store.maxTransferCountOnMessageInDisk",
    live: true,
    type: int(1),
    roles: BROKER_ROLES,
    doc: "pull batch message limit for data read from disk",
  },
  {
    key: "store.accessMessageInMemoryMaxRatio",
    live: true,
    type: int(1, 100),
    unit: "percent",
    roles: BROKER_ROLES,
    doc: "data further than this share of physical RAM behind the CommitLog tail counts as on disk",
  },
  {
    key: "store.accessMessageInMemoryMaxBytes",
    live: true,
    type: int(0),
    unit: "bytes",
    roles: BROKER_ROLES,
    doc: "if > 0, this distance behind the CommitLog tail (instead of accessMessageInMemoryMaxRatio) counts as on disk",
    defaultDoc: "0 = accessMessageInMemoryMaxRatio percent of physical RAM",
  },

  // TLS (RocketMQ's tls.server.* / tls.client.* JVM properties, TlsSystemConfig). The files are
  // re-read on SIGHUP whatever changed; the keys themselves take effect at a restart.
  {
    key: "tls.serverMode",
    type: { kind: "enum", values: TLS_SERVER_MODES },
    roles: ALL,
    doc:
      "TLS on the remoting, VIP and HA ports: disabled (plaintext only), permissive (TLS and plaintext on the same port), " +
      "enforcing (TLS only); without a certificate permissive serves plaintext only",
  },
  { key: "tls.certPath", type: { kind: "path", allowEmpty: true }, roles: ALL, doc: 'server certificate chain (PEM); "" = no TLS served' },
  { key: "tls.keyPath", type: { kind: "path", allowEmpty: true }, roles: ALL, doc: "private key of tls.certPath (PEM, PKCS#8 as Java wants)" },
  { key: "tls.keyPassword", secret: true, type: { kind: "text" }, roles: ALL, doc: "password of an encrypted private key (never printed)" },
  {
    key: "tls.trustCertPath",
    type: { kind: "path", allowEmpty: true },
    roles: ALL,
    doc: "CA certificates (PEM) that client certificates must chain to, for tls.needClientAuth",
  },
  {
    key: "tls.needClientAuth",
    type: { kind: "enum", values: TLS_CLIENT_AUTHS },
    roles: ALL,
    doc: "client certificates: none, optional (asked for, not required), require (mutual TLS; needs tls.trustCertPath)",
  },
  {
    key: "tls.enable",
    type: { kind: "bool" },
    roles: ALL,
    doc: "outgoing connections use TLS: a broker's registration with name servers, a slave's HA and metadata connections",
  },
  {
    key: "tls.clientTrustCertPath",
    type: { kind: "path", allowEmpty: true },
    roles: ALL,
    doc: 'CA certificates (PEM) a server\'s certificate must chain to (host names are not checked, as in Java); "" = encrypt, do not verify',
  },
  { key: "tls.clientCertPath", type: { kind: "path", allowEmpty: true }, roles: ALL, doc: "certificate (PEM) shown to servers that ask for one" },
  {
    key: "tls.clientKeyPath",
    type: { kind: "path", allowEmpty: true },
    roles: ALL,
    doc: "private key of tls.clientCertPath (PEM; tls.keyPassword if encrypted)",
  },
  {
    key: "admin.token",
    live: true,
    secret: true,
    type: { kind: "token" },
    roles: ALL,
    doc: "bearer token of the admin HTTP API: when set, every endpoint but /health needs it; endpoints that change state always do",
    defaultDoc: '"" = none: read-only endpoints are open, endpoints that change state are refused',
  },
  {
    key: "admin.tokenFile",
    live: true,
    type: { kind: "path", allowEmpty: true },
    roles: ALL,
    doc: "file whose content (trimmed) is the admin token, re-read on SIGHUP; instead of admin.token",
  },
  {
    key: "admin.https",
    type: { kind: "bool" },
    roles: ALL,
    doc: "serve the admin API over HTTPS with the remoting ports' certificate (tls.certPath, tls.keyPath; re-read on SIGHUP)",
  },
];

const BY_KEY = new Map<string, KeyDef>(KEYS.map((d) => [d.key, d]));

/** What a secret key's value is shown as, wherever the configuration is shown. */
export const REDACTED = "REDACTED";

/** A value as it may be shown: a set secret is REDACTED (an unset one shows as "", so operators see it is unset). */
export function shownValue(def: KeyDef | undefined, v: ConfigValue): ConfigValue {
  return def?.secret && v !== "" ? REDACTED : v;
}

export function keyDef(key: string): KeyDef | undefined {
  return BY_KEY.get(key);
}

const MiB = 1024 * 1024;

/** Built-in defaults for a role. Derived values (admin ports) follow the default listen ports. */
/** The store defaults: the same for every role. */
const DEFAULT_STORE: Config["store"] = {
  dir: "./data",
  flushDiskType: "ASYNC_FLUSH",
  commitLogSegmentBytes: 1024 * MiB,
  flushIntervalMs: 500,
  flushCommitLogLeastPages: 4,
  flushCommitLogThoroughIntervalMs: 10000,
  flushConsumeQueueLeastPages: 2,
  flushConsumeQueueThoroughIntervalMs: 60000,
  syncFlushTimeoutMs: 5000,
  checkCrcOnRecover: true,
  consumeQueueUnitsPerFile: 300000,
  indexSlotNum: 5000000,
  indexNum: 20000000,
  fileReservedTimeHours: 72,
  deleteWhen: "04",
  deleteCommitLogFilesIntervalMs: 10000,
  diskMaxUsedSpaceRatio: 0.75,
  diskCriticalRatio: 0.9,
  diskReserveBytes: 16 * MiB,
  maxTransferBytesOnMessageInMemory: 256 * 1024,
  maxTransferCountOnMessageInMemory: 32,
  maxTransferBytesOnMessageInDisk: 64 * 1024,
  maxTransferCountOnMessageInDisk: 8,
  accessMessageInMemoryMaxRatio: 40,
  accessMessageInMemoryMaxBytes: 0,
};

export function defaultConfig(role: Role): Config {
  const slave = role === "slave";
  const namesrvListen = { host: "0.0.0.0", port: NAMESRV_PORT };
  const brokerListen = { host: "0.0.0.0", port: BROKER_PORT };
  return {
    role,
    logLevel: "info",
    remoting: {
      frameSizeMaxBytes: 16 * MiB,
      connectionBufferMaxBytes: 64 * MiB,
      requestTimeoutMs: 3000,
      maxConnections: 50_000,
      idleTimeoutMs: 120_000,
      frameTimeoutMs: 30_000,
      partialFramesMaxBytes: 512 * MiB,
      maxNewConnectionsPerSecondPerAddress: 0,
    },
    namesrv: {
      listen: namesrvListen,
      admin: defaultAdmin(namesrvListen, NAMESRV_ADMIN_OFFSET),
      brokerExpiredMs: 120000,
      brokerScanIntervalMs: 10000,
      orderMessageEnable: false,
      kvConfigPath: "",
      aclEnable: false,
      aclFile: "",
    },
    broker: {
      listen: brokerListen,
      admin: defaultAdmin(brokerListen, BROKER_ADMIN_OFFSET),
      namesrvAddr: [],
      brokerClusterName: "DefaultCluster",
      brokerName: "broker-a",
      brokerId: slave ? 1 : MASTER_ID,
      brokerRole: slave ? "SLAVE" : "ASYNC_MASTER",
      brokerIP1: "",
      haMasterAddress: "",
      slaveReadEnable: false,
      enablePropertyFilter: false,
      haSlaveTimeoutMs: 3000,
      haTransferBatchBytes: 256 * 1024,
      autoCreateTopicEnable: role === "standalone",
      defaultTopicQueueNums: 8,
      registerNameServerPeriodMs: 30000,
      maxMessageSizeBytes: 4 * MiB,
      pullHoldMaxMs: 20000,
      channelExpiredMs: 120000,
      messageDelayLevel: DEFAULT_MESSAGE_DELAY_LEVEL,
      timerMaxDelaySec: 3 * 24 * 3600,
      transactionCheckIntervalMs: 60000,
      transactionTimeOutMs: 6000,
      transactionCheckMax: 15,
      defaultMessageRequestMode: "PULL",
      defaultPopShareQueueNum: -1,
      serverLoadBalancerEnable: true,
      aclEnable: false,
      aclFile: "",
      "failover.enable": false,
      "failover.etcd": [],
      "failover.leaseTtlMs": 3000,
      "failover.minInSyncReplicas": 1,
      "failover.allowUncleanElection": false,
    },
    store: { ...DEFAULT_STORE },
    tls: defaultTls(),
    admin: { token: "", tokenFile: "", https: false },
  };
}

/** RocketMQ's defaults: permissive (plaintext until a certificate is configured), outgoing plaintext. */
function defaultTls(): Config["tls"] {
  return {
    serverMode: "permissive",
    certPath: "",
    keyPath: "",
    keyPassword: "",
    trustCertPath: "",
    needClientAuth: "none",
    enable: false,
    clientTrustCertPath: "",
    clientCertPath: "",
    clientKeyPath: "",
  };
}

/** Admin port next to the listen port, on 127.0.0.1; stays ephemeral when the listen port is. May exceed 65535. */
export function defaultAdmin(listen: HostPort, offset: number): HostPort {
  // Loopback unless the operator names an address: the admin API is for the host's operator
  // (a loopback listen host, e.g. ::1, is kept).
  const loopback = listen.host === "::1" || listen.host === "localhost" || listen.host.startsWith("127.");
  return { host: loopback ? listen.host : "127.0.0.1", port: listen.port === 0 ? 0 : listen.port + offset };
}

/** "broker.failover.enable" → ["broker", "failover.enable"]: a section, then its key (which may itself hold a dot). */
function splitKey(key: KeyPath): [string, string | undefined] {
  const dot = key.indexOf(".");
  return dot < 0 ? [key, undefined] : [key.slice(0, dot), key.slice(dot + 1)];
}

// Config is a closed record of sections; these two helpers are the only untyped access to it.
export function getValue(config: Config, key: KeyPath): ConfigValue {
  const [a, b] = splitKey(key);
  const top = (config as unknown as Record<string, unknown>)[a];
  const v = b === undefined ? top : (top as Record<string, unknown>)[b];
  return v as ConfigValue;
}

export function setValue(config: Config, key: KeyPath, value: ConfigValue): void {
  const [a, b] = splitKey(key);
  const root = config as unknown as Record<string, unknown>;
  if (b === undefined) root[a] = value;
  else (root[a] as Record<string, unknown>)[b] = value;
}

// ---------------------------------------------------------------------------------------------
// HOST:PORT

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/;

export function isValidHost(host: string): boolean {
  return isIP(host) !== 0 || HOSTNAME.test(host);
}

/** Parses "host:port" or "[ipv6]:port". */
export function parseHostPort(text: string, minPort = 0): HostPort | { invalid: string } {
  const bracketed = /^\[([^\]]*)\]:(.*)$/.exec(text);
  let host: string;
  let portText: string;
  if (bracketed) {
    host = bracketed[1] ?? "";
    portText = bracketed[2] ?? "";
    if (isIP(host) !== 6) return { invalid: `"${text}": [${host}] is not an IPv6 address` };
  } else {
    const i = text.lastIndexOf(":");
    if (i < 0) return { invalid: `expected HOST:PORT, got "${text}"` };
    host = text.slice(0, i);
    portText = text.slice(i + 1);
    if (host.includes(":")) {
      return { invalid: `"${text}": write IPv6 addresses in brackets, e.g. [::1]:9876` };
    }
    if (host === "") return { invalid: `expected HOST:PORT, got "${text}" (host is empty)` };
    if (!isValidHost(host)) return { invalid: `"${text}": "${host}" is not a valid host` };
  }
  if (!/^[0-9]{1,5}$/.test(portText)) {
    return { invalid: `expected HOST:PORT, got "${text}" (port must be a number)` };
  }
  const port = Number(portText);
  if (port < minPort || port > 65535) {
    return { invalid: `"${text}": port out of range: must be between ${minPort} and 65535` };
  }
  return { host, port };
}

export function formatHostPort(hp: HostPort): string {
  return hp.host.includes(":") ? `[${hp.host}]:${hp.port}` : `${hp.host}:${hp.port}`;
}

// ---------------------------------------------------------------------------------------------
// Checking one value

export type Checked = { ok: true; value: ConfigValue } | { ok: false; problem: string };

/** How a raw YAML value is shown in a message: strings quoted, numbers as written. */
function show(raw: unknown, text?: string): string {
  if (raw === null || raw === undefined) return "nothing";
  if (typeof raw === "string") return JSON.stringify(raw);
  if (Array.isArray(raw)) return "a list";
  if (typeof raw === "object") return "a mapping";
  return text ?? String(raw);
}

const NAME = /^[A-Za-z0-9_.%|-]{1,127}$/;

/**
 * Validates one value as it came out of YAML (`raw` is the parsed JS value, `text` the scalar's
 * source text, used to reject integers written as 1.0 or 1e3). Ranges are checked here; rules
 * that involve the role or other keys are in `crossCheck`.
 */
export function checkValue(def: KeyDef, raw: unknown, text?: string): Checked {
  const t = def.type;
  if (raw === null || raw === undefined) {
    return { ok: false, problem: "missing value (remove the key to use the default)" };
  }
  switch (t.kind) {
    case "int": {
      const isInt = typeof raw === "number" && Number.isInteger(raw) && (text === undefined || /^[-+]?[0-9]+$/.test(text));
      if (!isInt) {
        // RocketMQ writes some ratios as fractions and others as percents; say which this one is.
        const hint =
          def.unit === "percent" && typeof raw === "number" && raw > 0 && raw < 1
            ? ` (a whole percentage: write ${Math.round(raw * 100)} for ${Math.round(raw * 100)}%)`
            : "";
        return { ok: false, problem: `expected an integer, got ${show(raw, text)}${hint}` };
      }
      return checkRange(t, raw);
    }
    case "number": {
      if (typeof raw !== "number" || !Number.isFinite(raw)) {
        return { ok: false, problem: `expected a number, got ${show(raw, text)}` };
      }
      return fractionHint(t, raw, checkRange(t, raw));
    }
    case "hoursOfDay":
      // An unquoted single hour (deleteWhen: 04) reads as the number 4; its source text is "04".
      if (typeof raw === "number" && text !== undefined) return checkText(def, text);
      if (typeof raw === "string") return checkText(def, raw);
      return { ok: false, problem: `expected hours of the day like "04" or "04;16", got ${show(raw, text)}` };
    case "bool":
      if (typeof raw !== "boolean") return { ok: false, problem: `expected true or false, got ${show(raw, text)}` };
      return { ok: true, value: raw };
    case "hostPortList": {
      // RocketMQ writes the list as one "a:9876;b:9876" string; a YAML list reads better.
      if (typeof raw === "string") return checkText(def, raw);
      if (!Array.isArray(raw)) return { ok: false, problem: `expected a list of HOST:PORT, got ${show(raw, text)}` };
      const items: string[] = [];
      for (const [i, item] of raw.entries()) {
        if (typeof item !== "string") {
          return { ok: false, problem: `item ${i + 1}: expected a HOST:PORT string, got ${show(item)}` };
        }
        items.push(item);
      }
      return checkAddrList(items);
    }
    default: {
      if (typeof raw === "string") return checkText(def, raw);
      const written = text ?? String(raw);
      const hint = typeof raw === "number" || typeof raw === "boolean" ? ` (quote it if you mean the text "${written}")` : "";
      return { ok: false, problem: `expected a string, got ${show(raw, text)}${hint}` };
    }
  }
}

/** Validates a value given as text (a command-line flag); messages name the expected form. */
export function checkFlagValue(def: KeyDef, text: string): Checked {
  const t = def.type;
  if (t.kind === "int") {
    // A sign only where the range has negatives (defaultPopShareQueueNum's -1).
    if (!(t.min < 0 ? /^-?[0-9]+$/ : /^[0-9]+$/).test(text))
      return { ok: false, problem: `expected an integer ≥ ${t.min}, got ${JSON.stringify(text)}` };
    return checkRange(t, Number(text));
  }
  if (t.kind === "number") {
    if (!/^[0-9]+(\.[0-9]+)?$/.test(text)) return { ok: false, problem: `expected a number, got ${JSON.stringify(text)}` };
    return fractionHint(t, Number(text), checkRange(t, Number(text)));
  }
  if (t.kind === "bool") {
    if (text === "true" || text === "false") return { ok: true, value: text === "true" };
    return { ok: false, problem: `expected true or false, got ${JSON.stringify(text)}` };
  }
  return checkText(def, text);
}

/** A fraction written as a percent (RocketMQ's diskMaxUsedSpaceRatio is 75 where ours is 0.75). */
function fractionHint(t: { min: number; max: number }, n: number, checked: Checked): Checked {
  const asFraction = n / 100;
  if (checked.ok || t.max > 1 || !Number.isInteger(n) || asFraction < t.min || asFraction > t.max) return checked;
  return { ok: false, problem: `${checked.problem} (a fraction: write ${asFraction} for ${n}%)` };
}

function checkRange(t: { min: number; max: number }, n: number): Checked {
  if (n >= t.min && n <= t.max) return { ok: true, value: n };
  const want = t.max === INT32_MAX ? `must be ≥ ${t.min}` : `must be between ${t.min} and ${t.max}`;
  return { ok: false, problem: `out of range: ${want}, got ${n}` };
}

function checkText(def: KeyDef, s: string): Checked {
  const t = def.type;
  switch (t.kind) {
    case "enum": {
      if (t.values.includes(s)) return { ok: true, value: s };
      const near = t.values.find((v) => v.toLowerCase() === s.toLowerCase()) ?? closest(s, t.values);
      const hint = near === undefined ? "" : ` (did you mean "${near}"?)`;
      return { ok: false, problem: `${JSON.stringify(s)} is not one of the allowed values: ${t.values.join(", ")}${hint}` };
    }
    case "name":
      if (NAME.test(s)) return { ok: true, value: s };
      return { ok: false, problem: `expected 1-127 characters from A-Z a-z 0-9 _ . % | -, got ${JSON.stringify(s)}` };
    case "hostOrEmpty":
      if (s === "" || isValidHost(s)) return { ok: true, value: s };
      return { ok: false, problem: `expected an IP address or host name, got ${JSON.stringify(s)}` };
    case "hostPort": {
      if (s === "" && t.allowEmpty) return { ok: true, value: s };
      const hp = parseHostPort(s, t.minPort);
      if ("invalid" in hp) return { ok: false, problem: hp.invalid };
      // haMasterAddress is stored as the string the operator wrote; listen/admin as HostPort.
      return { ok: true, value: t.allowEmpty ? s : hp };
    }
    case "hostPortList":
      return checkAddrList(s.split(";").filter((part) => part.trim() !== ""));
    case "text":
      return { ok: true, value: s };
    case "path":
      if (s === "" && !t.allowEmpty) return { ok: false, problem: "expected a path, got an empty string" };
      return { ok: true, value: s };
    case "token":
      // The value itself is never echoed: it may be a real credential with a typo.
      if (!/^[\x21-\x7e]*$/.test(s)) return { ok: false, problem: "expected printable ASCII characters without spaces" };
      return { ok: true, value: s };
    case "hoursOfDay": {
      const hours = parseDeleteWhen(s);
      if ("invalid" in hours) return { ok: false, problem: hours.invalid };
      return { ok: true, value: s };
    }
    case "delayLevels": {
      const levels = parseDelayLevels(s);
      if ("invalid" in levels) return { ok: false, problem: levels.invalid };
      return { ok: true, value: s };
    }
    default:
      return { ok: false, problem: `expected ${t.kind}, got ${JSON.stringify(s)}` };
  }
}

/**
 * Reads RocketMQ's deleteWhen: two-digit hours of the day (00..23) joined by ";", e.g. "04;16".
 * Returns the hours in the order written.
 */
export function parseDeleteWhen(text: string): number[] | { invalid: string } {
  const form = `expected two-digit hours 00-23 joined by ";", e.g. "04" or "04;16", got ${JSON.stringify(text)}`;
  const hours: number[] = [];
  for (const part of text.split(";")) {
    if (!/^[0-9]{2}$/.test(part)) {
      const hint = /^[0-9]$/.test(part) ? ` (write "0${part}")` : "";
      return { invalid: `${form}${hint}` };
    }
    const h = Number(part);
    if (h > 23) return { invalid: `${form} (hour ${part} is not between 00 and 23)` };
    if (hours.includes(h)) return { invalid: `${form} (hour ${part} is listed twice)` };
    hours.push(h);
  }
  return hours;
}

function checkAddrList(items: string[]): Checked {
  const out: string[] = [];
  for (const item of items) {
    const hp = parseHostPort(item.trim(), 1);
    if ("invalid" in hp) return { ok: false, problem: hp.invalid };
    out.push(formatHostPort(hp));
  }
  return { ok: true, value: out };
}

// ---------------------------------------------------------------------------------------------
// Rules across keys

export interface BindPort {
  /** The key the port comes from; HA and VIP ports come from broker.listen. */
  key: KeyPath;
  /** "name server", "name server admin", "broker", "HA", "VIP channel" or "broker admin". */
  purpose: string;
  hostPort: HostPort;
  /** For ports computed from broker.listen: how, e.g. "listen port + 1". */
  derived?: string;
}

/**
 * Every port the role binds, in bind order. HA (listen + 1) and VIP (listen - 2) are left out
 * when broker.listen has port 0: the server then picks free ports for them itself.
 */
export function portsToBind(config: Config): BindPort[] {
  const out: BindPort[] = [];
  if (runsNamesrv(config.role)) {
    out.push({ key: "namesrv.listen", purpose: "name server", hostPort: config.namesrv.listen });
    out.push({ key: "namesrv.admin", purpose: "name server admin", hostPort: config.namesrv.admin });
  }
  if (runsBroker(config.role)) {
    const { host, port } = config.broker.listen;
    out.push({ key: "broker.listen", purpose: "broker", hostPort: { host, port } });
    if (port !== 0) {
      const ha = { host, port: port + HA_PORT_OFFSET };
      const vip = { host, port: port + VIP_PORT_OFFSET };
      out.push({ key: "broker.listen", purpose: "HA", hostPort: ha, derived: "listen port + 1" });
      out.push({ key: "broker.listen", purpose: "VIP channel", hostPort: vip, derived: "listen port - 2" });
    }
    out.push({ key: "broker.admin", purpose: "broker admin", hostPort: config.broker.admin });
  }
  return out;
}

const WILDCARD_HOSTS = new Set(["0.0.0.0", "::", ""]);

function hostsOverlap(a: string, b: string): boolean {
  return a === b || WILDCARD_HOSTS.has(a) || WILDCARD_HOSTS.has(b);
}

export interface KeyProblem {
  key: KeyPath;
  problem: string;
  /**
   * The same problem told from the other key it involves. The loader reports this one instead
   * when only the other key was set, so the message points at the line to change.
   */
  other?: { key: KeyPath; problem: string };
}

/** Rules that involve the role or several keys; each problem is attributed to one key. */
export function crossCheck(config: Config): KeyProblem[] {
  const out: KeyProblem[] = [];
  const add = (key: KeyPath, problem: string) => out.push({ key, problem });
  if (runsBroker(config.role)) {
    checkBroker(config, add);
    checkStore(config.store, out);
  }
  checkTls(config.tls, add);
  if (config.admin.https && config.tls.certPath === "") {
    out.push({ key: "admin.https", problem: "HTTPS needs the certificate of the remoting ports: set tls.certPath and tls.keyPath" });
  }
  if (config.admin.token !== "" && config.admin.tokenFile !== "") {
    out.push({
      key: "admin.tokenFile",
      problem: "set admin.token or admin.tokenFile, not both",
      other: { key: "admin.token", problem: "set admin.token or admin.tokenFile, not both" },
    });
  }
  const ports = portsToBind(config);
  for (const [i, p] of ports.entries()) {
    const { host, port } = p.hostPort;
    if (port === 0) continue;
    const clash = ports.slice(0, i).find((q) => q.hostPort.port === port && hostsOverlap(q.hostPort.host, host));
    if (clash) add(p.key, `port ${port} (${p.purpose}) is also bound by ${clash.key} (${clash.purpose})`);
  }
  return out;
}

function checkBroker(config: Config, add: (key: KeyPath, problem: string) => void): void {
  const { role, broker: b } = config;
  if (role === "slave") {
    if (b.brokerId < 1) add("broker.brokerId", `must be ≥ 1 for role slave, got ${b.brokerId} (brokerId 0 is the master)`);
    // With failover a slave may be elected: its brokerRole is the role it takes then (a SYNC_MASTER
    // group stays SYNC_MASTER after a failover); it starts as a replica whatever it says.
    if (b.brokerRole !== "SLAVE" && !b["failover.enable"]) {
      add(
        "broker.brokerRole",
        `"${b.brokerRole}" is not allowed for role slave ` +
          "(a slave's brokerRole is always SLAVE, but with broker.failover.enable, where it is the role taken when elected)",
      );
    }
  } else {
    if (b.brokerId !== MASTER_ID) add("broker.brokerId", `must be 0 for role ${role}, got ${b.brokerId} (only slaves have brokerId ≥ 1)`);
    if (b.brokerRole === "SLAVE") {
      add("broker.brokerRole", `"SLAVE" is not allowed for role ${role} (use ASYNC_MASTER or SYNC_MASTER, or --role slave)`);
    }
  }
  if (b["failover.enable"] && role !== "standalone" && b["failover.etcd"].length === 0) {
    add("broker.failover.etcd", "missing required value with broker.failover.enable: list the etcd endpoints HOST:PORT (or pass --etcd)");
  }
  if ((role === "master" || role === "slave") && b.namesrvAddr.length === 0) {
    add("broker.namesrvAddr", `missing required value for role ${role}: list at least one name server HOST:PORT (or pass --namesrv)`);
  }
  const p = b.listen.port;
  if (p !== 0 && (p < 3 || p > 65534)) {
    add(
      "broker.listen",
      `port must be 0 or between 3 and 65534, got ${p} ` + "(the broker also binds port + 1 for HA and port - 2 for the VIP channel)",
    );
  }
  const segment = config.store.commitLogSegmentBytes;
  if (b.maxMessageSizeBytes >= segment) {
    add(
      "broker.maxMessageSizeBytes",
      `must be smaller than store.commitLogSegmentBytes (${segment}) ` + `so a message fits in one segment, got ${b.maxMessageSizeBytes}`,
    );
  }
  const frame = config.remoting.frameSizeMaxBytes;
  if (b.maxMessageSizeBytes >= frame) {
    add(
      "broker.maxMessageSizeBytes",
      `must be smaller than remoting.frameSizeMaxBytes (${frame}) ` + `so a message fits in one frame, got ${b.maxMessageSizeBytes}`,
    );
  }
}

/** Which TLS keys need which; whether the files are readable and match is preflight's (config/preflight.ts). */
function checkTls(t: Config["tls"], add: (key: KeyPath, problem: string) => void): void {
  if ((t.certPath === "") !== (t.keyPath === "")) {
    add(t.certPath === "" ? "tls.certPath" : "tls.keyPath", "tls.certPath and tls.keyPath go together: set both or neither");
  }
  const noCert = t.certPath === "" && t.keyPath === "";
  if (t.serverMode === "enforcing" && noCert) add("tls.serverMode", "enforcing needs a certificate: set tls.certPath and tls.keyPath");
  if (t.needClientAuth !== "none" && noCert) {
    add("tls.needClientAuth", `${t.needClientAuth} needs a server certificate: set tls.certPath and tls.keyPath`);
  }
  if (t.needClientAuth === "require" && t.trustCertPath === "") {
    add("tls.needClientAuth", "require needs the CA that signs client certificates: set tls.trustCertPath");
  }
  if ((t.clientCertPath === "") !== (t.clientKeyPath === "")) {
    add(
      t.clientCertPath === "" ? "tls.clientCertPath" : "tls.clientKeyPath",
      "tls.clientCertPath and tls.clientKeyPath go together: set both or neither",
    );
  }
}

function checkStore(s: Config["store"], out: KeyProblem[]): void {
  if (s.diskCriticalRatio <= s.diskMaxUsedSpaceRatio) {
    out.push({
      key: "store.diskCriticalRatio",
      problem:
        `must be greater than store.diskMaxUsedSpaceRatio (${s.diskMaxUsedSpaceRatio}) ` +
        `so old files are deleted before writes are refused, got ${s.diskCriticalRatio}`,
      other: {
        key: "store.diskMaxUsedSpaceRatio",
        problem:
          `must be smaller than store.diskCriticalRatio (${s.diskCriticalRatio}) ` +
          `so old files are deleted before writes are refused, got ${s.diskMaxUsedSpaceRatio}`,
      },
    });
  }
  const indexBytes = indexFileBytes(s.indexSlotNum, s.indexNum);
  if (indexBytes > INT32_MAX) {
    const size =
      `an IndexFile of ${INDEX_HEADER_SIZE_BYTES} + ${s.indexSlotNum} × ${INDEX_SLOT_SIZE_BYTES} + ` +
      `${s.indexNum} × ${INDEX_ENTRY_SIZE_BYTES} = ${indexBytes} bytes is larger than ${INT32_MAX}`;
    out.push({
      key: "store.indexNum",
      problem: `too large for store.indexSlotNum ${s.indexSlotNum}: ${size}`,
      other: { key: "store.indexSlotNum", problem: `too large for store.indexNum ${s.indexNum}: ${size}` },
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Close-match suggestions for unknown keys, flags and values

/** Edit distance counting a swap of two neighbours as one edit ("brokerNmae" → "brokerName"). */
export function editDistance(a: string, b: string): number {
  const row = (i: number) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0));
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => row(i));
  const at = (i: number, j: number): number => d[i]?.[j] ?? 0;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, at(i - 2, j - 2) + 1);
      const di = d[i];
      if (di) di[j] = v;
    }
  }
  return at(a.length, b.length);
}

/** The candidate closest to `word`, if it is close enough to be a plausible typo. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  const lower = word.toLowerCase();
  for (const c of candidates) {
    const dist = c.toLowerCase() === lower ? 0 : editDistance(lower, c.toLowerCase());
    if (dist < bestD) {
      best = c;
      bestD = dist;
    }
  }
  // Allow about one edit per three characters; very short words only match ignoring case.
  const allowed = word.length < 3 ? 0 : Math.max(1, Math.floor(word.length / 3));
  return bestD <= allowed ? best : undefined;
}
