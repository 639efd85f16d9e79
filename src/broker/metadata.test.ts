import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ConsumerOffsetManager,
  DelayOffsetManager,
  PRE_CREATED_GROUPS,
  SubscriptionGroupManager,
  TopicConfigManager,
  defaultSubscriptionGroupConfig,
  subscriptionGroupFromJson,
  topicConfigFromJson,
} from "./metadata.ts";
import { PermName, isReadable, isWriteable } from "../protocol/permission.ts";
import { defaultTopicConfig, isNotAllowedSendTopic, validateTopicName, type TopicConfig } from "../protocol/topics.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), "metadata-test-"));
  dirs.push(d);
  return d;
}
function cfgFile(dir: string, name: string): string {
  return join(dir, "config", name);
}
function writeRaw(dir: string, name: string, text: string): void {
  mkdirSync(join(dir, "config"), { recursive: true });
  writeFileSync(cfgFile(dir, name), text);
}
/** A clock that moves 1 ms per reading, so every version bump has its own timestamp. */
function clock(start = 1_700_000_000_000): () => number {
  let t = start;
  return () => t++;
}
function topic(name: string, over: Partial<TopicConfig> = {}): TopicConfig {
  return { ...defaultTopicConfig(name), readQueueNums: 4, writeQueueNums: 4, ...over };
}

describe("TopicConfigManager", () => {
  test("round-trips through a restart, pretty-printed standard JSON in fastjson field order", () => {
    const dir = tmp();
    const a = new TopicConfigManager({ dir, now: clock() });
    expect(a.load()).toEqual([]);
    expect(a.loadedFrom).toBe("none");
    expect(a.upsert(topic("TopicA"))).toBeNull();
    expect(a.upsert(topic("TopicB", { perm: PermName.READ, topicFilterType: "MULTI_TAG", order: true, topicSysFlag: 1 }))).toBeNull();

    const text = readFileSync(cfgFile(dir, "topics.json"), "utf8");
    expect(text).toContain('\n  "topicConfigTable": {\n    "TopicA": {\n      "order": false,\n      "perm": 6,');
    expect(JSON.parse(text)).toEqual(a.wrapper());

    const b = new TopicConfigManager({ dir, now: clock(0) });
    expect(b.load()).toEqual([]);
    expect(b.loadedFrom).toBe("main");
    expect(b.wrapper()).toEqual(a.wrapper());
    expect(b.dataVersion).toEqual(a.dataVersion);
    expect(b.get("TopicB")).toEqual(topic("TopicB", { perm: 4, topicFilterType: "MULTI_TAG", order: true, topicSysFlag: 1 }));
    expect(b.all().map((t) => t.topicName)).toEqual(["TopicA", "TopicB"]);
  });

  test("a Java-written topics.json (tabs, fastjson order) loads", () => {
    const dir = tmp();
    writeRaw(
      dir,
      "topics.json",
      '{\n\t"dataVersion":{\n\t\t"counter":3,\n\t\t"timestamp":1700000000000\n\t},\n\t"topicConfigTable":{\n\t\t"TopicA":{\n' +
        '\t\t\t"order":false,\n\t\t\t"perm":6,\n\t\t\t"readQueueNums":4,\n\t\t\t"topicFilterType":"SINGLE_TAG",\n' +
        '\t\t\t"topicName":"TopicA",\n\t\t\t"topicSysFlag":0,\n\t\t\t"writeQueueNums":4\n\t\t}\n\t}\n}',
    );
    const m = new TopicConfigManager({ dir });
    expect(m.load()).toEqual([]);
    expect(m.dataVersion).toEqual({ counter: 3, timestamp: 1700000000000 });
    expect(m.get("TopicA")).toEqual(topic("TopicA"));
  });

  test("wrong types in topics.json are named and skipped; the rest loads", () => {
    const dir = tmp();
    writeRaw(
      dir,
      "topics.json",
      JSON.stringify({
        dataVersion: { counter: "3", timestamp: 1 },
        topicConfigTable: {
          Good: { topicName: "Good" },
          BadPerm: { topicName: "BadPerm", perm: "6" },
          "bad name": { topicName: "bad name" },
          Mismatch: { topicName: "Other" },
          Big: { topicName: "Big", readQueueNums: 2 ** 31 },
          Null: null,
        },
      }),
    );
    const m = new TopicConfigManager({ dir, now: () => 42 });
    expect(m.load()).toEqual([
      'config/topics.json: dataVersion.counter: expected an integer, got "3" (ignored)',
      'config/topics.json: topicConfigTable.BadPerm.perm: expected an integer, got "6"; entry skipped',
      "config/topics.json: topicConfigTable.bad name.topicName: The specified topic contains illegal characters, " +
        "allowing only ^[%|a-zA-Z0-9_-]+$; entry skipped",
      'config/topics.json: topicConfigTable.Mismatch.topicName: "Other" does not match its key; entry skipped',
      "config/topics.json: topicConfigTable.Big.readQueueNums: 2147483648 is outside 0..2147483647; entry skipped",
      "config/topics.json: topicConfigTable.Null: expected an object, got null; entry skipped",
    ]);
    expect(m.loadedFrom).toBe("main");
    expect(m.all()).toEqual([defaultTopicConfig("Good")]);
    expect(m.dataVersion).toEqual({ counter: 0, timestamp: 42 });
  });

  test("dataVersion bumps on each change and not on a no-op", () => {
    const dir = tmp();
    const m = new TopicConfigManager({ dir, now: clock(1000) });
    m.load();
    const v0 = m.dataVersion;
    expect(v0.counter).toBe(0);
    m.upsert(topic("T"));
    const v1 = m.dataVersion;
    expect(v1.counter).toBe(1);
    expect(v1.timestamp).toBeGreaterThan(v0.timestamp);

    expect(m.upsert(topic("T"))).toBeNull(); // identical
    expect(m.delete("nope")).toBe(false);
    expect(m.dataVersion).toEqual(v1);

    m.upsert(topic("T", { writeQueueNums: 8 }));
    expect(m.dataVersion.counter).toBe(2);
    expect(m.delete("T")).toBe(true);
    expect(m.dataVersion.counter).toBe(3);
    expect(m.get("T")).toBeUndefined();

    const again = new TopicConfigManager({ dir });
    again.load();
    expect(again.dataVersion).toEqual(m.dataVersion);
    expect(again.all()).toEqual([]);
  });

  test("upsert rejects an invalid config and changes nothing", () => {
    const m = new TopicConfigManager({ dir: tmp() });
    m.load();
    expect(m.upsert(topic("bad name"))).toContain("illegal characters");
    expect(m.upsert(topic("T", { perm: 16 }))).toBe("perm: 16 is outside 0..15");
    expect(m.upsert(topic("T", { readQueueNums: -1 }))).toContain("readQueueNums");
    expect(m.upsert(topic("T", { readQueueNums: 1.5 }))).toContain("expected an integer");
    expect(m.all()).toEqual([]);
    expect(m.dataVersion.counter).toBe(0);
  });

  test("ensureSystemTopics on a fresh dir gives exactly the docs/STORAGE.md §8 set; a second run is a no-op", () => {
    const dir = tmp();
    const m = new TopicConfigManager({ dir, now: clock() });
    m.load();
    const opts = { clusterName: "DefaultCluster", brokerName: "broker-a", autoCreateTopicEnable: true, defaultTopicQueueNums: 8 };
    expect(m.ensureSystemTopics(opts).length).toBe(8);
    const got = Object.fromEntries(m.all().map((t) => [t.topicName, [t.readQueueNums, t.writeQueueNums, t.perm]]));
    expect(got).toEqual({
      SELF_TEST_TOPIC: [1, 1, 6],
      TBW102: [8, 8, 7],
      BenchmarkTest: [1024, 1024, 6],
      DefaultCluster: [16, 16, 7],
      "broker-a": [1, 1, 7],
      OFFSET_MOVED_EVENT: [1, 1, 6],
      SCHEDULE_TOPIC_XXXX: [18, 18, 6],
      DefaultCluster_REPLY_TOPIC: [1, 1, 6],
    });
    for (const t of m.all()) expect([t.topicFilterType, t.topicSysFlag, t.order]).toEqual(["SINGLE_TAG", 0, false]);
    expect(m.dataVersion.counter).toBe(1); // one bump for the whole batch

    // A restart with the same settings adds nothing and keeps the version the name server knows.
    const again = new TopicConfigManager({ dir, now: clock(5) });
    again.load();
    expect(again.ensureSystemTopics(opts)).toEqual([]);
    expect(again.dataVersion).toEqual(m.dataVersion);

    // An operator's change to a system topic survives the next start (file wins, as in Java).
    again.upsert({ ...again.get("BenchmarkTest")!, readQueueNums: 8, writeQueueNums: 8 });
    const third = new TopicConfigManager({ dir });
    third.load();
    expect(third.ensureSystemTopics(opts)).toEqual([]);
    expect(third.get("BenchmarkTest")!.readQueueNums).toBe(8);
  });

  test("ensureSystemTopics without autoCreateTopicEnable has no TBW102", () => {
    const m = new TopicConfigManager({ dir: tmp() });
    m.load();
    m.ensureSystemTopics({ clusterName: "C", brokerName: "b", autoCreateTopicEnable: false, defaultTopicQueueNums: 8 });
    expect(m.get("TBW102")).toBeUndefined();
    expect(m.all().length).toBe(7);
    expect(m.get("C")!.perm).toBe(7);
    expect(() => m.ensureSystemTopics({ clusterName: "bad name", brokerName: "b", autoCreateTopicEnable: false, defaultTopicQueueNums: 8 })).toThrow(
      /invariant/,
    );
  });

  test("replaceAll adopts a master's table and version, and skips an equal version", () => {
    const master = new TopicConfigManager({ dir: tmp(), now: clock() });
    master.load();
    master.upsert(topic("M1"));
    master.upsert(topic("M2"));
    const slave = new TopicConfigManager({ dir: tmp(), now: clock(0) });
    slave.load();
    slave.upsert(topic("OnlyOnSlave"));

    const body = JSON.parse(JSON.stringify(master.wrapper())) as unknown;
    expect(slave.replaceAll(body)).toEqual([]);
    expect(slave.wrapper()).toEqual(master.wrapper());
    expect(slave.get("OnlyOnSlave")).toBeUndefined();

    expect(slave.replaceAll({ dataVersion: master.dataVersion, topicConfigTable: {} })).toEqual([]); // same version: no-op
    expect(slave.all().length).toBe(2);
    expect(slave.replaceAll([1, 2])).toEqual(["topic config body: expected a JSON object at the top level; nothing changed"]);
    expect(slave.all().length).toBe(2);
  });

  test("a topic named __proto__ is an ordinary key", () => {
    const dir = tmp();
    const m = new TopicConfigManager({ dir });
    m.load();
    expect(m.upsert(topic("__proto__"))).toBeNull();
    expect(Object.keys(m.wrapper().topicConfigTable)).toEqual(["__proto__"]);
    const again = new TopicConfigManager({ dir });
    expect(again.load()).toEqual([]);
    expect(again.get("__proto__")).toEqual(topic("__proto__"));
  });
});

describe("topic names and permissions", () => {
  test("validateTopicName", () => {
    expect(validateTopicName("TopicA")).toBeNull();
    expect(validateTopicName("%RETRY%CG_1-x|y")).toBeNull();
    expect(validateTopicName("a".repeat(127))).toBeNull();
    expect(validateTopicName("a".repeat(128))).toBe("The specified topic is longer than topic max length.");
    expect(validateTopicName("")).toBe("The specified topic is blank.");
    expect(validateTopicName("   ")).toBe("The specified topic is blank.");
    for (const bad of ["a b", "a.b", "a/b", "topic@group", "ünï", "a\n"]) expect(validateTopicName(bad)).toContain("illegal characters");
  });

  test("isNotAllowedSendTopic", () => {
    const reserved = ["SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC"];
    for (const t of [...reserved, "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT"]) {
      expect(isNotAllowedSendTopic(t)).toBe(true);
    }
    expect(isNotAllowedSendTopic("TBW102")).toBe(false);
    expect(isNotAllowedSendTopic("TopicA")).toBe(false);
  });

  test("PermName bits", () => {
    expect(PermName).toEqual({ PRIORITY: 8, READ: 4, WRITE: 2, INHERIT: 1 });
    expect([isReadable(6), isWriteable(6)]).toEqual([true, true]);
    expect([isReadable(4), isWriteable(4)]).toEqual([true, false]);
    expect([isReadable(2), isWriteable(2)]).toEqual([false, true]);
    expect([isReadable(1), isWriteable(1)]).toEqual([false, false]);
  });

  test("topicConfigFromJson: missing fields take Java defaults, wrong types are reasons", () => {
    expect(topicConfigFromJson({ topicName: "T" })).toEqual(defaultTopicConfig("T"));
    expect(defaultTopicConfig("T")).toMatchObject({ readQueueNums: 16, writeQueueNums: 16, perm: 6 });
    expect(topicConfigFromJson({ topicName: "T", perm: "6" })).toEqual({ invalid: 'perm: expected an integer, got "6"' });
    expect(topicConfigFromJson({ topicName: "T", topicFilterType: "X" })).toEqual({
      invalid: 'topicFilterType: expected "SINGLE_TAG" or "MULTI_TAG", got "X"',
    });
    expect(topicConfigFromJson({ topicName: "T", order: 0 })).toEqual({ invalid: "order: expected true or false, got 0" });
    expect(topicConfigFromJson(null)).toEqual({ invalid: "expected an object, got null" });
  });
});

describe("ConsumerOffsetManager", () => {
  test("round-trips through a restart; file has quoted keys", () => {
    const dir = tmp();
    const a = new ConsumerOffsetManager({ dir });
    expect(a.load()).toEqual([]);
    expect(a.commit("CG", "TopicA", 0, 12)).toBeNull();
    expect(a.commit("CG", "TopicA", 1, -1)).toBeNull(); // stored as given, like Java
    expect(a.commit("CG", "%RETRY%CG", 0, 0)).toBeNull();
    expect(a.commit("CG2", "TopicA", 3, 2 ** 40)).toBeNull();
    expect(a.persistIfDirty()).toBe(true);
    const text = readFileSync(cfgFile(dir, "consumerOffset.json"), "utf8");
    expect(text).toContain('"TopicA@CG": {\n      "0": 12,\n      "1": -1\n    }');
    expect(JSON.parse(text)).toEqual(a.table());

    const b = new ConsumerOffsetManager({ dir });
    expect(b.load()).toEqual([]);
    expect(b.table()).toEqual(a.table());
    expect(b.query("CG", "TopicA", 0)).toBe(12);
    expect(b.query("CG", "TopicA", 1)).toBe(-1);
    expect(b.query("CG", "TopicA", 2)).toBe(-1);
    expect(b.query("CG2", "TopicA", 3)).toBe(2 ** 40);
    expect(b.queryAll("CG", "TopicA")).toEqual(
      new Map([
        [0, 12],
        [1, -1],
      ]),
    );
    expect(b.queryAll("nope", "TopicA")).toEqual(new Map());
    expect(b.dirty).toBe(false);
  });

  test("a Java-written file with unquoted numeric keys and tabs loads", () => {
    const dir = tmp();
    writeRaw(dir, "consumerOffset.json", '{\n\t"offsetTable":{\n\t\t"TopicA@CG":{0:12,1:10,2:11,3:9},\n\t\t"%RETRY%CG@CG":{0:0}\n\t}\n}');
    const m = new ConsumerOffsetManager({ dir });
    expect(m.load()).toEqual([]);
    expect(m.queryAll("CG", "TopicA")).toEqual(
      new Map([
        [0, 12],
        [1, 10],
        [2, 11],
        [3, 9],
      ]),
    );
    expect(m.query("CG", "%RETRY%CG", 0)).toBe(0);

    const compact = tmp();
    writeRaw(compact, "consumerOffset.json", '{"offsetTable":{"TopicA@CG":{0:12,1:10}}}');
    const c = new ConsumerOffsetManager({ dir: compact });
    expect(c.load()).toEqual([]);
    expect(c.table()).toEqual({ offsetTable: { "TopicA@CG": { "0": 12, "1": 10 } } });
  });

  test("bad entries are skipped and named; the rest loads", () => {
    const dir = tmp();
    writeRaw(
      dir,
      "consumerOffset.json",
      '{"offsetTable":{"TopicA@CG":{0:12,1:"10",-2:5,"x":1},"NoSeparator":{0:1},"a@b@c":{0:1},"T@G":[1],"Big@G":{0:9007199254740993}}}',
    );
    const m = new ConsumerOffsetManager({ dir });
    const problems = m.load();
    expect(problems).toEqual([
      'config/consumerOffset.json: offsetTable.TopicA@CG.1: expected an integer offset, got "10"; entry skipped',
      "config/consumerOffset.json: offsetTable.TopicA@CG.-2: queue id is not an integer 0..2147483647; entry skipped",
      "config/consumerOffset.json: offsetTable.TopicA@CG.x: queue id is not an integer 0..2147483647; entry skipped",
      "config/consumerOffset.json: offsetTable.NoSeparator: key is not <topic>@<group>; entry skipped",
      "config/consumerOffset.json: offsetTable.a@b@c: key is not <topic>@<group>; entry skipped",
      "config/consumerOffset.json: offsetTable.T@G: expected an object of queueId → offset, got [1]; entry skipped",
      "config/consumerOffset.json: offsetTable.Big@G.0: expected an integer offset, got 9007199254740992; entry skipped",
    ]);
    expect(m.loadedFrom).toBe("main");
    expect(m.queryAll("CG", "TopicA")).toEqual(new Map([[0, 12]]));
  });

  test("commit rejects what would not reload, and marks dirty only on a real change", () => {
    const m = new ConsumerOffsetManager({ dir: tmp() });
    m.load();
    expect(m.commit("G@x", "T", 0, 1)).toContain("group");
    expect(m.commit("G", "", 0, 1)).toContain("topic");
    expect(m.commit("G", "T", -1, 1)).toContain("queueId");
    expect(m.commit("G", "T", 0, 1.5)).toContain("offset");
    expect(m.dirty).toBe(false);
    m.commit("G", "T", 0, 5);
    expect(m.dirty).toBe(true);
    m.persistIfDirty();
    m.commit("G", "T", 0, 5);
    expect(m.dirty).toBe(false);
  });

  test("persistIfDirty writes only when something changed", () => {
    const dir = tmp();
    const path = cfgFile(dir, "consumerOffset.json");
    const m = new ConsumerOffsetManager({ dir });
    m.load();
    expect(m.persistIfDirty()).toBe(false);
    expect(existsSync(path)).toBe(false);
    m.commit("G", "T", 0, 1);
    expect(m.persistIfDirty()).toBe(true);
    // Overwrite behind the manager's back: a clean persistIfDirty must leave the sentinel alone.
    writeFileSync(path, "sentinel");
    expect(m.persistIfDirty()).toBe(false);
    expect(readFileSync(path, "utf8")).toBe("sentinel");
    m.commit("G", "T", 0, 1); // same value: still clean
    expect(m.persistIfDirty()).toBe(false);
    expect(readFileSync(path, "utf8")).toBe("sentinel");
    m.commit("G", "T", 0, 2);
    expect(m.persistIfDirty()).toBe(true);
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({ offsetTable: { "T@G": { "0": 2 } } });
  });

  test("persistIfDirtyAsync: writes off the event loop, overlapping calls share one write, a change during it is kept for the next", async () => {
    const dir = tmp();
    const path = cfgFile(dir, "consumerOffset.json");
    const m = new ConsumerOffsetManager({ dir });
    m.load();
    expect(await m.persistIfDirtyAsync()).toBe(false);
    m.commit("G", "T", 0, 1);
    const first = m.persistIfDirtyAsync();
    const second = m.persistIfDirtyAsync();
    // Changed while the write runs: that write has the old table; the file is dirty again.
    m.commit("G", "T", 0, 2);
    expect(await first).toBe(true);
    expect(await second).toBe(true);
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({ offsetTable: { "T@G": { "0": 1 } } });
    expect(m.dirty).toBe(true);
    await m.idle();
    expect(m.persistIfDirty()).toBe(true);
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({ offsetTable: { "T@G": { "0": 2 } } });
    expect(existsSync(`${path}.tmp-async`)).toBe(false);
  });

  test("a failed write throws and stays dirty, so the next tick retries", () => {
    const dir = tmp();
    const m = new ConsumerOffsetManager({ dir });
    m.load();
    m.commit("G", "T", 0, 1);
    writeFileSync(join(dir, "config"), "a file where the config directory should be");
    expect(() => m.persistIfDirty()).toThrow();
    expect(m.dirty).toBe(true);
    rmSync(join(dir, "config"));
    expect(m.persistIfDirty()).toBe(true);
    expect(m.dirty).toBe(false);
  });

  test("removeGroup, removeTopic, groupsOf, topicsOf", () => {
    const m = new ConsumerOffsetManager({ dir: tmp() });
    m.load();
    m.commit("G1", "T1", 0, 1);
    m.commit("G1", "T2", 0, 1);
    m.commit("G2", "T1", 0, 1);
    m.commit("G2", "%RETRY%G2", 0, 1);
    m.persistIfDirty();
    expect(m.groupsOf("T1")).toEqual(["G1", "G2"]);
    expect(m.topicsOf("G2")).toEqual(["T1", "%RETRY%G2"]);
    expect(m.removeTopic("T1")).toBe(2);
    expect(m.dirty).toBe(true);
    expect(m.groupsOf("T1")).toEqual([]);
    expect(m.removeGroup("G2")).toBe(1);
    expect(m.removeGroup("nope")).toBe(0);
    expect(m.topicsOf("G1")).toEqual(["T2"]);
    expect(Object.keys(m.table().offsetTable)).toEqual(["T2@G1"]);
  });

  test("replaceAll merges per topic@group like Java's putAll, and persists", () => {
    const dir = tmp();
    const slave = new ConsumerOffsetManager({ dir });
    slave.load();
    slave.commit("G", "T", 0, 3);
    slave.commit("G", "T", 1, 3);
    slave.commit("Local", "T", 0, 7);
    expect(slave.replaceAll({ offsetTable: { "T@G": { 0: 10 } } })).toEqual([]);
    expect(slave.queryAll("G", "T")).toEqual(new Map([[0, 10]]));
    expect(slave.query("Local", "T", 0)).toBe(7);
    expect(slave.dirty).toBe(false);
    const reloaded = new ConsumerOffsetManager({ dir });
    reloaded.load();
    expect(reloaded.table()).toEqual(slave.table());
    expect(slave.replaceAll("nonsense")).toEqual(["consumer offset body: expected a JSON object at the top level; nothing changed"]);
  });
});

describe("DelayOffsetManager", () => {
  test("round-trips, reads Java's unquoted keys, defaults to 0", () => {
    const dir = tmp();
    writeRaw(dir, "delayOffset.json", '{\n\t"offsetTable":{1:0,2:0,3:5}\n}');
    const m = new DelayOffsetManager({ dir });
    expect(m.load()).toEqual([]);
    expect([m.get(1), m.get(3), m.get(18)]).toEqual([0, 5, 0]);
    expect(m.persistIfDirty()).toBe(false);
    m.set(3, 5); // unchanged
    expect(m.dirty).toBe(false);
    m.set(3, 6);
    m.set(18, 1);
    expect(m.persistIfDirty()).toBe(true);
    expect(readFileSync(cfgFile(dir, "delayOffset.json"), "utf8")).toContain('"offsetTable": {\n    "1": 0,');
    const again = new DelayOffsetManager({ dir });
    expect(again.load()).toEqual([]);
    expect(again.table()).toEqual({ offsetTable: { "1": 0, "2": 0, "3": 6, "18": 1 } });
    expect(() => m.set(0, 1)).toThrow(/invariant/);
    expect(() => m.set(1, -1)).toThrow(/invariant/);
  });

  test("bad entries skipped; replaceAll replaces the whole table", () => {
    const dir = tmp();
    writeRaw(dir, "delayOffset.json", '{"offsetTable":{0:1,1:-3,2:true,3:4}}');
    const m = new DelayOffsetManager({ dir });
    expect(m.load()).toEqual([
      "config/delayOffset.json: offsetTable.0: delay level is not an integer 1..2147483647; entry skipped",
      "config/delayOffset.json: offsetTable.1: expected a non-negative integer offset, got -3; entry skipped",
      "config/delayOffset.json: offsetTable.2: expected a non-negative integer offset, got true; entry skipped",
    ]);
    expect(m.table()).toEqual({ offsetTable: { "3": 4 } });
    expect(m.replaceAll({ offsetTable: { 1: 9 } })).toEqual([]);
    expect(m.table()).toEqual({ offsetTable: { "1": 9 } });
    const again = new DelayOffsetManager({ dir });
    again.load();
    expect(again.get(1)).toBe(9);
    expect(again.get(3)).toBe(0);
  });
});

describe("SubscriptionGroupManager", () => {
  test("pre-created groups on first start; round-trip through a restart", () => {
    const dir = tmp();
    const a = new SubscriptionGroupManager({ dir, now: clock() });
    expect(a.load()).toEqual([]);
    expect(a.all().map((g) => g.groupName)).toEqual([...PRE_CREATED_GROUPS]);
    expect(PRE_CREATED_GROUPS).toEqual([
      "TOOLS_CONSUMER",
      "FILTERSRV_CONSUMER",
      "SELF_TEST_C_GROUP",
      "CID_ONS-HTTP-PROXY",
      "CID_ONSAPI_PULL",
      "CID_ONSAPI_PERMISSION",
      "CID_ONSAPI_OWNER",
    ]);
    expect(a.dataVersion.counter).toBe(0);
    expect(a.upsert({ ...defaultSubscriptionGroupConfig("CG"), retryMaxTimes: 3, consumeBroadcastEnable: false })).toBeNull();

    const text = readFileSync(cfgFile(dir, "subscriptionGroup.json"), "utf8");
    expect(JSON.parse(text)).toEqual(a.wrapper());
    expect(text).toContain('"CG": {\n      "brokerId": 0,\n      "consumeBroadcastEnable": false,');

    const b = new SubscriptionGroupManager({ dir });
    expect(b.load()).toEqual([]);
    expect(b.wrapper()).toEqual(a.wrapper());
    expect(b.get("CG")!.retryMaxTimes).toBe(3);
  });

  test("defaults are RocketMQ's", () => {
    expect(defaultSubscriptionGroupConfig("G")).toEqual({
      groupName: "G",
      consumeEnable: true,
      consumeFromMinEnable: true,
      consumeBroadcastEnable: true,
      retryQueueNums: 1,
      retryMaxTimes: 16,
      brokerId: 0,
      whichBrokerWhenConsumeSlowly: 1,
      notifyConsumerIdsChangedEnable: true,
    });
    expect(subscriptionGroupFromJson({ groupName: "G" })).toEqual(defaultSubscriptionGroupConfig("G"));
  });

  test("findOrCreate: auto-create on and off", () => {
    const dir = tmp();
    const m = new SubscriptionGroupManager({ dir, now: clock() });
    m.load();
    expect(m.findOrCreate("CG", false)).toBeUndefined();
    expect(m.dataVersion.counter).toBe(0);
    expect(existsSync(cfgFile(dir, "subscriptionGroup.json"))).toBe(false);

    expect(m.findOrCreate("CG", true)).toEqual(defaultSubscriptionGroupConfig("CG"));
    expect(m.dataVersion.counter).toBe(1);
    expect(m.findOrCreate("CG", false)).toEqual(defaultSubscriptionGroupConfig("CG")); // now known
    expect(m.findOrCreate("CG", true)).toEqual(defaultSubscriptionGroupConfig("CG"));
    expect(m.dataVersion.counter).toBe(1); // finding is not a change

    // Java's system-group prefix is created even with auto-creation off.
    expect(m.findOrCreate("CID_RMQ_SYS_TRANS", false)).toBeDefined();
    // A name that breaks the group-name rule is never created.
    expect(m.findOrCreate("bad group", true)).toBeUndefined();
    expect(m.findOrCreate("", true)).toBeUndefined();
    expect(m.findOrCreate("g".repeat(256), true)).toBeUndefined();

    const again = new SubscriptionGroupManager({ dir });
    again.load();
    expect(again.get("CG")).toEqual(defaultSubscriptionGroupConfig("CG"));
    expect(again.get("CID_RMQ_SYS_TRANS")).toBeDefined();
  });

  test("dataVersion: upsert no-op and delete", () => {
    const m = new SubscriptionGroupManager({ dir: tmp(), now: clock() });
    m.load();
    m.upsert(defaultSubscriptionGroupConfig("G"));
    const v = m.dataVersion;
    expect(m.upsert(defaultSubscriptionGroupConfig("G"))).toBeNull();
    expect(m.dataVersion).toEqual(v);
    expect(m.upsert({ ...defaultSubscriptionGroupConfig("G"), retryQueueNums: -1 })).toContain("retryQueueNums");
    expect(m.dataVersion).toEqual(v);
    expect(m.delete("G")).toBe(true);
    expect(m.delete("G")).toBe(false);
    expect(m.dataVersion.counter).toBe(v.counter + 1);
  });

  test("wrong types in a file are named and skipped", () => {
    const dir = tmp();
    writeRaw(
      dir,
      "subscriptionGroup.json",
      JSON.stringify({
        dataVersion: { counter: 2, timestamp: 5 },
        subscriptionGroupTable: {
          Good: { groupName: "Good", retryMaxTimes: 3 },
          BadBool: { groupName: "BadBool", consumeEnable: "yes" },
          Mismatch: { groupName: "Other" },
          NotObj: 7,
        },
      }),
    );
    const m = new SubscriptionGroupManager({ dir });
    expect(m.load()).toEqual([
      'config/subscriptionGroup.json: subscriptionGroupTable.BadBool.consumeEnable: expected true or false, got "yes"; entry skipped',
      'config/subscriptionGroup.json: subscriptionGroupTable.Mismatch.groupName: "Other" does not match its key; entry skipped',
      "config/subscriptionGroup.json: subscriptionGroupTable.NotObj: expected an object, got 7; entry skipped",
    ]);
    expect(m.get("Good")!.retryMaxTimes).toBe(3);
    expect(m.get("BadBool")).toBeUndefined();
    expect(m.dataVersion).toEqual({ counter: 2, timestamp: 5 });
    expect(m.get("TOOLS_CONSUMER")).toBeDefined(); // pre-created groups stay under a file's entries
  });

  test("replaceAll adopts the master's table and version", () => {
    const master = new SubscriptionGroupManager({ dir: tmp(), now: clock() });
    master.load();
    master.findOrCreate("CG", true);
    const slave = new SubscriptionGroupManager({ dir: tmp(), now: clock(0) });
    slave.load();
    slave.findOrCreate("SlaveOnly", true);
    expect(slave.replaceAll(JSON.parse(JSON.stringify(master.wrapper())))).toEqual([]);
    expect(slave.wrapper()).toEqual(master.wrapper());
    expect(slave.get("SlaveOnly")).toBeUndefined();
  });
});

describe("crash safety and damaged files (the load table in metadata-file.ts)", () => {
  test("corrupt main file falls back to .bak, reports the loss and keeps the damaged copy", () => {
    const dir = tmp();
    const m = new TopicConfigManager({ dir, now: clock() });
    m.load();
    m.upsert(topic("V1"));
    const v1 = m.wrapper();
    m.upsert(topic("V2")); // main = {V1,V2}, .bak = {V1}
    const path = cfgFile(dir, "topics.json");
    writeFileSync(path, '{"dataVersion":{"counter":2,');

    const again = new TopicConfigManager({ dir });
    const problems = again.load();
    expect(again.loadedFrom).toBe("bak");
    expect(problems.length).toBe(1);
    expect(problems[0]).toStartWith("config/topics.json: unreadable (not valid JSON");
    expect(problems[0]).toContain("loaded the previous version from topics.json.bak; damaged copy kept as topics.json.corrupt");
    expect(again.wrapper()).toEqual(v1);
    expect(readFileSync(`${path}.corrupt`, "utf8")).toBe('{"dataVersion":{"counter":2,');
  });

  test("a top level of the wrong shape counts as unparsable and falls back too", () => {
    const dir = tmp();
    const m = new ConsumerOffsetManager({ dir });
    m.load();
    m.commit("G", "T", 0, 1);
    m.persistIfDirty();
    m.commit("G", "T", 0, 2);
    m.persistIfDirty();
    writeFileSync(cfgFile(dir, "consumerOffset.json"), '{"offsetTable":[1,2]}');
    const again = new ConsumerOffsetManager({ dir });
    const problems = again.load();
    expect(problems[0]).toContain("offsetTable: expected an object, got [1,2]");
    expect(again.loadedFrom).toBe("bak");
    expect(again.query("G", "T", 0)).toBe(1);
  });

  test("both copies corrupt: problem reported, no throw, empty table, both kept", () => {
    const dir = tmp();
    writeRaw(dir, "subscriptionGroup.json", "garbage");
    writeFileSync(`${cfgFile(dir, "subscriptionGroup.json")}.bak`, "[]");
    const m = new SubscriptionGroupManager({ dir });
    let problems: string[] = [];
    expect(() => (problems = m.load())).not.toThrow();
    expect(m.loadedFrom).toBe("unreadable");
    expect(problems.length).toBe(1);
    expect(problems[0]).toContain("config/subscriptionGroup.json: no readable copy (subscriptionGroup.json: not valid JSON");
    expect(problems[0]).toContain("subscriptionGroup.json.bak: expected a JSON object at the top level");
    expect(existsSync(`${cfgFile(dir, "subscriptionGroup.json")}.corrupt`)).toBe(true);
    expect(existsSync(`${cfgFile(dir, "subscriptionGroup.json")}.bak.corrupt`)).toBe(true);
    expect(m.all().map((g) => g.groupName)).toEqual([...PRE_CREATED_GROUPS]); // only the built-ins

    const others: [string, { load(): string[]; readonly loadedFrom: string }][] = [
      ["topics.json", new TopicConfigManager({ dir })],
      ["consumerOffset.json", new ConsumerOffsetManager({ dir })],
      ["delayOffset.json", new DelayOffsetManager({ dir })],
    ];
    for (const [name, mgr] of others) {
      writeRaw(dir, name, "{");
      expect(mgr.load()[0]).toContain(`config/${name}: no readable copy`);
      expect(mgr.loadedFrom).toBe("unreadable");
    }
  });

  test("main file missing but .bak present (Java's delete-then-rename window) loads the .bak", () => {
    const dir = tmp();
    writeRaw(dir, "delayOffset.json.bak", '{"offsetTable":{1:7}}');
    const m = new DelayOffsetManager({ dir });
    expect(m.load()).toEqual(["config/delayOffset.json: missing; loaded the previous version from delayOffset.json.bak"]);
    expect(m.loadedFrom).toBe("bak");
    expect(m.get(1)).toBe(7);
  });

  test("crash mid-write: a stray half-written .tmp never replaces the good file", () => {
    const dir = tmp();
    const m = new TopicConfigManager({ dir, now: clock() });
    m.load();
    m.upsert(topic("Good"));
    const good = m.wrapper();
    const path = cfgFile(dir, "topics.json");
    const full = readFileSync(path, "utf8");
    writeFileSync(`${path}.tmp`, full.slice(0, full.length / 2)); // the crash happened before the rename

    const again = new TopicConfigManager({ dir, now: clock(9) });
    expect(again.load()).toEqual([]);
    expect(again.loadedFrom).toBe("main");
    expect(again.wrapper()).toEqual(good);
    // The next write reuses the temp name and completes normally.
    again.upsert(topic("Next"));
    expect(existsSync(`${path}.tmp`)).toBe(false);
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual(again.wrapper());
    expect(JSON.parse(readFileSync(`${path}.bak`, "utf8"))).toEqual(good);
  });

  test("crash mid-write: a main file truncated to half falls back to the previous good content", () => {
    const dir = tmp();
    const m = new SubscriptionGroupManager({ dir, now: clock() });
    m.load();
    m.findOrCreate("First", true);
    const previous = m.wrapper();
    m.findOrCreate("Second", true);
    const path = cfgFile(dir, "subscriptionGroup.json");
    truncateSync(path, Math.floor(readFileSync(path).length / 2));

    const again = new SubscriptionGroupManager({ dir });
    const problems = again.load();
    expect(problems.length).toBe(1);
    expect(problems[0]).toContain("loaded the previous version");
    expect(again.wrapper()).toEqual(previous);
    expect(again.get("Second")).toBeUndefined();
  });

  test("a write that fails leaves memory and disk as they were", () => {
    const dir = tmp();
    const m = new TopicConfigManager({ dir, now: clock() });
    m.load();
    m.upsert(topic("A"));
    const before = m.wrapper();
    const path = cfgFile(dir, "topics.json");
    mkdirSync(`${path}.tmp`); // the temp file cannot be opened for writing
    expect(() => m.upsert(topic("B"))).toThrow();
    expect(m.wrapper()).toEqual(before);
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual(before);
    rmSync(`${path}.tmp`, { recursive: true });
    expect(m.upsert(topic("B"))).toBeNull();
    expect(m.get("B")).toBeDefined();
  });
});
