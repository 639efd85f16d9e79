/**
 * `rocketbun bench producer|consumer`: a load generator like RocketMQ's benchmark/producer.sh and
 * consumer.sh, built on the client library, so it speaks only standard requests and works against
 * Apache RocketMQ too. One line per second on stdout, a summary at the end.
 *
 *   producer: `inflight` loops, each sending a random body of `bodySize` bytes and awaiting the
 *             answer; per second: Send TPS, max and average RT (ms), failed sends.
 *   consumer: a push consumer group on the topic; per second: Consume TPS and the average and max
 *             latency from the message's born time (set by the producer's clock) and store time
 *             (the broker's clock) to its arrival here.
 */
import { randomFillSync } from "node:crypto";
import { Producer, PushConsumer } from "./client/index.ts";
import type { BenchOptions } from "./cli/args.ts";
import { err, out } from "./common/log.ts";

interface Window {
  ok: number;
  failed: number;
  rtSum: number;
  rtMax: number;
  b2cSum: number;
  b2cMax: number;
  s2cSum: number;
  s2cMax: number;
}

const emptyWindow = (): Window => ({ ok: 0, failed: 0, rtSum: 0, rtMax: 0, b2cSum: 0, b2cMax: 0, s2cSum: 0, s2cMax: 0 });

function stamp(): string {
  return new Date().toISOString().replace("T", " ").slice(0, 23);
}

const f3 = (v: number) => (Number.isFinite(v) ? v.toFixed(3) : "0.000");

/** Resolves on SIGINT/SIGTERM, or never. */
function interrupted(): { promise: Promise<void>; dispose: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  const on = () => resolve();
  process.on("SIGINT", on);
  process.on("SIGTERM", on);
  return {
    promise,
    dispose: () => {
      process.off("SIGINT", on);
      process.off("SIGTERM", on);
    },
  };
}

export async function runBench(o: BenchOptions): Promise<number> {
  const limits = [o.count !== undefined ? `${o.count} messages` : "", o.seconds !== undefined ? `${o.seconds} s` : ""].filter(Boolean).join(" or ");
  out(
    `rocketbun bench ${o.mode}: namesrv ${o.namesrv}, topic ${o.topic}, group ${o.group}` +
      (o.mode === "producer" ? `, ${o.inflight} in flight, ${o.bodySize} B bodies${o.keys ? ", keys" : ""}` : `, from ${o.from}`) +
      `, until ${limits || "Ctrl-C"}`,
  );
  try {
    return o.mode === "producer" ? await producer(o) : await consumer(o);
  } catch (e) {
    err(`rocketbun bench: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}

async function producer(o: BenchOptions): Promise<number> {
  const p = new Producer({ namesrv: o.namesrv.split(";").filter(Boolean), group: o.group, maxInFlight: o.inflight });
  await p.start();
  const body = new Uint8Array(o.bodySize);
  randomFillSync(body);
  let w = emptyWindow();
  let totalOk = 0;
  let totalFailed = 0;
  let started = 0;
  let stop = false;
  const sig = interrupted();
  void sig.promise.then(() => (stop = true));
  const t0 = performance.now();
  const deadline = o.seconds !== undefined ? t0 + o.seconds * 1000 : Infinity;
  const print = () => {
    const n = w.ok;
    out(
      `Current Time: ${stamp()} Send TPS: ${n + w.failed} Max RT(ms): ${Math.round(w.rtMax)} Average RT(ms): ${f3(n ? w.rtSum / n : NaN)} ` +
        `Send Failed: ${w.failed} Response Failed: 0`,
    );
    w = emptyWindow();
  };
  const ticker = setInterval(print, 1000);
  let seq = 0;
  const loop = async () => {
    while (!stop && performance.now() < deadline && (o.count === undefined || started < o.count)) {
      started++;
      const i = seq++;
      const s = performance.now();
      try {
        await p.send({ topic: o.topic, body, ...(o.keys ? { keys: `bench-${t0.toFixed(0)}-${i}` } : {}) });
        const rt = performance.now() - s;
        w.ok++;
        totalOk++;
        w.rtSum += rt;
        if (rt > w.rtMax) w.rtMax = rt;
      } catch (e) {
        w.failed++;
        if (totalFailed++ === 0) err(`first failed send: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: o.inflight }, loop));
  clearInterval(ticker);
  if (w.ok + w.failed > 0) print();
  sig.dispose();
  const secs = (performance.now() - t0) / 1000;
  out(`Summary: sent ${totalOk} in ${secs.toFixed(1)} s (${Math.round(totalOk / secs)} msgs/s), ${totalFailed} failed`);
  await p.shutdown();
  return totalOk === 0 && totalFailed > 0 ? 1 : 0;
}

async function consumer(o: BenchOptions): Promise<number> {
  const c = new PushConsumer({ namesrv: o.namesrv.split(";").filter(Boolean), group: o.group, fromWhere: o.from, consumeThreads: 64 });
  let w = emptyWindow();
  let total = 0;
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  c.subscribe(o.topic, "*", (m) => {
    const t = Date.now();
    const b2c = t - m.bornTimestamp;
    const s2c = t - m.storeTimestamp;
    w.ok++;
    w.b2cSum += b2c;
    w.s2cSum += s2c;
    if (b2c > w.b2cMax) w.b2cMax = b2c;
    if (s2c > w.s2cMax) w.s2cMax = s2c;
    if (++total === o.count) finish();
  });
  const print = () => {
    const n = w.ok;
    out(
      `Current Time: ${stamp()} Consume TPS: ${n} Average(B2C) RT(ms): ${f3(n ? w.b2cSum / n : NaN)} Average(S2C) RT(ms): ${f3(n ? w.s2cSum / n : NaN)} ` +
        `MAX(B2C) RT(ms): ${w.b2cMax} MAX(S2C) RT(ms): ${w.s2cMax}`,
    );
    w = emptyWindow();
  };
  const sig = interrupted();
  const t0 = performance.now();
  await c.start();
  const ticker = setInterval(print, 1000);
  const waits: Promise<unknown>[] = [done, sig.promise];
  if (o.seconds !== undefined) waits.push(new Promise((r) => setTimeout(r, o.seconds! * 1000)));
  await Promise.race(waits);
  clearInterval(ticker);
  if (w.ok > 0) print();
  sig.dispose();
  const secs = (performance.now() - t0) / 1000;
  out(`Summary: received ${total} in ${secs.toFixed(1)} s (${Math.round(total / secs)} msgs/s)`);
  await c.shutdown();
  return 0;
}
