import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describeSource, loadConfig, toYaml, type CliFlags, type LoadedConfig } from "./load.ts";
import { KEYS, ROLES, SECTIONS } from "./schema.ts";

const dir = mkdtempSync(join(tmpdir(), "rocketbun-load-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** Writes `text` to a fresh file in the temp dir and returns its path. */
function yamlFile(text: string): string {
  const file = join(dir, `c${++n}.yaml`);
  writeFileSync(file, text);
  return file;
}

function errorsOf(text: string | undefined, flags: CliFlags = {}): string[] {
  const r = text === undefined ? loadConfig({ flags }) : loadConfig({ file: yamlFile(text), flags });
  if (!("errors" in r)) throw new Error("expected errors, got a config");
  return r.errors;
}

function ok(text: string | undefined, flags: CliFlags = {}): LoadedConfig {
  const r = text === undefined ? loadConfig({ flags }) : loadConfig({ file: yamlFile(text), flags });
  if ("errors" in r) throw new Error(r.errors.join("\n"));
  return r;
}

/** The single error for `text`, without the temp-file prefix. */
function oneError(text: string, flags: CliFlags = { role: "master", namesrv: "127.0.0.1:9876" }): string {
  const errors = errorsOf(text, flags);
  expect(errors).toHaveLength(1);
  return (errors[0] ?? "").replace(/^.*?\.yaml:/, "");
}

describe("valid files", () => {
  test("an empty file or one with only comments is valid", () => {
    expect(ok("", { role: "namesrv" }).config.role).toBe("namesrv");
    expect(ok("# nothing here\n\n", { role: "namesrv" }).config.logLevel).toBe("info");
  });

  test("sections whose keys are all commented out are valid", () => {
    expect(ok("remoting:\n  # frameSizeMaxBytes: 1\nstore:\n", { role: "namesrv" }).config.remoting.frameSizeMaxBytes).toBe(16777216);
  });

  test("the role may come from the file", () => {
    expect(ok("role: standalone\n").config.role).toBe("standalone");
  });

  test("namesrvAddr as a list or as RocketMQ's a;b string", () => {
    const list = ok("broker:\n  namesrvAddr:\n    - 10.0.0.1:9876\n    - '[::1]:9876'\n", { role: "master" });
    expect(list.config.broker.namesrvAddr).toEqual(["10.0.0.1:9876", "[::1]:9876"]);
    const str = ok("broker:\n  namesrvAddr: 10.0.0.1:9876;10.0.0.2:9876\n", { role: "master" });
    expect(str.config.broker.namesrvAddr).toEqual(["10.0.0.1:9876", "10.0.0.2:9876"]);
  });

  test("anchors and aliases resolve", () => {
    const c = ok("remoting:\n  requestTimeoutMs: &t 5000\nbroker:\n  registerNameServerPeriodMs: *t\n", { role: "standalone" }).config;
    expect(c.broker.registerNameServerPeriodMs).toBe(5000);
  });

  test("IPv6 listen addresses in brackets", () => {
    const c = ok("namesrv:\n  listen: '[::1]:9876'\n", { role: "namesrv" }).config;
    expect(c.namesrv.listen).toEqual({ host: "::1", port: 9876 });
    expect(c.namesrv.admin).toEqual({ host: "::1", port: 9877 });
  });
});

describe("every error kind", () => {
  test("YAML syntax error with its position", () => {
    const errors = errorsOf("broker:\n  brokerName: [unclosed\n  brokerId: 1\n", { role: "master" });
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatch(/\.yaml:\d+:\d+: YAML syntax error: /);
  });

  test("a top level that is not a mapping", () => {
    expect(oneError("- a\n- b\n")).toBe("1:1: top level: expected a mapping of keys, got a list");
    expect(oneError("just a string\n")).toBe("1:1: top level: expected a mapping of keys, got a single value");
  });

  test("a section that is not a mapping", () => {
    expect(oneError("broker: 5\n")).toBe("1:1: broker: expected a mapping of keys, got a single value");
  });

  test("unknown keys, with a close-match suggestion", () => {
    expect(oneError("broker:\n  brokerNmae: x\n")).toBe('2:3: broker.brokerNmae: unknown key "brokerNmae" (did you mean "brokerName"?)');
    expect(oneError("brokr:\n  brokerName: x\n")).toBe('1:1: brokr: unknown key "brokr" (did you mean "broker"?)');
    expect(oneError("wat: 1\n")).toBe('1:1: wat: unknown key "wat"');
  });

  test("a known key in the wrong section points to the right one", () => {
    expect(oneError("broker:\n  flushDiskType: SYNC_FLUSH\n")).toBe(
      '2:3: broker.flushDiskType: unknown key "flushDiskType" (did you mean "store.flushDiskType"? it belongs in the store section)',
    );
  });

  test("a top-level key inside a section points to the top level", () => {
    expect(oneError("broker:\n  logLevel: debug\n")).toBe(
      '2:3: broker.logLevel: unknown key "logLevel" (did you mean "logLevel"? it belongs in the top level)',
    );
  });

  test("several YAML documents in one file are a syntax error", () => {
    expect(oneError("role: master\n---\nrole: slave\n")).toMatch(/^\d+:1: YAML syntax error: Source contains multiple documents/);
  });

  test("wrong types", () => {
    expect(oneError("broker:\n  brokerId: abc\n")).toBe('2:3: broker.brokerId: expected an integer, got "abc"');
    expect(oneError("broker:\n  brokerId: 1.5\n")).toBe("2:3: broker.brokerId: expected an integer, got 1.5");
    expect(oneError("broker:\n  brokerId: 0.0\n")).toBe("2:3: broker.brokerId: expected an integer, got 0.0");
    expect(oneError("broker:\n  brokerId: true\n")).toBe("2:3: broker.brokerId: expected an integer, got true");
    expect(oneError("broker:\n  brokerName: 123\n")).toBe('2:3: broker.brokerName: expected a string, got 123 (quote it if you mean the text "123")');
    expect(oneError("broker:\n  autoCreateTopicEnable: yes\n")).toBe('2:3: broker.autoCreateTopicEnable: expected true or false, got "yes"');
    expect(oneError("broker:\n  listen: {a: 1}\n")).toBe("2:3: broker.listen: expected a string, got a mapping");
    expect(oneError("broker:\n  namesrvAddr: [1]\n")).toBe("2:3: broker.namesrvAddr: item 1: expected a HOST:PORT string, got 1");
  });

  test("malformed HOST:PORT", () => {
    expect(oneError("broker:\n  listen: localhost\n")).toBe('2:3: broker.listen: expected HOST:PORT, got "localhost"');
    expect(oneError("broker:\n  listen: ':10911'\n")).toBe('2:3: broker.listen: expected HOST:PORT, got ":10911" (host is empty)');
    expect(oneError("broker:\n  listen: ::1:10911\n")).toBe('2:3: broker.listen: "::1:10911": write IPv6 addresses in brackets, e.g. [::1]:9876');
    expect(oneError("broker:\n  listen: 'h:70000'\n")).toBe('2:3: broker.listen: "h:70000": port out of range: must be between 0 and 65535');
  });

  test("out of range", () => {
    expect(oneError("remoting:\n  frameSizeMaxBytes: 100\n")).toBe("2:3: remoting.frameSizeMaxBytes: out of range: must be ≥ 1024, got 100");
    expect(oneError("broker:\n  registerNameServerPeriodMs: 500\n")).toBe(
      "2:3: broker.registerNameServerPeriodMs: out of range: must be between 1000 and 60000, got 500",
    );
    expect(oneError("store:\n  flushIntervalMs: -5\n")).toBe("2:3: store.flushIntervalMs: out of range: must be ≥ 1, got -5");
  });

  test("not one of the allowed values", () => {
    expect(oneError("store:\n  flushDiskType: sync_flush\n")).toBe(
      '2:3: store.flushDiskType: "sync_flush" is not one of the allowed values: ASYNC_FLUSH, SYNC_FLUSH (did you mean "SYNC_FLUSH"?)',
    );
    expect(oneError("logLevel: verbose\n")).toBe('1:1: logLevel: "verbose" is not one of the allowed values: debug, info, warn, error');
  });

  test("a key with no value", () => {
    expect(oneError("store:\n  dir:\n")).toBe("2:3: store.dir: missing value (remove the key to use the default)");
  });

  test("duplicate keys", () => {
    expect(oneError("broker:\n  brokerName: a\n  brokerName: b\n")).toBe("3:3: broker.brokerName: duplicate key (already set at 2:3)");
  });

  test("missing required values: role, and namesrvAddr for master/slave", () => {
    expect(errorsOf(undefined, {})).toEqual(["--role: missing required value (namesrv|master|slave|standalone)"]);
    expect(errorsOf("logLevel: info\n", {})).toEqual(["--role: missing required value (namesrv|master|slave|standalone)"]);
    expect(errorsOf(undefined, { role: "master" })).toEqual([
      "broker.namesrvAddr: missing required value for role master: list at least one name server HOST:PORT (or pass --namesrv)",
    ]);
    expect(oneError("broker:\n  namesrvAddr: []\n", { role: "slave" })).toBe(
      "2:3: broker.namesrvAddr: missing required value for role slave: list at least one name server HOST:PORT (or pass --namesrv)",
    );
  });

  test("an unknown role, in the file or as a flag", () => {
    expect(oneError("role: broker\n", {})).toBe('1:1: role: "broker" is not one of the allowed values: namesrv, master, slave, standalone');
    expect(errorsOf(undefined, { role: "broker" })).toEqual(['--role: unknown role "broker" (expected namesrv|master|slave|standalone)']);
  });

  test("a missing or unreadable config file names the path", () => {
    const missing = join(dir, "nope.yaml");
    expect(loadConfig({ file: missing, flags: { role: "namesrv" } })).toEqual({ errors: [`${missing}: cannot read config file: no such file`] });
    expect(loadConfig({ file: dir, flags: { role: "namesrv" } })).toEqual({ errors: [`${dir}: cannot read config file: it is a directory`] });
  });

  test("flag errors read --flag: problem", () => {
    const flags: CliFlags = { role: "master", namesrv: "127.0.0.1:9876" };
    expect(errorsOf(undefined, { ...flags, brokerId: "x" })).toEqual(['--broker-id: expected an integer ≥ 0, got "x"']);
    expect(errorsOf(undefined, { ...flags, brokerId: "-1" })).toEqual(['--broker-id: expected an integer ≥ 0, got "-1"']);
    expect(errorsOf(undefined, { ...flags, listen: "nohost" })).toEqual(['--listen: expected HOST:PORT, got "nohost"']);
    expect(errorsOf(undefined, { ...flags, namesrv: "a:1;b" })).toEqual(['--namesrv: expected HOST:PORT, got "b"']);
    expect(errorsOf(undefined, { ...flags, flushDisk: "FAST" })).toEqual([
      '--flush-disk: "FAST" is not one of the allowed values: ASYNC_FLUSH, SYNC_FLUSH',
    ]);
    expect(errorsOf(undefined, { ...flags, logLevel: "Debug" })).toEqual([
      '--log-level: "Debug" is not one of the allowed values: debug, info, warn, error (did you mean "debug"?)',
    ]);
  });
});

describe("role rules", () => {
  test("brokerId and brokerRole must fit the role, reported where they were set", () => {
    expect(oneError("broker:\n  brokerId: 0\n", { role: "slave", namesrv: "h:1" })).toBe(
      "2:3: broker.brokerId: must be ≥ 1 for role slave, got 0 (brokerId 0 is the master)",
    );
    expect(oneError("broker:\n  brokerId: 2\n")).toBe("2:3: broker.brokerId: must be 0 for role master, got 2 (only slaves have brokerId ≥ 1)");
    const slaveRole = "(a slave's brokerRole is always SLAVE, but with broker.failover.enable, where it is the role taken when elected)";
    expect(oneError("broker:\n  brokerRole: SYNC_MASTER\n", { role: "slave", namesrv: "h:1" })).toBe(
      `2:3: broker.brokerRole: "SYNC_MASTER" is not allowed for role slave ${slaveRole}`,
    );
    expect(oneError("broker:\n  brokerRole: SLAVE\n", { role: "standalone" })).toBe(
      '2:3: broker.brokerRole: "SLAVE" is not allowed for role standalone (use ASYNC_MASTER or SYNC_MASTER, or --role slave)',
    );
    expect(errorsOf(undefined, { role: "slave", namesrv: "h:1", brokerRole: "ASYNC_MASTER" })).toEqual([
      `--broker-role: "ASYNC_MASTER" is not allowed for role slave ${slaveRole}`,
    ]);
  });

  test("with failover, a slave's brokerRole is the role it takes when elected (a SYNC_MASTER group stays SYNC_MASTER)", () => {
    const failover = 'broker:\n  brokerRole: SYNC_MASTER\n  failover:\n    enable: true\n    etcd: ["127.0.0.1:2379"]\n';
    expect(ok(failover, { role: "slave", namesrv: "h:1" }).config.broker.brokerRole).toBe("SYNC_MASTER");
    expect(errorsOf(failover, { role: "slave", namesrv: "h:1", brokerId: "0" })).toEqual([
      "--broker-id: must be ≥ 1 for role slave, got 0 (brokerId 0 is the master)",
    ]);
  });

  test("a broker listen port leaves room for HA (+1) and VIP (-2)", () => {
    expect(oneError("broker:\n  listen: 0.0.0.0:65535\n")).toMatch(/^2:3: broker\.listen: port must be 0 or between 3 and 65534, got 65535/);
  });

  test("a name server listen port leaves room for the default admin port", () => {
    expect(oneError("namesrv:\n  listen: 0.0.0.0:65535\n", { role: "namesrv" })).toBe(
      "2:3: namesrv.listen: port 65535 leaves no room for the default admin port (listen port + 1); set namesrv.admin",
    );
    ok("namesrv:\n  listen: 0.0.0.0:65535\n  admin: 0.0.0.0:65534\n", { role: "namesrv" });
  });

  test("two keys binding one port", () => {
    expect(oneError("namesrv:\n  admin: 127.0.0.1:9876\n", { role: "namesrv" })).toBe(
      "2:3: namesrv.admin: port 9876 (name server admin) is also bound by namesrv.listen (name server)",
    );
  });

  test("a message must fit in a segment and in a frame", () => {
    expect(oneError("broker:\n  maxMessageSizeBytes: 70000\nstore:\n  commitLogSegmentBytes: 65536\n")).toBe(
      "2:3: broker.maxMessageSizeBytes: must be smaller than store.commitLogSegmentBytes (65536) so a message fits in one segment, got 70000",
    );
    // The offending value is the default here, so the message has no file position.
    expect(errorsOf("remoting:\n  frameSizeMaxBytes: 1024\n", { role: "standalone" })).toEqual([
      "broker.maxMessageSizeBytes: must be smaller than remoting.frameSizeMaxBytes (1024) so a message fits in one frame, got 4194304",
    ]);
  });
});

describe("store keys", () => {
  test("defaults follow RocketMQ", () => {
    const s = ok(undefined, { role: "standalone" }).config.store;
    expect(s).toMatchObject({
      syncFlushTimeoutMs: 5000,
      checkCrcOnRecover: true,
      consumeQueueUnitsPerFile: 300000,
      indexSlotNum: 5000000,
      indexNum: 20000000,
      fileReservedTimeHours: 72,
      deleteWhen: "04",
      deleteCommitLogFilesIntervalMs: 10000,
      diskMaxUsedSpaceRatio: 0.75,
      diskCriticalRatio: 0.9,
      maxTransferBytesOnMessageInMemory: 262144,
      maxTransferCountOnMessageInMemory: 32,
      maxTransferBytesOnMessageInDisk: 65536,
      maxTransferCountOnMessageInDisk: 8,
      accessMessageInMemoryMaxRatio: 40,
    });
  });

  test("values in range load, fractions as numbers and 0 hours of retention", () => {
    const s = ok(
      "store:\n  deleteWhen: '00;12;23'\n  diskMaxUsedSpaceRatio: 0.1\n  diskCriticalRatio: 0.99\n  fileReservedTimeHours: 0\n" +
        "  checkCrcOnRecover: false\n  accessMessageInMemoryMaxRatio: 100\n",
      { role: "standalone" },
    ).config.store;
    expect([s.deleteWhen, s.diskMaxUsedSpaceRatio, s.diskCriticalRatio, s.fileReservedTimeHours]).toEqual(["00;12;23", 0.1, 0.99, 0]);
    expect([s.checkCrcOnRecover, s.accessMessageInMemoryMaxRatio]).toEqual([false, 100]);
  });

  test("deleteWhen may be written unquoted, as RocketMQ's broker.conf does", () => {
    // A plain 04 is the YAML integer 4; its source text is what counts.
    expect(ok("store:\n  deleteWhen: 04\n", { role: "standalone" }).config.store.deleteWhen).toBe("04");
    expect(ok("store:\n  deleteWhen: 04;16\n", { role: "standalone" }).config.store.deleteWhen).toBe("04;16");
  });

  test("a bad deleteWhen", () => {
    const form = 'expected two-digit hours 00-23 joined by ";", e.g. "04" or "04;16", got';
    expect(oneError("store:\n  deleteWhen: 4\n")).toBe(`2:3: store.deleteWhen: ${form} "4" (write "04")`);
    expect(oneError("store:\n  deleteWhen: '04;6'\n")).toBe(`2:3: store.deleteWhen: ${form} "04;6" (write "06")`);
    expect(oneError("store:\n  deleteWhen: '24'\n")).toBe(`2:3: store.deleteWhen: ${form} "24" (hour 24 is not between 00 and 23)`);
    expect(oneError("store:\n  deleteWhen: '04;04'\n")).toBe(`2:3: store.deleteWhen: ${form} "04;04" (hour 04 is listed twice)`);
    expect(oneError("store:\n  deleteWhen: '04;'\n")).toBe(`2:3: store.deleteWhen: ${form} "04;"`);
    expect(oneError("store:\n  deleteWhen: '04,16'\n")).toBe(`2:3: store.deleteWhen: ${form} "04,16"`);
    expect(oneError("store:\n  deleteWhen: ''\n")).toBe(`2:3: store.deleteWhen: ${form} ""`);
    expect(oneError("store:\n  deleteWhen: true\n")).toBe('2:3: store.deleteWhen: expected hours of the day like "04" or "04;16", got true');
    expect(oneError("store:\n  deleteWhen: [4]\n")).toBe('2:3: store.deleteWhen: expected hours of the day like "04" or "04;16", got a list');
  });

  test("diskCriticalRatio must be above diskMaxUsedSpaceRatio, reported at the key that was set", () => {
    expect(oneError("store:\n  diskCriticalRatio: 0.7\n")).toBe(
      "2:3: store.diskCriticalRatio: must be greater than store.diskMaxUsedSpaceRatio (0.75) so old files are deleted before writes are refused, got 0.7",
    );
    expect(oneError("store:\n  diskMaxUsedSpaceRatio: 0.95\n")).toBe(
      "2:3: store.diskMaxUsedSpaceRatio: must be smaller than store.diskCriticalRatio (0.9) so old files are deleted before writes are refused, got 0.95",
    );
    // Both set (equal is not enough): the critical ratio is the one reported.
    expect(oneError("store:\n  diskMaxUsedSpaceRatio: 0.8\n  diskCriticalRatio: 0.8\n")).toBe(
      "3:3: store.diskCriticalRatio: must be greater than store.diskMaxUsedSpaceRatio (0.8) so old files are deleted before writes are refused, got 0.8",
    );
    // A value rejected on its own is not reported a second time by the cross-key rule.
    expect(oneError("store:\n  diskMaxUsedSpaceRatio: 0.95\n  diskCriticalRatio: 1.5\n")).toBe(
      "3:3: store.diskCriticalRatio: out of range: must be between 0.1 and 0.99, got 1.5",
    );
    // Not checked for the name server, which never reads them.
    ok("store:\n  diskMaxUsedSpaceRatio: 0.95\n", { role: "namesrv" });
  });

  test("ratios are fractions; a RocketMQ-style percent gets a hint", () => {
    expect(oneError("store:\n  diskMaxUsedSpaceRatio: 75\n")).toBe(
      "2:3: store.diskMaxUsedSpaceRatio: out of range: must be between 0.1 and 0.95, got 75 (a fraction: write 0.75 for 75%)",
    );
    expect(oneError("store:\n  diskMaxUsedSpaceRatio: 0.05\n")).toBe(
      "2:3: store.diskMaxUsedSpaceRatio: out of range: must be between 0.1 and 0.95, got 0.05",
    );
    expect(oneError("store:\n  diskCriticalRatio: 1\n")).toBe("2:3: store.diskCriticalRatio: out of range: must be between 0.1 and 0.99, got 1");
    expect(oneError("store:\n  diskMaxUsedSpaceRatio: '0.5'\n")).toBe('2:3: store.diskMaxUsedSpaceRatio: expected a number, got "0.5"');
    expect(oneError("store:\n  diskMaxUsedSpaceRatio: .nan\n")).toBe("2:3: store.diskMaxUsedSpaceRatio: expected a number, got .nan");
    expect(oneError("store:\n  diskCriticalRatio: .inf\n")).toBe("2:3: store.diskCriticalRatio: expected a number, got .inf");
  });

  test("a fraction where an integer is expected", () => {
    expect(oneError("store:\n  consumeQueueUnitsPerFile: 64.5\n")).toBe("2:3: store.consumeQueueUnitsPerFile: expected an integer, got 64.5");
    expect(oneError("store:\n  fileReservedTimeHours: 0.5\n")).toBe("2:3: store.fileReservedTimeHours: expected an integer, got 0.5");
    expect(oneError("store:\n  indexNum: 2e7\n")).toBe("2:3: store.indexNum: expected an integer, got 2e7");
    expect(oneError("store:\n  syncFlushTimeoutMs: 5000.0\n")).toBe("2:3: store.syncFlushTimeoutMs: expected an integer, got 5000.0");
    expect(oneError("store:\n  accessMessageInMemoryMaxRatio: 0.4\n")).toBe(
      "2:3: store.accessMessageInMemoryMaxRatio: expected an integer, got 0.4 (a whole percentage: write 40 for 40%)",
    );
  });

  test("integer ranges", () => {
    expect(oneError("store:\n  consumeQueueUnitsPerFile: 0\n")).toBe(
      "2:3: store.consumeQueueUnitsPerFile: out of range: must be between 1 and 107374182, got 0",
    );
    // 107374183 units × 20 bytes no longer fits a signed 32-bit file position.
    expect(oneError("store:\n  consumeQueueUnitsPerFile: 107374183\n")).toBe(
      "2:3: store.consumeQueueUnitsPerFile: out of range: must be between 1 and 107374182, got 107374183",
    );
    expect(oneError("store:\n  indexSlotNum: 0\n")).toBe("2:3: store.indexSlotNum: out of range: must be ≥ 1, got 0");
    expect(oneError("store:\n  indexNum: 1\n")).toBe("2:3: store.indexNum: out of range: must be ≥ 2, got 1");
    expect(oneError("store:\n  fileReservedTimeHours: -1\n")).toBe("2:3: store.fileReservedTimeHours: out of range: must be ≥ 0, got -1");
    expect(oneError("store:\n  syncFlushTimeoutMs: 0\n")).toBe("2:3: store.syncFlushTimeoutMs: out of range: must be ≥ 1, got 0");
    expect(oneError("store:\n  deleteCommitLogFilesIntervalMs: 0\n")).toBe(
      "2:3: store.deleteCommitLogFilesIntervalMs: out of range: must be ≥ 1, got 0",
    );
    expect(oneError("store:\n  maxTransferCountOnMessageInDisk: 0\n")).toBe(
      "2:3: store.maxTransferCountOnMessageInDisk: out of range: must be ≥ 1, got 0",
    );
    expect(oneError("store:\n  accessMessageInMemoryMaxRatio: 101\n")).toBe(
      "2:3: store.accessMessageInMemoryMaxRatio: out of range: must be between 1 and 100, got 101",
    );
    expect(oneError("store:\n  checkCrcOnRecover: 'no'\n")).toBe('2:3: store.checkCrcOnRecover: expected true or false, got "no"');
  });

  test("an IndexFile must fit in 2 GiB", () => {
    const size = "an IndexFile of 40 + 5000000 × 4 + 107374182 × 20 = 2167483680 bytes is larger than 2147483647";
    expect(oneError("store:\n  indexNum: 107374182\n")).toBe(`2:3: store.indexNum: too large for store.indexSlotNum 5000000: ${size}`);
    const size2 = "an IndexFile of 40 + 500000000 × 4 + 20000000 × 20 = 2400000040 bytes is larger than 2147483647";
    expect(oneError("store:\n  indexSlotNum: 500000000\n")).toBe(`2:3: store.indexSlotNum: too large for store.indexNum 20000000: ${size2}`);
  });
});

describe("multiple errors", () => {
  test("are all reported at once, in file order, with their own line numbers", () => {
    const file = yamlFile(
      [
        "role: master", //                                  1
        "logLevel: loud", //                                2
        "remoting:", //                                     3
        "  frameSizeMaxBytes: 10", //                       4
        "# a comment", //                                   5
        "broker:", //                                       6
        "  brokerId: abc", //                               7
        "  brokerNmae: broker-b", //                        8
        "  namesrvAddr: [127.0.0.1:9876]", //               9
        "  autoCreateTopicEnable: 1", //                   10
        "store:", //                                       11
        "  flushDiskType: NEVER", //                       12
        "",
      ].join("\n"),
    );
    const r = loadConfig({ file, flags: { brokerId: "y" } });
    expect(r).toEqual({
      errors: [
        `${file}:2:1: logLevel: "loud" is not one of the allowed values: debug, info, warn, error`,
        `${file}:4:3: remoting.frameSizeMaxBytes: out of range: must be ≥ 1024, got 10`,
        `${file}:7:3: broker.brokerId: expected an integer, got "abc"`,
        `${file}:8:3: broker.brokerNmae: unknown key "brokerNmae" (did you mean "brokerName"?)`,
        `${file}:10:3: broker.autoCreateTopicEnable: expected true or false, got 1`,
        `${file}:12:3: store.flushDiskType: "NEVER" is not one of the allowed values: ASYNC_FLUSH, SYNC_FLUSH`,
        '--broker-id: expected an integer ≥ 0, got "y"',
      ],
    });
  });
});

describe("precedence: flags > file > defaults", () => {
  const file = () => yamlFile("role: master\nbroker:\n  brokerName: from-file\n  brokerClusterName: file-cluster\n  namesrvAddr: [10.0.0.1:9876]\n");

  test("values and their sources", () => {
    const f = file();
    const loaded = loadConfig({ file: f, flags: { brokerName: "from-flag", store: "rel/dir" } });
    if ("errors" in loaded) throw new Error(loaded.errors.join("\n"));
    const { config, sources } = loaded;
    expect(config.broker.brokerName).toBe("from-flag");
    expect(config.broker.brokerClusterName).toBe("file-cluster");
    expect(config.broker.defaultTopicQueueNums).toBe(8);
    expect(config.store.dir).toBe(resolve("rel/dir"));
    expect(describeSource(sources["broker.brokerName"])).toBe("--broker-name");
    expect(describeSource(sources["broker.brokerClusterName"])).toBe(`${f}:4:3`);
    expect(describeSource(sources["broker.defaultTopicQueueNums"])).toBe("(default)");
    expect(describeSource(sources.role)).toBe(`${f}:1:1`);
  });

  test("--role overrides the file's role, with a warning", () => {
    const f = file();
    const loaded = loadConfig({ file: f, flags: { role: "standalone" } });
    if ("errors" in loaded) throw new Error(loaded.errors.join("\n"));
    expect(loaded.config.role).toBe("standalone");
    expect(loaded.warnings).toEqual([`--role standalone overrides role "master" set at ${f}:1:1`]);
  });

  test("--listen and --admin follow the role", () => {
    const ns = ok(undefined, { role: "namesrv", listen: "127.0.0.1:7000", admin: "127.0.0.1:7100" }).config;
    expect(ns.namesrv.listen).toEqual({ host: "127.0.0.1", port: 7000 });
    expect(ns.namesrv.admin).toEqual({ host: "127.0.0.1", port: 7100 });
    const sa = ok(undefined, { role: "standalone", listen: "127.0.0.1:7000" }).config;
    expect(sa.broker.listen).toEqual({ host: "127.0.0.1", port: 7000 });
    expect(sa.namesrv.listen).toEqual({ host: "0.0.0.0", port: 9876 });
  });

  test("every flag maps to its key", () => {
    const c = ok(undefined, {
      role: "master",
      listen: "127.0.0.1:20000",
      admin: "127.0.0.1:20100",
      namesrv: "10.0.0.1:9876;10.0.0.2:9876",
      store: "/tmp/x",
      cluster: "c1",
      brokerName: "b1",
      brokerId: "0",
      brokerRole: "SYNC_MASTER",
      flushDisk: "SYNC_FLUSH",
      logLevel: "debug",
      portsFile: "/tmp/ports.json",
      config: undefined,
    }).config;
    expect(c.broker.listen.port).toBe(20000);
    expect(c.broker.admin.port).toBe(20100);
    expect(c.broker.namesrvAddr).toEqual(["10.0.0.1:9876", "10.0.0.2:9876"]);
    expect(c.store.dir).toBe("/tmp/x");
    expect([c.broker.brokerClusterName, c.broker.brokerName, c.broker.brokerId, c.broker.brokerRole]).toEqual(["c1", "b1", 0, "SYNC_MASTER"]);
    expect([c.store.flushDiskType, c.logLevel]).toEqual(["SYNC_FLUSH", "debug"]);
  });

  test("flags the role does not use are accepted and returned as warnings", () => {
    const r = ok(undefined, { role: "namesrv", brokerName: "b", namesrv: "h:1", flushDisk: "SYNC_FLUSH", store: "/tmp/ns" });
    expect(r.warnings).toEqual([
      "--namesrv: ignored for role namesrv (it sets broker.namesrvAddr, which role namesrv does not use)",
      "--broker-name: ignored for role namesrv (it sets broker.brokerName, which role namesrv does not use)",
      "--flush-disk: ignored for role namesrv (it sets store.flushDiskType, which role namesrv does not use)",
    ]);
  });
});

describe("derived values", () => {
  test("admin follows the listen port (+1 name server, -1 broker) unless set", () => {
    const c = ok("namesrv:\n  listen: 127.0.0.1:20000\nbroker:\n  listen: 127.0.0.1:30000\n", { role: "standalone" }).config;
    expect(c.namesrv.admin).toEqual({ host: "127.0.0.1", port: 20001 });
    expect(c.broker.admin).toEqual({ host: "127.0.0.1", port: 29999 });
    const explicit = ok("broker:\n  listen: 127.0.0.1:30000\n  admin: 0.0.0.0:8080\n", { role: "standalone" }).config;
    expect(explicit.broker.admin).toEqual({ host: "0.0.0.0", port: 8080 });
  });

  test("listen port 0 makes the default admin port 0 too", () => {
    const c = ok(undefined, { role: "standalone", listen: "127.0.0.1:0" }).config;
    expect(c.broker.admin).toEqual({ host: "127.0.0.1", port: 0 });
  });

  test("brokerIP1 defaults to the listen host, or a real IPv4 for 0.0.0.0", () => {
    expect(ok(undefined, { role: "standalone", listen: "127.0.0.1:10911" }).config.broker.brokerIP1).toBe("127.0.0.1");
    const wild = ok(undefined, { role: "standalone" }).config.broker.brokerIP1;
    expect(wild).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(ok("broker:\n  brokerIP1: 10.1.2.3\n", { role: "standalone" }).config.broker.brokerIP1).toBe("10.1.2.3");
  });

  test("store.dir and kvConfigPath are absolute", () => {
    const c = ok(undefined, { role: "namesrv", store: "some/where" }).config;
    expect(c.store.dir).toBe(resolve("some/where"));
    expect(c.namesrv.kvConfigPath).toBe(join(resolve("some/where"), "namesrv", "kvConfig.json"));
    expect(ok("namesrv:\n  kvConfigPath: kv.json\n", { role: "namesrv" }).config.namesrv.kvConfigPath).toBe(resolve("kv.json"));
  });
});

describe("--print-config", () => {
  test("toYaml loads back to an equal Config for every role", () => {
    for (const role of ROLES) {
      const first = ok(
        "namesrv:\n  listen: '[::1]:0'\nbroker:\n  haMasterAddress: 10.0.0.9:10912\n" +
          "store:\n  deleteWhen: 04;16\n  diskMaxUsedSpaceRatio: 0.5\n  diskCriticalRatio: 0.875\n  checkCrcOnRecover: false\n",
        {
          role,
          namesrv: "10.0.0.1:9876;10.0.0.2:9876",
          store: join(dir, "data"),
          brokerName: "1234",
          cluster: "true",
        },
      ).config;
      const again = ok(toYaml(first), {}).config;
      expect(again).toEqual(first);
    }
  });

  test("keys come out in schema order", () => {
    const text = toYaml(ok(undefined, { role: "standalone" }).config);
    const lines = text.split("\n").filter((l) => /^ *[A-Za-z0-9]+:/.test(l));
    const printed: string[] = [];
    const path: string[] = []; // the mapping keys enclosing the current line, by indent level
    for (const l of lines) {
      const name = l.trim().split(":")[0] ?? "";
      const depth = (l.length - l.trimStart().length) / 2;
      path.length = depth;
      const full = [...path, name].join(".");
      if (l.trimEnd().endsWith(":") && (depth === 0 ? (SECTIONS as readonly string[]).includes(name) : KEYS.some((d) => d.key.startsWith(`${full}.`)))) {
        path.push(name);
      } else printed.push(full);
    }
    expect(printed).toEqual(KEYS.map((d) => d.key));
  });
});
