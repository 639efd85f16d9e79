/**
 * `config/subscriptionGroup.json`: per consumer group settings, also the
 * GET_ALL_SUBSCRIPTIONGROUP_CONFIG body (docs/PROTOCOL.md §3.15, docs/STORAGE.md §5, §7).
 *
 *   {"dataVersion":{"counter":2,"timestamp":1700000000000},
 *    "subscriptionGroupTable":{"CG":{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,
 *      "consumeFromMinEnable":true,"groupName":"CG","notifyConsumerIdsChangedEnable":true,
 *      "retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}}}
 *
 * Invariants: every entry's key equals its `groupName`; the dataVersion changes exactly when the
 * table changes; a change is on disk before it is visible in memory.
 */
import { type MetadataOptions, isJsonObject, readBool, readInt, show } from "./metadata-file.ts";
import { INT32_MAX } from "../common/int32.ts";
import { VersionedTableManager, type VersionedTableShape } from "./metadata-table.ts";
import type { DataVersion } from "../protocol/data-version.ts";
import { SYSTEM_GROUP_PREFIX, TOOLS_CONSUMER_GROUP } from "../protocol/topics.ts";
import { type Invalid, isInvalid } from "../common/invalid.ts";
import { MASTER_ID } from "../protocol/route.ts";

export interface SubscriptionGroupConfig {
  readonly groupName: string;
  readonly consumeEnable: boolean;
  readonly consumeFromMinEnable: boolean;
  readonly consumeBroadcastEnable: boolean;
  readonly retryQueueNums: number;
  readonly retryMaxTimes: number;
  readonly brokerId: number;
  readonly whichBrokerWhenConsumeSlowly: number;
  readonly notifyConsumerIdsChangedEnable: boolean;
}

export interface SubscriptionGroupWrapper {
  dataVersion: DataVersion;
  subscriptionGroupTable: Record<string, SubscriptionGroupConfig>;
}

/** Java `Validators.CHARACTER_MAX_LENGTH`, the clients' limit for group names. */
export const GROUP_NAME_MAX_CHARS = 255;

export const GROUP_NAME_PATTERN = /^[%|a-zA-Z0-9_-]+$/;

/** Groups whose prefix lets Java create them even with auto-creation off (`MixAll.isSysConsumerGroup`). */

/** Groups a 4.9 broker always has (Java `SubscriptionGroupManager.init`). */
export const PRE_CREATED_GROUPS: readonly string[] = [
  TOOLS_CONSUMER_GROUP,
  "FILTERSRV_CONSUMER",
  "SELF_TEST_C_GROUP",
  "CID_ONS-HTTP-PROXY",
  "CID_ONSAPI_PULL",
  "CID_ONSAPI_PERMISSION",
  "CID_ONSAPI_OWNER",
];

export function defaultSubscriptionGroupConfig(groupName: string): SubscriptionGroupConfig {
  return {
    groupName,
    consumeEnable: true,
    consumeFromMinEnable: true,
    consumeBroadcastEnable: true,
    retryQueueNums: 1,
    retryMaxTimes: 16,
    brokerId: MASTER_ID,
    whichBrokerWhenConsumeSlowly: 1,
    notifyConsumerIdsChangedEnable: true,
  };
}

/**
 * The rule for names this broker creates (newer Java brokers check the same before auto-creating).
 * Files are read more leniently — any non-blank name up to 255 characters — because a 4.9 broker
 * created groups without checking, and dropping a live group's settings would be worse.
 */
function validateNewGroupName(name: string): string | null {
  if (name.trim() === "") return "the group name is blank";
  if (name.length > GROUP_NAME_MAX_CHARS) return `the group name is longer than ${GROUP_NAME_MAX_CHARS} characters`;
  if (!GROUP_NAME_PATTERN.test(name)) return "the group name contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$";
  return null;
}

/**
 * Validates one SubscriptionGroupConfig from JSON (a file entry, a master's body, or the
 * UPDATE_AND_CREATE_SUBSCRIPTIONGROUP request body). Missing fields take the Java defaults.
 */
export function subscriptionGroupFromJson(raw: unknown): SubscriptionGroupConfig | Invalid {
  if (!isJsonObject(raw)) return { invalid: `expected an object, got ${show(raw)}` };
  const name = raw.groupName;
  if (typeof name !== "string" || name.trim() === "" || name.length > GROUP_NAME_MAX_CHARS) {
    return { invalid: `groupName: expected a non-blank string of at most ${GROUP_NAME_MAX_CHARS} characters, got ${show(name)}` };
  }
  const d = defaultSubscriptionGroupConfig(name);
  const consumeEnable = readBool(raw, "consumeEnable", d.consumeEnable);
  if (isInvalid(consumeEnable)) return consumeEnable;
  const consumeFromMinEnable = readBool(raw, "consumeFromMinEnable", d.consumeFromMinEnable);
  if (isInvalid(consumeFromMinEnable)) return consumeFromMinEnable;
  const consumeBroadcastEnable = readBool(raw, "consumeBroadcastEnable", d.consumeBroadcastEnable);
  if (isInvalid(consumeBroadcastEnable)) return consumeBroadcastEnable;
  const notifyConsumerIdsChangedEnable = readBool(raw, "notifyConsumerIdsChangedEnable", d.notifyConsumerIdsChangedEnable);
  if (isInvalid(notifyConsumerIdsChangedEnable)) return notifyConsumerIdsChangedEnable;
  const retryQueueNums = readInt(raw, "retryQueueNums", d.retryQueueNums, 0, INT32_MAX);
  if (isInvalid(retryQueueNums)) return retryQueueNums;
  // Java int with no range check; -1 is meaningful to some clients, so only the int32 range is enforced.
  const retryMaxTimes = readInt(raw, "retryMaxTimes", d.retryMaxTimes, -INT32_MAX - 1, INT32_MAX);
  if (isInvalid(retryMaxTimes)) return retryMaxTimes;
  const brokerId = readInt(raw, "brokerId", d.brokerId, 0, Number.MAX_SAFE_INTEGER);
  if (isInvalid(brokerId)) return brokerId;
  const whichBrokerWhenConsumeSlowly = readInt(raw, "whichBrokerWhenConsumeSlowly", d.whichBrokerWhenConsumeSlowly, 0, Number.MAX_SAFE_INTEGER);
  if (isInvalid(whichBrokerWhenConsumeSlowly)) return whichBrokerWhenConsumeSlowly;
  return {
    groupName: name,
    consumeEnable,
    consumeFromMinEnable,
    consumeBroadcastEnable,
    retryQueueNums,
    retryMaxTimes,
    brokerId,
    whichBrokerWhenConsumeSlowly,
    notifyConsumerIdsChangedEnable,
  };
}

/** Field order as fastjson writes it (alphabetical). */
function groupJson(c: SubscriptionGroupConfig): SubscriptionGroupConfig {
  return {
    brokerId: c.brokerId,
    consumeBroadcastEnable: c.consumeBroadcastEnable,
    consumeEnable: c.consumeEnable,
    consumeFromMinEnable: c.consumeFromMinEnable,
    groupName: c.groupName,
    notifyConsumerIdsChangedEnable: c.notifyConsumerIdsChangedEnable,
    retryMaxTimes: c.retryMaxTimes,
    retryQueueNums: c.retryQueueNums,
    whichBrokerWhenConsumeSlowly: c.whichBrokerWhenConsumeSlowly,
  };
}

function sameGroup(a: SubscriptionGroupConfig, b: SubscriptionGroupConfig): boolean {
  return JSON.stringify(groupJson(a)) === JSON.stringify(groupJson(b));
}

const GROUP_TABLE: VersionedTableShape<SubscriptionGroupConfig> = {
  file: "subscriptionGroup.json",
  label: "subscription group body",
  tableKey: "subscriptionGroupTable",
  nameField: "groupName",
  fromJson: subscriptionGroupFromJson,
  nameOf: (c) => c.groupName,
  toJson: groupJson,
};

export class SubscriptionGroupManager extends VersionedTableManager<SubscriptionGroupConfig> {
  constructor(opts: MetadataOptions) {
    // As Java's constructor: present in memory from the start, written with the next change, and
    // re-added on every start if an operator deleted one.
    const preCreated = PRE_CREATED_GROUPS.map((g) => defaultSubscriptionGroupConfig(g));
    super(opts, GROUP_TABLE, preCreated);
  }

  /**
   * The group's config; an unknown group is created with defaults (version bump + write) when
   * `autoCreate` is set or the name has Java's system prefix `CID_RMQ_SYS_`. Returns undefined for
   * an unknown group otherwise, or for a name that breaks the group-name rule. Throws only on a
   * write error.
   */
  findOrCreate(group: string, autoCreate: boolean): SubscriptionGroupConfig | undefined {
    const found = this.get(group);
    if (found !== undefined) return found;
    if (!autoCreate && !group.startsWith(SYSTEM_GROUP_PREFIX)) return undefined;
    if (validateNewGroupName(group) !== null) return undefined;
    this.put([defaultSubscriptionGroupConfig(group)]);
    return this.get(group);
  }

  /** Creates or replaces one group; a reason when invalid; an identical config is a no-op. */
  upsert(cfg: SubscriptionGroupConfig): string | null {
    const c = subscriptionGroupFromJson({ ...cfg });
    if (isInvalid(c)) return c.invalid;
    const old = this.get(c.groupName);
    if (old !== undefined && sameGroup(old, c)) return null;
    if (old === undefined) {
      const bad = validateNewGroupName(c.groupName);
      if (bad !== null) return bad;
    }
    this.put([c]);
    return null;
  }

  /**
   * The GET_ALL_SUBSCRIPTIONGROUP_CONFIG body; a slave adopts it with `replaceAll` (Java
   * `SlaveSynchronize.syncSubscriptionGroupConfig`).
   */
  wrapper(): SubscriptionGroupWrapper {
    return this.body() as unknown as SubscriptionGroupWrapper;
  }
}
