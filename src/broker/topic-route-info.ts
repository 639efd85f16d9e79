/**
 * The queues of a topic across every broker group, as QUERY_ASSIGNMENT allocates them (Java
 * `TopicRouteInfoManager.getTopicSubscribeInfo`, docs/PROTOCOL.md §3.22): the readable queues of
 * each broker in the topic's route, asked of the name servers (GET_ROUTEINFO_BY_TOPIC) and kept
 * for `cacheMs` (Java's loadBalancePollNameServerInterval, 30 s).
 *
 * Where Java answers "no route" and the client keeps its old assignment, RocketBun falls back to
 * what it knows itself: with no name server, or when none answers with a route (unreachable, an
 * error, TOPIC_NOT_EXIST because this broker's registration of a new topic is still on its way),
 * the last route fetched is used, else this broker's own readable queues of the topic. A topic
 * this broker does not have either gives null (no assignment).
 *
 * Lookups of one topic share one request; the cache holds at most ROUTE_CACHE_MAX_TOPICS topics
 * (the oldest fetched is dropped), since a client names any topic it likes.
 */
import { type Clock } from "../common/clock.ts";
import { parseJsonBytes } from "../common/json.ts";
import type { Logger } from "../common/log.ts";
import { subscribeQueues } from "../protocol/allocate.ts";
import { parseRoute, type MessageQueue } from "../protocol/route.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingClient } from "../remoting/index.ts";

export const ROUTE_CACHE_MS = 30_000;
export const ROUTE_CACHE_MAX_TOPICS = 10_000;
/** Java `TopicRouteInfoManager.GET_TOPIC_ROUTE_TIMEOUT`. */
const ROUTE_REQUEST_TIMEOUT_MS = 3000;

export interface TopicRouteInfoOptions {
  client: RemotingClient;
  /** The name servers in force (they change with a config reload). */
  namesrvs: () => readonly string[];
  /** This broker's own readable queues of a topic, sorted; null when it has no such topic. */
  localQueues: (topic: string) => MessageQueue[] | null;
  clock: Clock;
  log: Logger;
  cacheMs?: number;
}

interface Cached {
  queues: MessageQueue[];
  fetchedAt: number;
}

export class TopicRouteInfoManager {
  readonly #o: TopicRouteInfoOptions;
  readonly #cacheMs: number;
  readonly #cache = new Map<string, Cached>();
  readonly #inFlight = new Map<string, Promise<MessageQueue[] | null>>();

  constructor(o: TopicRouteInfoOptions) {
    this.#o = o;
    this.#cacheMs = o.cacheMs ?? ROUTE_CACHE_MS;
  }

  /** The topic's readable queues on every broker, sorted as Java's `MessageQueue.compareTo`; null when unknown. */
  subscribeQueues(topic: string): Promise<MessageQueue[] | null> {
    const cached = this.#cache.get(topic);
    if (cached && this.#o.clock.now() - cached.fetchedAt < this.#cacheMs) return Promise.resolve(cached.queues);
    if (this.#o.namesrvs().length === 0) return Promise.resolve(this.#o.localQueues(topic));
    let pending = this.#inFlight.get(topic);
    if (!pending) {
      pending = this.#refresh(topic).finally(() => this.#inFlight.delete(topic));
      this.#inFlight.set(topic, pending);
    }
    return pending;
  }

  async #refresh(topic: string): Promise<MessageQueue[] | null> {
    const fetched = await this.#fetch(topic);
    if (fetched !== null) {
      this.#cache.delete(topic);
      if (this.#cache.size >= ROUTE_CACHE_MAX_TOPICS) this.#cache.delete(this.#cache.keys().next().value!);
      this.#cache.set(topic, { queues: fetched, fetchedAt: this.#o.clock.now() });
      return fetched;
    }
    return this.#cache.get(topic)?.queues ?? this.#o.localQueues(topic);
  }

  /** The route from the first name server that has one; null when none does. */
  async #fetch(topic: string): Promise<MessageQueue[] | null> {
    for (const addr of this.#o.namesrvs()) {
      try {
        const res = await this.#o.client.invoke(addr, createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic }), ROUTE_REQUEST_TIMEOUT_MS);
        if (res.code === ResponseCode.TOPIC_NOT_EXIST) continue;
        if (res.code !== ResponseCode.SUCCESS || !res.body) throw new Error(`code ${res.code} ${res.remark ?? ""}`);
        const route = parseRoute(parseJsonBytes(res.body));
        if ("invalid" in route) throw new Error(route.invalid);
        return subscribeQueues(topic, route);
      } catch (e) {
        this.#o.log.rateLimited(
          "warn",
          "route-info",
          `route of ${topic} from name server ${addr}: ${e instanceof Error ? e.message : String(e)}`,
          30_000,
        );
      }
    }
    return null;
  }
}
