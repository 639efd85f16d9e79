/**
 * What the check service does with the half record at its scan cursor (docs/PROTOCOL.md §6 item 4).
 * A pure decision over the record, its properties, whether its transaction is resolved, and the
 * clock, so the rules are tested without a store or a timer. First matching row wins:
 *
 *   condition                                                   decision
 *   ----------------------------------------------------------  ---------------------------------
 *   an op resolves its origin (committed or rolled back)        "resolved"  skip it
 *   TRANSACTION_CHECK_TIMES ≥ transactionCheckMax               "discard"   to TRANS_CHECK_MAX_TIME_TOPIC
 *   born longer ago than the CommitLog keeps files (if > 0)     "discard"   (RocketMQ's needSkip)
 *   stored at or after the start of this pass                   "stop"      look again next pass
 *   age < CHECK_IMMUNITY_TIME_IN_SECONDS × 1000 (property set)  "requeue"   copy to the queue's end
 *                                                                           uncounted, so it does not
 *                                                                           hold back later ones
 *   0 ≤ age < transactionTimeOut (no property)                  "stop"      all later ones are younger
 *   otherwise (including a born time in the future)             "check"     copy counted, check-back
 *
 * age = now − born timestamp (the producer's clock, as RocketMQ: every copy keeps the first
 * copy's born time, so a transaction is checked every pass once it has timed out). An immunity
 * value of −1 or one that does not parse means "use transactionTimeOut", as in RocketMQ.
 */
import { MessageConst } from "../../protocol/message-const.ts";
import { checkTimesOf, parseLong } from "./half-message.ts";

export type CheckDecision = "resolved" | "discard" | "stop" | "requeue" | "check";

export interface CheckPolicy {
  transactionTimeOutMs: number;
  transactionCheckMax: number;
  /** Half messages born longer ago than this are dropped (0 = never). */
  maxAgeMs: number;
}

export interface HalfView {
  bornTimestamp: number;
  storeTimestamp: number;
}

export function decideHalf(
  rec: HalfView,
  props: Record<string, string>,
  resolved: boolean,
  now: number,
  passStart: number,
  p: CheckPolicy,
): CheckDecision {
  if (resolved) return "resolved";
  if (checkTimesOf(props) >= p.transactionCheckMax) return "discard";
  const age = now - rec.bornTimestamp;
  if (p.maxAgeMs > 0 && age > p.maxAgeMs) return "discard";
  if (rec.storeTimestamp >= passStart) return "stop";
  const immunityText = props[MessageConst.CHECK_IMMUNITY_TIME_IN_SECONDS];
  if (immunityText !== undefined) {
    const s = parseLong(immunityText);
    const immunityMs = s === null || s === -1 ? p.transactionTimeOutMs : s * 1000;
    if (age >= 0 && age < immunityMs) return "requeue";
    return "check";
  }
  if (age >= 0 && age < p.transactionTimeOutMs) return "stop";
  return "check";
}
