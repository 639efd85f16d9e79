/**
 * TransactionProducer (RocketMQ's TransactionMQProducer): a message that becomes visible to
 * consumers only if a local transaction commits (docs/PROTOCOL.md §6).
 *
 *   1. sendMessageInTransaction sends a half message (TRAN_MSG=true, PGROUP=<group>, sysFlag
 *      PREPARED); the broker stores it where no consumer looks.
 *   2. executeLocal(msg, arg) runs the local transaction and returns COMMIT, ROLLBACK or UNKNOWN
 *      (a throw counts as UNKNOWN). A failed or not-SEND_OK send is ROLLBACK without running it.
 *   3. END_TRANSACTION (oneway, as Java) tells the broker: commit → the message is delivered;
 *      rollback → it never is; unknown → nothing yet.
 *   4. For a transaction left open (UNKNOWN, or the END_TRANSACTION was lost) the broker later
 *      sends CHECK_TRANSACTION_STATE to a connected producer of the group; `checkListener(msg)`
 *      answers it, again with END_TRANSACTION (fromTransactionCheck=true). Any producer of the
 *      group may be asked, so the listener must find the outcome from the message alone
 *      (`msg.transactionId`, keys, body), e.g. in the local database.
 */
import { decodeOffsetMsgId } from "../common/message-record.ts";
import { createRequest, RequestCode, type ExtFields, type RemotingCommand, type RemotingConnection } from "../remoting/index.ts";
import { errText } from "./client-instance.ts";
import { MQClientError } from "./errors.ts";
import { decodeMessages, type Message, type MessageExt } from "./message.ts";
import { Producer, type ProducerOptions, type SendResult } from "./producer.ts";
import { MASTER_ID } from "../protocol/route.ts";
import { SysFlag } from "../protocol/sys-flag.ts";

export type TransactionState = "COMMIT" | "ROLLBACK" | "UNKNOWN";

/** SysFlag transaction types sent as END_TRANSACTION's commitOrRollback. */
const COMMIT_OR_ROLLBACK: Record<TransactionState, number> = {
  UNKNOWN: SysFlag.TRANSACTION_NOT_TYPE,
  COMMIT: SysFlag.TRANSACTION_COMMIT_TYPE,
  ROLLBACK: SysFlag.TRANSACTION_ROLLBACK_TYPE,
};

export interface TransactionProducerOptions extends ProducerOptions {
  /** Answers the broker's check-back of an open transaction; a throw counts as UNKNOWN. */
  checkListener: (msg: MessageExt) => TransactionState | Promise<TransactionState>;
}

export interface TransactionSendResult extends SendResult {
  /** What the local transaction returned (and what END_TRANSACTION reported). */
  localState: TransactionState;
  /** The client unique id of the message (Java's transactionId). */
  transactionId: string;
  /** Set when executeLocal threw (the state is then UNKNOWN). */
  localError?: unknown;
}

export type LocalTransaction<A> = (msg: Message, arg: A | undefined) => TransactionState | Promise<TransactionState>;

export class TransactionProducer extends Producer {
  readonly #checkListener: TransactionProducerOptions["checkListener"];

  constructor(o: TransactionProducerOptions) {
    super(o);
    if (typeof o.checkListener !== "function") throw new MQClientError("a TransactionProducer needs a checkListener");
    this.#checkListener = o.checkListener;
    this.client.registerTransactionChecker(o.group, (conn, cmd) => void this.#onCheck(conn, cmd));
  }

  /**
   * Sends `msg` as a half message, runs `executeLocal`, and ends the transaction with its state.
   * A send that fails throws (nothing was stored, executeLocal did not run).
   */
  async sendMessageInTransaction<A = unknown>(msg: Message, executeLocal: LocalTransaction<A>, arg?: A): Promise<TransactionSendResult> {
    if (msg.delayLevel || msg.deliverAt) throw new MQClientError("transactional messages cannot be delayed");
    const half: Message = { ...msg, properties: { ...(msg.properties ?? {}), TRAN_MSG: "true", PGROUP: this.group } };
    const sent = await this.send(half);
    let localState: TransactionState = "ROLLBACK";
    let localError: unknown;
    if (sent.status === "SEND_OK") {
      try {
        localState = await executeLocal(msg, arg);
        if (!(localState in COMMIT_OR_ROLLBACK))
          throw new MQClientError(`executeLocal returned ${String(localState)}, not COMMIT, ROLLBACK or UNKNOWN`);
      } catch (e) {
        localState = "UNKNOWN";
        localError = e;
      }
    }
    await this.#endTransaction(sent, localState, localError);
    const result: TransactionSendResult = { ...sent, localState, transactionId: sent.msgId };
    if (localError !== undefined) result.localError = localError;
    return result;
  }

  async #endTransaction(sent: SendResult, state: TransactionState, localError: unknown): Promise<void> {
    const id = decodeOffsetMsgId(sent.offsetMsgId);
    const addr = this.client.brokerAddr(sent.queue.brokerName, MASTER_ID);
    if ("invalid" in id || !addr) {
      // The check-back will settle it.
      this.client.log.warn(`END_TRANSACTION for ${sent.msgId} not sent: ${"invalid" in id ? id.invalid : `no master for ${sent.queue.brokerName}`}`);
      return;
    }
    const ext: ExtFields = {
      producerGroup: this.group,
      tranStateTableOffset: String(sent.queueOffset),
      commitLogOffset: String(id.offset),
      commitOrRollback: String(COMMIT_OR_ROLLBACK[state]),
      fromTransactionCheck: "false",
      msgId: sent.msgId,
      transactionId: sent.msgId,
    };
    const cmd = createRequest(RequestCode.END_TRANSACTION, ext);
    if (localError !== undefined) cmd.remark = `executeLocal failed: ${errText(localError)}`;
    try {
      await this.client.remoting.invokeOneway(addr, this.client.sign(cmd));
    } catch (e) {
      // Lost like any oneway: the broker's check-back asks checkListener later.
      this.client.log.rateLimited("warn", "end-tx", `END_TRANSACTION to ${addr} failed: ${errText(e)}`);
    }
  }

  async #onCheck(conn: RemotingConnection, cmd: RemotingCommand): Promise<void> {
    const ext = cmd.extFields ?? {};
    const msg = cmd.body ? decodeMessages(cmd.body, "")[0] : undefined;
    if (!msg || ext.commitLogOffset === undefined || ext.tranStateTableOffset === undefined) {
      this.client.log.rateLimited("warn", "bad-check", `CHECK_TRANSACTION_STATE from ${conn.remoteAddress} without a message or offsets; ignored`);
      return;
    }
    const transactionId = ext.transactionId ?? msg.msgId;
    let state: TransactionState = "UNKNOWN";
    let remark: string | undefined;
    try {
      state = await this.#checkListener({ ...msg, transactionId });
      if (!(state in COMMIT_OR_ROLLBACK)) throw new MQClientError(`checkListener returned ${String(state)}`);
    } catch (e) {
      state = "UNKNOWN";
      remark = `checkListener failed: ${errText(e)}`;
    }
    const end = createRequest(RequestCode.END_TRANSACTION, {
      producerGroup: this.group,
      tranStateTableOffset: ext.tranStateTableOffset,
      commitLogOffset: ext.commitLogOffset,
      commitOrRollback: String(COMMIT_OR_ROLLBACK[state]),
      fromTransactionCheck: "true",
      msgId: msg.msgId,
      transactionId,
    });
    if (remark) end.remark = remark;
    // Back on the connection the check came on: that is the broker holding the half message.
    conn.invokeOneway(end);
  }
}
