/**
 * The admin HTTP API (Hono with @hono/zod-openapi), built from the info functions of the
 * components a process runs. Every route is declared with zod schemas (src/admin/schemas.ts):
 * requests are validated against them (a bad request → 400 in the one error shape) and
 * /openapi.json (OpenAPI 3.0) is generated from them; /docs renders that document as HTML.
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
 *   dashboard:   / and /ui/... (HTML pages), GET /clients, GET /stats/history (routes/dashboard.tsx)
 * Writes call the functions the wire requests' processors call (BrokerAdmin, NamesrvAdmin).
 * In standalone, the name server routes live under /namesrv/ so that broker routes (which arrive
 * with the broker) own the root paths.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context, Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { BrokerInfo } from "../broker/index.ts";
import type { NamesrvInfo } from "../namesrv/index.ts";
import { adminAuth } from "./auth.ts";
import { docsPage } from "./docs.ts";
import { ApiError } from "./errors.ts";
import { brokerRoutes } from "./routes/broker.ts";
import { brokerWriteRoutes } from "./routes/broker-write.ts";
import { messageRoutes } from "./routes/messages.ts";
import { namesrvRoutes } from "./routes/namesrv.ts";
import { dashboardRoutes } from "./routes/dashboard.tsx";
import { processRoutes, type ProcessDeps } from "./routes/process.ts";

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

/** A request that does not match its route's schema: 400 naming each problem (where, what). */
function validationHook(result: {
  success: boolean;
  target: string;
  error?: { issues: readonly { path: readonly PropertyKey[]; message: string }[] };
}): void {
  if (result.success) return;
  const where = { param: "path", query: "query", json: "body", header: "header", form: "form", cookie: "cookie" }[result.target] ?? result.target;
  const problems = (result.error?.issues ?? []).map((i) => `${where}${i.path.length > 0 ? ` ${i.path.map(String).join(".")}` : ""}: ${i.message}`);
  throw new ApiError("BAD_REQUEST", { detail: problems.join("; ") || `invalid ${where}` });
}

/** PATCH /config's door: the broker's UPDATE_BROKER_CONFIG when a broker runs, else the name server's. */
function configUpdater(deps: AdminAppDeps): ProcessDeps["updateConfig"] {
  if (deps.broker) return deps.broker.admin?.().updateConfig;
  return deps.namesrv?.admin?.().updateConfig;
}

function respond(c: Context, err: ApiError): Response {
  if (err.status === 401) c.header("WWW-Authenticate", 'Bearer realm="rocketbun-admin"');
  return c.json({ error: { code: err.code, message: err.message } }, err.status as ContentfulStatusCode);
}

/** Hono's own refusals (malformed JSON, a body that is not JSON) in the one error shape. */
function apiErrorOf(e: Error): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof HTTPException && e.status === 415) return new ApiError("UNSUPPORTED_MEDIA_TYPE");
  if (e instanceof HTTPException && e.status < 500) return new ApiError("BAD_REQUEST", { detail: e.message || `HTTP ${e.status}` });
  return new ApiError("INTERNAL", { detail: e.message });
}

export function buildAdminApp(deps: AdminAppDeps): OpenAPIHono {
  const app = new OpenAPIHono({ defaultHook: validationHook });
  app.use("*", adminAuth(deps.token ?? (() => "")));
  const { role, version, startedAt, config, reload } = deps;
  const updateConfig = configUpdater(deps);
  app.route(
    "/",
    processRoutes({
      role,
      version,
      startedAt,
      ...(config ? { config } : {}),
      ...(reload ? { reload } : {}),
      ...(updateConfig ? { updateConfig } : {}),
    }),
  );
  // The routers. Each is mounted here, once; another one (metrics) joins this list.
  const broker = deps.broker;
  if (broker) {
    app.route("/", brokerRoutes(broker));
    const admin = broker.admin?.();
    if (admin) app.route("/", brokerWriteRoutes(broker, admin)).route("/", messageRoutes(admin));
  }
  if (deps.namesrv) {
    const routes = namesrvRoutes(deps.namesrv);
    app.route("/namesrv", routes);
    if (deps.namesrvAtRoot) app.route("/", routes);
  }
  app.route("/", dashboardRoutes(deps));
  describe(app, version);
  app.notFound((c) => respond(c, new ApiError("NOT_FOUND", { path: c.req.path })));
  app.onError((e, c) => respond(c, apiErrorOf(e)));
  return app;
}

/** GET /openapi.json and GET /docs, from the routes declared above (built once, on first use). */
function describe(app: OpenAPIHono, version: string): void {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "admin.token (or admin.tokenFile): every endpoint but /health needs it when set; writes need one to be set",
  });
  let doc: ReturnType<OpenAPIHono["getOpenAPIDocument"]> | undefined;
  const document = () =>
    (doc ??= app.getOpenAPIDocument({
      openapi: "3.0.3",
      info: { title: "RocketBun admin API", version, description: "The admin HTTP API of a RocketBun process (name server, broker or both)." },
      security: [{ bearerAuth: [] }],
    }));
  app.get("/openapi.json", (c) => c.json(document()));
  app.get("/docs", (c) => c.html(docsPage(document())));
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
export function startAdminServer(app: Hono | OpenAPIHono, host: string, port: number, tls?: AdminTls): AdminServer {
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
