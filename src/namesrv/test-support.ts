/**
 * The in-process name server fixture (imported only by tests and test/sim), the name server's
 * twin of src/broker/test-support.ts: a NamesrvController on virtual time (src/common/sim-clock.ts)
 * and in-memory sockets (MemNetwork), through the seams of docs/CONVENTIONS.md §6. No port is
 * bound and no real timer runs: a test sends RemotingCommands over a client connection and moves
 * time with `advance`, so the broker-liveness scan is checked without waiting two minutes.
 *
 * kvConfig.json is written to a real temp dir: the KV store does not take the disk seam.
 *
 * Also here: REGISTER_BROKER and QUERY_DATA_VERSION as a broker writes them
 * (broker/namesrv-registration.ts), with the body's CRC.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SimClock, type ClockView } from "../common/sim-clock.ts";
import { jsonBytes } from "../common/json.ts";
import type { Logger } from "../common/log.ts";
import { defaultConfig, type Config } from "../config/schema.ts";
import {
  createRequest,
  REMOTING_CLIENT_DEFAULTS,
  RemotingClient,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
} from "../remoting/index.ts";
import { MemNetwork, recordingLogger } from "../remoting/test-support.ts";
import type { DataVersion } from "../protocol/data-version.ts";
import { encodeRegisterBrokerBody, encodeRegisterBrokerBodyCompressed } from "../protocol/register-broker-body.ts";
import { defaultTopicConfig, type TopicConfig } from "../protocol/topics.ts";
import { NamesrvController, type NamesrvOptions } from "./namesrv.ts";

export const NAMESRV_FIXTURE_HOST = "127.0.0.1";
export const NAMESRV_FIXTURE_PORT = 9876;

export interface InProcessNamesrvOptions {
  /** Defaults from the schema (src/config/schema.ts defaultConfig("namesrv")), then the overrides. */
  namesrv?: Partial<Config["namesrv"]>;
  remoting?: Partial<Config["remoting"]>;
  /** Shared virtual time (with brokers, a simulation); default a new one. */
  sim?: SimClock;
  /** This incarnation's clock (a crash kills it); default a new view of `sim`. */
  clock?: ClockView;
  /** Shared sockets; default a new MemNetwork. */
  network?: MemNetwork;
  /** The store dir kvConfig.json goes under (kept at stop); default a fresh temp dir, removed at stop. */
  dir?: string;
  configAccess?: NamesrvOptions["configAccess"];
}

/** The controller's options for the fixture: the schema's defaults, a fixed in-memory address. */
export function namesrvFixtureConfig(o: InProcessNamesrvOptions, dir: string): Pick<NamesrvOptions, "namesrv" | "remoting" | "storeDir"> {
  const d = defaultConfig("namesrv");
  return {
    namesrv: { ...d.namesrv, listen: { host: NAMESRV_FIXTURE_HOST, port: NAMESRV_FIXTURE_PORT }, ...o.namesrv },
    remoting: { ...d.remoting, ...o.remoting },
    storeDir: dir,
  };
}

export class InProcessNamesrv implements AsyncDisposable {
  readonly controller: NamesrvController;
  readonly sim: SimClock;
  readonly clock: ClockView;
  readonly network: MemNetwork;
  readonly dir: string;
  /** "127.0.0.1:9876": where brokers and clients connect (over `network`). */
  readonly addr: string;
  readonly log: Logger & { lines: { level: string; msg: string }[] };
  readonly #ownDir: boolean;
  readonly #clients: RemotingClient[] = [];
  #main: RemotingClient | null = null;
  #stopped = false;

  private constructor(o: InProcessNamesrvOptions) {
    this.sim = o.sim ?? new SimClock();
    this.clock = o.clock ?? this.sim.view();
    this.network = o.network ?? new MemNetwork();
    this.#ownDir = o.dir === undefined;
    this.dir = o.dir ?? mkdtempSync(join(tmpdir(), "rocketbun-namesrv-fixture-"));
    this.log = recordingLogger();
    this.controller = new NamesrvController({
      ...namesrvFixtureConfig(o, this.dir),
      clock: this.clock,
      network: this.network,
      ...(o.configAccess ? { configAccess: o.configAccess } : {}),
    });
    this.addr = `${NAMESRV_FIXTURE_HOST}:${NAMESRV_FIXTURE_PORT}`;
  }

  /** Builds a name server, loads its KV store, "binds" its port in memory and starts its liveness scan. */
  static start(o: InProcessNamesrvOptions = {}): InProcessNamesrv {
    const n = new InProcessNamesrv(o);
    try {
      n.controller.start();
    } catch (e) {
      if (n.#ownDir) rmSync(n.dir, { recursive: true, force: true });
      throw e;
    }
    return n;
  }

  /** A new client with its own connection (as a separate broker or client process). */
  client(onRequest?: (conn: RemotingConnection, cmd: RemotingCommand) => void): RemotingClient {
    const c = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: this.log, network: this.network, clock: this.sim.view(), ...(onRequest ? { onRequest } : {}) });
    this.#clients.push(c);
    return c;
  }

  /** One request over the fixture's main client connection. Responses need no virtual time to pass. */
  call(cmd: RemotingCommand, timeoutMs = 60_000): Promise<RemotingCommand> {
    this.#main ??= this.client();
    return this.#main.invoke(this.addr, cmd, timeoutMs);
  }

  /** Like `call`, and fails with the remark unless the answer is SUCCESS. */
  async ok(cmd: RemotingCommand): Promise<RemotingCommand> {
    const res = await this.call(cmd);
    if (res.code !== ResponseCode.SUCCESS) throw new Error(`request ${cmd.code} answered ${res.code}: ${res.remark ?? ""}`);
    return res;
  }

  /** Moves virtual time, running every name server timer due on the way (the liveness scan). */
  advance(ms: number): Promise<void> {
    return this.sim.advance(ms);
  }

  /** Clean stop: name server stopped, clients closed, its clock dead, the temp dir removed. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.controller.stop();
    for (const c of this.#clients.splice(0)) await c.close();
    this.clock.dead = true;
    if (this.#ownDir) rmSync(this.dir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

// ----------------------------------------------------------------------------------- requests

/** Who registers: a broker's identity as REGISTER_BROKER's header names it. */
export interface BrokerIdentity {
  clusterName?: string;
  brokerName?: string;
  brokerAddr?: string;
  brokerId?: number;
  haServerAddr?: string;
}

export interface RegisterOptions extends BrokerIdentity {
  /** Topic name → its config (defaults: defaultTopicConfig, 4 queues); default none. */
  topics?: Record<string, Partial<TopicConfig>>;
  dataVersion?: DataVersion;
  /** The compressed body form (broker option compressedRegister). */
  compressed?: boolean;
}

/** The identity fields with the fixture's defaults: broker-a, master, DefaultCluster, 10.0.0.1:10911. */
export function brokerIdentity(o: BrokerIdentity = {}): Required<BrokerIdentity> {
  return {
    clusterName: o.clusterName ?? "DefaultCluster",
    brokerName: o.brokerName ?? "broker-a",
    brokerAddr: o.brokerAddr ?? "10.0.0.1:10911",
    brokerId: o.brokerId ?? 0,
    haServerAddr: o.haServerAddr ?? "10.0.0.1:10912",
  };
}

/** REGISTER_BROKER as a broker sends it: the identity header, the topics body and its CRC. */
export function registerBrokerRequest(o: RegisterOptions = {}): RemotingCommand {
  const id = brokerIdentity(o);
  const topicConfigTable: Record<string, TopicConfig> = {};
  for (const [name, t] of Object.entries(o.topics ?? {})) {
    topicConfigTable[name] = { ...defaultTopicConfig(name), readQueueNums: 4, writeQueueNums: 4, ...t, topicName: name };
  }
  const b = { dataVersion: o.dataVersion ?? { counter: 1, timestamp: 1 }, topicConfigTable, filterServerList: [] };
  const body = o.compressed ? encodeRegisterBrokerBodyCompressed(b) : encodeRegisterBrokerBody(b);
  return createRequest(
    RequestCode.REGISTER_BROKER,
    {
      ...id,
      brokerId: String(id.brokerId),
      compressed: String(o.compressed ?? false),
      bodyCrc32: String(Bun.hash.crc32(body) & 0x7fffffff),
    },
    body,
  );
}

/** QUERY_DATA_VERSION: does the name server hold `dataVersion` for this broker (and a liveness touch if so). */
export function queryDataVersionRequest(o: BrokerIdentity & { dataVersion: DataVersion }): RemotingCommand {
  const id = brokerIdentity(o);
  return createRequest(RequestCode.QUERY_DATA_VERSION, { ...id, brokerId: String(id.brokerId) }, jsonBytes(o.dataVersion));
}
