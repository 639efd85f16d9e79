/**
 * Routes of every role: /health, the configuration (GET /config, PATCH /config, POST
 * /config/reload). PATCH /config is UPDATE_BROKER_CONFIG (UPDATE_NAMESRV_CONFIG on a name server
 * alone): the JSON object becomes the same `key=value` properties text and goes to the same owner
 * (src/runtime-config.ts), so a key is live for both doors or for neither.
 */
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { ApiError } from "../errors.ts";
import { peerAddr } from "../peer.ts";
import { errors, Int, json, jsonBody } from "../schemas.ts";

const tags = ["process"];

/** What the config owner answers a change (remoting's ConfigUpdateOutcome, as far as this API reads it). */
type UpdateOutcome = { ok: true } | { ok: false; remark: string; permission: boolean };

const Health = z
  .object({
    status: z.literal("ok"),
    role: z.string(),
    version: z.string(),
    uptimeMs: Int,
    memory: z.object({ rssBytes: Int, heapUsedBytes: Int, heapTotalBytes: Int, externalBytes: Int, arrayBuffersBytes: Int }),
  })
  .openapi("Health");

const ConfigView = z
  .record(z.string(), z.unknown())
  .openapi("ConfigInForce", { description: "file, dataVersion, liveKeys (what PATCH /config and SIGHUP can change) and config (secrets REDACTED)" });

const ConfigPatch = z
  .record(
    z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9_.]+$/),
    z.union([z.string().max(4096), z.number(), z.boolean(), z.array(z.string().max(512)).max(64)]),
  )
  .openapi("ConfigPatch", {
    description:
      "keys as UPDATE_BROKER_CONFIG takes them: RocketMQ's name (maxMessageSize), RocketBun's (maxMessageSizeBytes) or the dotted path " +
      "(broker.maxMessageSizeBytes); values in that name's unit; lists (namesrvAddr) as arrays",
    example: { pullHoldMaxMs: 20000 },
  });

const ReloadOutcome = z
  .object({
    status: z.literal("applied"),
    changes: z.array(z.object({ key: z.string(), from: z.unknown(), to: z.unknown(), live: z.boolean() })),
  })
  .openapi("ReloadOutcome");

export interface ProcessDeps {
  role: string;
  version: string;
  startedAt: number;
  config?: () => unknown;
  reload?: () => Promise<
    { status: "invalid"; problems: string[] } | { status: "applied"; changes: readonly unknown[] } | { status: "failed"; error: string }
  >;
  /** UPDATE_BROKER_CONFIG (or UPDATE_NAMESRV_CONFIG) with a properties text. */
  updateConfig?: (properties: string, from: string) => Promise<UpdateOutcome>;
}

const routes = {
  health: createRoute({
    method: "get",
    path: "/health",
    tags,
    summary: "liveness, role, version, memory (never needs the admin token)",
    security: [],
    responses: { 200: json(Health, "up") },
  }),
  config: createRoute({
    method: "get",
    path: "/config",
    tags,
    summary: "the configuration in force",
    responses: { 200: json(ConfigView, "the configuration"), ...errors() },
  }),
  patch: createRoute({
    method: "patch",
    path: "/config",
    tags,
    summary: "change live configuration keys (UPDATE_BROKER_CONFIG)",
    description: "All or nothing: an unknown key, a bad value or a key that needs a restart refuses the whole change (400, naming the keys).",
    request: { body: jsonBody(ConfigPatch, "keys and their new values") },
    responses: { 200: json(ConfigView, "applied: the configuration now in force"), ...errors(400, 403, 415) },
  }),
  reload: createRoute({
    method: "post",
    path: "/config/reload",
    tags,
    summary: "what SIGHUP does: re-read the config file and apply its live keys",
    responses: { 200: json(ReloadOutcome, "reloaded"), ...errors(403, 422) },
  }),
};

/** The properties text of a patch; a key or value that would break its line is refused (400). */
export function propertiesText(patch: Record<string, string | number | boolean | string[]>): string {
  let text = "";
  for (const [k, v] of Object.entries(patch)) {
    const value = Array.isArray(v) ? v.join(";") : String(v);
    if (/[\r\n]/.test(value) || (Array.isArray(v) && v.some((x) => x.includes(";")))) {
      throw new ApiError("BAD_REQUEST", { detail: `${k}: a value may not contain a line break (list items no ';')` });
    }
    text += `${k}=${value}\n`;
  }
  return text;
}

function health(deps: ProcessDeps) {
  // Where the process's memory is: RSS also counts touched pages of mapped store files.
  const m = process.memoryUsage();
  const memory = {
    rssBytes: m.rss,
    heapUsedBytes: m.heapUsed,
    heapTotalBytes: m.heapTotal,
    externalBytes: m.external,
    arrayBuffersBytes: m.arrayBuffers,
  };
  return { status: "ok" as const, role: deps.role, version: deps.version, uptimeMs: Math.max(0, Date.now() - deps.startedAt), memory };
}

export function processRoutes(deps: ProcessDeps): OpenAPIHono {
  const app = new OpenAPIHono();
  app.openapi(routes.health, (c) => c.json(health(deps), 200));
  const { config, reload, updateConfig } = deps;
  if (config) app.openapi(routes.config, (c) => c.json(config() as Record<string, unknown>, 200));
  if (config && updateConfig) {
    app.openapi(routes.patch, async (c) => {
      const r = await updateConfig(propertiesText(c.req.valid("json")), peerAddr(c));
      if (!r.ok) throw new ApiError(r.permission ? "CONFIG_NEEDS_RESTART" : "BAD_REQUEST", { detail: r.remark });
      return c.json(config() as Record<string, unknown>, 200);
    });
  }
  if (reload) {
    app.openapi(routes.reload, async (c) => {
      const r = await reload();
      if (r.status === "invalid") throw new ApiError("RELOAD_REFUSED", { detail: r.problems.join("; ") });
      if (r.status === "failed") throw new ApiError("INTERNAL", { detail: r.error });
      return c.json({ status: r.status, changes: r.changes as { key: string; from: unknown; to: unknown; live: boolean }[] }, 200);
    });
  }
  return app;
}
