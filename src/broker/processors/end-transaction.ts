/**
 * EndTransactionProcessor: END_TRANSACTION (37), docs/PROTOCOL.md §6 item 2–3. The Java client sends
 * it oneway (no answer ever leaves); the answer below exists for callers that send it as a normal
 * request (ali-ons style flag 0, tests, tools). A slave refuses it, as it refuses sends.
 *
 * Request header: producerGroup, tranStateTableOffset (half-queue offset), commitLogOffset (of the
 * half record), commitOrRollback (0 unknown, 8 commit, 12 rollback), fromTransactionCheck, msgId,
 * transactionId (the last three only for logs). The remark may carry the producer's local
 * transaction error.
 */
import {
  createResponse,
  optBool,
  optString,
  reqInt,
  reqString,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import type { BrokerContext } from "../context.ts";
import type { TransactionalMessageService } from "../transaction/transactional-message-service.ts";

export class EndTransactionProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;
  readonly #tx: TransactionalMessageService;

  constructor(ctx: BrokerContext, tx: TransactionalMessageService) {
    this.#ctx = ctx;
    this.#tx = tx;
  }

  static readonly CODES = [RequestCode.END_TRANSACTION];

  async process(conn: RemotingConnection, cmd: RemotingCommand): Promise<RemotingCommand> {
    if (this.#ctx.role.isSlave) {
      return createResponse(cmd, ResponseCode.SLAVE_NOT_AVAILABLE, `broker ${this.#ctx.settings.brokerName} is a slave: end the transaction on its master`);
    }
    const ext = cmd.extFields;
    const h = {
      producerGroup: reqString(ext, "producerGroup"),
      tranStateTableOffset: reqInt(ext, "tranStateTableOffset"),
      commitLogOffset: reqInt(ext, "commitLogOffset"),
      commitOrRollback: reqInt(ext, "commitOrRollback"),
      fromTransactionCheck: optBool(ext, "fromTransactionCheck") ?? false,
    };
    const out = await this.#tx.endTransaction(h);
    const who = `${h.producerGroup} at ${conn.remoteAddress} (msgId ${optString(ext, "msgId") ?? "-"}, half ${h.commitLogOffset})`;
    if (out.action === "refused") this.#ctx.log.rateLimited("warn", "end-tx-refused", `END_TRANSACTION from ${who} refused: ${out.remark ?? ""}`);
    else if (out.action === "ignored" && cmd.remark)
      this.#ctx.log.rateLimited("info", "end-tx-unknown", `transaction of ${who} left open: ${cmd.remark}`);
    return createResponse(cmd, out.code, out.remark);
  }
}
