/**
 * The changes the mqadmin ACL requests make to plain_acl.yml, as Apache RocketMQ 4.9.8's
 * PlainPermissionManager makes them (updateAccessConfig, deleteAccessConfig,
 * updateGlobalWhiteAddrsConfig, updateAclConfigFileVersion):
 *
 *   upsertAccount    the account with that accessKey gets the fields the request carries, in
 *                    Java's createAclAccessConfigMap order: accessKey; secretKey; whiteRemoteAddress
 *                    when present (even ""); admin always; defaultTopicPerm / defaultGroupPerm when
 *                    not empty; topicPerms / groupPerms when present. Fields the request leaves out
 *                    keep their value. No such account: a new one is appended to `accounts`.
 *   deleteAccount    the account is removed; no such account is a refusal (Java answers false).
 *   setGlobalWhite   globalWhiteRemoteAddresses is replaced by the list.
 *   every change     dataVersion: [{counter: old + 1, timestamp: now}] (DataVersion.nextVersion).
 *
 * Unlike Java, which dumps its map back with SnakeYAML, the file is edited as a YAML document: the
 * operator's comments, order and quoting stay, and an updated account stays where it was (Java
 * moves it to the end). Values are checked before anything is written, each refusal naming the
 * field (never a secret); then the whole new text must pass parseAclRules (rules.ts), the very
 * check the hook's reload runs, so a change the broker would not load is never written.
 */
import { readFileSync } from "node:fs";
import { isMap, isScalar, isSeq, parseDocument, YAMLMap, YAMLSeq, type Document, type Node } from "yaml";
import { writeFileAtomic } from "../common/atomic-file.ts";
import type { DataVersion } from "../protocol/data-version.ts";
import { parseAddressPattern } from "./address.ts";
import { ACL_KEY_MIN_CHARS, parseAclRules, parsePerm, parseResourcePerm } from "./rules.ts";

/** What UPDATE_AND_CREATE_ACL_CONFIG carries (Java CreateAccessConfigRequestHeader); undefined = absent. */
export interface AccountChange {
  accessKey?: string;
  secretKey?: string;
  whiteRemoteAddress?: string;
  admin: boolean;
  defaultTopicPerm?: string;
  defaultGroupPerm?: string;
  topicPerms?: string[];
  groupPerms?: string[];
}

/** An edit's outcome: the new file text and its dataVersion, or why nothing is written. */
export type AclEdit = { text: string; dataVersion: DataVersion } | { invalid: string };

/** Java String.split(regex) for a one-character separator: trailing empty strings dropped. */
export function javaSplit(s: string, sep: string): string[] {
  if (!s.includes(sep)) return [s];
  const parts = s.split(sep);
  while (parts.length > 0 && parts[parts.length - 1] === "") parts.pop();
  return parts;
}

/** The problem with an account change's values, before the file is touched. */
function checkChange(c: AccountChange): string | undefined {
  for (const k of ["accessKey", "secretKey"] as const) {
    const v = c[k];
    if (v === undefined || v.length <= ACL_KEY_MIN_CHARS) return `${k} is required and must be longer than ${ACL_KEY_MIN_CHARS} characters`;
  }
  if (c.whiteRemoteAddress !== undefined) {
    const m = parseAddressPattern(c.whiteRemoteAddress);
    if (typeof m !== "function") return `whiteRemoteAddress: ${m.invalid}`;
  }
  for (const k of ["defaultTopicPerm", "defaultGroupPerm"] as const) {
    const v = c[k];
    if (v !== undefined && v !== "" && parsePerm(v) === undefined) return `${k}: "${v}" is not DENY, PUB, SUB or PUB|SUB`;
  }
  for (const k of ["topicPerms", "groupPerms"] as const) {
    for (const item of c[k] ?? []) {
      const rp = parseResourcePerm(item);
      if (!Array.isArray(rp)) return `${k}: ${rp.invalid}`;
    }
  }
  return undefined;
}

/** The document's top-level map (an empty file is an empty map), or why the text cannot be edited. */
function topMap(doc: Document): YAMLMap | { invalid: string } {
  if (doc.errors.length > 0) return { invalid: `the ACL file is not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}` };
  const root = doc.contents as Node | null;
  if (root === null || (isScalar(root) && root.value === null)) {
    const map = new YAMLMap();
    doc.contents = map;
    return map;
  }
  return isMap(root) ? root : { invalid: "the ACL file's top level is not a mapping" };
}

const textOf = (n: unknown): string | undefined => (isScalar(n) ? (n.source ?? String(n.value)) : undefined);

/** The `accounts` list, created when absent. */
function accountsOf(doc: Document, top: YAMLMap): YAMLSeq {
  const node = top.get("accounts", true);
  if (isSeq(node)) return node;
  const seq = doc.createNode([]) as YAMLSeq;
  top.set("accounts", seq);
  return seq;
}

/** Sets a list, written as the operator wrote the old one: a one-line [a, b] stays one line, its comment stays. */
function setList(doc: Document, map: YAMLMap, key: string, values: string[]): void {
  const before = map.get(key, true);
  const list = doc.createNode(values) as YAMLSeq;
  if (isSeq(before)) {
    if (before.flow === true) list.flow = true;
    if (before.comment) list.comment = before.comment;
  }
  map.set(key, list);
}

/** Bumps dataVersion, then checks the whole new text as the hook's reload will. */
function finish(file: string, doc: Document, top: YAMLMap, now: number): AclEdit {
  const first = (top.get("dataVersion", true) as YAMLSeq | undefined)?.items?.[0];
  const counterText = isMap(first) ? textOf(first.get("counter", true)) : undefined;
  const counter = counterText !== undefined && /^\d+$/.test(counterText) ? Number(counterText) : 0;
  const dataVersion = { counter: counter + 1, timestamp: now };
  top.set("dataVersion", doc.createNode([dataVersion]));
  const text = doc.toString({ lineWidth: 0, flowCollectionPadding: false });
  const rules = parseAclRules(file, text);
  if ("errors" in rules) return { invalid: `the ACL file would not load: ${rules.errors.join("; ")}` };
  return { text, dataVersion };
}

/** UPDATE_AND_CREATE_ACL_CONFIG on the file's text. */
export function upsertAccount(file: string, text: string, c: AccountChange, now: number): AclEdit {
  const problem = checkChange(c);
  if (problem !== undefined) return { invalid: problem };
  const doc = parseDocument(text, { uniqueKeys: false });
  const top = topMap(doc);
  if ("invalid" in top) return top;
  const accounts = accountsOf(doc, top);
  let account = accounts.items.find((a) => isMap(a) && textOf(a.get("accessKey", true)) === c.accessKey) as YAMLMap | undefined;
  if (account === undefined) {
    account = doc.createNode({}) as YAMLMap;
    accounts.items.push(account);
  }
  const set = (key: string, value: unknown) => account.set(key, doc.createNode(value));
  set("accessKey", c.accessKey);
  set("secretKey", c.secretKey);
  if (c.whiteRemoteAddress !== undefined) set("whiteRemoteAddress", c.whiteRemoteAddress);
  set("admin", c.admin);
  if (c.defaultTopicPerm) set("defaultTopicPerm", c.defaultTopicPerm);
  if (c.defaultGroupPerm) set("defaultGroupPerm", c.defaultGroupPerm);
  if (c.topicPerms !== undefined) setList(doc, account, "topicPerms", c.topicPerms);
  if (c.groupPerms !== undefined) setList(doc, account, "groupPerms", c.groupPerms);
  return finish(file, doc, top, now);
}

/** DELETE_ACL_CONFIG on the file's text. */
export function deleteAccount(file: string, text: string, accessKey: string | undefined, now: number): AclEdit {
  if (accessKey === undefined || accessKey === "") return { invalid: "accessKey is required" };
  const doc = parseDocument(text, { uniqueKeys: false });
  const top = topMap(doc);
  if ("invalid" in top) return top;
  const accounts: unknown = top.get("accounts", true);
  const index = isSeq(accounts) ? accounts.items.findIndex((a) => isMap(a) && textOf(a.get("accessKey", true)) === accessKey) : -1;
  if (!isSeq(accounts) || index < 0) return { invalid: `no account has accessKey ${accessKey}` };
  accounts.items.splice(index, 1);
  return finish(file, doc, top, now);
}

/** UPDATE_GLOBAL_WHITE_ADDRS_CONFIG on the file's text; `patterns` already split as Java splits them. */
export function setGlobalWhite(file: string, text: string, patterns: string[], now: number): AclEdit {
  for (const p of patterns) {
    const m = parseAddressPattern(p);
    if (typeof m !== "function") return { invalid: `globalWhiteRemoteAddresses: ${m.invalid}` };
  }
  const doc = parseDocument(text, { uniqueKeys: false });
  const top = topMap(doc);
  if ("invalid" in top) return top;
  setList(doc, top, "globalWhiteRemoteAddresses", patterns);
  return finish(file, doc, top, now);
}

/**
 * Reads `file`, applies `edit` to its text and, when the edit is accepted, replaces the file
 * atomically (atomic-file.ts: the old version stays as `<file>.bak`). Synchronous, so two
 * requests never interleave their read and write (Java's methods are `synchronized`).
 */
export function rewriteAclFile(file: string, edit: (text: string) => AclEdit): AclEdit {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    return { invalid: `cannot read the ACL file ${file}: ${e instanceof Error ? e.message : String(e)}` };
  }
  const out = edit(text);
  if ("invalid" in out) return out;
  try {
    writeFileAtomic(file, out.text);
  } catch (e) {
    return { invalid: `cannot write the ACL file ${file}: ${e instanceof Error ? e.message : String(e)}` };
  }
  return out;
}
