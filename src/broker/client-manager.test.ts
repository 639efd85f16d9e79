/**
 * ConsumerManager and ProducerManager with fake connections: registration from heartbeats,
 * Java's subscription version rules, removal on connection close / UNREGISTER_CLIENT / heartbeat
 * expiry, and when the members-changed callback (NOTIFY_CONSUMER_IDS_CHANGED) fires.
 */
import { describe, expect, test } from "bun:test";
import type { RemotingConnection } from "../remoting/index.ts";
import { ConsumerManager, ProducerManager, type ClientChannel, type ConsumerRegistration } from "./client-manager.ts";
import { buildSubscription, type SubscriptionData } from "./subscription.ts";

let nextConn = 1;
function conn(): RemotingConnection {
  return { id: nextConn++, closed: false } as unknown as RemotingConnection;
}

function channel(clientId: string, c: RemotingConnection, at = 1000): ClientChannel {
  return { clientId, conn: c, language: "JAVA", version: 409, lastUpdateTimestamp: at };
}

function sub(topic: string, expr: string, subVersion: number): SubscriptionData {
  const s = buildSubscription(topic, expr, undefined, subVersion);
  if ("invalid" in s) throw new Error(s.invalid);
  return s;
}

function reg(group: string, ch: ClientChannel, subs: SubscriptionData[]): ConsumerRegistration {
  return {
    group,
    consumeType: "CONSUME_PASSIVELY",
    messageModel: "CLUSTERING",
    consumeFromWhere: "CONSUME_FROM_LAST_OFFSET",
    subscriptions: subs,
    channel: ch,
  };
}

function setup() {
  const notified: { group: string; members: string[] }[] = [];
  const cm = new ConsumerManager((group, members) => notified.push({ group, members: members.map((m) => m.clientId).sort() }));
  return { cm, notified };
}

describe("ConsumerManager: registration", () => {
  test("a first member creates the group and is announced; a repeat heartbeat changes nothing", () => {
    const { cm, notified } = setup();
    const c = conn();
    expect(cm.register(reg("G", channel("a", c), [sub("T", "*", 1)]))).toBe(true);
    expect(notified).toEqual([{ group: "G", members: ["a"] }]);
    expect(cm.clientIds("G")).toEqual(["a"]);
    const g = cm.group("G")!;
    expect(g.consumeType).toBe("CONSUME_PASSIVELY");
    expect(g.messageModel).toBe("CLUSTERING");
    expect(cm.register(reg("G", channel("a", c, 2000), [sub("T", "*", 1)]))).toBe(false);
    expect(notified.length).toBe(1);
    expect(cm.group("G")!.channels.get("a")!.lastUpdateTimestamp).toBe(2000);
  });

  test("a second member notifies every member; ids are listed sorted", () => {
    const { cm, notified } = setup();
    cm.register(reg("G", channel("b", conn()), [sub("T", "*", 1)]));
    cm.register(reg("G", channel("a", conn()), [sub("T", "*", 1)]));
    expect(notified.at(-1)).toEqual({ group: "G", members: ["a", "b"] });
    expect(cm.clientIds("G")).toEqual(["a", "b"]);
    expect(cm.clientIds("nobody")).toEqual([]);
  });

  test("a known client id on a new connection (reconnect) is a membership change; the old connection closing is not", () => {
    const { cm, notified } = setup();
    const old = conn();
    const fresh = conn();
    cm.register(reg("G", channel("a", old), [sub("T", "*", 1)]));
    expect(cm.register(reg("G", channel("a", fresh), [sub("T", "*", 1)]))).toBe(true);
    expect(notified.length).toBe(2);
    cm.onConnectionClosed(old);
    expect(cm.clientIds("G")).toEqual(["a"]);
    expect(notified.length).toBe(2);
  });

  test("subVersion rules: only a strictly newer version replaces a topic's subscription", () => {
    const { cm } = setup();
    const c = conn();
    cm.register(reg("G", channel("a", c), [sub("T", "TagA", 100)]));
    cm.register(reg("G", channel("a", c), [sub("T", "TagB", 50)]));
    expect(cm.subscription("G", "T")!.subString).toBe("TagA");
    cm.register(reg("G", channel("a", c), [sub("T", "TagC", 100)]));
    expect(cm.subscription("G", "T")!.subString).toBe("TagA");
    cm.register(reg("G", channel("a", c), [sub("T", "TagD", 101)]));
    expect(cm.subscription("G", "T")).toMatchObject({ subString: "TagD", subVersion: 101 });
  });

  test("a topic added to a member's heartbeat is a change and notifies the group (Java's updateSubscription)", () => {
    const { cm, notified } = setup();
    const c = conn();
    cm.register(reg("G", channel("a", c), [sub("T", "*", 1)]));
    expect(cm.register(reg("G", channel("a", c), [sub("T", "*", 1), sub("U", "*", 1)]))).toBe(true);
    expect(notified.length).toBe(2);
    expect(cm.groupsOfTopic("U")).toEqual(["G"]);
  });

  test("a topic no longer in the heartbeat is dropped (pulls relying on it get SUBSCRIPTION_NOT_EXIST)", () => {
    const { cm, notified } = setup();
    const c = conn();
    cm.register(reg("G", channel("a", c), [sub("T", "*", 1), sub("U", "*", 1)]));
    expect(cm.register(reg("G", channel("a", c), [sub("T", "*", 1)]))).toBe(true);
    expect(cm.subscription("G", "U")).toBeUndefined();
    expect(cm.subscription("G", "T")).toBeDefined();
    expect(cm.groupsOfTopic("U")).toEqual([]);
    expect(notified.length).toBe(2);
  });

  test("a changed expression with a newer version is taken but is not a membership change", () => {
    const { cm, notified } = setup();
    const c = conn();
    cm.register(reg("G", channel("a", c), [sub("T", "TagA", 1)]));
    expect(cm.register(reg("G", channel("a", c), [sub("T", "TagB", 2)]))).toBe(false);
    expect(cm.subscription("G", "T")!.subString).toBe("TagB");
    expect(notified.length).toBe(1);
  });

  test("groups are independent", () => {
    const { cm } = setup();
    const c = conn();
    cm.register(reg("G1", channel("a", c), [sub("T", "*", 1)]));
    cm.register(reg("G2", channel("a", c), [sub("U", "*", 1)]));
    expect(
      cm
        .groups()
        .map((g) => g.groupName)
        .sort(),
    ).toEqual(["G1", "G2"]);
    expect(cm.subscription("G1", "U")).toBeUndefined();
    expect(cm.groupsOfTopic("T")).toEqual(["G1"]);
  });
});

describe("ConsumerManager: removal", () => {
  test("UNREGISTER: the member leaves, the rest are told; the last one leaving removes the group silently", () => {
    const { cm, notified } = setup();
    cm.register(reg("G", channel("a", conn()), [sub("T", "*", 1)]));
    cm.register(reg("G", channel("b", conn()), [sub("T", "*", 1)]));
    notified.length = 0;
    expect(cm.unregister("G", "a")).toBe(true);
    expect(notified).toEqual([{ group: "G", members: ["b"] }]);
    expect(cm.unregister("G", "a")).toBe(false);
    expect(cm.unregister("nope", "b")).toBe(false);
    expect(cm.unregister("G", "b")).toBe(true);
    expect(notified.length).toBe(1);
    expect(cm.group("G")).toBeUndefined();
    expect(cm.subscription("G", "T")).toBeUndefined();
  });

  test("connection close drops every membership of that connection, in every group", () => {
    const { cm, notified } = setup();
    const shared = conn();
    const other = conn();
    cm.register(reg("G1", channel("a", shared), [sub("T", "*", 1)]));
    cm.register(reg("G2", channel("a", shared), [sub("T", "*", 1)]));
    cm.register(reg("G2", channel("b", other), [sub("T", "*", 1)]));
    notified.length = 0;
    cm.onConnectionClosed(shared);
    expect(cm.group("G1")).toBeUndefined();
    expect(cm.clientIds("G2")).toEqual(["b"]);
    expect(notified).toEqual([{ group: "G2", members: ["b"] }]);
    cm.onConnectionClosed(conn());
    expect(notified.length).toBe(1);
  });

  test("expiry: members silent for longer than expiredMs are dropped and their connections returned", () => {
    const { cm, notified } = setup();
    const stale = conn();
    const live = conn();
    cm.register(reg("G", channel("old", stale, 1000), [sub("T", "*", 1)]));
    cm.register(reg("G", channel("new", live, 5000), [sub("T", "*", 1)]));
    notified.length = 0;
    expect(cm.scanExpired(1000 + 3000, 3000)).toEqual([]);
    expect(cm.scanExpired(1000 + 3001, 3000)).toEqual([stale]);
    expect(cm.clientIds("G")).toEqual(["new"]);
    expect(notified).toEqual([{ group: "G", members: ["new"] }]);
    // A heartbeat keeps a member alive.
    cm.register(reg("G", channel("new", live, 9000), [sub("T", "*", 1)]));
    expect(cm.scanExpired(11_000, 3000)).toEqual([]);
    expect(cm.scanExpired(12_001, 3000)).toEqual([live]);
    expect(cm.group("G")).toBeUndefined();
  });
});

describe("ProducerManager", () => {
  test("register, unregister, close and expiry", () => {
    const pm = new ProducerManager();
    const c1 = conn();
    const c2 = conn();
    pm.register("P", channel("a", c1, 1000));
    pm.register("P", channel("b", c2, 5000));
    pm.register("Q", channel("a", c1, 1000));
    expect(pm.channels("P").map((c) => c.clientId)).toEqual(["a", "b"]);
    expect(pm.anyChannel("P")?.clientId).toBe("a");
    pm.unregister("P", "a");
    expect(pm.channels("P").map((c) => c.clientId)).toEqual(["b"]);
    pm.onConnectionClosed(c1);
    expect(pm.anyChannel("Q")).toBeUndefined();
    expect(pm.scanExpired(8000, 3000)).toEqual([]);
    expect(pm.scanExpired(8001, 3000)).toEqual([c2]);
    expect(pm.channels("P")).toEqual([]);
    pm.unregister("nobody", "x");
  });

  test("a client id on a new connection is kept when its old connection closes; a re-registered one is dropped with its connection", () => {
    const pm = new ProducerManager();
    const old = conn();
    const now = conn();
    pm.register("P", channel("a", old));
    pm.register("P", channel("a", now));
    pm.onConnectionClosed(old);
    expect(pm.channels("P").map((c) => c.conn)).toEqual([now]);
    pm.unregister("P", "a");
    pm.register("P", channel("a", now));
    pm.register("Q", channel("a", now));
    pm.onConnectionClosed(now);
    expect(pm.groupNames()).toEqual([]);
  });
});
