/** Producers and connections: every producer and consumer group with a live client, and each client's connection. */
import type { FC } from "hono/jsx";
import type { ClientsView } from "../../../broker/index.ts";
import { Table, when } from "../layout.tsx";

export const ClientsPage: FC<{ v: ClientsView }> = ({ v }) => (
  <>
    <h2>Producers</h2>
    <Table
      id="producers"
      head={["producer group", "client id", "address", "language", "version", "last heartbeat"]}
      rows={v.producers.flatMap((g) =>
        g.members.map((m) => [g.group, m.clientId, m.clientAddr, m.language, String(m.version), when(m.lastHeartbeatAt)]),
      )}
      empty="No producer is connected."
    />
    <h2>Consumers</h2>
    <Table
      id="consumers"
      head={["consumer group", "client id", "address", "language", "version", "last heartbeat"]}
      rows={v.consumers.flatMap((g) =>
        g.members.map((m) => [
          <a href={`/ui/groups/${encodeURIComponent(g.group)}`}>{g.group}</a>,
          m.clientId,
          m.clientAddr,
          m.language,
          String(m.version),
          when(m.lastHeartbeatAt),
        ]),
      )}
      empty="No consumer is connected."
    />
  </>
);
