/**
 * The admin HTTP API (Hono with @hono/zod-openapi), built from the info functions of the
 * components a process runs. Every route is declared with zod schemas (src/admin/schemas.ts):
 * requests are validated against them (a bad request → 400 in the one error shape) and
 * /openapi.json (OpenAPI 3.0) is generated from them; /docs renders that document as HTML.
 * The app is assembled in ./openapi-app.ts — the one place a router is mounted — and loaded on
 * the first request: zod and the generator cost ~40 ms of parsing that a start (or --version)
 * need not wait for.
 * Layout:
 *   GET /health                      every role (never needs the admin token; see auth.ts for the rest)
 *   GET /config, PATCH /config       every role: the configuration in force; change live keys
 *                                    (UPDATE_BROKER_CONFIG, or UPDATE_NAMESRV_CONFIG on a name server alone)
 *   POST /config/reload              every role: what SIGHUP does
 *   GET /openapi.json, GET /docs     every role: the API's own description
 *   name server: /cluster /brokers /topics /topics/{topic}/route /stats/requests, DELETE /topics/{topic}
 *                (also under /namesrv/...)
 *   broker:      /broker /topics /topics/{topic} /groups /groups/{group} /ha /transactions /stats/requests
 *                (routes/broker.ts); topic and group writes, reset-offset (routes/broker-write.ts);
 *                /messages (routes/messages.ts)
 *   /stats/requests: requests by request code since start (count, errors, by response code, a
 *                    latency histogram with cumulative `le` buckets, sum, p50/p99), from the
 *                    request pipeline's stats hook; the broker's counts both of its ports
 *   GET /metrics                     every role: Prometheus text format (routes/metrics.ts, mounted in openapi-app.ts)
 *   dashboard:   / and /ui/... (HTML pages), GET /clients, GET /stats/history (routes/dashboard.tsx)
 * Writes call the functions the wire requests' processors call (BrokerAdmin, NamesrvAdmin).
 * In standalone, the name server routes live under /namesrv/ so that broker routes (which arrive
 * with the broker) own the root paths.
 */
import { Hono } from "hono";
import type { BrokerInfo } from "../broker/index.ts";
import type { NamesrvInfo } from "../namesrv/index.ts";
import { TrafficSampler } from "./dashboard/sampler.ts";
import { ApiError } from "./errors.ts";

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

/**
 * The admin app: a thin Hono app that hands every request to the OpenAPI app, built from `deps`
 * on the first request (./openapi-app.ts). A failure to load it is a bug, answered as INTERNAL.
 */
export function buildAdminApp(deps: AdminAppDeps): Hono {
  type Fetch = (req: Request, env: object | undefined) => Response | Promise<Response>;
  let real: Promise<Fetch> | undefined;
  // The dashboard's last hour is sampled from the start, not from the first request.
  const sampler = deps.broker ? new TrafficSampler(deps.broker) : undefined;
  sampler?.start();
  const load = () =>
    (real ??= import("./openapi-app.ts").then((m) => {
      const api = m.buildOpenApiApp(deps, sampler);
      return (req: Request, env: object | undefined) => api.fetch(req, env);
    }));
  const app = new Hono();
  // env: Bun.serve's server (the peer address, ./peer.ts); undefined in app.request().
  app.all("*", async (c) => (await load())(c.req.raw, c.env as object | undefined));
  app.onError((e, c) => {
    const err = new ApiError("INTERNAL", { detail: e.message });
    return c.json({ error: { code: err.code, message: err.message } }, 500);
  });
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
