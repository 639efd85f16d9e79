import { describe, expect, test } from "bun:test";
import { RouteInfoManager, type RegisterBrokerArgs } from "./route-info-manager.ts";
import { defaultTopicConfig, type TopicConfig } from "../protocol/topics.ts";

const test8: Record<string, TopicConfig> = {
  test: { ...defaultTopicConfig("test"), readQueueNums: 8, writeQueueNums: 8, perm: 6 },
};

function reg(overrides: Partial<RegisterBrokerArgs>): RegisterBrokerArgs {
  return {
    clusterName: "rocketmq-cluster",
    brokerAddr: "192.168.116.115:10911",
    brokerName: "broker-a",
    brokerId: 0,
    haServerAddr: "192.168.116.115:10912",
    dataVersion: { counter: 1, timestamp: 1000 },
    topicConfigTable: test8,
    filterServerList: [],
    connectionId: null,
    ...overrides,
  };
}

/** The four registerBroker calls of the seed document (000_3ac6b2d8388150aa.txt). */
function seedDeployment(rim: RouteInfoManager, now = 0): void {
  rim.registerBroker(reg({}), now);
  rim.registerBroker(reg({ brokerAddr: "192.168.116.116:10911", brokerName: "broker-b", brokerId: 0, connectionId: 2 }), now);
  rim.registerBroker(
    reg({ brokerAddr: "192.168.116.115:11911", brokerName: "broker-b", brokerId: 1, haServerAddr: "192.168.116.115:11912", connectionId: 3 }),
    now,
  );
  rim.registerBroker(
    reg({ brokerAddr: "192.168.116.116:11911", brokerName: "broker-a", brokerId: 1, haServerAddr: "192.168.116.115:11912", connectionId: 4 }),
    now,
  );
}

describe("RouteInfoManager", () => {
  test("seed deployment: route of test lists both brokers, 8/8 queues, perm 6, masters and slaves", () => {
    const rim = new RouteInfoManager();
    seedDeployment(rim);
    const route = rim.getTopicRoute("test");
    expect(route).not.toBeNull();
    expect(route!.queueDatas).toEqual([
      { brokerName: "broker-a", readQueueNums: 8, writeQueueNums: 8, perm: 6, topicSysFlag: 0 },
      { brokerName: "broker-b", readQueueNums: 8, writeQueueNums: 8, perm: 6, topicSysFlag: 0 },
    ]);
    expect(route!.brokerDatas).toEqual([
      { cluster: "rocketmq-cluster", brokerName: "broker-a", brokerAddrs: { "0": "192.168.116.115:10911", "1": "192.168.116.116:11911" } },
      { cluster: "rocketmq-cluster", brokerName: "broker-b", brokerAddrs: { "0": "192.168.116.116:10911", "1": "192.168.116.115:11911" } },
    ]);
    const info = rim.getClusterInfo();
    expect(info.clusterAddrTable).toEqual({ "rocketmq-cluster": ["broker-a", "broker-b"] });
    expect(Object.keys(info.brokerAddrTable)).toEqual(["broker-a", "broker-b"]);
  });

  test("a slave's register result names its live master and the master's HA address", () => {
    const rim = new RouteInfoManager();
    rim.registerBroker(reg({}), 0);
    const r = rim.registerBroker(reg({ brokerAddr: "10.0.0.2:10911", brokerId: 1, haServerAddr: "10.0.0.2:10912" }), 0);
    expect(r).toEqual({ masterAddr: "192.168.116.115:10911", haServerAddr: "192.168.116.115:10912" });
    expect(rim.registerBroker(reg({}), 0)).toEqual({});
  });

  test("a slave registering before its master gets no master address", () => {
    const rim = new RouteInfoManager();
    expect(rim.registerBroker(reg({ brokerId: 1, brokerAddr: "10.0.0.2:10911" }), 0)).toEqual({});
  });

  test("slave topic configs never create routes", () => {
    const rim = new RouteInfoManager();
    rim.registerBroker(reg({ brokerId: 1, brokerAddr: "10.0.0.2:10911" }), 0);
    expect(rim.getTopicRoute("test")).toBeNull();
    expect(rim.getAllTopics()).toEqual([]);
  });

  test("master gone, slave alive: the route keeps its queues with only the slave address", () => {
    const rim = new RouteInfoManager();
    seedDeployment(rim);
    rim.unregisterBroker("rocketmq-cluster", "192.168.116.115:10911", "broker-a", 0);
    const route = rim.getTopicRoute("test")!;
    expect(route.queueDatas.map((q) => q.brokerName)).toEqual(["broker-a", "broker-b"]);
    expect(route.brokerDatas[0]!.brokerAddrs).toEqual({ "1": "192.168.116.116:11911" });
  });

  test("last address of a broker name gone: its queues go; topic with no queues is deleted", () => {
    const rim = new RouteInfoManager();
    seedDeployment(rim);
    rim.unregisterBroker("rocketmq-cluster", "192.168.116.115:10911", "broker-a", 0);
    rim.unregisterBroker("rocketmq-cluster", "192.168.116.116:11911", "broker-a", 1);
    expect(rim.getTopicRoute("test")!.queueDatas.map((q) => q.brokerName)).toEqual(["broker-b"]);
    expect(rim.getClusterInfo().clusterAddrTable).toEqual({ "rocketmq-cluster": ["broker-b"] });
    rim.onConnectionClosed(2);
    rim.onConnectionClosed(3);
    expect(rim.getTopicRoute("test")).toBeNull();
    expect(rim.getAllTopics()).toEqual([]);
    expect(rim.getClusterInfo()).toEqual({ brokerAddrTable: {}, clusterAddrTable: {} });
  });

  test("expiry removes only brokers silent for longer than the limit", () => {
    const rim = new RouteInfoManager();
    seedDeployment(rim, 0);
    rim.registerBroker(reg({ brokerAddr: "192.168.116.116:10911", brokerName: "broker-b", connectionId: 2 }), 100_000);
    const expired = rim
      .scanNotActiveBroker(120_001, 120_000)
      .map((e) => e.brokerAddr)
      .sort();
    expect(expired).toEqual(["192.168.116.115:10911", "192.168.116.115:11911", "192.168.116.116:11911"]);
    expect(rim.getLiveBrokers().map((b) => b.brokerAddr)).toEqual(["192.168.116.116:10911"]);
    expect(rim.getTopicRoute("test")!.brokerDatas).toEqual([
      { cluster: "rocketmq-cluster", brokerName: "broker-b", brokerAddrs: { "0": "192.168.116.116:10911" } },
    ]);
  });

  test("same data version does not overwrite queue data; a new version does; missing topics are kept", () => {
    const rim = new RouteInfoManager();
    rim.registerBroker(reg({}), 0);
    rim.setWritePermOfBroker("broker-a", false);
    rim.registerBroker(reg({}), 1);
    expect(rim.getTopicRoute("test")!.queueDatas[0]!.perm).toBe(4);
    rim.registerBroker(
      reg({
        dataVersion: { counter: 2, timestamp: 2000 },
        topicConfigTable: { other: { ...defaultTopicConfig("other"), readQueueNums: 4, writeQueueNums: 4 } },
      }),
      2,
    );
    expect(rim.getAllTopics()).toEqual(["other", "test"]);
  });

  test("wipe and add write perm count touched topics", () => {
    const rim = new RouteInfoManager();
    seedDeployment(rim);
    expect(rim.setWritePermOfBroker("broker-a", false)).toBe(1);
    expect(rim.getTopicRoute("test")!.queueDatas[0]!.perm).toBe(4);
    expect(rim.setWritePermOfBroker("broker-a", true)).toBe(1);
    expect(rim.getTopicRoute("test")!.queueDatas[0]!.perm).toBe(6);
    expect(rim.setWritePermOfBroker("nope", true)).toBe(0);
  });

  test("topics by cluster and delete by cluster", () => {
    const rim = new RouteInfoManager();
    seedDeployment(rim);
    rim.registerBroker(reg({ clusterName: "c2", brokerName: "broker-c", brokerAddr: "10.0.0.9:10911", connectionId: 9 }), 0);
    expect(rim.getTopicsByCluster("c2")).toEqual(["test"]);
    expect(rim.deleteTopic("test", "c2")).toBe(true);
    expect(rim.getTopicRoute("test")!.queueDatas.map((q) => q.brokerName)).toEqual(["broker-a", "broker-b"]);
    expect(rim.deleteTopic("test")).toBe(true);
    expect(rim.getTopicRoute("test")).toBeNull();
  });

  test("an address re-registering under another id replaces its old id (role switch)", () => {
    const rim = new RouteInfoManager();
    rim.registerBroker(reg({ brokerId: 1, brokerAddr: "10.0.0.2:10911" }), 0);
    rim.registerBroker(reg({ brokerId: 0, brokerAddr: "10.0.0.2:10911" }), 0);
    expect(rim.getClusterInfo().brokerAddrTable["broker-a"]!.brokerAddrs).toEqual({ "0": "10.0.0.2:10911" });
  });
});
