/**
 * The request signature of RocketMQ's plain ACL, shared by the broker (which checks it) and the
 * client (which makes it): one definition, so the two cannot drift.
 *
 * What Apache RocketMQ 4.9's AclClientRPCHook does to a request, just before it is encoded:
 *   1. extFields += AccessKey (and SecurityToken when the credentials have one); the custom
 *      header's fields are already in extFields (makeCustomHeaderToNet);
 *   2. content = the values of extFields, sorted by key (Java TreeMap<String>: UTF-16 code unit
 *      order, which is also JavaScript's default sort), keys themselves left out, "Signature"
 *      left out, concatenated with no separator, encoded as UTF-8, followed by the body bytes
 *      (nothing when there is no body);
 *   3. extFields.Signature = Base64(HmacSHA1(key = UTF-8 of the SecretKey, content)).
 *
 * The broker (PlainAccessValidator.parse) rebuilds the content the same way but also leaves out
 * "_UNIQUE_KEY_QUERY", which the Java client adds to QUERY_MESSAGE before it signs, so a Java
 * client's unique-key query never verifies against a Java broker. We verify as the Java broker
 * does, and our client signs what the broker verifies (it leaves the field out too), so its
 * queries pass on both brokers.
 *
 * Java's String.getBytes(UTF-8) writes an unpaired surrogate as "?"; Buffer.from writes U+FFFD.
 * Values that arrive from the wire are decoded UTF-8 and cannot hold one, but a caller's string
 * can, so `utf8Java` replaces them first, as Java would.
 *
 * Golden vectors from the real AclClientRPCHook: test/golden/acl/vectors.json (Golden.java).
 */
import { createHmac } from "node:crypto";

export const ACL_ACCESS_KEY_FIELD = "AccessKey";
export const ACL_SIGNATURE_FIELD = "Signature";
export const ACL_SECURITY_TOKEN_FIELD = "SecurityToken";
/** QUERY_MESSAGE: "true" when `key` is a message's unique key (MixAll.UNIQUE_MSG_QUERY_FLAG). */
export const UNIQUE_KEY_QUERY_FLAG = "_UNIQUE_KEY_QUERY";

/** Java `SessionCredentials`: what a client signs with. */
export interface AclCredentials {
  accessKey: string;
  secretKey: string;
  securityToken?: string;
}

/** Fields that never enter the content the broker verifies. */
const UNSIGNED_FIELDS: ReadonlySet<string> = new Set([ACL_SIGNATURE_FIELD, UNIQUE_KEY_QUERY_FLAG]);

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** UTF-8 bytes as Java's String.getBytes(UTF_8) makes them (an unpaired surrogate becomes "?"). */
export function utf8Java(s: string): Buffer {
  return Buffer.from(s.isWellFormed() ? s : s.replace(LONE_SURROGATE, "?"), "utf8");
}

/**
 * The last key list seen and its signed keys in sorted order. A connection's requests of one kind
 * carry the same fields in the same order (one client, one header class), so the sort — 3.5 % of a
 * broker's CPU under signed W1 sends — is done once per change of shape, not once per request.
 * The check walks the object's keys with for-in against the cached list, which allocates nothing
 * (Object.keys made an array per request, on both the client and the broker).
 */
let lastKeys: string[] = [];
let lastSorted: string[] = [];

function sameKeys(extFields: Readonly<Record<string, string>>, keys: readonly string[]): boolean {
  let i = 0;
  for (const k in extFields) {
    if (keys[i] !== k) return false;
    i++;
  }
  return i === keys.length;
}

function sortedSignedKeys(extFields: Readonly<Record<string, string>>): string[] {
  if (sameKeys(extFields, lastKeys)) return lastSorted;
  const keys = Object.keys(extFields);
  const sorted = keys.filter((k) => !UNSIGNED_FIELDS.has(k)).sort();
  lastKeys = keys;
  lastSorted = sorted;
  return sorted;
}

/** The concatenated values of `extFields`, sorted by key, without the unsigned fields. */
export function signedText(extFields: Readonly<Record<string, string>> | undefined): string {
  if (extFields === undefined) return "";
  const keys = sortedSignedKeys(extFields);
  let text = "";
  for (let i = 0; i < keys.length; i++) text += extFields[keys[i]!];
  return text;
}

/**
 * Bun's native HMAC where it runs (the broker, the client under Bun), node:crypto elsewhere (the
 * client bundle on Node 20); both take a string as UTF-8. Under Bun one keyed hasher is kept per
 * secret key and copied per request, which skips the key schedule. Measured per SEND_MESSAGE_V2
 * with a 1 KiB body: createHmac 1.6 µs, a new Bun.CryptoHasher 1.0–1.35 µs, a copy 0.83 µs; the
 * whole broker-side check went from 6.6 µs to about 2 µs (bench: `npm run bench -- --acl`).
 */
const BunHasher = typeof Bun !== "undefined" ? Bun.CryptoHasher : undefined;

interface KeyState {
  bytes: Uint8Array;
  /** Under Bun: an HMAC-SHA1 hasher keyed and never updated, copied per signature. */
  keyed?: InstanceType<NonNullable<typeof BunHasher>>;
}

/** Per secret key, made once (a broker checks every request with one of a few keys). */
const KEYS = new Map<string, KeyState>();
const KEYS_MAX = 256;

function keyState(secretKey: string): KeyState {
  let k = KEYS.get(secretKey);
  if (k === undefined) {
    if (KEYS.size >= KEYS_MAX) KEYS.clear();
    const bytes = utf8Java(secretKey);
    k = BunHasher !== undefined ? { bytes, keyed: new BunHasher("sha1", bytes) } : { bytes };
    KEYS.set(secretKey, k);
  }
  return k;
}

function bunHmac(keyed: NonNullable<KeyState["keyed"]>, content: string, body: Uint8Array | undefined): string {
  const h = keyed.copy();
  h.update(content);
  if (body !== undefined && body.length > 0) h.update(body);
  return h.digest("base64");
}

/** Base64(HmacSHA1(secretKey, text ++ body)): AclSigner.calSignature over combineRequestContent. */
export function aclSignature(text: string, body: Uint8Array | undefined, secretKey: string): string {
  const content = text.isWellFormed() ? text : text.replace(LONE_SURROGATE, "?");
  const key = keyState(secretKey);
  if (key.keyed !== undefined) {
    try {
      return bunHmac(key.keyed, content, body);
    } catch {
      // Bun's hasher reports an OpenSSL error that unrelated TLS work on this thread left behind
      // (a failed handshake, a certificate that did not load) at its next call, and clears it;
      // the second call is the real answer (node:crypto clears the queue itself).
      return bunHmac(key.keyed, content, body);
    }
  }
  const mac = createHmac("sha1", key.bytes).update(content, "utf8");
  if (body !== undefined && body.length > 0) mac.update(body);
  return mac.digest("base64");
}

/**
 * Whether `signature` (as received) is the signature of text ++ body under `secretKey`. The
 * comparison takes the same time wherever the first differing byte is, so a forger learns nothing
 * from how long a refusal takes. A missing or wrongly sized signature is simply false.
 */
export function verifyAclSignature(text: string, body: Uint8Array | undefined, secretKey: string, signature: string | undefined): boolean {
  if (signature === undefined) return false;
  const expected = aclSignature(text, body, secretKey);
  // Base64 of a SHA-1 is 28 ASCII characters. The strings are compared in place (two Buffers and
  // timingSafeEqual were 0.25 µs of a broker's check): every character is looked at whatever
  // differs, and a wrongly sized signature is refused before, as timingSafeEqual would.
  if (signature.length !== expected.length) return false;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) diff |= signature.charCodeAt(i) ^ expected.charCodeAt(i);
  return diff === 0;
}

/**
 * Signs a request in place as AclClientRPCHook.doBeforeRequest does: adds AccessKey, SecurityToken
 * (when set) and Signature to `extFields` (creating it when absent). Call it after every other
 * field is set and before the request is encoded.
 */
export function signRequest(cmd: { extFields?: Record<string, string>; body?: Uint8Array }, credentials: AclCredentials): void {
  const ext = (cmd.extFields ??= {});
  ext[ACL_ACCESS_KEY_FIELD] = credentials.accessKey;
  if (credentials.securityToken !== undefined) ext[ACL_SECURITY_TOKEN_FIELD] = credentials.securityToken;
  // `delete` would turn the object into a slow dictionary for the encoder; only a re-sign needs it.
  if (ACL_SIGNATURE_FIELD in ext) delete ext[ACL_SIGNATURE_FIELD];
  ext[ACL_SIGNATURE_FIELD] = aclSignature(signedText(ext), cmd.body, credentials.secretKey);
}
