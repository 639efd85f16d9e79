/**
 * etcd v3 through its gRPC gateway (JSON over HTTP, served by every etcd ≥ 3.4 on its client URLs
 * under /v3/): what automatic failover needs of etcd — leases, reads, compare-and-set
 * transactions — and nothing else. Coordination itself is etcd's (no home-made consensus);
 * this file only speaks to it.
 *
 * Why the gateway and not the gRPC client (npm `etcd3`): that package loads its .proto files from
 * disk at run time through @grpc/proto-loader, which a single compiled executable does not carry,
 * and it would add grpc-js's HTTP/2 stack to every process. The gateway is etcd's documented
 * JSON API (api/etcdserverpb/rpc.proto mapped by grpc-gateway) and needs only fetch.
 *
 * Wire facts (etcd 3.4 gateway):
 *   - keys and values are base64 of their bytes; int64 fields (revisions, lease IDs, TTLs) are
 *     JSON strings; fields at their zero value are left out (`succeeded: false` is absent);
 *   - POST /v3/kv/range {key, range_end?}     → {header:{revision}, kvs?:[{key, value?, create_revision,
 *                                                 mod_revision, version, lease?}], count?}
 *   - POST /v3/kv/put {key, value, lease?}    → {header}
 *   - POST /v3/kv/deleterange {key}           → {header, deleted?}
 *   - POST /v3/kv/txn {compare, success, failure} → {header, succeeded?, responses?}
 *       compare: {key, target: VERSION|CREATE|MOD|VALUE|LEASE, result: EQUAL|GREATER|LESS|NOT_EQUAL,
 *                 version|create_revision|mod_revision|value|lease}
 *       op:      {request_put: {...}} | {request_range: {...}} | {request_delete_range: {...}}
 *   - POST /v3/lease/grant {TTL (s)}          → {ID, TTL}
 *   - POST /v3/lease/keepalive {ID}           → {result: {ID, TTL?}}  (one request = one renewal;
 *                                                TTL absent when the lease is gone)
 *   - POST /v3/lease/revoke {ID}              → {header}; an unknown lease → an error body
 *   - an error answers an HTTP status ≥ 400 with {error, code (gRPC code), message}; CANCELLED,
 *     DEADLINE_EXCEEDED and UNAVAILABLE (no leader, shutting down) count as unreachable.
 *
 * Endpoints: requests go to one endpoint until it fails to answer (connection refused, timeout),
 * then to the next, in order. Every call has a deadline (`requestTimeoutMs`); a call that no
 * endpoint answers rejects with EtcdUnavailableError, which the failover logic reads as "etcd is
 * unreachable: keep the current role".
 */
import { Buffer } from "node:buffer";

/** A lease's ID as etcd writes it (a decimal int64, kept as a string: it does not fit a double). */
export type LeaseId = string;

export interface KeyValue {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
  version: number;
  /** The lease the key is attached to, or undefined. */
  lease: LeaseId | undefined;
}

/** A comparison of a transaction; `version: 0` means "the key does not exist". */
export type Compare =
  | { key: string; target: "VERSION"; result: CompareResult; version: number }
  | { key: string; target: "MOD"; result: CompareResult; modRevision: number }
  | { key: string; target: "VALUE"; result: CompareResult; value: string };
export type CompareResult = "EQUAL" | "GREATER" | "LESS" | "NOT_EQUAL";

export type TxnOp = { put: string; value: string; lease?: LeaseId } | { get: string } | { delete: string };

export interface TxnResult {
  succeeded: boolean;
  /** For each `get` op of the branch that ran, in order: the key's value, or undefined. */
  gets: (KeyValue | undefined)[];
  revision: number;
}

/** What failover needs of etcd: the seam that lets a test or the simulation put its own etcd in. */
export interface EtcdKv {
  get(key: string): Promise<KeyValue | undefined>;
  /** Every key starting with `prefix`, in key order. */
  getPrefix(prefix: string): Promise<KeyValue[]>;
  put(key: string, value: string, lease?: LeaseId): Promise<void>;
  delete(key: string): Promise<void>;
  txn(compare: Compare[], success: TxnOp[], failure?: TxnOp[]): Promise<TxnResult>;
  /** A lease of at least `ttlMs` (etcd counts whole seconds, and has a minimum of its own). */
  grantLease(ttlMs: number): Promise<{ id: LeaseId; ttlMs: number }>;
  /** Renews the lease: the TTL it has again, or 0 when it no longer exists (expired or revoked). */
  keepAlive(id: LeaseId): Promise<number>;
  /** Ends the lease and deletes its keys; an unknown lease is not an error. */
  revoke(id: LeaseId): Promise<void>;
}

/** No endpoint answered in time: nothing is known about what etcd holds. */
export class EtcdUnavailableError extends Error {
  override readonly name = "EtcdUnavailableError";
}

/** etcd answered with an error (a bad request, an unknown lease, …). */
export class EtcdError extends Error {
  override readonly name = "EtcdError";
  constructor(
    message: string,
    /** The gRPC status code etcd gave (5 = NOT_FOUND, …). */
    readonly grpcCode: number,
  ) {
    super(message);
  }
}

export interface EtcdHttpOptions {
  /** host:port or http(s)://host:port, tried in this order. */
  endpoints: readonly string[];
  /** Deadline of one call over all endpoints it tries. */
  requestTimeoutMs: number;
}

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
const unb64 = (s: string | undefined) => (s === undefined ? "" : Buffer.from(s, "base64").toString("utf8"));
const int = (s: string | undefined) => (s === undefined ? 0 : Number(s));

interface RawKv {
  key: string;
  value?: string;
  create_revision?: string;
  mod_revision?: string;
  version?: string;
  lease?: string;
}
interface RawRange {
  header?: { revision?: string };
  kvs?: RawKv[];
}

function keyValue(raw: RawKv): KeyValue {
  return {
    key: unb64(raw.key),
    value: unb64(raw.value),
    createRevision: int(raw.create_revision),
    modRevision: int(raw.mod_revision),
    version: int(raw.version),
    lease: raw.lease === undefined || raw.lease === "0" ? undefined : raw.lease,
  };
}

/** The range_end that makes a range request mean "every key with this prefix" (etcd's prefix rule). */
export function prefixEnd(prefix: string): string {
  const bytes = Buffer.from(prefix, "utf8");
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 0xff) {
      const end = Buffer.from(bytes.subarray(0, i + 1));
      end[i]!++;
      return end.toString("base64");
    }
  }
  return Buffer.from([0]).toString("base64"); // all 0xff: to the end of the key space
}

function compareJson(c: Compare): Record<string, string> {
  const base = { key: b64(c.key), target: c.target, result: c.result };
  if (c.target === "VERSION") return { ...base, version: String(c.version) };
  if (c.target === "MOD") return { ...base, mod_revision: String(c.modRevision) };
  return { ...base, value: b64(c.value) };
}

function opJson(op: TxnOp): Record<string, unknown> {
  if ("put" in op) return { request_put: { key: b64(op.put), value: b64(op.value), ...(op.lease ? { lease: op.lease } : {}) } };
  if ("get" in op) return { request_range: { key: b64(op.get) } };
  return { request_delete_range: { key: b64(op.delete) } };
}

function normalizeEndpoint(e: string): string {
  const url = /^https?:\/\//.test(e) ? e : `http://${e}`;
  return url.replace(/\/+$/, "");
}

export class EtcdHttpClient implements EtcdKv {
  readonly #endpoints: string[];
  readonly #timeoutMs: number;
  /** The endpoint that answered last: calls start there. */
  #current = 0;

  constructor(opts: EtcdHttpOptions) {
    if (opts.endpoints.length === 0) throw new Error("etcd: no endpoints");
    this.#endpoints = opts.endpoints.map(normalizeEndpoint);
    this.#timeoutMs = opts.requestTimeoutMs;
  }

  async get(key: string): Promise<KeyValue | undefined> {
    const r = (await this.#call("/v3/kv/range", { key: b64(key) })) as RawRange;
    return r.kvs?.[0] ? keyValue(r.kvs[0]) : undefined;
  }

  async getPrefix(prefix: string): Promise<KeyValue[]> {
    const r = (await this.#call("/v3/kv/range", { key: b64(prefix), range_end: prefixEnd(prefix) })) as RawRange;
    return (r.kvs ?? []).map(keyValue);
  }

  async put(key: string, value: string, lease?: LeaseId): Promise<void> {
    await this.#call("/v3/kv/put", { key: b64(key), value: b64(value), ...(lease ? { lease } : {}) });
  }

  async delete(key: string): Promise<void> {
    await this.#call("/v3/kv/deleterange", { key: b64(key) });
  }

  async txn(compare: Compare[], success: TxnOp[], failure: TxnOp[] = []): Promise<TxnResult> {
    const r = (await this.#call("/v3/kv/txn", {
      compare: compare.map(compareJson),
      success: success.map(opJson),
      failure: failure.map(opJson),
    })) as { header?: { revision?: string }; succeeded?: boolean; responses?: { response_range?: RawRange }[] };
    const succeeded = r.succeeded === true;
    const ops = succeeded ? success : failure;
    const gets: (KeyValue | undefined)[] = [];
    ops.forEach((op, i) => {
      if (!("get" in op)) return;
      const kv = r.responses?.[i]?.response_range?.kvs?.[0];
      gets.push(kv ? keyValue(kv) : undefined);
    });
    return { succeeded, gets, revision: int(r.header?.revision) };
  }

  async grantLease(ttlMs: number): Promise<{ id: LeaseId; ttlMs: number }> {
    const r = (await this.#call("/v3/lease/grant", { TTL: String(Math.max(1, Math.ceil(ttlMs / 1000))) })) as { ID?: string; TTL?: string };
    if (r.ID === undefined) throw new EtcdError("etcd granted a lease without an ID", 0);
    return { id: r.ID, ttlMs: int(r.TTL) * 1000 };
  }

  async keepAlive(id: LeaseId): Promise<number> {
    const r = (await this.#call("/v3/lease/keepalive", { ID: id })) as { result?: { TTL?: string } };
    return Math.max(0, int(r.result?.TTL)) * 1000;
  }

  async revoke(id: LeaseId): Promise<void> {
    try {
      await this.#call("/v3/lease/revoke", { ID: id });
    } catch (e) {
      if (!(e instanceof EtcdError && e.grpcCode === GRPC_NOT_FOUND)) throw e;
    }
  }

  /**
   * One POST, to the current endpoint and on a connection failure to the next ones, all within one
   * deadline. An error answer (HTTP ≥ 400) is etcd's verdict and is not retried elsewhere.
   */
  async #call(path: string, body: unknown): Promise<unknown> {
    const signal = AbortSignal.timeout(this.#timeoutMs);
    const text = JSON.stringify(body);
    let lastError = "";
    for (let tried = 0; tried < this.#endpoints.length; tried++) {
      const i = (this.#current + tried) % this.#endpoints.length;
      const url = this.#endpoints[i]! + path;
      let res: Response;
      try {
        res = await fetch(url, { method: "POST", body: text, headers: { "content-type": "application/json" }, signal });
      } catch (e) {
        lastError = `${this.#endpoints[i]}: ${e instanceof Error ? e.message : String(e)}`;
        if (signal.aborted) break;
        continue;
      }
      this.#current = i;
      const answer = await readJson(res, signal);
      if (res.status >= 400) {
        const err = answer as { message?: string; error?: string; code?: number } | undefined;
        const text = `etcd ${path}: ${err?.message ?? err?.error ?? `HTTP ${res.status}`}`;
        // etcd is there but cannot answer now (no leader, shutting down, its own deadline): as unreachable.
        if (err?.code !== undefined && GRPC_TRANSIENT.has(err.code)) throw new EtcdUnavailableError(text);
        throw new EtcdError(text, err?.code ?? 0);
      }
      return answer;
    }
    throw new EtcdUnavailableError(`etcd unreachable (${this.#endpoints.join(", ")}) within ${this.#timeoutMs} ms: ${lastError || "deadline passed"}`);
  }
}

/** gRPC status NOT_FOUND: etcd's answer about a lease it does not have. */
const GRPC_NOT_FOUND = 5;
/** CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE: etcd could not serve the call now; nothing was decided. */
const GRPC_TRANSIENT: ReadonlySet<number> = new Set([1, 4, 14]);

async function readJson(res: Response, signal: AbortSignal): Promise<unknown> {
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    throw new EtcdUnavailableError(`etcd answer cut off${signal.aborted ? " by the deadline" : ""}: ${String(e)}`);
  }
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new EtcdError(`etcd answered something that is not JSON (HTTP ${res.status}): ${text.slice(0, 200)}`, 0);
  }
}
