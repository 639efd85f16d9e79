/**
 * RequestStats fed directly (server.test.ts feeds it through a real server): the bucket bounds of
 * the contract at the top of request-stats.ts, which outcomes count as errors, the Prometheus-style
 * quantile estimate, and the bound on distinct codes.
 */
import { describe, expect, test } from "bun:test";
import { createRequest, createResponse, FLAG_ONEWAY } from "./command.ts";
import { RequestCode } from "./request-code.ts";
import { latencyBucket, quantile, REQUEST_LATENCY_BOUNDS_MS, REQUEST_STATS_CODES_MAX, RequestStats } from "./request-stats.ts";
import { ResponseCode } from "./response-code.ts";

/** Feeds one request of `code` answered with `responseCode` (undefined: nothing sent) after `ms`. */
function feed(stats: RequestStats, code: number, responseCode: number | undefined, ms = 0.01): void {
  const req = createRequest(code);
  stats.after(undefined, req, responseCode === undefined ? undefined : createResponse(req, responseCode), ms);
}

describe("RequestStats", () => {
  test("buckets: upper bounds 8 µs … 2^25 µs, each bound inside its own bucket, slower ones past the last", () => {
    expect(REQUEST_LATENCY_BOUNDS_MS).toHaveLength(23);
    expect(REQUEST_LATENCY_BOUNDS_MS[0]).toBe(0.008);
    expect(REQUEST_LATENCY_BOUNDS_MS.at(-1)).toBe(33554.432);
    REQUEST_LATENCY_BOUNDS_MS.forEach((le, i) => {
      expect(latencyBucket(le)).toBe(i);
      expect(latencyBucket(le + 0.001)).toBe(i + 1);
    });
    expect(latencyBucket(0)).toBe(0);
    expect(latencyBucket(Number.NaN)).toBe(0);
    expect(latencyBucket(3_600_000)).toBe(23);
  });

  test("errors: not SUCCESS and not a normal negative outcome; nothing sent is not an error", () => {
    const stats = new RequestStats();
    const pull = RequestCode.PULL_MESSAGE;
    for (const c of [ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY, ResponseCode.PULL_OFFSET_MOVED]) {
      feed(stats, pull, c);
    }
    feed(stats, pull, undefined);
    feed(stats, RequestCode.QUERY_CONSUMER_OFFSET, ResponseCode.QUERY_NOT_FOUND);
    // A route lookup for a topic not created yet is routine; a send to one is refused.
    feed(stats, RequestCode.GET_ROUTEINFO_BY_TOPIC, ResponseCode.TOPIC_NOT_EXIST);
    feed(stats, RequestCode.SEND_MESSAGE_V2, ResponseCode.TOPIC_NOT_EXIST);
    for (const c of [ResponseCode.SYSTEM_ERROR, ResponseCode.SYSTEM_BUSY, ResponseCode.NO_PERMISSION, 999]) feed(stats, RequestCode.HEART_BEAT, c);
    const by = new Map(stats.snapshot().codes.map((c) => [c.name, c]));
    expect(by.get("PULL_MESSAGE")).toMatchObject({
      count: 5,
      errors: 0,
      responses: { SUCCESS: 1, PULL_NOT_FOUND: 1, PULL_RETRY_IMMEDIATELY: 1, PULL_OFFSET_MOVED: 1, NONE: 1 },
    });
    expect(by.get("QUERY_CONSUMER_OFFSET")).toMatchObject({ count: 1, errors: 0 });
    expect(by.get("GET_ROUTEINFO_BY_TOPIC")).toMatchObject({ count: 1, errors: 0 });
    expect(by.get("SEND_MESSAGE_V2")).toMatchObject({ count: 1, errors: 1, responses: { TOPIC_NOT_EXIST: 1 } });
    expect(by.get("HEART_BEAT")).toMatchObject({ count: 4, errors: 4, responses: { SYSTEM_ERROR: 1, SYSTEM_BUSY: 1, NO_PERMISSION: 1, OTHER: 1 } });
  });

  test("a oneway request counts under NONE", () => {
    const stats = new RequestStats();
    const req = createRequest(RequestCode.UPDATE_CONSUMER_OFFSET);
    req.flag |= FLAG_ONEWAY;
    stats.after(undefined, req, undefined, 0.02);
    expect(stats.snapshot().codes[0]).toMatchObject({ count: 1, errors: 0, responses: { NONE: 1 } });
  });

  test("latency: cumulative buckets ending at the count, the sum, and p50/p99 as histogram_quantile estimates them", () => {
    const stats = new RequestStats(() => 1234);
    for (let i = 0; i < 50; i++) feed(stats, RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS, 0.005); // first bucket (≤ 8 µs)
    for (let i = 0; i < 50; i++) feed(stats, RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS, 0.1); // 64 < t ≤ 128 µs
    const snap = stats.snapshot();
    expect(snap.sinceMs).toBe(1234);
    const l = snap.codes[0]!.latency;
    expect(l.buckets.map((b) => b.count).slice(0, 6)).toEqual([50, 50, 50, 50, 100, 100]);
    expect(l.buckets.at(-1)).toEqual({ leMs: 33554.432, count: 100 });
    expect(l.sumMs).toBeCloseTo(5.25, 9);
    expect(l.p50Ms).toBe(0.008);
    // Rank 99 lies 49/50 of the way through the (0.064, 0.128] bucket.
    expect(l.p99Ms).toBe(0.127);
  });

  test("quantile: nothing counted is 0; a rank in the +Inf bucket answers the highest finite bound", () => {
    const buckets = [
      { leMs: 1, count: 1 },
      { leMs: 2, count: 1 },
    ];
    expect(quantile(0.5, buckets, 0)).toBe(0);
    expect(quantile(0.99, buckets, 10)).toBe(2);
    expect(quantile(0.05, buckets, 10)).toBe(0.5);
  });

  test(`at most ${REQUEST_STATS_CODES_MAX} codes get an entry of their own; later new codes share code -1`, () => {
    const stats = new RequestStats();
    for (let code = 0; code < REQUEST_STATS_CODES_MAX + 88; code++) feed(stats, 1000 + code, ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
    feed(stats, 1000, ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
    const codes = stats.snapshot().codes;
    expect(codes).toHaveLength(REQUEST_STATS_CODES_MAX + 1);
    expect(codes[0]).toMatchObject({ code: -1, name: "OTHER", count: 88, errors: 88 });
    expect(codes[1]).toMatchObject({ code: 1000, name: "UNKNOWN(1000)", count: 2 });
  });
});
