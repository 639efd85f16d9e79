/**
 * The access decision for one request, in the order of Apache RocketMQ 4.9's
 * PlainPermissionManager.validate (golden verdicts: test/golden/acl/vectors.json, "validator"):
 *
 *   1. the remote host matches a globalWhiteRemoteAddresses pattern     → allowed
 *   2. no AccessKey field                       → "No accessKey is configured"
 *   3. an AccessKey no account has              → "No acl config for AK"
 *   4. the host matches the account's whiteRemoteAddress                → allowed
 *   5. Signature ≠ HmacSHA1 of the request      → "Check signature failed for accessKey=AK"
 *   6. the request publishes to RMQ_SYS_TRACE_TOPIC (message trace)     → allowed
 *   7. an admin-only code, account not admin    → "Need admin permission for request code=N, but accessKey=AK is not"
 *   8. each resource the request names (table below) needs its perm; a resource the account
 *      does not list gets defaultTopicPerm, or defaultGroupPerm for a group (%RETRY% topic);
 *      an admin account without any listed perms may do anything
 *                                               → "No default permission for topic:T" / "group:G"
 *
 * Resources by request code (PlainAccessValidator.parse; every other code names none, so only
 * steps 1–7 apply to it):
 *
 *   SEND_MESSAGE            topic PUB, or group's %RETRY% SUB when topic is a %RETRY% topic
 *   SEND_MESSAGE_V2         the same with the short names: b = topic, a = producer group
 *   CONSUMER_SEND_MSG_BACK  group's %RETRY% SUB
 *   PULL_MESSAGE            topic SUB, consumerGroup's %RETRY% SUB
 *   QUERY_MESSAGE           topic SUB
 *   HEART_BEAT              (body) each consumer group's %RETRY% SUB, each subscribed topic SUB
 *   UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP     consumerGroup's %RETRY% SUB
 *   UPDATE_CONSUMER_OFFSET  consumerGroup's %RETRY% SUB, topic SUB
 *   POP_MESSAGE, PEEK_MESSAGE, NOTIFICATION, POLLING_INFO, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME
 *                           (5.x) topic SUB — the topic a POP retry topic `%RETRY%{group}_{topic}`
 *                           names, for an ack of a retried message —, consumerGroup's %RETRY% SUB,
 *                           as 5.3's authorization asks SUB of the topic and the group
 *   QUERY_ASSIGNMENT        (5.x, body) topic SUB, consumerGroup's %RETRY% SUB
 *
 * So, as on a Java 4.9 broker, SEND_BATCH_MESSAGE, QUERY_CONSUMER_OFFSET, END_TRANSACTION and
 * LOCK/UNLOCK_BATCH_MQ need a valid signature but no resource permission. Admin-only codes
 * (Java Permission.ADMIN_CODE): UPDATE_AND_CREATE_TOPIC, UPDATE_BROKER_CONFIG,
 * DELETE_TOPIC_IN_BROKER, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP, and —
 * our addition, see BROKER_ADMIN_CODES — the ACL admin requests 50–53. On a
 * name server (namesrv.aclEnable, RocketBun's own: 4.9's name server has no ACL) only the write
 * codes of NAMESRV_WRITE_CODES are checked, all of them admin-only, and nothing else is.
 *
 * Deviation: resources are read after the signature check, so an unauthenticated peer cannot make
 * the broker parse heartbeat bodies; Java parses first, and refuses a white-listed peer's
 * malformed heartbeat, which here reaches the processor (and is refused there).
 */
import { parseJsonBytes } from "../common/json.ts";
import { ACL_ACCESS_KEY_FIELD, ACL_SIGNATURE_FIELD, signedText, verifyAclSignature } from "../protocol/acl-signature.ts";
import { popNormalTopic } from "../protocol/pop.ts";
import { RETRY_GROUP_TOPIC_PREFIX, retryTopic, TRACE_TOPIC } from "../protocol/topics.ts";
import type { RemotingCommand } from "../remoting/command.ts";
import { RequestCode } from "../remoting/request-code.ts";
import { AclPerm, permits, type AclRules } from "./rules.ts";

/**
 * Java Permission.ADMIN_CODE, plus the four ACL admin requests (50–53). Those are not in Java
 * 4.9.8's set: there any signed account may rewrite plain_acl.yml — even make itself admin — so
 * here they are admin-only, the one place our verdicts differ from Java's on purpose.
 */
export const BROKER_ADMIN_CODES: ReadonlySet<number> = new Set([
  RequestCode.UPDATE_AND_CREATE_TOPIC,
  RequestCode.UPDATE_BROKER_CONFIG,
  RequestCode.DELETE_TOPIC_IN_BROKER,
  RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
  RequestCode.DELETE_SUBSCRIPTIONGROUP,
  RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
  RequestCode.DELETE_ACL_CONFIG,
  RequestCode.GET_BROKER_CLUSTER_ACL_INFO,
  RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
  // 5.x's mqadmin setConsumeMode: a group's consume mode is an operator's decision.
  RequestCode.SET_MESSAGE_REQUEST_MODE,
]);

/** The name server requests that change something: with namesrv.aclEnable, admin accounts only. */
export const NAMESRV_WRITE_CODES: ReadonlySet<number> = new Set([
  RequestCode.PUT_KV_CONFIG,
  RequestCode.DELETE_KV_CONFIG,
  RequestCode.REGISTER_BROKER,
  RequestCode.UNREGISTER_BROKER,
  RequestCode.WIPE_WRITE_PERM_OF_BROKER,
  RequestCode.ADD_WRITE_PERM_OF_BROKER,
  RequestCode.DELETE_TOPIC_IN_NAMESRV,
  RequestCode.UPDATE_NAMESRV_CONFIG,
]);

export type AclScope = "broker" | "namesrv";

/** Why a request is refused: `reason` is short and fixed per kind (log rate-limit key), `message` is Java's text. */
export interface AclDenial {
  reason: "no-access-key" | "unknown-access-key" | "bad-signature" | "not-admin" | "no-permission" | "bad-request";
  message: string;
}

/**
 * The resources one request names, in the order Java puts them in its resourcePermMap. Filled
 * by `collectResources` into one list kept for the module (checks are synchronous and never nest),
 * so the check of a send allocates nothing: a Map and three closures per request were 0.4 µs of
 * the 3 µs a signed SEND_MESSAGE_V2 cost (bench/micro/acl-check.ts). A resource named twice is
 * listed twice; every code names a resource with one perm only, so the verdict is the Map's.
 */
class ResourceList {
  readonly names: string[] = [];
  readonly perms: number[] = [];
  length = 0;

  add(resource: string | undefined, perm: number): void {
    if (resource === undefined) return;
    this.names[this.length] = resource;
    this.perms[this.length] = perm;
    this.length++;
  }

  group(g: string | undefined): void {
    if (g !== undefined) this.add(retryTopic(g), AclPerm.SUB);
  }

  send(topic: string | undefined, producerGroup: string | undefined): void {
    if (topic?.startsWith(RETRY_GROUP_TOPIC_PREFIX)) this.group(producerGroup);
    else this.add(topic, AclPerm.PUB);
  }
}

const SCRATCH = new ResourceList();

/** Fills `need` (emptied first) with the resources `cmd` names; a reason when its body cannot be read. */
function collectResources(cmd: RemotingCommand, need: ResourceList): { invalid: string } | undefined {
  need.length = 0;
  const ext = cmd.extFields ?? {};
  switch (cmd.code) {
    case RequestCode.SEND_MESSAGE:
      need.send(ext.topic, ext.group);
      break;
    case RequestCode.SEND_MESSAGE_V2:
      need.send(ext.b, ext.a);
      break;
    case RequestCode.CONSUMER_SEND_MSG_BACK:
      need.group(ext.group);
      break;
    case RequestCode.PULL_MESSAGE:
      need.add(ext.topic, AclPerm.SUB);
      need.group(ext.consumerGroup);
      break;
    case RequestCode.QUERY_MESSAGE:
      need.add(ext.topic, AclPerm.SUB);
      break;
    case RequestCode.HEART_BEAT:
      return heartbeatResources(cmd.body, need);
    case RequestCode.UNREGISTER_CLIENT:
    case RequestCode.GET_CONSUMER_LIST_BY_GROUP:
      need.group(ext.consumerGroup);
      break;
    case RequestCode.UPDATE_CONSUMER_OFFSET:
      need.group(ext.consumerGroup);
      need.add(ext.topic, AclPerm.SUB);
      break;
    case RequestCode.POP_MESSAGE:
    case RequestCode.PEEK_MESSAGE:
    case RequestCode.NOTIFICATION:
    case RequestCode.POLLING_INFO:
    case RequestCode.ACK_MESSAGE:
    case RequestCode.CHANGE_MESSAGE_INVISIBLETIME:
      need.group(ext.consumerGroup);
      if (ext.topic !== undefined) need.add(popNormalTopic(ext.topic, ext.consumerGroup ?? ""), AclPerm.SUB);
      break;
    case RequestCode.QUERY_ASSIGNMENT:
      return assignmentResources(cmd.body, need);
  }
  return undefined;
}

/** The resources a request names, resource → needed AclPerm bits (Java's resourcePermMap). */
export function requestResources(cmd: RemotingCommand): Map<string, number> | { invalid: string } {
  const list = new ResourceList();
  const invalid = collectResources(cmd, list);
  if (invalid !== undefined) return invalid;
  const need = new Map<string, number>();
  for (let i = 0; i < list.length; i++) need.set(list.names[i]!, list.perms[i]!);
  return need;
}

function heartbeatResources(body: Uint8Array | undefined, need: ResourceList): { invalid: string } | undefined {
  let raw: unknown;
  try {
    raw = parseJsonBytes(body ?? new Uint8Array());
  } catch {
    return { invalid: "the heartbeat body is not JSON" };
  }
  const consumers = (raw as { consumerDataSet?: unknown } | null)?.consumerDataSet;
  for (const c of Array.isArray(consumers) ? consumers : []) {
    const cd = c as { groupName?: unknown; subscriptionDataSet?: unknown } | null;
    if (typeof cd?.groupName === "string") need.group(cd.groupName);
    const subs = cd?.subscriptionDataSet;
    for (const s of Array.isArray(subs) ? subs : []) {
      const topic = (s as { topic?: unknown } | null)?.topic;
      if (typeof topic === "string") need.add(topic, AclPerm.SUB);
    }
  }
  return undefined;
}

function assignmentResources(body: Uint8Array | undefined, need: ResourceList): { invalid: string } | undefined {
  let raw: unknown;
  try {
    raw = parseJsonBytes(body ?? new Uint8Array());
  } catch {
    return { invalid: "the assignment query's body is not JSON" };
  }
  const q = raw as { topic?: unknown; consumerGroup?: unknown } | null;
  if (typeof q?.consumerGroup === "string") need.group(q.consumerGroup);
  if (typeof q?.topic === "string" && typeof q.consumerGroup === "string") need.add(popNormalTopic(q.topic, q.consumerGroup), AclPerm.SUB);
  return undefined;
}

/** Java's resourcePermMap.get(TRACE_TOPIC) == PUB: a message-trace send is let through. */
function publishesTrace(need: ResourceList): boolean {
  let perm: number | undefined;
  for (let i = 0; i < need.length; i++) if (need.names[i] === TRACE_TOPIC) perm = need.perms[i];
  return perm === AclPerm.PUB;
}

/** Steps 1–8 at the top of this file: undefined = allowed. `host` is the remote address without its port. */
export function checkAccess(rules: AclRules, host: string, cmd: RemotingCommand, scope: AclScope = "broker"): AclDenial | undefined {
  if (scope === "namesrv" && !NAMESRV_WRITE_CODES.has(cmd.code)) return undefined;
  for (const white of rules.globalWhite) if (white(host)) return undefined;
  const ext = cmd.extFields;
  const accessKey = ext?.[ACL_ACCESS_KEY_FIELD];
  if (accessKey === undefined) return { reason: "no-access-key", message: "No accessKey is configured" };
  const account = rules.accounts.get(accessKey);
  if (account === undefined) return { reason: "unknown-access-key", message: `No acl config for ${accessKey}` };
  if (account.white(host)) return undefined;
  if (!verifyAclSignature(signedText(ext), cmd.body, account.secretKey, ext?.[ACL_SIGNATURE_FIELD])) {
    return { reason: "bad-signature", message: `Check signature failed for accessKey=${accessKey}` };
  }
  const need = SCRATCH;
  const invalid = collectResources(cmd, need);
  if (invalid !== undefined) return { reason: "bad-request", message: invalid.invalid };
  if (publishesTrace(need)) return undefined;
  const adminOnly = scope === "namesrv" || BROKER_ADMIN_CODES.has(cmd.code);
  if (adminOnly && !account.admin) {
    return { reason: "not-admin", message: `Need admin permission for request code=${cmd.code}, but accessKey=${accessKey} is not` };
  }
  if (need.length === 0 || (account.perms.size === 0 && account.admin)) return undefined;
  for (let i = 0; i < need.length; i++) {
    const resource = need.names[i]!;
    const isGroup = resource.startsWith(RETRY_GROUP_TOPIC_PREFIX);
    const owned = account.perms.get(resource) ?? (isGroup ? account.defaultGroupPerm : account.defaultTopicPerm);
    if (!permits(need.perms[i]!, owned)) {
      const name = isGroup ? `group:${resource.slice(RETRY_GROUP_TOPIC_PREFIX.length)}` : `topic:${resource}`;
      return { reason: "no-permission", message: `No default permission for ${name}` };
    }
  }
  return undefined;
}
