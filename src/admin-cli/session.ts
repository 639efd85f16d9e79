/**
 * The wire side of `rocketbun admin`: one RemotingClient (a connection per address, reused by
 * every request of the command), requests signed with the ACL credentials when there are any
 * (src/protocol/acl-signature.ts, as mqadmin's AclClientRPCHook), and the name-server look-ups
 * most commands start with (DefaultMQAdminExtImpl's): cluster info, routes, a broker name's
 * address. Only RocketMQ remoting requests, so it works against Apache RocketMQ as well.
 *
 * Every failure becomes an AdminError whose message names the server, the request and what it
 * answered; the runner prints it and exits 1.
 */
import { parseJsonBytes } from "../common/json.ts";
import { scope } from "../common/log.ts";
import {
  createRequest,
  RemotingClient,
  RemotingTimeoutError,
  REMOTING_CLIENT_DEFAULTS,
  RequestCode,
  requestCodeName,
  ResponseCode,
  responseCodeName,
  type ExtFields,
  type RemotingCommand,
} from "../remoting/index.ts";
import { signRequest, type AclCredentials } from "../protocol/acl-signature.ts";
import { MASTER_ID, type BrokerData, type ClusterInfo, type TopicRouteData } from "../protocol/route.ts";
import { parseRoute } from "../client/route.ts";
import { clientTls, type ClientInstanceOptions, type ClientTlsOptions } from "../client/client-instance.ts";
import { parseClusterInfo } from "./bodies.ts";

/** A command that could not be done (exit 1). */
export class AdminError extends Error {
  override name = "AdminError";
  /** The RocketMQ response code when a server refused, else -1. */
  readonly code: number;

  constructor(message: string, code = -1) {
    super(message);
    this.code = code;
  }
}

export interface CallOptions {
  /** Default: the session's timeout. */
  timeoutMs?: number;
  /** The request's language field (Java's resetOffsetByTime -c sends CPP). */
  language?: string;
}

export interface SessionOptions {
  namesrv: readonly string[];
  timeoutMs: number;
  credentials?: AclCredentials;
  /** As the client library takes it: true = encrypt, trust any certificate; `{ ca }` = check the chain. */
  tls?: true | ClientTlsOptions;
}

export class AdminSession {
  readonly namesrvAddrs: readonly string[];
  readonly timeoutMs: number;
  readonly credentials: AclCredentials | undefined;
  readonly #tls: true | ClientTlsOptions | undefined;
  readonly #client: RemotingClient;
  #cluster: ClusterInfo | undefined;

  constructor(o: SessionOptions) {
    this.namesrvAddrs = o.namesrv;
    this.timeoutMs = o.timeoutMs;
    this.credentials = o.credentials;
    this.#tls = o.tls;
    const tls = clientTls(o.tls);
    this.#client = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("admin"), ...(tls ? { tls: () => tls } : {}) });
  }

  /** The options a client-library Producer needs to reach the same cluster the same way. */
  clientOptions(): ClientInstanceOptions {
    return {
      namesrv: [...this.namesrvAddrs],
      requestTimeoutMs: this.timeoutMs,
      ...(this.credentials !== undefined ? { credentials: this.credentials } : {}),
      ...(this.#tls !== undefined ? { tls: this.#tls } : {}),
    };
  }

  close(): Promise<void> {
    return this.#client.close();
  }

  /** One request to one server; a non-success answer is returned, a lost connection or timeout thrown. */
  async call(addr: string, code: number, ext?: ExtFields, body?: Uint8Array, o: CallOptions = {}): Promise<RemotingCommand> {
    const timeoutMs = o.timeoutMs ?? this.timeoutMs;
    const cmd = createRequest(code, ext, body);
    if (o.language !== undefined) cmd.language = o.language;
    if (this.credentials !== undefined) signRequest(cmd, this.credentials);
    try {
      return await this.#client.invoke(addr, cmd, timeoutMs);
    } catch (e) {
      const why = e instanceof RemotingTimeoutError ? `no answer within ${timeoutMs} ms` : e instanceof Error ? e.message : String(e);
      throw new AdminError(`${requestCodeName(code)} to ${addr} failed: ${why}`);
    }
  }

  /** `call`, and a non-success answer thrown as an AdminError naming the server and the remark. */
  async ok(addr: string, code: number, ext?: ExtFields, body?: Uint8Array, o?: CallOptions): Promise<RemotingCommand> {
    const res = await this.call(addr, code, ext, body, o);
    if (res.code !== ResponseCode.SUCCESS) throw refused(addr, code, res);
    return res;
  }

  /** A name-server request, to each name server in turn until one answers (a refusal is an answer). */
  async namesrv(code: number, ext?: ExtFields, body?: Uint8Array): Promise<RemotingCommand> {
    const problems: string[] = [];
    for (const addr of this.namesrvAddrs) {
      try {
        return await this.call(addr, code, ext, body);
      } catch (e) {
        problems.push(e instanceof Error ? e.message : String(e));
      }
    }
    throw new AdminError(`no name server answered (${this.namesrvAddrs.join(";")}): ${problems.join("; ")}`);
  }

  async namesrvOk(code: number, ext?: ExtFields, body?: Uint8Array): Promise<RemotingCommand> {
    const res = await this.namesrv(code, ext, body);
    if (res.code !== ResponseCode.SUCCESS) throw refused("the name server", code, res);
    return res;
  }

  /** GET_BROKER_CLUSTER_INFO, fetched once per command. */
  async clusterInfo(): Promise<ClusterInfo> {
    if (this.#cluster !== undefined) return this.#cluster;
    const res = await this.namesrvOk(RequestCode.GET_BROKER_CLUSTER_INFO);
    const info = parseClusterInfo(res.body);
    if ("invalid" in info) throw new AdminError(`the name server's cluster info is not readable: ${info.invalid}`);
    this.#cluster = info;
    return info;
  }

  /** A topic's route, or null when the name server knows no such topic. */
  async route(topic: string): Promise<TopicRouteData | null> {
    const res = await this.namesrv(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic });
    if (res.code === ResponseCode.TOPIC_NOT_EXIST) return null;
    if (res.code !== ResponseCode.SUCCESS) throw refused("the name server", RequestCode.GET_ROUTEINFO_BY_TOPIC, res);
    const route = res.body ? parseRoute(parseJsonBytes(res.body)) : { invalid: "empty body" };
    if ("invalid" in route) throw new AdminError(`the route of ${topic} is not readable: ${route.invalid}`);
    return route;
  }

  async requireRoute(topic: string): Promise<TopicRouteData> {
    const r = await this.route(topic);
    if (r === null) throw new AdminError(`topic ${topic} does not exist (the name server has no route for it)`, ResponseCode.TOPIC_NOT_EXIST);
    return r;
  }

  /** The broker names of a cluster; an unknown cluster is an error (mqadmin prints one and goes on). */
  async brokerNamesOf(cluster: string): Promise<string[]> {
    const info = await this.clusterInfo();
    const names = info.clusterAddrTable[cluster];
    if (names === undefined) {
      const known = Object.keys(info.clusterAddrTable).sort();
      throw new AdminError(`cluster ${cluster} is not known to the name server (clusters: ${known.join(", ") || "none"})`);
    }
    return [...names].sort();
  }

  /** Masters of a cluster (CommandUtil.fetchMasterAddrByClusterName). */
  async mastersOf(cluster: string): Promise<string[]> {
    const info = await this.clusterInfo();
    const out: string[] = [];
    for (const name of await this.brokerNamesOf(cluster)) {
      const m = info.brokerAddrTable[name]?.brokerAddrs[String(MASTER_ID)];
      if (m !== undefined) out.push(m);
    }
    return out;
  }

  /** Every member, masters and slaves, of a cluster (fetchMasterAndSlaveAddrByClusterName). */
  async membersOf(cluster: string): Promise<string[]> {
    const info = await this.clusterInfo();
    const out: string[] = [];
    for (const name of await this.brokerNamesOf(cluster)) out.push(...sortedAddrs(info.brokerAddrTable[name]));
    return out;
  }

  /** The broker name an address belongs to (CommandUtil.fetchBrokerNameByAddr). */
  async brokerNameOf(addr: string): Promise<string> {
    const info = await this.clusterInfo();
    for (const [name, bd] of Object.entries(info.brokerAddrTable)) if (Object.values(bd.brokerAddrs).includes(addr)) return name;
    throw new AdminError(`no broker registered with the name server has the address ${addr}`);
  }

  /** The master of a broker name, else its lowest-id member (BrokerData.selectBrokerAddr). */
  async addrOfBrokerName(brokerName: string): Promise<string> {
    const bd = (await this.clusterInfo()).brokerAddrTable[brokerName];
    const addr = bd ? selectBrokerAddr(bd) : undefined;
    if (addr === undefined) throw new AdminError(`broker ${brokerName} is not registered with the name server`);
    return addr;
  }
}

/** The master's address, else any member's (Java's selectBrokerAddr picks a random one). */
export function selectBrokerAddr(bd: BrokerData): string | undefined {
  return bd.brokerAddrs[String(MASTER_ID)] ?? sortedAddrs(bd)[0];
}

function sortedAddrs(bd: BrokerData | undefined): string[] {
  if (bd === undefined) return [];
  return Object.entries(bd.brokerAddrs)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([, addr]) => addr);
}

export function refused(who: string, code: number, res: RemotingCommand): AdminError {
  const remark = res.remark ? `: ${res.remark}` : "";
  return new AdminError(`${who} refused ${requestCodeName(code)}: ${responseCodeName(res.code)} (${res.code})${remark}`, res.code);
}
