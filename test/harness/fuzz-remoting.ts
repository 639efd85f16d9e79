/**
 * A fuzz campaign against one remoting port (namesrv, broker, VIP) over real sockets. Each
 * connection gets a few generated frames (./fuzz-frames.ts) written at once; the product's own
 * FrameDecoder, fed the same bytes with the server's limit, says what the server must have seen.
 * What is checked, per connection:
 *   - a stream that decodes whole ends with a probe request: the probe is answered (the server
 *     reached the end), and so is every decoded request that expects an answer (not oneway, not
 *     marked as a response, not a pull that may be parked) — or the server closed the connection;
 *   - a stream the decoder refuses is closed by the server; one that ends inside a frame is
 *     closed once `remoting.frameTimeoutMs` passes;
 *   - what the server sends back decodes as frames.
 * Anything else is a finding with the connection's seed-derived number. Names in frames the
 * server never decoded, or answered with a refusal, are collected so that the caller can check
 * that nothing was created by them (the tokens of ./fuzz-frames.ts).
 */
import { type RemotingCommand, createRequest, decodeCommand, encodeCommand, FLAG_ONEWAY, FLAG_RESPONSE, FrameDecoder, RequestCode, ResponseCode } from "../../src/remoting/index.ts";
import { connectionRng, type Rng } from "./fuzz.ts";
import { type FrameFuzzNames, type GeneratedFrame, malformedFrame, structuredFrame } from "./fuzz-frames.ts";

export interface RemotingFuzzOptions {
  host: string;
  port: number;
  /** Connection n draws its frames from prng(seed, n): a run replays from the seed alone. */
  seed: number;
  /** Frames to send in all. */
  inputs: number;
  /** Connections open at once. */
  concurrency: number;
  names: FrameFuzzNames;
  /** The server's `remoting.frameTimeoutMs` and `frameSizeMaxBytes`. */
  frameTimeoutMs: number;
  frameSizeMaxBytes: number;
  /** The longest a request may take to be answered. */
  answerMs?: number;
}

export interface RemotingFuzzReport {
  inputs: number;
  connections: number;
  answered: number;
  closedByServer: number;
  /** Connections by what the decoder made of their bytes: whole, invalid, partial. */
  verdicts: Map<string, number>;
  responseCodes: Map<number, number>;
  kinds: Map<string, number>;
  findings: string[];
  /** Tokens only in frames never decoded or refused (SYSTEM_ERROR, not supported, illegal) → how. */
  refusedTokens: Map<string, string>;
  /** Tokens in requests that were (or may have been) carried out. */
  acceptedTokens: Set<string>;
}

/** Our own probe: a code no role serves, answered with REQUEST_CODE_NOT_SUPPORTED. */
const PROBE_CODE = 30_999;
const PROBE_OPAQUE = -424242;
const REFUSALS: ReadonlySet<number> = new Set([ResponseCode.SYSTEM_ERROR, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, ResponseCode.MESSAGE_ILLEGAL]);
const PARKED: ReadonlySet<number> = new Set([RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE]);
export const FUZZ_TOKEN_PATTERN = /fz[0-9a-z]+x[0-9]+/g;

function tokensIn(c: RemotingCommand): string[] {
  const text = `${JSON.stringify(c.extFields ?? {})}${c.remark ?? ""}${c.body ? Buffer.from(c.body).toString("latin1") : ""}`;
  return text.match(FUZZ_TOKEN_PATTERN) ?? [];
}

interface Plan {
  frames: GeneratedFrame[];
  bytes: Uint8Array;
  /** Requests the server decoded, in order. */
  decoded: RemotingCommand[];
  verdict: "whole" | "invalid" | "partial";
}

function plan(o: RemotingFuzzOptions, rng: Rng, opaqueBase: number): Plan {
  const frames: GeneratedFrame[] = [];
  // Half the connections carry well-formed frames only, so that their requests reach the
  // processors; the others mix in malformed input, which ends the stream where it stands.
  const malformedShare = rng.bool(0.5) ? 0 : 0.3;
  for (let n = rng.int(1, 6); n > 0; n--) {
    frames.push(rng.bool(malformedShare) ? malformedFrame(rng, o.names, o.frameSizeMaxBytes) : structuredFrame(rng, o.names, opaqueBase + frames.length));
  }
  const bytes = new Uint8Array(Buffer.concat(frames.map((f) => f.bytes)));
  return { frames, bytes, ...walkFrames(bytes, o.frameSizeMaxBytes) };
}

/**
 * The frames of `bytes` in order, as the server cuts them (FrameDecoder's loop, one frame at a
 * time): every frame before a bad one may have been processed, whatever the server's reads were
 * (FrameDecoder drops the good frames of a read that ends in a bad one; an earlier read keeps them).
 */
function walkFrames(bytes: Uint8Array, frameSizeMaxBytes: number): Pick<Plan, "decoded" | "verdict"> {
  const decoded: RemotingCommand[] = [];
  let pos = 0;
  while (bytes.length - pos >= 4) {
    const length = new DataView(bytes.buffer, bytes.byteOffset + pos, 4).getUint32(0);
    if (length < 4 || length + 4 > frameSizeMaxBytes) return { decoded, verdict: "invalid" };
    if (bytes.length - pos - 4 < length) return { decoded, verdict: "partial" };
    const c = decodeCommand(bytes.subarray(pos + 4, pos + 4 + length));
    if ("invalid" in c) return { decoded, verdict: "invalid" };
    decoded.push(c);
    pos += 4 + length;
  }
  return { decoded, verdict: pos < bytes.length ? "partial" : "whole" };
}

interface Outcome {
  answers: Map<number, RemotingCommand>;
  closed: boolean;
  garbled: string | null;
}

/** Writes `bytes`, collects answers until `done` says so, the server closes, or `ms` pass. */
async function exchange(host: string, port: number, bytes: Uint8Array, done: (o: Outcome) => boolean, ms: number): Promise<Outcome> {
  const out: Outcome = { answers: new Map(), closed: false, garbled: null };
  const decoder = new FrameDecoder({ frameSizeMaxBytes: 64 * 1024 * 1024 });
  let wake: () => void = () => {};
  const changed = new Promise<void>((r) => (wake = r));
  // Our own end() reports a close too: only the server's counts.
  let ending = false;
  const socket = await Bun.connect({
    hostname: host,
    port,
    socket: {
      data(_s, chunk) {
        const r = decoder.feed(new Uint8Array(chunk));
        if (!Array.isArray(r)) out.garbled = r.invalid;
        else for (const c of r) out.answers.set(c.opaque, c);
        if (done(out) || out.garbled) wake();
      },
      close() {
        out.closed ||= !ending;
        wake();
      },
      error() {
        out.closed ||= !ending;
        wake();
      },
    },
  });
  socket.write(bytes);
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([changed, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
  ending = true;
  if (!out.closed) socket.end();
  return out;
}

function expectsAnswer(c: RemotingCommand): boolean {
  return (c.flag & (FLAG_RESPONSE | FLAG_ONEWAY)) === 0 && !PARKED.has(c.code);
}

function judge(p: Plan, o: Outcome, conn: number, report: RemotingFuzzReport): void {
  const where = `connection ${conn} (${p.frames.map((f) => f.kind).join(", ")})`;
  if (o.garbled) report.findings.push(`${where}: the server's answers do not decode: ${o.garbled}`);
  if (o.closed) report.closedByServer++;
  report.verdicts.set(p.verdict, (report.verdicts.get(p.verdict) ?? 0) + 1);
  if (p.verdict !== "whole" && !o.closed) report.findings.push(`${where}: ${p.verdict} stream, but the server kept the connection open`);
  if (p.verdict === "whole" && !o.closed && !o.answers.has(PROBE_OPAQUE)) report.findings.push(`${where}: no answer to the probe and no close (hang?)`);
  const seen = new Set<string>();
  for (const c of p.decoded) {
    const tokens = tokensIn(c);
    for (const t of tokens) seen.add(t);
    const a = o.answers.get(c.opaque);
    if (a) {
      report.answered++;
      report.responseCodes.set(a.code, (report.responseCodes.get(a.code) ?? 0) + 1);
    }
    if (expectsAnswer(c) && !a && !o.closed && p.verdict === "whole") report.findings.push(`${where}: request code ${c.code} opaque ${c.opaque} never answered`);
    const refused = a !== undefined && REFUSALS.has(a.code) && expectsAnswer(c);
    const how = `request code ${c.code} → ${a ? `${a.code} ${(a.remark ?? "").slice(0, 100)}` : "no answer"}`;
    for (const t of tokens) {
      if (refused) report.refusedTokens.set(t, how);
      else report.acceptedTokens.add(t);
    }
  }
  // Tokens of frames that never decoded were never seen by a processor.
  for (const f of p.frames) for (const t of f.tokens) if (!seen.has(t)) report.refusedTokens.set(t, `never decoded (${f.kind})`);
}

async function oneConnection(o: RemotingFuzzOptions, conn: number, report: RemotingFuzzReport): Promise<number> {
  const p = plan(o, connectionRng(o.seed, conn), conn * 16);
  for (const f of p.frames) report.kinds.set(f.kind, (report.kinds.get(f.kind) ?? 0) + 1);
  const answerMs = o.answerMs ?? 5000;
  let bytes = p.bytes;
  let done: (x: Outcome) => boolean = () => false;
  let ms = o.frameTimeoutMs * 2 + 3000;
  if (p.verdict === "whole") {
    const probe = encodeCommand({ ...createRequest(PROBE_CODE), opaque: PROBE_OPAQUE });
    bytes = Buffer.concat([p.bytes, probe]);
    const wanted = p.decoded.filter(expectsAnswer).map((c) => c.opaque);
    done = (x) => x.answers.has(PROBE_OPAQUE) && wanted.every((w) => x.answers.has(w));
    ms = answerMs;
  } else if (p.verdict === "invalid") {
    ms = answerMs;
  }
  let outcome: Outcome;
  try {
    outcome = await exchange(o.host, o.port, bytes, done, ms);
  } catch (e) {
    report.findings.push(`connection ${conn}: connect failed: ${String(e)}`);
    return p.frames.length;
  }
  judge(p, outcome, conn, report);
  return p.frames.length;
}

/** Runs the campaign; findings are returned, not thrown, so a test can print them all. */
export async function fuzzRemotingPort(o: RemotingFuzzOptions): Promise<RemotingFuzzReport> {
  const report: RemotingFuzzReport = {
    inputs: 0,
    connections: 0,
    answered: 0,
    closedByServer: 0,
    verdicts: new Map(),
    responseCodes: new Map(),
    kinds: new Map(),
    findings: [],
    refusedTokens: new Map(),
    acceptedTokens: new Set(),
  };
  const worker = async (): Promise<void> => {
    while (report.inputs < o.inputs) {
      const conn = report.connections++;
      const sent = await oneConnection(o, conn, report);
      report.inputs += sent;
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  for (const t of report.acceptedTokens) report.refusedTokens.delete(t);
  return report;
}
