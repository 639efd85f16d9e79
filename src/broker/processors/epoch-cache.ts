/**
 * GET_BROKER_EPOCH_CACHE (1007, RocketMQ 5's controller mode): no header; the answer's body is
 * the EpochEntryCache JSON of ../replica-epochs.ts —
 *   {"clusterName","brokerName","brokerId","epochList":[{"epoch","startOffset","endOffset"}],"maxOffset"}
 * A replica asks its master before it replicates (where their logs part); mqadmin 5's
 * getBrokerEpoch reads the same. Every broker keeps epochs: from etcd with automatic failover,
 * numbered by the master itself with fixed roles (../replica-epochs.ts).
 */
import { jsonBytes } from "../../common/json.ts";
import { createResponse, RequestCode, ResponseCode, type RemotingCommand, type RequestProcessor } from "../../remoting/index.ts";
import type { EpochEntryCache } from "../replica-epochs.ts";

export class EpochCacheProcessor implements RequestProcessor {
  static readonly CODES = [RequestCode.GET_BROKER_EPOCH_CACHE];
  readonly #cache: () => EpochEntryCache;

  constructor(cache: () => EpochEntryCache) {
    this.#cache = cache;
  }

  process(_conn: unknown, cmd: RemotingCommand): RemotingCommand {
    const cache = this.#cache();
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, jsonBytes(cache));
  }
}
