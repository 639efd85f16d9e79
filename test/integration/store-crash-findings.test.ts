/**
 * Store bugs found by the crash test (store-crash.test.ts), each pinned down as a deterministic
 * test. These FAIL until the store is fixed; each test states what the crash leaves on disk and
 * what recovery should do with it.
 *
 * A "crash image" is a copy of the store directory taken while the store is open and idle: the
 * page cache holds exactly what a SIGKILL at that moment would leave (this process is single
 * threaded, so no write is half done when the copy is taken). Opening the copy in this process is
 * allowed: its lock file names this process's pid.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { closeSync, cpSync, openSync, rmSync, truncateSync, writeSync } from "node:fs";
import { join } from "node:path";
import { decodeRecordAt, encodeRecord, type DecodedRecord } from "../../src/common/message-record.ts";
import { MessageStore, type MessageStoreOptions } from "../../src/commitlog/message-store.ts";
import { message, tempStoreDir, testStoreOptions } from "../../src/commitlog/test-support.ts";

const dirs: string[] = [];
const stores: MessageStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.shutdown();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(dir: string, o: Partial<MessageStoreOptions> = {}): MessageStore {
  // No background checkpoint: the tests decide when one is taken.
  const s = MessageStore.open(testStoreOptions(dir, { checkpointIntervalMs: 3_600_000, ...o }));
  stores.push(s);
  return s;
}

function newDir(): string {
  const d = tempStoreDir("store-crash-finding-");
  dirs.push(d);
  return d;
}

/** What a SIGKILL right now would leave on disk. */
function crashImage(dir: string): string {
  const copy = newDir();
  cpSync(dir, copy, { recursive: true });
  return copy;
}

const segmentName = (offset: number) => String(offset).padStart(20, "0");
const enc = new TextEncoder();

/**
 * The states a record's bytes pass through while encodeRecord writes them, in its own order:
 * a snapshot after every field write, plus a few cut points inside each byte copy (a memcpy can
 * be interrupted part way). Order-agnostic: whatever order a fixed encoder uses is what is replayed.
 */
function writeStates(rec: DecodedRecord): { states: { what: string; bytes: Uint8Array }[]; final: Uint8Array } {
  const buffer = new ArrayBuffer(rec.totalSize);
  const plain = new Uint8Array(buffer);
  const states: { what: string; bytes: Uint8Array }[] = [];
  const snap = (what: string) => states.push({ what, bytes: plain.slice() });
  class RecordingView extends DataView<ArrayBuffer> {
    override setInt8(o: number, v: number): void {
      super.setInt8(o, v);
      snap(`setInt8 at ${o}`);
    }
    override setInt16(o: number, v: number): void {
      super.setInt16(o, v);
      snap(`setInt16 at ${o}`);
    }
    override setInt32(o: number, v: number): void {
      super.setInt32(o, v);
      snap(`setInt32 at ${o}`);
    }
    override setUint32(o: number, v: number): void {
      super.setUint32(o, v);
      snap(`setUint32 at ${o}`);
    }
  }
  class RecordingBytes extends Uint8Array<ArrayBuffer> {
    override set(src: ArrayLike<number>, offset = 0): void {
      for (const cut of new Set([1, Math.floor(src.length / 2), src.length - 1])) {
        if (cut <= 0 || cut >= src.length) continue;
        plain.set(Array.prototype.slice.call(src, 0, cut) as number[], offset);
        snap(`${cut} of ${src.length} bytes copied at ${offset}`);
      }
      super.set(src, offset);
      snap(`${src.length} bytes copied at ${offset}`);
    }
  }
  const dst = new RecordingBytes(buffer);
  const input = {
    topic: enc.encode(rec.topic),
    queueId: rec.queueId,
    flag: rec.flag,
    body: rec.body.slice(),
    properties: enc.encode(rec.properties),
    sysFlag: rec.sysFlag,
    bornTimestamp: rec.bornTimestamp,
    bornHost: rec.bornHost,
    storeHost: rec.storeHost,
    reconsumeTimes: rec.reconsumeTimes,
    preparedTransactionOffset: rec.preparedTransactionOffset,
  };
  encodeRecord(dst, 0, input, rec.queueOffset, rec.physicalOffset, rec.storeTimestamp, new RecordingView(buffer));
  return { states, final: plain.slice() };
}
const dec = new TextDecoder();

describe("store crash findings", () => {
  test("a SIGKILL between creating a CommitLog segment and sizing it must not stop all later writes", async () => {
    // MappedFile.create: openSync(path, "wx+") then ftruncateSync(fd, fileSize). Killed in between,
    // the next segment exists with 0 bytes. MappedFileQueue.load skips it ("size 0 is not the
    // configured segment size") but leaves it there, so the next roll's exclusive create fails
    // with EEXIST, and so does every put after it: the broker is down until someone deletes the file.
    const dir = newDir();
    const store = open(dir);
    const body = "x".repeat(1000);
    let n = 0;
    while (store.commitLog.segments.length < 2) expect((await store.putMessage(message("T", 0, body, { N: String(n++) }))).status).toBe("PUT_OK");
    const crash = crashImage(dir);
    // Killed after the open(O_CREAT) of segment 2, before its ftruncate (and so before the record
    // that asked for it was written: that put was never acknowledged).
    truncateSync(join(crash, "commitlog", segmentName(64 * 1024)), 0);

    const recovered = open(crash);
    const statuses = new Map<string, number>();
    for (let i = 0; i < 150; i++) {
      const r = await recovered.putMessage(message("T", 0, body));
      const key = `${r.status}${r.remark ? `: ${r.remark}` : ""}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ PUT_OK: 150 });
  });

  test("a SIGKILL between creating a ConsumeQueue file and sizing it must not make MessageStore.open throw", async () => {
    // Same window in the ConsumeQueue: 64 units per file, the 65th message of T/0 rolls to file
    // 00000000000000001280. Killed between open and ftruncate, the file is left with 0 bytes.
    // Recovery re-dispatches that message (its unit was never written), ConsumeQueue.putUnit asks
    // for a new file, the exclusive create fails with EEXIST, and MessageStore.open throws: the
    // store cannot start at all.
    const dir = newDir();
    const store = open(dir, { consumeQueueUnitsPerFile: 64 });
    for (let i = 0; i < 65; i++) expect((await store.putMessage(message("T", 0, `m${i}`))).status).toBe("PUT_OK");
    const crash = crashImage(dir);
    truncateSync(join(crash, "consumequeue", "T", "0", segmentName(64 * 20)), 0);

    let recovered: MessageStore | undefined;
    let thrown: unknown;
    try {
      recovered = open(crash, { consumeQueueUnitsPerFile: 64 });
    } catch (e) {
      thrown = e;
    }
    expect(thrown === undefined ? "opened" : String(thrown)).toBe("opened");
    // Message 64 was appended to the CommitLog before the crash: recovery must index it.
    expect(recovered!.getMaxOffsetInQueue("T", 0)).toBe(65);
    const got = recovered!.getMessage("T", 0, 64, 1);
    const rec = decodeRecordAt(got.messages[0]!, 0, { checkCrc: true });
    expect("totalSize" in rec ? dec.decode(rec.body) : rec).toBe("m64");
  });

  test("a record torn by a SIGKILL at any point of its write is never served after recovery", async () => {
    // encodeRecord writes TOTALSIZE, the header, the body, then TOPIC and PROPERTIES last, straight
    // into the mapping. BODYCRC covers only the body, so a kill after the body but before the topic
    // or property bytes are complete leaves a record whose sizes add up and whose CRC matches:
    // recovery keeps it and dispatches it, and consumers get a message with a zeroed or cut topic
    // or properties (no UNIQ_KEY, no TAGS, ...). The crash test saw exactly this (SYNC_FLUSH run:
    // "commitlog offset 2184218: record (CRC valid) has no numeric SEQ (properties "\u0000...")").
    const dir = newDir();
    const store = open(dir);
    for (let i = 0; i < 3; i++) await store.putMessage(message("T", 0, `m${i}`, { SEQ: String(i) }));
    const before = crashImage(dir); // the last record not yet written
    const put = await store.putMessage(message("T", 0, "the last body", { SEQ: "3", UNIQ_KEY: "U3", TAGS: "tagA" }));
    const { physicalOffset: phy, size } = put.appended[0]!;
    const stored = store.commitLog.read(phy, size)!.slice();
    const decoded = decodeRecordAt(stored, 0, { checkCrc: true });
    if (!("totalSize" in decoded)) throw new Error("stored record does not decode");
    const { states, final } = writeStates(decoded);
    expect(final).toEqual(stored); // the replay is the real encoding

    const served: string[] = [];
    for (const st of states.slice(0, -1)) {
      const crash = newDir();
      cpSync(before, crash, { recursive: true });
      const fd = openSync(join(crash, "commitlog", segmentName(0)), "r+");
      writeSync(fd, st.bytes, 0, st.bytes.length, phy);
      closeSync(fd);
      const s = open(crash);
      const kept = s.maxPhyOffset > phy ? s.commitLog.read(phy, size) : undefined;
      if (kept && !Buffer.from(kept).equals(Buffer.from(final))) {
        const r = decodeRecordAt(kept, 0, { checkCrc: true });
        const seen = "totalSize" in r ? `topic ${JSON.stringify(r.topic)}, properties ${JSON.stringify(r.properties)}` : "undecodable";
        served.push(`killed after ${st.what}: kept and dispatched (${seen}, queue max ${s.getMaxOffsetInQueue("T", 0)})`);
      }
      await s.shutdown();
      stores.splice(stores.indexOf(s), 1);
    }
    expect(served).toEqual([]);
  });

  test("keys indexed before an unclean shutdown can still be queried after recovery", async () => {
    // checkpoint.ts promises "ConsumeQueue units (and index entries) for every record below
    // dispatchedOffset are durable". After an unclean shutdown IndexService.load deletes every
    // index file whose endTimestamp is after the checkpoint's indexCheckpointTimestamp (the newest
    // *finished* file's end, 0 while the first file is still being filled), and says recovery must
    // then re-dispatch from a record stored no later than that timestamp. MessageStore#recover
    // re-dispatches only from dispatchedOffset, so every key in the deleted files below
    // dispatchedOffset is gone for good (QUERY_MESSAGE / "query by key" no longer finds it).
    const dir = newDir();
    const store = open(dir);
    for (let i = 0; i < 10; i++) await store.putMessage(message("T", 0, `m${i}`, { UNIQ_KEY: `K${i}`, KEYS: `key${i}` }));
    await store.checkpoint(); // dispatchedOffset = after m9; no finished index file yet → index timestamp 0
    await store.putMessage(message("T", 0, "m10", { UNIQ_KEY: "K10" }));
    expect(store.queryMessage("T", "K0", 4, 0, Date.now() + 60_000).messages.length).toBe(1);
    const crash = crashImage(dir);

    const recovered = open(crash);
    expect(recovered.recovery!.abnormal).toBe(true);
    // The keys are indexed again after the store opens (src/commitlog/index-catch-up.ts).
    await recovered.whenIndexed();
    expect(recovered.indexCatchUp).toBeUndefined();
    const found = (key: string) => recovered.queryMessage("T", key, 4, 0, Date.now() + 60_000).messages.length;
    const lost = [...Array.from({ length: 10 }, (_, i) => `K${i}`), ...Array.from({ length: 10 }, (_, i) => `key${i}`), "K10"].filter(
      (k) => found(k) !== 1,
    );
    expect(lost).toEqual([]);
  });
});
