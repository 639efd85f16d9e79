/**
 * Typed client errors. Every message says what happened and, where it helps, what to do.
 *   MQClientError   — the client itself cannot proceed (no route, bad argument, shut down).
 *   MQBrokerError   — a broker or name server answered with an error code (code + remark kept).
 *   MQTimeoutError  — no answer in time.
 */
import { responseCodeName } from "../remoting/index.ts";

export class MQClientError extends Error {
  override name = "MQClientError";
  /** The RocketMQ response code when the error came from one, else -1. */
  readonly code: number;

  constructor(message: string, code = -1, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

export class MQBrokerError extends MQClientError {
  override name = "MQBrokerError";
  readonly remark: string;
  readonly addr: string;

  constructor(code: number, remark: string | undefined, addr: string) {
    super(`${addr} answered ${responseCodeName(code)} (${code})${remark ? `: ${remark}` : ""}`, code);
    this.remark = remark ?? "";
    this.addr = addr;
  }
}

export class MQTimeoutError extends MQClientError {
  override name = "MQTimeoutError";
}
