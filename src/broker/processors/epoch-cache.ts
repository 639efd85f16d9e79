/**
 * GET_BROKER_EPOCH_CACHE (1007, RocketMQ 5's controller mode; here with broker.failover.enable):
 * no header; the answer's body is the EpochEntryCache JSON of ../failover.ts —
 *   {"clusterName","brokerName","brokerId","epochList":[{"epoch","startOffset","endOffset"}],"maxOffset"}
 * A replica asks its master before it replicates (where their logs part); mqadmin 5's
 * getBrokerEpoch reads the same. A broker without failover keeps no epochs: SYSTEM_ERROR.
 */
import { jsonBytes } from "../../common/json.ts";
import { createResponse, RequestCode, ResponseCode, type RemotingCommand, type RequestProcessor } from "../../remoting/index.ts";
import type { EpochEntryCache } from "../failover.ts";

export class EpochCacheProcessor implements RequestProcessor {
  static readonly CODES = [RequestCode.GET_BROKER_EPOCH_CACHE];
  readonly #cache: () => EpochEntryCache | null;

  /** `cache`: the failover's epoch cache, or null when failover is off. */
  constructor(cache: () => EpochEntryCache | null) {
    this.#cache = cache;
  }

  process(_conn: unknown, cmd: RemotingCommand): RemotingCommand {
    const cache = this.#cache();
    if (cache === null) {
      return createResponse(cmd, ResponseCode.SYSTEM_ERROR, "automatic failover (broker.failover.enable) is off: this broker keeps no epochs");
    }
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, undefined, jsonBytes(cache));
  }
}
