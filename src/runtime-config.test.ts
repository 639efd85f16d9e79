import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger, LogLevel } from "./common/log.ts";
import { loadConfig, type LoadedConfig } from "./config/load.ts";
import { LIVE_KEYS } from "./config/reload.ts";
import type { BrokerRuntimeOptions } from "./broker/index.ts";
import type { NamesrvRuntimeOptions } from "./namesrv/index.ts";
import { routeOf, RuntimeConfig } from "./runtime-config.ts";

const tmp = mkdtempSync(join(tmpdir(), "rocketbun-runtime-config-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const BASE = `role: master
logLevel: info
broker:
  namesrvAddr: ["127.0.0.1:9876"]
  brokerName: broker-a
  maxMessageSizeBytes: 16384
store:
  dir: ${join(tmp, "store")}
`;

function fixture(name: string, opts: { brokerDelayMs?: number } = {}) {
  const file = join(tmp, `${name}.yaml`);
  writeFileSync(file, BASE);
  const loaded = loadConfig({ file, flags: {} }) as LoadedConfig;
  expect("errors" in loaded).toBe(false);
  const lines: string[] = [];
  const log: Logger = {
    debug: (m) => lines.push(`DEBUG ${m}`),
    info: (m) => lines.push(`INFO ${m}`),
    warn: (m) => lines.push(`WARN ${m}`),
    error: (m) => lines.push(`ERROR ${m}`),
    rateLimited: (l, _k, m) => lines.push(`${l.toUpperCase()} ${m}`),
  };
  const broker: BrokerRuntimeOptions[] = [];
  const namesrv: NamesrvRuntimeOptions[] = [];
  const levels: LogLevel[] = [];
  const rc = new RuntimeConfig({
    config: loaded.config,
    sources: loaded.sources,
    file,
    flags: {},
    log,
    targets: {
      broker: {
        async reconfigure(p) {
          if (opts.brokerDelayMs) await Bun.sleep(opts.brokerDelayMs);
          broker.push(p);
        },
      },
      namesrv: { reconfigure: (p) => void namesrv.push(p) },
      resolveNamesrvAddr: (list) => list,
      setLogLevel: (l) => void levels.push(l),
    },
  });
  const edit = (f: (text: string) => string) => writeFileSync(file, f(BASE));
  return { rc, file, lines, broker, namesrv, levels, edit };
}

describe("RuntimeConfig: SIGHUP", () => {
  test("every live key has a component that applies it", () => {
    expect(LIVE_KEYS.filter((k) => routeOf(k) === undefined)).toEqual([]);
  });

  test("a live key is applied and logged; a restart-only key is logged and kept", async () => {
    const f = fixture("apply");
    f.edit((t) => t.replace("maxMessageSizeBytes: 16384", "maxMessageSizeBytes: 65536").replace("brokerName: broker-a", "brokerName: broker-b"));
    const r = await f.rc.reload();
    expect(r.status).toBe("applied");
    expect(f.broker).toEqual([{ maxMessageSizeBytes: 65536 }]);
    expect(f.rc.config.broker.maxMessageSizeBytes).toBe(65536);
    expect(f.rc.config.broker.brokerName).toBe("broker-a");
    expect(f.lines).toContain("INFO reload: broker.maxMessageSizeBytes: 16384 → 65536 (applied)");
    expect(f.lines).toContain('WARN reload: broker.brokerName: "broker-a" → "broker-b": changed in the file, needs a restart (still "broker-a")');
    expect(f.rc.dataVersion.counter).toBe(1);
  });

  test("an invalid file changes nothing and every problem is logged with its position", async () => {
    const f = fixture("invalid");
    f.edit((t) => t.replace("maxMessageSizeBytes: 16384", "maxMessageSizeBytes: big\n  bogusKey: 1").replace("logLevel: info", "logLevel: debug"));
    const r = await f.rc.reload();
    expect(r.status).toBe("invalid");
    expect(f.broker).toEqual([]);
    expect(f.levels).toEqual([]);
    expect(f.lines.filter((l) => l.startsWith("ERROR"))).toEqual([
      `ERROR ${f.file}:6:3: broker.maxMessageSizeBytes: expected an integer, got "big"`,
      `ERROR ${f.file}:7:3: broker.bogusKey: unknown key "bogusKey"`,
      "ERROR reload: 2 configuration problem(s); nothing changed, still running on the previous configuration",
    ]);
    expect(f.rc.config.logLevel).toBe("info");
    expect(f.rc.dataVersion.counter).toBe(0);
  });

  test("a cross-key violation against a restart-only value refuses the whole reload", async () => {
    const f = fixture("cross");
    f.edit(
      (t) =>
        t.replace("maxMessageSizeBytes: 16384", "maxMessageSizeBytes: 33554432").replace("logLevel: info", "logLevel: warn") +
        "remoting:\n  frameSizeMaxBytes: 67108864\n",
    );
    expect((await f.rc.reload()).status).toBe("invalid");
    expect(f.broker).toEqual([]);
    expect(f.levels).toEqual([]);
  });

  test("the log level changes, and the line saying so is not hidden by it", async () => {
    const f = fixture("level");
    f.edit((t) => t.replace("logLevel: info", "logLevel: error"));
    await f.rc.reload();
    expect(f.levels).toEqual(["info", "error"]);
    expect(f.lines).toContain('INFO reload: logLevel: "info" → "error" (applied)');
  });

  test("SIGHUPs during a reload are queued and collapse into one", async () => {
    const f = fixture("queue", { brokerDelayMs: 50 });
    f.edit((t) => t.replace("maxMessageSizeBytes: 16384", "maxMessageSizeBytes: 20000"));
    const first = f.rc.reload();
    await Bun.sleep(5); // the first is now applying
    f.edit((t) => t.replace("maxMessageSizeBytes: 16384", "maxMessageSizeBytes: 30000"));
    const second = f.rc.reload();
    const third = f.rc.reload();
    expect(third).toBe(second);
    await Promise.all([first, second]);
    expect(f.broker).toEqual([{ maxMessageSizeBytes: 20000 }, { maxMessageSizeBytes: 30000 }]);
  });
});

describe("RuntimeConfig: UPDATE_BROKER_CONFIG", () => {
  test("applies live keys through the same path, with RocketMQ's names", async () => {
    const f = fixture("wire");
    expect(await f.rc.update("maxMessageSize=32768\nflushIntervalCommitLog=200\n", "10.0.0.1:5555")).toEqual({ ok: true });
    expect(f.broker).toEqual([{ maxMessageSizeBytes: 32768, store: { flushIntervalMs: 200 } }]);
    expect(f.lines).toContain("INFO UPDATE_BROKER_CONFIG from 10.0.0.1:5555: broker.maxMessageSizeBytes: 16384 → 32768 (applied)");
    const got = f.rc.brokerAccess().get();
    expect(got.properties).toContain("maxMessageSize=32768\n");
    expect(JSON.parse(got.version)).toEqual({ timestamp: expect.any(Number), counter: 1 });
  });

  test("enablePropertyFilter (SQL92 filters) is switched live, as mqadmin updateBrokerConfig does", async () => {
    const f = fixture("sql");
    expect(await f.rc.update("enablePropertyFilter=true\n", "10.0.0.1:5555")).toEqual({ ok: true });
    expect(f.broker).toEqual([{ enablePropertyFilter: true }]);
    expect(f.rc.brokerAccess().get().properties).toContain("enablePropertyFilter=true\n");
  });

  test("refuses restart-only keys (NO_PERMISSION) and unknown keys or bad values, changing nothing", async () => {
    const f = fixture("refuse");
    const r1 = await f.rc.update("maxMessageSize=32768\nbrokerName=broker-z\n", "x");
    expect(r1).toEqual({
      ok: false,
      permission: true,
      remark: expect.stringContaining("broker.brokerName: cannot be changed while the broker runs"),
    });
    const r2 = await f.rc.update("maxMessageSize=32768\nnoSuchKey=1\n", "x");
    expect(r2).toEqual({ ok: false, permission: false, remark: "noSuchKey: unknown key" });
    const r3 = await f.rc.update("maxMessageSize=999999999\n", "x");
    expect(r3.ok).toBe(false);
    expect(f.broker).toEqual([]);
    // A restart-only key sent with its current value is not a change.
    expect(await f.rc.update("brokerName=broker-a\n", "x")).toEqual({ ok: true });
  });
});
