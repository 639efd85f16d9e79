/**
 * The name server's request processor (RocketMQ's DefaultRequestProcessor): request code →
 * handler over RouteInfoManager and KvConfigManager. Codes not listed here are answered
 * REQUEST_CODE_NOT_SUPPORTED by the remoting server.
 */
import { jsonBytes } from "../common/json.ts";
import type { Logger } from "../common/log.ts";
import {
  answerConfigUpdate,
  createResponse,
  optBool,
  optInt,
  optString,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
  reqInt,
  reqString,
  RequestCode,
  ResponseCode,
} from "../remoting/index.ts";
import { parseJsonBytes } from "../common/json.ts";
import type { KvConfigManager } from "./kv-config.ts";
import { decodeRegisterBrokerBody } from "../protocol/register-broker-body.ts";
import type { NamesrvConfigAccess } from "./namesrv.ts";
import type { RouteInfoManager } from "./route-info-manager.ts";
import type { DataVersion } from "../protocol/data-version.ts";
import { NAMESPACE_ORDER_TOPIC_CONFIG } from "../protocol/route.ts";
import { TOPIC_SYS_FLAG_UNIT, TOPIC_SYS_FLAG_UNIT_SUB } from "../protocol/topics.ts";

export interface NamesrvProcessorDeps {
  routes: RouteInfoManager;
  kv: KvConfigManager;
  orderMessageEnable: boolean;
  now: () => number;
  log: Logger;
  config?: NamesrvConfigAccess;
}

type Handler = (conn: RemotingConnection, cmd: RemotingCommand) => RemotingCommand | null | Promise<RemotingCommand>;

export class NamesrvRequestProcessor implements RequestProcessor {
  readonly #d: NamesrvProcessorDeps;
  readonly #handlers: Map<number, Handler>;

  constructor(deps: NamesrvProcessorDeps) {
    this.#d = deps;
    this.#handlers = new Map<number, Handler>([
      [RequestCode.REGISTER_BROKER, (c, cmd) => this.#registerBroker(c, cmd)],
      [RequestCode.UNREGISTER_BROKER, (_c, cmd) => this.#unregisterBroker(cmd)],
      [RequestCode.QUERY_DATA_VERSION, (_c, cmd) => this.#queryDataVersion(cmd)],
      [RequestCode.GET_ROUTEINFO_BY_TOPIC, (_c, cmd) => this.#getRoute(cmd)],
      [RequestCode.GET_BROKER_CLUSTER_INFO, (_c, cmd) => ok(cmd, undefined, jsonBytes(this.#d.routes.getClusterInfo()))],
      [RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, (_c, cmd) => ok(cmd, undefined, jsonBytes({ topicList: this.#d.routes.getAllTopics() }))],
      [
        RequestCode.GET_TOPICS_BY_CLUSTER,
        (_c, cmd) => ok(cmd, undefined, jsonBytes({ topicList: this.#d.routes.getTopicsByCluster(reqString(cmd.extFields, "cluster")) })),
      ],
      [RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, (_c, cmd) => ok(cmd, undefined, jsonBytes(this.#d.routes.getSystemTopicList()))],
      [RequestCode.GET_UNIT_TOPIC_LIST, (_c, cmd) => this.#unitTopics(cmd, (f) => (f & TOPIC_SYS_FLAG_UNIT) !== 0)],
      [RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST, (_c, cmd) => this.#unitTopics(cmd, (f) => (f & TOPIC_SYS_FLAG_UNIT_SUB) !== 0)],
      [
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
        (_c, cmd) => this.#unitTopics(cmd, (f) => (f & TOPIC_SYS_FLAG_UNIT) === 0 && (f & TOPIC_SYS_FLAG_UNIT_SUB) !== 0),
      ],
      [RequestCode.DELETE_TOPIC_IN_NAMESRV, (_c, cmd) => this.#deleteTopic(cmd)],
      [RequestCode.WIPE_WRITE_PERM_OF_BROKER, (_c, cmd) => this.#setWritePerm(cmd, false)],
      [RequestCode.ADD_WRITE_PERM_OF_BROKER, (_c, cmd) => this.#setWritePerm(cmd, true)],
      [RequestCode.PUT_KV_CONFIG, (_c, cmd) => this.#putKv(cmd)],
      [RequestCode.GET_KV_CONFIG, (_c, cmd) => this.#getKv(cmd)],
      [RequestCode.DELETE_KV_CONFIG, (_c, cmd) => this.#deleteKv(cmd)],
      [RequestCode.GET_KVLIST_BY_NAMESPACE, (_c, cmd) => this.#kvList(cmd)],
      [RequestCode.GET_NAMESRV_CONFIG, (_c, cmd) => this.#getConfig(cmd)],
      [RequestCode.UPDATE_NAMESRV_CONFIG, (c, cmd) => this.#updateConfig(c, cmd)],
    ]);
  }

  /** The request codes this processor serves (the controller registers exactly these). */
  get codes(): number[] {
    return [...this.#handlers.keys()];
  }

  process(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | null | Promise<RemotingCommand> {
    const h = this.#handlers.get(cmd.code);
    if (!h) return createResponse(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, ` request type ${cmd.code} not supported`);
    return h(conn, cmd);
  }

  /** GET_NAMESRV_CONFIG: the body is `key=value` lines (what `mqadmin getNamesrvConfig` prints). */
  #getConfig(cmd: RemotingCommand): RemotingCommand {
    if (!this.#d.config) return createResponse(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, ` request type ${cmd.code} not supported`);
    return ok(cmd, undefined, new TextEncoder().encode(this.#d.config.get().properties));
  }

  /**
   * UPDATE_NAMESRV_CONFIG (`mqadmin updateNamesrvConfig -k K -v V`): a properties body, applied
   * through the same path as a SIGHUP reload. A key that needs a restart is NO_PERMISSION, an
   * unknown key or a bad value SYSTEM_ERROR; either way nothing changes. An empty body succeeds.
   */
  async #updateConfig(conn: RemotingConnection, cmd: RemotingCommand): Promise<RemotingCommand> {
    const config = this.#d.config;
    if (!config) return createResponse(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, ` request type ${cmd.code} not supported`);
    return answerConfigUpdate(cmd, conn.remoteAddress, (text, from) => config.update(text, from));
  }

  #registerBroker(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand {
    const ext = cmd.extFields;
    const brokerName = reqString(ext, "brokerName");
    const brokerAddr = reqString(ext, "brokerAddr");
    const clusterName = reqString(ext, "clusterName");
    const haServerAddr = optString(ext, "haServerAddr") ?? "";
    const brokerId = reqInt(ext, "brokerId");
    const compressed = optBool(ext, "compressed") ?? false;
    const bodyCrc32 = optInt(ext, "bodyCrc32") ?? 0;
    if (bodyCrc32 !== 0 && cmd.body) {
      const crc = Bun.hash.crc32(cmd.body) & 0x7fffffff;
      if (crc !== bodyCrc32) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, "crc32 not match");
    }
    const body = decodeRegisterBrokerBody(cmd.body, compressed, cmd.version);
    if ("invalid" in body) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, body.invalid);
    const result = this.#d.routes.registerBroker(
      {
        clusterName,
        brokerAddr,
        brokerName,
        brokerId,
        haServerAddr,
        dataVersion: body.dataVersion,
        topicConfigTable: body.topicConfigTable,
        filterServerList: body.filterServerList,
        connectionId: conn.id,
      },
      this.#d.now(),
    );
    const ext2: Record<string, string> = {};
    if (result.masterAddr !== undefined) ext2.masterAddr = result.masterAddr;
    if (result.haServerAddr !== undefined) ext2.haServerAddr = result.haServerAddr;
    const order = this.#d.kv.list(NAMESPACE_ORDER_TOPIC_CONFIG);
    return ok(cmd, ext2, order ? jsonBytes({ table: order }) : undefined);
  }

  #unregisterBroker(cmd: RemotingCommand): RemotingCommand {
    const ext = cmd.extFields;
    const removed = this.#d.routes.unregisterBroker(
      reqString(ext, "clusterName"),
      reqString(ext, "brokerAddr"),
      reqString(ext, "brokerName"),
      reqInt(ext, "brokerId"),
    );
    this.#d.log.info(`unregister broker ${ext?.brokerName} ${ext?.brokerAddr} id=${ext?.brokerId}: ${removed ? "removed" : "not registered"}`);
    return ok(cmd);
  }

  #queryDataVersion(cmd: RemotingCommand): RemotingCommand {
    const brokerAddr = reqString(cmd.extFields, "brokerAddr");
    let theirs: DataVersion = { counter: 0, timestamp: 0 };
    if (cmd.body && cmd.body.length > 0) {
      const raw = parseJsonBytes(cmd.body) as Partial<DataVersion> | null;
      theirs = { counter: Number(raw?.counter ?? 0), timestamp: Number(raw?.timestamp ?? 0) };
    }
    const changed = this.#d.routes.isBrokerTopicConfigChanged(brokerAddr, theirs);
    if (!changed) this.#d.routes.touchBroker(brokerAddr, this.#d.now());
    const ours = this.#d.routes.queryBrokerDataVersion(brokerAddr);
    return ok(cmd, { changed: String(changed) }, ours ? jsonBytes(ours) : undefined);
  }

  #getRoute(cmd: RemotingCommand): RemotingCommand {
    const topic = reqString(cmd.extFields, "topic");
    const order = this.#d.orderMessageEnable ? this.#d.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, topic) : undefined;
    const route = this.#d.routes.getTopicRoute(topic, order);
    if (!route) {
      return createResponse(cmd, ResponseCode.TOPIC_NOT_EXIST, `No topic route info in name server for the topic: ${topic}`);
    }
    return ok(cmd, undefined, jsonBytes(route));
  }

  #unitTopics(cmd: RemotingCommand, pick: (sysFlag: number) => boolean): RemotingCommand {
    const topics = this.#d.routes.getAllTopics().filter((t) => {
      const route = this.#d.routes.getTopicRoute(t);
      return route !== null && route.queueDatas.some((q) => pick(q.topicSysFlag));
    });
    return ok(cmd, undefined, jsonBytes({ topicList: topics }));
  }

  #deleteTopic(cmd: RemotingCommand): RemotingCommand {
    const topic = reqString(cmd.extFields, "topic");
    this.#d.routes.deleteTopic(topic, optString(cmd.extFields, "clusterName"));
    return ok(cmd);
  }

  #setWritePerm(cmd: RemotingCommand, writable: boolean): RemotingCommand {
    const n = this.#d.routes.setWritePermOfBroker(reqString(cmd.extFields, "brokerName"), writable);
    return ok(cmd, writable ? { addTopicCount: String(n) } : { wipeTopicCount: String(n) });
  }

  #putKv(cmd: RemotingCommand): RemotingCommand {
    const ext = cmd.extFields;
    this.#d.kv.put(reqString(ext, "namespace"), reqString(ext, "key"), reqString(ext, "value"));
    return ok(cmd);
  }

  #getKv(cmd: RemotingCommand): RemotingCommand {
    const ns = reqString(cmd.extFields, "namespace");
    const key = reqString(cmd.extFields, "key");
    const value = this.#d.kv.get(ns, key);
    if (value === undefined) return createResponse(cmd, ResponseCode.QUERY_NOT_FOUND, `No config item, Namespace: ${ns} Key: ${key}`);
    return ok(cmd, { value });
  }

  #deleteKv(cmd: RemotingCommand): RemotingCommand {
    this.#d.kv.delete(reqString(cmd.extFields, "namespace"), reqString(cmd.extFields, "key"));
    return ok(cmd);
  }

  #kvList(cmd: RemotingCommand): RemotingCommand {
    const ns = reqString(cmd.extFields, "namespace");
    const table = this.#d.kv.list(ns);
    if (!table) return createResponse(cmd, ResponseCode.QUERY_NOT_FOUND, `No config item, Namespace: ${ns}`);
    return ok(cmd, undefined, jsonBytes({ table }));
  }
}

function ok(cmd: RemotingCommand, ext?: Record<string, string>, body?: Uint8Array): RemotingCommand {
  return createResponse(cmd, ResponseCode.SUCCESS, undefined, ext, body);
}
