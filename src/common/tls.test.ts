/**
 * TLS material and the first-byte rule (src/common/tls.ts): loading and checking the files,
 * reload keeping the old certificates on a bad file, the decision table, the client's check of a
 * server certificate. Certificates are made with openssl at test time (test/harness/certs.ts).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { defaultConfig } from "../config/schema.ts";
import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makeCerts, opensslPresent, type CertSet } from "../../test/harness/certs.ts";
import { recordingLogger } from "../remoting/test-support.ts";
import { checkTlsSettings, classifyFirstByte, peerProblem, TlsContext, type TlsSettings } from "./tls.ts";

const run = opensslPresent("common/tls.test.ts");
const certs: CertSet | undefined = run ? makeCerts() : undefined;
afterAll(() => certs?.remove());

function settings(c: CertSet, o: Partial<TlsSettings> = {}): TlsSettings {
  return { ...defaultConfig("standalone").tls, certPath: c.serverCert, keyPath: c.serverKey, ...o };
}

describe("the first-byte rule", () => {
  test("a ClientHello is upgraded unless TLS is disabled or there is no certificate; plaintext is refused only by enforcing", () => {
    const table = (["disabled", "permissive", "enforcing"] as const).map((mode) => [
      mode,
      classifyFirstByte(mode, 0x16, true),
      classifyFirstByte(mode, 0x16, false),
      classifyFirstByte(mode, 0x00, true),
    ]);
    expect(table).toEqual([
      ["disabled", "refuse-tls", "refuse-tls", "plain"],
      ["permissive", "tls", "refuse-tls", "plain"],
      ["enforcing", "tls", "refuse-tls", "refuse-plain"],
    ]);
  });
});

describe("the client's check of a server certificate", () => {
  const altname = Object.assign(new Error("Hostname/IP does not match certificate's altnames"), { code: "ERR_TLS_CERT_ALTNAME_INVALID" });
  const chain = Object.assign(new Error("unable to verify the first certificate"), { code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE" });
  test("none accepts anything, chain ignores only the host name (as Java), full accepts only a verified peer", () => {
    expect([peerProblem("none", false, chain), peerProblem("chain", false, altname), peerProblem("chain", true, null)]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(peerProblem("chain", false, chain)).toBe("unable to verify the first certificate");
    expect(peerProblem("full", false, altname)).toContain("altnames");
  });
});

describe.skipIf(!run)("TLS material", () => {
  test("a valid certificate and key load; the server options follow tls.needClientAuth", async () => {
    const c = certs!;
    const ctx = await TlsContext.load(settings(c, { needClientAuth: "require", trustCertPath: c.ca }), recordingLogger());
    expect(ctx.serverPem()?.cert).toBe(c.read(c.serverCert));
    expect(ctx.options()).toMatchObject({ requestCert: true, rejectUnauthorized: true });
    expect(ctx.client()).toBeUndefined();
  });

  test("a key that does not belong to the certificate, and a missing file, are refused with the key to fix", async () => {
    const c = certs!;
    expect(await checkTlsSettings(settings(c, { keyPath: c.server2Key }))).toEqual([
      { key: "tls.certPath", problem: "the private key does not belong to the certificate" },
    ]);
    expect(await checkTlsSettings(settings(c, { enable: true, clientTrustCertPath: join(c.dir, "nope.pem") }))).toEqual([
      { key: "tls.clientTrustCertPath", problem: `cannot read ${join(c.dir, "nope.pem")}: no such file` },
    ]);
    await expect(TlsContext.load(settings(c, { keyPath: c.server2Key }), recordingLogger())).rejects.toThrow("tls.certPath: the private key");
  });

  test("tls.enable without a trust file encrypts without verifying; with one it checks the chain", async () => {
    const c = certs!;
    expect((await TlsContext.load(settings(c, { enable: true }), recordingLogger())).client()).toEqual({ verify: "none" });
    const ctx = await TlsContext.load(settings(c, { enable: true, clientTrustCertPath: c.ca }), recordingLogger());
    expect(ctx.client()).toEqual({ verify: "chain", ca: c.read(c.ca) });
  });

  test("reload swaps in new files, keeps the old certificates when the new ones do not fit, and tells listeners", async () => {
    const c = certs!;
    const cert = join(c.dir, "live.pem");
    const key = join(c.dir, "live.key");
    copyFileSync(c.serverCert, cert);
    copyFileSync(c.serverKey, key);
    const log = recordingLogger();
    const ctx = await TlsContext.load(settings(c, { certPath: cert, keyPath: key }), log);
    const seen: (string | undefined)[] = [];
    ctx.onServerPemChange((pem) => seen.push(pem?.cert));
    expect(await ctx.reload()).toEqual({ status: "unchanged" });

    copyFileSync(c.server2Cert, cert); // the key is still the old one: a mismatch
    const kept = await ctx.reload();
    expect(kept.status).toBe("kept");
    expect(ctx.serverPem()?.cert).toBe(c.read(c.serverCert));
    expect(log.lines.some((l) => l.level === "error" && l.msg.includes("keeping the certificates in use"))).toBe(true);

    copyFileSync(c.server2Key, key);
    expect(await ctx.reload()).toEqual({ status: "reloaded" });
    expect(ctx.serverPem()?.cert).toBe(c.read(c.server2Cert));
    expect(seen).toEqual([c.read(c.server2Cert)]);

    writeFileSync(cert, "not a certificate");
    expect((await ctx.reload()).status).toBe("kept");
    expect(ctx.options()?.cert).toBe(c.read(c.server2Cert));
  });
});
