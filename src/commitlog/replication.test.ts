/**
 * The slave side of replication at the store level: bytes copied from a master's CommitLog, in
 * arbitrary chunks (never across a segment end), build an identical log and the same queues.
 */
import { afterEach, expect, test } from "bun:test";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { SysFlag } from "../protocol/sys-flag.ts";
import { readPhysicalOffset } from "../common/message-record.ts";
import { MessageStore, type MessageStoreOptions } from "./message-store.ts";
import { tagsHashCode } from "../common/message-record.ts";
import { message, tempStoreDir, testStoreOptions } from "./test-support.ts";

const dirs: string[] = [];
const stores: MessageStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.shutdown();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(readOnly = false, overrides: Partial<MessageStoreOptions> = {}): MessageStore {
  const d = tempStoreDir("repl-");
  dirs.push(d);
  const s = MessageStore.open(testStoreOptions(d, { readOnly, ...overrides }));
  stores.push(s);
  return s;
}

/** Copies [from, master end) to the slave in chunks of at most `chunk` bytes, per segment. */
function replicate(master: MessageStore, slave: MessageStore, from: number, chunk: number): void {
  let off = from;
  while (off < master.maxPhyOffset) {
    const seg = master.commitLog.segmentFor(off)!;
    const end = Math.min(seg.fileFromOffset + seg.wrotePosition, off + chunk);
    const bytes = master.commitLog.read(off, end - off)!;
    expect(slave.appendReplicated(off, bytes.slice())).toBeNull();
    off = end;
  }
}

test("chunks of any size rebuild the same CommitLog and ConsumeQueues on the slave", async () => {
  const master = open();
  for (let i = 0; i < 300; i++) await master.putMessage(message(`T${i % 3}`, i % 4, `m${i}`.padEnd(300 + (i % 7) * 50, "x"), { KEYS: `k${i}` }));
  const slave = open(true);
  replicate(master, slave, 0, 777);
  expect(slave.maxPhyOffset).toBe(master.maxPhyOffset);
  expect(slave.dispatchedOffset).toBe(master.maxPhyOffset);
  for (let t = 0; t < 3; t++) {
    for (let q = 0; q < 4; q++) {
      expect(slave.getMaxOffsetInQueue(`T${t}`, q)).toBe(master.getMaxOffsetInQueue(`T${t}`, q));
      const a = master.getMessage(`T${t}`, q, 0, 32).messages;
      const b = slave.getMessage(`T${t}`, q, 0, 32).messages;
      expect(b.map((x) => Buffer.from(x).toString("hex"))).toEqual(a.map((x) => Buffer.from(x).toString("hex")));
    }
  }
  expect(slave.queryMessage("T1", "k7", 32, 0, Date.now() + 1000).messages).toHaveLength(1);
  // A slave refuses producers' writes.
  expect((await slave.putMessage(message("T0", 0, "x"))).status).toBe("SERVICE_NOT_AVAILABLE");
});

test("data that does not continue the slave's log is refused", async () => {
  const master = open();
  for (let i = 0; i < 10; i++) await master.putMessage(message("T", 0, `m${i}`));
  const slave = open(true);
  replicate(master, slave, 0, 100);
  const bad = slave.appendReplicated(slave.maxPhyOffset + 5, new Uint8Array(10));
  expect(bad?.invalid).toContain("does not continue");
});

test("an empty slave can start at a later segment of the master", async () => {
  const master = open();
  for (let i = 0; i < 400; i++) await master.putMessage(message("T", 0, "y".repeat(1000)));
  const segStart = master.commitLog.segments.at(-1)!.fileFromOffset;
  expect(segStart).toBeGreaterThan(0);
  const slave = open(true);
  replicate(master, slave, segStart, 4096);
  expect(slave.minPhyOffset).toBe(segStart);
  expect(slave.maxPhyOffset).toBe(master.maxPhyOffset);
  const max = master.getMaxOffsetInQueue("T", 0);
  expect(slave.getMaxOffsetInQueue("T", 0)).toBe(max);
  expect(slave.getMessage("T", 0, max - 1, 1).status).toBe("FOUND");
});

test("a damaged range streamed by the master is stored as is, recorded in corrupt.json, never dispatched or served; later records are", async () => {
  const master = open();
  for (let i = 0; i < 6; i++) await master.putMessage(message("T", 0, `m${i}`.padEnd(200, "x")));
  const slave = open(true);
  const starts = master.getMessage("T", 0, 0, 32).messages.map((m) => readPhysicalOffset(m, 0));
  expect(starts).toHaveLength(6);
  // Records 0-1 verified, record 2 arrives damaged (as a master's recovery left it), 3-5 verified.
  const all = master.commitLog.read(0, master.maxPhyOffset)!.slice();
  const [r2, r3] = [starts[2]!, starts[3]!];
  const garbage = all.slice(r2, r3).fill(0x41);
  expect(slave.appendReplicated(0, all.slice(0, r2))).toBeNull();
  expect(slave.appendReplicated(r2, garbage.subarray(0, 50), "no record at r2")).toBeNull();
  expect(slave.appendReplicated(r2 + 50, garbage.subarray(50), "no record at r2")).toBeNull();
  expect(slave.appendReplicated(r3, all.slice(r3))).toBeNull();
  expect(slave.maxPhyOffset).toBe(master.maxPhyOffset);
  expect(slave.dispatchedOffset).toBe(master.maxPhyOffset);
  // One range for the two parts, persisted.
  expect(slave.corruptRanges).toEqual([{ from: r2, to: r3, reason: "streamed by the master: no record at r2" }]);
  const dir = dirs.at(-1)!;
  expect(JSON.parse(readFileSync(join(dir, "corrupt.json"), "utf8"))).toEqual(slave.corruptRanges);
  // The queue skips the damaged record: offsets 0, 1, then 3.. (queue offsets as the master assigned them).
  expect(slave.getMaxOffsetInQueue("T", 0)).toBe(6);
  const got = slave.getMessage("T", 0, 0, 32).messages.map((m) => Buffer.from(m).toString("latin1"));
  expect(got.length).toBe(5);
  expect(got.some((m) => m.includes("m2"))).toBe(false);
});

test("the arrival listener hears of every message a put or replicated bytes bring to a ConsumeQueue, never of a half message", async () => {
  type Arrival = [topic: string, queueId: number, queueOffset: number, tagsCode: number];
  const listen = (into: Arrival[]) => ({ messageArriving: { arriving: (...a: Arrival) => void into.push(a) } });
  const onMaster: Arrival[] = [];
  const master = open(false, listen(onMaster));
  await master.putMessage(message("T", 1, "a", { TAGS: "TagA" }));
  await master.putMessages([message("T", 1, "b", { TAGS: "TagB" }), message("U", 0, "c")]);
  await master.putMessage({ ...message("T", 1, "half", { TAGS: "TagA" }), sysFlag: SysFlag.TRANSACTION_PREPARED_TYPE });
  await master.putMessage({ ...message("T", 1, "committed", { TAGS: "TagA" }), sysFlag: SysFlag.TRANSACTION_COMMIT_TYPE });
  const expected: Arrival[] = [
    ["T", 1, 0, tagsHashCode("TagA")],
    ["T", 1, 1, tagsHashCode("TagB")],
    ["U", 0, 0, tagsHashCode(undefined)],
    ["T", 1, 2, tagsHashCode("TagA")],
  ];
  expect(onMaster).toEqual(expected);
  // A slave: the same arrivals from the replicated bytes, whatever the chunks.
  const onSlave: Arrival[] = [];
  const slave = open(true, listen(onSlave));
  replicate(master, slave, 0, 61);
  expect(onSlave).toEqual(expected);
});
