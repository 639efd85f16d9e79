/**
 * A broken invariant stops the store's write path loudly (docs/CONVENTIONS.md §2): the put that
 * found it and every later one are refused with SERVICE_NOT_AVAILABLE, the failure is logged once
 * at error level, reads go on, and a restart recovers. Input that merely looks wrong — a second
 * record with one queue offset in replicated bytes — is reported, not asserted.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Logger, LogLevel } from "../common/log.ts";
import { decodeRecordAt, encodeRecord, parseHostAddress, recordSize } from "../common/message-record.ts";
import { MessageStore, type MessageStoreOptions } from "./message-store.ts";
import { message, tempStoreDir, testStoreOptions } from "./test-support.ts";

const dirs: string[] = [];
const stores: MessageStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.shutdown().catch(() => undefined);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function captureLog(): { log: Logger; lines: { level: LogLevel; msg: string }[] } {
  const lines: { level: LogLevel; msg: string }[] = [];
  const at = (level: LogLevel) => (msg: string) => void lines.push({ level, msg });
  return {
    lines,
    log: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), rateLimited: (level, _key, msg) => at(level)(msg) },
  };
}

function open(dir?: string, o: Partial<MessageStoreOptions> = {}): { store: MessageStore; dir: string } {
  const d = dir ?? tempStoreDir();
  if (!dir) dirs.push(d);
  const store = MessageStore.open(testStoreOptions(d, o));
  stores.push(store);
  return { store, dir: d };
}

async function close(store: MessageStore): Promise<void> {
  stores.splice(stores.indexOf(store), 1);
  await store.shutdown();
}

const dec = new TextDecoder();
function bodies(res: { messages: Uint8Array[] }): string[] {
  return res.messages.map((m) => {
    const r = decodeRecordAt(m, 0, { checkCrc: true });
    if (!("totalSize" in r)) throw new Error("bad record in pull result");
    return dec.decode(r.body);
  });
}

describe("MessageStore halts its write path on a broken invariant", () => {
  test("a queue offset the queue did not expect: that put and every later one are refused, logged once, reads go on, a restart recovers", async () => {
    const { log, lines } = captureLog();
    const { store, dir } = open(undefined, { log });
    expect((await store.putMessage(message("T", 0, "m0"))).status).toBe("PUT_OK");
    // The bug forced: the CommitLog's counter and the queue move apart.
    store.commitLog.setNextQueueOffset("T", 0, 5);
    const r = await store.putMessage(message("T", 0, "m1"));
    expect(r.status).toBe("SERVICE_NOT_AVAILABLE");
    expect(r.appended).toEqual([]);
    expect(r.remark).toContain("broken invariant (a bug)");
    expect(r.remark).toContain("queue T-0: the send path put queue offset 5, but the queue ends at 1");
    expect(store.halted).toContain("queue T-0");

    // Every later put, of any queue, is refused; replicated bytes too.
    for (const m of [message("T", 0, "m2"), message("Other", 3, "x")]) {
      const again = await store.putMessage(m);
      expect(again.status).toBe("SERVICE_NOT_AVAILABLE");
      expect(again.remark).toContain("stopped taking writes after a broken invariant");
    }
    expect(store.appendReplicated(store.maxPhyOffset, new Uint8Array(8))).toMatchObject({ invalid: expect.stringContaining("broken invariant") });
    const errors = lines.filter((l) => l.level === "error");
    expect(errors.length).toBe(1);
    expect(errors[0]!.msg).toContain("AssertionError");

    // Reads keep working.
    expect(bodies(store.getMessage("T", 0, 0, 32))).toEqual(["m0"]);

    // Not a clean stop: the abort marker stays, and recovery indexes what the CommitLog holds
    // (m1 kept the queue offset it was given; the offsets it skipped are fillers).
    await expect(close(store)).rejects.toThrow(/write error/);
    expect(existsSync(join(dir, "abort"))).toBe(true);
    const { store: reopened } = open(dir);
    expect(reopened.halted).toBeNull();
    expect(bodies(reopened.getMessage("T", 0, 0, 32))).toEqual(["m0", "m1"]);
    expect(reopened.getMaxOffsetInQueue("T", 0)).toBe(6);
    expect((await reopened.putMessage(message("T", 0, "m2"))).appended[0]!.queueOffset).toBe(6);
  });

  test("an append that would start below the previous one (a write position moved back) halts before writing a byte", async () => {
    const { log, lines } = captureLog();
    const { store } = open(undefined, { log });
    expect((await store.putMessage(message("T", 0, "m0"))).status).toBe("PUT_OK");
    const end = store.maxPhyOffset;
    store.commitLog.segments.at(-1)!.wrotePosition -= 10;
    const r = await store.putMessage(message("T", 0, "m1"));
    expect(r.status).toBe("SERVICE_NOT_AVAILABLE");
    expect(r.remark).toContain(`broken invariant (a bug) (restart to recover): invariant violated: append at ${end - 10} is below the end ${end}`);
    expect(lines.filter((l) => l.level === "error").length).toBe(1);
    expect((await store.putMessage(message("U", 1, "x"))).status).toBe("SERVICE_NOT_AVAILABLE");
    store.commitLog.segments.at(-1)!.wrotePosition += 10;
    expect(bodies(store.getMessage("T", 0, 0, 32))).toEqual(["m0"]);
  });

  test("a unit this process wrote that does not name its record is never served and halts writes; one left by a crash only is skipped", async () => {
    const { log, lines } = captureLog();
    const { store, dir } = open(undefined, { log });
    for (const b of ["m0", "m1", "m2"]) expect((await store.putMessage(message("T", 0, b))).status).toBe("PUT_OK");
    // Unit 1 made to point at record 0 (same size): what a write-path bug would leave.
    const cqFile = Bun.mmap(join(dir, "consumequeue", "T", "0", "00000000000000000000"), { shared: true });
    new DataView(cqFile.buffer, cqFile.byteOffset).setBigInt64(20, 0n);
    const r = store.getMessage("T", 0, 0, 32);
    expect(bodies(r)).toEqual(["m0", "m2"]);
    expect(store.unitsNotMatchingRecord).toBe(1);
    expect(store.halted).toContain("unit 1 of T-0, written by this process, points at 0");
    expect((await store.putMessage(message("T", 0, "m3"))).status).toBe("SERVICE_NOT_AVAILABLE");
    expect(lines.filter((l) => l.level === "error").length).toBe(1);
    await expect(close(store)).rejects.toThrow(/write error/);

    // The same unit written before this process started (a crash can leave one torn): skipped only.
    const { store: before, dir: dir2 } = open();
    for (const b of ["m0", "m1", "m2"]) expect((await before.putMessage(message("T", 0, b))).status).toBe("PUT_OK");
    await close(before);
    const { store: after } = open(dir2);
    const cqFile2 = Bun.mmap(join(dir2, "consumequeue", "T", "0", "00000000000000000000"), { shared: true });
    new DataView(cqFile2.buffer, cqFile2.byteOffset).setBigInt64(20, 0n);
    expect(bodies(after.getMessage("T", 0, 0, 32))).toEqual(["m0", "m2"]);
    expect(after.unitsNotMatchingRecord).toBe(1);
    expect(after.halted).toBeNull();
    expect((await after.putMessage(message("T", 0, "m3"))).status).toBe("PUT_OK");
  });
});

describe("replicated bytes with a second record for one queue offset", () => {
  test("are input: the later record takes the unit, the earlier ones become damage, it is counted and logged, nothing halts", async () => {
    const { store: master } = open();
    for (const b of ["a0", "a1", "a2"]) expect((await master.putMessage(message("T", 0, b))).status).toBe("PUT_OK");
    const end = master.maxPhyOffset;
    const bytes = master.commitLog.read(0, end)!.slice();

    const { log, lines } = captureLog();
    const { store: slave, dir: slaveDir } = open(undefined, { readOnly: true, log });
    expect(slave.appendReplicated(0, bytes)).toBeNull();
    expect(slave.getMaxOffsetInQueue("T", 0)).toBe(3);

    // What a master that lost a1 and a2 to recovery, then re-used their offsets, streams next.
    const enc = new TextEncoder();
    const input = {
      topic: enc.encode("T"),
      queueId: 0,
      flag: 0,
      body: enc.encode("b1"),
      properties: new Uint8Array(0),
      sysFlag: 0,
      bornTimestamp: 1,
      bornHost: parseHostAddress("127.0.0.1:50000"),
      storeHost: parseHostAddress("127.0.0.1:10911"),
      reconsumeTimes: 0,
      preparedTransactionOffset: 0,
    };
    const rec = new Uint8Array(recordSize(input));
    encodeRecord(rec, 0, input, 1, end, 2);
    expect(slave.appendReplicated(end, rec)).toBeNull();

    expect(slave.halted).toBeNull();
    expect(slave.unitsReplaced).toBe(1);
    expect(lines.some((l) => l.level === "warn" && l.msg.includes("queue offset 1 already named another record"))).toBe(true);
    expect(slave.getMaxOffsetInQueue("T", 0)).toBe(2);
    expect(bodies(slave.getMessage("T", 0, 0, 32))).toEqual(["a0", "b1"]);
    // a1 and a2 are what the master lost: damage on the slave too, never served, kept across restarts.
    const a1 = master.getCommitLogOffsetInQueue("T", 0, 1);
    const a2 = master.getCommitLogOffsetInQueue("T", 0, 2);
    expect(slave.corruptRanges.map((r) => [r.from, r.to])).toEqual([
      [a1, a2],
      [a2, end],
    ]);
    expect(slave.corruptRanges[0]!.reason).toContain("superseded: queue offset 1 of T-0 was given again to the record at " + end);
    await close(slave);
    const { store: again } = open(slaveDir, { readOnly: true });
    expect(again.corruptRanges.length).toBe(2);
    expect(bodies(again.getMessage("T", 0, 0, 32))).toEqual(["a0", "b1"]);
  });
});
