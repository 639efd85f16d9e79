/**
 * The admin API itself: an OpenAPIHono app with every router mounted, the one error path, 405s,
 * and the document (/openapi.json, /docs). Loaded by ./app.ts on the first request, so a process
 * (and `--version`) does not parse zod and the OpenAPI generator before it has started.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { adminAuth } from "./auth.ts";
import { docsPage } from "./docs.ts";
import { ApiError } from "./errors.ts";
import { brokerRoutes } from "./routes/broker.ts";
import { brokerWriteRoutes } from "./routes/broker-write.ts";
import { messageRoutes } from "./routes/messages.ts";
import { dashboardRoutes } from "./routes/dashboard.tsx";
import { metricsRoutes } from "./routes/metrics.ts";
import { namesrvRoutes } from "./routes/namesrv.ts";
import { processRoutes, type ProcessDeps } from "./routes/process.ts";
import type { AdminAppDeps } from "./app.ts";
import type { TrafficSampler } from "./dashboard/sampler.ts";

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

export function buildOpenApiApp(deps: AdminAppDeps, sampler?: TrafficSampler): OpenAPIHono {
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
  // The routers. Each is mounted here, once. /metrics is plain text for Prometheus, outside the
  // OpenAPI document (its format is Prometheus's, not a JSON schema's).
  app.route("/", metricsRoutes({ broker: deps.broker, namesrv: deps.namesrv }));
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
  // The dashboard's pages (/ and /ui/...) and the two JSON reads it adds: outside the document.
  app.route("/", dashboardRoutes(deps, sampler));
  describe(app, version);
  const allowed = methodsByPath(app);
  app.notFound((c) => {
    const allow = allowed(c.req.path);
    if (allow.length === 0) return respond(c, new ApiError("NOT_FOUND", { path: c.req.path }));
    c.header("Allow", allow.join(", "));
    return respond(c, new ApiError("METHOD_NOT_ALLOWED"));
  });
  app.onError((e, c) => respond(c, apiErrorOf(e)));
  return app;
}

/**
 * The methods the routes declare for a path (405 with Allow instead of 404 when a path exists
 * but not with the request's method). Built on first use, once every route is in place.
 */
function methodsByPath(app: OpenAPIHono): (path: string) => string[] {
  let table: { re: RegExp; method: string }[] | undefined;
  return (path) => {
    table ??= app.routes
      .filter((r) => r.method !== "ALL")
      .map((r) => ({ re: new RegExp(`^${r.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\/:[^/]+/g, "/[^/]+")}/?$`), method: r.method }));
    const methods = new Set(table.filter((t) => t.re.test(path)).map((t) => t.method));
    if (methods.has("GET")) methods.add("HEAD");
    return [...methods];
  };
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
