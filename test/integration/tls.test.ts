/**
 * TLS on the compiled binary (tls section of src/config/schema.ts, src/common/tls.ts): our client
 * library over TLS against a broker and name server in enforcing mode, plaintext and a client
 * trusting another CA refused, a slave replicating over TLS (HA link and metadata connections)
 * while the master's HA port refuses plaintext, and a SIGHUP that serves new connections new
 * certificates. Certificates are made with openssl at test time (test/harness/certs.ts).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync } from "node:fs";
import { join } from "node:path";
import { Producer, PullConsumer, type MessageExt } from "rocketbun/client";
import { scope } from "../../src/common/log.ts";
import { connectBun } from "../../src/common/tls.ts";
import { createRequest, RemotingClient, REMOTING_CLIENT_DEFAULTS, RequestCode } from "../../src/remoting/index.ts";
import { ROOT, startRocketbun, waitFor, type RunningBinary } from "../harness/binary.ts";
import { makeCerts, opensslPresent, type CertSet } from "../harness/certs.ts";
import { freeBrokerPort } from "../harness/ha-cluster.ts";
import { testMinYaml, uniq } from "../client/support.ts";

const run = opensslPresent("integration/tls.test.ts");
const certs: CertSet | undefined = run ? makeCerts() : undefined;
afterAll(() => certs?.remove());

/** The tls section: enforcing with the test server certificate, outgoing TLS checked against the test CA. */
function tlsSection(c: CertSet, o: Record<string, string | boolean> = {}): Record<string, string | boolean> {
  return { serverMode: "enforcing", certPath: c.serverCert, keyPath: c.serverKey, enable: true, clientTrustCertPath: c.ca, ...o };
}

const enc = (s: string) => new TextEncoder().encode(s);

/** A plaintext wire client's GET_ROUTEINFO_BY_TOPIC: the error text, or "answered". */
async function plaintextRequest(addr: string): Promise<string> {
  const wire = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, connectTimeoutMs: 2000, log: scope("test-plain") });
  try {
    await wire.invoke(addr, createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: "x" }), 2000);
    return "answered";
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  } finally {
    await wire.close();
  }
}

/** The CN of the certificate a new TLS connection to `port` is shown. */
async function servedCn(port: number, ca: string): Promise<string> {
  const s = await connectBun("127.0.0.1", port, { verify: "chain", ca }, undefined, { data: () => {} });
  const cn = String(s.getPeerCertificate().subject.CN);
  s.end();
  return cn;
}

async function admin<T>(b: RunningBinary, path: string): Promise<T> {
  return (await (await fetch(`${b.adminUrl}${path}`)).json()) as T;
}

describe.skipIf(!run)("TLS (compiled binary)", () => {
  test("enforcing: our client sends and pulls over TLS; plaintext and a client trusting another CA are refused", async () => {
    const c = certs!;
    await using srv = await startRocketbun({ role: "standalone", configYaml: testMinYaml({ tls: tlsSection(c) }) });
    const topic = uniq("T_tls");
    const ca = c.read(c.ca);
    // The broker registers with its name server just after start, over TLS here, as Apache's
    // broker does: the first send (auto-creation, through TBW102's route) waits for that route.
    // Sending at once failed once in a fresh-clone CI run, 89 ms after the start.
    const probe = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("test-client"), tls: () => ({ verify: "chain", ca }) });
    try {
      const route = () => probe.invoke(srv.namesrvAddr, createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: "TBW102" }), 2000);
      await waitFor(async () => (await route()).code === 0, 10_000, "TBW102's route");
    } finally {
      probe.close();
    }
    const producer = new Producer({ namesrv: srv.namesrvAddr, group: uniq("PG_tls"), tls: { ca } });
    await producer.start();
    try {
      for (let i = 0; i < 5; i++) expect((await producer.send({ topic, body: enc(`m${i}`) })).status).toBe("SEND_OK");
    } finally {
      await producer.shutdown();
    }
    const consumer = new PullConsumer({ namesrv: srv.namesrvAddr, group: uniq("CG_tls"), fromWhere: "first", autoCommit: false, tls: { ca } });
    await consumer.start();
    const got: MessageExt[] = [];
    try {
      // The topic was auto-created by the sends; its route reaches the name server with the
      // broker's next registration (brought forward, but asynchronous).
      const queues = await waitFor(() => consumer.fetchQueues(topic).catch(() => undefined), 10_000, "the topic's route");
      consumer.assign(queues);
      await waitFor(async () => (got.push(...(await consumer.poll(200))), got.length >= 5), 10_000, "5 messages pulled over TLS");
    } finally {
      await consumer.shutdown();
    }
    expect(got.map((m) => new TextDecoder().decode(m.body)).sort()).toEqual(["m0", "m1", "m2", "m3", "m4"]);

    expect(await plaintextRequest(srv.namesrvAddr)).not.toBe("answered");
    expect(await plaintextRequest(`127.0.0.1:${srv.ports.broker}`)).not.toBe("answered");
    const wrongCa = new Producer({ namesrv: srv.namesrvAddr, group: uniq("PG_wrong"), tls: { ca: c.read(c.wrongCa) }, requestTimeoutMs: 1000 });
    await wrongCa.start();
    try {
      const err = await wrongCa.send({ topic, body: enc("refused") }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
    } finally {
      await wrongCa.shutdown();
    }
  }, 30_000);

  test("a slave replicates over TLS (HA link and metadata connections); the master's HA port refuses plaintext", async () => {
    const c = certs!;
    const tls = tlsSection(c);
    await using ns = await startRocketbun({ role: "namesrv", configYaml: testMinYaml({ tls }) });
    const port = freeBrokerPort();
    const brokerYaml = testMinYaml({ tls, broker: { autoCreateTopicEnable: true, brokerClusterName: "TlsCluster" } });
    const common = ["--namesrv", ns.namesrvAddr, "--broker-name", "broker-tls"];
    await using master = await startRocketbun({ role: "master", configYaml: brokerYaml, args: [...common, "--listen", `127.0.0.1:${port}`] });
    await using slave = await startRocketbun({ role: "slave", configYaml: brokerYaml, args: common });
    const producer = new Producer({ namesrv: ns.namesrvAddr, group: uniq("PG_ha"), tls: { ca: c.read(c.ca) } });
    await producer.start();
    try {
      for (let i = 0; i < 20; i++) await producer.send({ topic: "TlsHaTopic", body: enc(`ha-${i}`) });
    } finally {
      await producer.shutdown();
    }
    type Ha = { master?: { connected: boolean; maxOffset: number; masterMaxOffset: number } };
    let last: Ha = {};
    const caughtUp = await waitFor(
      async () => {
        last = await admin<Ha>(slave, "/ha");
        const m = last.master;
        return m && m.connected && m.masterMaxOffset > 0 && m.maxOffset === m.masterMaxOffset ? m : null;
      },
      20_000,
      () => `the slave to catch up over TLS: ${JSON.stringify(last)}\n${master.output.err()}\n${slave.output.err()}`,
    );
    expect(caughtUp.maxOffset).toBeGreaterThan(0);

    // The HA port is in enforcing mode too: a plaintext slave report is closed unanswered.
    let closed = false;
    const raw = await Bun.connect({ hostname: "127.0.0.1", port: master.ports.ha!, socket: { data() {}, close: () => void (closed = true) } });
    raw.write(new Uint8Array(8));
    await waitFor(() => closed, 5000, "the master's HA port to close a plaintext connection");
  }, 60_000);

  // node:tls path of src/remoting/transport.ts, through the Node bundle (scripts/build-client.ts).
  test.skipIf(Bun.which("node") === null)(
    "Node 20: the client bundle sends over TLS with the CA, and is refused with another CA",
    async () => {
      const c = certs!;
      const build = Bun.spawnSync([process.execPath, join(ROOT, "scripts/build-client.ts")], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
      expect(build.exitCode, build.stderr.toString()).toBe(0);
      await using srv = await startRocketbun({ role: "standalone", configYaml: testMinYaml({ tls: tlsSection(c) }) });
      const script = `
      import { readFileSync } from "node:fs";
      import { Producer } from ${JSON.stringify(join(ROOT, "dist/client/index.js"))};
      const [namesrv, ca, wrongCa] = process.argv.slice(1);
      const send = async (caFile) => {
        const p = new Producer({ namesrv, group: "PG_node_tls_" + process.pid, tls: { ca: readFileSync(caFile, "utf8") }, requestTimeoutMs: 1500 });
        await p.start();
        try { return (await p.send({ topic: "T_node_tls", body: new TextEncoder().encode("n") })).status; }
        catch (e) { return "error"; }
        finally { await p.shutdown(); }
      };
      console.log(JSON.stringify({ right: await send(ca), wrong: await send(wrongCa) }));
    `;
      const proc = Bun.spawn(["node", "--input-type=module", "-e", script, srv.namesrvAddr, c.ca, c.wrongCa], { stdout: "pipe", stderr: "pipe" });
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
      expect(code, err).toBe(0);
      expect(JSON.parse(out.trim().split("\n").pop()!)).toEqual({ right: "SEND_OK", wrong: "error" });
    },
    60_000,
  );

  test("SIGHUP re-reads the certificate files: new connections get the new certificate, a bad file keeps the old one", async () => {
    const c = certs!;
    const dir = join(c.dir, `live-${Date.now()}`);
    const cert = `${dir}.pem`;
    const key = `${dir}.key`;
    copyFileSync(c.serverCert, cert);
    copyFileSync(c.serverKey, key);
    const yaml = testMinYaml({ logLevel: "info", tls: tlsSection(c, { certPath: cert, keyPath: key }) });
    await using srv = await startRocketbun({ role: "standalone", configYaml: yaml });
    const ca = c.read(c.ca);
    const port = srv.ports.broker!;
    expect(await servedCn(port, ca)).toBe("rocketbun-server");

    copyFileSync(c.server2Cert, cert); // the key does not match yet: refused, old certificate kept
    srv.proc.kill("SIGHUP");
    await waitFor(
      () => srv.output.out().includes("keeping the certificates in use") || srv.output.err().includes("keeping the certificates in use"),
      5000,
      "the refused reload",
    );
    expect(await servedCn(port, ca)).toBe("rocketbun-server");

    copyFileSync(c.server2Key, key);
    srv.proc.kill("SIGHUP");
    await waitFor(async () => (await servedCn(port, ca)) === "rocketbun-server-2", 5000, "the new certificate after SIGHUP");
    expect(await servedCn(srv.ports.namesrv!, ca)).toBe("rocketbun-server-2");
  }, 30_000);

  test("admin.https: the admin API over HTTPS with the same certificate, a new one after SIGHUP; plain HTTP refused", async () => {
    const c = certs!;
    const dir = join(c.dir, `admin-${Date.now()}`);
    const cert = `${dir}.pem`;
    const key = `${dir}.key`;
    copyFileSync(c.serverCert, cert);
    copyFileSync(c.serverKey, key);
    const yaml = testMinYaml({ tls: tlsSection(c, { certPath: cert, keyPath: key }), admin: { https: true, token: "https-admin-token" } });
    await using srv = await startRocketbun({ role: "standalone", configYaml: yaml });
    const ca = c.read(c.ca);
    const url = `https://127.0.0.1:${srv.ports.admin}`;
    const auth = { Authorization: "Bearer https-admin-token" };
    expect((await fetch(`${url}/health`, { tls: { ca } })).status).toBe(200);
    expect((await fetch(`${url}/topics`, { tls: { ca } })).status).toBe(401);
    expect((await fetch(`${url}/topics`, { tls: { ca }, headers: auth })).status).toBe(200);
    expect(
      await fetch(`http://127.0.0.1:${srv.ports.admin}/health`)
        .then((r) => r.status)
        .catch(() => "refused"),
    ).not.toBe(200);
    expect(await servedCn(srv.ports.admin!, ca)).toBe("rocketbun-server");

    copyFileSync(c.server2Cert, cert);
    copyFileSync(c.server2Key, key);
    srv.proc.kill("SIGHUP");
    await waitFor(
      async () => (await servedCn(srv.ports.admin!, ca).catch(() => "")) === "rocketbun-server-2",
      5000,
      "the admin port's new certificate",
    );
    expect((await fetch(`${url}/topics`, { tls: { ca }, headers: auth })).status).toBe(200);
  }, 30_000);
});
