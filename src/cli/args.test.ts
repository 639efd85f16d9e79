import { describe, expect, test } from "bun:test";
import { BENCH_HELP_TEXT, HELP_TEXT, parseArgs, type CliArgs } from "./args.ts";

function ok(argv: string[]): CliArgs {
  const r = parseArgs(argv);
  if ("errors" in r) throw new Error(r.errors.join("\n"));
  return r;
}

function errors(argv: string[]): string[] {
  const r = parseArgs(argv);
  if (!("errors" in r)) throw new Error(`expected errors for ${argv.join(" ")}`);
  return r.errors;
}

describe("parseArgs", () => {
  test("every value flag, as --flag value", () => {
    const r = ok([
      "--role",
      "master",
      "--config",
      "c.yaml",
      "--listen",
      "0.0.0.0:10911",
      "--admin",
      "0.0.0.0:10910",
      "--namesrv",
      "a:9876;b:9876",
      "--store",
      "/data",
      "--cluster",
      "C",
      "--broker-name",
      "B",
      "--broker-id",
      "0",
      "--broker-role",
      "SYNC_MASTER",
      "--flush-disk",
      "SYNC_FLUSH",
      "--log-level",
      "debug",
      "--ports-file",
      "p.json",
    ]);
    expect(r).toEqual({
      action: "run",
      flags: {
        role: "master",
        config: "c.yaml",
        listen: "0.0.0.0:10911",
        admin: "0.0.0.0:10910",
        namesrv: "a:9876;b:9876",
        store: "/data",
        cluster: "C",
        brokerName: "B",
        brokerId: "0",
        brokerRole: "SYNC_MASTER",
        flushDisk: "SYNC_FLUSH",
        logLevel: "debug",
        portsFile: "p.json",
      },
    });
  });

  test("--flag=value, including values that contain =", () => {
    expect(ok(["--role=slave", "--store=/x=y", "--namesrv=[::1]:9876"]).flags).toEqual({ role: "slave", store: "/x=y", namesrv: "[::1]:9876" });
  });

  test("flags stay strings: values are validated by loadConfig", () => {
    expect(ok(["--broker-id", "abc"]).flags.brokerId).toBe("abc");
    expect(ok(["--broker-id", "-1"]).flags.brokerId).toBe("-1");
  });

  test("the role may be left to the config file", () => {
    expect(ok(["--config", "config/standalone.yaml"])).toEqual({ action: "run", flags: { config: "config/standalone.yaml" } });
  });

  test("actions", () => {
    expect(ok(["--role", "namesrv", "--check-config"]).action).toBe("check-config");
    expect(ok(["--print-config", "--role", "namesrv"]).action).toBe("print-config");
    expect(ok(["--version"]).action).toBe("version");
    expect(ok(["--help"]).action).toBe("help");
    expect(ok(["-h"]).action).toBe("help");
  });

  test("--help and --version need no role and win over other errors", () => {
    expect(ok(["--bogus", "--help"]).action).toBe("help");
    expect(ok(["--role", "nope", "--version"]).action).toBe("version");
  });

  test("unknown flags are named, with a suggestion", () => {
    expect(errors(["--brokr-name", "x"])).toEqual([
      '--brokr-name: unknown flag (did you mean "--broker-name"?)',
      'unexpected argument "x" (flags start with --)',
    ]);
    expect(errors(["--frobnicate"])).toEqual(["--frobnicate: unknown flag"]);
    expect(errors(["-x"])).toEqual(["-x: unknown flag"]);
  });

  test("unknown role", () => {
    expect(errors(["--role", "broker"])).toEqual(['--role: unknown role "broker" (expected namesrv|master|slave|standalone)']);
  });

  test("missing values", () => {
    expect(errors(["--role"])).toEqual(["--role: missing value (namesrv|master|slave|standalone)"]);
    expect(errors(["--listen", "--role", "namesrv"])).toEqual(["--listen: missing value (HOST:PORT)"]);
    expect(errors(["--store="])).toEqual(["--store: missing value (DIR)"]);
  });

  test("repeated flags, values on action flags and conflicting actions", () => {
    expect(errors(["--store", "a", "--store", "b"])).toEqual(["--store: given more than once"]);
    expect(errors(["--check-config=yes"])).toEqual(["--check-config: takes no value"]);
    expect(errors(["--check-config", "--print-config"])).toEqual(["--check-config and --print-config cannot be combined"]);
  });

  test("several problems are reported together", () => {
    expect(errors(["--role", "x", "--nope", "--listen"])).toHaveLength(3);
  });
});

describe("HELP_TEXT", () => {
  test("lists every flag and the default ports", () => {
    const flags = [
      "--role",
      "--config",
      "--listen",
      "--admin",
      "--namesrv",
      "--store",
      "--cluster",
      "--broker-name",
      "--broker-id",
      "--broker-role",
      "--flush-disk",
      "--log-level",
      "--ports-file",
      "--check-config",
      "--print-config",
      "--version",
      "--help",
    ];
    for (const f of flags) expect(HELP_TEXT).toContain(`  ${f}`);
    for (const port of ["9876", "9877", "10911", "10912", "10909", "10910"]) expect(HELP_TEXT).toContain(port);
  });
});

describe("bench subcommand", () => {
  test("defaults follow RocketMQ's producer.sh / consumer.sh", () => {
    const p = ok(["bench", "producer"]);
    expect(p.action).toBe("bench");
    expect(p.bench).toMatchObject({
      mode: "producer",
      topic: "BenchmarkTest",
      inflight: 64,
      bodySize: 128,
      keys: false,
      group: "benchmark_producer",
    });
    expect(ok(["bench", "consumer"]).bench).toMatchObject({ mode: "consumer", group: "benchmark_consumer", from: "last" });
  });

  test("short and long flags, -k with and without a value", () => {
    const a = ok(["bench", "producer", "-n", "h:1;h:2", "-t", "T", "-w", "8", "-s", "1024", "-k", "-g", "G", "--count", "10", "--seconds=5"]);
    expect(a.bench).toMatchObject({ namesrv: "h:1;h:2", topic: "T", inflight: 8, bodySize: 1024, keys: true, group: "G", count: 10, seconds: 5 });
    expect(ok(["bench", "producer", "-k", "false", "-t", "X"]).bench).toMatchObject({ keys: false, topic: "X" });
    expect(ok(["bench", "consumer", "--from", "first", "--topic=Y"]).bench).toMatchObject({ from: "first", topic: "Y" });
  });

  test("bad values and unknown flags are errors", () => {
    expect(errors(["bench"])[0]).toContain('expected "producer" or "consumer"');
    // The bench's own help, not the general one.
    for (const argv of [["bench", "producer", "--help"], ["bench", "consumer", "-h"], ["bench", "--help"], ["bench", "producer", "-w", "x", "-h"]]) {
      const h = ok(argv);
      expect(h.action).toBe("help");
      expect(h.helpText).toBe(BENCH_HELP_TEXT);
    }
    expect(BENCH_HELP_TEXT).toContain("-w, --inflight N");
    expect(BENCH_HELP_TEXT).not.toContain("Roles:");
    expect(ok(["--help"]).helpText).toBeUndefined();
    expect(errors(["bench", "producer", "-w", "0"])[0]).toContain("-w");
    expect(errors(["bench", "producer", "-s", "x"])[0]).toContain("-s");
    expect(errors(["bench", "consumer", "--from", "middle"])[0]).toContain("first or last");
    expect(errors(["bench", "producer", "--topc", "T"])[0]).toContain('did you mean "--topic"');
  });

  test("HELP_TEXT documents the bench flags", () => {
    for (const f of ["bench producer", "bench consumer", "-n, --namesrv", "-w, --inflight", "-s, --size", "-k, --keys", "--count N", "--seconds N"]) {
      expect(HELP_TEXT).toContain(f);
    }
  });
});

describe("admin subcommand", () => {
  test("everything after `admin` is handed to src/admin-cli untouched, server flags included", () => {
    expect(ok(["admin", "updateTopic", "-c", "C", "-t", "T", "--help"])).toEqual({
      action: "admin",
      flags: {},
      admin: ["updateTopic", "-c", "C", "-t", "T", "--help"],
    });
    expect(ok(["admin"])).toEqual({ action: "admin", flags: {}, admin: [] });
    // --admin (the HTTP address flag) is not the subcommand.
    expect(ok(["--admin", "127.0.0.1:1"]).action).toBe("run");
    expect(HELP_TEXT).toContain("rocketbun admin <command>");
  });
});
