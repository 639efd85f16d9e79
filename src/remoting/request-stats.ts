/**
 * RequestStats: a request-pipeline hook (./pipeline.ts, `after` only) that counts every request by
 * request code: how many, how many were errors, how many got each response code, and a latency
 * histogram. The broker (listen and VIP servers, one shared instance) and the name server each
 * install one; `snapshot()` is what BrokerInfo/NamesrvInfo.requestStats() and the admin API's
 * `GET /stats/requests` return. The figures count from the process's start; a Prometheus exporter
 * can serve them as they are (counters, and a histogram with cumulative `le` buckets and a sum).
 *
 * Per request code, created on its first request and kept for the process's life:
 *   count                every request, one after-call each (pipeline contract 2)
 *   responses[slot]      by the response code that went to the peer: one slot per ResponseCode
 *                        entry, plus NONE (nothing was sent: oneway requests, whatever became of
 *                        them, and processors that answered null) and OTHER (a code not in
 *                        ResponseCode)
 *   errors               responses that are neither SUCCESS nor a normal negative outcome:
 *                        PULL_NOT_FOUND, PULL_RETRY_IMMEDIATELY, PULL_OFFSET_MOVED, QUERY_NOT_FOUND
 *                        (a lookup that found nothing), and TOPIC_NOT_EXIST to GET_ROUTEINFO_BY_TOPIC
 *                        (clients ask for routes of topics not created yet, e.g. retry topics).
 *                        SYSTEM_ERROR, SYSTEM_BUSY, REQUEST_CODE_NOT_SUPPORTED, NO_PERMISSION, every
 *                        other refusal and OTHER are errors; NONE is not.
 *   buckets[i]           latency histogram: requests whose elapsed time t (dispatch to the answer
 *                        written, so a parked pull's includes its time parked) has
 *                        2^(i+2) µs < t ≤ 2^(i+3) µs, the first bucket from 0, i.e. upper bounds
 *                        8 µs, 16 µs, … 2^25 µs (33.6 s, past the longest pull hold); the last slot
 *                        counts what is slower (Prometheus' +Inf bucket minus the others)
 *   sumMs                total elapsed time
 *
 * Cost per request: one Map lookup, a table lookup for the response slot, Math.clz32 for the
 * bucket, five stores into typed arrays and fields created with the code's entry. Nothing is
 * allocated per request. The number of entries is bounded (REQUEST_STATS_CODES_MAX, as
 * docs/CONVENTIONS.md §4 asks of anything a peer can grow).
 */
import { assert } from "../common/assert.ts";
import type { RemotingCommand } from "./command.ts";
import type { RequestHook } from "./pipeline.ts";
import { RequestCode, requestCodeName } from "./request-code.ts";
import { ResponseCode, type ResponseCodeName } from "./response-code.ts";

/**
 * Distinct request codes with an entry of their own: any peer can send any code (unknown ones are
 * answered REQUEST_CODE_NOT_SUPPORTED), so past this many, new codes share the entry of code -1.
 */
export const REQUEST_STATS_CODES_MAX = 512;
const OVERFLOW_CODE = -1;

const BUCKET_FIRST_LOG2_US = 3;
const BUCKET_LAST_LOG2_US = 25;
/** Finite buckets; the slot after them counts the slower requests. */
const BUCKETS = BUCKET_LAST_LOG2_US - BUCKET_FIRST_LOG2_US + 1;
/** Upper bounds of the finite buckets in ms: 0.008, 0.016, … 33554.432. */
export const REQUEST_LATENCY_BOUNDS_MS: readonly number[] = Array.from({ length: BUCKETS }, (_, i) => 2 ** (i + BUCKET_FIRST_LOG2_US) / 1000);

const RESPONSE_NAMES = Object.keys(ResponseCode) as ResponseCodeName[];
const SLOT_NONE = 0;
const SLOT_OTHER = 1;
const SLOT_FIRST_CODE = 2;
const SLOTS = SLOT_FIRST_CODE + RESPONSE_NAMES.length;
/** Response codes 0–255 to their slot (every ResponseCode is below 256); 0 = not listed. */
const SLOT_OF_CODE = new Uint8Array(256);
RESPONSE_NAMES.forEach((name, i) => (SLOT_OF_CODE[ResponseCode[name]] = SLOT_FIRST_CODE + i));
const SLOT_NAMES = ["NONE", "OTHER", ...RESPONSE_NAMES];

const NORMAL_RESPONSES: readonly number[] = [
  ResponseCode.SUCCESS,
  ResponseCode.PULL_NOT_FOUND,
  ResponseCode.PULL_RETRY_IMMEDIATELY,
  ResponseCode.PULL_OFFSET_MOVED,
  ResponseCode.QUERY_NOT_FOUND,
];

function slotOf(response: RemotingCommand | undefined): number {
  if (response === undefined) return SLOT_NONE;
  const code = response.code;
  return code >= 0 && code < 256 ? SLOT_OF_CODE[code]! || SLOT_OTHER : SLOT_OTHER;
}

/** Index into `buckets` for an elapsed time (contract at the top of this file). */
export function latencyBucket(elapsedMs: number): number {
  const us = Math.ceil(elapsedMs * 1000);
  if (!(us > 2 ** BUCKET_FIRST_LOG2_US)) return 0;
  if (us > 2 ** BUCKET_LAST_LOG2_US) return BUCKETS;
  // ceil(log2(us)) for us ≥ 2.
  return 32 - Math.clz32(us - 1) - BUCKET_FIRST_LOG2_US;
}

/** 1 for the response slots that count as errors for this request code. */
function errorSlots(requestCode: number): Uint8Array {
  const errors = new Uint8Array(SLOTS).fill(1);
  errors[SLOT_NONE] = 0;
  for (const c of NORMAL_RESPONSES) errors[SLOT_OF_CODE[c]!] = 0;
  if (requestCode === RequestCode.GET_ROUTEINFO_BY_TOPIC) errors[SLOT_OF_CODE[ResponseCode.TOPIC_NOT_EXIST]!] = 0;
  return errors;
}

class CodeStats {
  count = 0;
  errors = 0;
  sumMs = 0;
  readonly responses = new Float64Array(SLOTS);
  readonly buckets = new Float64Array(BUCKETS + 1);
  readonly isError: Uint8Array;

  constructor(readonly code: number) {
    this.isError = errorSlots(code);
  }
}

/** One request code's figures, as JSON. */
export interface RequestCodeStats {
  code: number;
  /** The RequestCode name; "UNKNOWN(n)" for a code not in the table, "OTHER" for the shared entry (code -1). */
  name: string;
  count: number;
  errors: number;
  /** Requests by response code name (only those seen); NONE = nothing sent, OTHER = a code not in ResponseCode. */
  responses: Record<string, number>;
  latency: {
    /** Cumulative counts (Prometheus `le`): requests that took at most `leMs`; the +Inf bucket is `count`. */
    buckets: { leMs: number; count: number }[];
    sumMs: number;
    /** Estimated from the buckets as Prometheus' histogram_quantile does (linear within a bucket). */
    p50Ms: number;
    p99Ms: number;
  };
}

export interface RequestStatsSnapshot {
  /** When counting started (ms since the epoch). */
  sinceMs: number;
  /** By request code, ascending. */
  codes: RequestCodeStats[];
}

export class RequestStats implements RequestHook {
  readonly name = "request-stats";
  readonly #byCode = new Map<number, CodeStats>();
  readonly #sinceMs: number;

  constructor(now: () => number = Date.now) {
    this.#sinceMs = now();
  }

  after(_conn: unknown, cmd: RemotingCommand, response: RemotingCommand | undefined, elapsedMs: number): void {
    const s = this.#byCode.get(cmd.code) ?? this.#add(cmd.code);
    const slot = slotOf(response);
    s.count++;
    s.errors += s.isError[slot]!;
    s.sumMs += elapsedMs;
    s.responses[slot]!++;
    s.buckets[latencyBucket(elapsedMs)]!++;
  }

  #add(code: number): CodeStats {
    if (this.#byCode.size >= REQUEST_STATS_CODES_MAX) {
      const shared = this.#byCode.get(OVERFLOW_CODE);
      if (shared) return shared;
      code = OVERFLOW_CODE;
    }
    const s = new CodeStats(code);
    this.#byCode.set(code, s);
    // REQUEST_STATS_CODES_MAX entries of their own, and the shared one.
    assert(this.#byCode.size <= REQUEST_STATS_CODES_MAX + 1, "{} request codes counted apart", this.#byCode.size);
    return s;
  }

  snapshot(): RequestStatsSnapshot {
    const codes = [...this.#byCode.values()].sort((a, b) => a.code - b.code).map(codeSnapshot);
    return { sinceMs: this.#sinceMs, codes };
  }
}

function codeSnapshot(s: CodeStats): RequestCodeStats {
  const responses: Record<string, number> = {};
  s.responses.forEach((n, slot) => {
    if (n > 0) responses[SLOT_NAMES[slot]!] = n;
  });
  let cumulative = 0;
  const buckets = REQUEST_LATENCY_BOUNDS_MS.map((leMs, i) => ({ leMs, count: (cumulative += s.buckets[i]!) }));
  // Each after-call counts once in `count`, in one response slot and in one latency bucket.
  const answered = s.responses.reduce((a, n) => a + n, 0);
  assert(answered === s.count, "request code {}: {} responses counted for {} requests", s.code, answered, s.count);
  assert(cumulative + s.buckets[BUCKETS]! === s.count, "request code {}: {} latencies counted for {} requests", s.code, cumulative, s.count);
  assert(s.errors <= s.count, "request code {}: {} errors in {} requests", s.code, s.errors, s.count);
  return {
    code: s.code,
    name: s.code === OVERFLOW_CODE ? "OTHER" : requestCodeName(s.code),
    count: s.count,
    errors: s.errors,
    responses,
    latency: { buckets, sumMs: s.sumMs, p50Ms: quantile(0.5, buckets, s.count), p99Ms: quantile(0.99, buckets, s.count) },
  };
}

/**
 * Prometheus' histogram_quantile over cumulative buckets: linear within the bucket that holds the
 * rank; a rank in the +Inf bucket answers the highest finite bound; 0 when nothing was counted.
 */
export function quantile(q: number, buckets: readonly { leMs: number; count: number }[], count: number): number {
  if (count === 0) return 0;
  const rank = q * count;
  let below = 0;
  let lower = 0;
  for (const b of buckets) {
    if (b.count >= rank) {
      const inBucket = b.count - below;
      return round(inBucket === 0 ? b.leMs : lower + ((b.leMs - lower) * (rank - below)) / inBucket);
    }
    below = b.count;
    lower = b.leMs;
  }
  return lower;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
