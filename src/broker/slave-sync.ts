/**
 * SlaveSynchronize: a slave's metadata follows its master's. At start and every `intervalMs`,
 * it copies topic configs, consumer offsets, delay offsets, subscription groups and consume modes
 * from the master (GET_ALL_TOPIC_CONFIG, GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET,
 * GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GET_ALL_MESSAGE_REQUEST_MODE), so a consumer that moves to
 * the slave resumes where it was. A master that does not know the last (a 4.x broker, an older
 * RocketBun) answers REQUEST_CODE_NOT_SUPPORTED: it has no modes, and the round still succeeds.
 * It also asks the master for its CommitLog end (GET_BROKER_RUNTIME_INFO, commitLogMaxOffset),
 * which the slave reports its replication lag against.
 */
import { parseJsonBytes } from "../common/json.ts";
import type { Logger } from "../common/log.ts";
import type { ConsumerOffsetManager, DelayOffsetManager, SubscriptionGroupManager, TopicConfigManager } from "./metadata.ts";
import type { MessageRequestModeManager } from "./message-request-mode.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingClient } from "../remoting/index.ts";

export interface SlaveSyncDeps {
  client: RemotingClient;
  masterAddr: () => string | undefined;
  topics: TopicConfigManager;
  consumerOffsets: ConsumerOffsetManager;
  delayOffsets: DelayOffsetManager;
  groups: SubscriptionGroupManager;
  requestModes: MessageRequestModeManager;
  log: Logger;
  /** Default Date.now. */
  now?: () => number;
}

export class SlaveSynchronize {
  readonly #d: SlaveSyncDeps;
  readonly #now: () => number;
  #lastSyncAt = 0;
  #polling = false;
  #round: Promise<boolean> | null = null;

  constructor(d: SlaveSyncDeps) {
    this.#d = d;
    this.#now = d.now ?? Date.now;
  }

  get lastSyncAt(): number {
    return this.#lastSyncAt;
  }

  /** One round; problems are logged, never thrown (the next round retries). Rounds never overlap. */
  syncAll(): Promise<boolean> {
    this.#round ??= this.#syncAll().finally(() => (this.#round = null));
    return this.#round;
  }

  async #syncAll(): Promise<boolean> {
    const addr = this.#d.masterAddr();
    if (!addr) return false;
    const steps: [number, (body: unknown) => string[]][] = [
      [RequestCode.GET_ALL_TOPIC_CONFIG, (b) => this.#d.topics.replaceAll(b)],
      [RequestCode.GET_ALL_CONSUMER_OFFSET, (b) => this.#d.consumerOffsets.replaceAll(b)],
      [RequestCode.GET_ALL_DELAY_OFFSET, (b) => this.#d.delayOffsets.replaceAll(b)],
      [RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, (b) => this.#d.groups.replaceAll(b)],
      [RequestCode.GET_ALL_MESSAGE_REQUEST_MODE, (b) => this.#d.requestModes.replaceAll(b)],
    ];
    let ok = true;
    for (const [code, apply] of steps) {
      try {
        const res = await this.#d.client.invoke(addr, createRequest(code), 5000);
        if (code === RequestCode.GET_ALL_MESSAGE_REQUEST_MODE && res.code === ResponseCode.REQUEST_CODE_NOT_SUPPORTED) continue;
        if (res.code !== ResponseCode.SUCCESS || !res.body) throw new Error(`code ${res.code} ${res.remark ?? ""}`);
        for (const p of apply(parseJsonBytes(res.body))) this.#d.log.warn(`slave sync (${code}): ${p}`);
      } catch (e) {
        ok = false;
        this.#d.log.rateLimited(
          "warn",
          `slave-sync-${code}`,
          `slave sync of request ${code} from ${addr} failed: ${e instanceof Error ? e.message : String(e)}`,
          30_000,
        );
      }
    }
    if (ok) this.#lastSyncAt = this.#now();
    return ok;
  }

  /** The master's CommitLog end, or undefined if it cannot be asked (no address, no answer). */
  async masterMaxOffset(timeoutMs = 3000): Promise<number | undefined> {
    const addr = this.#d.masterAddr();
    if (!addr || this.#polling) return undefined;
    this.#polling = true;
    try {
      const res = await this.#d.client.invoke(addr, createRequest(RequestCode.GET_BROKER_RUNTIME_INFO), timeoutMs);
      if (res.code !== ResponseCode.SUCCESS || !res.body) return undefined;
      const body = parseJsonBytes(res.body) as { table?: Record<string, unknown> } | null;
      const v = Number(body?.table?.commitLogMaxOffset);
      return Number.isSafeInteger(v) && v >= 0 ? v : undefined;
    } catch {
      return undefined;
    } finally {
      this.#polling = false;
    }
  }
}
