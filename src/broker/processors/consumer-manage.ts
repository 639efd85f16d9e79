/**
 * ConsumerManageProcessor: consumer membership and offsets — GET_CONSUMER_LIST_BY_GROUP,
 * QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET — and the per-queue offset queries
 * GET_MAX_OFFSET, GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME
 * (docs/PROTOCOL.md §3.6–§3.8).
 */
import { jsonBytes } from "../../common/json.ts";
import {
  createResponse,
  reqInt,
  reqString,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import type { BrokerContext } from "../context.ts";

export class ConsumerManageProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;

  constructor(ctx: BrokerContext) {
    this.#ctx = ctx;
  }

  static readonly CODES = [
    RequestCode.GET_CONSUMER_LIST_BY_GROUP,
    RequestCode.QUERY_CONSUMER_OFFSET,
    RequestCode.UPDATE_CONSUMER_OFFSET,
    RequestCode.GET_MAX_OFFSET,
    RequestCode.GET_MIN_OFFSET,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
    RequestCode.GET_EARLIEST_MSG_STORETIME,
  ];

  process(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand {
    const ext = cmd.extFields;
    const store = this.#ctx.store;
    const ok = (e?: Record<string, string>, body?: Uint8Array) => createResponse(cmd, ResponseCode.SUCCESS, undefined, e, body);
    switch (cmd.code) {
      case RequestCode.GET_CONSUMER_LIST_BY_GROUP: {
        const group = reqString(ext, "consumerGroup");
        const ids = this.#ctx.consumers.clientIds(group);
        if (ids.length === 0) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `no consumer for this group, ${group}`);
        // Written before this answer, on the same connection (../client-manager.ts notifyOnNextList).
        this.#ctx.consumers.listed(conn, group);
        return ok(undefined, jsonBytes({ consumerIdList: ids }));
      }
      case RequestCode.QUERY_CONSUMER_OFFSET:
        return this.#queryOffset(cmd, reqString(ext, "consumerGroup"), reqString(ext, "topic"), reqInt(ext, "queueId"));
      case RequestCode.UPDATE_CONSUMER_OFFSET: {
        const problem = this.#ctx.consumerOffsets.commit(
          reqString(ext, "consumerGroup"),
          reqString(ext, "topic"),
          reqInt(ext, "queueId"),
          reqInt(ext, "commitOffset"),
        );
        if (problem) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, problem);
        return ok();
      }
      case RequestCode.GET_MAX_OFFSET:
        return ok({ offset: String(store.getMaxOffsetInQueue(reqString(ext, "topic"), reqInt(ext, "queueId"))) });
      case RequestCode.GET_MIN_OFFSET:
        return ok({ offset: String(store.getMinOffsetInQueue(reqString(ext, "topic"), reqInt(ext, "queueId"))) });
      case RequestCode.SEARCH_OFFSET_BY_TIMESTAMP:
        return ok({ offset: String(store.getOffsetInQueueByTime(reqString(ext, "topic"), reqInt(ext, "queueId"), reqInt(ext, "timestamp"))) });
      default:
        return ok({ timestamp: String(store.getEarliestMessageTime(reqString(ext, "topic"), reqInt(ext, "queueId"))) });
    }
  }

  /**
   * RocketMQ's rule: a stored offset ≥ 0 wins; otherwise a young queue (min offset 0 and its first
   * message still in memory, or empty) answers 0, so a brand-new group starts at the beginning;
   * otherwise QUERY_NOT_FOUND and the client applies its consume-from-where policy.
   */
  #queryOffset(cmd: RemotingCommand, group: string, topic: string, queueId: number): RemotingCommand {
    const stored = this.#ctx.consumerOffsets.query(group, topic, queueId);
    if (stored >= 0) return createResponse(cmd, ResponseCode.SUCCESS, undefined, { offset: String(stored) });
    const store = this.#ctx.store;
    const min = store.getMinOffsetInQueue(topic, queueId);
    if (min <= 0) {
      const max = store.getMaxOffsetInQueue(topic, queueId);
      const get = max > 0 ? store.getMessage(topic, queueId, 0, 1) : null;
      if (max === 0 || (get !== null && !get.suggestPullingFromSlave)) {
        return createResponse(cmd, ResponseCode.SUCCESS, undefined, { offset: "0" });
      }
    }
    return createResponse(cmd, ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first");
  }
}
