/**
 * ReplicaRole with fixed roles, through the in-process broker (./test-support.ts): the one role
 * view the processors and the admin read, and the store's replication listener, whose answers
 * follow the role (a SYNC_MASTER's put waits for a replica, an ASYNC_MASTER's does not, a slave's
 * store takes no put). Failover's transitions run in test/sim/failover-sim.test.ts and
 * test/integration/failover.test.ts (they need etcd).
 */
import { describe, expect, test } from "bun:test";
import { parseJsonBytes } from "../common/json.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../remoting/index.ts";
import type { EpochEntryCache } from "./replica-epochs.ts";
import { createTopicRequest, InProcessBroker, sendV2Request } from "./test-support.ts";

async function epochCache(b: InProcessBroker): Promise<EpochEntryCache> {
  const res = await b.ok(createRequest(RequestCode.GET_BROKER_EPOCH_CACHE));
  return parseJsonBytes(res.body ?? new Uint8Array()) as EpochEntryCache;
}

const codeOf = (res: RemotingCommand) => res.code;

describe("replica role (fixed roles)", () => {
  test("ASYNC_MASTER: the view says master with brokerId 0, a new epoch begins at the log end, and a put waits for no replica", async () => {
    await using b = InProcessBroker.start({ role: "master" });
    const info = b.controller.info;
    expect([info.settings().brokerRole, info.settings().brokerId, info.replication().role]).toEqual(["ASYNC_MASTER", 0, "ASYNC_MASTER"]);
    expect(info.replication().slaves).toEqual([]);
    await b.ok(createTopicRequest("T", 4));
    expect(codeOf(await b.call(sendV2Request("T", "x")))).toBe(ResponseCode.SUCCESS);
    const cache = await epochCache(b);
    expect([cache.brokerId, cache.epochList.map((e) => [e.epoch, e.startOffset]), cache.maxOffset]).toEqual([0, [[1, 0]], info.store().maxPhyOffset]);
  });

  test("SYNC_MASTER: the store asks the role how long a put waits; with no slave connected it is stored and answered SLAVE_NOT_AVAILABLE", async () => {
    await using b = InProcessBroker.start({ role: "master", broker: { brokerRole: "SYNC_MASTER" } });
    expect(b.controller.info.replication().role).toBe("SYNC_MASTER");
    await b.ok(createTopicRequest("T", 4));
    expect(codeOf(await b.call(sendV2Request("T", "x")))).toBe(ResponseCode.SLAVE_NOT_AVAILABLE);
    expect(b.controller.info.store().maxPhyOffset).toBeGreaterThan(0);
    // A send that does not wait (WAIT=false) is answered at once, whatever the role.
    expect(codeOf(await b.call(sendV2Request("T", "y", { props: { WAIT: "false" } })))).toBe(ResponseCode.SUCCESS);
  });

  test("a slave: the view says SLAVE under its configured brokerId, its store takes no put, and it reports its (unreachable) master link", async () => {
    await using b = InProcessBroker.start({ role: "slave" });
    const info = b.controller.info;
    expect([info.settings().brokerRole, info.settings().brokerId]).toEqual(["SLAVE", 1]);
    const r = info.replication();
    expect([r.role, r.slaves, r.master?.connected, r.master?.masterAddr]).toEqual(["SLAVE", undefined, false, undefined]);
    expect(codeOf(await b.call(sendV2Request("TBW102", "x")))).toBe(ResponseCode.SERVICE_NOT_AVAILABLE);
    expect(info.store().maxPhyOffset).toBe(0);
    const cache = await epochCache(b);
    expect([cache.brokerId, cache.epochList]).toEqual([1, []]);
  });
});
