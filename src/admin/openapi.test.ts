import { describe, expect, test } from "bun:test";
import type { BrokerAdmin, BrokerInfo, TopicInput } from "../broker/index.ts";
import type { NamesrvInfo } from "../namesrv/index.ts";
import { buildAdminApp } from "./app.ts";

/** A broker whose admin records what it was asked (only what these tests touch). */
function fakeBroker(): { info: BrokerInfo; upserts: TopicInput[] } {
  const upserts: TopicInput[] = [];
  const topics = new Map<string, TopicInput>();
  const admin = {
    upsertTopic: (t: TopicInput) => {
      upserts.push(t);
      topics.set(t.topicName, t);
      return null;
    },
    updateConfig: async () => ({ ok: true as const }),
  } as Partial<BrokerAdmin> as BrokerAdmin;
  const info = {
    topic: (name: string) => {
      const t = topics.get(name);
      return t ? { topicFilterType: "SINGLE_TAG" as const, topicSysFlag: 0, order: false, ...t } : undefined;
    },
    admin: () => admin,
  } as Partial<BrokerInfo> as BrokerInfo;
  return { info, upserts };
}

const namesrv = { topics: () => [], admin: () => ({ deleteTopic: () => true }) } as Partial<NamesrvInfo> as NamesrvInfo;

interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown[] }>>;
  components: { securitySchemes: Record<string, { type: string; scheme: string }> };
}

describe("/openapi.json and /docs", () => {
  const { info } = fakeBroker();
  const app = buildAdminApp({ role: "standalone", version: "1.2.3", startedAt: 0, broker: info, namesrv, config: () => ({}) });

  test("the document is generated from the routes: every operation, its error responses, bearer auth", async () => {
    const doc = (await (await app.request("/openapi.json")).json()) as OpenApiDoc;
    expect(doc.openapi).toBe("3.0.3");
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
    const ops = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`));
    for (const op of [
      "POST /topics",
      "PUT /topics/{topic}",
      "DELETE /topics/{topic}",
      "POST /groups",
      "PUT /groups/{group}",
      "DELETE /groups/{group}",
      "POST /groups/{group}/reset-offset",
      "POST /messages",
      "GET /messages",
      "GET /messages/{msgId}",
      "PATCH /config",
      "DELETE /namesrv/topics/{topic}",
    ]) {
      expect(ops).toContain(op);
    }
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        // /health is the one operation without the token; every other one documents its 401.
        if (path === "/health") expect(op.security).toEqual([]);
        else expect({ op: `${method} ${path}`, has401: "401" in op.responses }).toEqual({ op: `${method} ${path}`, has401: true });
        if (method !== "get") expect({ op: `${method} ${path}`, has403: "403" in op.responses }).toEqual({ op: `${method} ${path}`, has403: true });
      }
    }
  });

  test("/docs lists every operation of the document, with no external asset", async () => {
    const r = await app.request("/docs");
    expect(r.headers.get("content-type")).toContain("text/html");
    const html = await r.text();
    const doc = (await (await app.request("/openapi.json")).json()) as OpenApiDoc;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item)) expect(html).toContain(`<code>${method.toUpperCase()} ${path.replace(/&/g, "&amp;")}</code>`);
    }
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html).not.toContain("<script");
    expect(html).toContain("topicName");
  });
});

describe("validation and routing errors in the one error shape", () => {
  test("a body that does not match the schema is 400 naming the field; nothing reaches the broker", async () => {
    const { info, upserts } = fakeBroker();
    const app = buildAdminApp({ role: "master", version: "1", startedAt: 0, broker: info, token: () => "tok" });
    const auth = { Authorization: "Bearer tok", "Content-Type": "application/json" };
    const bad = await app.request("/topics", { method: "POST", headers: auth, body: JSON.stringify({ topicName: "T", readQueueNums: "eight" }) });
    expect(bad.status).toBe(400);
    const err = ((await bad.json()) as { error: { code: string; message: string } }).error;
    expect(err.code).toBe("BAD_REQUEST");
    expect(err.message).toContain("body readQueueNums");
    expect((await app.request("/topics", { method: "POST", headers: auth, body: "{" })).status).toBe(400);
    const noBody = await app.request("/topics/T", { method: "PUT", headers: { Authorization: "Bearer tok" } });
    expect(noBody.status).toBe(400);
    const text = await app.request("/topics", { method: "POST", headers: { Authorization: "Bearer tok", "Content-Type": "text/plain" }, body: "x" });
    expect(((await text.json()) as { error: { code: string } }).error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    expect(upserts).toEqual([]);

    const ok = await app.request("/topics", { method: "POST", headers: auth, body: JSON.stringify({ topicName: "T" }) });
    expect(ok.status).toBe(201);
    // mqadmin's defaults for what the body leaves out.
    expect(upserts).toEqual([
      { topicName: "T", readQueueNums: 8, writeQueueNums: 8, perm: 6, topicFilterType: "SINGLE_TAG", topicSysFlag: 0, order: false },
    ]);
  });

  test("a path without the method is 405 with Allow; an unknown path 404", async () => {
    const app = buildAdminApp({ role: "standalone", version: "1", startedAt: 0, broker: fakeBroker().info, namesrv, token: () => "tok" });
    const h = { Authorization: "Bearer tok" };
    const r = await app.request("/messages/abc", { method: "DELETE", headers: h });
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toBe("GET, HEAD");
    expect((await app.request("/topics/T", { method: "PATCH", headers: h })).headers.get("allow")).toBe("GET, PUT, DELETE, HEAD");
    expect((await app.request("/no/such/path", { headers: h })).status).toBe(404);
  });
});
