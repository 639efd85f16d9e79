/**
 * PULL_MESSAGE's `sysFlag` bits (RocketMQ's PullSysFlag), written by consumers and read by the
 * broker's pull processor (docs/PROTOCOL.md §3.5).
 *
 *   bit  value  name            meaning
 *   0    1      COMMIT_OFFSET   the header's commitOffset is to be stored (masters only)
 *   1    2      SUSPEND         park the pull (long polling) when nothing is there yet
 *   2    4      SUBSCRIPTION    the header carries the subscription expression
 *   3    8      CLASS_FILTER    a filter-server class filter (RocketMQ 4.x's; not read here)
 *   4    16     LITE_PULL       a 5.x lite pull (LITE_PULL_MESSAGE)
 */
export const PullSysFlag = {
  COMMIT_OFFSET: 1,
  SUSPEND: 2,
  SUBSCRIPTION: 4,
  CLASS_FILTER: 8,
  LITE_PULL: 16,
} as const;
