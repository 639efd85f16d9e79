/**
 * A real etcd (Debian package etcd-server) for the failover suites: one member on 127.0.0.1 with
 * free client and peer ports and a temp data dir, stopped by PID and removed at the end. `pause`
 * and `resume` (SIGSTOP/SIGCONT) make it unreachable without losing what it holds.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { collect, tempDir, waitFor } from "./binary.ts";
import { freePort, toolsPresent } from "./java.ts";

export class RunningEtcd implements AsyncDisposable {
  constructor(
    readonly proc: ReturnType<typeof Bun.spawn>,
    /** host:port of the client URL. */
    readonly endpoint: string,
    readonly dir: string,
    readonly output: () => string,
  ) {}

  pause(): void {
    this.proc.kill("SIGSTOP");
  }

  resume(): void {
    this.proc.kill("SIGCONT");
  }

  async stop(): Promise<void> {
    this.resume();
    this.proc.kill("SIGTERM");
    const exited = await Promise.race([this.proc.exited.then(() => true), Bun.sleep(5000).then(() => false)]);
    if (!exited) {
      this.proc.kill("SIGKILL");
      await this.proc.exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** True when etcd is installed (one printed line otherwise; an error under CI=true). */
export function etcdPresent(suite: string): boolean {
  return toolsPresent(suite, ["etcd"]);
}

/** Starts one etcd member and waits until it answers on its client URL. */
export async function startEtcd(): Promise<RunningEtcd> {
  const dir = tempDir("rocketbun-etcd-");
  const client = `127.0.0.1:${freePort()}`;
  const peer = `127.0.0.1:${freePort()}`;
  const proc = Bun.spawn(
    [
      "etcd",
      "--name=t",
      `--data-dir=${join(dir, "data")}`,
      `--listen-client-urls=http://${client}`,
      `--advertise-client-urls=http://${client}`,
      `--listen-peer-urls=http://${peer}`,
      `--initial-advertise-peer-urls=http://${peer}`,
      `--initial-cluster=t=http://${peer}`,
      "--log-level=warn",
    ],
    { stdout: "ignore", stderr: "pipe" },
  );
  const out = collect(proc.stderr as ReadableStream<Uint8Array>);
  const etcd = new RunningEtcd(proc, client, dir, out);
  try {
    await waitFor(
      async () => (await fetch(`http://${client}/health`).then((r) => r.json() as Promise<{ health?: string }>)).health === "true",
      15_000,
      () => `etcd on ${client} to be healthy\n${out()}`,
    );
  } catch (e) {
    await etcd.stop();
    throw e;
  }
  return etcd;
}
