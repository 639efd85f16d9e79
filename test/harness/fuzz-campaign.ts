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
import { createRequest, RequestCode, ResponseCode, type RemotingClient } from "../../src/remoting/index.ts";
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
  refusedTokens: Set<string>;
}

/** Every port of `t` with `inputs` inputs each; ports run one after another, connections in parallel. */
export async function fuzzPorts(t: PortTargets, seed: number, inputs: number, names: FrameFuzzNames & { fresh(): string }): Promise<CampaignResult> {
  const out: CampaignResult = { remoting: {}, findings: [], refusedTokens: new Set() };
  let k = 0;
  for (const [name, port] of Object.entries(t.remoting)) {
    const r = await fuzzRemotingPort({ host: t.host, port, seed: seed + k++, inputs, concurrency: 16, names, frameTimeoutMs: FUZZ_FRAME_TIMEOUT_MS, frameSizeMaxBytes: t.frameSizeMaxBytes });
    out.remoting[name] = r;
    out.findings.push(...r.findings.map((f) => `${name}: ${f}`));
    for (const tok of r.refusedTokens) out.refusedTokens.add(tok);
  }
  if (t.adminUrl !== undefined && t.adminPort !== undefined) {
    const a = await fuzzAdminApi({ baseUrl: t.adminUrl, host: t.host, port: t.adminPort, token: FUZZ_ADMIN_TOKEN, seed: seed + k, inputs, concurrency: 8, topics: FUZZ_TOPICS, fresh: names.fresh });
    out.admin = a;
    out.findings.push(...a.findings.map((f) => `admin: ${f}`));
    for (const tok of a.refusedTokens) out.refusedTokens.add(tok);
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

/** Topic and group names (broker and name server, through the admin API) that contain one of `tokens`. */
export async function namesWithTokens(adminUrl: string, tokens: ReadonlySet<string>): Promise<string[]> {
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
  return names.filter((n) => (n.match(FUZZ_TOKEN_PATTERN) ?? []).some((t) => tokens.has(t)));
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
