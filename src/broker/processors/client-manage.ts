/**
 * ClientManageProcessor: HEART_BEAT, UNREGISTER_CLIENT, CHECK_CLIENT_CONFIG (docs/PROTOCOL.md §3.2,
 * §3.3). Membership is registered *before* the heartbeat is answered, because clients ask
 * GET_CONSUMER_LIST_BY_GROUP right after.
 */
import { parseJsonBytes } from "../../common/json.ts";
import { PermName } from "../../protocol/permission.ts";
import {
  createResponse,
  optString,
  reqString,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import type { BrokerContext } from "../context.ts";
import { buildSubscription, isSupportedType, unsupportedFilterRemark, type SubscriptionData } from "../subscription.ts";
import { retryTopic } from "../../protocol/topics.ts";

interface HeartbeatConsumer {
  groupName: string;
  consumeType: string;
  messageModel: string;
  consumeFromWhere: string;
  subscriptions: SubscriptionData[];
}

interface Heartbeat {
  clientID: string;
  producers: string[];
  consumers: HeartbeatConsumer[];
}

function str(v: unknown, def: string): string {
  return typeof v === "string" ? v : def;
}

/** A JSON number or numeric string (fastjson writes longs either way), else `def`. */
function finiteOr(v: unknown, def: number): number {
  const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : NaN;
  return Number.isFinite(n) ? n : def;
}

/** Validates HeartbeatData JSON into a typed value or a reason. */
export function decodeHeartbeat(body: Uint8Array | undefined, sql92 = false): Heartbeat | { invalid: string } {
  if (!body || body.length === 0) return { invalid: "heartbeat has no body" };
  let raw: unknown;
  try {
    raw = parseJsonBytes(body);
  } catch (e) {
    return { invalid: `heartbeat body is not JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (typeof raw !== "object" || raw === null) return { invalid: "heartbeat body is not an object" };
  const o = raw as Record<string, unknown>;
  const clientID = o.clientID;
  if (typeof clientID !== "string" || clientID === "") return { invalid: "heartbeat has no clientID" };
  const producers: string[] = [];
  for (const p of Array.isArray(o.producerDataSet) ? o.producerDataSet : []) {
    const g = (p as Record<string, unknown> | null)?.groupName;
    if (typeof g === "string" && g !== "") producers.push(g);
  }
  const consumers: HeartbeatConsumer[] = [];
  for (const c of Array.isArray(o.consumerDataSet) ? o.consumerDataSet : []) {
    if (typeof c !== "object" || c === null) continue;
    const cd = c as Record<string, unknown>;
    if (typeof cd.groupName !== "string" || cd.groupName === "") return { invalid: "consumer data without groupName" };
    const subs: SubscriptionData[] = [];
    for (const s of Array.isArray(cd.subscriptionDataSet) ? cd.subscriptionDataSet : []) {
      const sd = s as Record<string, unknown> | null;
      if (!sd || typeof sd.topic !== "string") return { invalid: "subscription without topic" };
      const built = buildSubscription(
        sd.topic,
        str(sd.subString, "*"),
        typeof sd.expressionType === "string" ? sd.expressionType : undefined,
        finiteOr(sd.subVersion, 0),
        sql92,
      );
      if ("invalid" in built) return built;
      subs.push(built);
    }
    consumers.push({
      groupName: cd.groupName,
      consumeType: str(cd.consumeType, "CONSUME_PASSIVELY"),
      messageModel: str(cd.messageModel, "CLUSTERING"),
      consumeFromWhere: str(cd.consumeFromWhere, "CONSUME_FROM_LAST_OFFSET"),
      subscriptions: subs,
    });
  }
  return { clientID, producers, consumers };
}

export class ClientManageProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;

  constructor(ctx: BrokerContext) {
    this.#ctx = ctx;
  }

  static readonly CODES = [RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT, RequestCode.CHECK_CLIENT_CONFIG];

  process(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | Promise<RemotingCommand> {
    switch (cmd.code) {
      case RequestCode.HEART_BEAT:
        return this.#heartbeat(conn, cmd);
      case RequestCode.UNREGISTER_CLIENT:
        return this.#unregister(cmd);
      default:
        return this.#checkClientConfig(cmd);
    }
  }

  /**
   * As Java's heartBeat: each consumer group's retry topic is made first, and once the name servers
   * route a new one, the members are registered (which notifies the group) and the heartbeat
   * answered; a new push consumer's rebalances right after its start then find %RETRY%<group>.
   */
  #heartbeat(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | Promise<RemotingCommand> {
    const ctx = this.#ctx;
    const hb = decodeHeartbeat(cmd.body, this.#ctx.settings.enablePropertyFilter);
    if ("invalid" in hb) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, hb.invalid);
    const routed: Promise<void>[] = [];
    const madeRetry = new Set<string>();
    for (const c of hb.consumers) {
      const group = ctx.groups.findOrCreate(c.groupName, ctx.settings.autoCreateSubscriptionGroup);
      if (group && group.retryQueueNums > 0 && !ctx.role.isSlave) {
        const retry = retryTopic(c.groupName);
        if (!ctx.topics.get(retry)) madeRetry.add(c.groupName);
        ctx.createTopicIfAbsent(retry, group.retryQueueNums, PermName.READ | PermName.WRITE);
        const wait = ctx.untilRoutable(retry);
        if (wait) routed.push(wait);
      }
    }
    if (routed.length === 0) return this.#register(conn, cmd, hb, madeRetry);
    return Promise.all(routed).then(() => this.#register(conn, cmd, hb, madeRetry));
  }

  /** The members and producers of `hb`; a member whose heartbeat made its group's retry topic is notified once more later. */
  #register(conn: RemotingConnection, cmd: RemotingCommand, hb: Heartbeat, madeRetry: ReadonlySet<string>): RemotingCommand {
    const ctx = this.#ctx;
    // Closed while its retry topic was being registered: the close already dropped its memberships.
    if (conn.closed) return createResponse(cmd, ResponseCode.SUCCESS);
    const channel = { clientId: hb.clientID, conn, language: cmd.language, version: cmd.version, lastUpdateTimestamp: ctx.now() };
    for (const c of hb.consumers) {
      ctx.consumers.register({
        group: c.groupName,
        consumeType: c.consumeType,
        messageModel: c.messageModel,
        consumeFromWhere: c.consumeFromWhere,
        subscriptions: c.subscriptions,
        channel,
      });
      if (madeRetry.has(c.groupName)) ctx.consumers.notifyOnNextList(conn, c.groupName, hb.clientID);
    }
    for (const p of hb.producers) ctx.producers.register(p, channel);
    return createResponse(cmd, ResponseCode.SUCCESS);
  }

  #unregister(cmd: RemotingCommand): RemotingCommand {
    const clientId = reqString(cmd.extFields, "clientID");
    const producerGroup = optString(cmd.extFields, "producerGroup");
    const consumerGroup = optString(cmd.extFields, "consumerGroup");
    if (producerGroup) this.#ctx.producers.unregister(producerGroup, clientId);
    if (consumerGroup) this.#ctx.consumers.unregister(consumerGroup, clientId);
    return createResponse(cmd, ResponseCode.SUCCESS);
  }

  /**
   * CHECK_CLIENT_CONFIG: a Java client asks whether its subscription is usable here (it does so for
   * non-TAG expressions). Java's answers: TAG → SUCCESS; SQL92 → SUCCESS when it parses and
   * broker.enablePropertyFilter is on, SUBSCRIPTION_PARSE_FAILED when it does not parse; any other
   * type, or SQL92 with property filtering off (the default) → SYSTEM_ERROR "does not support".
   */
  #checkClientConfig(cmd: RemotingCommand): RemotingCommand {
    let raw: unknown;
    try {
      raw = cmd.body && cmd.body.length > 0 ? parseJsonBytes(cmd.body) : null;
    } catch {
      return createResponse(cmd, ResponseCode.SYSTEM_ERROR, "CHECK_CLIENT_CONFIG body is not JSON");
    }
    const sd = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>).subscriptionData : undefined;
    if (typeof sd !== "object" || sd === null) return createResponse(cmd, ResponseCode.SUCCESS);
    const o = sd as Record<string, unknown>;
    const type = typeof o.expressionType === "string" ? o.expressionType : undefined;
    const sql = this.#ctx.settings.enablePropertyFilter;
    const built = buildSubscription(str(o.topic, ""), str(o.subString, ""), type, 0, sql);
    if (!("invalid" in built)) return createResponse(cmd, ResponseCode.SUCCESS);
    if (!isSupportedType(type, sql)) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, unsupportedFilterRemark(type));
    return createResponse(cmd, ResponseCode.SUBSCRIPTION_PARSE_FAILED, built.invalid);
  }
}
