/**
 * Cluster page: the name servers, the broker groups (master id 0, slaves above) as the name server
 * knows them, and this broker's replication with its lag. A process without a name server (a
 * broker alone) knows only its own group and the name servers it registers with; the other groups
 * are on the name server's own dashboard.
 */
import type { FC } from "hono/jsx";
import type { BrokerSettingsInfo, ReplicationInfo } from "../../../broker/index.ts";
import type { LiveBrokerInfo, NamesrvInfo } from "../../../namesrv/index.ts";
import { bytes, num, Table, when } from "../layout.tsx";

export interface ClusterData {
  namesrvAddrs: string[];
  /** The name server's view, when this process runs one. */
  namesrv?: { cluster: ReturnType<NamesrvInfo["cluster"]>; live: LiveBrokerInfo[] };
  /** This process's broker. */
  broker?: {
    settings: BrokerSettingsInfo;
    replication: ReplicationInfo;
    store: { minPhyOffset: number; maxPhyOffset: number; flushedOffset: number; diskUsageRatio: number };
  };
}

const roleOf = (id: number) => (id === 0 ? "master" : "slave");

function groupRows(d: ClusterData): string[][] {
  if (d.namesrv) {
    const live = new Map(d.namesrv.live.map((b) => [b.brokerAddr, b]));
    const rows: string[][] = [];
    for (const g of Object.values(d.namesrv.cluster.brokerAddrTable)) {
      for (const [id, addr] of Object.entries(g.brokerAddrs)) {
        const b = live.get(addr);
        rows.push([g.cluster, g.brokerName, id, roleOf(Number(id)), addr, b ? `${num(b.silentForMs / 1000, 1)} s ago` : "not live"]);
      }
    }
    return rows;
  }
  const s = d.broker?.settings;
  return s ? [[s.clusterName, s.brokerName, String(s.brokerId), s.brokerRole, s.brokerAddr, "this process"]] : [];
}

const Replication: FC<{ r: ReplicationInfo }> = ({ r }) => {
  if (r.master) {
    const m = r.master;
    return (
      <Table
        id="replication"
        head={["master", "connected", "behind", "behind (s)", "last received"]}
        rows={[[m.masterAddr ?? "—", m.connected ? "yes" : "no", bytes(m.lagBytes), num(m.lagSeconds, 1), when(m.lastReceiveAt)]]}
        empty=""
      />
    );
  }
  return (
    <Table
      id="replication"
      head={["slave (HA connection)", "acknowledged offset", "behind", "behind (s)", "last report"]}
      rows={(r.slaves ?? []).map((s) => [s.addr, num(s.ackOffset), bytes(s.lagBytes), num(s.lagSeconds, 1), when(s.lastReportAt)])}
      empty={`No slave is connected to this ${r.role === "SLAVE" ? "slave" : "master"}.`}
    />
  );
};

export const ClusterPage: FC<{ d: ClusterData }> = ({ d }) => (
  <>
    <h2>Name servers</h2>
    <Table head={["address"]} rows={d.namesrvAddrs.map((a) => [a])} empty="No name server is configured." />
    <h2>Broker groups</h2>
    <Table
      id="broker-groups"
      head={["cluster", "broker", "id", "role", "address", "last heartbeat"]}
      rows={groupRows(d)}
      empty="No broker has registered."
    />
    {d.namesrv ? null : <p class="note">This process runs no name server: only its own broker group is shown.</p>}
    {d.broker ? (
      <>
        <h2>Replication of {d.broker.settings.brokerName}</h2>
        <Replication r={d.broker.replication} />
        <h2>Store</h2>
        <Table
          head={["CommitLog min", "CommitLog max", "flushed", "disk used"]}
          rows={[
            [
              num(d.broker.store.minPhyOffset),
              num(d.broker.store.maxPhyOffset),
              num(d.broker.store.flushedOffset),
              `${num(d.broker.store.diskUsageRatio * 100, 1)} %`,
            ],
          ]}
          empty=""
        />
      </>
    ) : null}
  </>
);
