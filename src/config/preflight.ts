/**
 * Checks that need the OS, run after loadConfig and before anything starts, so that
 * `--check-config` catches them too: the store dir must be creatable and writable, an enabled
 * ACL's file must be readable (its rules are checked when the ACL hook is built), an admin
 * token file must hold a token, the TLS files must be readable and fit together, and every
 * port the role binds must be free. Each problem names the key and where its value came from.
 *
 * Binding a port here and releasing it does not reserve it; the server can still lose a race.
 * The point is a clear message for the common case (another process already holds the port).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fsErrorWords } from "../common/atomic-file.ts";
import { resolveAdminToken } from "./admin-token.ts";
import { checkTlsSettings } from "../common/tls.ts";
import { describeSource, type ConfigSources, type Source } from "./load.ts";
import { formatHostPort, portsToBind, runsBroker, runsNamesrv, type Config, type KeyPath } from "./schema.ts";

/**
 * Returns one message per problem (empty = fine), e.g.
 * `config/a.yaml:3:3: broker.listen: 127.0.0.1:10911 is already in use`.
 * Without `loaded.sources` every value is described as `(default)`.
 */
export async function preflight(config: Config, loaded?: { sources: ConfigSources }): Promise<string[]> {
  const where = (key: KeyPath): string => describeSource(loaded?.sources[key] ?? ({ kind: "default" } satisfies Source));
  const problems: string[] = [];
  const dirProblem = checkStoreDir(config.store.dir);
  if (dirProblem !== undefined) problems.push(`${where("store.dir")}: store.dir: ${dirProblem}`);
  for (const [key, enabled, file] of aclFiles(config)) {
    const problem = enabled ? checkReadable(file) : undefined;
    if (problem !== undefined) problems.push(`${where(key)}: ${key}: ${problem} (the ACL is enabled; see config/plain_acl.yml for the format)`);
  }
  const token = resolveAdminToken(config.admin);
  if (typeof token !== "string") problems.push(`${where("admin.tokenFile")}: admin.tokenFile: ${token.invalid}`);
  for (const p of portsToBind(config)) {
    if (p.hostPort.port === 0) continue; // ephemeral: the OS picks a free one
    const problem = tryBind(p.hostPort.host, p.hostPort.port);
    if (problem === undefined) continue;
    // A derived port is named, or the operator would look for the wrong number in the file.
    const what = p.derived !== undefined ? `${p.purpose} port ${formatHostPort(p.hostPort)} (${p.derived})` : formatHostPort(p.hostPort);
    problems.push(`${where(p.key)}: ${p.key}: ${what} ${problem}`);
  }
  // TLS files: readable, parsable, key matching certificate (what the TLS engine will check).
  for (const t of await checkTlsSettings(config.tls)) problems.push(`${where(t.key as KeyPath)}: ${t.key}: ${t.problem}`);
  return problems;
}

/** The ACL files of the servers this role runs: [key, enabled, file]. */
function aclFiles(config: Config): [KeyPath, boolean, string][] {
  const out: [KeyPath, boolean, string][] = [];
  if (runsBroker(config.role)) out.push(["broker.aclFile", config.broker.aclEnable, config.broker.aclFile]);
  if (runsNamesrv(config.role)) out.push(["namesrv.aclFile", config.namesrv.aclEnable, config.namesrv.aclFile]);
  return out;
}

function checkReadable(file: string): string | undefined {
  try {
    readFileSync(file);
    return undefined;
  } catch (e) {
    return `cannot read ${file}: ${reason(e)}`;
  }
}

/** mkdir -p, then create and remove a file: the cheapest proof the store can write there. */
function checkStoreDir(dir: string): string | undefined {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (e) {
    return `cannot create ${dir}: ${reason(e)}`;
  }
  const probe = join(dir, `.rocketbun-preflight-${process.pid}-${Date.now()}`);
  try {
    writeFileSync(probe, "");
  } catch (e) {
    return `${dir} is not writable: ${reason(e)}`;
  }
  rmSync(probe, { force: true });
  return undefined;
}

function tryBind(hostname: string, port: number): string | undefined {
  try {
    const listener = Bun.listen({ hostname, port, socket: { data() {} } });
    listener.stop(true);
    return undefined;
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "EADDRINUSE") return "is already in use";
    if (code === "EADDRNOTAVAIL") return `cannot be bound: ${hostname} is not an address of this machine`;
    if (code === "EACCES") return "cannot be bound: permission denied (ports below 1024 need privileges)";
    return `cannot be bound: ${reason(e)}`;
  }
}

function reason(e: unknown): string {
  const r = fsErrorWords(e);
  return r.code !== undefined ? `${r.words} (${r.code})` : r.words;
}
