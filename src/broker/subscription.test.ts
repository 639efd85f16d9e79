/**
 * TAG subscriptions as clients send them (heartbeat subscriptionDataSet, pull `subscription`):
 * parsing as Java's FilterAPI does, and the ConsumeQueue tag-code filter built from them.
 */
import { describe, expect, test } from "bun:test";
import { javaStringHashCode } from "../commitlog/index.ts";
import { buildSubscription, isTagType, SUB_ALL, tagCodeFilter, type SubscriptionData } from "./subscription.ts";

function ok(r: SubscriptionData | { invalid: string }): SubscriptionData {
  if ("invalid" in r) throw new Error(`unexpected invalid: ${r.invalid}`);
  return r;
}

describe("buildSubscription", () => {
  test("*, blank and absent expressions mean everything", () => {
    for (const s of ["*", " * ", "", "   ", undefined]) {
      const sub = ok(buildSubscription("T", s, undefined, 7));
      expect(sub).toEqual({ topic: "T", subString: SUB_ALL, tagsSet: [], codeSet: [], subVersion: 7, expressionType: "TAG" });
    }
  });

  test("tags split on ||, trimmed, empty pieces dropped; codes are Java String.hashCode", () => {
    const sub = ok(buildSubscription("T", " TagA ||TagB||  || TagC ", "TAG", 1));
    expect(sub.tagsSet).toEqual(["TagA", "TagB", "TagC"]);
    expect(sub.codeSet).toEqual(["TagA", "TagB", "TagC"].map(javaStringHashCode));
    // The example values of docs/PROTOCOL.md §3.2.
    expect(ok(buildSubscription("T", "TagA || TagB", undefined, 1)).codeSet).toEqual([2598919, 2598920]);
    // ali-ons' untagged messages carry TAGS=null; a subscription to "null" must match them.
    expect(ok(buildSubscription("T", "null", undefined, 1)).codeSet).toEqual([3392903]);
  });

  test("non-ASCII tags hash over UTF-16 code units, as Java does", () => {
    const sub = ok(buildSubscription("T", "订单", undefined, 1));
    expect(sub.codeSet).toEqual([javaStringHashCode("订单")]);
    expect(sub.codeSet[0]).toBe((0x8ba2 * 31 + 0x5355) | 0);
  });

  test("an expression with separators only is refused with a reason", () => {
    const r = buildSubscription("T", "|| ||", undefined, 1);
    expect("invalid" in r && r.invalid).toContain("no tags");
  });

  test("expression type: TAG in any case, empty or absent are TAG; SQL92 and unknown types are refused", () => {
    expect(ok(buildSubscription("T", "a", "tag", 1)).expressionType).toBe("TAG");
    expect(ok(buildSubscription("T", "a", "", 1)).expressionType).toBe("TAG");
    expect(ok(buildSubscription("T", "a", undefined, 1)).expressionType).toBe("TAG");
    const sql = buildSubscription("T", "a > 1", "SQL92", 1);
    expect("invalid" in sql && sql.invalid).toContain("SQL92");
    expect("invalid" in buildSubscription("T", "x", "JSONPATH", 1)).toBe(true);
  });
});

describe("isTagType", () => {
  test("absent, empty and TAG (any case) are TAG; everything else is not", () => {
    for (const t of [undefined, "", " ", "TAG", "tag", " Tag "]) expect(isTagType(t)).toBe(true);
    for (const t of ["SQL92", "sql92", "TAGS", "X"]) expect(isTagType(t)).toBe(false);
  });
});

describe("tagCodeFilter", () => {
  test("everything: no filter at all", () => {
    expect(tagCodeFilter(ok(buildSubscription("T", "*", undefined, 1)))).toBeUndefined();
  });

  test("one tag and several tags match exactly their codes", () => {
    const one = tagCodeFilter(ok(buildSubscription("T", "TagA", undefined, 1)))!;
    expect(one(javaStringHashCode("TagA"))).toBe(true);
    expect(one(javaStringHashCode("TagB"))).toBe(false);
    expect(one(0)).toBe(false); // a message without a tag has code 0 and does not match a tag list
    const two = tagCodeFilter(ok(buildSubscription("T", "TagA || TagB", undefined, 1)))!;
    expect(two(javaStringHashCode("TagA"))).toBe(true);
    expect(two(javaStringHashCode("TagB"))).toBe(true);
    expect(two(javaStringHashCode("TagC"))).toBe(false);
  });

  test("negative hash codes (sign-extended in the ConsumeQueue) match", () => {
    const tag = "zzzzzzzz";
    const code = javaStringHashCode(tag);
    expect(code).toBeLessThan(0);
    const f = tagCodeFilter(ok(buildSubscription("T", tag, undefined, 1)))!;
    expect(f(code)).toBe(true);
    const g = tagCodeFilter(ok(buildSubscription("T", `${tag} || a`, undefined, 1)))!;
    expect(g(code)).toBe(true);
  });
});
