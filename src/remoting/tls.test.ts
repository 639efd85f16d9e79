/**
 * RemotingServer and RemotingClient over real loopback sockets in each TLS mode (src/common/tls.ts):
 * permissive serves TLS and plaintext on one port, enforcing refuses plaintext, disabled refuses
 * TLS, mutual TLS refuses clients without a certificate or with one from another CA, a client
 * refuses a server certificate its CA did not sign, a reload serves new connections the new
 * certificate, and stop closes TLS connections too.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { defaultConfig } from "../config/schema.ts";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { makeCerts, opensslPresent, type CertSet } from "../../test/harness/certs.ts";
import { connectBun, TlsContext, type ClientTls, type TlsSettings } from "../common/tls.ts";
import { createRequest, createResponse } from "./command.ts";
import { RemotingClient, REMOTING_CLIENT_DEFAULTS } from "./client.ts";
import { RemotingServer, type ConnectionLimits } from "./server.ts";
import { recordingLogger } from "./test-support.ts";

const run = opensslPresent("remoting/tls.test.ts");
const certs: CertSet | undefined = run ? makeCerts() : undefined;
afterAll(() => certs?.remove());

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serve(
  o: Partial<TlsSettings>,
  host = "127.0.0.1",
  limits?: ConnectionLimits,
): Promise<{ server: RemotingServer; addr: string; ctx: TlsContext; log: ReturnType<typeof recordingLogger> }> {
  const c = certs!;
  const settings: TlsSettings = { ...defaultConfig("standalone").tls, certPath: c.serverCert, keyPath: c.serverKey, ...o };
  const log = recordingLogger();
  const ctx = await TlsContext.load(settings, log);
  const server = new RemotingServer({ host, port: 0, frameSizeMaxBytes: 1 << 20, connectionBufferMaxBytes: 1 << 22, log, tls: ctx, ...(limits ? { limits } : {}) });
  server.register(11, { process: (_conn, cmd) => createResponse(cmd, 0, "pong") });
  server.start();
  cleanups.push(() => server.stop());
  return { server, addr: `127.0.0.1:${server.port}`, ctx, log };
}

/** One request over a fresh client; the answer's remark, or the error's message. */
async function ping(addr: string, tls?: ClientTls): Promise<string> {
  const client = new RemotingClient({
    ...REMOTING_CLIENT_DEFAULTS,
    connectTimeoutMs: 2000,
    log: recordingLogger(),
    ...(tls ? { tls: () => tls } : {}),
  });
  try {
    const res = await client.invoke(addr, createRequest(11), 2000);
    return res.remark ?? "";
  } catch (e) {
    return `error: ${e instanceof Error ? e.message : String(e)}`;
  } finally {
    await client.close();
  }
}

const trusting = (): ClientTls => ({ verify: "chain", ca: certs!.read(certs!.ca) });

describe.skipIf(!run)("remoting over TLS", () => {
  test("permissive: TLS and plaintext clients on the same port", async () => {
    const { addr } = await serve({ serverMode: "permissive" });
    expect(await ping(addr)).toBe("pong");
    expect(await ping(addr, trusting())).toBe("pong");
    expect(await ping(addr, { verify: "none" })).toBe("pong");
  });

  test("enforcing: a plaintext client is closed, a TLS client is served", async () => {
    const { addr, log } = await serve({ serverMode: "enforcing" });
    expect(await ping(addr)).toStartWith("error:");
    expect(log.lines.some((l) => l.msg.includes("plaintext on a port in enforcing mode"))).toBe(true);
    expect(await ping(addr, trusting())).toBe("pong");
  });

  test("disabled: a TLS client is closed, plaintext is served", async () => {
    const { addr, log } = await serve({ serverMode: "disabled" });
    expect(await ping(addr, { verify: "none" })).toStartWith("error:");
    expect(log.lines.some((l) => l.msg.includes("TLS handshake on a port with TLS disabled"))).toBe(true);
    expect(await ping(addr)).toBe("pong");
  });

  test("permissive without a certificate serves plaintext and closes a TLS client", async () => {
    const { addr } = await serve({ serverMode: "permissive", certPath: "", keyPath: "" });
    expect(await ping(addr)).toBe("pong");
    expect(await ping(addr, { verify: "none" })).toStartWith("error:");
  });

  test("a client refuses a server certificate its CA did not sign; 'none' accepts it (Java's test mode)", async () => {
    const c = certs!;
    const { addr } = await serve({ serverMode: "enforcing", certPath: c.wrongServerCert, keyPath: c.wrongServerKey });
    expect(await ping(addr, trusting())).toContain("server certificate refused");
    expect(await ping(addr, { verify: "none" })).toBe("pong");
  });

  test("chain verification ignores the host name (broker addresses are IPs), full does not", async () => {
    const { addr: wildcard } = await serve({ serverMode: "enforcing" }, "0.0.0.0");
    const port = wildcard.split(":")[1]!;
    const addr = `127.0.0.1:${port}`;
    // The certificate names 127.0.0.1 and localhost; "127.0.0.2" is the same machine under another name.
    expect(await ping(`127.0.0.2:${port}`, trusting())).toBe("pong");
    expect(await ping(`127.0.0.2:${port}`, { ...trusting(), verify: "full" })).toContain("server certificate refused");
    expect(await ping(addr, { ...trusting(), verify: "full" })).toBe("pong");
  });

  test("mutual TLS: no certificate or one from another CA is refused; a signed one is served", async () => {
    const c = certs!;
    const { addr, server } = await serve({ serverMode: "enforcing", needClientAuth: "require", trustCertPath: c.ca });
    expect(await ping(addr, trusting())).toStartWith("error:");
    const wrong = { ...trusting(), cert: c.read(c.wrongClientCert), key: c.read(c.wrongClientKey) };
    expect(await ping(addr, wrong)).toStartWith("error:");
    expect(server.connectionCount).toBe(0);
    expect(await ping(addr, { ...trusting(), cert: c.read(c.clientCert), key: c.read(c.clientKey) })).toBe("pong");
  });

  test("a reload serves new connections the new certificate; stop closes the TLS connections", async () => {
    const c = certs!;
    const cert = join(c.dir, "remoting-live.pem");
    const key = join(c.dir, "remoting-live.key");
    copyFileSync(c.serverCert, cert);
    copyFileSync(c.serverKey, key);
    const { addr, ctx, server } = await serve({ serverMode: "enforcing", certPath: cert, keyPath: key });
    const port = Number(addr.split(":")[1]);
    const peerCn = async () => {
      const s = await connectBun("127.0.0.1", port, trusting(), undefined, { data: () => {} });
      const cn = s.getPeerCertificate().subject.CN;
      s.end();
      return cn;
    };
    expect(await peerCn()).toBe("rocketbun-server");
    let closed = false;
    const held = await connectBun("127.0.0.1", port, trusting(), undefined, { data: () => {}, close: () => void (closed = true) });
    held.write(new Uint8Array([0, 0, 0, 0]));
    copyFileSync(c.server2Cert, cert);
    copyFileSync(c.server2Key, key);
    expect(await ctx.reload()).toEqual({ status: "reloaded" });
    expect(await peerCn()).toBe("rocketbun-server-2");
    server.stop();
    const deadline = performance.now() + 2000;
    while (!closed && performance.now() < deadline) await Bun.sleep(10);
    expect(closed).toBe(true);
  });

  test("maxConnections counts TLS connections once each, through handshake, open and close; a stalled handshake is cut at frameTimeoutMs", async () => {
    const { addr, server, log } = await serve({ serverMode: "permissive" }, "127.0.0.1", { maxConnections: 2, idleTimeoutMs: 0, frameTimeoutMs: 500 });
    const port = Number(addr.split(":")[1]);
    const held = await connectBun("127.0.0.1", port, trusting(), undefined, { data: () => {} });
    expect(await ping(addr, trusting())).toBe("pong");
    expect(await ping(addr)).toBe("pong");
    const waitCount = async (n: number) => {
      const deadline = performance.now() + 2000;
      while (server.socketCount !== n && performance.now() < deadline) await Bun.sleep(10);
      expect(server.socketCount).toBe(n);
    };
    await waitCount(1);
    // A peer that starts a handshake (one ClientHello byte) and stalls holds the second slot until
    // frameTimeoutMs; meanwhile a third connection is refused.
    let stalledClosed = false;
    const stalled = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data: () => {}, close: () => void (stalledClosed = true) } });
    cleanups.push(() => stalled.terminate());
    stalled.write(new Uint8Array([0x16]));
    await waitCount(2);
    expect(await ping(addr)).toStartWith("error:");
    const deadline = performance.now() + 3000;
    while (!stalledClosed && performance.now() < deadline) await Bun.sleep(10);
    expect(stalledClosed).toBe(true);
    await waitCount(1);
    expect(await ping(addr, trusting())).toBe("pong");
    held.end();
    await waitCount(0);
    expect(log.lines.some((l) => /refused: 2 connections open, the limit \(remoting\.maxConnections\)/.test(l.msg))).toBe(true);
  });
});
