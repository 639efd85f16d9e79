/**
 * The one owner of "change the configuration of the running process". Two doors lead here:
 *   - SIGHUP: re-read the config file with the same command-line flags (they still win), validate
 *     it with the same schema as at start-up, and apply what changed;
 *   - UPDATE_BROKER_CONFIG (mqadmin updateBrokerConfig): a properties body, validated the same way.
 * Both end in #apply, so a key is runtime-changeable for both or for neither (schema `live`).
 *
 * Rules:
 *   - an invalid file changes nothing: every problem is logged as at start-up, the process keeps
 *     running on the config it has;
 *   - a live key is applied and logged (`key: old → new (applied)`); a restart-only key changed in
 *     the file is logged as needing a restart and keeps its value; over the wire it is refused;
 *   - cross-key rules are checked on what would actually run (live changes + old restart-only
 *     values); a violation refuses the whole change;
 *   - one change at a time: a SIGHUP during a reload is queued (several collapse into one, which
 *     reads the file as it is when it runs).
 * Changes over the wire are not written back to the file: the file stays the operator's, and the
 * next SIGHUP or restart goes back to it (the log says so, key by key).
 */
import { scope, type Logger, type LogLevel } from "./common/log.ts";
import { resolveAdminToken } from "./config/admin-token.ts";
import { describeSource, loadConfig, toPlain, type CliFlags, type ConfigSources } from "./config/load.ts";
import { readPropertyChanges, toProperties, type PropertyScope } from "./config/properties.ts";
import { checkEffective, cloneConfig, describeChange, diffConfig, LIVE_KEYS, withLiveChanges, type KeyChange } from "./config/reload.ts";
import { getValue, keyDef, type Config, type ConfigValue, type KeyPath } from "./config/schema.ts";
import type { BrokerConfigAccess, BrokerRuntimeOptions } from "./broker/index.ts";
import type { NamesrvConfigAccess, NamesrvRuntimeOptions } from "./namesrv/index.ts";
import type { ConfigUpdateOutcome } from "./remoting/index.ts";

/** What the running components expose for runtime changes (absent = the role does not run it). */
export interface RuntimeTargets {
  broker?: { reconfigure(p: BrokerRuntimeOptions): Promise<void>; reloadFiles?(): void };
  namesrv?: { reconfigure(p: NamesrvRuntimeOptions): void; reloadFiles?(): void };
  /** The name servers the broker registers with for a namesrvAddr (standalone: [] = its own). */
  resolveNamesrvAddr(list: string[]): string[];
  setLogLevel(level: LogLevel): void;
  /** SIGHUP: re-read the TLS certificate files (whatever the config file says); logs its outcome, never rejects. */
  reloadTls?(): Promise<unknown>;
}

export type ReloadOutcome =
  { status: "invalid"; problems: string[] } | { status: "applied"; changes: KeyChange[] } | { status: "failed"; error: string };

/** RocketMQ's DataVersion: bumped on every applied change; GET_BROKER_CONFIG's `version`. */
export interface ConfigDataVersion {
  timestamp: number;
  counter: number;
}

/**
 * Where a live key goes: its schema section names the component (the schema's `live` flag alone
 * says which keys are live). Undefined for a live key no component takes (a bug, see the test).
 */
export function routeOf(key: KeyPath): "log" | "broker" | "namesrvAddr" | "store" | "namesrv" | "admin" | undefined {
  if (key === "logLevel") return "log";
  // The admin token is this class's own: resolved on every reload (adminToken()).
  if (key.startsWith("admin.")) return "admin";
  if (key === "broker.namesrvAddr") return "namesrvAddr";
  const section = key.slice(0, key.indexOf("."));
  if (section === "broker" || section === "store" || section === "namesrv") return section;
  return undefined;
}

/** The component patches for a set of live changes. */
export function patchesFor(
  changes: readonly KeyChange[],
  resolveNamesrvAddr: (list: string[]) => string[],
): { broker: BrokerRuntimeOptions; namesrv: NamesrvRuntimeOptions; logLevel?: LogLevel } {
  const broker: Record<string, unknown> = {};
  const store: Record<string, unknown> = {};
  const namesrv: Record<string, unknown> = {};
  let logLevel: LogLevel | undefined;
  for (const c of changes) {
    if (!c.live) continue;
    const name = c.key.slice(c.key.indexOf(".") + 1);
    const route = routeOf(c.key);
    if (route === "log") logLevel = c.to as LogLevel;
    else if (route === "namesrvAddr") broker.namesrvAddr = resolveNamesrvAddr(c.to as string[]);
    else if (route === "broker") broker[name] = c.to;
    else if (route === "store") store[name] = c.to;
    else if (route === "namesrv") namesrv[name] = c.to;
  }
  if (Object.keys(store).length > 0) broker.store = store;
  // The records were filled from schema-validated values under the components' own field names.
  return { broker: broker as BrokerRuntimeOptions, namesrv: namesrv as NamesrvRuntimeOptions, ...(logLevel ? { logLevel } : {}) };
}

export interface RuntimeConfigOptions {
  config: Config;
  sources: ConfigSources;
  /** The config file (undefined when the process was started with flags only). */
  file: string | undefined;
  flags: CliFlags;
  targets: RuntimeTargets;
  log?: Logger;
  now?: () => number;
}

export class RuntimeConfig {
  #config: Config;
  #sources: ConfigSources;
  readonly #file: string | undefined;
  readonly #flags: CliFlags;
  readonly #targets: RuntimeTargets;
  readonly #log: Logger;
  readonly #now: () => number;
  #version: ConfigDataVersion;
  /** The admin API's bearer token in force ("" = none): admin.token, or admin.tokenFile's content. */
  #adminToken: string;
  /** The tail of the queue of changes; each waits for the one before. */
  #tail: Promise<unknown> = Promise.resolve();
  /** A reload queued and not yet started: later SIGHUPs join it. */
  #queuedReload: Promise<ReloadOutcome> | null = null;

  constructor(o: RuntimeConfigOptions) {
    this.#config = cloneConfig(o.config);
    this.#sources = o.sources;
    this.#file = o.file;
    this.#flags = o.flags;
    this.#targets = o.targets;
    this.#log = o.log ?? scope("config");
    this.#now = o.now ?? Date.now;
    this.#version = { timestamp: this.#now(), counter: 0 };
    // preflight has read the token file already; a file gone since then means no token until a reload.
    const token = resolveAdminToken(this.#config.admin);
    this.#adminToken = typeof token === "string" ? token : "";
  }

  /** The admin API's bearer token in force; "" = none. Read per request, so a reload applies at once. */
  adminToken(): string {
    return this.#adminToken;
  }

  /** The configuration in force (a copy). */
  get config(): Config {
    return cloneConfig(this.#config);
  }

  get dataVersion(): ConfigDataVersion {
    return { ...this.#version };
  }

  /** SIGHUP. Never rejects: problems are logged and returned. */
  reload(): Promise<ReloadOutcome> {
    if (this.#queuedReload) return this.#queuedReload;
    const run = this.#enqueue(async () => {
      this.#queuedReload = null;
      const outcome = await this.#reloadNow();
      // Certificates are renewed in place more often than the config changes: re-read them on
      // every SIGHUP, also when the file is unchanged or invalid (their keys need a restart).
      await this.#targets.reloadTls?.();
      return outcome;
    });
    this.#queuedReload = run;
    return run;
  }

  /** UPDATE_BROKER_CONFIG (or, with scope "namesrv", UPDATE_NAMESRV_CONFIG). Never rejects. */
  update(properties: string, from: string, scope: PropertyScope = "broker"): Promise<ConfigUpdateOutcome> {
    return this.#enqueue(() => this.#updateNow(properties, from, scope));
  }

  /** What the broker's admin processor uses for GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG. */
  brokerAccess(): BrokerConfigAccess {
    return {
      get: () => ({ properties: toProperties(this.#config), version: JSON.stringify(this.#version) }),
      update: (text, from) => this.update(text, from),
    };
  }

  /** What the name server uses for GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG (its role's keys only). */
  namesrvAccess(): NamesrvConfigAccess {
    return {
      get: () => ({ properties: toProperties(this.#config, "namesrv") }),
      update: (text, from) => this.update(text, from, "namesrv"),
    };
  }

  /** The admin API's GET /config. */
  describe(): { file: string | null; dataVersion: ConfigDataVersion; liveKeys: readonly KeyPath[]; config: Record<string, unknown> } {
    return { file: this.#file ?? null, dataVersion: this.dataVersion, liveKeys: LIVE_KEYS, config: toPlain(this.#config) };
  }

  #enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(fn, fn);
    this.#tail = run.catch(() => undefined);
    return run;
  }

  async #reloadNow(): Promise<ReloadOutcome> {
    try {
      const where = this.#file ?? "the command line";
      this.#log.info(`SIGHUP: reloading the configuration from ${where}`);
      // Files the components enforce (the ACL file) are re-read whatever the config file says.
      this.#targets.broker?.reloadFiles?.();
      this.#targets.namesrv?.reloadFiles?.();
      const loaded = loadConfig(this.#file !== undefined ? { file: this.#file, flags: this.#flags } : { flags: this.#flags });
      if ("errors" in loaded) return this.#refuse(loaded.errors);
      for (const w of loaded.warnings) this.#log.warn(`reload: warning: ${w}`);
      const changes = diffConfig(this.#config, loaded.config);
      const effective = withLiveChanges(this.#config, changes);
      const problems = checkEffective(effective).map((p) => `${describeSource(loaded.sources[p.key])}: ${p.key}: ${p.problem}`);
      // The token file is re-read on every reload (a rotated token needs no config change).
      const token = resolveAdminToken(effective.admin);
      if (typeof token !== "string") problems.push(`${describeSource(loaded.sources["admin.tokenFile"])}: admin.tokenFile: ${token.invalid}`);
      if (problems.length > 0) return this.#refuse(problems);
      if (typeof token === "string" && token !== this.#adminToken) {
        this.#adminToken = token;
        this.#log.info(`reload: the admin token changed (${token === "" ? "none now" : "new token in force"})`);
      }
      if (changes.length === 0) {
        this.#log.info("reload: nothing changed");
        return { status: "applied", changes };
      }
      await this.#apply(changes, effective, "reload");
      // Positions of later messages point at the file as it is now.
      this.#sources = loaded.sources;
      return { status: "applied", changes };
    } catch (e) {
      // A failure here is a bug, but one that must not take a running broker down with it.
      const error = e instanceof Error ? e.message : String(e);
      this.#log.error(`reload failed: ${error}; the configuration may be partly applied`);
      return { status: "failed", error };
    }
  }

  #refuse(problems: string[]): ReloadOutcome {
    for (const p of problems) this.#log.error(p);
    this.#log.error(`reload: ${problems.length} configuration problem(s); nothing changed, still running on the previous configuration`);
    return { status: "invalid", problems };
  }

  async #updateNow(text: string, from: string, scope: PropertyScope): Promise<ConfigUpdateOutcome> {
    const request = scope === "broker" ? "UPDATE_BROKER_CONFIG" : "UPDATE_NAMESRV_CONFIG";
    const who = scope === "broker" ? "broker" : "name server";
    try {
      const read = readPropertyChanges(text, scope);
      if (read.problems.length > 0) return { ok: false, permission: false, remark: read.problems.join("; ") };
      const changes: KeyChange[] = [];
      const restart: string[] = [];
      for (const [key, to] of read.values) {
        const fromValue: ConfigValue = getValue(this.#config, key);
        if (JSON.stringify(fromValue) === JSON.stringify(to)) continue;
        const live = keyDef(key)?.live === true;
        if (!live) restart.push(key);
        else changes.push({ key, from: fromValue, to, live });
      }
      if (restart.length > 0) {
        return {
          ok: false,
          permission: true,
          remark: `${restart.join(", ")}: cannot be changed while the ${who} runs (change the config file and restart); nothing was changed`,
        };
      }
      const effective = withLiveChanges(this.#config, changes);
      const problems = checkEffective(effective).map((p) => `${p.key}: ${p.problem}`);
      if (problems.length > 0) return { ok: false, permission: false, remark: problems.join("; ") };
      if (changes.length > 0) await this.#apply(changes, effective, `${request} from ${from}`);
      return { ok: true };
    } catch (e) {
      const error = e instanceof Error ? e.message : String(e);
      this.#log.error(`${request} from ${from} failed: ${error}`);
      return { ok: false, permission: false, remark: `update failed: ${error}` };
    }
  }

  /** Applies the live changes to the components, logs one line per change, bumps the version. */
  async #apply(changes: readonly KeyChange[], effective: Config, origin: string): Promise<void> {
    const t = this.#targets;
    const p = patchesFor(changes, (list) => t.resolveNamesrvAddr(list));
    const oldLevel = this.#config.logLevel;
    // The lines about this change are written at the more verbose of the old and new level, so
    // lowering the level does not hide the line saying so.
    if (p.logLevel) t.setLogLevel(rank(p.logLevel) < rank(oldLevel) ? p.logLevel : oldLevel);
    for (const c of changes) {
      if (c.live) this.#log.info(`${origin}: ${describeChange(c)}`);
      else this.#log.warn(`${origin}: ${describeChange(c)}`);
    }
    if (Object.keys(p.namesrv).length > 0) t.namesrv?.reconfigure(p.namesrv);
    if (Object.keys(p.broker).length > 0) await t.broker?.reconfigure(p.broker);
    if (p.logLevel) t.setLogLevel(p.logLevel);
    // Restart-only keys keep their running value: `effective` has only the live changes.
    this.#config = effective;
    if (changes.some((c) => c.live)) this.#version = { timestamp: this.#now(), counter: this.#version.counter + 1 };
    const restart = changes.filter((c) => !c.live).length;
    if (restart > 0) this.#log.warn(`${origin}: ${restart} key(s) need a restart to take effect`);
  }
}

const LEVEL_RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };
function rank(l: LogLevel): number {
  return LEVEL_RANK[l];
}
