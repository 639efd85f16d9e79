/**
 * GET /metrics of the compiled binary (issue #16 point 1): a name server and a master broker with
 * an admin token, a topic with a known backlog of a consumer group, then
 *   - the exposition holds the exporter's and 5.x's figures for it, and the name server's request
 *     latencies; /metrics needs the token;
 *   - `promtool check metrics` finds no format error, and no lint problem outside the names kept
 *     for dashboard compatibility (src/admin/metrics/families.ts LINT_EXCEPTIONS); without those
 *     families it passes clean;
 *   - a real Prometheus scrapes the broker's admin port (with `authorization: credentials:`) and
 *     its HTTP API answers rocketmq_group_diff{group=...} with the backlog.
 * Prometheus and promtool (Debian package `prometheus`) missing: those tests skip with one line,
 * and fail under CI=true.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LINT_EXCEPTIONS } from "../../src/admin/metrics/families.ts";
import { parseExposition, samplesOf } from "../../src/admin/metrics/test-support.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingClient } from "../../src/remoting/index.ts";
import { ROOT, startRocketbun, waitFor, type RunningBinary } from "../harness/binary.ts";
import { createTopicRequest, newClient } from "../harness/wire.ts";

const TOKEN = "metrics-T0ken";
const TOPIC = "MetricsTopic";
const GROUP = "MetricsGroup";
const SENT = 20;
/** Queue 0 holds 5 messages (all consumed), queue 1 holds 5 (2 consumed): 20 − 5 − 2. */
const BACKLOG = 13;
const TIMEOUT_MS = 3000;

const TOOLS = ["prometheus", "promtool"].filter((t) => Bun.which(t) === null);
if (TOOLS.length > 0) {
  const line = `metrics (Prometheus): skipped, ${TOOLS.join(", ")} not on the PATH (Debian package prometheus)`;
  if (process.env.CI === "true") throw new Error(`${line} (CI=true: the suite must run)`);
  process.stdout.write(`${line}\n`);
}
const haveTools = TOOLS.length === 0;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Cluster {
  ns: RunningBinary;
  broker: RunningBinary;
  addr: string;
}

async function start(): Promise<Cluster> {
  const ns = await startRocketbun({ role: "namesrv" });
  cleanups.push(() => ns[Symbol.asyncDispose]());
  const base = readFileSync(join(ROOT, "config", "test-min.yaml"), "utf8");
  const broker = await startRocketbun({ role: "master", configYaml: `${base}\nadmin:\n  token: ${TOKEN}\n`, args: ["--namesrv", ns.namesrvAddr] });
  cleanups.push(() => broker[Symbol.asyncDispose]());
  return { ns, broker, addr: `127.0.0.1:${broker.ports.broker}` };
}

function client(): RemotingClient {
  const c = newClient();
  cleanups.push(() => c.close());
  return c;
}

async function ok(c: RemotingClient, addr: string, cmd: ReturnType<typeof createRequest>): Promise<void> {
  const res = await c.invoke(addr, cmd, TIMEOUT_MS);
  expect({ code: res.code, remark: res.remark }).toMatchObject({ code: ResponseCode.SUCCESS });
}

/** The topic with 4 queues, SENT messages round-robin, and the group's offsets on queues 0 and 1. */
async function backlog(addr: string): Promise<void> {
  const c = client();
  await ok(c, addr, createTopicRequest(TOPIC, 4));
  for (let i = 0; i < SENT; i++) {
    const ext = { a: "MetricsProducer", b: TOPIC, c: "TBW102", d: "4", e: String(i % 4), f: "0", g: String(Date.now()), h: "0", i: "" };
    await ok(c, addr, createRequest(RequestCode.SEND_MESSAGE_V2, ext, new TextEncoder().encode(`m${i}`)));
  }
  for (const [queueId, offset] of [
    [0, 5],
    [1, 2],
  ]) {
    const ext = { consumerGroup: GROUP, topic: TOPIC, queueId: String(queueId), commitOffset: String(offset) };
    await ok(c, addr, createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, ext));
  }
}

async function scrape(url: string, token?: string): Promise<string> {
  const r = await fetch(`${url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  return r.text();
}

function promtool(text: string): { code: number; out: string } {
  const r = Bun.spawnSync(["promtool", "check", "metrics"], { stdin: new TextEncoder().encode(text), stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: `${r.stdout.toString()}${r.stderr.toString()}` };
}

/** `text` without the families named in `names` (their HELP, TYPE and samples, suffixes included). */
function without(text: string, names: readonly string[]): string {
  const family = (metric: string) => names.find((n) => metric === n || metric.startsWith(`${n}_`)) !== undefined;
  return text
    .split("\n")
    .filter((l) => !family(l.startsWith("# ") ? (l.split(" ")[2] ?? "") : (l.split(/[{ ]/)[0] ?? "")))
    .join("\n");
}

async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

describe("GET /metrics (compiled binary)", () => {
  test("a known backlog, the token, the name server's request latencies", async () => {
    const { ns, broker, addr } = await start();
    await backlog(addr);
    expect((await fetch(`${broker.adminUrl}/metrics`)).status).toBe(401);
    const p = parseExposition(await scrape(broker.adminUrl, TOKEN));
    const diff = samplesOf(p, "rocketmq_group_diff", { group: GROUP, topic: TOPIC });
    expect(diff.map((s) => [s.labels.countOfOnlineConsumers, s.labels.msgModel, s.value])).toEqual([["0", "1", BACKLOG]]);
    const labels = { cluster: "DefaultCluster", broker: "broker-a", topic: TOPIC };
    expect(samplesOf(p, "rocketmq_producer_offset", labels).map((s) => s.value)).toEqual([SENT]);
    expect(samplesOf(p, "rocketmq_consumer_offset", { ...labels, group: GROUP }).map((s) => s.value)).toEqual([7]);
    // 5.x counts only the queues with a committed offset: queue 1's 3.
    expect(samplesOf(p, "rocketmq_consumer_lag_messages", { topic: TOPIC, consumer_group: GROUP }).map((s) => s.value)).toEqual([3]);
    expect(samplesOf(p, "rocketmq_messages_in_total", { topic: TOPIC }).map((s) => s.value)).toEqual([SENT]);
    expect(samplesOf(p, "rocketmq_rpc_latency_milliseconds_count", { request_code: "send_message_v2" }).map((s) => s.value)).toEqual([SENT]);
    expect(samplesOf(p, "process_open_fds")[0]!.value).toBeGreaterThan(0);
    // The broker registered with the name server, whose /metrics (no token there) counts it.
    await waitFor(async () => {
      const n = parseExposition(await scrape(ns.adminUrl));
      return samplesOf(n, "rocketmq_rpc_latency_milliseconds_count", { node_type: "namesrv", request_code: "register_broker" })[0]?.value;
    });
  });

  test.skipIf(!haveTools)("promtool check metrics: no format error; lint findings only on the compatibility names", async () => {
    const { broker, addr } = await start();
    await backlog(addr);
    const text = await scrape(broker.adminUrl, TOKEN);
    const full = promtool(text);
    expect(full.out).not.toContain("error while linting");
    // Exit 3 = lint problems only (1 would be a parse error).
    expect([0, 3]).toContain(full.code);
    const findings = full.out.split("\n").filter((l) => l.trim() !== "");
    const outside = findings.filter((l) => !LINT_EXCEPTIONS.includes(l.split(" ")[0]!));
    expect(outside).toEqual([]);
    expect(promtool(without(text, LINT_EXCEPTIONS))).toEqual({ code: 0, out: "" });
  });

  test.skipIf(!haveTools)(
    "a real Prometheus scrapes the broker and answers the group's lag through its HTTP API",
    async () => {
      const { broker, addr } = await start();
      await backlog(addr);
      const dir = mkdtempSync(join(tmpdir(), "rocketbun-prometheus-"));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const config = [
        "global:",
        "  scrape_interval: 1s",
        "  scrape_timeout: 1s",
        "scrape_configs:",
        "  - job_name: rocketbun",
        "    authorization:",
        `      credentials: ${TOKEN}`,
        "    static_configs:",
        `      - targets: ["127.0.0.1:${broker.ports.admin}"]`,
        "",
      ].join("\n");
      writeFileSync(join(dir, "prometheus.yml"), config);
      const port = await freePort();
      const args = [
        `--config.file=${join(dir, "prometheus.yml")}`,
        `--storage.tsdb.path=${join(dir, "data")}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ];
      const prom = Bun.spawn(["prometheus", ...args, "--log.level=warn"], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      cleanups.push(async () => {
        prom.kill();
        await prom.exited;
      });
      const stderr = new Response(prom.stderr).text();
      const query = encodeURIComponent(`rocketmq_group_diff{group="${GROUP}",topic="${TOPIC}"}`);
      const value = await waitFor(
        async () => {
          if (prom.exitCode !== null) throw new Error(`prometheus exited with ${prom.exitCode}: ${await stderr}`);
          const r = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${query}`);
          const body = (await r.json()) as { data?: { result?: { value: [number, string] }[] } };
          return body.data?.result?.[0]?.value[1];
        },
        30_000,
        "Prometheus to have scraped rocketmq_group_diff",
      );
      expect(Number(value)).toBe(BACKLOG);
      const up = await (await fetch(`http://127.0.0.1:${port}/api/v1/query?query=up`)).json();
      expect(up).toMatchObject({ data: { result: [{ value: [expect.any(Number), "1"] }] } });
    },
    60_000,
  );
});
