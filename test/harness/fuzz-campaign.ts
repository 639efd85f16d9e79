/**
 * One fuzz campaign over every port of a running binary, shared by test/integration/fuzz-ports.test.ts
 * (a seeded short run) and bench/fuzz/run.ts (10^6 inputs per port): the remoting ports
 * (./fuzz-remoting.ts), the admin HTTP API (./fuzz-admin.ts), the HA port (./fuzz-ha.ts), and
 * what is checked around it: a sentinel topic and group the campaign never names (their stored
 * messages, offsets and metadata entries must not change), RSS, and that no topic or group
 * bears a name that only refused requests carried.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Producer, PullConsumer } from "rocketbun/client";
import { createRequest, RequestCode, ResponseCode, type RemotingClient } from "../../src/remoting/index.ts";
import { type Env, uniq, until } from "../client/support.ts";
import { type AdminFuzzReport, fuzzAdminApi } from "./fuzz-admin.ts";
import { FUZZ_TOKEN_PATTERN, fuzzRemotingPort, type RemotingFuzzReport } from "./fuzz-remoting.ts";
import type { FrameFuzzNames } from "./fuzz-frames.ts";

export const FUZZ_ADMIN_TOKEN = "fuzz-admin-token-0123456789";
/** Short, so a connection left inside a frame is closed within a campaign. */
export const FUZZ_FRAME_TIMEOUT_MS = 1000;
export const SENTINEL_TOPIC = "FuzzSentinel";
export const SENTINEL_GROUP = "FuzzSentinelGroup";
/** Topics the fuzzed requests may name, send to, change and delete. */
export const FUZZ_TOPICS = ["FuzzPlayA", "FuzzPlayB"];

/** Overrides of config/test-min.yaml for a campaign (merge with test/client/support.ts testMinYaml). */
export const FUZZ_CONFIG = { admin: { token: FUZZ_ADMIN_TOKEN }, remoting: { frameTimeoutMs: FUZZ_FRAME_TIMEOUT_MS } };

/** The process's resident set in KiB (Linux /proc). */
export function rssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]);
}

/** Fresh names: unique per campaign, matched by FUZZ_TOKEN_PATTERN. */
export function fuzzNames(seed: number): FrameFuzzNames & { fresh(): string } {
  let n = 0;
  return { topics: FUZZ_TOPICS, fresh: () => `fz${seed.toString(36)}x${n++}` };
}

export interface PortTargets {
  host: string;
  /** Remoting ports by name (namesrv, broker, vip). */
  remoting: Record<string, number>;
  adminUrl?: string;
  adminPort?: number;
  frameSizeMaxBytes: number;
}

export interface CampaignResult {
  remoting: Record<string, RemotingFuzzReport>;
  admin?: AdminFuzzReport;
  findings: string[];
  /** Token → the refused request that carried it. */
  refusedTokens: Map<string, string>;
}

/** Every port of `t` with `inputs` inputs each; ports run one after another, connections in parallel. */
export async function fuzzPorts(t: PortTargets, seed: number, inputs: number, names: FrameFuzzNames & { fresh(): string }): Promise<CampaignResult> {
  const out: CampaignResult = { remoting: {}, findings: [], refusedTokens: new Map() };
  let k = 0;
  for (const [name, port] of Object.entries(t.remoting)) {
    const r = await fuzzRemotingPort({ host: t.host, port, seed: seed + k++, inputs, concurrency: 16, names, frameTimeoutMs: FUZZ_FRAME_TIMEOUT_MS, frameSizeMaxBytes: t.frameSizeMaxBytes });
    out.remoting[name] = r;
    out.findings.push(...r.findings.map((f) => `${name}: ${f}`));
    for (const [tok, how] of r.refusedTokens) out.refusedTokens.set(tok, `${name} ${how}`);
  }
  if (t.adminUrl !== undefined && t.adminPort !== undefined) {
    const a = await fuzzAdminApi({ baseUrl: t.adminUrl, host: t.host, port: t.adminPort, token: FUZZ_ADMIN_TOKEN, seed: seed + k, inputs, concurrency: 8, topics: FUZZ_TOPICS, fresh: names.fresh });
    out.admin = a;
    out.findings.push(...a.findings.map((f) => `admin: ${f}`));
    for (const [tok, how] of a.refusedTokens) out.refusedTokens.set(tok, how);
  }
  return out;
}

/**
 * Everything stored about the sentinel, as comparable text: each queue's max offset and records
 * (msgId, queue offset, body, properties), the group's committed offsets, and the sentinel's
 * entries in topics.json and consumerOffset.json.
 */
export async function sentinelState(wire: RemotingClient, brokerAddr: string, storeDir: string): Promise<string> {
  const call = (code: number, ext: Record<string, string>) => wire.invoke(brokerAddr, createRequest(code, ext), 5000);
  const queues: unknown[] = [];
  for (let q = 0; q < 4; q++) {
    const max = await call(RequestCode.GET_MAX_OFFSET, { topic: SENTINEL_TOPIC, queueId: String(q) });
    const committed = await call(RequestCode.QUERY_CONSUMER_OFFSET, { consumerGroup: SENTINEL_GROUP, topic: SENTINEL_TOPIC, queueId: String(q) });
    const pull = await call(RequestCode.PULL_MESSAGE, {
      consumerGroup: SENTINEL_GROUP,
      topic: SENTINEL_TOPIC,
      queueId: String(q),
      queueOffset: "0",
      maxMsgNums: "64",
      sysFlag: "0",
      commitOffset: "0",
      suspendTimeoutMillis: "0",
      subscription: "*",
      subVersion: "0",
      expressionType: "TAG",
    });
    const body = pull.code === ResponseCode.SUCCESS && pull.body ? Buffer.from(pull.body).toString("base64") : `code ${pull.code}`;
    queues.push({ max: max.extFields?.offset, committed: committed.code === ResponseCode.SUCCESS ? committed.extFields?.offset : `code ${committed.code}`, body });
  }
  const config = (f: string): Record<string, Record<string, unknown>> => {
    const path = join(storeDir, "config", f);
    return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as Record<string, Record<string, unknown>>) : {};
  };
  const topic = config("topics.json").topicConfigTable?.[SENTINEL_TOPIC];
  const offsets = config("consumerOffset.json").offsetTable?.[`${SENTINEL_TOPIC}@${SENTINEL_GROUP}`];
  return JSON.stringify({ queues, topic, offsets }, null, 1);
}

/** Topic and group names (broker and name server, through the admin API) that contain one of `tokens`, with how each token was refused. */
export async function namesWithTokens(adminUrl: string, tokens: ReadonlyMap<string, string>): Promise<string[]> {
  const get = async <T>(path: string): Promise<T> => {
    const r = await fetch(`${adminUrl}${path}`, { headers: { authorization: `Bearer ${FUZZ_ADMIN_TOKEN}` } });
    if (!r.ok) throw new Error(`GET ${path}: HTTP ${r.status}`);
    return (await r.json()) as T;
  };
  const names: string[] = [];
  const topics = await get<{ topics: ({ topicName: string } | string)[] }>("/topics");
  for (const t of topics.topics) names.push(typeof t === "string" ? t : t.topicName);
  names.push(...(await get<{ groups: string[] }>("/groups")).groups);
  const ns = await fetch(`${adminUrl}/namesrv/topics`, { headers: { authorization: `Bearer ${FUZZ_ADMIN_TOKEN}` } });
  if (ns.ok) names.push(...(((await ns.json()) as { topics?: string[] }).topics ?? []));
  const out: string[] = [];
  for (const n of names) for (const t of n.match(FUZZ_TOKEN_PATTERN) ?? []) if (tokens.has(t)) out.push(`${n} (${tokens.get(t)})`);
  return out;
}

/** A one-line summary of a remoting report. */
export function describeRemoting(name: string, r: RemotingFuzzReport): string {
  const codes = [...r.responseCodes].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c}:${n}`).join(" ");
  return `${name}: ${r.inputs} frames on ${r.connections} connections (${[...r.verdicts].map(([v, n]) => `${v} ${n}`).join(", ")}), ${r.answered} answered, ${r.closedByServer} closed by the server; response codes ${codes}`;
}

export function describeAdmin(r: AdminFuzzReport): string {
  const statuses = [...r.statuses].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}:${n}`).join(" ");
  return `admin: ${r.inputs} requests (${r.rawConnections} raw connections); statuses ${statuses}`;
}

/**
 * Creates the sentinel topic (24 messages) with its group's committed offsets, and the topics
 * the campaign plays with; returns the sentinel's state once consumerOffset.json holds it.
 */
export async function seedSentinel(env: Env): Promise<string> {
  await env.createTopic(SENTINEL_TOPIC, 4);
  for (const t of FUZZ_TOPICS) await env.createTopic(t, 4);
  const p = await env.producer();
  for (let i = 0; i < 24; i++) await p.send({ topic: SENTINEL_TOPIC, body: `sentinel-${i}`, tags: "S", keys: [`sk${i}`] });
  for (let q = 0; q < 4; q++) {
    const ext = { consumerGroup: SENTINEL_GROUP, topic: SENTINEL_TOPIC, queueId: String(q), commitOffset: String(q + 1) };
    const r = await env.wire.invoke(env.brokerAddr, createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, ext), 5000);
    if (r.code !== ResponseCode.SUCCESS) throw new Error(`committing the sentinel's offsets: ${r.code} ${r.remark ?? ""}`);
  }
  // consumerOffset.json is written a moment after the commits.
  return until(
    async () => {
      const state = await sentinelState(env.wire, env.brokerAddr, join(env.srv.dir, "store"));
      return (JSON.parse(state) as { offsets?: unknown }).offsets ? state : null;
    },
    15_000,
    "the sentinel group's offsets in consumerOffset.json",
  );
}

/** A real send and pull through rocketbun/client on a topic made now; throws unless all 5 come back. */
export async function sendAndPull(env: Env): Promise<void> {
  const topic = uniq("AfterFuzz");
  await env.createTopic(topic, 2);
  const p = new Producer({ namesrv: env.namesrv, group: uniq("PG_after") });
  await p.start();
  const c = new PullConsumer({ namesrv: env.namesrv, group: uniq("CG_after"), fromWhere: "first" });
  try {
    const want = [0, 1, 2, 3, 4].map((i) => `after-${i}`);
    for (const body of want) await p.send({ topic, body });
    c.subscribe(topic, "*");
    await c.start();
    const got: string[] = [];
    await until(
      async () => {
        for (const m of await c.poll(200)) got.push(new TextDecoder().decode(m.body));
        return got.length >= want.length;
      },
      15_000,
      () => `the messages sent after the campaign (have ${got.join(",")})`,
    );
    if (got.sort().join(",") !== want.join(",")) throw new Error(`pulled ${got.join(",")} after the campaign, sent ${want.join(",")}`);
  } finally {
    await c.shutdown();
    await p.shutdown();
  }
}
