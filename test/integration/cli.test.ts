/**
 * The command-line contract of the compiled binary: --version/--help, config errors (exit 2,
 * every problem with file:line:col, nothing started), --check-config, --print-config, the
 * start-up line, and graceful shutdown on SIGTERM/SIGINT (exit 0 within 10 s).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runRocketbun, startRocketbun, tempDir, waitFor } from "../harness/binary.ts";

const dir = tempDir();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("rocketbun CLI", () => {
  test("--version names the version and the git commit", async () => {
    const r = await runRocketbun(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^rocketbun \d+\.\d+\.\d+ \(commit [0-9a-f]{7,}(-dirty)?, bun 1\.4\.4\)/);
  });

  test("--help documents every contract flag", async () => {
    const r = await runRocketbun(["--help"]);
    expect(r.code).toBe(0);
    for (const f of ["--role", "--config", "--listen", "--admin", "--namesrv", "--store", "--cluster", "--broker-name", "--broker-id", "--broker-role", "--flush-disk", "--log-level", "--check-config", "--print-config", "--version"]) {
      expect(r.stdout).toContain(f);
    }
  });

  test("bench producer|consumer --help (and -h) print the bench's own flags, exit 0", async () => {
    for (const argv of [["bench", "producer", "--help"], ["bench", "consumer", "-h"]]) {
      const r = await runRocketbun(argv);
      expect(r.code).toBe(0);
      expect(r.stdout).toStartWith("Usage: rocketbun bench producer|consumer");
      for (const f of ["-n, --namesrv", "-t, --topic", "-w, --inflight", "-s, --size", "-k, --keys", "-g, --group", "--from", "--count", "--seconds"]) {
        expect(r.stdout).toContain(f);
      }
      expect(r.stdout).not.toContain("--role ROLE");
    }
  });

  test("missing or unknown role, unknown flag → exit 2 with a clear line", async () => {
    const none = await runRocketbun(["--listen", "127.0.0.1:0"], dir);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("--role");
    const bad = await runRocketbun(["--role", "queen"], dir);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("queen");
    const flag = await runRocketbun(["--role", "namesrv", "--frobnicate"], dir);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("--frobnicate");
  });

  test("a bad config file reports every problem with file:line:col and exits 2 without starting", async () => {
    const file = join(dir, "bad.yaml");
    writeFileSync(
      file,
      ["logLevel: loud", "broker:", "  brokerNmae: x", "  brokerId: abc", "  listen: 127.0.0.1:99999", "store:", "  flushDiskType: SOMETIMES", ""].join("\n"),
    );
    const store = join(dir, "never-created");
    const r = await runRocketbun(["--role", "master", "--config", file, "--namesrv", "127.0.0.1:9876", "--store", store], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${file}:1:1: logLevel`);
    expect(r.stderr).toContain(`${file}:3:3: broker.brokerNmae`);
    expect(r.stderr).toContain('did you mean "brokerName"');
    expect(r.stderr).toContain(`${file}:4:3: broker.brokerId`);
    expect(r.stderr).toContain(`${file}:5:3: broker.listen`);
    expect(r.stderr).toContain(`${file}:7:3: store.flushDiskType`);
    expect(r.stdout).not.toContain("rocketbun started");
    expect(existsSync(store)).toBe(false);
  });

  test("missing config file and a missing required value exit 2", async () => {
    const r = await runRocketbun(["--role", "namesrv", "--config", join(dir, "nope.yaml")], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("nope.yaml");
    const m = await runRocketbun(["--role", "master", "--listen", "127.0.0.1:0", "--store", join(dir, "m")], dir);
    expect(m.code).toBe(2);
    expect(m.stderr).toContain("broker.namesrvAddr");
  });

  test("a port in use exits 2 and names the key", async () => {
    const holder = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const r = await runRocketbun(["--role", "namesrv", "--listen", `127.0.0.1:${holder.port}`, "--admin", "127.0.0.1:0", "--store", join(dir, "p")], dir);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("namesrv.listen");
      expect(r.stderr).toContain("already in use");
      expect(r.stdout).not.toContain("rocketbun started");
    } finally {
      holder.stop(true);
    }
  });

  test("an unwritable store dir exits 2", async () => {
    const file = join(dir, "plain-file");
    writeFileSync(file, "x");
    const r = await runRocketbun(["--role", "namesrv", "--listen", "127.0.0.1:0", "--store", join(file, "store")], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("store.dir");
  });

  test("--check-config validates and exits 0; --print-config prints YAML that loads back", async () => {
    const ok = await runRocketbun(["--role", "namesrv", "--config", "config/namesrv.yaml", "--listen", "127.0.0.1:0", "--store", join(dir, "c"), "--check-config"]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("OK");
    const p = await runRocketbun(["--role", "master", "--namesrv", "127.0.0.1:1;127.0.0.1:2", "--broker-name", "broker-z", "--broker-role", "SYNC_MASTER", "--flush-disk", "SYNC_FLUSH", "--print-config"], dir);
    expect(p.code).toBe(0);
    expect(p.stdout).toContain("broker-z");
    expect(p.stdout).toContain("SYNC_MASTER");
    expect(p.stdout).toContain("SYNC_FLUSH");
    const printed = join(dir, "printed.yaml");
    writeFileSync(printed, p.stdout);
    const again = await runRocketbun(["--config", printed, "--print-config"], dir);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(p.stdout);
  });

  test("flags beat the file, the file beats defaults", async () => {
    const file = join(dir, "prec.yaml");
    writeFileSync(file, "role: master\nbroker:\n  brokerName: from-file\n  brokerClusterName: FileCluster\n  namesrvAddr: 127.0.0.1:9876\n");
    const r = await runRocketbun(["--config", file, "--broker-name", "from-flag", "--print-config"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("from-flag");
    expect(r.stdout).not.toContain("from-file");
    expect(r.stdout).toContain("FileCluster");
    expect(r.stdout).toContain("registerNameServerPeriodMs: 30000");
  });

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    test(`start-up line, then ${signal} exits 0 within 10 s`, async () => {
      const srv = await startRocketbun({ role: "namesrv" });
      try {
        await waitFor(() => srv.output.out().includes("rocketbun started"), 5000, "start-up line");
        const line = srv.output.out().split("\n").find((l) => l.includes("rocketbun started"))!;
        expect(line).toContain("role=namesrv");
        expect(line).toMatch(/version=\d+\.\d+\.\d+/);
        expect(line).toContain(`listen=127.0.0.1:${srv.ports.namesrv}`);
        expect(line).toContain(`admin=127.0.0.1:${srv.ports.admin}`);
        expect(line).toContain(`store=${join(srv.dir, "store")}`);
        const t0 = Date.now();
        srv.proc.kill(signal);
        const code = await srv.proc.exited;
        expect(code).toBe(0);
        expect(Date.now() - t0).toBeLessThan(10_000);
      } finally {
        await srv[Symbol.asyncDispose]();
      }
    });
  }

  test("standalone starts the name server and the admin API (test-min config: ephemeral ports)", async () => {
    await using srv = await startRocketbun({ role: "standalone", args: ["--config", join(import.meta.dir, "../../config/test-min.yaml")] });
    expect(srv.ports.namesrv).toBeGreaterThan(0);
    const health = (await (await fetch(`${srv.adminUrl}/health`)).json()) as { status: string; role: string };
    expect(health).toMatchObject({ status: "ok", role: "standalone" });
    const topics = await fetch(`${srv.adminUrl}/namesrv/topics`);
    expect(topics.status).toBe(200);
    const nf = await fetch(`${srv.adminUrl}/no/such/thing`);
    expect(nf.status).toBe(404);
    expect(((await nf.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");
  });

  describe("runtime settings (src/runtime-tuning.ts)", () => {
    const untuned = () => {
      const env: Record<string, string | undefined> = { ...process.env };
      for (const k of ["MIMALLOC_PURGE_DELAY", "BUN_JSC_useFTLJIT", "ROCKETBUN_RUNTIME_TUNING", "ROCKETBUN_RUNTIME_TUNED"]) delete env[k];
      return env;
    };
    const environOf = (pid: number) => new Set(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0"));
    const start = (env: Record<string, string | undefined>) => startRocketbun({ role: "namesrv", env });

    test("started without them, the binary re-execs itself with them: same PID, serving", async () => {
      await using srv = await start(untuned());
      expect(srv.ports.pid).toBe(srv.proc.pid);
      const e = environOf(srv.proc.pid);
      expect(e.has("MIMALLOC_PURGE_DELAY=-1")).toBe(true);
      expect(e.has("BUN_JSC_useFTLJIT=0")).toBe(true);
      expect((await fetch(`${srv.adminUrl}/health`)).status).toBe(200);
      expect(srv.output.out()).toContain("rocketbun started");
      // Started once: one start-up line, not two.
      expect(srv.output.out().split("rocketbun started").length).toBe(2);
    });

    test("a value already in the environment wins", async () => {
      await using srv = await start({ ...untuned(), BUN_JSC_useFTLJIT: "1" });
      const e = environOf(srv.proc.pid);
      expect(e.has("BUN_JSC_useFTLJIT=1")).toBe(true);
      expect(e.has("MIMALLOC_PURGE_DELAY=-1")).toBe(true);
    });

    test("ROCKETBUN_RUNTIME_TUNING=off runs as started", async () => {
      await using srv = await start({ ...untuned(), ROCKETBUN_RUNTIME_TUNING: "off" });
      const e = environOf(srv.proc.pid);
      expect([...e].some((x) => x.startsWith("MIMALLOC_PURGE_DELAY=") || x.startsWith("BUN_JSC_useFTLJIT="))).toBe(false);
      expect((await fetch(`${srv.adminUrl}/health`)).status).toBe(200);
    });
  });
});
