/**
 * Subscriptions as clients describe them (HeartbeatData.consumerDataSet[].subscriptionDataSet,
 * or the `subscription` field of a pull): a TAG expression `*` / `TagA || TagB`, matched on the
 * broker by the ConsumeQueue's tag hash (Java String.hashCode) — clients re-check the tag string,
 * because hashes collide. SQL92 expressions are not supported and are refused with a reason.
 */
import { javaStringHashCode } from "../commitlog/index.ts";

export const SUB_ALL = "*";

export interface SubscriptionData {
  topic: string;
  subString: string;
  tagsSet: string[];
  codeSet: number[];
  subVersion: number;
  expressionType: string;
}

/** Java's ExpressionType.isTagType (case-insensitive here): absent or empty means TAG. */
export function isTagType(expressionType: string | undefined): boolean {
  return ((expressionType ?? "").trim().toUpperCase() || "TAG") === "TAG";
}

/** Java's remark for a non-TAG expression on a broker without property filtering. */
export function unsupportedFilterRemark(expressionType: string | undefined): string {
  return `The broker does not support consumer to filter message by ${expressionType}`;
}

/** Parses a TAG expression; SQL92 or an unknown type is a reason string. */
export function buildSubscription(
  topic: string,
  subString: string | undefined,
  expressionType: string | undefined,
  subVersion: number,
): SubscriptionData | { invalid: string } {
  if (!isTagType(expressionType)) return { invalid: `expression type ${expressionType} is not supported by this broker (only TAG)` };
  const s = (subString ?? "").trim();
  if (s === "" || s === SUB_ALL) return { topic, subString: SUB_ALL, tagsSet: [], codeSet: [], subVersion, expressionType: "TAG" };
  const tags = s
    .split("||")
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
  if (tags.length === 0) return { invalid: `subscription expression "${s}" has no tags` };
  return { topic, subString: s, tagsSet: tags, codeSet: tags.map(javaStringHashCode), subVersion, expressionType: "TAG" };
}

/** A ConsumeQueue tag-code filter for a subscription (undefined = everything). */
export function tagCodeFilter(sub: SubscriptionData): ((code: number) => boolean) | undefined {
  if (sub.subString === SUB_ALL || sub.codeSet.length === 0) return undefined;
  if (sub.codeSet.length === 1) {
    const only = sub.codeSet[0]!;
    return (code) => (code | 0) === only;
  }
  const set = new Set(sub.codeSet);
  return (code) => set.has(code | 0);
}
