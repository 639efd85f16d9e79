/**
 * The name server's KV and configuration requests over the wire, through the in-process name
 * server (./test-support.ts): PUT/GET/DELETE_KV_CONFIG and GET_KVLIST_BY_NAMESPACE (kept in
 * kvConfig.json across a restart, QUERY_NOT_FOUND when absent, ORDER_TOPIC_CONFIG copied into
 * routes with namesrv.orderMessageEnable), GET/UPDATE_NAMESRV_CONFIG through the process's own
 * RuntimeConfig (a live key applied to the running name server and seen on virtual time, a
 * restart-only key NO_PERMISSION, an unknown key or a non-UTF-8 body SYSTEM_ERROR, both codes
 * REQUEST_CODE_NOT_SUPPORTED without config access), and codes the name server does not serve.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../config/load.ts";
import { createRequest, RequestCode, ResponseCode, type RemotingCommand } from "../remoting/index.ts";
import { recordingLogger } from "../remoting/test-support.ts";
import { NAMESPACE_ORDER_TOPIC_CONFIG, type TopicRouteData } from "../protocol/route.ts";
import { RuntimeConfig, type RuntimeTargets } from "../runtime-config.ts";
import { InProcessNamesrv, registerBrokerRequest, type InProcessNamesrvOptions } from "./test-support.ts";

const dec = new TextDecoder();
const enc = new TextEncoder();
const json = <T>(res: RemotingCommand): T => JSON.parse(dec.decode(res.body)) as T;
const answer = (res: RemotingCommand) => ({ code: res.code, remark: res.remark ?? null });

const tmp = mkdtempSync(join(tmpdir(), "rocketbun-namesrv-kv-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const put = (namespace: string, key: string, value: string) => createRequest(RequestCode.PUT_KV_CONFIG, { namespace, key, value });
const get = (namespace: string, key: string) => createRequest(RequestCode.GET_KV_CONFIG, { namespace, key });
const del = (namespace: string, key: string) => createRequest(RequestCode.DELETE_KV_CONFIG, { namespace, key });
const list = (namespace: string) => createRequest(RequestCode.GET_KVLIST_BY_NAMESPACE, { namespace });

describe("KV config", () => {
  test("PUT_KV_CONFIG stores a value that GET_KV_CONFIG and GET_KVLIST_BY_NAMESPACE answer, and kvConfig.json keeps it across a restart", async () => {
    const dir = join(tmp, "restart");
    {
      await using n = InProcessNamesrv.start({ dir });
      expect(answer(await n.call(put("NS", "k1", "v1")))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
      await n.ok(put("NS", "k2", "v2"));
      await n.ok(put("NS", "k1", "v1b"));
      expect((await n.ok(get("NS", "k1"))).extFields?.value).toBe("v1b");
      expect(json(await n.ok(list("NS")))).toEqual({ table: { k1: "v1b", k2: "v2" } });
      expect(JSON.parse(readFileSync(join(dir, "namesrv", "kvConfig.json"), "utf8"))).toEqual({ configTable: { NS: { k1: "v1b", k2: "v2" } } });
    }
    await using again = InProcessNamesrv.start({ dir });
    expect((await again.ok(get("NS", "k2"))).extFields?.value).toBe("v2");
    expect(json(await again.ok(list("NS")))).toEqual({ table: { k1: "v1b", k2: "v2" } });
  });

  test("DELETE_KV_CONFIG removes one key; what is absent is QUERY_NOT_FOUND with Java's remark", async () => {
    await using n = InProcessNamesrv.start();
    await n.ok(put("NS", "k1", "v1"));
    await n.ok(put("NS", "k2", "v2"));
    expect(answer(await n.call(del("NS", "k1")))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(answer(await n.call(get("NS", "k1")))).toEqual({ code: ResponseCode.QUERY_NOT_FOUND, remark: "No config item, Namespace: NS Key: k1" });
    expect(json(await n.ok(list("NS")))).toEqual({ table: { k2: "v2" } });
    await n.ok(del("NS", "k2"));
    expect(answer(await n.call(list("NS")))).toEqual({ code: ResponseCode.QUERY_NOT_FOUND, remark: "No config item, Namespace: NS" });
    // Deleting what is not there succeeds, as in Java.
    expect((await n.call(del("Other", "x"))).code).toBe(ResponseCode.SUCCESS);
    expect(JSON.parse(readFileSync(join(n.dir, "namesrv", "kvConfig.json"), "utf8"))).toEqual({ configTable: {} });
  });

  test("a request missing a header field is SYSTEM_ERROR naming it and stores nothing", async () => {
    await using n = InProcessNamesrv.start();
    const noValue = createRequest(RequestCode.PUT_KV_CONFIG, { namespace: "NS", key: "k" });
    expect(answer(await n.call(noValue))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "the custom field <value> is null" });
    expect((await n.call(get("NS", "k"))).code).toBe(ResponseCode.QUERY_NOT_FOUND);
    expect((await n.call(createRequest(RequestCode.GET_KV_CONFIG, { namespace: "NS" }))).code).toBe(ResponseCode.SYSTEM_ERROR);
    expect((await n.call(createRequest(RequestCode.DELETE_KV_CONFIG, { key: "k" }))).code).toBe(ResponseCode.SYSTEM_ERROR);
    expect((await n.call(createRequest(RequestCode.GET_KVLIST_BY_NAMESPACE, {}))).code).toBe(ResponseCode.SYSTEM_ERROR);
  });

  test("ORDER_TOPIC_CONFIG goes into the topic's route only with namesrv.orderMessageEnable", async () => {
    for (const orderMessageEnable of [false, true]) {
      await using n = InProcessNamesrv.start({ namesrv: { orderMessageEnable } });
      await n.ok(registerBrokerRequest({ topics: { Ordered: {} } }));
      await n.ok(put(NAMESPACE_ORDER_TOPIC_CONFIG, "Ordered", "broker-a:4"));
      const route = json<TopicRouteData>(await n.ok(createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: "Ordered" })));
      expect(route.orderTopicConf).toEqual(orderMessageEnable ? "broker-a:4" : undefined);
    }
  });
});

/** A name server with the process's config access: a RuntimeConfig whose name server target is the controller. */
function withRuntimeConfig(o: InProcessNamesrvOptions = {}): { n: InProcessNamesrv; rc: RuntimeConfig } {
  const loaded = loadConfig({ flags: { role: "namesrv", store: join(tmp, "rc-store") } });
  if ("errors" in loaded) throw new Error(loaded.errors.join("\n"));
  const targets: RuntimeTargets = { resolveNamesrvAddr: (l) => l, setLogLevel: () => {} };
  const rc = new RuntimeConfig({ config: loaded.config, sources: loaded.sources, file: undefined, flags: {}, targets, log: recordingLogger() });
  const n = InProcessNamesrv.start({ ...o, configAccess: rc.namesrvAccess() });
  targets.namesrv = n.controller;
  return { n, rc };
}

const getConfig = () => createRequest(RequestCode.GET_NAMESRV_CONFIG);
const updateConfig = (text: string | Uint8Array) =>
  createRequest(RequestCode.UPDATE_NAMESRV_CONFIG, undefined, typeof text === "string" ? enc.encode(text) : text);
/** GET_NAMESRV_CONFIG's body as name → value. */
async function namesrvConfig(n: InProcessNamesrv): Promise<Map<string, string>> {
  const text = dec.decode((await n.ok(getConfig())).body);
  return new Map(text.split("\n").filter((l) => l !== "").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
}

describe("GET_NAMESRV_CONFIG and UPDATE_NAMESRV_CONFIG", () => {
  test("GET answers the name server's keys as key=value lines", async () => {
    const { n } = withRuntimeConfig();
    await using _ = n;
    const cfg = await namesrvConfig(n);
    expect(cfg.get("brokerExpiredMs")).toBe("120000");
    expect(cfg.get("brokerScanIntervalMs")).toBe("10000");
    expect(cfg.get("orderMessageEnable")).toBe("false");
    // Only the name server's keys: none of the broker's.
    expect(cfg.has("brokerName")).toBe(false);
  });

  test("a live key is applied to the running name server: a shorter expiry drops a broker on virtual time", async () => {
    const { n, rc } = withRuntimeConfig();
    await using _ = n;
    await n.ok(registerBrokerRequest());
    expect(answer(await n.call(updateConfig("brokerExpiredMs=5000\nbrokerScanIntervalMs=1000\n")))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(rc.config.namesrv.brokerExpiredMs).toBe(5000);
    expect((await namesrvConfig(n)).get("brokerScanIntervalMs")).toBe("1000");
    // The scan timer was restarted on the clock at the new interval: kept at 5 s of silence, gone by the scan after.
    await n.advance(5_000);
    expect(n.controller.info.brokers().length).toBe(1);
    await n.advance(1_000);
    expect(n.controller.info.brokers()).toEqual([]);
  });

  test("orderMessageEnable=true over the wire puts ORDER_TOPIC_CONFIG into routes from then on", async () => {
    const { n } = withRuntimeConfig();
    await using _ = n;
    await n.ok(registerBrokerRequest({ topics: { Ordered: {} } }));
    await n.ok(put(NAMESPACE_ORDER_TOPIC_CONFIG, "Ordered", "broker-a:4"));
    const routeConf = async () =>
      json<TopicRouteData>(await n.ok(createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic: "Ordered" }))).orderTopicConf;
    expect(await routeConf()).toBeUndefined();
    await n.ok(updateConfig("orderMessageEnable=true"));
    expect(await routeConf()).toBe("broker-a:4");
  });

  test("a restart-only key is NO_PERMISSION, an unknown key or a bad value SYSTEM_ERROR, and nothing changes", async () => {
    const { n, rc } = withRuntimeConfig();
    await using _ = n;
    const restart = await n.call(updateConfig("brokerExpiredMs=5000\nlisten=127.0.0.1:9999"));
    expect(restart.code).toBe(ResponseCode.NO_PERMISSION);
    expect(restart.remark).toStartWith("namesrv.listen: cannot be changed while the name server runs");
    expect(answer(await n.call(updateConfig("noSuchKey=1")))).toEqual({ code: ResponseCode.SYSTEM_ERROR, remark: "noSuchKey: unknown key" });
    expect((await n.call(updateConfig("brokerExpiredMs=soon"))).code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(rc.config.namesrv.brokerExpiredMs).toBe(120_000);
    expect((await namesrvConfig(n)).get("brokerExpiredMs")).toBe("120000");
    await n.ok(registerBrokerRequest());
    await n.advance(60_000);
    expect(n.controller.info.brokers().length).toBe(1);
  });

  test("an empty body is SUCCESS; a body that is not UTF-8 is SYSTEM_ERROR", async () => {
    const { n } = withRuntimeConfig();
    await using _ = n;
    expect(answer(await n.call(updateConfig("")))).toEqual({ code: ResponseCode.SUCCESS, remark: null });
    expect(answer(await n.call(updateConfig(new Uint8Array([0x62, 0xff, 0xfe]))))).toEqual({
      code: ResponseCode.SYSTEM_ERROR,
      remark: "the body is not UTF-8 text",
    });
  });

  test("without config access both are REQUEST_CODE_NOT_SUPPORTED", async () => {
    await using n = InProcessNamesrv.start();
    expect(answer(await n.call(getConfig()))).toEqual({
      code: ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
      remark: ` request type ${RequestCode.GET_NAMESRV_CONFIG} not supported`,
    });
    expect((await n.call(updateConfig("brokerExpiredMs=5000"))).code).toBe(ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
  });
});

describe("codes the name server does not serve", () => {
  test("a broker's request code, and codes of Java's name server not implemented here, are REQUEST_CODE_NOT_SUPPORTED", async () => {
    await using n = InProcessNamesrv.start();
    // REGISTER_TOPIC_IN_NAMESRV 217, GET_KVCONFIG_BY_VALUE 220, DELETE_KVCONFIG_BY_VALUE 221, BROKER_HEARTBEAT 904, an unused 4242.
    for (const code of [RequestCode.SEND_MESSAGE, RequestCode.HEART_BEAT, 217, 220, 221, 904, 4242]) {
      expect(answer(await n.call(createRequest(code, {})))).toEqual({
        code: ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        remark: ` request type ${code} not supported`,
      });
    }
    // The connection stays usable.
    expect((await n.call(createRequest(RequestCode.GET_BROKER_CLUSTER_INFO))).code).toBe(ResponseCode.SUCCESS);
  });
});
