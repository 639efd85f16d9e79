/**
 * ACL in the request pipeline (src/remoting/pipeline.ts): one before-hook checks every request of
 * a server — the broker's listen and VIP ports, or, with namesrv.aclEnable, the name server's write
 * requests — so no processor has its own check. A refusal is answered as a Java 4.9 broker
 * answers (its AclException escapes the RPC hook): SYSTEM_ERROR with the remark
 * "org.apache.rocketmq.acl.common.AclException: <what is missing>" — never a secret — and the
 * request is not processed, so it changes nothing.
 *
 * Logging: one line per client host and reason per LOG_INTERVAL_MS, counting what it held back;
 * the table of (host, reason) keys is bounded (DENIAL_LOG_KEYS_MAX), so a flood of bad signatures
 * from many addresses can neither flood the log nor grow memory. A refusal costs one HMAC at most.
 *
 * Reloading (RocketMQ's AclFileWatchService): the file is re-read when it changes — fs.watch on its
 * directory (an editor or `mv` replaces the file, which a watch on the file itself would miss) plus
 * a stat poll every pollIntervalMs as a fallback (network file systems, missed events), debounced
 * by RELOAD_DEBOUNCE_MS — and on `reload()` (SIGHUP). New rules replace the old ones in one
 * assignment, and only when the whole file is valid; otherwise every problem is logged and the old
 * rules stay in force. A start with an invalid file is refused by createAclHook.
 */
import { statSync, watch, type FSWatcher } from "node:fs";
import { basename, dirname } from "node:path";
import { systemClock, type Clock, type TimerHandle } from "../common/clock.ts";
import { scope as logScope, type Logger } from "../common/log.ts";
import { createResponse, type RemotingCommand } from "../remoting/command.ts";
import type { RemotingConnection } from "../remoting/connection.ts";
import type { RequestHook } from "../remoting/pipeline.ts";
import { requestCodeName } from "../remoting/request-code.ts";
import { ResponseCode } from "../remoting/response-code.ts";
import { remoteHost } from "./address.ts";
import { parseAclRules, type AclRules } from "./rules.ts";
import { checkAccess, type AclDenial, type AclScope } from "./validator.ts";
import { readTextFile } from "../common/atomic-file.ts";

/** Java's exception class, as its name starts the remark of a Java broker's refusal. */
export const ACL_EXCEPTION_PREFIX = "org.apache.rocketmq.acl.common.AclException: ";
export const LOG_INTERVAL_MS = 60_000;
export const DENIAL_LOG_KEYS_MAX = 1024;
export const RELOAD_DEBOUNCE_MS = 200;
export const ACL_POLL_INTERVAL_MS_DEFAULT = 5_000;

export interface AclHookOptions {
  /** The plain_acl.yml to enforce (broker.aclFile / namesrv.aclFile, resolved). */
  file: string;
  log: Logger;
  /** "namesrv": only the name server's write requests are checked (validator.ts). */
  scope?: AclScope;
  clock?: Clock;
  /** Stat poll period of the reloader; 0 = no watching at all (tests, reload() only). */
  pollIntervalMs?: number;
}

/** The file's rules, or every problem with it (unreadable: one line naming the file). */
export function readAclFile(file: string): AclRules | { errors: string[] } {
  const read = readTextFile(file);
  if ("error" in read) return { errors: [`${file}: cannot read the ACL file: ${read.error}`] };
  return parseAclRules(file, read.text);
}

export class AclHook implements RequestHook {
  readonly name = "acl";
  readonly file: string;
  readonly #scope: AclScope;
  readonly #log: Logger;
  readonly #clock: Clock;
  #rules: AclRules;
  readonly #denials = new Map<string, { at: number; suppressed: number }>();
  #watcher: FSWatcher | undefined;
  #poll: TimerHandle | undefined;
  #debounce: TimerHandle | undefined;
  #lastStat = "";

  constructor(rules: AclRules, opts: AclHookOptions) {
    this.file = opts.file;
    this.#rules = rules;
    this.#scope = opts.scope ?? "broker";
    this.#log = opts.log;
    this.#clock = opts.clock ?? systemClock;
    this.#lastStat = this.#stat();
    const poll = opts.pollIntervalMs ?? ACL_POLL_INTERVAL_MS_DEFAULT;
    if (poll > 0) this.#watch(poll);
  }

  /** The rules in force (the admin processor reads and rewrites through them). */
  get rules(): AclRules {
    return this.#rules;
  }

  before(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | undefined {
    const host = remoteHost(conn.remoteAddress);
    const denial = checkAccess(this.#rules, host, cmd, this.#scope);
    if (denial === undefined) return undefined;
    this.#logDenial(host, cmd, denial);
    return createResponse(cmd, ResponseCode.SYSTEM_ERROR, ACL_EXCEPTION_PREFIX + denial.message);
  }

  /** Re-reads the file (SIGHUP, a change, an ACL admin request): the new rules, or the problems while the old rules stay. */
  reload(): { ok: true } | { errors: string[] } {
    this.#lastStat = this.#stat();
    const read = readAclFile(this.file);
    if ("errors" in read) {
      this.#log.error(`ACL file ${this.file} refused, the previous rules stay in force:\n  ${read.errors.join("\n  ")}`);
      return read;
    }
    this.#rules = read;
    this.#log.info(`ACL rules reloaded from ${this.file}: ${read.accounts.size} accounts, ${read.globalWhite.length} global white-list patterns`);
    return { ok: true };
  }

  /** Stops watching the file. */
  close(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
    if (this.#poll !== undefined) this.#clock.clearInterval(this.#poll);
    if (this.#debounce !== undefined) this.#clock.clearTimeout(this.#debounce);
    this.#poll = this.#debounce = undefined;
  }

  #logDenial(host: string, cmd: RemotingCommand, denial: AclDenial): void {
    const key = `${host} ${denial.reason}`;
    const now = this.#clock.now();
    const prev = this.#denials.get(key);
    if (prev !== undefined && now - prev.at < LOG_INTERVAL_MS) {
      prev.suppressed++;
      return;
    }
    if (prev === undefined && this.#denials.size >= DENIAL_LOG_KEYS_MAX) {
      // Full: forget the expired keys; still full, one shared line for every other client.
      for (const [k, v] of this.#denials) if (now - v.at >= LOG_INTERVAL_MS) this.#denials.delete(k);
      if (this.#denials.size >= DENIAL_LOG_KEYS_MAX) {
        this.#log.rateLimited("warn", "acl-denials", `ACL refusals from more than ${DENIAL_LOG_KEYS_MAX} clients and reasons`, LOG_INTERVAL_MS);
        return;
      }
    }
    const held = prev !== undefined && prev.suppressed > 0 ? ` (${prev.suppressed} more since the last line)` : "";
    this.#denials.set(key, { at: now, suppressed: 0 });
    this.#log.warn(`ACL refused ${requestCodeName(cmd.code)} (${cmd.code}) from ${host}: ${denial.message}${held}`);
  }

  #stat(): string {
    try {
      const s = statSync(this.file);
      return `${s.ino}:${s.size}:${s.mtimeMs}`;
    } catch {
      return "missing";
    }
  }

  #watch(pollMs: number): void {
    const name = basename(this.file);
    try {
      this.#watcher = watch(dirname(this.file), (_event, changed) => {
        if (changed === null || changed === name) this.#changed();
      });
    } catch (e) {
      this.#log.warn(`cannot watch ${dirname(this.file)} (${String(e)}); ACL file changes are noticed every ${pollMs} ms`);
    }
    this.#poll = this.#clock.setInterval(() => {
      // Not while a reload is pending: a poll faster than the debounce would postpone it forever.
      if (this.#debounce === undefined && this.#stat() !== this.#lastStat) this.#changed();
    }, pollMs);
  }

  /** Debounced: an editor's save is several events; the file is read once they stop. */
  #changed(): void {
    if (this.#debounce !== undefined) this.#clock.clearTimeout(this.#debounce);
    this.#debounce = this.#clock.setTimeout(() => {
      this.#debounce = undefined;
      if (this.#stat() !== this.#lastStat) this.reload();
    }, RELOAD_DEBOUNCE_MS);
  }
}

/**
 * The hook for one server, with the file's rules in force; the file must be valid (a start with a
 * bad file is refused: every problem is returned). Close it when the server stops.
 */
export function createAclHook(opts: AclHookOptions): AclHook | { errors: string[] } {
  const rules = readAclFile(opts.file);
  if ("errors" in rules) return rules;
  return new AclHook(rules, opts);
}

/** For a server's constructor: the hook, or an Error listing every problem of the file (the process does not start). */
export function aclHookOrThrow(file: string, scope: AclScope, clock?: Clock): AclHook {
  const hook = createAclHook({ file, scope, log: logScope(`acl-${scope}`), ...(clock ? { clock } : {}) });
  if ("errors" in hook) throw new Error(`ACL file refused (${hook.errors.length} problem(s)):\n${hook.errors.join("\n")}`);
  return hook;
}
