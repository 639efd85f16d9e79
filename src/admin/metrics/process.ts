/**
 * Process metrics under the names Prometheus' client libraries use, so stock "process" and
 * "Node.js" dashboards read them: CPU, start time, RSS, the JavaScript heap, file descriptors
 * (Linux: /proc/self/fd and /proc/self/limits; elsewhere left out) and event-loop delay.
 *
 * Event-loop delay comes two ways: node:perf_hooks' monitorEventLoopDelay (Bun implements it; a
 * native timer samples the loop every SAMPLE_MS, nothing runs on our side between scrapes), read
 * and reset at each scrape, so min/max/mean/percentiles cover the time since the previous one;
 * and the delay of a setImmediate queued by the scrape itself (prom-client's
 * nodejs_eventloop_lag_seconds), which is why writing them is asynchronous.
 */
import { readdirSync, readFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { Exposition } from "./exposition.ts";
import { PROCESS } from "./families.ts";

const SAMPLE_MS = 10;
const NS_PER_S = 1e9;

/** The soft "Max open files" limit from /proc/self/limits, or undefined off Linux. */
function maxFds(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

function openFds(): number | undefined {
  try {
    // The listing's own directory handle is one of the entries.
    return readdirSync("/proc/self/fd").length - 1;
  } catch {
    return undefined;
  }
}

function immediateLagSeconds(): Promise<number> {
  const start = performance.now();
  return new Promise((resolve) => setImmediate(() => resolve((performance.now() - start) / 1000)));
}

export class ProcessMetrics {
  readonly #loop: ReturnType<typeof monitorEventLoopDelay>;
  readonly #maxFds = maxFds();

  constructor() {
    this.#loop = monitorEventLoopDelay({ resolution: SAMPLE_MS });
    this.#loop.enable();
  }

  async write(x: Exposition): Promise<void> {
    const lag = await immediateLagSeconds();
    const cpu = process.cpuUsage();
    x.sample(PROCESS.cpuUser, {}, cpu.user / 1e6);
    x.sample(PROCESS.cpuSystem, {}, cpu.system / 1e6);
    x.sample(PROCESS.cpu, {}, (cpu.user + cpu.system) / 1e6);
    x.sample(PROCESS.startTime, {}, Math.round(Date.now() / 1000 - process.uptime()));
    const m = process.memoryUsage();
    x.sample(PROCESS.rss, {}, m.rss);
    const fds = openFds();
    if (fds !== undefined) x.sample(PROCESS.openFds, {}, fds);
    if (this.#maxFds !== undefined) x.sample(PROCESS.maxFds, {}, this.#maxFds);
    x.sample(PROCESS.heapTotal, {}, m.heapTotal);
    x.sample(PROCESS.heapUsed, {}, m.heapUsed);
    x.sample(PROCESS.external, {}, m.external);
    x.sample(PROCESS.loopLag, {}, lag);
    const h = this.#loop;
    if (h.count > 0) {
      x.sample(PROCESS.loopLagMin, {}, h.min / NS_PER_S);
      x.sample(PROCESS.loopLagMax, {}, h.max / NS_PER_S);
      x.sample(PROCESS.loopLagMean, {}, h.mean / NS_PER_S);
      x.sample(PROCESS.loopLagP50, {}, h.percentile(50) / NS_PER_S);
      x.sample(PROCESS.loopLagP99, {}, h.percentile(99) / NS_PER_S);
    }
    h.reset();
  }
}
