/**
 * Address patterns of plain_acl.yml (`globalWhiteRemoteAddresses`, `whiteRemoteAddress`), with
 * the meaning Apache RocketMQ 4.9's RemoteAddressStrategyFactory gives them — quirks included,
 * since an operator's file must let in exactly whom it let in on a Java broker. The golden
 * vectors (test/golden/acl/vectors.json, "addresses") were printed by that very class.
 *
 *   pattern                      strategy   matches
 *   "" / missing                 blank      nobody
 *   * | *.*.*.* | *:*:*:*:*:*:*:*  any      everybody
 *   192.168.0.1 | ::1            one        that address (IPv6 compared fully expanded)
 *   192.168.0.{1,2} | ::{1,2}    multiple   the listed last parts
 *   192.168.0.1,10.0.0.2         multiple   the listed addresses
 *   192.168.1.1-100, 10.*.*.*    range      the first part (from the left) that is "*" or "a-b"
 *   192.168.1-2.*, 2001:db8::*              decides; the parts after it are not looked at
 *
 * An IPv4 pattern must have four parts: "10.*" is refused (write "10.*.*.*"), as Java refuses it.
 * Java's IPv6 ranges next to "::" compare the wrong group (so "2001:db8::1-ff" matches nothing);
 * kept, for the same reason. A pattern Java refuses is a problem here, reported with the file's
 * position by rules.ts.
 */
import { isIPv4, isIPv6 } from "node:net";

/** Matches a remote host (no port; IPv6 without brackets). */
export type AddressMatcher = (host: string) => boolean;

/** Java AclUtils.expandIP: upper case, "::" widened to `part` groups, every group 4 hex digits. */
export function expandIp(address: string, part: number): string {
  let a = address.toUpperCase();
  const pad = part - (a.split(":").length - 1);
  if (pad > 0) a = a.split("::").join(":" + ":".repeat(pad));
  return a
    .split(":")
    .map((g) => (g.length < 4 ? g.padStart(4, "0") : g))
    .join(":");
}

/** StringUtils.split: the tokens between separators, empty ones dropped. */
const tokens = (s: string, sep: string) => s.split(sep).filter((t) => t.length > 0);

/** Java Integer.parseInt(s, radix), or NaN. */
function parseIntJava(s: string, radix: 10 | 16): number {
  const ok = radix === 10 ? /^[+-]?\d+$/.test(s) : /^[+-]?[0-9a-fA-F]+$/.test(s);
  return ok ? parseInt(s, radix) : NaN;
}

const NEVER: AddressMatcher = () => false;
const ALWAYS: AddressMatcher = () => true;

/** The matcher for one pattern, or why Java would refuse it. */
export function parseAddressPattern(pattern: string | undefined): AddressMatcher | { invalid: string } {
  if (pattern === undefined || pattern.trim() === "") return NEVER;
  if (pattern === "*" || pattern === "*.*.*.*" || pattern === "*:*:*:*:*:*:*:*") return ALWAYS;
  if (pattern.endsWith("}")) return braces(pattern);
  if (pattern.includes(",")) return multiple(tokens(pattern, ","));
  if (pattern.includes("*") || pattern.includes("-")) return pattern.includes(":") ? range6(pattern) : range4(pattern);
  if (!isIPv4(pattern) && !isIPv6(pattern)) return { invalid: `${pattern} is not an IPv4 or IPv6 address` };
  const want = expandIp(pattern, 8);
  return (host) => expandIp(host, 8) === want;
}

function braces(pattern: string): AddressMatcher | { invalid: string } {
  const parts = tokens(pattern, pattern.includes(":") ? ":" : ".");
  if (!pattern.includes(":") && parts.length < 4) return { invalid: `${pattern}: an IPv4 pattern needs four parts` };
  const last = parts[parts.length - 1]!;
  if (!last.startsWith("{")) return { invalid: `${pattern}: only the last part may be a {a,b} list` };
  const head = pattern.slice(0, pattern.indexOf("{"));
  return multiple(tokens(last.slice(1, -1), ",").map((p) => head + p));
}

function multiple(addresses: string[]): AddressMatcher | { invalid: string } {
  const set = new Set<string>();
  for (const a of addresses) {
    if (isIPv4(a)) set.add(a);
    else if (isIPv6(a)) set.add(expandIp(a, 8));
    else return { invalid: `${a} is not an IPv4 or IPv6 address` };
  }
  return (host) => set.has(isIPv6(host) ? expandIp(host, 8) : host);
}

/** One "*" or "a-b" part of a range pattern (Java's analysis/ipv6Analysis, state carried along). */
interface RangeState {
  start: number;
  end: number;
}

function rangePart(value: string, state: RangeState, radix: 10 | 16): string | undefined {
  const max = radix === 10 ? 255 : 0xffff;
  if (value === "*") {
    state.start = 0;
    state.end = max;
  } else if (value.includes("-")) {
    if (value.startsWith("-")) return `${value}: a range cannot start with "-"`;
    const [a = "", b = ""] = tokens(value, "-");
    state.start = parseIntJava(a, radix);
    state.end = parseIntJava(b, radix);
    if (!(state.start >= 0 && state.end <= max && state.start <= state.end)) return `${value}: not a range within 0-${radix === 10 ? max : "ffff"}`;
  }
  return undefined;
}

function range4(pattern: string): AddressMatcher | { invalid: string } {
  const parts = tokens(pattern, ".");
  const state: RangeState = { start: 0, end: 0 };
  let index = 0;
  for (let i = 1; i <= 3 && index === 0; i++) {
    if (i >= parts.length) return { invalid: `${pattern}: an IPv4 pattern needs four parts (e.g. 10.*.*.*)` };
    const problem = rangePart(parts[i]!.trim(), state, 10);
    if (problem !== undefined) return { invalid: problem };
    if (state.end > 0) index = i;
  }
  if (index === 0) return { invalid: `${pattern}: no part is "*" or a range "a-b"` };
  if (parts.length !== 4) return { invalid: `${pattern}: an IPv4 pattern needs four parts (e.g. 10.*.*.*)` };
  for (let i = 0; i < index - 1; i++) {
    const n = parseIntJava(parts[i]!.trim(), 10);
    if (!(n >= 0 && n <= 255)) return { invalid: `${pattern}: ${parts[i]} is not a number 0-255` };
  }
  const head = parts.slice(0, index).join(".") + ".";
  const { start, end } = state;
  return (host) => {
    if (!isIPv4(host) || !host.startsWith(head)) return false;
    const rest = host.slice(head.length).split(".");
    const n = Number(rest[0]);
    return rest.length === 4 - index && n >= start && n <= end;
  };
}

function range6(pattern: string): AddressMatcher | { invalid: string } {
  const star = pattern.indexOf("*");
  const minus = pattern.indexOf("-");
  const bad = { invalid: `${pattern}: "*" must be last and a range "a-b" must be in the last group (or the one before a last "*")` };
  if (star > -1 && star !== pattern.length - 1) return bad;
  const lastColon = pattern.lastIndexOf(":");
  if (minus > -1 && minus <= (star === -1 ? lastColon : pattern.lastIndexOf(":", lastColon - 1))) return bad;
  const parts = tokens(pattern, ":");
  const state: RangeState = { start: 0, end: 0 };
  for (let i = 1; i < parts.length; i++) {
    const problem = rangePart(parts[i]!.trim(), state, 16);
    if (problem !== undefined) return { invalid: problem };
    if (state.end <= 0) continue;
    const groups = expandIp(pattern, 8).split(":");
    for (let g = 0; g < i - 1; g++) if (!/^[0-9A-F]{1,4}$/.test(groups[g] ?? "")) return { invalid: `${pattern}: ${groups[g]} is not a hex group` };
    const head = v6Head(pattern, star > -1, minus > -1);
    const index = tokens(head, ":").length;
    const { start, end } = state;
    return (host) => {
      if (!isIPv6(host)) return false;
      const full = expandIp(host, 8);
      if (!full.startsWith(head)) return false;
      const n = parseInt(full.slice(5 * index, 5 * index + 4), 16);
      return n >= start && n <= end;
    };
  }
  return { invalid: `${pattern}: no group is "*" or a range "a-b"` };
}

/** Java AclUtils.v6ipProcess: the expanded groups before the ranged one. */
function v6Head(pattern: string, star: boolean, minus: boolean): string {
  if (star && minus) {
    const last = pattern.lastIndexOf(":");
    return expandIp(pattern.slice(0, pattern.slice(0, last).lastIndexOf(":")), 6);
  }
  return expandIp(pattern.slice(0, pattern.lastIndexOf(":")), 7);
}

/** The host part of a connection's remote address: "1.2.3.4:5" → "1.2.3.4", "[::1]:5" → "::1". */
export function remoteHost(remoteAddress: string): string {
  if (remoteAddress.startsWith("[")) {
    const close = remoteAddress.indexOf("]");
    return close > 0 ? remoteAddress.slice(1, close) : remoteAddress;
  }
  const colon = remoteAddress.lastIndexOf(":");
  return colon > 0 && remoteAddress.indexOf(":") === colon ? remoteAddress.slice(0, colon) : remoteAddress;
}
