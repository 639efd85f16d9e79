/**
 * `--rocketmq`, second half: RocketBun's own workloads with our client (bench/lib/workloads.ts) against
 * Apache RocketMQ, so the main table carries an Apache column beside NATS and Redis, measured as
 * RocketBun's figures are. W1, W2 (drain of W1), W3, W4 on an ASYNC_FLUSH broker, then W1s on a fresh
 * SYNC_FLUSH one (RocketBun's W1s restarts on W1–W5's store; a fresh store here keeps the Apache
 * start out of it). W5 and W6 are left out: W6's 10,000 queues alone would take minutes of the JVM.
 * The POP workloads W2p and W3p run against 5.3.3 only (4.9 has no POP), on a fresh broker of their own.
 */
import { join } from "node:path";
import { rmSync } from "node:fs";
import { Admin, type FlushDiskType } from "./cluster.ts";
import type { WorkloadParams } from "./measure.ts";
import { apachePeerId, startApache, type Rig, type RocketmqVersion } from "./rocketmq-peer.ts";
import { popWorkloads } from "./pop.ts";
import { drainWorkload, e2eWorkload, newProducer, publishWorkload, warmup, type Ctx, type Result } from "./workloads.ts";

type Log = (msg: string) => void;

async function withRig(
  version: RocketmqVersion,
  dir: string,
  flush: FlushDiskType,
  p: WorkloadParams,
  log: Log,
  body: (ctx: Ctx, rig: Rig) => Promise<Result[]>,
): Promise<Result[]> {
  const rig = await startApache(version, dir, flush, p);
  const admin = new Admin(rig.namesrv.addr, rig.broker.addr);
  const ctx: Ctx = { namesrv: rig.namesrv.addr, admin, brokerPid: rig.broker.pid, dataDir: rig.storeDir, p, log };
  try {
    return (await body(ctx, rig)).map((r) => ({ ...r, peer: apachePeerId(version) }));
  } catch (e) {
    log(`${apachePeerId(version)} (${flush}, our client) failed:\n${rig.broker.output().slice(-3000)}`);
    throw e;
  } finally {
    await admin.close();
    await rig.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Our client's W1, W2, W3, W4 (ASYNC_FLUSH) and W1s (SYNC_FLUSH) against Apache RocketMQ `version`. */
export async function ourClientOnApache(version: RocketmqVersion, tmp: string, p: WorkloadParams, log: Log): Promise<Result[]> {
  const id = apachePeerId(version);
  const rows = await withRig(version, join(tmp, `${id}-ours-async`), "ASYNC_FLUSH", p, log, async (ctx) => {
    const producer = await newProducer(ctx, "bench-producer");
    try {
      await warmup(ctx, producer, "warm");
      const w1 = await publishWorkload(ctx, producer, "W1", "w1", p.body);
      log(`${id} W1 (our client): ${String(w1.msgs_per_s)} msgs/s, ack p50/p99/max ${String(w1.ack_p50_ms)}/${String(w1.ack_p99_ms)}/${String(w1.ack_max_ms)} ms`);
      const w2 = await drainWorkload(ctx, "W2", "w1", Number(w1.stored_msgs));
      log(`${id} W2 (our client): ${String(w2.msgs_per_s)} msgs/s (complete ${String(w2.complete)})`);
      const w3 = await e2eWorkload(ctx, producer, "w3");
      log(`${id} W3 (our client): e2e p50/p99/max ${String(w3.e2e_p50_ms)}/${String(w3.e2e_p99_ms)}/${String(w3.e2e_max_ms)} ms`);
      const w4 = await publishWorkload(ctx, producer, "W4", "w4", p.smallBody);
      log(`${id} W4 (our client): ${String(w4.msgs_per_s)} msgs/s`);
      return [w1, w2, w3, w4];
    } finally {
      await producer.shutdown();
    }
  });
  rows.push(
    ...(await withRig(version, join(tmp, `${id}-ours-sync`), "SYNC_FLUSH", p, log, async (ctx) => {
      const producer = await newProducer(ctx, "bench-producer-sync");
      try {
        await warmup(ctx, producer, "warm-sync");
        const r = await publishWorkload(ctx, producer, "W1s", "w1s", p.body);
        log(`${id} W1s (our client): ${String(r.msgs_per_s)} msgs/s, ack p99 ${String(r.ack_p99_ms)} ms`);
        return [r];
      } finally {
        await producer.shutdown();
      }
    })),
  );
  return rows;
}

/**
 * W2p and W3p (bench/lib/pop.ts) against Apache RocketMQ 5.3.3 with the same hand-built POP consumer
 * as RocketBun's, on a fresh ASYNC_FLUSH broker with its defaults (timerWheelEnable on: POP needs it).
 */
export async function popOnApache(version: RocketmqVersion, tmp: string, p: WorkloadParams, want: (w: string) => boolean, log: Log): Promise<Result[]> {
  const id = apachePeerId(version);
  return withRig(version, join(tmp, `${id}-pop`), "ASYNC_FLUSH", p, (m) => log(`${id} ${m}`), (ctx) => popWorkloads(ctx, want, "bench-producer-pop"));
}
