import { describe, expect, test } from "bun:test";
import type { BrokerInfo } from "../broker/index.ts";
import type { NamesrvInfo } from "../namesrv/index.ts";
import { buildAdminApp } from "./app.ts";

type RequestStatsSnapshot = ReturnType<NamesrvInfo["requestStats"]>;

/** What a stats hook reports after one GET_ROUTEINFO_BY_TOPIC answered SUCCESS in 5 µs. */
const namesrvStats: RequestStatsSnapshot = {
  sinceMs: 1,
  codes: [
    {
      code: 105,
      name: "GET_ROUTEINFO_BY_TOPIC",
      count: 1,
      errors: 0,
      responses: { SUCCESS: 1 },
      latency: { buckets: [{ leMs: 0.008, count: 1 }], sumMs: 0.005, p50Ms: 0.004, p99Ms: 0.008 },
    },
  ],
};

const info: NamesrvInfo = {
  cluster: () => ({ brokerAddrTable: {}, clusterAddrTable: { C: ["broker-a"] } }),
  brokers: () => [],
  topics: () => ["T"],
  topicRoute: (t) =>
    t === "T"
      ? {
          queueDatas: [{ brokerName: "broker-a", readQueueNums: 4, writeQueueNums: 4, perm: 6, topicSysFlag: 0 }],
          brokerDatas: [{ cluster: "C", brokerName: "broker-a", brokerAddrs: { "0": "127.0.0.1:10911" } }],
          filterServerTable: {},
        }
      : null,
  requestStats: () => namesrvStats,
  connections: () => 0,
};

describe("admin app (in process)", () => {
  const app = buildAdminApp({ role: "namesrv", version: "9.9.9", startedAt: Date.now(), namesrv: info, namesrvAtRoot: true });

  test("/health", async () => {
    const r = await app.request("/health");
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ status: "ok", role: "namesrv", version: "9.9.9" });
  });

  test("name server routes at the root and under /namesrv", async () => {
    for (const prefix of ["", "/namesrv"]) {
      expect(await (await app.request(`${prefix}/topics`)).json()).toEqual({ topics: ["T"] });
      expect(await (await app.request(`${prefix}/cluster`)).json()).toMatchObject({ clusterAddrTable: { C: ["broker-a"] } });
      expect(await (await app.request(`${prefix}/brokers`)).json()).toEqual({ brokers: [] });
      const route = await app.request(`${prefix}/topics/T/route`);
      expect(((await route.json()) as { queueDatas: unknown[] }).queueDatas).toHaveLength(1);
    }
  });

  test("errors are 4xx JSON with a stable code", async () => {
    const missing = await app.request("/topics/nope/route");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: { code: "TOPIC_NOT_EXIST", message: "no route for topic nope" } });
    const nf = await app.request("/nothing/here");
    expect(nf.status).toBe(404);
    expect(((await nf.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");
  });

  test("standalone keeps name server routes under /namesrv only", async () => {
    const s = buildAdminApp({ role: "standalone", version: "1", startedAt: Date.now(), namesrv: info });
    expect((await s.request("/namesrv/topics")).status).toBe(200);
    expect((await s.request("/topics/T/route")).status).toBe(404);
  });
});

describe("GET /stats/requests", () => {
  test("name server: the stats hook's snapshot as JSON, at the root and under /namesrv", async () => {
    const app = buildAdminApp({ role: "namesrv", version: "1", startedAt: 0, namesrv: info, namesrvAtRoot: true });
    for (const prefix of ["", "/namesrv"]) {
      const r = await app.request(`${prefix}/stats/requests`);
      expect(r.status).toBe(200);
      expect(await r.json()).toEqual(namesrvStats);
    }
  });

  test("standalone: the broker's at the root, the name server's under /namesrv", async () => {
    const brokerStats: RequestStatsSnapshot = { sinceMs: 2, codes: [{ ...namesrvStats.codes[0]!, code: 310, name: "SEND_MESSAGE_V2" }] };
    // Only the route under test reads the broker; the other info functions are never called.
    const broker = { requestStats: () => brokerStats } as Partial<BrokerInfo> as BrokerInfo;
    const app = buildAdminApp({ role: "standalone", version: "1", startedAt: 0, namesrv: info, broker });
    expect(await (await app.request("/stats/requests")).json()).toEqual(brokerStats);
    expect(await (await app.request("/namesrv/stats/requests")).json()).toEqual(namesrvStats);
  });
});

describe("GET /config", () => {
  test("serves what the config owner returns, read-only", async () => {
    const app = buildAdminApp({ role: "namesrv", version: "1", startedAt: 0, namesrv: info, config: () => ({ config: { logLevel: "info" } }) });
    expect(await (await app.request("/config")).json()).toEqual({ config: { logLevel: "info" } });
    // Without a token a method that changes state is refused before routing (403), with one it is routed (404).
    expect((await app.request("/config", { method: "PUT" })).status).toBe(403);
    const withToken = buildAdminApp({ role: "namesrv", version: "1", startedAt: 0, namesrv: info, token: () => "t0ken", config: () => ({}) });
    expect((await withToken.request("/config", { method: "PUT", headers: { Authorization: "Bearer t0ken" } })).status).toBe(404);
  });
});

describe("admin token (auth.ts)", () => {
  let token = "";
  let reloads = 0;
  const app = buildAdminApp({
    role: "namesrv",
    version: "1",
    startedAt: 0,
    namesrv: info,
    config: () => ({ ok: true }),
    token: () => token,
    reload: async () => {
      reloads++;
      return { status: "applied", changes: [] };
    },
  });
  const get = (path: string, auth?: string) => app.request(path, auth === undefined ? {} : { headers: { Authorization: auth } });
  const post = (path: string, auth?: string) =>
    app.request(path, { method: "POST", ...(auth === undefined ? {} : { headers: { Authorization: auth } }) });

  test("no token configured: reads are open, a write is 403 with a JSON error naming the keys", async () => {
    token = "";
    expect((await get("/config")).status).toBe(200);
    const r = await post("/config/reload");
    expect(r.status).toBe(403);
    const body = (await r.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("ADMIN_TOKEN_NOT_CONFIGURED");
    expect(body.error.message).toContain("admin.token");
    expect(reloads).toBe(0);
  });

  test("a token configured: /health open; missing or wrong token 401 with WWW-Authenticate; right token passes", async () => {
    token = "s3cret-Token_1";
    expect((await get("/health")).status).toBe(200);
    for (const auth of [undefined, "Bearer wrong", "Basic czNjcmV0", "Bearer", "Bearer s3cret-Token_", "Bearer s3cret-Token_1x"]) {
      const r = await get("/config", auth);
      expect({ auth, status: r.status }).toEqual({ auth, status: 401 });
      expect(r.headers.get("www-authenticate")).toContain("Bearer");
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED");
      expect({ auth, status: (await post("/config/reload", auth)).status }).toEqual({ auth, status: 401 });
    }
    expect(reloads).toBe(0);
    expect((await get("/config", "Bearer s3cret-Token_1")).status).toBe(200);
    expect((await get("/config", "bearer   s3cret-Token_1")).status).toBe(200);
    const r = await post("/config/reload", "Bearer s3cret-Token_1");
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: "applied", changes: [] });
    expect(reloads).toBe(1);
    // An unknown path is 401 without the token (routes are not revealed), 404 with it.
    expect((await get("/nope")).status).toBe(401);
    expect((await get("/nope", "Bearer s3cret-Token_1")).status).toBe(404);
  });

  test("the token is read per request: rotating it applies at once", async () => {
    token = "first-token";
    expect((await get("/config", "Bearer first-token")).status).toBe(200);
    token = "second-token";
    expect((await get("/config", "Bearer first-token")).status).toBe(401);
    expect((await get("/config", "Bearer second-token")).status).toBe(200);
  });
});
