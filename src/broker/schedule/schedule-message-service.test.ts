import { afterEach, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { scope } from "../../common/log.ts";
import { SysFlag } from "../../protocol/sys-flag.ts";
import { decodeRecordAt, MessageStore, parseProperties, tagsHashCode, type DecodedRecord, type PutMessageRequest } from "../../commitlog/index.ts";
import { DelayOffsetManager, TopicConfigManager } from "../metadata.ts";
import { SCHEDULE_TOPIC } from "../../protocol/topics.ts";
import { message, tempStoreDir, testStoreOptions } from "../../commitlog/test-support.ts";
import { DEFAULT_MESSAGE_DELAY_LEVEL, parseDelayLevels } from "../../protocol/delay-levels.ts";
import {
  ensureScheduleTopic,
  SCHEDULE_TOPIC_QUEUE_NUMS,
  ScheduleMessageService,
  TIMER_OFFSET_KEY,
  TIMER_OUT_MS,
  TIMER_QUEUE_ID,
  timerRefusal,
  type ScheduleContext,
} from "./schedule-message-service.ts";

const T0 = 1_700_000_000_000;
const log = scope("schedule-test");

interface Wake {
  topic: string;
  queueId: number;
  queueOffset: number;
  tagsCode: number;
}

/** A manual clock shared by the store (store timestamps) and the service. */
class Clock {
  t = T0;
  readonly now = () => this.t;
}

/** A store in a temp dir, a delay offset table, a fake long-polling hold and the service. */
class Rig {
  readonly dir: string;
  readonly clock: Clock;
  readonly levels: string;
  readonly wakes: Wake[] = [];
  store!: MessageStore;
  offsets!: DelayOffsetManager;
  svc!: ScheduleMessageService;
  ctx!: ScheduleContext;

  readonly timerMaxDelaySec: number | undefined;

  constructor(o: { levels?: string; realClock?: boolean; dir?: string; clock?: Clock; timerMaxDelaySec?: number } = {}) {
    this.timerMaxDelaySec = o.timerMaxDelaySec;
    this.dir = o.dir ?? tempStoreDir("schedule-test-");
    this.clock = o.clock ?? new Clock();
    this.levels = o.levels ?? DEFAULT_MESSAGE_DELAY_LEVEL;
    this.open(o.realClock ?? false);
  }

  open(realClock = false, brokerRole: "ASYNC_MASTER" | "SLAVE" = "ASYNC_MASTER"): void {
    const levels = parseDelayLevels(this.levels);
    if ("invalid" in levels) throw new Error(levels.invalid);
    const now = realClock ? Date.now : this.clock.now;
    const timerMaxDelaySec = this.timerMaxDelaySec;
    this.svc = new ScheduleMessageService({
      levelDelaysMs: levels,
      now,
      log,
      checkIntervalMs: realClock ? 100 : 0,
      ...(timerMaxDelaySec ? { timerMaxDelaySec } : {}),
    });
    // Deliveries wake parked pulls through the store's arrival listener, as in the broker (the
    // parked records' own units, in SCHEDULE_TOPIC_XXXX, are not what these tests look at).
    const messageArriving = {
      arriving: (topic: string, queueId: number, queueOffset: number, tagsCode: number) => {
        if (topic !== SCHEDULE_TOPIC) this.wakes.push({ topic, queueId, queueOffset, tagsCode });
      },
    };
    this.store = MessageStore.open(testStoreOptions(this.dir, { now, tagsCodeFor: this.svc.tagsCodeFor, messageArriving }));
    this.offsets = new DelayOffsetManager({ dir: this.dir });
    expect(this.offsets.load()).toEqual([]);
    this.ctx = {
      role: { isSlave: brokerRole === "SLAVE" },
      store: this.store,
      delayOffsets: this.offsets,
    };
    this.svc.start(this.ctx);
  }

  async close(): Promise<void> {
    await this.svc.stop();
    await this.store.shutdown();
  }

  /** The send path: divert (as SendMessageProcessor does), then store. */
  async send(topic: string, queueId: number, body: string, props: Record<string, string> = {}, sysFlag = 0): Promise<PutMessageRequest> {
    const req = { ...message(topic, queueId, body, props), sysFlag, bornTimestamp: this.clock.t - 7, flag: 42 };
    const diverted = this.svc.divert(req, parseProperties(req.properties)) ?? req;
    if ("code" in diverted) throw new Error(`refused: ${diverted.remark}`);
    const stored = diverted;
    const r = await this.store.putMessage(stored);
    expect(r.status).toBe("PUT_OK");
    return stored;
  }

  /** Everything stored in one queue, decoded, with its ConsumeQueue tag code. */
  read(topic: string, queueId: number): (DecodedRecord & { props: Record<string, string>; tagsCode: number; text: string })[] {
    const out: (DecodedRecord & { props: Record<string, string>; tagsCode: number; text: string })[] = [];
    for (let offset = 0; ;) {
      const codes: number[] = [];
      const r = this.store.getMessage(topic, queueId, offset, 32, (c) => (codes.push(c), true));
      if (r.status !== "FOUND") return out;
      r.messages.forEach((bytes, i) => {
        const rec = decodeRecordAt(bytes, 0, { checkCrc: true });
        if (!("totalSize" in rec)) throw new Error(rec.toString());
        out.push({ ...rec, props: parseProperties(rec.properties), tagsCode: codes[i]!, text: new TextDecoder().decode(rec.body) });
      });
      offset = r.nextBeginOffset;
    }
  }

  bodies(topic: string, queueId: number): string[] {
    return this.read(topic, queueId).map((r) => r.text);
  }

  /** Advances the fake clock in `stepMs` steps up to `until`, running a pass at each step. */
  async runUntil(until: number, stepMs = 100, onDelivered?: (at: number) => void): Promise<void> {
    for (;;) {
      const { delivered } = await this.svc.runOnce();
      for (let i = 0; i < delivered; i++) onDelivered?.(this.clock.t);
      if (this.clock.t >= until) return;
      this.clock.t = Math.min(until, this.clock.t + stepMs);
    }
  }
}

const rigs: Rig[] = [];
function rig(o?: ConstructorParameters<typeof Rig>[0]): Rig {
  const r = new Rig(o);
  rigs.push(r);
  return r;
}

afterEach(async () => {
  for (const r of rigs.splice(0)) {
    await r.close();
    rmSync(r.dir, { recursive: true, force: true });
  }
});

async function waitFor<T>(cond: () => T, timeoutMs: number, what: string): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = cond();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(5);
  }
}

describe("divert", () => {
  test("DELAY = n parks the message in queue n − 1 with REAL_TOPIC / REAL_QID; tag code = due time", async () => {
    const r = rig();
    const stored = await r.send("TopicA", 3, "hello", { TAGS: "tagA", KEYS: "k1", DELAY: "3" });
    expect([stored.topic, stored.queueId]).toEqual([SCHEDULE_TOPIC, 2]);
    expect(r.bodies("TopicA", 3)).toEqual([]);
    const [parked] = r.read(SCHEDULE_TOPIC, 2);
    expect(parked!.props).toMatchObject({ REAL_TOPIC: "TopicA", REAL_QID: "3", DELAY: "3", TAGS: "tagA", KEYS: "k1" });
    expect(parked!.tagsCode).toBe(parked!.storeTimestamp + 10_000);
    expect(r.store.queryMessage(SCHEDULE_TOPIC, "k1", 10, 0, Number.MAX_SAFE_INTEGER).messages.length).toBe(1);
  });

  test("a level past the last is clamped to it; DELAY 0, negative or garbage is not delayed", async () => {
    const r = rig();
    const stored = await r.send("TopicA", 0, "late", { DELAY: "40" });
    expect([stored.queueId, parseProperties(stored.properties).DELAY]).toEqual([17, "18"]);
    expect(r.read(SCHEDULE_TOPIC, 17)[0]!.tagsCode).toBe(T0 + 2 * 3_600_000);
    for (const d of ["0", "-1", "x", "", "1.5"]) expect(r.svc.divert(message("TopicA", 0, "b", { DELAY: d }), { DELAY: d })).toBeNull();
  });

  test("only normal and committed messages are diverted, never prepared or rolled-back ones", () => {
    const r = rig();
    const kinds: [number, boolean][] = [
      [SysFlag.TRANSACTION_NOT_TYPE, true],
      [SysFlag.TRANSACTION_COMMIT_TYPE, true],
      [SysFlag.TRANSACTION_PREPARED_TYPE, false],
      [SysFlag.TRANSACTION_ROLLBACK_TYPE, false],
      [SysFlag.TRANSACTION_COMMIT_TYPE | SysFlag.COMPRESSED, true],
    ];
    for (const [sysFlag, diverted] of kinds) {
      const req = { ...message("TopicA", 0, "b", { DELAY: "1" }), sysFlag };
      expect({ sysFlag, diverted: r.svc.divert(req, { DELAY: "1" }) !== null }).toEqual({ sysFlag, diverted });
    }
  });

  test("timer properties in the future go to the timer queue with TIMER_OUT_MS; past ones are left alone", () => {
    const r = rig();
    const now = r.clock.t;
    const divert = (props: Record<string, string>) => r.svc.divert(message("TopicA", 1, "b", props), props);
    const due = (props: Record<string, string>) => {
      const d = divert(props);
      if (d === null || "code" in d) throw new Error(`not parked: ${JSON.stringify(d)}`);
      expect(d.queueId).toBe(TIMER_QUEUE_ID);
      const p = parseProperties(d.properties);
      expect([d.topic, p.REAL_TOPIC, p.REAL_QID]).toEqual([SCHEDULE_TOPIC, "TopicA", "1"]);
      return Number(p[TIMER_OUT_MS]);
    };
    expect(due({ __STARTDELIVERTIME: String(now + 1500) })).toBe(now + 1500);
    expect(due({ TIMER_DELIVER_MS: String(now + 60_000) })).toBe(now + 60_000);
    expect(due({ TIMER_DELAY_SEC: "90" })).toBe(now + 90_000);
    expect(due({ TIMER_DELAY_MS: "12000" })).toBe(now + 12_000);
    expect(due({ TIMER_DELAY_MS: "+7" })).toBe(now + 7);
    // 5.x's order (HookUtils.transformTimerMessage): TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS; then __STARTDELIVERTIME.
    expect(due({ TIMER_DELIVER_MS: String(now + 5), TIMER_DELAY_MS: "7", TIMER_DELAY_SEC: "3" })).toBe(now + 3000);
    expect(due({ TIMER_DELIVER_MS: String(now + 5), TIMER_DELAY_MS: "7" })).toBe(now + 7);
    expect(due({ TIMER_DELIVER_MS: String(now + 5), __STARTDELIVERTIME: String(now + 9) })).toBe(now + 5);
    const notDiverted: Record<string, string>[] = [
      { __STARTDELIVERTIME: String(now) },
      { __STARTDELIVERTIME: String(now - 5000) },
      { __STARTDELIVERTIME: "null" },
      { __STARTDELIVERTIME: "1.7e12" },
      { TIMER_DELAY_SEC: "-3" },
      { TIMER_DELAY_SEC: "0" },
      { TIMER_DELAY_MS: "0" },
      { TIMER_DELAY_MS: "-12000" },
      { TIMER_DELIVER_MS: String(now - 1) },
      { TIMER_DELIVER_MS: "-9223372036854775808" },
      { TAGS: "t" },
    ];
    for (const props of notDiverted) {
      expect({ props, diverted: divert(props) }).toEqual({ props, diverted: null });
    }
    // DELAY wins over a timer property, even one that would be refused.
    const timers: Record<string, string>[] = [
      { __STARTDELIVERTIME: String(now + 99_999) },
      { TIMER_DELAY_MS: "x" },
      { TIMER_DELAY_SEC: "999999999" },
    ];
    for (const timer of timers) {
      const d = divert({ DELAY: "2", ...timer });
      expect(d !== null && !("code" in d) ? d.queueId : d).toBe(1);
    }
  });

  test("a TIMER_* value that is not a Java long, or a due time past timerMaxDelaySec, is refused as 5.x refuses it", () => {
    const r = rig({ timerMaxDelaySec: 60 });
    const now = r.clock.t;
    const divert = (props: Record<string, string>) => r.svc.divert(message("TopicA", 1, "b", props), props);
    const refused = timerRefusal(60_000);
    expect(refused).toEqual({
      code: 13,
      remark:
        "timer message illegal, the delay time should not be bigger than the max delay 60000ms; or if set del msg, the delay time should be bigger than the current time",
    });
    const illegal: Record<string, string>[] = [
      { TIMER_DELAY_SEC: "61" },
      { TIMER_DELAY_MS: "60001" },
      { TIMER_DELIVER_MS: String(now + 60_001) },
      { __STARTDELIVERTIME: String(now + 60_001) },
      { TIMER_DELAY_MS: "soon" },
      { TIMER_DELAY_SEC: "1.5" },
      { TIMER_DELIVER_MS: "" },
      { TIMER_DELIVER_MS: "99999999999999999999" },
      // The first timer property decides, even when a later one is fine.
      { TIMER_DELAY_SEC: "x", TIMER_DELIVER_MS: String(now + 5) },
    ];
    for (const props of illegal) {
      expect({ props, diverted: divert(props) }).toEqual({ props, diverted: refused });
    }
    // Exactly the max is taken (5.x refuses only what is strictly beyond it).
    const atMax = divert({ TIMER_DELAY_SEC: "60" });
    expect(atMax !== null && !("code" in atMax) ? parseProperties(atMax.properties)[TIMER_OUT_MS] : atMax).toBe(String(now + 60_000));
    // The default max is 5.x's: 3 days.
    const d = rig();
    expect(d.svc.divert(message("TopicA", 1, "b", {}), { TIMER_DELAY_SEC: String(3 * 86_400 + 1) })).toEqual(timerRefusal(259_200_000));
  });

  test("the parked record keeps what the store was given (e.g. CLUSTER), not only the caller's map", () => {
    const r = rig();
    const req = message("TopicA", 0, "b", { DELAY: "1", CLUSTER: "c1", TAGS: "t" });
    const d = r.svc.divert(req, { DELAY: "1" });
    if (d === null || "code" in d) throw new Error("not parked");
    expect(parseProperties(d.properties)).toMatchObject({ CLUSTER: "c1", TAGS: "t", DELAY: "1", REAL_TOPIC: "TopicA" });
    expect(d.tags).toBeUndefined();
  });

  test("tagsCodeFor: the tag hash outside SCHEDULE_TOPIC_XXXX", () => {
    const r = rig();
    expect(r.svc.tagsCodeFor("TopicA", null, T0, "tagA")).toBe(tagsHashCode("tagA"));
    expect(r.svc.tagsCodeFor("TopicA", { DELAY: "1" }, T0, undefined)).toBe(0);
    expect(r.svc.tagsCodeFor(SCHEDULE_TOPIC, { DELAY: "1" }, T0, "x")).toBe(T0 + 1000);
    expect(r.svc.tagsCodeFor(SCHEDULE_TOPIC, { [TIMER_OUT_MS]: "123" }, T0, "x")).toBe(123);
    expect(r.svc.tagsCodeFor(SCHEDULE_TOPIC, {}, T0, "x")).toBe(T0);
  });
});

describe("delivery of delay levels", () => {
  test("level 1 (1 s): not before the due time, then re-put as sent, long polling woken, offset advanced", async () => {
    const r = rig();
    await r.send("TopicA", 2, "hello", { TAGS: "tagA", KEYS: "k1 k2", UNIQ_KEY: "U1", DELAY: "1", WAIT: "false" });
    r.clock.t = T0 + 999;
    expect((await r.svc.runOnce()).delivered).toBe(0);
    expect(r.bodies("TopicA", 2)).toEqual([]);
    expect(r.offsets.get(1)).toBe(0);

    r.clock.t = T0 + 1000;
    expect((await r.svc.runOnce()).delivered).toBe(1);
    const [m] = r.read("TopicA", 2);
    expect(m!.text).toBe("hello");
    expect(m!.props).toEqual(Object.assign(Object.create(null), { TAGS: "tagA", KEYS: "k1 k2", UNIQ_KEY: "U1" }));
    expect([m!.flag, m!.bornTimestamp, m!.queueId, m!.tagsCode]).toEqual([42, T0 - 7, 2, tagsHashCode("tagA")]);
    expect(m!.storeTimestamp).toBe(T0 + 1000);
    expect(r.wakes).toEqual([{ topic: "TopicA", queueId: 2, queueOffset: 0, tagsCode: tagsHashCode("tagA") }]);
    expect(r.offsets.get(1)).toBe(1);
    expect(r.store.queryMessage("TopicA", "k2", 10, 0, Number.MAX_SAFE_INTEGER).messages.length).toBe(1);
    // Delivered once only.
    r.clock.t += 10_000;
    expect((await r.svc.runOnce()).delivered).toBe(0);
  });

  test("each level queue is delivered in order; levels interleave by due time", async () => {
    const r = rig();
    const order: string[] = [];
    for (let i = 0; i < 5; i++) {
      await r.send("TopicA", 0, `L2-${i}`, { DELAY: "2" }); // 5 s
      r.clock.t += 300;
      await r.send("TopicA", 0, `L1-${i}`, { DELAY: "1" }); // 1 s
      r.clock.t += 300;
    }
    await r.runUntil(T0 + 10_000, 50, () => order.push(r.bodies("TopicA", 0).at(-1)!));
    const got = r.bodies("TopicA", 0);
    expect(got.filter((b) => b.startsWith("L1"))).toEqual(["L1-0", "L1-1", "L1-2", "L1-3", "L1-4"]);
    expect(got.filter((b) => b.startsWith("L2"))).toEqual(["L2-0", "L2-1", "L2-2", "L2-3", "L2-4"]);
    // Every L1 is due before any L2 (1300 … 3700 ms vs 5000 … 7400 ms).
    expect(got.slice(0, 5).every((b) => b.startsWith("L1"))).toBe(true);
    expect([r.offsets.get(1), r.offsets.get(2)]).toEqual([5, 5]);
  });

  test("a custom short level string (100ms) on the background loop, real clock", async () => {
    const r = rig({ levels: "100ms 300ms", realClock: true });
    const sentAt = Date.now();
    await r.send("TopicA", 0, "fast", { DELAY: "1" });
    await r.send("TopicA", 1, "slower", { DELAY: "2" });
    await waitFor(() => r.bodies("TopicA", 0).length === 1, 5000, "the level-1 message");
    const fast = r.read("TopicA", 0)[0]!.storeTimestamp - sentAt;
    await waitFor(() => r.bodies("TopicA", 1).length === 1, 5000, "the level-2 message");
    const slower = r.read("TopicA", 1)[0]!.storeTimestamp - sentAt;
    expect(fast).toBeGreaterThanOrEqual(100);
    expect(slower).toBeGreaterThanOrEqual(300);
    // Checked every 100 ms: a little over one interval late at most (generous for loaded CI).
    expect(fast).toBeLessThan(100 + 500);
    expect(slower).toBeLessThan(300 + 500);
  });

  test("a refused put is retried on the next pass without losing or reordering anything", async () => {
    const r = rig();
    await r.send("TopicA", 0, "a", { DELAY: "1" });
    await r.send("TopicA", 0, "b", { DELAY: "1" });
    const real = r.store;
    let refuse = 1;
    r.ctx.store = new Proxy(real, {
      get(target, key) {
        if (key === "putMessage") {
          return (req: PutMessageRequest) =>
            refuse-- > 0 ? Promise.resolve({ status: "SERVICE_NOT_AVAILABLE", remark: "test", appended: [] }) : target.putMessage(req);
        }
        const v = Reflect.get(target, key, target) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    r.clock.t = T0 + 1000;
    expect((await r.svc.runOnce()).delivered).toBe(0);
    expect(r.offsets.get(1)).toBe(0);
    expect((await r.svc.runOnce()).delivered).toBe(2);
    expect(r.bodies("TopicA", 0)).toEqual(["a", "b"]);
    r.ctx.store = real;
  });

  test("a parked record without a usable REAL_TOPIC / REAL_QID is skipped, the rest still delivered", async () => {
    const r = rig();
    // Parked by hand, as a broken or foreign record would be.
    expect((await r.store.putMessage(message(SCHEDULE_TOPIC, 0, "orphan", { DELAY: "1", REAL_QID: "0" }))).status).toBe("PUT_OK");
    expect((await r.store.putMessage(message(SCHEDULE_TOPIC, 0, "bad-qid", { DELAY: "1", REAL_TOPIC: "TopicA", REAL_QID: "x" }))).status).toBe(
      "PUT_OK",
    );
    await r.send("TopicA", 0, "good", { DELAY: "1" });
    r.clock.t = T0 + 1000;
    expect((await r.svc.runOnce()).delivered).toBe(3);
    expect(r.bodies("TopicA", 0)).toEqual(["good"]);
    expect(r.offsets.get(1)).toBe(3);
  });

  test("after a restart pending messages are delivered on time from delayOffset.json, delivered ones are not repeated", async () => {
    const r = rig();
    await r.send("TopicA", 0, "m0", { DELAY: "2" }); // due T0 + 5000
    r.clock.t = T0 + 2000;
    await r.send("TopicA", 0, "m1", { DELAY: "2" }); // due T0 + 7000
    await r.send("TopicA", 0, "m2", { DELAY: "2" });
    await r.runUntil(T0 + 6000);
    expect(r.bodies("TopicA", 0)).toEqual(["m0"]);
    await r.close();

    r.open();
    expect(r.offsets.get(2)).toBe(1);
    r.clock.t = T0 + 6900;
    expect((await r.svc.runOnce()).delivered).toBe(0);
    r.clock.t = T0 + 7000;
    expect((await r.svc.runOnce()).delivered).toBe(2);
    expect(r.bodies("TopicA", 0)).toEqual(["m0", "m1", "m2"]);
  });

  test("the ConsumeQueue tag codes (due times) are rebuilt the same by recovery dispatch", async () => {
    const r = rig();
    await r.send("TopicA", 0, "x", { DELAY: "4" });
    await r.send("TopicA", 0, "y", { __STARTDELIVERTIME: String(T0 + 12_345) });
    const before = [...r.read(SCHEDULE_TOPIC, 3), ...r.read(SCHEDULE_TOPIC, TIMER_QUEUE_ID)].map((m) => m.tagsCode);
    expect(before).toEqual([T0 + 30_000, T0 + 12_345]);
    await r.close();
    // Without the ConsumeQueues and checkpoint, recovery re-dispatches every record.
    rmSync(`${r.dir}/consumequeue`, { recursive: true });
    rmSync(`${r.dir}/checkpoint`);
    r.open();
    const after = [...r.read(SCHEDULE_TOPIC, 3), ...r.read(SCHEDULE_TOPIC, TIMER_QUEUE_ID)].map((m) => m.tagsCode);
    expect(after).toEqual(before);
  });
});

describe("delivery of timed messages (timer queue)", () => {
  test("out-of-order due times are delivered in due order, each at most 1 s late", async () => {
    const r = rig();
    const dues = [T0 + 3000, T0 + 1000, T0 + 2500, T0 + 1200, T0 + 60_000, T0 + 1000];
    const keys = ["__STARTDELIVERTIME", "TIMER_DELIVER_MS", "__STARTDELIVERTIME", "TIMER_DELIVER_MS", "__STARTDELIVERTIME", "__STARTDELIVERTIME"];
    for (const [i, due] of dues.entries()) await r.send("TopicA", 0, `t${i}`, { [keys[i]!]: String(due) });
    expect(r.read(SCHEDULE_TOPIC, TIMER_QUEUE_ID).map((m) => m.tagsCode)).toEqual(dues);

    const deliveredAt = new Map<string, number>();
    await r.runUntil(T0 + 10_000, 250, (at) => {
      for (const b of r.bodies("TopicA", 0)) if (!deliveredAt.has(b)) deliveredAt.set(b, at);
    });
    expect(r.bodies("TopicA", 0)).toEqual(["t1", "t5", "t3", "t2", "t0"]);
    for (const [b, at] of deliveredAt) {
      const due = dues[Number(b.slice(1))]!;
      expect({ b, late: at - due >= 0 && at - due <= 1000 }).toEqual({ b, late: true });
    }
    // Progress: t4 (queue offset 4, due in a minute) is the smallest undelivered offset.
    expect(r.offsets.get(TIMER_OFFSET_KEY)).toBe(4);
    expect(r.svc.pendingTimers).toBe(1);
    await r.runUntil(T0 + 60_000, 1000);
    expect(r.bodies("TopicA", 0).at(-1)).toBe("t4");
    expect(r.offsets.get(TIMER_OFFSET_KEY)).toBe(6);
  });

  test("relative TIMER_DELAY_SEC and the re-put properties", async () => {
    const r = rig();
    await r.send("TopicA", 0, "rel", { TIMER_DELAY_SEC: "2", TAGS: "t" });
    await r.runUntil(T0 + 1900);
    expect(r.bodies("TopicA", 0)).toEqual([]);
    await r.runUntil(T0 + 2000);
    const [m] = r.read("TopicA", 0);
    expect(m!.props).toEqual(Object.assign(Object.create(null), { TIMER_DELAY_SEC: "2", TAGS: "t" }));
    expect(r.wakes).toEqual([{ topic: "TopicA", queueId: 0, queueOffset: 0, tagsCode: tagsHashCode("t") }]);
  });

  test("a past deliver time is delivered at once (not parked)", async () => {
    const r = rig();
    await r.send("TopicA", 1, "now", { __STARTDELIVERTIME: String(T0 - 5000) });
    expect(r.bodies("TopicA", 1)).toEqual(["now"]);
    expect(r.read(SCHEDULE_TOPIC, TIMER_QUEUE_ID)).toEqual([]);
  });

  test("after a restart pending timers are delivered on time; those above the progress point may come again", async () => {
    const r = rig();
    await r.send("TopicA", 0, "late", { __STARTDELIVERTIME: String(T0 + 5000) }); // offset 0
    await r.send("TopicA", 0, "early", { __STARTDELIVERTIME: String(T0 + 1000) }); // offset 1
    await r.send("TopicA", 0, "later", { __STARTDELIVERTIME: String(T0 + 8000) }); // offset 2
    await r.runUntil(T0 + 2000);
    expect(r.bodies("TopicA", 0)).toEqual(["early"]);
    expect(r.offsets.get(TIMER_OFFSET_KEY)).toBe(0);
    await r.close();

    r.open();
    await r.runUntil(T0 + 4900);
    // At least once: "early" sits above the persisted progress (0), so it is delivered again.
    expect(r.bodies("TopicA", 0)).toEqual(["early", "early"]);
    await r.runUntil(T0 + 5000);
    expect(r.bodies("TopicA", 0)).toEqual(["early", "early", "late"]);
    expect(r.offsets.get(TIMER_OFFSET_KEY)).toBe(2);
    await r.close();

    r.open();
    await r.runUntil(T0 + 8000);
    expect(r.bodies("TopicA", 0)).toEqual(["early", "early", "late", "later"]);
    expect(r.offsets.get(TIMER_OFFSET_KEY)).toBe(3);
  });

  test("a heap limit pauses loading but loses nothing", async () => {
    const r = rig();
    await r.close();
    const levels = parseDelayLevels(DEFAULT_MESSAGE_DELAY_LEVEL) as number[];
    r.svc = new ScheduleMessageService({ levelDelaysMs: levels, now: r.clock.now, log, checkIntervalMs: 0, timerHeapMaxEntries: 2 });
    r.store = MessageStore.open(testStoreOptions(r.dir, { now: r.clock.now, tagsCodeFor: r.svc.tagsCodeFor }));
    r.offsets = new DelayOffsetManager({ dir: r.dir });
    r.ctx = { ...r.ctx, store: r.store, delayOffsets: r.offsets };
    r.svc.start(r.ctx);
    for (let i = 0; i < 5; i++) await r.send("TopicA", 0, `m${i}`, { TIMER_DELIVER_MS: String(T0 + 1000 + i) });
    await r.svc.runOnce();
    expect(r.svc.pendingTimers).toBe(2);
    await r.runUntil(T0 + 2000);
    expect(r.bodies("TopicA", 0)).toEqual(["m0", "m1", "m2", "m3", "m4"]);
  });
});

describe("roles and topic", () => {
  test("a slave stores delayed messages but never delivers them", async () => {
    const r = rig();
    await r.send("TopicA", 0, "x", { DELAY: "1" });
    await r.close();
    r.open(false, "SLAVE");
    r.clock.t = T0 + 60_000;
    expect(await r.svc.runOnce()).toEqual({ delivered: 0, more: false });
    expect(r.bodies("TopicA", 0)).toEqual([]);
    expect(r.read(SCHEDULE_TOPIC, 0).length).toBe(1);
  });

  test("ensureScheduleTopic widens SCHEDULE_TOPIC_XXXX to 19 queues and keeps a larger count", () => {
    const dir = tempStoreDir("schedule-topic-");
    try {
      const topics = new TopicConfigManager({ dir });
      topics.load();
      topics.ensureSystemTopics({ clusterName: "C", brokerName: "b", autoCreateTopicEnable: false, defaultTopicQueueNums: 4 });
      expect(topics.get(SCHEDULE_TOPIC)!.readQueueNums).toBe(18);
      const version = topics.dataVersion.counter;
      ensureScheduleTopic(topics);
      expect(topics.get(SCHEDULE_TOPIC)).toMatchObject({ readQueueNums: SCHEDULE_TOPIC_QUEUE_NUMS, writeQueueNums: 19, perm: 6 });
      expect(topics.dataVersion.counter).toBe(version + 1);
      ensureScheduleTopic(topics);
      expect(topics.dataVersion.counter).toBe(version + 1);
      topics.upsert({ ...topics.get(SCHEDULE_TOPIC)!, readQueueNums: 32, writeQueueNums: 32 });
      ensureScheduleTopic(topics);
      expect(topics.get(SCHEDULE_TOPIC)!.readQueueNums).toBe(32);
      // Persisted: a reload sees the widened topic.
      const again = new TopicConfigManager({ dir });
      again.load();
      expect(again.get(SCHEDULE_TOPIC)!.readQueueNums).toBe(32);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the service refuses bad options (a bug in the caller)", () => {
    expect(() => new ScheduleMessageService({ levelDelaysMs: [], log })).toThrow();
    expect(() => new ScheduleMessageService({ levelDelaysMs: Array(19).fill(1000), log })).toThrow();
    expect(() => new ScheduleMessageService({ levelDelaysMs: [1000], log, checkIntervalMs: 500 })).toThrow();
  });
});
