/**
 * The dashboard in process: the sampler's rates, lag and one-hour window; the login rules of
 * ../auth.ts for pages (cookie for reads only, redirect to the login page); the embedded files.
 */
import { describe, expect, test } from "bun:test";
import type { TrafficCounters } from "../../broker/index.ts";
import { buildAdminApp } from "../app.ts";
import { DASHBOARD_TOKEN_COOKIE } from "../auth.ts";
import { configEntries } from "./data.ts";
import { SAMPLES_KEPT, TrafficSampler, type SampledInfo } from "./sampler.ts";

function fakeInfo() {
  const state = {
    counters: { putByTopic: {}, getByTopicGroup: {} } as TrafficCounters,
    lag: new Map<string, number>(),
  };
  const info: SampledInfo = {
    traffic: () => state.counters,
    consumerGroups: () => [...state.lag.keys()],
    groupOffsets: (g) => [{ topic: "T", queueId: 0, consumerOffset: 0, brokerOffset: state.lag.get(g) ?? 0, lag: state.lag.get(g) ?? 0 }],
  };
  return { state, info };
}

describe("TrafficSampler", () => {
  test("rates are counter differences over the time between readings; lag is read as it is", () => {
    const { state, info } = fakeInfo();
    const s = new TrafficSampler(info);
    s.sample(1_000_000);
    expect(s.history().times).toEqual([]); // one reading: no rate yet
    state.counters = { putByTopic: { A: 100, B: 5 }, getByTopicGroup: { "A@g1": 40, "A@g2": 60 } };
    state.lag.set("g1", 60);
    s.sample(1_010_000);
    state.counters = { putByTopic: { A: 100, B: 5, C: 20 }, getByTopicGroup: { "A@g1": 40, "A@g2": 60 } };
    state.lag.set("g2", 3);
    s.sample(1_030_000); // a late tick: 20 s
    const h = s.history();
    expect(h.times).toEqual([1010, 1030]);
    expect(h.inTps).toEqual({ A: [10, 0], B: [0.5, 0], C: [null, 1] });
    expect(h.outTps).toEqual({ A: [10, 0] });
    expect(h.lag).toEqual({ g1: [60, 60], g2: [null, 3] });
  });

  test("keeps the last hour: SAMPLES_KEPT points, oldest dropped first; a reading that failed is skipped", () => {
    const { state, info } = fakeInfo();
    const s = new TrafficSampler(info);
    for (let i = 0; i <= SAMPLES_KEPT + 5; i++) {
      state.counters = { putByTopic: { A: i * 10 }, getByTopicGroup: {} };
      s.sample(i * 10_000);
    }
    const h = s.history();
    expect(h.times.length).toBe(SAMPLES_KEPT);
    expect(h.times[0]).toBe(60);
    expect(h.inTps.A?.every((v) => v === 1)).toBe(true);
    const broken = new TrafficSampler({
      ...info,
      traffic: () => {
        throw new Error("broker not started");
      },
    });
    const stop = broken.start();
    stop();
    expect(broken.history().times).toEqual([]);
  });
});

describe("dashboard pages and the admin token", () => {
  const app = buildAdminApp({ role: "namesrv", version: "t", startedAt: 0, token: () => "s3cret", config: () => ({ liveKeys: [], config: {} }) });
  const get = (path: string, headers: Record<string, string> = {}) => app.request(path, { headers });

  test("without the token a page redirects to the login page; the login page and the files are open", async () => {
    const r = await get("/ui/config");
    expect(r.status).toBe(302);
    expect(r.headers.get("location")).toBe("/ui/login?next=%2Fui%2Fconfig");
    expect((await get("/")).headers.get("location")).toBe("/ui/login?next=%2F");
    const login = await get("/ui/login");
    expect(login.status).toBe(200);
    expect(login.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await login.text()).toContain('name="token"');
    const js = await get("/ui/assets/dashboard.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toContain("javascript");
    expect((await get("/ui/assets/uplot.js")).status).toBe(200);
    expect((await get("/ui/assets/nope.js")).status).toBe(404);
    // The JSON API still answers 401, not a redirect.
    expect((await get("/config")).status).toBe(401);
  });

  test("the cookie lets reads through, a wrong one does not; a change of state needs the header", async () => {
    const cookie = { Cookie: `${DASHBOARD_TOKEN_COOKIE}=s3cret` };
    expect((await get("/ui/config", cookie)).status).toBe(200);
    expect((await get("/config", cookie)).status).toBe(200);
    expect((await get("/ui/session", cookie)).status).toBe(200);
    expect((await get("/config", { Cookie: `${DASHBOARD_TOKEN_COOKIE}=wrong` })).status).toBe(401);
    expect((await get("/ui/config", { Cookie: `${DASHBOARD_TOKEN_COOKIE}=wrong` })).status).toBe(302);
    const post = await app.request("/config/reload", { method: "POST", headers: cookie });
    expect(post.status).toBe(401);
    expect((await get("/ui/session", { Authorization: "Bearer s3cret" })).status).toBe(200);
  });

  test("config rows: dotted keys, a live key kept whole", () => {
    const d = configEntries({
      file: "/etc/x.yaml",
      liveKeys: ["broker.pullHoldMaxMs"],
      config: { broker: { pullHoldMaxMs: 5, listen: { host: "h" } } },
    });
    expect(d).toEqual({
      file: "/etc/x.yaml",
      entries: [
        { key: "broker.pullHoldMaxMs", value: 5, live: true },
        { key: "broker.listen.host", value: "h", live: false },
      ],
    });
  });
});
