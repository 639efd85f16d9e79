/**
 * Registration larger than the frame limit (found by the port fuzz, issue #18): sent in RocketMQ's
 * compressed form when that fits, and otherwise failing with the size and the key to raise, not
 * just "connection closed".
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
import { NamesrvRegistration } from "./namesrv-registration.ts";

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
