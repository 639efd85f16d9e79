/**
 * Who sent an admin request, as `ip:port` (logged by the shared operations the way the wire
 * requests log the peer's address; a test message's BORNHOST). In process (`app.request()`) there
 * is no socket: "admin-api".
 */
import type { Context } from "hono";
import { getConnInfo } from "hono/bun";

export function peerAddr(c: Context): string {
  try {
    const r = getConnInfo(c).remote;
    if (r.address === undefined) return "admin-api";
    return r.addressType === "IPv6" ? `[${r.address}]:${r.port ?? 0}` : `${r.address}:${r.port ?? 0}`;
  } catch {
    return "admin-api";
  }
}
