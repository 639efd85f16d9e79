import { describe, expect, test } from "bun:test";
import { checkEffective, describeChange, diffConfig, LIVE_KEYS, withLiveChanges } from "./reload.ts";
import { defaultConfig, KEYS } from "./schema.ts";

describe("reload: what a changed config means for a running process", () => {
  test("live keys are applied, restart-only keys keep their running value", () => {
    const running = defaultConfig("master");
    const next = defaultConfig("master");
    next.broker.maxMessageSizeBytes = 1024;
    next.broker.brokerName = "broker-b";
    next.store.commitLogSegmentBytes = 1 << 20;
    next.namesrv.brokerExpiredMs = 5; // a master does not read it: no change at all
    const changes = diffConfig(running, next);
    expect(changes.map((c) => [c.key, c.live])).toEqual([
      ["broker.brokerName", false],
      ["broker.maxMessageSizeBytes", true],
      ["store.commitLogSegmentBytes", false],
    ]);
    const eff = withLiveChanges(running, changes);
    expect(eff.broker.maxMessageSizeBytes).toBe(1024);
    expect(eff.broker.brokerName).toBe("broker-a");
    expect(eff.store.commitLogSegmentBytes).toBe(running.store.commitLogSegmentBytes);
    expect(running.broker.maxMessageSizeBytes).toBe(4 * 1024 * 1024); // not mutated
    expect(describeChange(changes[1]!)).toBe("broker.maxMessageSizeBytes: 4194304 → 1024 (applied)");
    expect(describeChange(changes[0]!)).toBe('broker.brokerName: "broker-a" → "broker-b": changed in the file, needs a restart (still "broker-a")');
  });

  test("cross-key rules are checked against the restart-only values still in force", () => {
    const running = defaultConfig("master");
    running.broker.namesrvAddr = ["127.0.0.1:9876"];
    const next = structuredClone(running);
    // Fine in the file (frame size raised too), but the frame size needs a restart.
    next.remoting.frameSizeMaxBytes = 64 * 1024 * 1024;
    next.broker.maxMessageSizeBytes = 32 * 1024 * 1024;
    const eff = withLiveChanges(running, diffConfig(running, next));
    expect(checkEffective(eff).map((p) => p.key)).toEqual(["broker.maxMessageSizeBytes"]);
  });

  test("the live keys are a closed list: identity, addresses and on-disk geometry are not among them", () => {
    for (const k of [
      "role",
      "broker.listen",
      "broker.admin",
      "store.dir",
      "broker.brokerName",
      "broker.brokerId",
      "broker.brokerClusterName",
    ] as const) {
      expect(LIVE_KEYS.includes(k)).toBe(false);
    }
    for (const k of ["store.commitLogSegmentBytes", "store.consumeQueueUnitsPerFile", "store.indexNum", "store.flushDiskType"] as const) {
      expect(LIVE_KEYS.includes(k)).toBe(false);
    }
    expect(LIVE_KEYS.length).toBe(KEYS.filter((d) => d.live).length);
    expect(LIVE_KEYS).toContain("logLevel");
    expect(LIVE_KEYS).toContain("broker.namesrvAddr");
  });
});
