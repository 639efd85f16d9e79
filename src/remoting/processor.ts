/**
 * The request processor interface, as small as RocketMQ's NettyRequestProcessor: one `process`
 * and an optional `reject` (return true to answer SYSTEM_BUSY without processing, e.g. when a
 * store is overloaded). Returning null means "no response" (oneway-style handling).
 */
import { createResponse, type RemotingCommand } from "./command.ts";
import type { RemotingConnection } from "./connection.ts";
import { ResponseCode } from "./response-code.ts";

export type ProcessResult = RemotingCommand | null;

export interface RequestProcessor {
  process(conn: RemotingConnection, cmd: RemotingCommand): ProcessResult | Promise<ProcessResult>;
  reject?(): boolean;
}

/** What applying a `key=value` properties body answered (RuntimeConfig's update outcome). */
export type ConfigUpdateOutcome = { ok: true } | { ok: false; remark: string; permission: boolean };

/**
 * UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG: the body is a Java properties text. As in Java,
 * an empty body changes nothing and succeeds; a body that is not UTF-8 is SYSTEM_ERROR; a refusal
 * is NO_PERMISSION (a key that needs a restart) or SYSTEM_ERROR (unknown key, bad value).
 */
export async function answerConfigUpdate(
  cmd: RemotingCommand,
  from: string,
  update: (properties: string, from: string) => Promise<ConfigUpdateOutcome>,
): Promise<RemotingCommand> {
  if (!cmd.body || cmd.body.length === 0) return createResponse(cmd, ResponseCode.SUCCESS);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(cmd.body);
  } catch {
    return createResponse(cmd, ResponseCode.SYSTEM_ERROR, "the body is not UTF-8 text");
  }
  const r = await update(text, from);
  if (r.ok) return createResponse(cmd, ResponseCode.SUCCESS);
  return createResponse(cmd, r.permission ? ResponseCode.NO_PERMISSION : ResponseCode.SYSTEM_ERROR, r.remark);
}
