/**
 * The request pipeline: ordered hooks around every request a RemotingServer dispatches. ACL
 * (signature checks that refuse with NO_PERMISSION), per-request-code metrics (request-stats.ts)
 * and request logging plug in here — the place of Apache RocketMQ's RPCHook
 * (doBeforeRequest/doAfterResponse) and of Hono's middleware. The broker (listen and VIP servers)
 * and the name server build their servers with their hooks.
 *
 * Contract, kept by RemotingServer's dispatch:
 *   1. Every request frame passes the before-hooks, in registration order, before anything else
 *      looks at it (also before the processor lookup, so an unknown code can be refused too).
 *      The first before-hook that returns a command refuses the request: that command (made with
 *      createResponse) is the answer; the later before-hooks and the processor are not called.
 *      A before-hook that throws is answered SYSTEM_ERROR, like a processor that throws.
 *   2. Every request then gets exactly one call of every after-hook, also in registration order
 *      (RocketMQ's doAfterRpcHooks order; after-hooks only observe, so nothing needs the reverse
 *      order of an onion): for a processor's answer, sync or a Promise; for a refusal;
 *      REQUEST_CODE_NOT_SUPPORTED; SYSTEM_BUSY (the processor's reject()); SYSTEM_ERROR (it threw
 *      or its Promise rejected); and for answers sent later — a processor that answers later
 *      returns a Promise (a parked pull: pull-message.ts, settled by the hold service, with null
 *      when its connection closed first).
 *   3. `response` is the answer handed to the connection (which drops it if the peer is already
 *      gone), or undefined when there is none to send: a oneway request (whose answers are never
 *      sent, refusals and errors included), a processor that answered null. It has already been
 *      encoded into the connection's buffer: changing it changes nothing.
 *   4. `elapsedMs` runs from the dispatch of the frame to that point, so a parked pull's includes
 *      the time it was parked, on the server's clock (performance.now on the system clock,
 *      simulated time in test/sim). It costs two readings per request, made only when some hook
 *      has an `after`.
 *   5. An after-hook that throws is logged (rate-limited, by hook name) and the others still run.
 *   6. Hooks run synchronously on the event loop. The send path costs ~12 µs of server CPU per
 *      message, so a hook must not allocate per request nor block; it may keep per-code state
 *      created once (request-stats.ts: typed arrays per code).
 */
import { assert } from "../common/assert.ts";
import type { Logger } from "../common/log.ts";
import { isResponse, type RemotingCommand } from "./command.ts";
import type { RemotingConnection } from "./connection.ts";

export interface RequestHook {
  /** Names the hook in log lines. */
  readonly name: string;
  /** A refusal (the response to send instead of processing), or undefined to let the request through. */
  before?(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | undefined;
  /** Sees the outcome of every request once (contract 2–4 at the top of this file). */
  after?(conn: RemotingConnection, cmd: RemotingCommand, response: RemotingCommand | undefined, elapsedMs: number): void;
}

/** The hooks of one server, split once by kind so dispatch loops only over the hooks that act. */
export class RequestPipeline {
  /** Some hook refuses: dispatch calls refusal(). */
  readonly refuses: boolean;
  /** Some hook observes: dispatch takes the time and calls after(). */
  readonly observes: boolean;
  readonly #before: RequestHook[];
  readonly #after: RequestHook[];
  readonly #log: Logger;

  constructor(hooks: readonly RequestHook[], log: Logger) {
    this.#before = hooks.filter((h) => h.before !== undefined);
    this.#after = hooks.filter((h) => h.after !== undefined);
    this.refuses = this.#before.length > 0;
    this.observes = this.#after.length > 0;
    this.#log = log;
  }

  /** Contract 1: the first refusal, or undefined. Throws what a hook throws. */
  refusal(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | undefined {
    const hooks = this.#before;
    for (let i = 0; i < hooks.length; i++) {
      const refused = hooks[i]!.before!(conn, cmd);
      if (refused) {
        // Contract 1: a refusal is made with createResponse, so it answers this very request.
        assert(
          refused.opaque === cmd.opaque && isResponse(refused),
          "before-hook {} refused opaque {} with a command for {}",
          hooks[i]!.name,
          cmd.opaque,
          refused.opaque,
        );
        return refused;
      }
    }
    return undefined;
  }

  /** Contract 2–5. */
  after(conn: RemotingConnection, cmd: RemotingCommand, response: RemotingCommand | undefined, elapsedMs: number): void {
    const hooks = this.#after;
    for (let i = 0; i < hooks.length; i++) {
      const h = hooks[i]!;
      try {
        h.after!(conn, cmd, response, elapsedMs);
      } catch (e) {
        this.#log.rateLimited("error", `hook-${h.name}`, `request hook ${h.name} failed after request code ${cmd.code}: ${String(e)}`);
      }
    }
  }
}
