/**
 * GET /metrics: the Prometheus text exposition (../metrics/) of whatever this process runs — the
 * broker's families, the name server's request figures, and the process's. Every value is read
 * at scrape time from the components' info functions (BrokerInfo.metrics() and friends); nothing
 * is recorded for it on the send or pull path. The admin token guards it like every endpoint but
 * /health (../auth.ts).
 *
 * A scrape's cost: one BrokerInfo.metrics() call (O(topics + groups + queues), from memory; its
 * contract is at the top of src/broker/metrics-state.ts) in one event-loop turn, then the text in
 * a few parts with turns between them (../metrics/broker.ts); rocketbun_metrics_collect_seconds
 * reports the whole.
 */
import { Hono } from "hono";
import type { BrokerInfo } from "../../broker/index.ts";
import type { NamesrvInfo } from "../../namesrv/index.ts";
import { nodeLabels, writeBrokerMetrics } from "../metrics/broker.ts";
import { EXPOSITION_CONTENT_TYPE, Exposition } from "../metrics/exposition.ts";
import { OWN } from "../metrics/families.ts";
import { ProcessMetrics } from "../metrics/process.ts";
import { writeRequestCounts, writeRequestMetrics, type RequestFigures } from "../metrics/requests.ts";

export interface MetricsSources {
  broker?: BrokerInfo | undefined;
  namesrv?: NamesrvInfo | undefined;
}

/** 5.x has no name server metrics; its request figures carry node_type "namesrv" and no cluster. */
const NAMESRV_NODE = { cluster: "", node_type: "namesrv", node_id: "" } as const;

/** The whole exposition text; `proc` keeps the event-loop histogram between scrapes. */
export async function renderMetrics(src: MetricsSources, proc: ProcessMetrics): Promise<string> {
  const x = new Exposition();
  await proc.write(x);
  const started = performance.now();
  const counts: { stats: RequestFigures; nodeType: string }[] = [];
  const connections: [string, number][] = [];
  const { broker, namesrv } = src;
  if (broker) {
    const s = broker.metrics();
    await writeBrokerMetrics(x, s, broker.replication(), broker.transactions());
    const stats = broker.requestStats();
    writeRequestMetrics(x, stats, nodeLabels(s));
    counts.push({ stats, nodeType: "broker" });
    connections.push(["listen", s.connections.listen], ["vip", s.connections.vip]);
  }
  if (namesrv) {
    const stats = namesrv.requestStats();
    writeRequestMetrics(x, stats, NAMESRV_NODE);
    counts.push({ stats, nodeType: NAMESRV_NODE.node_type });
    connections.push(["namesrv", namesrv.connections()]);
  }
  writeRequestCounts(x, counts);
  for (const [port, n] of connections) x.sample(OWN.remotingConnections, { port }, n);
  x.sample(OWN.scrapeDuration, {}, (performance.now() - started) / 1000);
  return x.text();
}

export function metricsRoutes(src: MetricsSources): Hono {
  const app = new Hono();
  const proc = new ProcessMetrics();
  app.get("/metrics", async (c) => c.body(await renderMetrics(src, proc), 200, { "content-type": EXPOSITION_CONTENT_TYPE }));
  return app;
}
