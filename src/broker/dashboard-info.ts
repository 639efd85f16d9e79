/**
 * What the admin dashboard reads from a running broker beyond the plain info functions: who is
 * connected (producer and consumer groups with their member connections, as HEART_BEAT made them
 * known) and the cumulative message counters its charts turn into rates. Plain functions of the
 * broker's context, so BrokerInfo only forwards to them.
 */
import type { ClientChannel } from "./client-manager.ts";
import type { BrokerContext } from "./context.ts";
import { StatsName } from "./stats.ts";

export interface ClientConnectionView {
  clientId: string;
  /** ip:port of the client's connection as this broker sees it. */
  clientAddr: string;
  language: string;
  version: number;
  lastHeartbeatAt: number;
}

export interface ConsumerGroupView {
  group: string;
  consumeType: string;
  messageModel: string;
  consumeFromWhere: string;
  subscriptions: { topic: string; expressionType: string; expression: string }[];
  members: ClientConnectionView[];
}

export interface ClientsView {
  producers: { group: string; members: ClientConnectionView[] }[];
  consumers: ConsumerGroupView[];
}

/** Messages counted since the broker started: stored per topic, handed out by pulls per topic@group. */
export interface TrafficCounters {
  putByTopic: Record<string, number>;
  getByTopicGroup: Record<string, number>;
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function connectionView(ch: ClientChannel): ClientConnectionView {
  return {
    clientId: ch.clientId,
    clientAddr: ch.conn.remoteAddress,
    language: ch.language,
    version: ch.version,
    lastHeartbeatAt: ch.lastUpdateTimestamp,
  };
}

const members = (chs: ClientChannel[]) => chs.map(connectionView).sort((a, b) => byName(a.clientId, b.clientId));

export function clientsView(ctx: BrokerContext): ClientsView {
  const producers = ctx.producers
    .groupNames()
    .sort(byName)
    .map((group) => ({ group, members: members(ctx.producers.channels(group)) }));
  const consumers = ctx.consumers
    .groups()
    .sort((a, b) => byName(a.groupName, b.groupName))
    .map((g) => ({
      group: g.groupName,
      consumeType: g.consumeType,
      messageModel: g.messageModel,
      consumeFromWhere: g.consumeFromWhere,
      subscriptions: [...g.subscriptions.values()]
        .map((s) => ({ topic: s.topic, expressionType: s.expressionType, expression: s.subString }))
        .sort((a, b) => byName(a.topic, b.topic)),
      members: members([...g.channels.values()]),
    }));
  return { producers, consumers };
}

export function trafficCounters(ctx: BrokerContext): TrafficCounters {
  return {
    putByTopic: Object.fromEntries(ctx.stats.items.totals(StatsName.TOPIC_PUT_NUMS)),
    getByTopicGroup: Object.fromEntries(ctx.stats.items.totals(StatsName.GROUP_GET_NUMS)),
  };
}
