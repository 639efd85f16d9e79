import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../common/log.ts";
import { readEpochs, writeEpochs } from "../failover/replica-files.ts";
import { cutPoint, cutUnsynced, epochCacheOf, reconcileWithMaster, startMasterEpoch, type ReplicaStore } from "./replica-epochs.ts";

const root = mkdtempSync(join(tmpdir(), "rb-replica-epochs-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const dir = () => {
  const d = join(root, String(n++));
  mkdirSync(d);
  return d;
};
const warnings: string[] = [];
const log: Logger = {
  debug: () => {},
  info: () => {},
  warn: (m) => void warnings.push(m),
  error: (m) => void warnings.push(m),
  rateLimited: (_l, _k, m) => void warnings.push(m),
};
const broker = { clusterName: "c", brokerName: "b", brokerId: 0 };

/** A store that only records where it was cut. */
function store(max: number, recovery: ReplicaStore["recovery"] = null): ReplicaStore & { maxPhyOffset: number; cuts: number[] } {
  const s = {
    maxPhyOffset: max,
    recovery,
    cuts: [] as number[],
    truncateTail(offset: number) {
      s.cuts.push(offset);
      const bytes = s.maxPhyOffset - offset;
      s.maxPhyOffset = offset;
      return { records: 1, bytes, file: `truncated/${offset}` };
    },
  };
  return s;
}

test("a master with fixed roles begins an epoch at every start, at the log end it recovered", () => {
  const d = dir();
  expect(startMasterEpoch(d, 0, log)).toEqual({ epoch: 1, startOffset: 0 });
  expect(startMasterEpoch(d, 500, log)).toEqual({ epoch: 2, startOffset: 500 });
  expect(startMasterEpoch(d, 500, log)).toEqual({ epoch: 3, startOffset: 500 });
  expect(epochCacheOf(d, broker, 900).epochList).toEqual([
    { epoch: 1, startOffset: 0, endOffset: 500 },
    { epoch: 2, startOffset: 500, endOffset: 500 },
    { epoch: 3, startOffset: 500, endOffset: 900 },
  ]);
  // A store restored from an older copy: the epochs past its end cannot describe it.
  expect(startMasterEpoch(d, 100, log)).toEqual({ epoch: 2, startOffset: 100 });
  expect(readEpochs(d)).toEqual([{ epoch: 1, startOffset: 0 }, { epoch: 2, startOffset: 100 }]);
  expect(warnings.some((w) => w.includes("2 epoch(s) begin past this log's end 100"))).toBe(true);
});

test("a slave cuts where its log parts from the master's: a lost tail, not a log that only lags or leads within one epoch", () => {
  const slave = dir();
  writeEpochs(slave, [{ epoch: 1, startOffset: 0 }, { epoch: 2, startOffset: 400 }]);
  const master = dir();
  writeEpochs(master, [{ epoch: 1, startOffset: 0 }, { epoch: 2, startOffset: 400 }, { epoch: 3, startOffset: 700 }]);
  // The master came back at 700 after writing (and sending) up to 1000: the slave's 700–1000 is the lost tail.
  expect(cutPoint(slave, 1000, epochCacheOf(master, broker, 1200))).toBe(700);
  // A slave that had not got that far keeps all it has.
  expect(cutPoint(slave, 650, epochCacheOf(master, broker, 1200))).toBe(650);
  // Same epoch, the master ahead: nothing to cut.
  expect(cutPoint(slave, 1000, epochCacheOf(slave, broker, 5000))).toBe(1000);
  const s = store(1000);
  reconcileWithMaster(slave, s, epochCacheOf(master, broker, 1200), log);
  expect(s.cuts).toEqual([700]);
  expect(readEpochs(slave)).toEqual(readEpochs(master));
  // Reconciled: the next connection cuts nothing.
  s.maxPhyOffset = 1200;
  reconcileWithMaster(slave, s, epochCacheOf(master, broker, 1200), log);
  expect(s.cuts).toEqual([700]);
});

test("a slave from before epochs (no file) keeps what precedes the master's first epoch", () => {
  const master = dir();
  writeEpochs(master, [{ epoch: 1, startOffset: 800 }]);
  expect(cutPoint(dir(), 700, epochCacheOf(master, broker, 900))).toBe(700);
  expect(cutPoint(dir(), 1000, epochCacheOf(master, broker, 900))).toBe(800);
});

test("after a crash a slave with fixed roles cuts what was never flushed; after a clean stop nothing", () => {
  const crashed = store(1000, { abnormal: true, unsyncedFrom: 640 });
  cutUnsynced(crashed, log);
  expect(crashed.cuts).toEqual([640]);
  const clean = store(1000, { abnormal: false });
  cutUnsynced(clean, log);
  const flushed = store(1000, { abnormal: true });
  cutUnsynced(flushed, log);
  expect([...clean.cuts, ...flushed.cuts]).toEqual([]);
});
