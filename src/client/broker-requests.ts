/**
 * The broker-initiated requests a consumer answers (Java `ClientRemotingProcessor`), mostly on
 * behalf of an admin tool that asked the broker (INVOKE_BROKER_TO_RESET_OFFSET and friends):
 *
 *   RESET_CONSUMER_CLIENT_OFFSET (220, oneway)   topic, group, timestamp, isForce;
 *       body ResetOffsetBody {"offsetTable":{{mq}:offset}} → the consumer drops those queues,
 *       stores the new offsets and goes on from them. No answer.
 *   GET_CONSUMER_STATUS_FROM_CLIENT (221)         topic, group → GetConsumerStatusBody
 *       {"consumerTable":{},"messageQueueTable":{{mq}:offset}} (this member's offsets of topic)
 *   GET_CONSUMER_RUNNING_INFO (307)               consumerGroup, clientId, jstackEnable →
 *       ConsumerRunningInfo {"mqTable":{{mq}:ProcessQueueInfo},"properties":{..},
 *       "statusTable":{topic:ConsumeStatus},"subscriptionSet":[SubscriptionData]}
 *   CONSUME_MESSAGE_DIRECTLY (309)                consumerGroup, clientId, msgId, brokerName;
 *       body = one stored record → ConsumeMessageDirectlyResult
 *       {"autoCommit":true,"consumeResult":"CR_SUCCESS"|"CR_LATER"|"CR_THROW_EXCEPTION",
 *        "order":false,"remark":..,"spentTimeMills":n}
 *
 * A group this client does not run answers SYSTEM_ERROR (Java: "The Consumer Group <g> not exist
 * in this consumer"), except the oneway 220, which is ignored.
 */
import { jsonBytes } from "../common/json.ts";
import { objectKeyedJson, parseObjectKeyedJson } from "../common/object-key-json.ts";
import { createResponse, RequestCode, ResponseCode, type RemotingCommand, type RemotingConnection } from "../remoting/index.ts";
import { decodeMessages, type MessageExt } from "./message.ts";
import type { MessageQueue } from "../protocol/route.ts";

/** Java ProcessQueueInfo: the state of one queue a consumer holds. */
export interface ProcessQueueInfo {
  cachedMsgCount: number;
  cachedMsgMaxOffset: number;
  cachedMsgMinOffset: number;
  cachedMsgSizeInMiB: number;
  commitOffset: number;
  droped: boolean;
  lastConsumeTimestamp: number;
  lastLockTimestamp: number;
  lastPullTimestamp: number;
  locked: boolean;
  transactionMsgCount: number;
  transactionMsgMaxOffset: number;
  transactionMsgMinOffset: number;
  tryUnlockTimes: number;
}

/** Java ConsumeStatus: per-topic rates of one consumer. */
export interface ConsumeStatus {
  consumeFailedMsgs: number;
  consumeFailedTPS: number;
  consumeOKTPS: number;
  consumeRT: number;
  pullRT: number;
  pullTPS: number;
}

export interface ConsumerRunningInfo {
  properties: Record<string, string>;
  subscriptionSet: unknown[];
  mqTable: [MessageQueue, ProcessQueueInfo][];
  statusTable: Record<string, ConsumeStatus>;
}

export type DirectConsumeResult = "CR_SUCCESS" | "CR_LATER" | "CR_ROLLBACK" | "CR_COMMIT" | "CR_THROW_EXCEPTION" | "CR_RETURN_NULL";

/** What a consumer implements to answer the requests above. */
export interface ConsumerAdminHooks {
  /** Drop the queues named, store their new offsets, pull again from there. */
  resetOffsets(offsets: [MessageQueue, number][]): void;
  /** This member's current offsets of `topic`'s queues. */
  offsetsOf(topic: string): [MessageQueue, number][];
  runningInfo(): ConsumerRunningInfo;
  /** Runs the handler on `msg` outside the normal flow (no retry, no offset change). */
  consumeDirectly(msg: MessageExt): Promise<{ result: DirectConsumeResult; remark?: string }>;
}

const decoder = new TextDecoder();

/** MessageQueue keys in fastjson's field order (they are object keys on the wire). */
function mqKeyed(mq: MessageQueue): object {
  return { brokerName: mq.brokerName, queueId: mq.queueId, topic: mq.topic };
}

/** Reads a ResetOffsetBody; entries that are not {mq}:offset pairs are skipped. */
export function parseResetOffsetBody(body: Uint8Array | undefined): [MessageQueue, number][] {
  if (!body) return [];
  const parsed = parseObjectKeyedJson(decoder.decode(body));
  if ("invalid" in parsed || typeof parsed.value !== "object" || parsed.value === null) return [];
  const table = (parsed.value as Record<string, unknown>).offsetTable;
  const out: [MessageQueue, number][] = [];
  if (!(table instanceof Map)) return out;
  for (const [k, v] of table) {
    if (typeof k !== "object" || k === null || typeof v !== "number") continue;
    const { topic, brokerName, queueId } = k as Record<string, unknown>;
    if (typeof topic !== "string" || typeof brokerName !== "string" || typeof queueId !== "number") continue;
    out.push([{ topic, brokerName, queueId }, v]);
  }
  return out;
}

/**
 * Answers one of RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_STATUS_FROM_CLIENT,
 * GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY for the consumer of the named group.
 */
export async function answerBrokerRequest(
  conn: RemotingConnection,
  cmd: RemotingCommand,
  consumerOf: (group: string) => ConsumerAdminHooks | undefined,
  props: () => Record<string, string>,
): Promise<void> {
  const ext = cmd.extFields ?? {};
  const group =
    (cmd.code === RequestCode.RESET_CONSUMER_CLIENT_OFFSET || cmd.code === RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT
      ? ext.group
      : ext.consumerGroup) ?? "";
  const c = consumerOf(group);
  if (cmd.code === RequestCode.RESET_CONSUMER_CLIENT_OFFSET) {
    const topic = ext.topic;
    c?.resetOffsets(parseResetOffsetBody(cmd.body).filter(([mq]) => topic === undefined || mq.topic === topic));
    return;
  }
  if (!c) {
    conn.reply(cmd, createResponse(cmd, ResponseCode.SYSTEM_ERROR, `The Consumer Group <${group}> not exist in this consumer`));
    return;
  }
  switch (cmd.code) {
    case RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT: {
      const table = c.offsetsOf(ext.topic ?? "").map(([mq, off]) => [mqKeyed(mq), off] as const);
      const body = `{"consumerTable":{},"messageQueueTable":${objectKeyedJson(table)}}`;
      conn.reply(cmd, createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, new TextEncoder().encode(body)));
      return;
    }
    case RequestCode.GET_CONSUMER_RUNNING_INFO: {
      const info = c.runningInfo();
      const properties = { ...info.properties, ...props() };
      // Fields in fastjson's (alphabetical) order; mqTable is keyed by MessageQueue objects.
      const body =
        `{"mqTable":${objectKeyedJson(info.mqTable.map(([mq, pq]) => [mqKeyed(mq), pq] as const))},` +
        `"properties":${JSON.stringify(properties)},"statusTable":${JSON.stringify(info.statusTable)},` +
        `"subscriptionSet":${JSON.stringify(info.subscriptionSet)}}`;
      conn.reply(cmd, createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, new TextEncoder().encode(body)));
      return;
    }
    default: {
      const msg = cmd.body ? decodeMessages(cmd.body, ext.brokerName ?? "")[0] : undefined;
      if (!msg) {
        conn.reply(cmd, createResponse(cmd, ResponseCode.SYSTEM_ERROR, `no message ${ext.msgId ?? ""} in the request`));
        return;
      }
      const start = Date.now();
      const r = await c.consumeDirectly(msg);
      const body = {
        autoCommit: true,
        consumeResult: r.result,
        order: false,
        ...(r.remark !== undefined ? { remark: r.remark } : {}),
        spentTimeMills: Date.now() - start,
      };
      conn.reply(cmd, createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, jsonBytes(body)));
    }
  }
}

/** Whether the request is one answerBrokerRequest serves. */
export function isConsumerAdminRequest(code: number): boolean {
  return (
    code === RequestCode.RESET_CONSUMER_CLIENT_OFFSET ||
    code === RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT ||
    code === RequestCode.GET_CONSUMER_RUNNING_INFO ||
    code === RequestCode.CONSUME_MESSAGE_DIRECTLY
  );
}
