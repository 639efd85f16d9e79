/**
 * Test certificates, made at test time with the `openssl` command into a temp dir: a CA, a second
 * (wrong) CA, server certificates for 127.0.0.1/localhost signed by each, a second server
 * certificate for reload tests, and client certificates signed by each CA. Keys are EC P-256 in
 * PKCS#8 PEM (what Java's Netty wants). Without openssl on the PATH the suites that need it skip
 * with one line, and fail under CI=true (as test/harness/java.ts does for Java).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toolsPresent } from "./java.ts";

export interface CertSet {
  dir: string;
  /** Paths of PEM files. */
  ca: string;
  wrongCa: string;
  serverCert: string;
  serverKey: string;
  /** Another certificate and key for the same names (reload tests). */
  server2Cert: string;
  server2Key: string;
  /** A server certificate signed by the wrong CA. */
  wrongServerCert: string;
  wrongServerKey: string;
  clientCert: string;
  clientKey: string;
  wrongClientCert: string;
  wrongClientKey: string;
  read(path: string): string;
  remove(): void;
}

export function opensslPresent(suite: string): boolean {
  return toolsPresent(suite, ["openssl"]);
}

function openssl(args: string[], cwd: string): void {
  const r = Bun.spawnSync(["openssl", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`openssl ${args.join(" ")} failed: ${r.stderr.toString()}`);
}

const KEY_ARGS = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

function selfSigned(dir: string, name: string, cn: string): void {
  openssl(["req", "-x509", ...KEY_ARGS, "-keyout", `${name}.key`, "-out", `${name}.pem`, "-days", "30", "-subj", `/CN=${cn}`], dir);
}

function signed(dir: string, name: string, cn: string, ca: string, ext: string): void {
  openssl(["req", ...KEY_ARGS, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${cn}`], dir);
  writeFileSync(join(dir, `${name}.ext`), ext);
  const caArgs = ["-CA", `${ca}.pem`, "-CAkey", `${ca}.key`, "-CAcreateserial"];
  openssl(["x509", "-req", "-in", `${name}.csr`, ...caArgs, "-out", `${name}.pem`, "-days", "30", "-extfile", `${name}.ext`], dir);
}

export function makeCerts(): CertSet {
  const dir = mkdtempSync(join(tmpdir(), "rocketbun-certs-"));
  const serverExt = "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n";
  const clientExt = "extendedKeyUsage=clientAuth\n";
  selfSigned(dir, "ca", "RocketBun Test CA");
  selfSigned(dir, "wrongca", "Wrong CA");
  signed(dir, "server", "rocketbun-server", "ca", serverExt);
  signed(dir, "server2", "rocketbun-server-2", "ca", serverExt);
  signed(dir, "wrongserver", "wrong-server", "wrongca", serverExt);
  signed(dir, "client", "rocketbun-client", "ca", clientExt);
  signed(dir, "wrongclient", "wrong-client", "wrongca", clientExt);
  const p = (f: string) => join(dir, f);
  return {
    dir,
    ca: p("ca.pem"),
    wrongCa: p("wrongca.pem"),
    serverCert: p("server.pem"),
    serverKey: p("server.key"),
    server2Cert: p("server2.pem"),
    server2Key: p("server2.key"),
    wrongServerCert: p("wrongserver.pem"),
    wrongServerKey: p("wrongserver.key"),
    clientCert: p("client.pem"),
    clientKey: p("client.key"),
    wrongClientCert: p("wrongclient.pem"),
    wrongClientKey: p("wrongclient.key"),
    read: (path) => readFileSync(path, "utf8"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
