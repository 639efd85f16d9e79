/**
 * RouteInfoManager: the name server's whole state, in memory, with no IO (the controller feeds
 * it requests and the clock). Tables, as in RocketMQ 4.x:
 *
 *   topicQueueTable   topic       → brokerName → QueueData {readQueueNums, writeQueueNums, perm, topicSysFlag}
 *   brokerAddrTable   brokerName  → BrokerData {cluster, brokerName, brokerAddrs: brokerId → addr}
 *   clusterAddrTable  clusterName → set of brokerName
 *   brokerLiveTable   brokerAddr  → {lastUpdateTimestamp, dataVersion, connectionId, haServerAddr}
 *   filterServerTable brokerAddr  → filter server addresses
 *
 * Invariants (checked by tests):
 *   - every brokerName in topicQueueTable is in brokerAddrTable;
 *   - a BrokerData has at least one address; when its last address goes, its QueueData goes from
 *     every topic and a topic left with no QueueData is deleted;
 *   - only a master (brokerId 0) writes QueueData; a slave's topic configs are ignored, so a broker
 *     name whose master died keeps its queues (served by the slave) until its last address goes.
 */
import { assert } from "../common/assert.ts";
import { sameVersion, type DataVersion } from "../protocol/data-version.ts";
import { PermName } from "../protocol/permission.ts";
import { MASTER_ID, type BrokerData, type ClusterInfo, type QueueData, type TopicRouteData } from "../protocol/route.ts";
import type { TopicConfig } from "../protocol/topics.ts";

/** A broker name's addresses as the name server keeps them (the route's BrokerData has them as JSON keys). */
interface BrokerAddrs {
  cluster: string;
  brokerName: string;
  /** brokerId → address; 0 = master. */
  brokerAddrs: Map<number, string>;
}

export interface BrokerLiveInfo {
  lastUpdateTimestamp: number;
  dataVersion: DataVersion;
  connectionId: number | null;
  haServerAddr: string;
  clusterName: string;
  brokerName: string;
  brokerId: number;
}

export interface RegisterBrokerArgs {
  clusterName: string;
  brokerAddr: string;
  brokerName: string;
  brokerId: number;
  haServerAddr: string;
  dataVersion: DataVersion;
  topicConfigTable: Record<string, TopicConfig>;
  filterServerList: string[];
  connectionId: number | null;
}

export interface RegisterBrokerResult {
  masterAddr?: string;
  haServerAddr?: string;
}

export class RouteInfoManager {
  readonly #topicQueueTable = new Map<string, Map<string, QueueData>>();
  readonly #brokerAddrTable = new Map<string, BrokerAddrs>();
  readonly #clusterAddrTable = new Map<string, Set<string>>();
  readonly #brokerLiveTable = new Map<string, BrokerLiveInfo>();
  readonly #filterServerTable = new Map<string, string[]>();

  registerBroker(a: RegisterBrokerArgs, now: number): RegisterBrokerResult {
    let names = this.#clusterAddrTable.get(a.clusterName);
    if (!names) this.#clusterAddrTable.set(a.clusterName, (names = new Set()));
    names.add(a.brokerName);

    let firstRegister = false;
    let bd = this.#brokerAddrTable.get(a.brokerName);
    if (!bd) {
      firstRegister = true;
      bd = { cluster: a.clusterName, brokerName: a.brokerName, brokerAddrs: new Map() };
      this.#brokerAddrTable.set(a.brokerName, bd);
    }
    // The same address under another id means the broker switched role (slave promoted etc.).
    for (const [id, addr] of bd.brokerAddrs) {
      if (addr === a.brokerAddr && id !== a.brokerId) bd.brokerAddrs.delete(id);
    }
    const previous = bd.brokerAddrs.get(a.brokerId);
    if (previous !== undefined && previous !== a.brokerAddr) {
      // Another process took over this id: the old address no longer serves this broker name.
      this.#brokerLiveTable.delete(previous);
      this.#filterServerTable.delete(previous);
    }
    if (previous !== a.brokerAddr) firstRegister = true;
    bd.brokerAddrs.set(a.brokerId, a.brokerAddr);
    this.#assertOneIdPerAddr(bd);

    const live = this.#brokerLiveTable.get(a.brokerAddr);
    if (a.brokerId === MASTER_ID) {
      const changed = !live || !sameVersion(live.dataVersion, a.dataVersion);
      if (changed || firstRegister) {
        for (const tc of Object.values(a.topicConfigTable)) this.#upsertQueueData(a.brokerName, tc);
      }
    }

    this.#brokerLiveTable.set(a.brokerAddr, {
      lastUpdateTimestamp: now,
      dataVersion: { counter: a.dataVersion.counter, timestamp: a.dataVersion.timestamp },
      connectionId: a.connectionId,
      haServerAddr: a.haServerAddr,
      clusterName: a.clusterName,
      brokerName: a.brokerName,
      brokerId: a.brokerId,
    });
    assert(this.#clusterAddrTable.get(a.clusterName)?.has(a.brokerName) === true, "registered broker {} is not in its cluster {}", a.brokerName, a.clusterName);
    if (a.filterServerList.length > 0) this.#filterServerTable.set(a.brokerAddr, [...a.filterServerList]);
    else this.#filterServerTable.delete(a.brokerAddr);

    const result: RegisterBrokerResult = {};
    if (a.brokerId !== MASTER_ID) {
      const masterAddr = bd.brokerAddrs.get(MASTER_ID);
      const masterLive = masterAddr !== undefined ? this.#brokerLiveTable.get(masterAddr) : undefined;
      if (masterAddr !== undefined && masterLive) {
        result.masterAddr = masterAddr;
        result.haServerAddr = masterLive.haServerAddr;
      }
    }
    return result;
  }

  /** QUERY_DATA_VERSION: true if the broker's topic data differs from what we hold. */
  isBrokerTopicConfigChanged(brokerAddr: string, dataVersion: DataVersion): boolean {
    const live = this.#brokerLiveTable.get(brokerAddr);
    return !live || !sameVersion(live.dataVersion, dataVersion);
  }

  queryBrokerDataVersion(brokerAddr: string): DataVersion | undefined {
    return this.#brokerLiveTable.get(brokerAddr)?.dataVersion;
  }

  /** Refreshes liveness without new data (QUERY_DATA_VERSION with an unchanged version). */
  touchBroker(brokerAddr: string, now: number): void {
    const live = this.#brokerLiveTable.get(brokerAddr);
    if (live) live.lastUpdateTimestamp = now;
  }

  unregisterBroker(clusterName: string, brokerAddr: string, brokerName: string, brokerId: number): boolean {
    const live = this.#brokerLiveTable.get(brokerAddr);
    const bd = this.#brokerAddrTable.get(brokerName);
    if (!bd || bd.brokerAddrs.get(brokerId) !== brokerAddr) {
      // Unknown combination: still drop a live entry with this address so it cannot linger.
      if (live && live.brokerName === brokerName) return this.#removeBrokerAddr(brokerAddr);
      return false;
    }
    void clusterName;
    return this.#removeBrokerAddr(brokerAddr);
  }

  /** The connection that carried a broker's registrations closed: the broker is gone. */
  onConnectionClosed(connectionId: number): string[] {
    const gone: string[] = [];
    for (const [addr, live] of this.#brokerLiveTable) {
      if (live.connectionId === connectionId) gone.push(addr);
    }
    for (const addr of gone) this.#removeBrokerAddr(addr);
    return gone;
  }

  /** Removes brokers silent for longer than `expiredMs`; returns the removed entries. */
  scanNotActiveBroker(now: number, expiredMs: number): { brokerAddr: string; connectionId: number | null }[] {
    const expired: { brokerAddr: string; connectionId: number | null }[] = [];
    for (const [addr, live] of this.#brokerLiveTable) {
      if (now - live.lastUpdateTimestamp > expiredMs) expired.push({ brokerAddr: addr, connectionId: live.connectionId });
    }
    for (const e of expired) this.#removeBrokerAddr(e.brokerAddr);
    return expired;
  }

  getTopicRoute(topic: string, orderTopicConf?: string): TopicRouteData | null {
    const queues = this.#topicQueueTable.get(topic);
    if (!queues || queues.size === 0) return null;
    const route: TopicRouteData = { queueDatas: [], brokerDatas: [], filterServerTable: {} };
    for (const qd of queues.values()) {
      route.queueDatas.push({ ...qd });
      const bd = this.#brokerAddrTable.get(qd.brokerName);
      if (!bd) continue;
      const addrs: Record<string, string> = {};
      for (const [id, addr] of [...bd.brokerAddrs].sort((x, y) => x[0] - y[0])) {
        addrs[String(id)] = addr;
        const filters = this.#filterServerTable.get(addr);
        if (filters) route.filterServerTable[addr] = [...filters];
      }
      route.brokerDatas.push({ cluster: bd.cluster, brokerName: bd.brokerName, brokerAddrs: addrs });
    }
    if (route.brokerDatas.length === 0) return null;
    route.queueDatas.sort((x, y) => cmp(x.brokerName, y.brokerName));
    route.brokerDatas.sort((x, y) => cmp(x.brokerName, y.brokerName));
    if (orderTopicConf) route.orderTopicConf = orderTopicConf;
    return route;
  }

  /** GET_BROKER_CLUSTER_INFO body. */
  getClusterInfo(): ClusterInfo {
    const brokerAddrTable: Record<string, BrokerData> = {};
    for (const [name, bd] of [...this.#brokerAddrTable].sort((x, y) => cmp(x[0], y[0]))) {
      const addrs: Record<string, string> = {};
      for (const [id, addr] of [...bd.brokerAddrs].sort((x, y) => x[0] - y[0])) addrs[String(id)] = addr;
      brokerAddrTable[name] = { cluster: bd.cluster, brokerName: name, brokerAddrs: addrs };
    }
    const clusterAddrTable: Record<string, string[]> = {};
    for (const [cluster, names] of [...this.#clusterAddrTable].sort((x, y) => cmp(x[0], y[0]))) {
      clusterAddrTable[cluster] = [...names].sort(cmp);
    }
    return { brokerAddrTable, clusterAddrTable };
  }

  getAllTopics(): string[] {
    return [...this.#topicQueueTable.keys()].sort(cmp);
  }

  getTopicsByCluster(cluster: string): string[] {
    const names = this.#clusterAddrTable.get(cluster);
    if (!names) return [];
    const out: string[] = [];
    for (const [topic, queues] of this.#topicQueueTable) {
      for (const bn of queues.keys()) {
        if (names.has(bn)) {
          out.push(topic);
          break;
        }
      }
    }
    return out.sort(cmp);
  }

  /** Cluster names and broker names: RocketMQ's "system topics" (each broker/cluster has one). */
  getSystemTopicList(): { topicList: string[]; brokerAddr?: string } {
    const topics = new Set<string>();
    let brokerAddr: string | undefined;
    for (const [cluster, names] of this.#clusterAddrTable) {
      topics.add(cluster);
      for (const n of names) topics.add(n);
    }
    for (const bd of this.#brokerAddrTable.values()) {
      const addr = bd.brokerAddrs.get(MASTER_ID) ?? bd.brokerAddrs.values().next().value;
      if (addr !== undefined) {
        brokerAddr = addr;
        break;
      }
    }
    const result: { topicList: string[]; brokerAddr?: string } = { topicList: [...topics].sort(cmp) };
    if (brokerAddr !== undefined) result.brokerAddr = brokerAddr;
    return result;
  }

  /** DELETE_TOPIC_IN_NAMESRV: the whole topic, or only the queues of one cluster's brokers. */
  deleteTopic(topic: string, clusterName?: string): boolean {
    const queues = this.#topicQueueTable.get(topic);
    if (!queues) return false;
    if (clusterName === undefined) {
      this.#topicQueueTable.delete(topic);
      return true;
    }
    const names = this.#clusterAddrTable.get(clusterName);
    if (!names) return false;
    for (const bn of names) queues.delete(bn);
    if (queues.size === 0) this.#topicQueueTable.delete(topic);
    return true;
  }

  /** WIPE_WRITE_PERM_OF_BROKER / ADD_WRITE_PERM_OF_BROKER: returns the number of topics touched. */
  setWritePermOfBroker(brokerName: string, writable: boolean): number {
    let count = 0;
    for (const queues of this.#topicQueueTable.values()) {
      const qd = queues.get(brokerName);
      if (!qd) continue;
      qd.perm = writable ? qd.perm | PermName.WRITE : qd.perm & ~PermName.WRITE;
      count++;
    }
    return count;
  }

  /** Live brokers for the admin API and tests. */
  getLiveBrokers(): ({ brokerAddr: string } & BrokerLiveInfo)[] {
    return [...this.#brokerLiveTable]
      .map(([brokerAddr, live]) => ({ brokerAddr, ...live, dataVersion: { ...live.dataVersion } }))
      .sort((x, y) => cmp(x.brokerName, y.brokerName) || x.brokerId - y.brokerId);
  }

  #upsertQueueData(brokerName: string, tc: TopicConfig): void {
    const qd: QueueData = {
      brokerName,
      readQueueNums: tc.readQueueNums,
      writeQueueNums: tc.writeQueueNums,
      perm: tc.perm,
      topicSysFlag: tc.topicSysFlag ?? 0,
    };
    let queues = this.#topicQueueTable.get(tc.topicName);
    if (!queues) this.#topicQueueTable.set(tc.topicName, (queues = new Map()));
    queues.set(brokerName, qd);
  }

  #removeBrokerAddr(brokerAddr: string): boolean {
    const live = this.#brokerLiveTable.get(brokerAddr);
    this.#brokerLiveTable.delete(brokerAddr);
    this.#filterServerTable.delete(brokerAddr);
    let removed = live !== undefined;
    for (const [brokerName, bd] of this.#brokerAddrTable) {
      for (const [id, addr] of bd.brokerAddrs) {
        if (addr === brokerAddr) {
          bd.brokerAddrs.delete(id);
          removed = true;
        }
      }
      if (bd.brokerAddrs.size > 0) continue;
      // Last address of this broker name is gone: its queues and cluster membership go too.
      this.#brokerAddrTable.delete(brokerName);
      const names = this.#clusterAddrTable.get(bd.cluster);
      if (names) {
        names.delete(brokerName);
        if (names.size === 0) this.#clusterAddrTable.delete(bd.cluster);
      }
      for (const [topic, queues] of this.#topicQueueTable) {
        queues.delete(brokerName);
        if (queues.size === 0) this.#topicQueueTable.delete(topic);
      }
    }
    assert(!this.#brokerLiveTable.has(brokerAddr), "removed broker {} is still live", brokerAddr);
    return removed;
  }

  /** A broker name lists an address under one id at most (a role switch re-registers it under the new id). */
  #assertOneIdPerAddr(bd: BrokerAddrs): void {
    const seen = new Set<string>();
    for (const addr of bd.brokerAddrs.values()) {
      assert(!seen.has(addr), "broker {} lists address {} under two ids", bd.brokerName, addr);
      seen.add(addr);
    }
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
