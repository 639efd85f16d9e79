/**
 * Who may use the admin API (docs/CONVENTIONS.md §12). The rules, in order:
 *
 *   path /health                     open: load balancers and systemd probes carry no token
 *   a token is configured            every other request needs `Authorization: Bearer <token>`
 *                                    (missing or wrong → 401 UNAUTHORIZED, WWW-Authenticate: Bearer)
 *   no token, a method that changes  refused: 403 ADMIN_TOKEN_NOT_CONFIGURED (a broker reachable
 *   state (anything but GET/HEAD)    on its admin port must not be reconfigurable by anyone)
 *   no token, a read                 open (the admin port binds 127.0.0.1 unless set otherwise)
 *
 * The token is read per request from its owner (runtime-config.ts), so a SIGHUP that rotates it
 * applies to the next request. Comparison is constant-time over SHA-256 digests (equal lengths
 * whatever was sent), through node:crypto.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { ApiError } from "./errors.ts";

const READ_METHODS = new Set(["GET", "HEAD"]);

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}

/** Constant-time equality of a presented token and the configured one. */
export function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), else undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = header === undefined ? null : /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m ? m[1] : undefined;
}

export function adminAuth(token: () => string): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.path === "/health") return next();
    const expected = token();
    if (expected === "") {
      if (!READ_METHODS.has(c.req.method)) throw new ApiError("ADMIN_TOKEN_NOT_CONFIGURED", { method: c.req.method, path: c.req.path });
      return next();
    }
    const presented = bearerToken(c.req.header("authorization"));
    if (presented === undefined) throw new ApiError("UNAUTHORIZED", { detail: "this endpoint needs the admin token" });
    if (!tokenMatches(presented, expected)) throw new ApiError("UNAUTHORIZED", { detail: "wrong admin token" });
    return next();
  };
}
