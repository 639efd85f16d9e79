/**
 * A fuzz campaign against the admin HTTP API (src/admin/): requests built from the server's own
 * /openapi.json — its paths with fuzzed path parameters, its methods and others, its query
 * parameters and request-body properties filled with values of every JSON type — plus random
 * paths, invalid and oversized bodies, wrong content types, and the admin token present, absent or
 * wrong; and a few raw TCP connections that send broken HTTP.
 * Checked per request: never a 5xx (bad input is a 4xx in the one error shape); without the right
 * token nothing but /health answers 2xx (admin.token is set for the campaign); a raw connection
 * is answered or closed. Fresh names (tokens, as in ./fuzz-frames.ts) of requests answered ≥ 400
 * are collected so the caller can check that they created nothing.
 */
import { connectionRng, type Rng } from "./fuzz.ts";

export interface AdminFuzzOptions {
  baseUrl: string;
  host: string;
  port: number;
  token: string;
  seed: number;
  inputs: number;
  concurrency: number;
  /** Topics the campaign may touch (never the test's sentinel). */
  topics: readonly string[];
  fresh(): string;
}

export interface AdminFuzzReport {
  inputs: number;
  statuses: Map<number, number>;
  rawConnections: number;
  findings: string[];
  /** Token → the request that carried it. */
  refusedTokens: Map<string, string>;
  acceptedTokens: Set<string>;
}

interface Operation {
  method: string;
  path: string;
  query: string[];
  bodyKeys: string[];
}

type OpenApiDoc = { paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> } }>> };

/** The operations of the server's OpenAPI document. */
export async function adminOperations(baseUrl: string, token: string): Promise<Operation[]> {
  const r = await fetch(`${baseUrl}/openapi.json`, { headers: { authorization: `Bearer ${token}` } });
  if (!r.ok) throw new Error(`GET /openapi.json: HTTP ${r.status}`);
  const doc = (await r.json()) as OpenApiDoc;
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const query = (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
      const schema = op.requestBody?.content?.["application/json"]?.schema;
      ops.push({ method: method.toUpperCase(), path, query, bodyKeys: Object.keys(schema?.properties ?? {}) });
    }
  }
  return ops;
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "PROPFIND", "FOO"];
const ODD_SEGMENTS = ["..", "%2e%2e", "%00", "%ff", "a%2Fb", "%25", "x".repeat(5000), "😀", "%RETRY%g", " ", "*", "%"];

function jsonValue(rng: Rng, tokens: string[], fresh: () => string, depth = 0): unknown {
  switch (rng.int(0, 8)) {
    case 0: {
      const t = fresh();
      tokens.push(t);
      return t;
    }
    case 1:
      return rng.pick([0, -1, 1.5, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, 8]);
    case 2:
      return rng.bool();
    case 3:
      return null;
    case 4:
      return depth < 2 ? Array.from({ length: rng.int(0, 3) }, () => jsonValue(rng, tokens, fresh, depth + 1)) : [];
    case 5:
      return depth < 2 ? { [rng.pick(["a", "topic", "perm"])]: jsonValue(rng, tokens, fresh, depth + 1) } : {};
    case 6:
      return rng.pick(["", "x".repeat(rng.int(1, 70_000)), "\u0000", "6", "true", "SINGLE_TAG", "ASYNC_FLUSH"]);
    default:
      return rng.pick(["*", "TagA || TagB", "a > 1", "2024-01-01T00:00:00Z", "earliest", "latest"]);
  }
}

function pathFor(rng: Rng, op: Operation, o: AdminFuzzOptions, tokens: string[]): string {
  if (rng.bool(0.1)) return `/${Array.from({ length: rng.int(0, 4) }, () => encodeURIComponent(rng.pick(ODD_SEGMENTS))).join("/")}`;
  return op.path.replace(/\{[^}]+\}/g, () => {
    if (rng.bool(0.4)) {
      const t = o.fresh();
      tokens.push(t);
      return t;
    }
    if (rng.bool(0.5) && o.topics.length > 0) return rng.pick(o.topics);
    return rng.bool(0.7) ? encodeURIComponent(rng.pick(ODD_SEGMENTS)) : rng.pick(ODD_SEGMENTS).replace(/[/?#]/g, "");
  });
}

function bodyFor(rng: Rng, op: Operation, o: AdminFuzzOptions, tokens: string[]): { body?: string; type?: string } {
  const type = rng.pick(["application/json", "application/json", "text/plain", "", "multipart/form-data; boundary=x", "application/json; charset=latin1", "application/x-www-form-urlencoded"]);
  const typed = (body: string) => (type === "" ? { body } : { body, type });
  switch (rng.int(0, 5)) {
    case 0:
      return {};
    case 1:
      return typed(rng.pick(["{", "[]", "null", '{"a":', "\u0000", "1", '"s"']));
    case 2:
      return typed(`{"k":"${"y".repeat(rng.pick([1 << 20, 3 << 20]))}"}`);
    default: {
      const obj: Record<string, unknown> = {};
      for (const k of op.bodyKeys) if (rng.bool(0.8)) obj[k] = jsonValue(rng, tokens, o.fresh);
      if (rng.bool(0.3)) obj[rng.pick(["extra", "__proto__", "constructor"])] = jsonValue(rng, tokens, o.fresh);
      return typed(JSON.stringify(obj));
    }
  }
}

function buildRequest(rng: Rng, ops: Operation[], o: AdminFuzzOptions): { method: string; url: string; init: RequestInit; tokens: string[]; authorized: boolean } {
  const tokens: string[] = [];
  const op = rng.pick(ops);
  const method = rng.bool(0.75) ? op.method : rng.pick(METHODS);
  const params = new URLSearchParams();
  for (const q of op.query) if (rng.bool(0.6)) params.set(q, String(jsonValue(rng, tokens, o.fresh)));
  if (rng.bool(0.2)) params.set(rng.pick(["limit", "x", "offset", "topic"]), rng.pick(["-1", "1e9", "abc", ""]));
  const qs = params.toString();
  const url = `${o.baseUrl}${pathFor(rng, op, o, tokens)}${qs ? `?${qs}` : ""}`;
  const headers: Record<string, string> = {};
  const auth = rng.int(0, 4);
  if (auth <= 2) headers.authorization = `Bearer ${o.token}`;
  else if (auth === 3) headers.authorization = rng.pick(["Bearer wrong", "Basic eDp5", "Bearer", `bearer ${o.token}x`]);
  const init: RequestInit = { method, headers, redirect: "manual" };
  if (["POST", "PUT", "PATCH", "DELETE"].includes(method)) {
    const b = bodyFor(rng, op, o, tokens);
    if (b.body !== undefined) init.body = b.body;
    if (b.type !== undefined) headers["content-type"] = b.type;
  }
  return { method, url, init, tokens, authorized: auth <= 2 };
}

async function oneRequest(o: AdminFuzzOptions, ops: Operation[], i: number, out: AdminFuzzReport): Promise<void> {
  const rng = connectionRng(o.seed, i);
  const req = buildRequest(rng, ops, o);
  const what = `admin request ${i}: ${req.method} ${req.url.slice(o.baseUrl.length, o.baseUrl.length + 120)}`;
  let status: number;
  let text: string;
  try {
    const r = await fetch(req.url, { ...req.init, signal: AbortSignal.timeout(10_000) });
    status = r.status;
    text = await r.text();
  } catch (e) {
    out.findings.push(`${what}: no answer: ${String(e)}`);
    return;
  }
  out.statuses.set(status, (out.statuses.get(status) ?? 0) + 1);
  if (status >= 500) out.findings.push(`${what}: HTTP ${status} ${text.slice(0, 200)}`);
  const path = new URL(req.url).pathname;
  if (!req.authorized && status >= 200 && status < 300 && path !== "/health") out.findings.push(`${what}: HTTP ${status} without the token`);
  for (const t of req.tokens) {
    if (status >= 400) out.refusedTokens.set(t, `${what}: HTTP ${status}`);
    else out.acceptedTokens.add(t);
  }
}

/** Broken HTTP over a raw socket: answered (any bytes) or closed within 5 s. */
async function rawRequest(o: AdminFuzzOptions, i: number, out: AdminFuzzReport): Promise<void> {
  const rng = connectionRng(o.seed ^ 0x7777, i);
  const payload = rng.pick([
    () => rng.bytes(rng.int(1, 600)),
    () => new TextEncoder().encode(`GET /${"a".repeat(rng.int(1, 70_000))} HTTP/1.1\r\nHost: x\r\n\r\n`),
    () => new TextEncoder().encode(`POST /topics HTTP/1.1\r\nHost: x\r\nContent-Length: ${rng.pick(["-1", "abc", "99999999999", "5"])}\r\n\r\n{`),
    () => new TextEncoder().encode(`GET /health HTTP/1.1\r\n${"X-A: b\r\n".repeat(rng.int(1, 3000))}\r\n`),
    () => new TextEncoder().encode("GET /health HTTP/9.9\r\n\r\n"),
  ])();
  let settled = false;
  let done: () => void = () => {};
  const finished = new Promise<void>((r) => (done = r));
  const socket = await Bun.connect({
    hostname: o.host,
    port: o.port,
    socket: {
      data() {
        settled = true;
        done();
      },
      close() {
        settled = true;
        done();
      },
    },
  });
  socket.write(payload);
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([finished, new Promise<void>((r) => (timer = setTimeout(r, 5000)))]);
  clearTimeout(timer);
  socket.end();
  out.rawConnections++;
  // A payload that is an incomplete request may rightly wait for more: only complete garbage counts.
  if (!settled && payload.length > 0 && payload[payload.length - 1] === 0x0a) out.findings.push(`raw admin connection ${i}: neither answered nor closed`);
}

export async function fuzzAdminApi(o: AdminFuzzOptions): Promise<AdminFuzzReport> {
  const ops = await adminOperations(o.baseUrl, o.token);
  const out: AdminFuzzReport = { inputs: 0, statuses: new Map(), rawConnections: 0, findings: [], refusedTokens: new Map(), acceptedTokens: new Set() };
  const worker = async (): Promise<void> => {
    while (out.inputs < o.inputs) {
      const i = out.inputs++;
      if (i % 20 === 19) await rawRequest(o, i, out);
      else await oneRequest(o, ops, i, out);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  for (const t of out.acceptedTokens) out.refusedTokens.delete(t);
  return out;
}
