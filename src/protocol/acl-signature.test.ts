/**
 * The signature against vectors printed by Apache RocketMQ 4.9.8's own AclClientRPCHook
 * (test/golden/acl/Golden.java → vectors.json): we must sign exactly as the Java client does.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import { aclSignature, signedText, signRequest, utf8Java, verifyAclSignature } from "./acl-signature.ts";

interface SignatureVector {
  name: string;
  code: number;
  accessKey: string;
  secretKey: string;
  securityToken?: string;
  extFields: Record<string, string>;
  bodyBase64?: string | null;
  signature: string;
}

const vectors = JSON.parse(readFileSync(join(import.meta.dir, "../../test/golden/acl/vectors.json"), "utf8")) as { signatures: SignatureVector[] };

const bodyOf = (v: SignatureVector) =>
  v.bodyBase64 === undefined || v.bodyBase64 === null ? undefined : new Uint8Array(Buffer.from(v.bodyBase64, "base64"));

describe("ACL signature = Java AclClientRPCHook (golden vectors)", () => {
  for (const v of vectors.signatures) {
    test(v.name, () => {
      const body = bodyOf(v);
      expect(aclSignature(signedText(v.extFields), body, v.secretKey)).toBe(v.signature);
      expect(verifyAclSignature(signedText(v.extFields), body, v.secretKey, v.signature)).toBe(true);
      // Signing the unsigned request gives the same fields Java put on the wire.
      const ext = { ...v.extFields };
      delete ext["AccessKey"];
      delete ext["SecurityToken"];
      delete ext["Signature"];
      const cmd = { extFields: ext, body };
      const creds = v.securityToken === undefined ? { accessKey: v.accessKey, secretKey: v.secretKey } : { ...v, securityToken: v.securityToken };
      signRequest(cmd, creds);
      expect(cmd.extFields).toEqual(v.extFields);
    });
  }
});

describe("verifyAclSignature", () => {
  const v = vectors.signatures[0]!;
  const text = signedText(v.extFields);
  test("refuses a wrong secret, a changed field, a changed body, a missing or odd-sized signature", () => {
    expect(verifyAclSignature(text, bodyOf(v), "wrong-secret", v.signature)).toBe(false);
    expect(verifyAclSignature(signedText({ ...v.extFields, b: "other" }), bodyOf(v), v.secretKey, v.signature)).toBe(false);
    expect(verifyAclSignature(text, new Uint8Array([1]), v.secretKey, v.signature)).toBe(false);
    expect(verifyAclSignature(text, bodyOf(v), v.secretKey, undefined)).toBe(false);
    expect(verifyAclSignature(text, bodyOf(v), v.secretKey, v.signature + "=")).toBe(false);
    expect(verifyAclSignature(text, bodyOf(v), v.secretKey, "é".repeat(14))).toBe(false);
  });

  test("Signature and _UNIQUE_KEY_QUERY are left out of the signed text, key names are not signed", () => {
    expect(signedText({ b: "2", a: "1", Signature: "x", _UNIQUE_KEY_QUERY: "true" })).toBe("12");
    expect(signedText({ B: "1", a: "2" })).toBe("12"); // UTF-16 order: upper case first
    expect(signedText(undefined)).toBe("");
  });

  test("an unpaired surrogate is encoded as Java does (?)", () => {
    expect(utf8Java("a\uD800b").toString("latin1")).toBe("a?b");
    expect(utf8Java("😀").length).toBe(4);
  });
});

describe("a stale OpenSSL error left by unrelated TLS work", () => {
  test("does not fail a signature (Bun's hasher reports it once at its next call)", () => {
    const expected = aclSignature("content", new Uint8Array([1, 2, 3]), "stale-error-secret");
    for (let i = 0; i < 3; i++) {
      // A certificate that does not parse leaves an error on the thread's OpenSSL queue.
      expect(() => createSecureContext({ cert: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", key: "junk" })).toThrow();
      expect(aclSignature("content", new Uint8Array([1, 2, 3]), "stale-error-secret")).toBe(expected);
    }
  });
});
