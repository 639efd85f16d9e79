/**
 * The admin HTTP API (Hono), built from the info functions of the components a process runs.
 * Layout:
 *   GET /health                      every role (never needs the admin token; see auth.ts for the rest)
 *   GET /config                      every role: the configuration in force (read-only), its
 *                                    DataVersion and the keys a SIGHUP or UPDATE_BROKER_CONFIG can change
 *   name server: /cluster /brokers /topics /topics/:topic/route /stats/requests   (also under /namesrv/...)
 *   broker:      /broker /topics /topics/:topic /groups /groups/:group /ha /transactions /stats/requests
 *   /stats/requests: requests by request code since start (count, errors, by response code, a
 *                    latency histogram with cumulative `le` buckets, sum, p50/p99), from the
 *                    request pipeline's stats hook; the broker's counts both of its ports
 *   GET /metrics                     every role: Prometheus text format (routes/metrics.ts)
 *   POST /config/reload              every role: what SIGHUP does (needs the admin token, always)
 * In standalone, the name server routes live under /namesrv/ so that broker routes (which arrive
 * with the broker) own the root paths.
 */
import { type Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { BrokerInfo } from "../broker/index.ts";
import type { NamesrvInfo } from "../namesrv/index.ts";
import { adminAuth } from "./auth.ts";
import { ApiError } from "./errors.ts";
import { brokerRoutes } from "./routes/broker.ts";
import { metricsRoutes } from "./routes/metrics.ts";
import { namesrvRoutes } from "./routes/namesrv.ts";

export interface AdminAppDeps {
  role: string;
  version: string;
  startedAt: number;
  namesrv?: NamesrvInfo;
  broker?: BrokerInfo;
  /** Mount name server routes at the root too (role namesrv). */
  namesrvAtRoot?: boolean;
  /** The effective configuration, as plain JSON-able data. */
  config?: () => unknown;
  /** The admin token in force ("" = none), read per request (./auth.ts). Absent = "". */
  token?: () => string;
  /** POST /config/reload: what SIGHUP does; resolves with the outcome. */
  reload?: () => Promise<AdminReloadOutcome>;
}

/** runtime-config.ts's ReloadOutcome, as far as the API shows it. */
export type AdminReloadOutcome =
  { status: "invalid"; problems: string[] } | { status: "applied"; changes: readonly unknown[] } | { status: "failed"; error: string };

export function buildAdminApp(deps: AdminAppDeps): Hono {
  const app = new Hono();
  app.use("*", adminAuth(deps.token ?? (() => "")));
  app.get("/health", (c) => {
    // Where the process's memory is: RSS also counts touched pages of mapped store files.
    const m = process.memoryUsage();
    const memory = {
      rssBytes: m.rss,
      heapUsedBytes: m.heapUsed,
      heapTotalBytes: m.heapTotal,
      externalBytes: m.external,
      arrayBuffersBytes: m.arrayBuffers,
    };
    return c.json({ status: "ok", role: deps.role, version: deps.version, uptimeMs: Date.now() - deps.startedAt, memory });
  });
  const config = deps.config;
  if (config) app.get("/config", (c) => c.json(config()));
  const reload = deps.reload;
  if (reload) {
    app.post("/config/reload", async (c) => {
      const r = await reload();
      if (r.status === "invalid") throw new ApiError("RELOAD_REFUSED", { detail: r.problems.join("; ") });
      if (r.status === "failed") throw new ApiError("INTERNAL", { detail: r.error });
      return c.json(r);
    });
  }
  app.route("/", metricsRoutes({ broker: deps.broker, namesrv: deps.namesrv }));
  if (deps.broker) app.route("/", brokerRoutes(deps.broker));
  if (deps.namesrv) {
    const routes = namesrvRoutes(deps.namesrv);
    app.route("/namesrv", routes);
    if (deps.namesrvAtRoot) app.route("/", routes);
  }
  const respond = (c: Context, err: ApiError) => {
    if (err.status === 401) c.header("WWW-Authenticate", 'Bearer realm="rocketbun-admin"');
    return c.json({ error: { code: err.code, message: err.message } }, err.status as ContentfulStatusCode);
  };
  app.notFound((c) => respond(c, new ApiError("NOT_FOUND", { path: c.req.path })));
  app.onError((e, c) => respond(c, e instanceof ApiError ? e : new ApiError("INTERNAL", { detail: e.message })));
  return app;
}

export interface AdminServer {
  port: number;
  stop(): void;
}

/** The certificate and key of an HTTPS admin port (the remoting ports' own, src/common/tls.ts). */
export interface AdminTls {
  /** The PEM texts in force. */
  pem(): { cert: string; key: string; passphrase?: string };
  /** Called after a reload that changed them. */
  onChange(listener: () => void): void;
}

/**
 * Serves the app over HTTP, or over HTTPS when `tls` is given. New certificates (SIGHUP) are
 * served by a new server on the same port: Bun.serve keeps the TLS options it was started with,
 * and an admin API can afford the moment between the two.
 */
export function startAdminServer(app: Hono, host: string, port: number, tls?: AdminTls): AdminServer {
  const serve = (p: number) => Bun.serve({ hostname: host, port: p, fetch: app.fetch, ...(tls ? { tls: tls.pem() } : {}) });
  let server = serve(port);
  const bound = server.port ?? port;
  let stopped = false;
  tls?.onChange(() => {
    if (stopped) return;
    void server.stop(false);
    server = serve(bound);
  });
  return {
    port: bound,
    stop: () => {
      stopped = true;
      void server.stop(true);
    },
  };
}
