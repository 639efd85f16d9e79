/**
 * ACL microbenchmark: what a signed SEND_MESSAGE_V2 with a 1 KiB body costs the broker's check
 * (src/acl/validator.ts checkAccess, the pipeline hook's work) and the client's signing
 * (src/protocol/acl-signature.ts signRequest), on frames decoded as the server decodes them. The
 * requests rotate over 2,000 distinct bodies so the hashing does not run on one cached buffer.
 *
 *   npx bun bench/micro/acl-check.ts [--n 400000]
 *
 * Prints µs per request for each step. Not a test: nothing is asserted. The whole-broker figure
 * is `npm run bench -- --no-peers --only W1 --acl` beside the same run without --acl.
 */
import { checkAccess, parseAclRules } from "../../src/acl/index.ts";
import { aclSignature, signedText, signRequest, verifyAclSignature } from "../../src/protocol/acl-signature.ts";
import { createRequest, decodeCommand, encodeCommand, RequestCode, type RemotingCommand } from "../../src/remoting/index.ts";

const CREDENTIALS = { accessKey: "RocketMQ", secretKey: "12345678" };
const DISTINCT = 2000;
const n = Number(process.argv[process.argv.indexOf("--n") + 1] ?? 0) || 400_000;

const rules = parseAclRules("bench.yml", `accounts:\n  - accessKey: ${CREDENTIALS.accessKey}\n    secretKey: ${CREDENTIALS.secretKey}\n    admin: true\n`);
if ("errors" in rules) throw new Error(rules.errors.join("\n"));

/** A SEND_MESSAGE_V2 as our Producer builds it (single-letter fields, UNIQ_KEY and WAIT properties). */
function sendRequest(i: number, body: Uint8Array): RemotingCommand {
  const ext: Record<string, string> = {
    a: "bench-group", b: "w1", c: "TBW102", d: "4", e: String(i % 4), f: "0", g: String(1_700_000_000_000 + i), h: "0",
    i: `UNIQ_KEY\u0001AC110001000078308DB1${(100000 + i).toString(16)}\u0002WAIT\u0001true\u0002`, j: "0", k: "false", m: "false",
  };
  return createRequest(RequestCode.SEND_MESSAGE_V2, ext, body);
}

const bodies = Array.from({ length: DISTINCT }, (_, i) => new Uint8Array(1024).fill(i & 255));
const decoded = bodies.map((body, i) => {
  const cmd = sendRequest(i, body);
  signRequest(cmd, CREDENTIALS);
  const d = decodeCommand(encodeCommand(cmd).subarray(4));
  if ("invalid" in d) throw new Error(`frame does not decode: ${d.invalid}`);
  return d;
});

function time(name: string, f: (i: number) => unknown): void {
  for (let i = 0; i < n / 8; i++) f(i);
  const t = Bun.nanoseconds();
  for (let i = 0; i < n; i++) f(i);
  process.stdout.write(`${name.padEnd(34)} ${((Bun.nanoseconds() - t) / n / 1000).toFixed(3)} µs\n`);
}

const at = (i: number) => decoded[i % DISTINCT]!;
for (let i = 0; i < DISTINCT; i++) if (checkAccess(rules, "10.0.0.1", at(i))) throw new Error("a valid request was refused");
time("broker: checkAccess", (i) => checkAccess(rules, "10.0.0.1", at(i)));
time("broker:   signedText", (i) => signedText(at(i).extFields));
time("broker:   verifyAclSignature", (i) => verifyAclSignature("x".repeat(120), at(i).body, CREDENTIALS.secretKey, at(i).extFields!.Signature));
time("HmacSHA1 of 120 B + 1 KiB", (i) => aclSignature("x".repeat(120), at(i).body, CREDENTIALS.secretKey));
time("client: build + encode", (i) => encodeCommand(sendRequest(i, bodies[i % DISTINCT]!)));
time("client: build + sign + encode", (i) => {
  const cmd = sendRequest(i, bodies[i % DISTINCT]!);
  signRequest(cmd, CREDENTIALS);
  return encodeCommand(cmd);
});
