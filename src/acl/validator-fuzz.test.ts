/**
 * Seeded fuzz of the validator: mutated signatures and extFields (missing, duplicated under other
 * cases, huge, lone surrogates, bytes that are not UTF-8) never make it throw, and never let an
 * unsigned or tampered request through. The seed is printed; SEED=n replays it.
 */
import { expect, test } from "bun:test";
import { fuzzIterations, fuzzSeed, prng, type Rng } from "../../test/harness/fuzz.ts";
import { signRequest } from "../protocol/acl-signature.ts";
import { createRequest, type RemotingCommand } from "../remoting/command.ts";
import { RequestCode } from "../remoting/request-code.ts";
import { parseAclRules, type AclRules } from "./rules.ts";
import { checkAccess } from "./validator.ts";

const rules = parseAclRules(
  "acl.yml",
  "accounts:\n  - accessKey: fuzz-ak-1\n    secretKey: fuzz-sk-1\n    defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: PUB|SUB\n",
) as AclRules;
const CODES = [
  RequestCode.SEND_MESSAGE,
  RequestCode.SEND_MESSAGE_V2,
  RequestCode.PULL_MESSAGE,
  RequestCode.HEART_BEAT,
  RequestCode.UPDATE_AND_CREATE_TOPIC,
  9999,
];
const KEYS = ["topic", "group", "a", "b", "consumerGroup", "AccessKey", "accesskey", "Signature", "SecurityToken", "_UNIQUE_KEY_QUERY", "x"];

function value(rng: Rng): string {
  switch (rng.int(0, 4)) {
    case 0:
      return "";
    case 1:
      return "t".repeat(rng.int(1, 100_000));
    case 2:
      return "a\uD800b";
    case 3:
      return new TextDecoder().decode(rng.bytes(rng.int(1, 40)));
    default:
      return `v${rng.int(0, 9)}`;
  }
}

/** A signed request, then one mutation that must break it. */
function tampered(rng: Rng): RemotingCommand {
  const ext: Record<string, string> = {};
  for (let i = rng.int(0, 5); i > 0; i--) ext[rng.pick(KEYS)] = value(rng);
  const cmd = createRequest(rng.pick(CODES), ext, rng.bool() ? rng.bytes(rng.int(0, 64)) : undefined);
  signRequest(cmd, { accessKey: "fuzz-ak-1", secretKey: "fuzz-sk-1" });
  const e = cmd.extFields!;
  switch (rng.int(0, 5)) {
    case 0:
      delete e.Signature;
      break;
    case 1:
      e.Signature = value(rng);
      break;
    case 2:
      e[rng.pick(["topic", "b", "zz"])] = `changed${rng.int(0, 1e6)}`;
      break;
    case 3:
      cmd.body = Uint8Array.from([...(cmd.body ?? []), rng.int(0, 255)]);
      break;
    case 4:
      delete e.AccessKey;
      break;
    default:
      e.Signature = e.Signature!.slice(0, -2) + (e.Signature!.endsWith("A=") ? "B=" : "A=");
  }
  return cmd;
}

test("fuzzed requests: the validator never throws and never allows a tampered request", () => {
  const seed = fuzzSeed();
  console.log(`acl validator fuzz seed ${seed} (SEED=${seed} replays)`);
  const rng = prng(seed);
  for (let i = 0, n = fuzzIterations(2000); i < n; i++) {
    const cmd = tampered(rng);
    const copy = { ...cmd, extFields: { ...cmd.extFields } };
    let denial;
    expect(() => (denial = checkAccess(rules, "172.16.0.1", cmd))).not.toThrow();
    expect({ seed, i, allowed: denial === undefined }).toEqual({ seed, i, allowed: false });
    expect(cmd.extFields).toEqual(copy.extFields); // the check changes nothing
  }
});
