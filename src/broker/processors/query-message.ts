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
    const topic = reqString(ext, "topic");
    const key = reqString(ext, "key");
    const asked = reqInt(ext, "maxNum");
    const begin = reqInt(ext, "beginTimestamp");
    const end = reqInt(ext, "endTimestamp");
    const unique = optString(ext, UNIQUE_KEY_QUERY_FLAG) === "true";
    const maxNum = Math.min(unique ? UNIQUE_KEY_QUERY_MAX_NUM : asked, QUERY_MESSAGE_MAX_NUM);
    const r = this.#ctx.store.queryMessage(topic, key, Math.max(0, maxNum), begin, end);
    const header = {
      indexLastUpdateTimestamp: String(r.indexLastUpdateTimestamp),
      indexLastUpdatePhyoffset: String(r.indexLastUpdatePhyoffset),
    };
    const records: Uint8Array[] = [];
    let size = 0;
    for (const m of r.messages) {
      if (records.length > 0 && size + m.length > QUERY_MESSAGE_BODY_MAX_BYTES) break;
      records.push(m);
      size += m.length;
    }
    records.sort((x, y) => readPhysicalOffset(x, 0) - readPhysicalOffset(y, 0));
    if (records.length === 0) {
      return createResponse(cmd, ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", header);
    }
    // A copy: the records are views of mapped segments, which may be released once we return.
    const body = new Uint8Array(size);
    let pos = 0;
    for (const m of records) {
      body.set(m, pos);
      pos += m.length;
    }
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, header, body);
  }

  #view(cmd: RemotingCommand): RemotingCommand {
    const offset = reqInt(cmd.extFields, "offset");
    const bytes = offset >= 0 ? this.#ctx.store.selectOneMessageByOffset(offset) : undefined;
    // The offset comes from a client: only a whole record that starts exactly there is an answer.
    const r = bytes ? decodeRecordAt(bytes, 0, { checkCrc: false, readBody: false }) : null;
    if (!bytes || !r || !("totalSize" in r) || r.totalSize !== bytes.length || r.physicalOffset !== offset) {
      return createResponse(cmd, ResponseCode.SYSTEM_ERROR, `can not find message by the offset, ${offset}`);
    }
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, bytes.slice());
  }
}
