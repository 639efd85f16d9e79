/**
 * `config/topics.json`: the broker's topic table, also the GET_ALL_TOPIC_CONFIG body and the
 * `topicConfigSerializeWrapper` of REGISTER_BROKER (docs/PROTOCOL.md §3.15, §3.16, docs/STORAGE.md §5, §8).
 *
 *   {"dataVersion":{"counter":3,"timestamp":1700000000000},
 *    "topicConfigTable":{"TopicA":{"order":false,"perm":6,"readQueueNums":4,
 *      "topicFilterType":"SINGLE_TAG","topicName":"TopicA","topicSysFlag":0,"writeQueueNums":4}}}
 *
 * Invariants: every entry's key equals its `topicName` and passes `validateTopicName`; the
 * dataVersion changes exactly when the table changes (the name server re-reads topics only when
 * it does); a change is on disk before it is visible in memory, so a failed write changes nothing.
 */
import { type MetadataOptions, isJsonObject, readBool, readInt, show } from "./metadata-file.ts";
import { INT32_MAX } from "../common/int32.ts";
import { VersionedTableManager, type VersionedTableShape } from "./metadata-table.ts";
import { assert } from "../common/assert.ts";
import type { DataVersion } from "../protocol/data-version.ts";
import { type Invalid, isInvalid } from "../common/invalid.ts";
import { isInherited, PermName } from "../protocol/permission.ts";
import {
  AUTO_CREATE_TOPIC,
  BENCHMARK_TOPIC,
  defaultTopicConfig,
  OFFSET_MOVED_EVENT,
  SCHEDULE_TOPIC,
  SELF_TEST_TOPIC,
  TRACE_TOPIC,
  validateTopicName,
  type TopicConfig,
} from "../protocol/topics.ts";

export interface TopicConfigWrapper {
  dataVersion: DataVersion;
  topicConfigTable: Record<string, TopicConfig>;
}

/**
 * Validates one TopicConfig from JSON (a file entry, a master's body, an admin request). Missing
 * fields take the Java defaults; present fields must have the right type and range.
 */
export function topicConfigFromJson(raw: unknown): TopicConfig | Invalid {
  if (!isJsonObject(raw)) return { invalid: `expected an object, got ${show(raw)}` };
  const name = raw.topicName;
  if (typeof name !== "string") return { invalid: `topicName: expected a string, got ${show(name)}` };
  const bad = validateTopicName(name);
  if (bad !== null) return { invalid: `topicName: ${bad}` };
  const d = defaultTopicConfig(name);
  const readQueueNums = readInt(raw, "readQueueNums", d.readQueueNums, 0, INT32_MAX);
  if (isInvalid(readQueueNums)) return readQueueNums;
  const writeQueueNums = readInt(raw, "writeQueueNums", d.writeQueueNums, 0, INT32_MAX);
  if (isInvalid(writeQueueNums)) return writeQueueNums;
  const perm = readInt(raw, "perm", d.perm, 0, 15);
  if (isInvalid(perm)) return perm;
  const topicSysFlag = readInt(raw, "topicSysFlag", d.topicSysFlag, 0, INT32_MAX);
  if (isInvalid(topicSysFlag)) return topicSysFlag;
  const order = readBool(raw, "order", d.order);
  if (isInvalid(order)) return order;
  let topicFilterType = d.topicFilterType;
  if (Object.hasOwn(raw, "topicFilterType")) {
    const f = raw.topicFilterType;
    if (f !== "SINGLE_TAG" && f !== "MULTI_TAG") return { invalid: `topicFilterType: expected "SINGLE_TAG" or "MULTI_TAG", got ${show(f)}` };
    topicFilterType = f;
  }
  return { topicName: name, readQueueNums, writeQueueNums, perm, topicFilterType, topicSysFlag, order };
}

function sameTopicConfig(a: TopicConfig, b: TopicConfig): boolean {
  return (
    a.topicName === b.topicName &&
    a.readQueueNums === b.readQueueNums &&
    a.writeQueueNums === b.writeQueueNums &&
    a.perm === b.perm &&
    a.topicFilterType === b.topicFilterType &&
    a.topicSysFlag === b.topicSysFlag &&
    a.order === b.order
  );
}

/** Field order as fastjson writes it (alphabetical), so files diff cleanly against a Java broker's. */
function topicConfigJson(c: TopicConfig): TopicConfig {
  return {
    order: c.order,
    perm: c.perm,
    readQueueNums: c.readQueueNums,
    topicFilterType: c.topicFilterType,
    topicName: c.topicName,
    topicSysFlag: c.topicSysFlag,
    writeQueueNums: c.writeQueueNums,
  };
}

const TOPIC_TABLE: VersionedTableShape<TopicConfig> = {
  file: "topics.json",
  label: "topic config body",
  tableKey: "topicConfigTable",
  nameField: "topicName",
  fromJson: topicConfigFromJson,
  nameOf: (c) => c.topicName,
  toJson: topicConfigJson,
};

export interface SystemTopicOptions {
  clusterName: string;
  brokerName: string;
  /** Creates TBW102, the template topic auto-creation inherits from. */
  autoCreateTopicEnable: boolean;
  /** TBW102's read/write queue count (broker default 8). */
  defaultTopicQueueNums: number;
  /** RMQ_SYS_TRACE_TOPIC; Java default false. */
  traceTopicEnable?: boolean;
  /** Without it the cluster-name topic keeps only INHERIT (perm 1); Java default true. */
  clusterTopicEnable?: boolean;
  /** Without it the broker-name topic keeps only INHERIT (perm 1); Java default true. */
  brokerTopicEnable?: boolean;
}

/** The start-up topics of a 4.9 broker (docs/STORAGE.md §8), in Java's creation order. */
export function systemTopics(o: SystemTopicOptions): TopicConfig[] {
  const rw = PermName.READ | PermName.WRITE;
  const t = (topicName: string, queues: number, perm: number): TopicConfig => ({
    ...defaultTopicConfig(topicName),
    readQueueNums: queues,
    writeQueueNums: queues,
    perm,
  });
  const out: TopicConfig[] = [t(SELF_TEST_TOPIC, 1, rw)];
  if (o.autoCreateTopicEnable) out.push(t(AUTO_CREATE_TOPIC, o.defaultTopicQueueNums, rw | PermName.INHERIT));
  out.push(t(BENCHMARK_TOPIC, 1024, rw));
  out.push(t(o.clusterName, 16, PermName.INHERIT | ((o.clusterTopicEnable ?? true) ? rw : 0)));
  out.push(t(o.brokerName, 1, PermName.INHERIT | ((o.brokerTopicEnable ?? true) ? rw : 0)));
  out.push(t(OFFSET_MOVED_EVENT, 1, rw));
  out.push(t(SCHEDULE_TOPIC, 18, rw));
  if (o.traceTopicEnable ?? false) out.push(t(TRACE_TOPIC, 1, rw));
  out.push(t(`${o.clusterName}_REPLY_TOPIC`, 1, rw));
  return out;
}

export class TopicConfigManager extends VersionedTableManager<TopicConfig> {
  constructor(opts: MetadataOptions) {
    super(opts, TOPIC_TABLE);
  }

  /**
   * Creates or replaces one topic. Returns a reason when `cfg` is invalid (nothing changes);
   * an identical config is a no-op that leaves the dataVersion alone. Throws only on a write error,
   * and then the table is unchanged.
   */
  upsert(cfg: TopicConfig): string | null {
    const c = topicConfigFromJson({ ...cfg });
    if (isInvalid(c)) return c.invalid;
    const old = this.get(c.topicName);
    if (old !== undefined && sameTopicConfig(old, c)) return null;
    this.put([c]);
    return null;
  }

  /**
   * Adds the docs/STORAGE.md §8 start-up topics that are missing; one version bump and one write if any was
   * added. Existing entries are left as they are, even if they differ from the defaults: as in
   * Java, where the file's entries override the constructor's, an operator's change survives a
   * restart. Call after `load()`. Returns the names added.
   */
  ensureSystemTopics(o: SystemTopicOptions): string[] {
    assert(Number.isSafeInteger(o.defaultTopicQueueNums) && o.defaultTopicQueueNums > 0, "defaultTopicQueueNums must be a positive integer");
    const added = new Map<string, TopicConfig>();
    for (const c of systemTopics(o)) {
      const bad = validateTopicName(c.topicName);
      assert(bad === null, `system topic name ${JSON.stringify(c.topicName)}: ${bad}`);
      // The first of two with one name wins (a cluster named like its broker).
      if (this.get(c.topicName) === undefined && !added.has(c.topicName)) added.set(c.topicName, c);
    }
    if (added.size > 0) this.put([...added.values()]);
    return [...added.keys()];
  }

  /** The GET_ALL_TOPIC_CONFIG body; a slave adopts it with `replaceAll` (Java `SlaveSynchronize.syncTopicConfig`). */
  wrapper(): TopicConfigWrapper {
    return this.body() as unknown as TopicConfigWrapper;
  }
}
