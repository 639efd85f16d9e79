/**
 * plain_acl.yml, RocketMQ 4.9's format unchanged, read into typed rules — or into every problem
 * in the file as `FILE:LINE:COL: path: problem` (the house rule of config/load.ts, docs/CONVENTIONS.md §10):
 *
 *   globalWhiteRemoteAddresses: [pattern, ...]      # address.ts; a match skips every check
 *   accounts:
 *     - accessKey: ak                               # required, longer than 6 characters, unique
 *       secretKey: sk                               # required, longer than 6 characters
 *       whiteRemoteAddress: pattern                 # a match skips the signature and permissions
 *       admin: false                                # admin-only request codes; no perms = all
 *       defaultTopicPerm: DENY                      # DENY | PUB | SUB | PUB|SUB (SUB|PUB); absent = DENY
 *       defaultGroupPerm: DENY
 *       topicPerms: [topicA=PUB, ...]
 *       groupPerms: [groupA=SUB, ...]               # kept under the group's %RETRY% topic
 *   dataVersion: [{counter: n, timestamp: ms}]      # written by the ACL admin requests
 *
 * Stricter than Java, on purpose: an unknown key (a typo such as `topicPerm` silently granted the
 * defaults in RocketMQ), an unknown permission word (Java reads it as DENY), a repeated accessKey
 * (Java keeps the last) and a pattern Java would throw on are all problems, and a file with a
 * problem is not used at all. Scalars keep the text they were written with: `secretKey: 12345678`
 * is the string "12345678", as Java reads it.
 */
import { isMap, isScalar, isSeq, LineCounter, parseDocument } from "yaml";
import type { Node, Pair, YAMLMap } from "yaml";
import { closest } from "../config/schema.ts";
import { retryTopic } from "../protocol/topics.ts";
import { parseAddressPattern, type AddressMatcher } from "./address.ts";

/** Java `Permission` bits (not PermName's): a needed perm is met when the owned one shares a bit. */
export const AclPerm = { DENY: 1, ANY: 2, PUB: 4, SUB: 8 } as const;

/** Java AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH: keys must be longer. */
export const ACL_KEY_MIN_CHARS = 6;

export interface AclAccount {
  accessKey: string;
  secretKey: string;
  /** As written (admin answers and rewrites show it back). */
  whiteRemoteAddress?: string;
  white: AddressMatcher;
  admin: boolean;
  defaultTopicPerm: number;
  defaultGroupPerm: number;
  /** Resource → AclPerm bits; a group is keyed by its %RETRY% topic, as in RocketMQ. */
  perms: ReadonlyMap<string, number>;
}

export interface AclRules {
  globalWhite: readonly AddressMatcher[];
  accounts: ReadonlyMap<string, AclAccount>;
  /** The file's dataVersion (counter 0, timestamp 0 when it has none). */
  dataVersion: { counter: number; timestamp: number };
}

export const EMPTY_ACL_RULES: AclRules = { globalWhite: [], accounts: new Map(), dataVersion: { counter: 0, timestamp: 0 } };

/** Java Permission.parsePermFromString, but an unknown word is a problem instead of DENY. */
export function parsePerm(text: string): number | undefined {
  switch (text.trim()) {
    case "DENY":
      return AclPerm.DENY;
    case "PUB":
      return AclPerm.PUB;
    case "SUB":
      return AclPerm.SUB;
    case "PUB|SUB":
    case "SUB|PUB":
      return AclPerm.PUB | AclPerm.SUB;
    default:
      return undefined;
  }
}

/** Java Permission.checkPermission: DENY wins; ANY wants PUB or SUB; otherwise a shared bit. */
export function permits(needed: number, owned: number): boolean {
  if ((owned & AclPerm.DENY) !== 0) return false;
  if ((needed & AclPerm.ANY) !== 0) return (owned & (AclPerm.PUB | AclPerm.SUB)) !== 0;
  return (needed & owned) !== 0;
}

/** "topicA=PUB" → [resource, perm] or why not (Java Permission.checkResourcePerms' two rules). */
export function parseResourcePerm(text: string): [string, number] | { invalid: string } {
  const items = text.split("=").filter((s) => s.length > 0);
  if (items.length !== 2) return { invalid: `"${text}" is not Resource=Perm (e.g. topicA=SUB)` };
  const perm = parsePerm(items[1]!);
  if (perm === undefined) return { invalid: `"${items[1]!.trim()}" is not DENY, PUB, SUB or PUB|SUB` };
  return [items[0]!.trim(), perm];
}

const TOP_KEYS = ["globalWhiteRemoteAddresses", "accounts", "dataVersion"];
const ACCOUNT_KEYS = ["accessKey", "secretKey", "whiteRemoteAddress", "admin", "defaultTopicPerm", "defaultGroupPerm", "topicPerms", "groupPerms"];

interface Ctx {
  report(node: Node | null | undefined, path: string, problem: string): void;
}

interface Located {
  line: number;
  col: number;
  text: string;
}

/** Parses one plain_acl.yml text; `file` is only used in messages. */
export function parseAclRules(file: string, text: string): AclRules | { errors: string[] } {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: false });
  const errors: Located[] = [];
  const at = (offset: number, path: string, problem: string) => {
    const { line, col } = lc.linePos(offset);
    errors.push({ line, col, text: `${file}:${line}:${col}: ${path}: ${problem}` });
  };
  const ctx: Ctx = { report: (node, path, problem) => at(node?.range?.[0] ?? 0, path, problem) };
  for (const e of doc.errors) at(e.pos[0], "YAML syntax error", e.message.split("\n")[0]!);
  if (doc.errors.length > 0) return { errors: errors.map((e) => e.text) };
  const root = doc.contents as Node | null;
  let rules: AclRules = EMPTY_ACL_RULES;
  if (root !== null && !(isScalar(root) && root.value === null)) {
    if (isMap(root)) rules = readRoot(root, ctx);
    else ctx.report(root, "top level", "expected a mapping with globalWhiteRemoteAddresses and accounts");
  }
  errors.sort((a, b) => a.line - b.line || a.col - b.col);
  return errors.length > 0 ? { errors: errors.map((e) => e.text) } : rules;
}

/** The pairs of a map with unknown and repeated keys reported; the value node by key. */
function fields(map: YAMLMap, known: readonly string[], path: string, ctx: Ctx): Map<string, Node | null> {
  const out = new Map<string, Node | null>();
  for (const pair of map.items as Pair[]) {
    const keyNode = pair.key as Node | null;
    const name = isScalar(keyNode) ? String(keyNode.value) : "?";
    const where = path === "" ? name : `${path}.${name}`;
    if (!known.includes(name)) {
      const near = closest(name, known);
      ctx.report(keyNode, where, `unknown key "${name}"${near !== undefined ? ` (did you mean "${near}"?)` : ""}`);
    } else if (out.has(name)) ctx.report(keyNode, where, "duplicate key");
    else out.set(name, pair.value as Node | null);
  }
  return out;
}

const isNull = (n: Node | null | undefined) => n === null || n === undefined || (isScalar(n) && n.value === null);

/** A scalar's text as written (numbers too), or undefined with a problem reported. */
function scalarText(node: Node | null | undefined, path: string, ctx: Ctx): string | undefined {
  if (isNull(node)) return undefined;
  if (!isScalar(node) || typeof node.value === "object") {
    ctx.report(node, path, "expected a single value");
    return undefined;
  }
  return node.source ?? String(node.value);
}

/** A list of scalars' texts; absent or empty is []. */
function textList(node: Node | null | undefined, path: string, ctx: Ctx): { node: Node; text: string }[] {
  if (isNull(node)) return [];
  if (!isSeq(node)) {
    ctx.report(node, path, "expected a list");
    return [];
  }
  const out: { node: Node; text: string }[] = [];
  (node.items as Node[]).forEach((item, i) => {
    const text = scalarText(item, `${path}[${i}]`, ctx);
    if (text !== undefined) out.push({ node: item, text });
  });
  return out;
}

function readRoot(root: YAMLMap, ctx: Ctx): AclRules {
  const f = fields(root, TOP_KEYS, "", ctx);
  const globalWhite: AddressMatcher[] = [];
  textList(f.get("globalWhiteRemoteAddresses"), "globalWhiteRemoteAddresses", ctx).forEach(({ node, text }, i) => {
    const m = parseAddressPattern(text);
    if (typeof m === "function") globalWhite.push(m);
    else ctx.report(node, `globalWhiteRemoteAddresses[${i}]`, m.invalid);
  });
  const accounts = new Map<string, AclAccount>();
  const list = f.get("accounts");
  if (!isNull(list) && !isSeq(list)) ctx.report(list, "accounts", "expected a list of accounts");
  else if (isSeq(list)) {
    (list.items as Node[]).forEach((item, i) => {
      const account = readAccount(item, `accounts[${i}]`, ctx);
      if (account === undefined) return;
      if (accounts.has(account.accessKey)) ctx.report(item, `accounts[${i}].accessKey`, `accessKey ${account.accessKey} is defined twice`);
      else accounts.set(account.accessKey, account);
    });
  }
  return { globalWhite, accounts, dataVersion: readDataVersion(f.get("dataVersion"), ctx) };
}

function readDataVersion(node: Node | null | undefined, ctx: Ctx): { counter: number; timestamp: number } {
  const none = { counter: 0, timestamp: 0 };
  if (isNull(node)) return none;
  const first = isSeq(node) ? (node.items[0] as Node | undefined) : undefined;
  if (first === undefined) return none;
  if (!isMap(first)) {
    ctx.report(node, "dataVersion", "expected a list of {counter, timestamp}");
    return none;
  }
  const f = fields(first, ["counter", "timestamp"], "dataVersion[0]", ctx);
  const num = (k: string) => {
    const t = scalarText(f.get(k), `dataVersion[0].${k}`, ctx) ?? "0";
    if (/^\d+$/.test(t)) return Number(t);
    ctx.report(f.get(k), `dataVersion[0].${k}`, "expected a whole number");
    return 0;
  };
  return { counter: num("counter"), timestamp: num("timestamp") };
}

function readAccount(item: Node, path: string, ctx: Ctx): AclAccount | undefined {
  if (!isMap(item)) {
    ctx.report(item, path, "expected an account (accessKey, secretKey, ...)");
    return undefined;
  }
  const f = fields(item, ACCOUNT_KEYS, path, ctx);
  const key = (k: "accessKey" | "secretKey") => {
    const t = scalarText(f.get(k), `${path}.${k}`, ctx);
    if (t === undefined || t.length <= ACL_KEY_MIN_CHARS)
      ctx.report(f.get(k) ?? item, `${path}.${k}`, `required, longer than ${ACL_KEY_MIN_CHARS} characters`);
    return t;
  };
  const accessKey = key("accessKey");
  const secretKey = key("secretKey");
  const whiteText = scalarText(f.get("whiteRemoteAddress"), `${path}.whiteRemoteAddress`, ctx);
  const white = parseAddressPattern(whiteText);
  if (typeof white !== "function") ctx.report(f.get("whiteRemoteAddress"), `${path}.whiteRemoteAddress`, white.invalid);
  const adminText = scalarText(f.get("admin"), `${path}.admin`, ctx) ?? "false";
  if (adminText !== "true" && adminText !== "false") ctx.report(f.get("admin"), `${path}.admin`, "expected true or false");
  const perm = (k: "defaultTopicPerm" | "defaultGroupPerm") => {
    const t = scalarText(f.get(k), `${path}.${k}`, ctx);
    const p = t === undefined ? AclPerm.DENY : parsePerm(t);
    if (p === undefined) ctx.report(f.get(k), `${path}.${k}`, `"${t}" is not DENY, PUB, SUB or PUB|SUB`);
    return p ?? AclPerm.DENY;
  };
  const account: AclAccount = {
    accessKey: accessKey ?? "",
    secretKey: secretKey ?? "",
    white: typeof white === "function" ? white : () => false,
    admin: adminText === "true",
    defaultTopicPerm: perm("defaultTopicPerm"),
    defaultGroupPerm: perm("defaultGroupPerm"),
    perms: readPerms(f, path, ctx),
  };
  if (whiteText !== undefined) account.whiteRemoteAddress = whiteText;
  return accessKey !== undefined ? account : undefined;
}

/** groupPerms first, then topicPerms, as Java's buildPlainAccessResource adds them. */
function readPerms(f: Map<string, Node | null>, path: string, ctx: Ctx): Map<string, number> {
  const perms = new Map<string, number>();
  for (const k of ["groupPerms", "topicPerms"] as const) {
    textList(f.get(k), `${path}.${k}`, ctx).forEach(({ node, text }, i) => {
      const rp = parseResourcePerm(text);
      if (!Array.isArray(rp)) ctx.report(node, `${path}.${k}[${i}]`, rp.invalid);
      else perms.set(k === "groupPerms" ? retryTopic(rp[0]) : rp[0], rp[1]);
    });
  }
  return perms;
}
