/**
 * The broker configuration as RocketMQ's admin requests carry it: a Java properties text of
 * `key=value` lines (GET_BROKER_CONFIG's body, UPDATE_BROKER_CONFIG's body; what `mqadmin
 * getBrokerConfig` prints and `mqadmin updateBrokerConfig -k K -v V` sends).
 *
 * Keys use RocketMQ's names where RocketMQ has the same setting (`maxMessageSize`,
 * `flushIntervalCommitLog`, `fileReservedTime`, …), converted to RocketMQ's unit where it differs
 * (diskMaxUsedSpaceRatio is a percent there, a fraction here; mappedFileSizeConsumeQueue is bytes
 * there, units here); the other keys use RocketBun's name. On input the RocketBun name and the
 * full dotted path (`broker.maxMessageSizeBytes`) are accepted too.
 *
 * Pure: validation goes through the schema (checkFlagValue), as a command-line value does.
 */
import { checkFlagValue, formatHostPort, getValue, keyDef, KEYS, type Config, type ConfigValue, type KeyDef, type KeyPath } from "./schema.ts";
import { CQ_UNIT_SIZE } from "../protocol/store-layout.ts";

interface RocketmqName {
  name: string;
  /** RocketMQ's value = ours × scale (for the two keys whose unit differs). */
  scale?: number;
}

const ROCKETMQ_NAMES: Partial<Record<KeyPath, RocketmqName>> = {
  "broker.registerNameServerPeriodMs": { name: "registerNameServerPeriod" },
  "broker.maxMessageSizeBytes": { name: "maxMessageSize" },
  "broker.haTransferBatchBytes": { name: "haTransferBatchSize" },
  "broker.transactionCheckIntervalMs": { name: "transactionCheckInterval" },
  "broker.transactionTimeOutMs": { name: "transactionTimeOut" },
  "store.dir": { name: "storePathRootDir" },
  "store.commitLogSegmentBytes": { name: "mappedFileSizeCommitLog" },
  "store.flushIntervalMs": { name: "flushIntervalCommitLog" },
  "store.flushCommitLogThoroughIntervalMs": { name: "flushCommitLogThoroughInterval" },
  "store.flushConsumeQueueThoroughIntervalMs": { name: "flushConsumeQueueThoroughInterval" },
  "store.syncFlushTimeoutMs": { name: "syncFlushTimeout" },
  "store.checkCrcOnRecover": { name: "checkCRCOnRecover" },
  "store.consumeQueueUnitsPerFile": { name: "mappedFileSizeConsumeQueue", scale: CQ_UNIT_SIZE },
  "store.indexSlotNum": { name: "maxHashSlotNum" },
  "store.indexNum": { name: "maxIndexNum" },
  "store.fileReservedTimeHours": { name: "fileReservedTime" },
  "store.deleteCommitLogFilesIntervalMs": { name: "deleteCommitLogFilesInterval" },
  "store.diskMaxUsedSpaceRatio": { name: "diskMaxUsedSpaceRatio", scale: 100 },
};

/** The keys a broker's configuration consists of: everything but the name server's section. */
export const BROKER_PROPERTY_KEYS: readonly KeyDef[] = KEYS.filter((d) => !d.key.startsWith("namesrv.") && d.secret !== true);

/** The keys a name server's configuration consists of (GET_NAMESRV_CONFIG): those of its role. */
export const NAMESRV_PROPERTY_KEYS: readonly KeyDef[] = KEYS.filter((d) => d.roles.includes("namesrv") && d.secret !== true);

function leaf(key: KeyPath): string {
  return key.slice(key.indexOf(".") + 1);
}

/** The property name a key is written under. */
export function propertyName(key: KeyPath): string {
  return ROCKETMQ_NAMES[key]?.name ?? leaf(key);
}

/** Every accepted input name → key: RocketMQ's name, our leaf name, the dotted path. */
function namesOf(keys: readonly KeyDef[]): Map<string, KeyPath> {
  const byName = new Map<string, KeyPath>();
  for (const d of keys) {
    byName.set(d.key, d.key);
    byName.set(leaf(d.key), d.key);
    byName.set(propertyName(d.key), d.key);
  }
  return byName;
}
/** Which process's configuration a properties text is about. */
export type PropertyScope = "broker" | "namesrv";

const SCOPES: Record<PropertyScope, { keys: readonly KeyDef[]; names: Map<string, KeyPath> }> = {
  broker: { keys: BROKER_PROPERTY_KEYS, names: namesOf(BROKER_PROPERTY_KEYS) },
  namesrv: { keys: NAMESRV_PROPERTY_KEYS, names: namesOf(NAMESRV_PROPERTY_KEYS) },
};

export function keyForProperty(name: string, scope: PropertyScope = "broker"): KeyPath | undefined {
  return SCOPES[scope].names.get(name);
}

function valueText(key: KeyPath, v: ConfigValue): string {
  const scale = ROCKETMQ_NAMES[key]?.scale;
  if (scale !== undefined && typeof v === "number") return String(Math.round(v * scale * 1e6) / 1e6);
  if (Array.isArray(v)) return v.join(";");
  if (typeof v === "object") return formatHostPort(v);
  return String(v);
}

/** GET_BROKER_CONFIG's (or GET_NAMESRV_CONFIG's) body: one `name=value` line per key, in schema order. */
export function toProperties(config: Config, scope: PropertyScope = "broker"): string {
  return SCOPES[scope].keys.map((d) => `${propertyName(d.key)}=${valueText(d.key, getValue(config, d.key))}\n`).join("");
}

/**
 * Reads a Java properties text: `key=value`, `key: value` or `key value` lines; blank lines and
 * lines starting with # or ! are skipped. No line continuations or escapes (values here never
 * need them). The last of a repeated key wins, as in java.util.Properties.
 */
export function parseProperties(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith("!")) continue;
    const m = /^([^=:\s]+)\s*[=:\s]\s*(.*)$/.exec(line);
    if (m) out.set(m[1] ?? "", (m[2] ?? "").trim());
    else out.set(line, "");
  }
  return out;
}

/** A property value in RocketMQ's unit → the text our schema checks. */
function fromRocketmqUnit(key: KeyPath, name: string, text: string): string | { invalid: string } {
  const spec = ROCKETMQ_NAMES[key];
  if (spec?.scale === undefined || name !== spec.name) return text;
  if (!/^[0-9]+(\.[0-9]+)?$/.test(text)) return { invalid: `expected a number, got ${JSON.stringify(text)}` };
  // diskMaxUsedSpaceRatio is an int percent in RocketMQ; a fraction ("0.8") is taken as written.
  if (spec.scale === 100 && text.includes(".")) return text;
  const n = Number(text);
  if (spec.scale === CQ_UNIT_SIZE && n % CQ_UNIT_SIZE !== 0) {
    return { invalid: `must be a multiple of ${CQ_UNIT_SIZE} bytes (one ConsumeQueue unit), got ${n}` };
  }
  return String(n / spec.scale);
}

export interface PropertyChanges {
  /** Validated values, by key, for every property given (changed or not). */
  values: Map<KeyPath, ConfigValue>;
  /** `name: problem` for unknown names and bad values. */
  problems: string[];
}

/** Validates every property of an UPDATE_BROKER_CONFIG (or UPDATE_NAMESRV_CONFIG) body against the schema. */
export function readPropertyChanges(text: string, scope: PropertyScope = "broker"): PropertyChanges {
  const values = new Map<KeyPath, ConfigValue>();
  const problems: string[] = [];
  for (const [name, raw] of parseProperties(text)) {
    const key = keyForProperty(name, scope);
    const def = key === undefined ? undefined : keyDef(key);
    if (key === undefined || def === undefined) {
      problems.push(`${name}: unknown key`);
      continue;
    }
    const converted = fromRocketmqUnit(key, name, raw);
    if (typeof converted !== "string") {
      problems.push(`${name}: ${converted.invalid}`);
      continue;
    }
    const checked = checkFlagValue(def, converted);
    if (!checked.ok) problems.push(`${name}: ${checked.problem}`);
    else values.set(key, checked.value);
  }
  return { values, problems };
}
