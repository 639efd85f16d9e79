/**
 * Server-side rebalance and consume modes of RocketMQ 5.x (docs/PROTOCOL.md §3.22): the bodies of
 * QUERY_ASSIGNMENT (400), SET_MESSAGE_REQUEST_MODE (401) and GET_ALL_MESSAGE_REQUEST_MODE (402),
 * defined once for the broker that answers them (src/broker/processors/query-assignment.ts), the
 * mode table it persists (src/broker/message-request-mode.ts) and `rocketbun admin setConsumeMode`.
 * Members are listed in fastjson's order (alphabetical), the order Java writes them.
 *
 *   SET_MESSAGE_REQUEST_MODE (401) request, and one entry of the mode table:
 *     {"consumerGroup":"G","mode":"POP","popShareQueueNum":0,"topic":"T"}
 *   QUERY_ASSIGNMENT (400) request:
 *     {"clientId":"10.0.0.1@1234","consumerGroup":"G","messageModel":"CLUSTERING","strategyName":"AVG","topic":"T"}
 *   QUERY_ASSIGNMENT (400) answer (the field is absent when there is no assignment to give):
 *     {"messageQueueAssignments":[{"messageQueue":{"brokerName":"b","queueId":-1,"topic":"T"},"mode":"POP"}]}
 *   GET_ALL_MESSAGE_REQUEST_MODE (402) answer, and config/messageRequestMode.json:
 *     {"messageRequestModeMap":{"T":{"G":{...401 body...}}}}
 *
 * Decoding follows fastjson's bean defaults: a missing `mode` is PULL, a missing
 * `popShareQueueNum` is 0. What Java would throw on (no topic, no group, no message model) is a
 * reason here (docs/CONVENTIONS.md §2).
 */
import { type Invalid } from "../common/invalid.ts";
import { INT32_MAX } from "../common/int32.ts";
import type { MessageQueue } from "./route.ts";

/** Java `MessageRequestMode`: PULL (the client pulls the queues it was given) or POP. */
export type MessageRequestMode = "PULL" | "POP";
export const MESSAGE_REQUEST_MODES: readonly MessageRequestMode[] = ["PULL", "POP"];

/** Java `MessageModel` as the wire names it (a consumer's heartbeat, QUERY_ASSIGNMENT). */
export type MessageModelName = "CLUSTERING" | "BROADCASTING";
export const MESSAGE_MODELS: readonly MessageModelName[] = ["CLUSTERING", "BROADCASTING"];

/** Java `SetMessageRequestModeRequestBody`: the 401 body and one entry of the mode table. */
export interface SetMessageRequestModeRequestBody {
  topic: string;
  consumerGroup: string;
  mode: MessageRequestMode;
  /**
   * POP only: how many following clients' queues each client also pops; ≤ 0, or at least the
   * group's size − 1, means every client pops every broker (docs/PROTOCOL.md §3.22).
   */
  popShareQueueNum: number;
}

/** Java `QueryAssignmentRequestBody`. */
export interface QueryAssignmentRequestBody {
  topic: string;
  consumerGroup: string;
  clientId: string;
  strategyName: string;
  messageModel: MessageModelName;
}

/** Java `MessageQueueAssignment`: a queue (queueId −1 = every queue of that broker, POP) and its mode. */
export interface MessageQueueAssignment {
  messageQueue: MessageQueue;
  mode: MessageRequestMode;
  attachments?: Record<string, string>;
}

/** Java `QueryAssignmentResponseBody`; no field means "no answer, keep what you have". */
export interface QueryAssignmentResponseBody {
  messageQueueAssignments?: MessageQueueAssignment[];
}

/** Java `MessageRequestModeSerializeWrapper`: topic → group → entry. */
export interface MessageRequestModeSerializeWrapper {
  messageRequestModeMap: Record<string, Record<string, SetMessageRequestModeRequestBody>>;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function nonBlank(o: Record<string, unknown>, key: string): string | Invalid {
  const v = o[key];
  if (typeof v !== "string" || v.trim() === "") return { invalid: `${key} is missing` };
  return v;
}

function modeOf(o: Record<string, unknown>): MessageRequestMode | Invalid {
  const v = o.mode ?? "PULL";
  if (typeof v !== "string" || !MESSAGE_REQUEST_MODES.includes(v as MessageRequestMode)) {
    return { invalid: `mode: expected PULL or POP, got ${JSON.stringify(v)}` };
  }
  return v as MessageRequestMode;
}

/** A 401 body, a mode-table entry from the file or a master's 402 body, validated. */
export function decodeSetMessageRequestModeBody(raw: unknown): SetMessageRequestModeRequestBody | Invalid {
  if (!isRecord(raw)) return { invalid: "expected a JSON object" };
  const topic = nonBlank(raw, "topic");
  if (typeof topic !== "string") return topic;
  const consumerGroup = nonBlank(raw, "consumerGroup");
  if (typeof consumerGroup !== "string") return consumerGroup;
  const mode = modeOf(raw);
  if (typeof mode !== "string") return mode;
  const n = raw.popShareQueueNum ?? 0;
  if (typeof n !== "number" || !Number.isInteger(n) || n < -INT32_MAX - 1 || n > INT32_MAX) {
    return { invalid: `popShareQueueNum: expected an int, got ${JSON.stringify(n)}` };
  }
  return { topic, consumerGroup, mode, popShareQueueNum: n };
}

/** fastjson's order (alphabetical). */
export function setMessageRequestModeJson(b: SetMessageRequestModeRequestBody): SetMessageRequestModeRequestBody {
  return { consumerGroup: b.consumerGroup, mode: b.mode, popShareQueueNum: b.popShareQueueNum, topic: b.topic };
}

/** A 400 body, validated; an unknown strategy name is not a reason here (the answer has no field). */
export function decodeQueryAssignmentBody(raw: unknown): QueryAssignmentRequestBody | Invalid {
  if (!isRecord(raw)) return { invalid: "expected a JSON object" };
  const topic = nonBlank(raw, "topic");
  if (typeof topic !== "string") return topic;
  const consumerGroup = nonBlank(raw, "consumerGroup");
  if (typeof consumerGroup !== "string") return consumerGroup;
  const clientId = typeof raw.clientId === "string" ? raw.clientId : "";
  const strategyName = typeof raw.strategyName === "string" ? raw.strategyName : "";
  const model = raw.messageModel;
  if (typeof model !== "string" || !MESSAGE_MODELS.includes(model as MessageModelName)) {
    return { invalid: `messageModel: expected CLUSTERING or BROADCASTING, got ${JSON.stringify(model ?? null)}` };
  }
  return { topic, consumerGroup, clientId, strategyName, messageModel: model as MessageModelName };
}

/** The 400 answer: `null` (no assignment to give) leaves the field out, as fastjson omits a null Set. */
export function queryAssignmentResponseJson(assignments: readonly MessageQueueAssignment[] | null): QueryAssignmentResponseBody {
  if (assignments === null) return {};
  return {
    messageQueueAssignments: assignments.map((a) => ({
      ...(a.attachments !== undefined ? { attachments: a.attachments } : {}),
      messageQueue: { brokerName: a.messageQueue.brokerName, queueId: a.messageQueue.queueId, topic: a.messageQueue.topic },
      mode: a.mode,
    })),
  };
}
