/**
 * The dashboard as a person uses it (issue #16 point 2): a standalone binary with an admin token
 * and data in it (a topic with keyed messages, a consumer group with a backlog, an online group, a
 * dead letter), and headless Chromium (Debian's `chromium`, driven by playwright-core) that logs
 * in, opens every page, resets a group's lag, looks messages up by key and by id, resends a dead
 * letter and edits a live config key. Any console error, page error, failed request or HTTP
 * answer >= 400 fails the test. Screenshots go to test/artifacts/dashboard/ (not committed);
 * DASHBOARD_DOCS_SCREENSHOT=1 also writes docs/dashboard.png, the README's picture.
 *
 * Skips with one printed line where Chromium or playwright-core is missing, fails under CI=true.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { Env, uniq, until } from "../client/support.ts";
import { ROOT } from "../harness/binary.ts";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARTIFACTS = join(ROOT, "test", "artifacts", "dashboard");
const TOKEN = "dash-Token_for-tests";

type Playwright = typeof import("playwright-core");

/** playwright-core and Chromium, or null after printing why not (an error under CI=true). */
async function browserTools(): Promise<Playwright | null> {
  let pw: Playwright | null = null;
  try {
    pw = await import("playwright-core");
  } catch {
    pw = null;
  }
  const missing = [...(pw ? [] : ["the npm package playwright-core"]), ...(existsSync(CHROMIUM) ? [] : [`Chromium at ${CHROMIUM}`])];
  if (missing.length === 0) return pw;
  const line = `dashboard: skipped, ${missing.join(" and ")} not installed (apt-get install chromium; npm ci)`;
  if (process.env.CI === "true") throw new Error(`${line} (CI=true: the suite must run)`);
  console.log(line);
  return null;
}

const pw = await browserTools();

/** What the browser reported that a working dashboard never causes. */
const problems: string[] = [];

let env: Env;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const names = { topic: uniq("DashOrders"), billing: uniq("DashBilling"), audit: uniq("DashAudit"), failing: uniq("DashRetry"), dlqTopic: "" };

const api = async <T>(path: string, init: RequestInit = {}): Promise<T> => {
  const r = await fetch(`${env.srv.adminUrl}${path}`, { ...init, headers: { Authorization: `Bearer ${TOKEN}`, ...(init.headers ?? {}) } });
  if (!r.ok) throw new Error(`${init.method ?? "GET"} ${path}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
};
const totalLag = async (group: string) => (await api<{ totalLag: number }>(`/groups/${encodeURIComponent(group)}`)).totalLag;
const held = async (topic: string) =>
  (await api<{ queues: { maxOffset: number }[] }>(`/topics/${encodeURIComponent(topic)}`)).queues.reduce((n, q) => n + q.maxOffset, 0);

/** A topic with keyed messages, a group 15 behind (offline), a group online, one dead letter. */
async function loadData(): Promise<void> {
  await env.createTopic(names.topic, 4);
  const producer = await env.producer();
  const send = (i: number) =>
    producer.send({ topic: names.topic, body: JSON.stringify({ order: i }), tags: "TagA", keys: [`order-${i}`], properties: { region: "eu-1" } });
  for (let i = 0; i < 20; i++) await send(i);
  const billing = env.push({ group: names.billing, persistOffsetIntervalMs: 200 });
  let consumed = 0;
  billing.subscribe(names.topic, "*", () => {
    consumed++;
  });
  await billing.start();
  await until(
    async () => consumed >= 20 && (await api<{ queues: unknown[] }>(`/groups/${names.billing}`)).queues.length > 0,
    20_000,
    "billing consumed",
  );
  await until(async () => (await totalLag(names.billing)) === 0, 20_000, "billing's offsets committed");
  await billing.shutdown();
  for (let i = 20; i < 35; i++) await send(i);
  await until(async () => (await totalLag(names.billing)) === 15, 10_000, "a backlog of 15");

  const audit = env.push({ group: names.audit });
  audit.subscribe(names.topic, "*", () => {});
  await audit.start();

  const payments = uniq("DashPayments");
  await env.createTopic(payments, 1);
  const failing = env.push({ group: names.failing, maxReconsumeTimes: 0, persistOffsetIntervalMs: 200 });
  failing.subscribe(payments, "*", () => "retry");
  await failing.start();
  await producer.send({ topic: payments, body: "payment that fails", keys: ["pay-1"], properties: { attempt: "first" } });
  names.dlqTopic = `%DLQ%${names.failing}`;
  await until(async () => (await held(names.dlqTopic).catch(() => 0)) === 1, 20_000, "a dead letter");
  await failing.shutdown();
}

function watch(p: Page): void {
  p.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error on ${p.url()}: ${m.text()}`);
  });
  p.on("pageerror", (e) => problems.push(`page error on ${p.url()}: ${e.message}`));
  p.on("requestfailed", (r) => problems.push(`request failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText ?? ""}`));
  p.on("response", (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.request().method()} ${r.url()}`);
  });
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Opens a dashboard page, checks it rendered with no problem, and saves a screenshot. */
async function visit(path: string, name: string, mustShow: string[] = []): Promise<void> {
  const r = await page.goto(`${env.srv.adminUrl}${path}`);
  expect({ path, status: r?.status() }).toEqual({ path, status: 200 });
  await page.waitForLoadState("networkidle");
  const text = await page.locator("main").innerText();
  for (const s of mustShow) expect({ path, shows: text.includes(s) ? s : `(missing) ${s}` }).toEqual({ path, shows: s });
  await shot(name);
  expect(problems).toEqual([]);
}

describe.skipIf(pw === null)("dashboard in headless Chromium (compiled binary)", () => {
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    env = await Env.start({ config: { admin: { token: TOKEN } } });
    await loadData();
    browser = await pw!.chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    watch(page);
  }, 120_000);

  // Each test answers for what the browser reported while it ran.
  beforeEach(() => {
    problems.splice(0);
  });

  afterAll(async () => {
    await browser?.close();
    await env?.[Symbol.asyncDispose]();
  });

  test("a page without the token leads to the login page; the token logs in", async () => {
    await page.goto(`${env.srv.adminUrl}/ui/topics`);
    expect(new URL(page.url()).pathname).toBe("/ui/login");
    await shot("login");
    await page.fill("input[name=token]", TOKEN);
    await Promise.all([page.waitForURL((u) => u.pathname === "/ui/topics"), page.click("#login button")]);
    const cookie = (await context.cookies()).find((c) => c.name === "rocketbun_admin_token");
    expect(cookie?.sameSite).toBe("Strict");
    expect(problems).toEqual([]);
  });

  test("every page renders with the data in the cluster", async () => {
    await visit("/ui/", "cluster", ["broker-a", "master", "this process"]);
    await visit("/ui/topics", "topics", [names.topic]);
    await visit("/ui/topics?all=1", "topics-all", [names.dlqTopic, "TBW102"]);
    await visit(`/ui/topics/${encodeURIComponent(names.topic)}`, "topic", [names.billing, names.audit]);
    await visit("/ui/groups", "groups", [names.billing, names.audit]);
    await visit(`/ui/groups/${encodeURIComponent(names.audit)}`, "group-online", [names.topic, "Members"]);
    await visit("/ui/clients", "clients", [names.audit]);
    await visit("/ui/messages", "messages");
    await visit("/ui/dlq", "dlq-list", [names.failing]);
    await visit("/ui/transactions", "transactions", ["committed"]);
    await visit("/ui/config", "config", ["broker.pullHoldMaxMs"]);
  }, 60_000);

  test("a lag reset: the group's lag shown goes from 15 to 0", async () => {
    await visit(`/ui/groups/${encodeURIComponent(names.billing)}`, "group-before-reset");
    if (process.env.DASHBOARD_DOCS_SCREENSHOT === "1") await page.screenshot({ path: join(ROOT, "docs", "dashboard.png") });
    expect(await page.locator("#total-lag").innerText()).toBe("15");
    await page.selectOption("#reset-offset select[name=topic]", names.topic);
    await page.check("#reset-offset input[value=end]");
    await Promise.all([page.waitForEvent("load"), page.click("#reset-offset button")]);
    await page.waitForLoadState("networkidle");
    expect(await page.locator("#total-lag").innerText()).toBe("0");
    await shot("group-after-reset");
    expect(await totalLag(names.billing)).toBe(0);
    expect(problems).toEqual([]);
  });

  test("a message lookup by key, then by the id it showed: body and properties", async () => {
    await visit("/ui/messages", "messages");
    const byKey = page.locator("form[data-by=key]");
    await byKey.locator("input[name=topic]").fill(names.topic);
    await byKey.locator("input[name=key]").fill("order-7");
    await byKey.locator("button").click();
    const found = page.locator("#results .message");
    await found.first().waitFor();
    expect(await found.count()).toBe(1);
    expect(await found.locator("pre.body").innerText()).toBe('{"order":7}');
    const props = await found.locator("table").nth(1).innerText();
    for (const s of ["KEYS", "order-7", "TAGS", "TagA", "region", "eu-1"]) expect(props).toContain(s);
    await shot("lookup-key");
    const msgId = await found.locator("h3").innerText();
    expect(msgId).toMatch(/^[0-9A-F]{32}$/);

    const byId = page.locator("form[data-by=id]");
    await byId.locator("input[name=msgId]").fill(msgId);
    await byId.locator("button").click();
    await page.locator(`#results .message[data-msgid="${msgId}"]`).waitFor();
    expect(await page.locator("#results pre.body").innerText()).toBe('{"order":7}');
    await shot("lookup-id");
    expect(problems).toEqual([]);
  });

  test("a dead letter is browsed and resent to the group's retry topic", async () => {
    const retry = `%RETRY%${names.failing}`;
    const before = await held(retry);
    await visit(`/ui/dlq?group=${encodeURIComponent(names.failing)}`, "dlq");
    const letter = page.locator("#dlq-browser .message");
    await letter.first().waitFor();
    expect(await letter.locator("pre.body").innerText()).toBe("payment that fails");
    await letter.locator("button.resend").first().click();
    await until(async () => (await letter.locator(".result").innerText()).startsWith("Sent to"), 10_000, "the resend's answer");
    await shot("dlq-resent");
    expect(await held(retry)).toBe(before + 1);
    const resent = await api<{ messages: { body: { text: string }; properties: Record<string, string> }[] }>(
      `/messages?topic=${encodeURIComponent(retry)}&queueId=0&offset=${before}`,
    );
    expect(resent.messages[0]?.body.text).toBe("payment that fails");
    expect(resent.messages[0]?.properties.attempt).toBe("first");
    expect(problems).toEqual([]);
  });

  test("a live config key is edited", async () => {
    await visit("/ui/config", "config");
    const form = page.locator('form.config-edit[data-key="broker.pullHoldMaxMs"]');
    await form.locator("input[name=value]").fill("21000");
    await form.locator("button").click();
    await until(async () => (await form.locator(".result").innerText()) === "applied", 10_000, "the edit's answer");
    const cfg = await api<{ config: { broker: { pullHoldMaxMs: number } } }>("/config");
    expect(cfg.config.broker.pullHoldMaxMs).toBe(21000);
    expect(problems).toEqual([]);
  });

  test("charts of the last hour draw from the sampler", async () => {
    // The sampler takes a reading at start and one every 10 s; a rate needs two readings.
    type History = { times: number[]; inTps: Record<string, (number | null)[]>; lag: Record<string, (number | null)[]> };
    const h = await until(
      async () => {
        const x = await api<History>("/stats/history");
        return x.inTps[names.topic] && x.lag[names.billing] ? x : null;
      },
      25_000,
      "a sampled point with the topic and the group",
    );
    expect(h.times.length).toBe(h.inTps[names.topic]?.length ?? -1);
    expect(h.inTps[names.topic]?.some((v) => v !== null && v > 0)).toBe(true);
    await visit("/ui/charts", "charts");
    await until(async () => (await page.locator(".chart .uplot").count()) === 3, 10_000, "three charts");
    await shot("charts");
    expect(problems).toEqual([]);
  }, 40_000);
});
