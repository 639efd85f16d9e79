/**
 * Consumer groups: the list (members online, how they consume, total lag) and one group's page
 * (members, subscriptions, per-queue offsets and lag, and the offset reset form, which
 * dashboard.js sends to POST /groups/{group}/reset-offset). A group that consumes by POP also
 * shows, per topic and its POP retry topic, the messages in flight and ready, and each popped
 * batch still in flight with the time its messages become visible again; its lag counts the
 * messages in flight (RocketMQ's own dashboard shows -1 for a POP group).
 */
import type { FC } from "hono/jsx";
import type { ConsumerGroupView, PopConsumption } from "../../../broker/index.ts";
import { num, Table, when } from "../layout.tsx";

export interface GroupQueue {
  topic: string;
  queueId: number;
  consumerOffset: number;
  brokerOffset: number;
  lag: number;
}

export interface GroupRow {
  group: string;
  /** Undefined: no member is connected. */
  online?: ConsumerGroupView;
  queues: GroupQueue[];
  /** The group's POP consumption (BrokerInfo.popConsumption); empty when it only pulls. */
  pop: PopConsumption[];
}

const inflight = (g: GroupRow) => g.pop.reduce((n, p) => n + p.inflight, 0);
/** Messages not consumed yet: after the committed offsets, and popped but not acked. */
const totalLag = (g: GroupRow) => g.queues.reduce((n, q) => n + q.lag, 0) + inflight(g);

const PopSection: FC<{ pop: PopConsumption[] }> = ({ pop }) => (
  <>
    <h2>POP consumption</h2>
    <Table
      id="group-pop"
      head={["topic", "queues of", "mode", "in flight", "ready"]}
      rows={pop.map((p) => [p.topic, p.isRetry ? `${p.queueTopic} (retry)` : p.queueTopic, p.mode, num(p.inflight), num(p.ready)])}
      empty="Nothing consumed by POP."
    />
    <h2>In flight</h2>
    <Table
      id="group-inflight"
      head={["topic", "queue", "offsets", "popped", "invisible until", "invisible for"]}
      rows={pop.flatMap((p) =>
        p.checkpoints.map((ck) => [
          p.queueTopic,
          String(ck.queueId),
          ck.offsets.join(", "),
          when(ck.popTime),
          when(ck.invisibleUntil),
          `${num((ck.invisibleUntil - ck.popTime) / 1000, 1)} s`,
        ]),
      )}
      empty="No message is in flight."
    />
  </>
);

export const GroupsPage: FC<{ groups: GroupRow[] }> = ({ groups }) => (
  <Table
    id="groups"
    head={["group", "members", "consume type", "message model", "topics", "lag"]}
    rows={groups.map((g) => [
      <a href={`/ui/groups/${encodeURIComponent(g.group)}`}>{g.group}</a>,
      String(g.online?.members.length ?? 0),
      g.online?.consumeType ?? "—",
      g.online?.messageModel ?? "—",
      [...new Set(g.queues.map((q) => q.topic))].join(", "),
      <span class="lag">{num(totalLag(g))}</span>,
    ])}
    empty="No consumer groups."
  />
);

const ResetForm: FC<{ group: string; topics: string[] }> = ({ group, topics }) => (
  <form id="reset-offset" data-group={group} class="action">
    <label>
      Topic{" "}
      <select name="topic" required>
        {topics.map((t) => (
          <option value={t}>{t}</option>
        ))}
      </select>
    </label>
    <label>
      <input type="radio" name="mode" value="end" checked /> to the end (skip the backlog)
    </label>
    <label>
      <input type="radio" name="mode" value="start" /> to the start
    </label>
    <label>
      <input type="radio" name="mode" value="time" /> to the first message at or after <input type="datetime-local" name="time" step="1" />
    </label>
    <label>
      <input type="radio" name="mode" value="offset" /> every queue to offset <input type="number" name="offset" min="0" step="1" />
    </label>
    <button type="submit">Reset offsets</button>
    <span class="result" id="reset-result"></span>
  </form>
);

export const GroupPage: FC<{ g: GroupRow }> = ({ g }) => {
  const topics = [...new Set([...g.queues.map((q) => q.topic), ...(g.online?.subscriptions.map((s) => s.topic) ?? [])])].sort();
  return (
    <>
      <p>
        Total lag: <strong id="total-lag">{num(totalLag(g))}</strong>
        {g.pop.length > 0 ? (
          <>
            {" "}
            (<span id="total-ready">{num(g.pop.reduce((n, p) => n + p.ready, 0))}</span> ready by POP,{" "}
            <span id="total-inflight">{num(inflight(g))}</span> in flight)
          </>
        ) : null}
      </p>
      <h2>Members</h2>
      <Table
        id="members"
        head={["client id", "address", "language", "version", "last heartbeat"]}
        rows={(g.online?.members ?? []).map((m) => [m.clientId, m.clientAddr, m.language, String(m.version), when(m.lastHeartbeatAt)])}
        empty="No member is connected."
      />
      <h2>Subscriptions</h2>
      <Table
        head={["topic", "type", "expression"]}
        rows={(g.online?.subscriptions ?? []).map((s) => [s.topic, s.expressionType, s.expression])}
        empty="No member is connected, so no subscription is known."
      />
      <h2>Offsets and lag</h2>
      <Table
        id="group-queues"
        head={["topic", "queue", "broker offset", "consumer offset", "lag"]}
        rows={g.queues.map((q) => [q.topic, String(q.queueId), num(q.brokerOffset), num(q.consumerOffset), num(q.lag)])}
        empty="The group has committed no offsets."
      />
      {g.pop.length > 0 ? <PopSection pop={g.pop} /> : null}
      <h2>Reset offsets</h2>
      {topics.length > 0 ? <ResetForm group={g.group} topics={topics} /> : <p class="empty">The group has no topic to reset.</p>}
    </>
  );
};
