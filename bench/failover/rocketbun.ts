/**
 * RocketBun's side of bench/failover: a real etcd, a name server and one broker group of
 * `replicas` replicas of the compiled binary on 127.0.0.1, `broker.failover` on. Settings:
 *   - role SYNC_MASTER (or ASYNC_MASTER), failover.minInSyncReplicas, failover.leaseTtlMs as given;
 *   - haSlaveTimeoutMs 2000: how long a SYNC_MASTER send waits for its replicas, and how far
 *     behind a replica may fall before it leaves the sync state set;
 *   - registerNameServerPeriodMs 1000 (test timing; a promoted replica registers at once anyway);
 *   - the store at RocketMQ's default sizes (1 GiB CommitLog segments, 300,000 ConsumeQueue units
 *     a file, 5,000,000/20,000,000 index slots/entries; files are sparse), like Apache's side.
 * Healthy: a replica says it is the writable master and every replica runs; the sync state set
 * itself is not on the admin API, hence the schedule's settle time before each kill.
 */
import type { FailoverRig, GroupState, Member } from "./measure.ts";

const { brokerYaml, HaCluster } = await import("../../test/harness/ha-cluster.ts");
const { startEtcd } = await import("../../test/harness/etcd.ts");

export interface RocketbunOptions {
  lease: number;
  replicas: number;
  role: "SYNC_MASTER" | "ASYNC_MASTER";
  minIsr: number;
}

interface HaView {
  failover?: { role: string; epoch: number; writable: boolean };
}

const STORE_DEFAULTS = {
  commitLogSegmentBytes: 1024 * 1024 * 1024,
  flushIntervalMs: 500,
  consumeQueueUnitsPerFile: 300_000,
  indexSlotNum: 5_000_000,
  indexNum: 20_000_000,
};

export async function startRocketbunRig(o: RocketbunOptions): Promise<FailoverRig> {
  const etcd = await startEtcd();
  const yaml = brokerYaml({ broker: { haSlaveTimeoutMs: 2000 }, store: STORE_DEFAULTS }).replace(
    "broker:\n",
    `broker:\n  failover:\n    enable: true\n    leaseTtlMs: ${o.lease}\n    minInSyncReplicas: ${o.minIsr}\n    etcd: ["${etcd.endpoint}"]\n`,
  );
  let c: Awaited<ReturnType<typeof HaCluster.start>>;
  try {
    c = await HaCluster.start({ groups: [{ name: "bench-fo", role: o.role, slaves: o.replicas - 1, masterYaml: yaml, slaveYaml: yaml }] });
  } catch (e) {
    await etcd.stop();
    throw e;
  }
  const cluster = c;
  const nodes = [cluster.master(), ...Array.from({ length: o.replicas - 1 }, (_, i) => cluster.slave(i))];
  const dispose = async () => {
    await cluster[Symbol.asyncDispose]();
    await etcd.stop();
  };
  const state = async (): Promise<GroupState> => {
    let master: Member | undefined;
    let running = 0;
    for (const n of nodes) {
      if (!n.running) continue;
      running++;
      const h = await n.admin<HaView>("/ha").catch(() => undefined);
      if (h?.failover?.role === "master" && h.failover.writable) master = n;
    }
    return { master, healthy: master !== undefined && running === nodes.length };
  };
  try {
    await waitForFirstElection(state);
  } catch (e) {
    await dispose();
    throw e;
  }
  return {
    label: "rocketbun",
    namesrv: cluster.namesrvs[0]!.addr,
    state,
    createTopic: (topic) => cluster.createTopic(topic),
    diag: () => nodes.map((n) => n.output()).join("\n"),
    [Symbol.asyncDispose]: dispose,
  };
}

async function waitForFirstElection(state: () => Promise<GroupState>): Promise<void> {
  const { waitFor } = await import("../../test/harness/binary.ts");
  await waitFor(async () => (await state()).master, 30_000, "the first election");
}
