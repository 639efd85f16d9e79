/**
 * What a configuration change means for a running process, decided per key by the schema's
 * `live` flag (like RocketMQ's broker, which applies `updateBrokerConfig` to the fields that are
 * read as it runs and ignores the rest until a restart — except that here the rest is reported
 * by name instead of being silently stored).
 *
 * Pure: no IO. src/runtime-config.ts reads the file, calls these, and applies the result.
 */
import { crossCheck, formatHostPort, getValue, keyDef, KEYS, setValue, type Config, type ConfigValue, type KeyPath } from "./schema.ts";

export interface KeyChange {
  key: KeyPath;
  from: ConfigValue;
  to: ConfigValue;
  /** Applied to the running process; false = needs a restart, left as it is. */
  live: boolean;
}

function same(a: ConfigValue, b: ConfigValue): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The keys whose value differs between the running config and a new one, in schema order.
 * Keys the role does not read are left out: changing them changes nothing.
 */
export function diffConfig(running: Config, next: Config): KeyChange[] {
  const out: KeyChange[] = [];
  for (const def of KEYS) {
    if (!def.roles.includes(running.role)) continue;
    const from = getValue(running, def.key);
    const to = getValue(next, def.key);
    if (!same(from, to)) out.push({ key: def.key, from, to, live: def.live === true });
  }
  return out;
}

/** A deep copy (Config is plain data: strings, numbers, booleans, arrays, HostPort objects). */
export function cloneConfig(config: Config): Config {
  return structuredClone(config);
}

/** The running config with the live changes applied and every restart-only key as it was. */
export function withLiveChanges(running: Config, changes: readonly KeyChange[]): Config {
  const out = cloneConfig(running);
  for (const c of changes) if (c.live) setValue(out, c.key, c.to);
  return out;
}

/**
 * Rules across keys, checked on what the process would actually run with: a live value may be
 * fine next to the file's new restart-only values (e.g. a bigger frameSizeMaxBytes) but not next
 * to the ones still in force.
 */
export function checkEffective(effective: Config): { key: KeyPath; problem: string }[] {
  return crossCheck(effective).map((p) => ({ key: p.key, problem: p.problem }));
}

/** A value as the reload log shows it: strings quoted, lists bracketed. */
export function showValue(v: ConfigValue): string {
  if (Array.isArray(v)) return `[${v.join(", ")}]`;
  if (typeof v === "object") return formatHostPort(v);
  if (typeof v === "string") return JSON.stringify(v);
  return String(v);
}

/** One log line per change, e.g. `broker.maxMessageSizeBytes: 16384 → 65536`. */
export function describeChange(c: KeyChange): string {
  if (keyDef(c.key)?.secret) return `${c.key}: changed${c.live ? " (applied)" : " in the file, needs a restart"} (value not shown)`;
  const what = `${c.key}: ${showValue(c.from)} → ${showValue(c.to)}`;
  return c.live ? `${what} (applied)` : `${what}: changed in the file, needs a restart (still ${showValue(c.from)})`;
}

/** The keys a running process can change, in schema order. */
export const LIVE_KEYS: readonly KeyPath[] = KEYS.filter((d) => d.live === true).map((d) => d.key);
