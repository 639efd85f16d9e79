/**
 * Topics page (every topic with its queues, messages held and the last sampled rates) and one
 * topic's page (each queue's offsets, and the groups that have offsets on it).
 */
import type { FC } from "hono/jsx";
import type { TopicConfig } from "../../../broker/index.ts";
import { num, Table } from "../layout.tsx";

export interface TopicRow {
  config: TopicConfig;
  kind: string;
  queues: { queueId: number; minOffset: number; maxOffset: number }[];
  /** Messages per second in the last sample (undefined: not sampled yet). */
  inTps?: number;
  outTps?: number;
}

const held = (t: TopicRow) => t.queues.reduce((n, q) => n + Math.max(0, q.maxOffset - Math.max(0, q.minOffset)), 0);
const rate = (v: number | undefined) => (v === undefined ? "—" : num(v, 1));

function perm(p: number): string {
  return `${p & 4 ? "W" : "-"}${p & 2 ? "R" : "-"}`;
}

export const TopicsPage: FC<{ topics: TopicRow[]; showSystem: boolean }> = ({ topics, showSystem }) => (
  <>
    <p class="note">
      {showSystem ? <a href="/ui/topics">Hide system, retry and dead-letter topics</a> : <a href="/ui/topics?all=1">Show every topic</a>}
    </p>
    <Table
      id="topics"
      head={["topic", "kind", "queues (read / write)", "permission", "messages held", "in / s", "out / s"]}
      rows={topics.map((t) => [
        <a href={`/ui/topics/${encodeURIComponent(t.config.topicName)}`}>{t.config.topicName}</a>,
        t.kind,
        `${t.config.readQueueNums} / ${t.config.writeQueueNums}`,
        perm(t.config.perm),
        num(held(t)),
        rate(t.inTps),
        rate(t.outTps),
      ])}
      empty="No topics."
    />
  </>
);

export interface TopicGroupOffsets {
  group: string;
  queues: { queueId: number; consumerOffset: number; lag: number }[];
}

export const TopicPage: FC<{ topic: TopicRow; groups: TopicGroupOffsets[] }> = ({ topic, groups }) => (
  <>
    <Table
      head={["kind", "queues (read / write)", "permission", "order", "messages held"]}
      rows={[
        [
          topic.kind,
          `${topic.config.readQueueNums} / ${topic.config.writeQueueNums}`,
          perm(topic.config.perm),
          topic.config.order ? "yes" : "no",
          num(held(topic)),
        ],
      ]}
      empty=""
    />
    <h2>Queues</h2>
    <Table
      id="queues"
      head={["queue", "min offset", "max offset", "messages"]}
      rows={topic.queues.map((q) => [
        String(q.queueId),
        num(q.minOffset),
        num(q.maxOffset),
        num(Math.max(0, q.maxOffset - Math.max(0, q.minOffset))),
      ])}
      empty="No queues."
    />
    <h2>Consumer groups</h2>
    <Table
      head={["group", "queues with offsets", "lag"]}
      rows={groups.map((g) => [
        <a href={`/ui/groups/${encodeURIComponent(g.group)}`}>{g.group}</a>,
        String(g.queues.length),
        num(g.queues.reduce((n, q) => n + q.lag, 0)),
      ])}
      empty="No group has consumed this topic."
    />
  </>
);
