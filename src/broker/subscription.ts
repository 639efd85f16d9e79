/**
 * Subscriptions as clients describe them (HeartbeatData.consumerDataSet[].subscriptionDataSet,
 * or the `subscription` field of a pull): a TAG expression `*` / `TagA || TagB`, matched on the
 * broker by the ConsumeQueue's tag hash (Java String.hashCode) — clients re-check the tag string,
 * because hashes collide. A SQL92 expression (sql92.ts) is accepted only when the broker's
 * enablePropertyFilter is on, as in RocketMQ, and is matched on each message's properties.
 */
import { decodeRecordAt, javaStringHashCode, parseProperties } from "../commitlog/index.ts";
import { selectorFor, type Selector } from "./sql92.ts";

export const SUB_ALL = "*";

export interface SubscriptionData {
  topic: string;
  subString: string;
  tagsSet: string[];
  codeSet: number[];
  subVersion: number;
  expressionType: string;
  /** SQL92 subscriptions: the compiled expression (tagsSet/codeSet are empty). */
  selector?: Selector;
}

/** Java's ExpressionType.SQL92 (compared case-insensitively). */
function isSql92Type(expressionType: string | undefined): boolean {
  return (expressionType ?? "").trim().toUpperCase() === "SQL92";
}

/**
 * Whether this broker takes subscriptions of `expressionType`: TAG always, SQL92 with `sql92` (its
 * enablePropertyFilter). Java answers any other with SYSTEM_ERROR and unsupportedFilterRemark,
 * before looking at the expression itself.
 */
export function isSupportedType(expressionType: string | undefined, sql92: boolean): boolean {
  return isTagType(expressionType) || (sql92 && isSql92Type(expressionType));
}

/** Java's ExpressionType.isTagType (case-insensitive here): absent or empty means TAG. */
export function isTagType(expressionType: string | undefined): boolean {
  return ((expressionType ?? "").trim().toUpperCase() || "TAG") === "TAG";
}

/** Java's remark for a non-TAG expression on a broker without property filtering. */
export function unsupportedFilterRemark(expressionType: string | undefined): string {
  return `The broker does not support consumer to filter message by ${expressionType}`;
}

/**
 * Parses a TAG expression, or with `sql92` (the broker's enablePropertyFilter) a SQL92 one; an
 * unsupported type or an invalid expression is a reason string.
 */
export function buildSubscription(
  topic: string,
  subString: string | undefined,
  expressionType: string | undefined,
  subVersion: number,
  sql92 = false,
): SubscriptionData | { invalid: string } {
  if (sql92 && isSql92Type(expressionType)) {
    const text = (subString ?? "").trim();
    const selector = selectorFor(text);
    if ("invalid" in selector) return { invalid: `${selector.invalid} (${text})` };
    return { topic, subString: text, tagsSet: [], codeSet: [], subVersion, expressionType: "SQL92", selector };
  }
  if (!isTagType(expressionType)) {
    const supported = sql92 ? "TAG and SQL92" : "only TAG; SQL92 needs enablePropertyFilter";
    return { invalid: `expression type ${expressionType} is not supported by this broker (${supported})` };
  }
  const s = (subString ?? "").trim();
  if (s === "" || s === SUB_ALL) return { topic, subString: SUB_ALL, tagsSet: [], codeSet: [], subVersion, expressionType: "TAG" };
  const tags = s
    .split("||")
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
  if (tags.length === 0) return { invalid: `subscription expression "${s}" has no tags` };
  return { topic, subString: s, tagsSet: tags, codeSet: tags.map(javaStringHashCode), subVersion, expressionType: "TAG" };
}

/**
 * The stored-record filter of a SQL92 subscription (undefined for TAG ones): the record's
 * properties, TAGS and KEYS among them, evaluated by the selector. A record that does not decode
 * does not match.
 */
export function recordFilter(sub: SubscriptionData): ((record: Uint8Array) => boolean) | undefined {
  const selector = sub.selector;
  if (!selector) return undefined;
  return (record) => {
    const r = decodeRecordAt(record, 0, { checkCrc: false });
    return "totalSize" in r && selector.matches(parseProperties(r.properties));
  };
}

/** A ConsumeQueue tag-code filter for a subscription (undefined = everything). */
export function tagCodeFilter(sub: SubscriptionData): ((code: number) => boolean) | undefined {
  if (sub.selector || sub.subString === SUB_ALL || sub.codeSet.length === 0) return undefined;
  if (sub.codeSet.length === 1) {
    const only = sub.codeSet[0]!;
    return (code) => (code | 0) === only;
  }
  const set = new Set(sub.codeSet);
  return (code) => set.has(code | 0);
}
