import { describe, expect, test } from "bun:test";
import { decideHalf, type CheckDecision, type CheckPolicy } from "./check-policy.ts";

const policy: CheckPolicy = { transactionTimeOutMs: 6000, transactionCheckMax: 15, maxAgeMs: 72 * 3_600_000 };
const NOW = 1_700_000_000_000;
const PASS_START = NOW;

interface Case {
  name: string;
  bornAgoMs: number;
  storedAgoMs?: number;
  props?: Record<string, string>;
  resolved?: boolean;
  want: CheckDecision;
}

// Every row of the table at the top of check-policy.ts, and its edges.
const CASES: Case[] = [
  { name: "resolved wins over everything", bornAgoMs: 1e9, props: { TRANSACTION_CHECK_TIMES: "99" }, resolved: true, want: "resolved" },
  { name: "checked transactionCheckMax times", bornAgoMs: 10_000, props: { TRANSACTION_CHECK_TIMES: "15" }, want: "discard" },
  { name: "one check short of the max", bornAgoMs: 10_000, props: { TRANSACTION_CHECK_TIMES: "14" }, want: "check" },
  { name: "older than the CommitLog keeps files", bornAgoMs: 73 * 3_600_000, want: "discard" },
  { name: "stored during this pass", bornAgoMs: 10_000, storedAgoMs: 0, want: "stop" },
  { name: "younger than transactionTimeOut", bornAgoMs: 5_999, want: "stop" },
  { name: "exactly transactionTimeOut old", bornAgoMs: 6_000, want: "check" },
  { name: "born in the future (producer clock ahead)", bornAgoMs: -5_000, want: "check" },
  { name: "immunity not over: copied to the end", bornAgoMs: 10_000, props: { CHECK_IMMUNITY_TIME_IN_SECONDS: "60" }, want: "requeue" },
  { name: "immunity over", bornAgoMs: 61_000, props: { CHECK_IMMUNITY_TIME_IN_SECONDS: "60" }, want: "check" },
  { name: "immunity -1 means transactionTimeOut", bornAgoMs: 3_000, props: { CHECK_IMMUNITY_TIME_IN_SECONDS: "-1" }, want: "requeue" },
  { name: "unparsable immunity means transactionTimeOut", bornAgoMs: 7_000, props: { CHECK_IMMUNITY_TIME_IN_SECONDS: "soon" }, want: "check" },
];

describe("decideHalf", () => {
  for (const c of CASES) {
    test(c.name, () => {
      const rec = { bornTimestamp: NOW - c.bornAgoMs, storeTimestamp: NOW - (c.storedAgoMs ?? Math.max(1, c.bornAgoMs)) };
      expect(decideHalf(rec, c.props ?? {}, c.resolved ?? false, NOW, PASS_START, policy)).toBe(c.want);
    });
  }

  test("maxAgeMs 0 never discards by age", () => {
    const rec = { bornTimestamp: 0, storeTimestamp: 0 };
    expect(decideHalf(rec, {}, false, NOW, PASS_START, { ...policy, maxAgeMs: 0 })).toBe("check");
  });
});
