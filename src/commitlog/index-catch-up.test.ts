/**
 * The index's catch-up after a crash (./index-catch-up.ts): the store opens with the index behind,
 * serves, and indexes the CommitLog again a slice at a time; every key is then found exactly once.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { cpSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Clock, TimerHandle } from "../common/clock.ts";
import { decodeRecordAt } from "../common/message-record.ts";
import { MessageStore, type MessageStoreOptions } from "./message-store.ts";
import { message, tempStoreDir, testStoreOptions } from "./test-support.ts";

/** Real time, but timeouts run only when the test steps them (intervals never: no background flush). */
class StepClock implements Clock {
  readonly #timeouts = new Map<TimerHandle, () => void>();
  now(): number {
    return Date.now();
  }
  setTimeout(fn: () => void): TimerHandle {
    const h = {};
    this.#timeouts.set(h, fn);
    return h;
  }
  clearTimeout(h: TimerHandle): void {
    this.#timeouts.delete(h);
  }
  setInterval(): TimerHandle {
    return {};
  }
  clearInterval(): void {}
  /** Runs the timeouts set so far (not those they set). */
  step(): void {
    const due = [...this.#timeouts.values()];
    this.#timeouts.clear();
    for (const fn of due) fn();
  }
}

const dirs: string[] = [];
const stores: MessageStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.shutdown();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const RECORDS = 3000;

function options(dir: string, o: Partial<MessageStoreOptions> = {}): MessageStoreOptions {
  // One index file for everything (it is the unfinished one at the crash); 64 KiB segments, so the
  // walk crosses BLANK padding ~10 times; no background checkpoint.
  return testStoreOptions(dir, { indexNum: 100_000, indexSlotNum: 4096, checkpointIntervalMs: 3_600_000, ...o });
}

function open(o: MessageStoreOptions): MessageStore {
  const s = MessageStore.open(o);
  stores.push(s);
  return s;
}

/** A store with RECORDS keyed messages, checkpointed (its index file unfinished), and a copy of it as a SIGKILL would leave it. */
async function crashedStore(): Promise<string> {
  const dir = tempStoreDir("index-catch-up-");
  const crash = tempStoreDir("index-catch-up-crash-");
  dirs.push(dir, crash);
  const s = open(options(dir));
  for (let i = 0; i < RECORDS; i++) await s.putMessage(message("T", i % 4, `m${i}`, { UNIQ_KEY: `U${i}`, KEYS: `k${i} shared` }));
  await s.checkpoint();
  cpSync(dir, crash, { recursive: true });
  return crash;
}

const FOREVER = () => Date.now() + 3_600_000;

function missing(s: MessageStore, keys: string[]): string[] {
  return keys.filter((k) => s.queryMessage("T", k, 4, 0, FOREVER()).messages.length !== 1);
}

/** The crashed store reopened, one slice of its catch-up done. */
async function oneSliceIn(): Promise<{ crash: string; s: MessageStore }> {
  const crash = await crashedStore();
  const clock = new StepClock();
  const s = open(options(crash, { clock }));
  clock.step();
  expect(s.indexCatchUp!.at).toBeGreaterThan(0);
  return { crash, s };
}

const allKeys = () => Array.from({ length: RECORDS }, (_, i) => [`U${i}`, `k${i}`]).flat();

describe("index catch-up after a crash", () => {
  test("the store opens with the index behind, serves, and then finds every key exactly once", async () => {
    const crash = await crashedStore();
    const clock = new StepClock();
    const s = open(options(crash, { clock }));
    expect(s.recovery!.abnormal).toBe(true);
    expect(s.recovery!.problems.some((p) => p.includes("after the checkpoint's index timestamp"))).toBe(true);
    const behind = s.indexCatchUp!;
    expect(behind.from).toBe(0);
    expect(behind.at).toBe(0);
    expect(behind.end).toBe(s.commitLog.maxOffset);
    // What the broker's "dispatch behind" metric reads: the index's position while it lags.
    expect(s.indexedOffset).toBe(0);
    expect(s.dispatchedOffset).toBe(behind.end);

    // A put while the index is behind: stored and consumable, its key indexed later, in order.
    const late = await s.putMessage(message("T", 0, "late", { UNIQ_KEY: "ULATE", KEYS: "klate" }));
    expect(late.status).toBe("PUT_OK");
    expect(s.getMessage("T", 0, RECORDS / 4, 1).messages.length).toBe(1);
    expect(s.queryMessage("T", "klate", 4, 0, FOREVER()).messages.length).toBe(0);

    // 3,001 records at 2,000 a slice.
    let slices = 0;
    while (s.indexCatchUp !== undefined) {
      clock.step();
      slices++;
      expect(slices).toBeLessThan(10);
    }
    expect(slices).toBe(2);
    expect(s.indexedOffset).toBe(s.dispatchedOffset);
    expect(missing(s, [...allKeys(), "ULATE", "klate"])).toEqual([]);
    const shared = s.queryMessage("T", "shared", 32, 0, FOREVER()).messages;
    expect(shared.length).toBe(32);
    // Newest first, each once: the index stayed in CommitLog order.
    const dec = new TextDecoder();
    const bodies = shared.map((bytes) => {
      const r = decodeRecordAt(bytes, 0, { checkCrc: false });
      return "totalSize" in r ? dec.decode(r.body) : "?";
    });
    expect(bodies).toEqual(Array.from({ length: 32 }, (_, i) => `m${RECORDS - 1 - i}`));

    // From now on a put is indexed at once.
    await s.putMessage(message("T", 1, "after", { KEYS: "kafter" }));
    expect(s.queryMessage("T", "kafter", 4, 0, FOREVER()).messages.length).toBe(1);
  });

  test("a clean stop while the index is behind finishes it first: the next start has nothing to catch up", async () => {
    const { crash, s } = await oneSliceIn();
    const waiting = s.whenIndexed();
    await s.shutdown();
    await waiting;
    expect(existsSync(join(crash, "abort"))).toBe(false);

    const again = open(options(crash));
    expect(again.recovery!.abnormal).toBe(false);
    expect(again.indexCatchUp).toBeUndefined();
    expect(missing(again, allKeys())).toEqual([]);
  });

  test("a crash while the index is behind: the next start drops the unfinished file again and rebuilds it, without duplicates", async () => {
    const { crash } = await oneSliceIn();
    const second = tempStoreDir("index-catch-up-crash2-");
    dirs.push(second);
    cpSync(crash, second, { recursive: true });

    const again = open(options(second));
    expect(again.recovery!.abnormal).toBe(true);
    expect(again.indexCatchUp?.from).toBe(0);
    await again.whenIndexed();
    expect(missing(again, allKeys())).toEqual([]);
  });

  test("a clean stop and start leaves nothing to catch up", async () => {
    const dir = tempStoreDir("index-catch-up-clean-");
    dirs.push(dir);
    const s = open(options(dir));
    for (let i = 0; i < 10; i++) await s.putMessage(message("T", 0, `m${i}`, { KEYS: `k${i}` }));
    await s.shutdown();
    const again = open(options(dir));
    expect(again.indexCatchUp).toBeUndefined();
    expect(again.queryMessage("T", "k3", 4, 0, FOREVER()).messages.length).toBe(1);
  });
});
