/**
 * The Java client as a steady producer and consumer (rocketbun.interop.ChaosClient in
 * test/interop/java/src, built against rocketmq-client 4.9.8 by default): one JVM started by PID,
 * its JSON lines collected as they arrive (what was acknowledged, where, and what was consumed),
 * stopped by closing its stdin, and killed by PID if it does not exit.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { tempDir, waitFor } from "./binary.ts";
import { JVM_FLAGS, mavenClasspath } from "./java.ts";

/** A send the client finished: `status` SEND_OK is an acknowledgement. */
export interface ChaosAck {
  body: string;
  status: string;
  msgId: string;
  /** Store host and CommitLog offset of the broker that answered (docs/PROTOCOL.md §4.6). */
  offsetMsgId: string;
  brokerName: string;
  queueId: number;
  queueOffset: number;
  /** When the line arrived here (this process's clock). */
  seenAt: number;
}

export interface ChaosRecv {
  body: string;
  brokerName: string;
  queueId: number;
  queueOffset: number;
  commitLogOffset: number;
  storeHost: string;
  seenAt: number;
}

export interface ChaosFail {
  body: string;
  error: string;
  seenAt: number;
}

type Line =
  | ({ t: "ack" } & ChaosAck)
  | ({ t: "recv" } & ChaosRecv)
  | ({ t: "fail" } & ChaosFail)
  | { t: "ready" | "stopped-sending" | "senders-done" | "done" | "stats" };

export class ChaosClient implements AsyncDisposable {
  readonly acks: ChaosAck[] = [];
  readonly recvs: ChaosRecv[] = [];
  readonly fails: ChaosFail[] = [];
  readonly #events = new Set<string>();
  readonly #proc: Subprocess<"pipe", "pipe", "pipe">;
  readonly #home: string;
  #stderr = "";

  private constructor(proc: Subprocess<"pipe", "pipe", "pipe">, home: string) {
    this.#proc = proc;
    this.#home = home;
    void this.#readLines();
    void (async () => {
      const dec = new TextDecoder();
      for await (const chunk of proc.stderr) this.#stderr = (this.#stderr + dec.decode(chunk)).slice(-20_000);
    })();
  }

  /** Starts the JVM and waits for its producer and consumer to be started. */
  static async start(o: {
    namesrv: string;
    topic: string;
    group: string;
    seconds: number;
    threads?: number;
    pauseMs?: number;
    project?: string;
  }): Promise<ChaosClient> {
    const home = tempDir("java-chaos-");
    mkdirSync(join(home, "logs"));
    const proc = Bun.spawn(
      [
        "java",
        ...JVM_FLAGS,
        "-Xmx256m",
        `-Duser.home=${home}`,
        `-Drocketmq.client.logRoot=${join(home, "logs")}`,
        "-Drocketmq.client.logLevel=WARN",
        "-cp",
        mavenClasspath(o.project ?? "client-4"),
        "rocketbun.interop.ChaosClient",
        ...["--namesrv", o.namesrv, "--topic", o.topic, "--group", o.group, "--seconds", String(o.seconds), "--threads", String(o.threads ?? 3), "--pause-ms", String(o.pauseMs ?? 30)],
      ],
      { cwd: home, stdin: "pipe", stdout: "pipe", stderr: "pipe" },
    );
    const c = new ChaosClient(proc, home);
    try {
      await c.waitEvent("ready", 60_000);
    } catch (e) {
      await c[Symbol.asyncDispose]();
      throw e;
    }
    return c;
  }

  async #readLines(): Promise<void> {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of this.#proc.stdout) {
      buf += dec.decode(chunk, { stream: true });
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const text = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (text.startsWith("{")) this.#take(JSON.parse(text) as Line);
      }
    }
  }

  #take(l: Line): void {
    const seenAt = Date.now();
    if (l.t === "ack") this.acks.push({ ...l, seenAt });
    else if (l.t === "recv") this.recvs.push({ ...l, seenAt });
    else if (l.t === "fail") this.fails.push({ ...l, seenAt });
    else this.#events.add(l.t);
  }

  /** The SEND_OK answers so far. */
  acked(): ChaosAck[] {
    return this.acks.filter((a) => a.status === "SEND_OK");
  }

  get running(): boolean {
    return this.#proc.exitCode === null && this.#proc.signalCode === null;
  }

  async waitEvent(t: "ready" | "senders-done" | "done", timeoutMs: number): Promise<void> {
    await waitFor(
      () => {
        if (this.#events.has(t)) return true;
        if (!this.running) throw new Error(`the Java client exited (${this.#proc.exitCode ?? this.#proc.signalCode})`);
        return false;
      },
      timeoutMs,
      () => `the Java client to print ${t}\n${this.stderr()}`,
    );
  }

  /** Stops the senders (the consumer goes on) and waits until every send begun has its line. */
  async stopSending(timeoutMs = 60_000): Promise<void> {
    this.#proc.stdin.write("stop-sending\n");
    await this.#proc.stdin.flush();
    await this.waitEvent("senders-done", timeoutMs);
  }

  /** The last of the JVM's stderr, for failure messages. */
  stderr(): string {
    return `--- Java client stderr ---\n${this.#stderr.slice(-4000)}`;
  }

  /** Closes stdin (a clean stop), and kills the JVM by PID if it has not exited after 20 s. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.running) {
      try {
        await this.#proc.stdin.end();
      } catch {
        // Already closed.
      }
      const exited = await Promise.race([this.#proc.exited.then(() => true), Bun.sleep(20_000).then(() => false)]);
      if (!exited) {
        this.#proc.kill("SIGKILL");
        await this.#proc.exited;
      }
    }
    rmSync(this.#home, { recursive: true, force: true });
  }
}
