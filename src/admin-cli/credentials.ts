/**
 * Where `rocketbun admin` finds what it connects with: the name servers (-n, else $NAMESRV_ADDR,
 * as mqadmin), TLS (--tls, --tls-ca), and the ACL credentials it signs with, first found wins:
 * --access-key/--secret-key, $ROCKETMQ_ACCESS_KEY/$ROCKETMQ_SECRET_KEY, then mqadmin's own
 * $ROCKETMQ_HOME/conf/tools.yml (`accessKey:` / `secretKey:`, AclUtils.getAclRPCHook), so a host
 * set up for mqadmin needs nothing more. Bad usage is a UsageError (exit 2).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { splitHostPort } from "../remoting/index.ts";
import type { AclCredentials } from "../protocol/acl-signature.ts";
import type { ClientTlsOptions } from "../client/client-instance.ts";
import { UsageError, type Flags } from "./flags.ts";

export type Env = Readonly<Record<string, string | undefined>>;

export function namesrvAddrs(f: Flags, env: Env): string[] {
  const text = f.str("namesrvAddr") ?? env.NAMESRV_ADDR;
  if (text === undefined || text.trim() === "") throw new UsageError("no name server: give -n HOST:PORT[;HOST:PORT] or set NAMESRV_ADDR");
  const addrs = text
    .split(";")
    .map((a) => a.trim())
    .filter(Boolean);
  for (const a of addrs) {
    try {
      splitHostPort(a);
    } catch {
      throw new UsageError(`${f.label("namesrvAddr")}: ${JSON.stringify(a)} is not HOST:PORT`);
    }
  }
  return addrs;
}

export function credentials(f: Flags, env: Env): AclCredentials | undefined {
  const ak = f.str("access-key");
  const sk = f.str("secret-key");
  if ((ak === undefined) !== (sk === undefined)) throw new UsageError("--access-key and --secret-key go together");
  if (ak !== undefined && sk !== undefined) return { accessKey: ak, secretKey: sk };
  const eak = env.ROCKETMQ_ACCESS_KEY;
  const esk = env.ROCKETMQ_SECRET_KEY;
  if (eak && esk) return { accessKey: eak, secretKey: esk };
  if (eak || esk) throw new UsageError("ROCKETMQ_ACCESS_KEY and ROCKETMQ_SECRET_KEY go together");
  return toolsYml(env);
}

/** mqadmin's tools.yml; absent, unreadable or without both keys: no credentials, as mqadmin. */
function toolsYml(env: Env): AclCredentials | undefined {
  const home = env.ROCKETMQ_HOME;
  if (!home) return undefined;
  const file = join(home, "conf", "tools.yml");
  if (!existsSync(file)) return undefined;
  try {
    const doc: unknown = parseYaml(readFileSync(file, "utf8"));
    if (typeof doc !== "object" || doc === null) return undefined;
    const { accessKey, secretKey } = doc as { accessKey?: unknown; secretKey?: unknown };
    if (typeof accessKey !== "string" || typeof secretKey !== "string" || !accessKey.trim() || !secretKey.trim()) return undefined;
    return { accessKey: accessKey.trim(), secretKey: secretKey.trim() };
  } catch {
    return undefined;
  }
}

export function tlsOption(f: Flags): true | ClientTlsOptions | undefined {
  const caFile = f.str("tls-ca");
  if (caFile === undefined) return f.has("tls") ? true : undefined;
  try {
    return { ca: readFileSync(caFile, "utf8") };
  } catch (e) {
    throw new UsageError(`--tls-ca: cannot read ${caFile}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
