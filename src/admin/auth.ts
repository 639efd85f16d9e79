/**
 * Who may use the admin API (docs/CONVENTIONS.md §12). The rules, in order:
 *
 *   path /health                     open: load balancers and systemd probes carry no token
 *   the dashboard's login page and   open: they carry no data (the page asks for the token, the
 *   static files (/ui/login,         assets are the same bytes in every binary)
 *   /ui/assets/*)
 *   a token is configured            every other request needs `Authorization: Bearer <token>`
 *                                    (missing or wrong → 401 UNAUTHORIZED, WWW-Authenticate: Bearer),
 *                                    or, for a read (GET/HEAD) only, the cookie DASHBOARD_TOKEN_COOKIE
 *                                    that the dashboard's login page sets; a dashboard page (/ or
 *                                    /ui/...) read without either is redirected to the login page
 *   no token, a method that changes  refused: 403 ADMIN_TOKEN_NOT_CONFIGURED (a broker reachable
 *   state (anything but GET/HEAD)    on its admin port must not be reconfigurable by anyone)
 *   no token, a read                 open (the admin port binds 127.0.0.1 unless set otherwise)
 *
 * Why a cookie only for reads (cross-site request forgery): a browser attaches cookies to requests
 * other sites make it send, but no site can make it send an Authorization header to this origin
 * (that needs a CORS preflight, which this API never grants). So a change of state always needs
 * the header: the dashboard's scripts read the token from the cookie and send it as the header.
 * The cookie is SameSite=Strict besides, so cross-site navigations do not carry it at all, and a
 * forged read could not be seen by the forging site anyway (same-origin policy).
 *
 * The token is read per request from its owner (runtime-config.ts), so a SIGHUP that rotates it
 * applies to the next request. Comparison is constant-time over SHA-256 digests (equal lengths
 * whatever was sent), through node:crypto.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { ApiError } from "./errors.ts";

const READ_METHODS = new Set(["GET", "HEAD"]);

/** The cookie the dashboard's login page stores the admin token in (src/admin/dashboard/). */
export const DASHBOARD_TOKEN_COOKIE = "rocketbun_admin_token";
/** The dashboard's login page; with its static files, open without a token. */
export const DASHBOARD_LOGIN_PATH = "/ui/login";
const openPath = (path: string) => path === "/health" || path === DASHBOARD_LOGIN_PATH || path.startsWith("/ui/assets/");
const dashboardPage = (path: string) => path === "/" || path === "/ui" || path.startsWith("/ui/");

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
    if (openPath(c.req.path)) return next();
    const expected = token();
    const read = READ_METHODS.has(c.req.method);
    if (expected === "") {
      if (!read) throw new ApiError("ADMIN_TOKEN_NOT_CONFIGURED", { method: c.req.method, path: c.req.path });
      return next();
    }
    const presented = bearerToken(c.req.header("authorization")) ?? (read ? getCookie(c, DASHBOARD_TOKEN_COOKIE) : undefined);
    const ok = presented !== undefined && tokenMatches(presented, expected);
    if (ok) return next();
    // A person at a browser, without the token or with one that was rotated since: the login page.
    if (read && dashboardPage(c.req.path)) return c.redirect(`${DASHBOARD_LOGIN_PATH}?next=${encodeURIComponent(c.req.path)}`, 302);
    throw new ApiError("UNAUTHORIZED", { detail: presented === undefined ? "this endpoint needs the admin token" : "wrong admin token" });
  };
}
