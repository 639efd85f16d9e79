/**
 * QueryMessageProcessor: QUERY_MESSAGE (by key or unique key, through the IndexFiles) and
 * VIEW_MESSAGE_BY_ID (by CommitLog offset, decoded from an offset message id) — docs/PROTOCOL.md
 * §3.12; Java `QueryMessageProcessor`. Both answer with stored records as they are on disk.
 *
 *   QUERY_MESSAGE      topic, key, maxNum, beginTimestamp, endTimestamp [, _UNIQUE_KEY_QUERY]
 *                      → SUCCESS, body = the records back to back in CommitLog order (Java sorts the
 *                        physical offsets it selected, newest maxNum, ascending; mqadmin prints them so)
 *                        or QUERY_NOT_FOUND; both with extFields indexLastUpdateTimestamp,
 *                        indexLastUpdatePhyoffset
 *   VIEW_MESSAGE_BY_ID offset → SUCCESS, body = the one record
 *                        or SYSTEM_ERROR "can not find message by the offset, <n>"
 */
import { decodeRecordAt, readPhysicalOffset } from "../../commitlog/index.ts";
import {
  createResponse,
  optString,
  reqInt,
  reqString,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import { UNIQUE_KEY_QUERY_FLAG } from "../../protocol/acl-signature.ts";
import type { BrokerContext } from "../context.ts";

/** Java `maxMsgsNumBatch`: the most records one QUERY_MESSAGE returns. */
export const QUERY_MESSAGE_MAX_NUM = 64;
/** Java `defaultQueryMaxNum`: what a unique-key query returns at most, whatever it asks. */
export const UNIQUE_KEY_QUERY_MAX_NUM = 32;
/**
 * Stop adding records once the body would pass this (at least one is always sent): Java clients
 * refuse frames over 16 MiB (`com.rocketmq.remoting.frameMaxLength`).
 */
export const QUERY_MESSAGE_BODY_MAX_BYTES = 15 * 1024 * 1024;

export class QueryMessageProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;

  constructor(ctx: BrokerContext) {
    this.#ctx = ctx;
  }

  static readonly CODES = [RequestCode.QUERY_MESSAGE, RequestCode.VIEW_MESSAGE_BY_ID];

  process(_conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand {
    return cmd.code === RequestCode.QUERY_MESSAGE ? this.#query(cmd) : this.#view(cmd);
  }

  #query(cmd: RemotingCommand): RemotingCommand {
    const ext = cmd.extFields;
    const r = queryMessagesByKey(this.#ctx, {
      topic: reqString(ext, "topic"),
      key: reqString(ext, "key"),
      maxNum: reqInt(ext, "maxNum"),
      beginTimestamp: reqInt(ext, "beginTimestamp"),
      endTimestamp: reqInt(ext, "endTimestamp"),
      uniqueKey: optString(ext, UNIQUE_KEY_QUERY_FLAG) === "true",
    });
    const header = {
      indexLastUpdateTimestamp: String(r.indexLastUpdateTimestamp),
      indexLastUpdatePhyoffset: String(r.indexLastUpdatePhyoffset),
    };
    if (r.records.length === 0) {
      return createResponse(cmd, ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", header);
    }
    // A copy: the records are views of mapped segments, which may be released once we return.
    const body = new Uint8Array(r.records.reduce((n, m) => n + m.length, 0));
    let pos = 0;
    for (const m of r.records) {
      body.set(m, pos);
      pos += m.length;
    }
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, header, body);
  }

  #view(cmd: RemotingCommand): RemotingCommand {
    const offset = reqInt(cmd.extFields, "offset");
    const bytes = viewMessage(this.#ctx, offset);
    if (!bytes) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `can not find message by the offset, ${offset}`);
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, bytes.slice());
  }
}

/** QUERY_MESSAGE's header (and GET /messages?topic=&key=). */
export interface KeyQuery {
  topic: string;
  key: string;
  maxNum: number;
  beginTimestamp: number;
  endTimestamp: number;
  /** The key is a client unique id (UNIQ_KEY), not one of the message's KEYS. */
  uniqueKey: boolean;
}

/**
 * QUERY_MESSAGE: the stored records of `topic` with `key`, through the IndexFiles — at most
 * QUERY_MESSAGE_MAX_NUM (UNIQUE_KEY_QUERY_MAX_NUM for a unique key), the newest, in CommitLog
 * order, and no more than QUERY_MESSAGE_BODY_MAX_BYTES together (at least one). Views of mapped
 * segments: copy them before the turn ends.
 */
export function queryMessagesByKey(
  ctx: BrokerContext,
  q: KeyQuery,
): { records: Uint8Array[]; indexLastUpdateTimestamp: number; indexLastUpdatePhyoffset: number } {
  const maxNum = Math.min(q.uniqueKey ? UNIQUE_KEY_QUERY_MAX_NUM : q.maxNum, QUERY_MESSAGE_MAX_NUM);
  const r = ctx.store.queryMessage(q.topic, q.key, Math.max(0, maxNum), q.beginTimestamp, q.endTimestamp);
  const records: Uint8Array[] = [];
  let size = 0;
  for (const m of r.messages) {
    if (records.length > 0 && size + m.length > QUERY_MESSAGE_BODY_MAX_BYTES) break;
    records.push(m);
    size += m.length;
  }
  records.sort((x, y) => readPhysicalOffset(x, 0) - readPhysicalOffset(y, 0));
  return { records, indexLastUpdateTimestamp: r.indexLastUpdateTimestamp, indexLastUpdatePhyoffset: r.indexLastUpdatePhyoffset };
}

/**
 * VIEW_MESSAGE_BY_ID: the record that starts exactly at CommitLog `offset` (decoded from an
 * offset message id), or undefined. A view of a mapped segment.
 */
export function viewMessage(ctx: BrokerContext, offset: number): Uint8Array | undefined {
  const bytes = offset >= 0 ? ctx.store.selectOneMessageByOffset(offset) : undefined;
  // The offset comes from a client: only a whole record that starts exactly there is an answer.
  const r = bytes ? decodeRecordAt(bytes, 0, { checkCrc: false, readBody: false }) : null;
  if (!bytes || !r || !("totalSize" in r) || r.totalSize !== bytes.length || r.physicalOffset !== offset) return undefined;
  return bytes;
}
