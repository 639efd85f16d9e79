/**
 * QueryAssignmentProcessor: RocketMQ 5.x's server-side rebalance and consume modes
 * (docs/PROTOCOL.md §3.22; Java `QueryAssignmentProcessor`, and `AdminBrokerProcessor`'s
 * GET_ALL_MESSAGE_REQUEST_MODE):
 *
 *   QUERY_ASSIGNMENT (400)              body {topic, consumerGroup, clientId, strategyName, messageModel}
 *                                       → SUCCESS {"messageQueueAssignments":[{messageQueue, mode}]}, or {}
 *                                         when there is nothing to assign (unknown topic, group or strategy)
 *   SET_MESSAGE_REQUEST_MODE (401)      body {topic, consumerGroup, mode, popShareQueueNum} → SUCCESS, or
 *                                       NO_PERMISSION (retry topic), TOPIC_NOT_EXIST, SUBSCRIPTION_GROUP_NOT_EXIST
 *   GET_ALL_MESSAGE_REQUEST_MODE (402)  → {"messageRequestModeMap":{topic:{group:entry}}} (a slave's sync)
 *
 * A body that does not decode is SYSTEM_ERROR with the reason (Java throws, which answers the same code).
 */
import { jsonBytes, parseJsonBytes } from "../../common/json.ts";
import { isInvalid, type Invalid } from "../../common/invalid.ts";
import { AllocateStrategyName, allocateAveragely, allocateAveragelyByCircle, compareQueues } from "../../protocol/allocate.ts";
import {
  decodeQueryAssignmentBody,
  decodeSetMessageRequestModeBody,
  queryAssignmentResponseJson,
  type QueryAssignmentRequestBody,
  type SetMessageRequestModeRequestBody,
} from "../../protocol/message-request-mode.ts";
import type { MessageQueue } from "../../protocol/route.ts";
import { RETRY_GROUP_TOPIC_PREFIX } from "../../protocol/topics.ts";
import {
  createResponse,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import type { BrokerContext } from "../context.ts";
import type { TopicRouteInfoManager } from "../topic-route-info.ts";

/** A strategy: this member's share of the sorted queues among the sorted members. */
type Strategy = (queues: readonly MessageQueue[], members: readonly string[], me: string) => MessageQueue[];

const STRATEGIES: ReadonlyMap<string, Strategy> = new Map<string, Strategy>([
  [AllocateStrategyName.AVG, allocateAveragely],
  [AllocateStrategyName.AVG_BY_CIRCLE, allocateAveragelyByCircle],
]);

/** POP's "every queue of this broker". */
const ALL_QUEUES_OF_BROKER = -1;

/**
 * Java's strategies check their input first and throw on an empty client id, no queues or no
 * members; the processor turns the exception into "no assignment" (null).
 */
function strategyInputOk(mqAll: readonly MessageQueue[], cidAll: readonly string[], clientId: string): boolean {
  return clientId !== "" && mqAll.length > 0 && cidAll.length > 0;
}

/**
 * Java `allocate4Pop`. `popShareQueueNum` ≤ 0, or at least the group's size − 1: every client
 * pops every broker (queue id −1). Otherwise, with no more clients than queues, a client pops its
 * own share and the shares of the `popShareQueueNum` clients after it (cyclically); with more
 * clients than queues, one queue each, dealt round the queues.
 */
export function allocate4Pop(
  strategy: Strategy,
  mqAll: readonly MessageQueue[],
  cidAll: readonly string[],
  clientId: string,
  popShareQueueNum: number,
): MessageQueue[] | null {
  if (popShareQueueNum <= 0 || popShareQueueNum >= cidAll.length - 1) return mqAll.map((mq) => ({ ...mq, queueId: ALL_QUEUES_OF_BROKER }));
  if (!strategyInputOk(mqAll, cidAll, clientId)) return null;
  if (cidAll.length <= mqAll.length) {
    const out = strategy(mqAll, cidAll, clientId);
    let index = cidAll.indexOf(clientId);
    if (index >= 0) {
      for (let i = 1; i <= popShareQueueNum; i++) {
        index = (index + 1) % cidAll.length;
        out.push(...strategy(mqAll, cidAll, cidAll[index]!));
      }
    }
    return out;
  }
  if (clientId.trim() === "") return null;
  const index = cidAll.indexOf(clientId);
  return index < 0 ? [] : [mqAll[index % mqAll.length]!];
}

/** Java's HashSet of the result: each queue once; sorted, so the answer does not depend on an iteration order. */
function distinctSorted(queues: readonly MessageQueue[]): MessageQueue[] {
  const seen = new Map<string, MessageQueue>();
  for (const q of queues) seen.set(`${q.topic}\u0000${q.brokerName}\u0000${q.queueId}`, q);
  return [...seen.values()].sort(compareQueues);
}

function decodeBody<T>(cmd: RemotingCommand, decode: (raw: unknown) => T | Invalid): T | Invalid {
  if (!cmd.body || cmd.body.length === 0) return { invalid: "the request has no body" };
  let raw: unknown;
  try {
    raw = parseJsonBytes(cmd.body);
  } catch (e) {
    return { invalid: `the body is not JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  return decode(raw);
}

export class QueryAssignmentProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;
  readonly #routes: TopicRouteInfoManager;

  constructor(ctx: BrokerContext, routes: TopicRouteInfoManager) {
    this.#ctx = ctx;
    this.#routes = routes;
  }

  static readonly CODES = [RequestCode.QUERY_ASSIGNMENT, RequestCode.SET_MESSAGE_REQUEST_MODE, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE];

  process(_conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | Promise<RemotingCommand> {
    switch (cmd.code) {
      case RequestCode.QUERY_ASSIGNMENT:
        return this.#queryAssignment(cmd);
      case RequestCode.SET_MESSAGE_REQUEST_MODE:
        return this.#setMode(cmd);
      default:
        return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, jsonBytes(this.#ctx.requestModes.wrapper()));
    }
  }

  /** Java's checks in its order; the entry is stored as sent (popShareQueueNum unchecked). */
  #setMode(cmd: RemotingCommand): RemotingCommand {
    const body = decodeBody(cmd, decodeSetMessageRequestModeBody);
    if (isInvalid(body)) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `bad SetMessageRequestModeRequestBody: ${body.invalid}`);
    if (body.topic.startsWith(RETRY_GROUP_TOPIC_PREFIX))
      return createResponse(cmd, ResponseCode.NO_PERMISSION, "retry topic is not allowed to set mode");
    if (this.#ctx.topics.get(body.topic) === undefined) return createResponse(cmd, ResponseCode.TOPIC_NOT_EXIST, `topic[${body.topic}] not exist`);
    // As Java's findSubscriptionGroupConfig: created when auto-creation is on.
    if (this.#ctx.groups.findOrCreate(body.consumerGroup, this.#ctx.settings.autoCreateSubscriptionGroup) === undefined) {
      return createResponse(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group does not exist");
    }
    this.#ctx.requestModes.set(body);
    this.#ctx.log.info(`consume mode of ${body.topic}@${body.consumerGroup} set to ${body.mode} (popShareQueueNum ${body.popShareQueueNum})`);
    return createResponse(cmd, ResponseCode.SUCCESS);
  }

  async #queryAssignment(cmd: RemotingCommand): Promise<RemotingCommand> {
    const body = decodeBody(cmd, decodeQueryAssignmentBody);
    if (isInvalid(body)) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `bad QueryAssignmentRequestBody: ${body.invalid}`);
    const mode = this.modeOf(body.topic, body.consumerGroup);
    const queues = await this.#loadBalance(body, mode);
    const assignments = queues === null ? null : distinctSorted(queues).map((messageQueue) => ({ messageQueue, mode: mode.mode }));
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, jsonBytes(queryAssignmentResponseJson(assignments)));
  }

  /** The stored entry, else the broker's defaults; a retry topic is always PULL. */
  modeOf(topic: string, group: string): SetMessageRequestModeRequestBody {
    const stored = this.#ctx.requestModes.get(topic, group);
    if (stored !== undefined) return stored;
    const s = this.#ctx.settings;
    const mode = topic.startsWith(RETRY_GROUP_TOPIC_PREFIX) ? "PULL" : s.defaultMessageRequestMode;
    return { topic, consumerGroup: group, mode, popShareQueueNum: mode === "POP" ? s.defaultPopShareQueueNum : 0 };
  }

  /** Java `doLoadBalance`: null means "no assignment" (the client keeps what it has). */
  async #loadBalance(body: QueryAssignmentRequestBody, mode: SetMessageRequestModeRequestBody): Promise<MessageQueue[] | null> {
    const mqAll = await this.#routes.subscribeQueues(body.topic);
    if (mqAll === null) return null;
    if (body.messageModel === "BROADCASTING") return mqAll;
    if (!this.#ctx.settings.serverLoadBalancerEnable) return mqAll;
    if (this.#ctx.consumers.group(body.consumerGroup) === undefined) return null;
    const cidAll = this.#ctx.consumers.clientIds(body.consumerGroup);
    const strategy = STRATEGIES.get(body.strategyName);
    if (strategy === undefined) return null;
    if (mode.mode === "POP") return allocate4Pop(strategy, mqAll, cidAll, body.clientId, mode.popShareQueueNum);
    return strategyInputOk(mqAll, cidAll, body.clientId) ? strategy(mqAll, cidAll, body.clientId) : null;
  }
}
