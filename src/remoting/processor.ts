/**
 * The request processor interface, as small as RocketMQ's NettyRequestProcessor: one `process`
 * and an optional `reject` (return true to answer SYSTEM_BUSY without processing, e.g. when a
 * store is overloaded). Returning null means "no response" (oneway-style handling).
 */
import type { RemotingCommand } from "./command.ts";
import type { RemotingConnection } from "./connection.ts";

export type ProcessResult = RemotingCommand | null;

export interface RequestProcessor {
  process(conn: RemotingConnection, cmd: RemotingCommand): ProcessResult | Promise<ProcessResult>;
  reject?(): boolean;
}
