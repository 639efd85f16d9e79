/**
 * Registration larger than the frame limit (found by the port fuzz): sent in RocketMQ's
 * compressed form when that fits, and otherwise failing with the size and the key to raise, not
 * just "connection closed". And the wait for a topic change to reach the name servers (a request
 * that created a topic is answered once the topic is routable).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { RemotingClient, REMOTING_CLIENT_DEFAULTS } from "../remoting/client.ts";
import { createResponse } from "../remoting/command.ts";
import { RequestCode } from "../remoting/request-code.ts";
import { ResponseCode } from "../remoting/response-code.ts";
import { RemotingServer } from "../remoting/server.ts";
import { recordingLogger } from "../remoting/test-support.ts";
import type { TopicConfigWrapper } from "./metadata.ts";
import { decodeRegisterBrokerBody } from "../protocol/register-broker-body.ts";
import { NamesrvRegistration, PendingRoutes } from "./namesrv-registration.ts";
import { SimClock } from "../common/sim-clock.ts";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A name server that decodes what it gets, as ours does; `got`: the topic count and form of each registration. */
function namesrv(frameSizeMaxBytes: number): { server: RemotingServer; got: { topics: number; compressed: boolean }[] } {
  const got: { topics: number; compressed: boolean }[] = [];
  const s = new RemotingServer({ host: "127.0.0.1", port: 0, frameSizeMaxBytes, connectionBufferMaxBytes: 1 << 20, log: recordingLogger() });
  s.register(RequestCode.REGISTER_BROKER, {
    process: (_c, cmd) => {
      const compressed = cmd.extFields?.compressed === "true";
      const body = decodeRegisterBrokerBody(cmd.body, compressed, cmd.version);
      if ("invalid" in body) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, body.invalid);
      got.push({ topics: Object.keys(body.topicConfigTable).length, compressed });
      return createResponse(cmd, ResponseCode.SUCCESS);
    },
  });
  s.start();
  cleanups.push(() => s.stop());
  return { server: s, got };
}

function topics(n: number): () => TopicConfigWrapper {
  const table: TopicConfigWrapper["topicConfigTable"] = {};
  for (let i = 0; i < n; i++) {
    const topicName = `topic-${i}`;
    table[topicName] = { topicName, readQueueNums: 4, writeQueueNums: 4, perm: 6, topicFilterType: "SINGLE_TAG", topicSysFlag: 0, order: false };
  }
  return () => ({ dataVersion: { counter: 1, timestamp: 1 }, topicConfigTable: table });
}

function registration(port: number, n: number, frameSizeMaxBytes: number): NamesrvRegistration {
  const client = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: recordingLogger() });
  cleanups.push(() => client.close());
  return new NamesrvRegistration({
    client,
    namesrvs: [`127.0.0.1:${port}`],
    identity: { clusterName: "C", brokerAddr: "127.0.0.1:10911", brokerName: "b", brokerId: 0, haServerAddr: "127.0.0.1:10912" },
    topics: topics(n),
    periodMs: 3_600_000,
    log: recordingLogger(),
    frameSizeMaxBytes,
  });
}

describe("registration larger than the frame limit", () => {
  test("within the limit: JSON, as RocketMQ's broker sends it", async () => {
    const ns = namesrv(1 << 20);
    const [r] = await registration(ns.server.port, 500, 1 << 20).registerAll();
    expect(r).toEqual({ namesrv: `127.0.0.1:${ns.server.port}`, ok: true });
    expect(ns.got).toEqual([{ topics: 500, compressed: false }]);
  });

  test("over it as JSON but not compressed: sent compressed, every topic arrives", async () => {
    const ns = namesrv(16 * 1024);
    const [r] = await registration(ns.server.port, 500, 16 * 1024).registerAll();
    expect(r!.ok).toBe(true);
    expect(ns.got).toEqual([{ topics: 500, compressed: true }]);
  });

  test("over it even compressed: refused by the name server, and the failure names the topics, the size and the key", async () => {
    const ns = namesrv(16 * 1024);
    const [r] = await registration(ns.server.port, 20_000, 16 * 1024).registerAll();
    expect(r!.ok).toBe(false);
    expect(r!.error).toMatch(/the registration of 20000 topics is \d+ bytes, over remoting\.frameSizeMaxBytes \(16384\), \d+ compressed/);
    expect(ns.got).toEqual([]);
  });
});

describe("a topic change reaches the name servers before the request that made it is answered", () => {
  test("topicsChanged settles after the registration that carries the change was answered; changes together share it", async () => {
    const ns = namesrv(1 << 20);
    const reg = registration(ns.server.port, 3, 1 << 20);
    const a = reg.topicsChanged();
    const b = reg.topicsChanged();
    expect(ns.got).toEqual([]);
    await Promise.all([a, b]);
    expect(ns.got).toEqual([{ topics: 3, compressed: false }]);
  });

  test("topicsChanged settles when the name server cannot be reached (the periodic registration carries it later)", async () => {
    const ns = namesrv(1 << 20);
    const port = ns.server.port;
    await ns.server.stop();
    await registration(port, 3, 1 << 20).topicsChanged();
  });

  test("PendingRoutes: a created topic waits for its registration, bounded; others and settled ones do not wait", async () => {
    const sim = new SimClock();
    const routes = new PendingRoutes(sim.view(), 2000);
    expect(routes.until("T")).toBeNull();
    const registered = Promise.withResolvers<void>();
    routes.track("T", registered.promise);
    expect(routes.until("Other")).toBeNull();
    let settled = false;
    void routes.until("Other", "T")!.then(() => (settled = true));
    await Bun.sleep(0);
    expect(settled).toBe(false);
    registered.resolve();
    await Bun.sleep(0);
    expect(settled).toBe(true);
    expect(routes.until("T", "T")).toBeNull();
    // A registration that never answers: the wait ends at the bound.
    routes.track("U", new Promise<void>(() => {}));
    let ended = false;
    void routes.until("U")!.then(() => (ended = true));
    await sim.advance(1999);
    expect(ended).toBe(false);
    await sim.advance(1);
    expect(ended).toBe(true);
    expect(routes.until("U")).toBeNull();
  });
});
