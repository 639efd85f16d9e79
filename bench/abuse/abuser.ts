/**
 * An abuser script (./flood.ts, ./consumer-abuse.ts) in its own process, so its sockets and CPU
 * are not the measured client's: it prints one JSON line of counters a second (kept in `last`)
 * and stops when its stdin closes.
 */
import { join } from "node:path";
import type { Subprocess } from "bun";
import { PROJECT } from "../lib/cluster.ts";
import { sleep } from "../lib/measure.ts";

export class AbuserProcess<C> {
  readonly proc: Subprocess<"pipe", "pipe", "inherit">;
  last: C;
  readonly #graceMs: number;

  /**
   * `script` is relative to the project root; `initial` stands until the first line; `graceMs`:
   * how long stop() waits for it to exit before SIGKILL (its own PID); `niced`: at the lowest CPU
   * priority (nice 19, which execs it: the PID is the abuser's), so it takes only the CPU the
   * broker and the measured client leave, as an abuser on other hosts would.
   */
  constructor(script: string, args: (string | number)[], initial: C, graceMs: number, niced = false) {
    this.last = initial;
    this.#graceMs = graceMs;
    const argv = [process.execPath, join(PROJECT, script), ...args.map(String)];
    const proc = Bun.spawn(niced ? ["nice", "-n", "19", ...argv] : argv, { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
    this.proc = proc;
    void (async () => {
      const dec = new TextDecoder();
      let buf = "";
      for await (const chunk of proc.stdout) {
        buf += dec.decode(chunk, { stream: true });
        const lines = buf.split("\n");
        buf = lines.pop() ?? "";
        for (const l of lines) if (l.trim()) this.last = JSON.parse(l) as C;
      }
    })();
  }

  /** Until `cond` holds of the latest counters, or `ms` passed (false). */
  async until(cond: (c: C) => boolean, ms: number): Promise<boolean> {
    const end = Date.now() + ms;
    while (!cond(this.last)) {
      if (Date.now() > end) return false;
      await sleep(100);
    }
    return true;
  }

  /** Closes its stdin and waits for it to exit. */
  async stop(): Promise<void> {
    void this.proc.stdin.end();
    const t = setTimeout(() => this.proc.kill(9), this.#graceMs);
    await this.proc.exited;
    clearTimeout(t);
  }
}
