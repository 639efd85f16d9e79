/**
 * The admin HTTP API's token against the compiled binary (issue #15 point 3): no token → reads
 * open, writes refused 403; a token → every endpoint but /health needs it (401 without or wrong);
 * the token from a file, rotated by SIGHUP; the token never shown by GET /config; the default
 * admin address is loopback.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, startRocketbun, tempDir, waitFor, type RunningBinary } from "../harness/binary.ts";

const BASE = `role: standalone
namesrv:
  listen: 127.0.0.1:0
  admin: 127.0.0.1:0
broker:
  listen: 127.0.0.1:0
store:
  commitLogSegmentBytes: 8388608
`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(yaml: string): Promise<RunningBinary> {
  const proc = await startRocketbun({ role: "standalone", configYaml: yaml });
  cleanups.push(() => proc[Symbol.asyncDispose]());
  return proc;
}

const req = (proc: RunningBinary, path: string, method = "GET", token?: string) =>
  fetch(`${proc.adminUrl}${path}`, { method, headers: token === undefined ? {} : { Authorization: `Bearer ${token}` } });

describe("admin API token (compiled binary)", () => {
  test("no token: reads open, POST /config/reload refused with 403 and a JSON error", async () => {
    const proc = await start(BASE);
    expect((await req(proc, "/health")).status).toBe(200);
    expect((await req(proc, "/topics")).status).toBe(200);
    const r = await req(proc, "/config/reload", "POST");
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe("ADMIN_TOKEN_NOT_CONFIGURED");
    expect(proc.output.err() + proc.output.out()).not.toContain("SIGHUP: reloading");
  });

  test("admin.token: /health open, every other endpoint needs it; the token is never shown", async () => {
    const token = "Tok3n-for-admin_api";
    const proc = await start(`${BASE}admin:\n  token: ${token}\n`);
    expect((await req(proc, "/health")).status).toBe(200);
    for (const path of ["/topics", "/config", "/broker", "/namesrv/cluster", "/stats/requests"]) {
      expect({ path, status: (await req(proc, path)).status }).toEqual({ path, status: 401 });
      expect({ path, status: (await req(proc, path, "GET", "wrong")).status }).toEqual({ path, status: 401 });
      expect({ path, status: (await req(proc, path, "GET", token)).status }).toEqual({ path, status: 200 });
    }
    expect((await req(proc, "/config/reload", "POST", "wrong")).status).toBe(401);
    const reload = await req(proc, "/config/reload", "POST", token);
    expect(reload.status).toBe(200);
    expect(((await reload.json()) as { status: string }).status).toBe("applied");
    const shown = await (await req(proc, "/config", "GET", token)).text();
    expect(shown).not.toContain(token);
    expect(shown).toContain('"token":"REDACTED"');
  });

  test("admin.tokenFile: read at start, rotated by SIGHUP (and by POST /config/reload)", async () => {
    const dir = tempDir();
    cleanups.push(async () => {
      const { rmSync } = await import("node:fs");
      rmSync(dir, { recursive: true, force: true });
    });
    const file = join(dir, "admin.token");
    writeFileSync(file, "first-token-value\n");
    const proc = await start(`${BASE}admin:\n  tokenFile: ${file}\n`);
    expect((await req(proc, "/topics", "GET", "first-token-value")).status).toBe(200);
    writeFileSync(file, "second-token-value\n");
    proc.proc.kill("SIGHUP");
    await waitFor(async () => (await req(proc, "/topics", "GET", "second-token-value")).status === 200, 5000, "the rotated token");
    expect((await req(proc, "/topics", "GET", "first-token-value")).status).toBe(401);
    writeFileSync(file, "third-token-value");
    expect((await req(proc, "/config/reload", "POST", "second-token-value")).status).toBe(200);
    expect((await req(proc, "/topics", "GET", "third-token-value")).status).toBe(200);
    // An empty file is refused by the reload; the token in force stays.
    writeFileSync(file, "");
    expect((await req(proc, "/config/reload", "POST", "third-token-value")).status).toBe(422);
    expect((await req(proc, "/topics", "GET", "third-token-value")).status).toBe(200);
  });

  test("admin.token and admin.tokenFile together, or an unreadable token file, stop the start with exit 2", async () => {
    const dir = tempDir();
    const both = join(dir, "both.yaml");
    writeFileSync(both, `${BASE}admin:\n  token: abcdefgh\n  tokenFile: ${join(dir, "t")}\n`);
    const missing = join(dir, "missing.yaml");
    writeFileSync(missing, `${BASE}admin:\n  tokenFile: ${join(dir, "nope")}\n`);
    for (const [file, text] of [
      [both, "set admin.token or admin.tokenFile, not both"],
      [missing, "admin.tokenFile: cannot read"],
    ] as const) {
      const p = Bun.spawn([BINARY, "--check-config", "--config", file], {
        stdout: "pipe",
        stderr: "pipe",
      });
      expect(await p.exited).toBe(2);
      expect(await new Response(p.stderr).text()).toContain(text);
    }
    const { rmSync } = await import("node:fs");
    rmSync(dir, { recursive: true, force: true });
  });
});
