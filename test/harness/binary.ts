/**
 * Test harness for the compiled binary: start `dist/rocketbun` on 127.0.0.1 with ephemeral ports
 * and a temp store dir, learn the bound ports from --ports-file (never guess), and always clean
 * up: `await using srv = await startRocketbun({...})` stops the process (SIGTERM, then SIGKILL)
 * and removes the temp dir.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Subprocess } from "bun";

export const ROOT = resolve(import.meta.dir, "../..");
/** dist/rocketbun, or the binary ROCKETBUN_BINARY names (a private build, so that rebuilds of dist/ by others do not race). */
export const BINARY = process.env.ROCKETBUN_BINARY ? resolve(process.env.ROCKETBUN_BINARY) : join(ROOT, "dist", "rocketbun");

let built = false;
/** Builds BINARY once per test process if it is missing (the test command builds it first). */
export function ensureBinary(): string {
  if (built || existsSync(BINARY)) {
    built = true;
    return BINARY;
  }
  const r = Bun.spawnSync([process.execPath, join(ROOT, "scripts/build-binary.ts"), "--outfile", BINARY], { stdout: "inherit", stderr: "inherit" });
  if (r.exitCode !== 0) throw new Error(`building ${BINARY} failed`);
  built = true;
  return BINARY;
}

export function tempDir(prefix = "rocketbun-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Polls `cond` every 20 ms until truthy; `what` may be a function so the failure text can carry diagnostics. */
export async function waitFor<T>(
  cond: () => T | Promise<T>,
  timeoutMs = 10_000,
  what: string | (() => string) = "condition",
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await cond();
      if (v) return v as NonNullable<T>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const label = typeof what === "function" ? what() : what;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${label}${last ? `\nlast error: ${String(last)}` : ""}`);
    }
    await Bun.sleep(20);
  }
}

export interface Ports {
  pid: number;
  role: string;
  namesrv?: number;
  broker?: number;
  ha?: number;
  vip?: number;
  admin?: number;
}

export interface StartOptions {
  role: "namesrv" | "master" | "slave" | "standalone";
  /** YAML written to <dir>/config.yaml and passed with --config. */
  configYaml?: string;
  /** Extra flags. */
  args?: string[];
  /** Reuse a store dir (e.g. to restart on the same data); otherwise a fresh temp dir. */
  dir?: string;
  /** The process environment (default: this one's). */
  env?: Record<string, string | undefined>;
}

export class RunningBinary implements AsyncDisposable {
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly dir: string;
  readonly ports: Ports;
  /** Everything the process printed so far. */
  readonly output: { out: () => string; err: () => string };
  readonly #ownsDir: boolean;

  constructor(
    proc: Subprocess<"ignore", "pipe", "pipe">,
    dir: string,
    ports: Ports,
    ownsDir: boolean,
    output: { out: () => string; err: () => string },
  ) {
    this.proc = proc;
    this.dir = dir;
    this.ports = ports;
    this.#ownsDir = ownsDir;
    this.output = output;
  }

  get namesrvAddr(): string {
    return `127.0.0.1:${this.ports.namesrv}`;
  }

  get adminUrl(): string {
    return `http://127.0.0.1:${this.ports.admin}`;
  }

  /** SIGTERM and wait for the exit code (SIGKILL after `graceMs`). */
  async stop(graceMs = 10_000): Promise<number | null> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return this.proc.exitCode;
    this.proc.kill("SIGTERM");
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), graceMs);
    const code = await this.proc.exited;
    clearTimeout(timer);
    return code;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
    if (this.#ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Everything a child process's stream printed so far, as text. */
export function collect(stream: ReadableStream<Uint8Array>): () => string {
  let text = "";
  const decoder = new TextDecoder();
  void (async () => {
    for await (const chunk of stream) text += decoder.decode(chunk, { stream: true });
  })();
  return () => text;
}

export async function startRocketbun(opts: StartOptions): Promise<RunningBinary> {
  const bin = ensureBinary();
  const ownsDir = opts.dir === undefined;
  const dir = opts.dir ?? tempDir();
  const portsFile = join(dir, `ports-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
  const argv = [bin, "--role", opts.role, "--store", join(dir, "store"), "--ports-file", portsFile];
  if (opts.configYaml !== undefined) {
    const cfg = join(dir, "config.yaml");
    writeFileSync(cfg, opts.configYaml);
    argv.push("--config", cfg);
  }
  const hasListen = (opts.args ?? []).some((a) => a.startsWith("--listen"));
  const hasAdmin = (opts.args ?? []).some((a) => a.startsWith("--admin"));
  if (!hasListen) argv.push("--listen", "127.0.0.1:0");
  if (!hasAdmin) argv.push("--admin", "127.0.0.1:0");
  argv.push(...(opts.args ?? []));
  const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", cwd: dir, ...(opts.env ? { env: opts.env } : {}) });
  const out = collect(proc.stdout);
  const err = collect(proc.stderr);
  try {
    const ports = await waitFor(
      () => {
        if (proc.exitCode !== null) throw new Error(`rocketbun exited with ${proc.exitCode}\nstdout:\n${out()}\nstderr:\n${err()}`);
        if (!existsSync(portsFile)) return null;
        const text = readFileSync(portsFile, "utf8");
        return text.endsWith("\n") ? (JSON.parse(text) as Ports) : null;
      },
      15_000,
      "the ports file",
    );
    return new RunningBinary(proc, dir, ports, ownsDir, { out, err });
  } catch (e) {
    proc.kill("SIGKILL");
    await proc.exited;
    if (ownsDir) rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/** Runs the binary to completion (for --version, --check-config, bad configs). */
export async function runRocketbun(args: string[], cwd?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const proc = Bun.spawn([ensureBinary(), ...args], { stdin: "ignore", stdout: "pipe", stderr: "pipe", cwd: cwd ?? ROOT });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}
