/**
 * Who is connected: consumer groups (members, their subscriptions, consume mode) and producer
 * groups, as learned from HEART_BEAT. A member is one clientId on one connection. Members whose
 * connection closes, who unregister, or whose heartbeats stop for `channelExpiredMs` are removed;
 * the group's remaining members are then told (NOTIFY_CONSUMER_IDS_CHANGED) to rebalance.
 */
import type { RemotingConnection } from "../remoting/index.ts";
import type { SubscriptionData } from "./subscription.ts";
import { assert } from "../common/assert.ts";

export interface ClientChannel {
  clientId: string;
  conn: RemotingConnection;
  language: string;
  version: number;
  lastUpdateTimestamp: number;
}

export interface ConsumerGroupInfo {
  groupName: string;
  consumeType: string;
  messageModel: string;
  consumeFromWhere: string;
  subscriptions: Map<string, SubscriptionData>;
  channels: Map<string, ClientChannel>;
  lastUpdateTimestamp: number;
}

export interface ConsumerRegistration {
  group: string;
  consumeType: string;
  messageModel: string;
  consumeFromWhere: string;
  subscriptions: SubscriptionData[];
  channel: ClientChannel;
}

/**
 * The (group, client id) memberships each connection has carried, so that a connection closing
 * drops its own without a walk over every member of every group: in a reconnect storm among N
 * connected clients that walk was N comparisons per close. Entries that unregister, expiry or a
 * move to a new connection left behind are checked against the group and skipped.
 */
class MembershipIndex {
  readonly #of = new WeakMap<RemotingConnection, Map<string, Set<string>>>();

  add(conn: RemotingConnection, group: string, clientId: string): void {
    let groups = this.#of.get(conn);
    if (!groups) this.#of.set(conn, (groups = new Map()));
    let ids = groups.get(group);
    if (!ids) groups.set(group, (ids = new Set()));
    ids.add(clientId);
  }

  /** Whether `conn` is noted as carrying `clientId` of `group`. */
  has(conn: RemotingConnection, group: string, clientId: string): boolean {
    return this.#of.get(conn)?.get(group)?.has(clientId) ?? false;
  }

  /** What `conn` carried, forgotten: group → client ids. */
  take(conn: RemotingConnection): Map<string, Set<string>> | undefined {
    const groups = this.#of.get(conn);
    this.#of.delete(conn);
    return groups;
  }
}

export class ConsumerManager {
  readonly #groups = new Map<string, ConsumerGroupInfo>();
  readonly #index = new MembershipIndex();
  readonly #onMembersChanged: (group: string, members: ClientChannel[]) => void;
  /** notifyOnNextList's requests: connection → group → clientId (gone with the connection). */
  readonly #listNotify = new WeakMap<RemotingConnection, Map<string, string>>();

  constructor(onMembersChanged: (group: string, members: ClientChannel[]) => void) {
    this.#onMembersChanged = onMembersChanged;
  }

  /**
   * Registers or refreshes a member (Java's ConsumerManager.registerConsumer). Returns true, and
   * tells the group's members, when membership changed (a new client id, or a known one on a new
   * connection) or the group's subscribed topics changed (a topic added or dropped).
   */
  register(r: ConsumerRegistration): boolean {
    let g = this.#groups.get(r.group);
    if (!g) {
      g = {
        groupName: r.group,
        consumeType: r.consumeType,
        messageModel: r.messageModel,
        consumeFromWhere: r.consumeFromWhere,
        subscriptions: new Map(),
        channels: new Map(),
        lastUpdateTimestamp: r.channel.lastUpdateTimestamp,
      };
      this.#groups.set(r.group, g);
    }
    g.consumeType = r.consumeType;
    g.messageModel = r.messageModel;
    g.consumeFromWhere = r.consumeFromWhere;
    g.lastUpdateTimestamp = r.channel.lastUpdateTimestamp;
    const prev = g.channels.get(r.channel.clientId);
    const membersChanged = !prev || prev.conn !== r.channel.conn;
    g.channels.set(r.channel.clientId, r.channel);
    if (membersChanged) this.#index.add(r.channel.conn, r.group, r.channel.clientId);
    // Both ways consistent: a member of a group is noted under its connection (added when it joined
    // or moved; only a close forgets a connection's notes, and takes its members with them), so a
    // close never leaves a member behind.
    assert(
      this.#index.has(r.channel.conn, r.group, r.channel.clientId),
      "consumer {} of group {} is not noted under its connection",
      r.channel.clientId,
      r.group,
    );
    const subsChanged = updateSubscriptions(g.subscriptions, r.subscriptions);
    const changed = membersChanged || subsChanged;
    if (changed) this.#onMembersChanged(r.group, [...g.channels.values()]);
    return changed;
  }

  /**
   * The member `clientId` on `conn` gets one more NOTIFY_CONSUMER_IDS_CHANGED of `group` just
   * before the answer to its next GET_CONSUMER_LIST_BY_GROUP of it (`listed`). Asked when its
   * heartbeat made the group's retry topic. A 4.x push consumer's rebalance reads a topic's queues
   * before it looks the topic's route up (RebalanceImpl.rebalanceByTopic, findConsumerIdList), so
   * the retry topic, routable only once that heartbeat was answered, is taken by its second
   * rebalance. It gets one only when the join notification and its start's rebalanceImmediately
   * do not coincide, a race; otherwise its first retry waits for the 20 s rebalance (1 of 4 runs
   * here). A notification that arrives while the rebalance waits for this answer makes the client
   * run it again at once.
   */
  notifyOnNextList(conn: RemotingConnection, group: string, clientId: string): void {
    let groups = this.#listNotify.get(conn);
    if (!groups) this.#listNotify.set(conn, (groups = new Map()));
    groups.set(group, clientId);
  }

  /** GET_CONSUMER_LIST_BY_GROUP of `group` came on `conn`: the notification notifyOnNextList asked for, once. */
  listed(conn: RemotingConnection, group: string): void {
    const groups = this.#listNotify.get(conn);
    const clientId = groups?.get(group);
    if (clientId === undefined) return;
    groups!.delete(group);
    this.notifyMembers(group, new Set([clientId]));
  }

  /** Tells these members of `group` to rebalance now (those still connected). */
  notifyMembers(group: string, clientIds: ReadonlySet<string>): void {
    const g = this.#groups.get(group);
    if (!g) return;
    const members = [...clientIds].map((id) => g.channels.get(id)).filter((ch) => ch !== undefined);
    if (members.length > 0) this.#onMembersChanged(group, members);
  }

  unregister(group: string, clientId: string): boolean {
    const g = this.#groups.get(group);
    if (!g || !g.channels.delete(clientId)) return false;
    this.#afterRemoval(g);
    return true;
  }

  /** A connection closed: drop every membership it carried. */
  onConnectionClosed(conn: RemotingConnection): void {
    for (const [group, ids] of this.#index.take(conn) ?? []) {
      const g = this.#groups.get(group);
      if (!g) continue;
      let removed = false;
      for (const id of ids) {
        if (g.channels.get(id)?.conn === conn) {
          g.channels.delete(id);
          removed = true;
        }
      }
      if (removed) this.#afterRemoval(g);
    }
  }

  /** Drops members whose last heartbeat is older than `expiredMs`; returns their connections. */
  scanExpired(now: number, expiredMs: number): RemotingConnection[] {
    const closed: RemotingConnection[] = [];
    for (const g of [...this.#groups.values()]) {
      let removed = false;
      for (const [id, ch] of g.channels) {
        if (now - ch.lastUpdateTimestamp > expiredMs) {
          g.channels.delete(id);
          closed.push(ch.conn);
          removed = true;
        }
      }
      if (removed) this.#afterRemoval(g);
    }
    return closed;
  }

  #afterRemoval(g: ConsumerGroupInfo): void {
    // Only a group that is still in the table loses members (every caller found it there).
    assert(this.#groups.get(g.groupName) === g, "members removed from group {}, which is not in the table", g.groupName);
    if (g.channels.size === 0) {
      this.#groups.delete(g.groupName);
      return;
    }
    this.#onMembersChanged(g.groupName, [...g.channels.values()]);
  }

  group(group: string): ConsumerGroupInfo | undefined {
    return this.#groups.get(group);
  }

  /** The group's live member connections (none for an unknown group). */
  channels(group: string): ClientChannel[] {
    return [...(this.#groups.get(group)?.channels.values() ?? [])];
  }

  subscription(group: string, topic: string): SubscriptionData | undefined {
    return this.#groups.get(group)?.subscriptions.get(topic);
  }

  /** Member client ids, sorted (clients sort too; a stable order helps debugging). */
  clientIds(group: string): string[] {
    const g = this.#groups.get(group);
    return g ? [...g.channels.keys()].sort() : [];
  }

  groups(): ConsumerGroupInfo[] {
    return [...this.#groups.values()];
  }

  /** Groups subscribed to `topic` (for long-polling wake-ups and admin views). */
  groupsOfTopic(topic: string): string[] {
    return [...this.#groups.values()].filter((g) => g.subscriptions.has(topic)).map((g) => g.groupName);
  }
}

/**
 * Java's ConsumerGroupInfo.updateSubscription: a topic seen for the first time is added; a known
 * topic is replaced only by a strictly newer subVersion (heartbeats from members that have not
 * caught up must not roll it back); a topic the heartbeat no longer lists is dropped. Returns true
 * when the set of topics changed.
 */
function updateSubscriptions(table: Map<string, SubscriptionData>, subs: readonly SubscriptionData[]): boolean {
  let changed = false;
  const listed = new Set<string>();
  for (const s of subs) {
    listed.add(s.topic);
    const old = table.get(s.topic);
    if (!old) {
      table.set(s.topic, s);
      changed = true;
    } else if (s.subVersion > old.subVersion) {
      table.set(s.topic, s);
    }
  }
  for (const topic of [...table.keys()]) {
    if (listed.has(topic)) continue;
    table.delete(topic);
    changed = true;
  }
  return changed;
}

export class ProducerManager {
  readonly #groups = new Map<string, Map<string, ClientChannel>>();
  readonly #index = new MembershipIndex();

  register(group: string, ch: ClientChannel): void {
    let m = this.#groups.get(group);
    if (!m) this.#groups.set(group, (m = new Map()));
    if (m.get(ch.clientId)?.conn !== ch.conn) this.#index.add(ch.conn, group, ch.clientId);
    m.set(ch.clientId, ch);
    // As for consumers: a producer in a group is noted under its connection, so a close finds it.
    assert(this.#index.has(ch.conn, group, ch.clientId), "producer {} of group {} is not noted under its connection", ch.clientId, group);
  }

  unregister(group: string, clientId: string): void {
    const m = this.#groups.get(group);
    if (!m) return;
    m.delete(clientId);
    if (m.size === 0) this.#groups.delete(group);
  }

  onConnectionClosed(conn: RemotingConnection): void {
    for (const [group, ids] of this.#index.take(conn) ?? []) {
      const m = this.#groups.get(group);
      if (!m) continue;
      for (const id of ids) if (m.get(id)?.conn === conn) m.delete(id);
      if (m.size === 0) this.#groups.delete(group);
    }
  }

  scanExpired(now: number, expiredMs: number): RemotingConnection[] {
    const closed: RemotingConnection[] = [];
    for (const [group, m] of this.#groups) {
      for (const [id, ch] of m) {
        if (now - ch.lastUpdateTimestamp > expiredMs) {
          m.delete(id);
          closed.push(ch.conn);
        }
      }
      if (m.size === 0) this.#groups.delete(group);
    }
    return closed;
  }

  /** Any live connection of the group (transaction check-backs go to one of them). */
  anyChannel(group: string): ClientChannel | undefined {
    const m = this.#groups.get(group);
    return m ? m.values().next().value : undefined;
  }

  channels(group: string): ClientChannel[] {
    return [...(this.#groups.get(group)?.values() ?? [])];
  }

  /** The live connection of a producer client, by the client id of its heartbeat (request-reply pushes replies there). */
  findChannel(clientId: string): ClientChannel | undefined {
    for (const m of this.#groups.values()) {
      const ch = m.get(clientId);
      if (ch) return ch;
    }
    return undefined;
  }

  /** Every producer group with a live client (GET_ALL_PRODUCER_INFO). */
  groupNames(): string[] {
    return [...this.#groups.keys()];
  }
}
