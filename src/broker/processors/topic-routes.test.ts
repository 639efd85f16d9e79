/**
 * A topic the broker creates on a client's behalf is routable on the name servers before the
 * answer that made it goes out (../namesrv-registration.ts PendingRoutes): the
 * retry topic of a new group at its first heartbeat, a topic auto-created by a send, a DLQ. A name
 * server that never answers holds the answer for at most 2 s. Through the in-process broker with a
 * name server of the test's own on the same in-memory sockets, which answers REGISTER_BROKER only
 * when the test lets it.
 */
import { describe, expect, test } from "bun:test";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../../remoting/index.ts";
import { MemNetwork } from "../../remoting/test-support.ts";
import { FAKE_NAMESRV_ADDR, fakeNamesrv, heartbeatRequest, InProcessBroker, sendV2Request } from "../test-support.ts";

/** The promise's outcome once settled, or "pending". */
async function state<T>(p: Promise<T>): Promise<T | "pending"> {
  return Promise.race([p, Bun.sleep(5).then(() => "pending" as const)]);
}

describe("a topic made for a client is routable before the client hears back", () => {
  test("a new group's retry topic: the heartbeat is answered once its registration was", async () => {
    const network = new MemNetwork();
    const ns = fakeNamesrv(network, { hold: true });
    await using b = InProcessBroker.start({ network, namesrvAddr: [FAKE_NAMESRV_ADDR] });
    await b.advance(0);
    ns.release(); // the registration at start
    const hb = b.call(heartbeatRequest("10.0.0.1@c", { group: "NewGroup", subs: [{ topic: "TBW102", expr: "*" }] }));
    await b.advance(20);
    expect(await state(hb)).toBe("pending");
    expect(ns.routes("%RETRY%NewGroup")).toBe(true);
    ns.release();
    expect((await hb).code).toBe(ResponseCode.SUCCESS);
    // Known now: the next heartbeat is answered at once, with no registration.
    const before = ns.registrations.length;
    expect((await b.call(heartbeatRequest("10.0.0.1@c", { group: "NewGroup" }))).code).toBe(ResponseCode.SUCCESS);
    expect(ns.registrations.length).toBe(before);
    await ns.server.stop();
  });

  test("an auto-created topic: the send is answered once its registration was; a name server that never answers holds it 2 s", async () => {
    const network = new MemNetwork();
    const ns = fakeNamesrv(network, { hold: true });
    await using b = InProcessBroker.start({ network, namesrvAddr: [FAKE_NAMESRV_ADDR], broker: { autoCreateTopicEnable: true } });
    await b.advance(0);
    ns.release();
    const sent = b.call(sendV2Request("Fresh", "x"));
    await b.advance(20);
    expect(await state(sent)).toBe("pending");
    expect(ns.routes("Fresh")).toBe(true);
    ns.release();
    expect((await sent).code).toBe(ResponseCode.SUCCESS);
    // Never answered: the producer hears back at the bound, its message stored.
    const silent = b.call(sendV2Request("Silent", "y"));
    await b.advance(1990);
    expect(await state(silent)).toBe("pending");
    await b.advance(30);
    expect((await silent).code).toBe(ResponseCode.SUCCESS);
    ns.release();
    await ns.server.stop();
  });

  test("the member whose heartbeat made its group's retry topic is notified once more, just before its next consumer-list answer", async () => {
    await using b = InProcessBroker.start();
    const member = (clientId: string) => {
      const seen: string[] = [];
      const client = b.client((_conn, cmd) => seen.push(cmd.code === RequestCode.NOTIFY_CONSUMER_IDS_CHANGED ? "notify" : String(cmd.code)));
      const call = async (cmd: RemotingCommand, what: string) => {
        const res = await client.invoke(b.addr, cmd, 10_000);
        await b.advance(0);
        seen.push(`${what} ${res.code}`);
      };
      return {
        seen,
        heartbeat: () => call(heartbeatRequest(clientId, { group: "G", subs: [{ topic: "TBW102", expr: "*" }] }), "heartbeat"),
        list: () => call(createRequest(RequestCode.GET_CONSUMER_LIST_BY_GROUP, { consumerGroup: "G" }), "list"),
      };
    };
    const first = member("10.0.0.1@first");
    await first.heartbeat();
    await first.list();
    await first.list();
    await first.heartbeat();
    await first.list();
    // The join's notification, then the one written before the first list answer, then none.
    expect(first.seen).toEqual(["notify", "heartbeat 0", "notify", "list 0", "list 0", "heartbeat 0", "list 0"]);
    // A later member finds the retry topic made: only the join's notification (sent to both).
    const second = member("10.0.0.2@second");
    await second.heartbeat();
    await second.list();
    expect(second.seen).toEqual(["notify", "heartbeat 0", "list 0"]);
  });
});
