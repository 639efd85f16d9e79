/**
 * rocketmq_rpc_latency_milliseconds and rocketbun_requests_total from the request pipeline's stats
 * hook (src/remoting/request-stats.ts, the figures GET /stats/requests shows): counters and a
 * histogram since start, as they are. The buckets are the hook's (upper bounds 8 µs … 33.5 s,
 * doubling), finer than 5.x's 1/3/5/7/10/100/1000/2000/3000 ms; histogram_quantile works on
 * either. Request and response codes are named as RocketMQ 5.x's RemotingHelper names them: the
 * constant's name in lower case, the number for a code it does not know.
 */
import type { NamesrvInfo } from "../../namesrv/index.ts";
import type { Exposition, Labels } from "./exposition.ts";
import { OWN, V5 } from "./families.ts";

export type RequestFigures = ReturnType<NamesrvInfo["requestStats"]>;

function codeName(c: RequestFigures["codes"][number]): string {
  const unknown = /^UNKNOWN\((-?\d+)\)$/.exec(c.name);
  return unknown ? unknown[1]! : c.name.toLowerCase();
}

/** One process part's request figures; `node` carries cluster, node_type and node_id. */
export function writeRequestMetrics(x: Exposition, stats: RequestFigures, node: Labels): void {
  for (const c of stats.codes) {
    const labels = { ...node, protocol_type: "remoting", request_code: codeName(c) };
    const buckets = c.latency.buckets.map((b) => ({ le: b.leMs, count: b.count }));
    x.histogram(V5.rpcLatency, labels, buckets, c.latency.sumMs, c.count);
  }
}

/** rocketbun_requests_total of every part, in one family (the parts differ by node_type). */
export function writeRequestCounts(x: Exposition, parts: readonly { stats: RequestFigures; nodeType: string }[]): void {
  for (const { stats, nodeType } of parts) {
    for (const c of stats.codes) {
      for (const [response, n] of Object.entries(c.responses)) {
        x.sample(OWN.requests, { node_type: nodeType, request_code: codeName(c), response_code: response.toLowerCase() }, n);
      }
    }
  }
}
