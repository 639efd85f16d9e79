/**
 * Config loading: built-in defaults < YAML file < command-line flags, validated as a whole.
 *
 * Every problem is collected, never just the first (NATS `processConfigFile`), and each one says
 * where the bad value came from: `FILE:LINE:COL: key.path: problem` for the file (the position of
 * the key), `--flag: problem` for a flag. Unknown keys are errors with a close-match suggestion,
 * unlike RocketMQ's `properties2Object`, which silently drops them.
 *
 * Rules that need the OS (free ports, a writable store dir) are in preflight.ts.
 */
import { networkInterfaces } from "node:os";
import { join, resolve } from "node:path";
import { Document, isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument } from "yaml";
import type { Node, Pair, Scalar } from "yaml";
import {
  BROKER_ADMIN_OFFSET,
  checkFlagValue,
  checkValue,
  closest,
  crossCheck,
  defaultAdmin,
  defaultConfig,
  formatHostPort,
  getValue,
  keyDef,
  KEYS,
  NAMESRV_ADMIN_OFFSET,
  ROLES,
  runsNamesrv,
  SECTIONS,
  setValue,
  shownValue,
  type Config,
  type ConfigValue,
  type KeyPath,
  type Role,
} from "./schema.ts";
import { readTextFile } from "../common/atomic-file.ts";

/** Command-line flags as parsed by cli/args.ts: still strings, validated here. */
export interface CliFlags {
  role?: string;
  config?: string;
  listen?: string;
  admin?: string;
  namesrv?: string;
  store?: string;
  cluster?: string;
  brokerName?: string;
  brokerId?: string;
  brokerRole?: string;
  flushDisk?: string;
  etcd?: string;
  logLevel?: string;
  portsFile?: string;
}

export type Source = { kind: "file"; file: string; line: number; col: number } | { kind: "flag"; flag: string } | { kind: "default" };

/** Where each key's effective value came from, for messages that point at it. */
export type ConfigSources = Record<KeyPath, Source>;

export interface LoadedConfig {
  config: Config;
  sources: ConfigSources;
  /** Non-fatal notes, e.g. flags that the role does not use. */
  warnings: string[];
}

/** "FILE:LINE:COL", "--flag" or "(default)". */
export function describeSource(source: Source): string {
  if (source.kind === "file") return `${source.file}:${source.line}:${source.col}`;
  if (source.kind === "flag") return source.flag;
  return "(default)";
}

/** Flags that set a config key, in the order they are applied. */
const FLAG_KEYS: readonly { prop: keyof CliFlags; flag: string; key: (role: Role) => KeyPath }[] = [
  { prop: "logLevel", flag: "--log-level", key: () => "logLevel" },
  { prop: "listen", flag: "--listen", key: (r) => (r === "namesrv" ? "namesrv.listen" : "broker.listen") },
  { prop: "admin", flag: "--admin", key: (r) => (r === "namesrv" ? "namesrv.admin" : "broker.admin") },
  { prop: "namesrv", flag: "--namesrv", key: () => "broker.namesrvAddr" },
  { prop: "cluster", flag: "--cluster", key: () => "broker.brokerClusterName" },
  { prop: "brokerName", flag: "--broker-name", key: () => "broker.brokerName" },
  { prop: "brokerId", flag: "--broker-id", key: () => "broker.brokerId" },
  { prop: "brokerRole", flag: "--broker-role", key: () => "broker.brokerRole" },
  { prop: "store", flag: "--store", key: () => "store.dir" },
  { prop: "flushDisk", flag: "--flush-disk", key: () => "store.flushDiskType" },
  { prop: "etcd", flag: "--etcd", key: () => "broker.failover.etcd" },
];

const ROLE_LIST = ROLES.join("|");

interface Located {
  line: number;
  col: number;
  text: string;
}

interface FileValues {
  values: Map<KeyPath, { value: ConfigValue; source: Source }>;
  errors: Located[];
  /** Keys present in the file whose value was rejected; cross-key rules skip them. */
  rejected: Set<KeyPath>;
}

/**
 * Loads and validates the configuration. `file` defaults to `flags.config`. On success the
 * config is complete: admin addresses derived, brokerIP1 resolved, store.dir, kvConfigPath and the aclFiles
 * absolute.
 */
export function loadConfig(opts: { file?: string; flags: CliFlags }): LoadedConfig | { errors: string[] } {
  const flags = opts.flags;
  const file = opts.file ?? flags.config;
  const errors: string[] = [];
  const warnings: string[] = [];

  let fromFile: FileValues = { values: new Map(), errors: [], rejected: new Set() };
  if (file !== undefined) {
    const read = readConfigFile(file);
    if ("error" in read) return { errors: [read.error] };
    fromFile = read;
  }
  fromFile.errors.sort((a, b) => a.line - b.line || a.col - b.col);
  errors.push(...fromFile.errors.map((e) => e.text));

  const role = resolveRole(flags, fromFile, errors, warnings);
  const rejected = new Set(fromFile.rejected);
  const fromFlags = readFlagValues(flags, role, rejected, errors, warnings);
  if (role === undefined) return { errors };

  const config = defaultConfig(role);
  const sources = {} as ConfigSources;
  for (const def of KEYS) sources[def.key] = { kind: "default" };
  for (const layer of [fromFile.values, fromFlags]) {
    for (const [key, v] of layer) {
      if (key === "role") continue;
      setValue(config, key, v.value);
      sources[key] = v.source;
    }
  }
  sources.role = flags.role !== undefined ? { kind: "flag", flag: "--role" } : (fromFile.values.get("role")?.source ?? sources.role);

  errors.push(...derive(config, sources, rejected));
  for (const c of crossCheck(config)) {
    if (rejected.has(c.key) || (c.other !== undefined && rejected.has(c.other.key))) continue;
    // Point at the key the operator set: with only the other one set, tell it from that side.
    const other = c.other;
    const use = other !== undefined && sources[c.key].kind === "default" && sources[other.key].kind !== "default" ? other : c;
    errors.push(locate(sources[use.key], use.key, use.problem));
  }
  if (errors.length > 0) return { errors };
  return { config, sources, warnings };
}

/** The role comes first: defaults and the meaning of --listen/--admin depend on it. */
function resolveRole(flags: CliFlags, fromFile: FileValues, errors: string[], warnings: string[]): Role | undefined {
  const fileRole = fromFile.values.get("role");
  if (flags.role !== undefined) {
    if (!(ROLES as readonly string[]).includes(flags.role)) {
      errors.push(`--role: unknown role ${JSON.stringify(flags.role)} (expected ${ROLE_LIST})`);
      return undefined;
    }
    const role = flags.role as Role;
    if (fileRole !== undefined && fileRole.value !== role) {
      warnings.push(`--role ${role} overrides role "${String(fileRole.value)}" set at ${describeSource(fileRole.source)}`);
    }
    return role;
  }
  if (fileRole !== undefined) return fileRole.value as Role;
  if (!fromFile.rejected.has("role")) errors.push(`--role: missing required value (${ROLE_LIST})`);
  return undefined;
}

/** The command-line flags that set keys, checked against the schema (a rejected key is noted in `rejected`). */
function readFlagValues(
  flags: CliFlags,
  role: Role | undefined,
  rejected: Set<KeyPath>,
  errors: string[],
  warnings: string[],
): Map<KeyPath, { value: ConfigValue; source: Source }> {
  const fromFlags = new Map<KeyPath, { value: ConfigValue; source: Source }>();
  for (const f of FLAG_KEYS) {
    const text = flags[f.prop];
    if (text === undefined) continue;
    // Without a role the flag's type is still known: namesrv.* and broker.* listen keys agree.
    const key = f.key(role ?? "master");
    const def = keyDef(key);
    if (def === undefined) continue;
    const checked = checkFlagValue(def, text);
    if (!checked.ok) {
      errors.push(`${f.flag}: ${checked.problem}`);
      rejected.add(key);
      continue;
    }
    if (role !== undefined && !def.roles.includes(role)) {
      warnings.push(`${f.flag}: ignored for role ${role} (it sets ${key}, which role ${role} does not use)`);
    }
    fromFlags.set(key, { value: checked.value, source: { kind: "flag", flag: f.flag } });
  }
  return fromFlags;
}

/** A load-time message: `FILE:LINE:COL: key: problem`, `--flag: problem` or `key: problem`. */
function locate(source: Source, key: KeyPath, problem: string): string {
  if (source.kind === "file") return `${describeSource(source)}: ${key}: ${problem}`;
  if (source.kind === "flag") return `${source.flag}: ${problem}`;
  return `${key}: ${problem}`;
}

/** Fills in values whose defaults depend on other keys; returns problems with them. */
function derive(config: Config, sources: ConfigSources, rejected: Set<KeyPath>): string[] {
  const errors: string[] = [];
  if (sources["namesrv.admin"].kind === "default") {
    config.namesrv.admin = defaultAdmin(config.namesrv.listen, NAMESRV_ADMIN_OFFSET);
    const role = config.role;
    if (config.namesrv.admin.port > 65535 && runsNamesrv(role) && !rejected.has("namesrv.listen")) {
      const problem = `port ${config.namesrv.listen.port} leaves no room for the default admin port (listen port + 1); set namesrv.admin`;
      errors.push(locate(sources["namesrv.listen"], "namesrv.listen", problem));
    }
  }
  if (sources["broker.admin"].kind === "default") {
    config.broker.admin = defaultAdmin(config.broker.listen, BROKER_ADMIN_OFFSET);
  }
  if (config.broker.brokerIP1 === "") config.broker.brokerIP1 = advertisedHost(config.broker.listen.host);
  config.store.dir = resolve(config.store.dir);
  const kv = config.namesrv.kvConfigPath;
  config.namesrv.kvConfigPath = kv === "" ? join(config.store.dir, "namesrv", "kvConfig.json") : resolve(kv);
  // RocketMQ reads ${ROCKETMQ_HOME}/conf/plain_acl.yml; our home for files we own is store.dir.
  const aclDefault = join(config.store.dir, "conf", "plain_acl.yml");
  config.broker.aclFile = config.broker.aclFile === "" ? aclDefault : resolve(config.broker.aclFile);
  config.namesrv.aclFile = config.namesrv.aclFile === "" ? aclDefault : resolve(config.namesrv.aclFile);
  // Absolute, so the log says which file and a SIGHUP re-reads the same one.
  const tls = config.tls;
  for (const k of ["certPath", "keyPath", "trustCertPath", "clientTrustCertPath", "clientCertPath", "clientKeyPath"] as const) {
    if (tls[k] !== "") tls[k] = resolve(tls[k]);
  }
  return errors;
}

/** The address clients are told to use: the listen host, unless that is a wildcard. */
function advertisedHost(listenHost: string): string {
  if (listenHost !== "0.0.0.0" && listenHost !== "::") return listenHost;
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) {
      if (a.family === "IPv4" && !a.internal) return a.address;
    }
  }
  return "127.0.0.1";
}

// ---------------------------------------------------------------------------------------------
// The YAML file

function readConfigFile(file: string): FileValues | { error: string } {
  const read = readTextFile(file);
  if ("error" in read) return { error: `${file}: cannot read config file: ${read.error}` };
  return parseConfigText(file, read.text);
}

/** Parses and checks one YAML text; `file` is only used in messages. */
function parseConfigText(file: string, text: string): FileValues {
  const lc = new LineCounter();
  // Duplicate keys are reported by the walk below, so they do not hide the other problems.
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: false });
  const out: FileValues = { values: new Map(), errors: [], rejected: new Set() };
  const at = (offset: number) => lc.linePos(offset);
  const report = (offset: number, what: string, problem: string) => {
    const { line, col } = at(offset);
    out.errors.push({ line, col, text: `${file}:${line}:${col}: ${what}: ${problem}` });
  };
  if (doc.errors.length > 0) {
    // The tree after a syntax error is a guess; checking it would report confusing follow-ups.
    for (const e of doc.errors) {
      const { line, col } = at(e.pos[0]);
      out.errors.push({ line, col, text: `${file}:${line}:${col}: YAML syntax error: ${e.message.split("\n")[0]}` });
    }
    return out;
  }
  const root = doc.contents;
  if (root === null || (isScalar(root) && root.value === null)) return out; // an empty file is valid
  if (!isMap(root)) {
    report(root.range?.[0] ?? 0, "top level", `expected a mapping of keys, got ${isSeq(root) ? "a list" : "a single value"}`);
    return out;
  }

  const walk = (pairs: Pair[], section: string | undefined) => {
    const seen = new Map<string, number>();
    for (const pair of pairs) {
      const keyNode = pair.key as Node | null;
      const keyOffset = keyNode?.range?.[0] ?? 0;
      const name = isScalar(keyNode) ? String(keyNode.value) : "?";
      const path = section === undefined ? name : `${section}.${name}`;
      const first = seen.get(name);
      if (first !== undefined) {
        const p = at(first);
        report(keyOffset, path, `duplicate key (already set at ${p.line}:${p.col})`);
        continue;
      }
      seen.set(name, keyOffset);
      let value = pair.value as Node | null;
      if (isAlias(value)) value = (value.resolve(doc) as Node | undefined) ?? null;

      const def = keyDef(path);
      if (def === undefined && isKeyGroup(path)) {
        if (value === null || (isScalar(value) && value.value === null)) continue; // all keys commented out
        if (!isMap(value)) report(keyOffset, path, `expected a mapping of keys, got ${isSeq(value) ? "a list" : "a single value"}`);
        else walk(value.items as Pair[], path);
        continue;
      }
      if (def === undefined) {
        report(keyOffset, path, unknownKey(name, section));
        continue;
      }
      const raw = isScalar(value) ? value.value : value === null ? null : value.toJS(doc);
      const checked = checkValue(def, raw, isScalar(value) ? (value as Scalar).source : undefined);
      if (!checked.ok) {
        report(keyOffset, path, checked.problem);
        out.rejected.add(def.key);
        continue;
      }
      const { line, col } = at(keyOffset);
      out.values.set(def.key, { value: checked.value, source: { kind: "file", file, line, col } });
    }
  };
  walk(root.items as Pair[], undefined);
  return out;
}

/** A section (broker) or a group of keys inside one (broker.failover): a mapping, not a value. */
function isKeyGroup(path: string): boolean {
  return path.includes(".") ? KEYS.some((d) => d.key.startsWith(`${path}.`)) : (SECTIONS as readonly string[]).includes(path);
}

/** `unknown key "x"`, with the closest key of the same section or the section it belongs in. */
function unknownKey(name: string, section: string | undefined): string {
  const leaf = (k: string) => k.slice(k.lastIndexOf(".") + 1);
  const all: string[] = KEYS.map((d) => d.key);
  const here = all.filter((k) => (section === undefined ? !k.includes(".") : k.startsWith(`${section}.`) && !k.slice(section.length + 1).includes(".")));
  const near = closest(name, [...here.map(leaf), ...(section === undefined ? SECTIONS : [])]);
  if (near !== undefined) return `unknown key "${name}" (did you mean "${near}"?)`;
  // A known key in the wrong place, e.g. flushDiskType under broker:.
  const elsewhere = all.filter((k) => !here.includes(k));
  const other = closest(name, elsewhere.map(leaf));
  const full = other === undefined ? undefined : elsewhere.find((k) => leaf(k) === other);
  if (full === undefined) return `unknown key "${name}"`;
  const place = full.includes(".") ? `the ${full.slice(0, full.lastIndexOf("."))} section` : "the top level";
  return `unknown key "${name}" (did you mean "${full}"? it belongs in ${place})`;
}

// ---------------------------------------------------------------------------------------------
// --print-config

/**
 * The config as plain nested data in schema order, addresses as HOST:PORT strings, secrets
 * masked (print, admin API).
 */
export function toPlain(config: Config): Record<string, unknown> {
  const obj: Record<string, unknown> = {};
  for (const def of KEYS) {
    const path = def.key.split(".");
    const v = shownValue(def, getValue(config, def.key));
    const plain = typeof v === "object" && !Array.isArray(v) ? formatHostPort(v) : v;
    let parent = obj;
    for (const p of path.slice(0, -1)) parent = (parent[p] ??= {}) as Record<string, unknown>;
    parent[path[path.length - 1]!] = plain;
  }
  return obj;
}

/** The effective config as YAML, keys in schema order, each with its doc as a comment. */
export function toYaml(config: Config): string {
  const doc = new Document(toPlain(config));
  doc.commentBefore = ` RocketBun effective configuration (role ${config.role}); load it back with --config`;
  for (const def of KEYS) {
    const path = def.key.split(".");
    const parent = path.length === 1 ? doc.contents : doc.getIn(path.slice(0, -1), true);
    if (!isMap(parent)) continue;
    const pair = parent.items.find((p) => isScalar(p.key) && p.key.value === path[path.length - 1]);
    if (pair && isScalar(pair.key)) pair.key.commentBefore = ` ${def.doc}${def.unit ? ` (${def.unit})` : ""}`;
  }
  return doc.toString({ lineWidth: 0 });
}
