/**
 * The load and the kill loop of bench/failover, the same code for every system it compares (a
 * system is a `FailoverRig`: one broker group of replicas behind one name server).
 *
 * Load: rocketbun/client producing steadily (4 sends in flight, a key each, 2 s send timeout, 2
 * retries) and a push consumer consuming. A send counts as acknowledged only when the broker
 * answered SEND_OK: FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE mean the replicas did not confirm
 * it, which is not what a failover has to restore.
 *
 * Schedule, `kills` times: wait until the group is healthy (the rig says what that is: a
 * writable master and every replica up and in its sync state set), wait `settleMs` more, wait
 * until sends flow, kill -9 the current master, measure
 *   - kill → the first SEND_OK of a send started after the master died (to this, the only
 *     group: the new master),
 *   - kill → the first receipt of such a message,
 * then restart the killed replica on its store. At the end every acknowledged message must have
 * been received (counted, not asserted: the report prints it).
 *
 * Times are taken when the ack or the message arrives, not when a poll notices it: the window of
 * one kill holds the keys of the sends started after it, so nothing scans all the keys.
 */
import { Producer, PushConsumer } from "../../src/client/index.ts";

const { waitFor } = await import("../../test/harness/binary.ts");

/** One replica of the group: a process the rig can kill -9 and start again on its store. */
export interface Member {
  readonly name: string;
  readonly running: boolean;
  kill(): Promise<void>;
  start(): Promise<void>;
}

export interface GroupState {
  /** The member that is master now (as the system's coordinator and the member itself say). */
  master: Member | undefined;
  /** A master and every member running and in the sync state set. */
  healthy: boolean;
}

export interface FailoverRig extends AsyncDisposable {
  /** Names the system and its configuration in the report. */
  readonly label: string;
  readonly namesrv: string;
  state(): Promise<GroupState>;
  /** Creates the topic on the group and waits until the name server routes it. */
  createTopic(topic: string): Promise<void>;
  /** The processes' last output, for a failure message. */
  diag(): string;
}

export interface Schedule {
  kills: number;
  /** After the group is healthy, before the kill. */
  settleMs: number;
  /** How long a restarted replica may take to bring the group back to healthy. */
  healthyTimeoutMs: number;
}

export interface FailoverResult {
  label: string;
  sendGaps: number[];
  recvGaps: number[];
  acked: number;
  lost: number;
  /** Sends that threw (the loop retries them). */
  failures: number;
  /** Sends answered with a status other than SEND_OK. */
  notOk: number;
}

const TOPIC = "FailoverBench";
const SENDS_IN_FLIGHT = 4;

/** The sends and receipts of one kill: keys of the sends started after the master died. */
interface Window {
  deadAt: number;
  started: Set<string>;
  receivedAt: Map<string, number>;
  firstAck?: number;
  firstRecv?: number;
}

class Load {
  readonly acked = new Set<string>();
  readonly received = new Set<string>();
  failures = 0;
  notOk = 0;
  #window: Window | null = null;
  #seq = 0;
  #running = true;
  #senders: Promise<void>[] = [];

  private constructor(
    private readonly producer: Producer,
    private readonly consumer: PushConsumer,
  ) {}

  static async start(namesrv: string): Promise<Load> {
    const producer = new Producer({ namesrv, group: "bench-fo-producer", sendTimeoutMs: 2000, retryTimesWhenSendFailed: 2 });
    const consumer = new PushConsumer({ namesrv, group: "bench-fo-consumer", fromWhere: "first" });
    const load = new Load(producer, consumer);
    consumer.subscribe(TOPIC, "*", (m) => load.#onMessage(m.keys[0]));
    await producer.start();
    await consumer.start();
    load.#senders = Array.from({ length: SENDS_IN_FLIGHT }, () => load.#sendLoop());
    return load;
  }

  /** Starts counting for a kill: only sends started after `deadAt` count. */
  open(deadAt: number): Window {
    this.#window = { deadAt, started: new Set(), receivedAt: new Map() };
    return this.#window;
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#senders);
  }

  async shutdown(): Promise<void> {
    await this.consumer.shutdown();
    await this.producer.shutdown();
  }

  async #sendLoop(): Promise<void> {
    while (this.#running) {
      const key = `k${this.#seq++}`;
      const w = this.#window;
      if (w && Date.now() > w.deadAt) w.started.add(key);
      try {
        const r = await this.producer.send({ topic: TOPIC, body: `failover bench ${key}`, keys: key });
        if (r.status !== "SEND_OK") {
          this.notOk++;
          continue;
        }
        this.acked.add(key);
        if (w?.started.has(key)) {
          w.firstAck ??= Date.now();
          const at = w.receivedAt.get(key);
          if (at !== undefined) w.firstRecv = Math.min(w.firstRecv ?? Infinity, at);
        }
      } catch {
        this.failures++;
        await Bun.sleep(50);
      }
    }
  }

  #onMessage(key: string | undefined): void {
    if (key === undefined) return;
    this.received.add(key);
    const w = this.#window;
    if (!w?.started.has(key) || w.receivedAt.has(key)) return;
    const now = Date.now();
    w.receivedAt.set(key, now);
    // Only a message whose send was acknowledged counts; if its ack is still on the way, the ack records it.
    if (this.acked.has(key)) w.firstRecv = Math.min(w.firstRecv ?? Infinity, now);
  }
}

/** Creates the topic, runs the load and the kills on `rig`, and returns the gaps. */
export async function measureFailover(rig: FailoverRig, s: Schedule, log: (line: string) => void): Promise<FailoverResult> {
  await rig.createTopic(TOPIC);
  const load = await Load.start(rig.namesrv);
  const sendGaps: number[] = [];
  const recvGaps: number[] = [];
  const missing = new Set<string>();
  try {
    try {
      for (let k = 0; k < s.kills; k++) {
        const { name, send, recv } = await killOnce(rig, load, s);
        sendGaps.push(send);
        recvGaps.push(recv);
        log(`${rig.label} kill ${k + 1}: ${name} → send after ${send} ms, receive after ${recv} ms`);
      }
    } finally {
      await load.stop();
    }
    // The acknowledged keys not received yet, shrinking as they arrive (no rescan of all keys each poll).
    for (const key of load.acked) if (!load.received.has(key)) missing.add(key);
    const settled = () => {
      for (const key of missing) if (load.received.has(key)) missing.delete(key);
      return missing.size === 0;
    };
    await waitFor(settled, 60_000, "every acknowledged message to be received").catch(() => undefined);
  } finally {
    await load.shutdown();
  }
  return { label: rig.label, sendGaps, recvGaps, acked: load.acked.size, lost: missing.size, failures: load.failures, notOk: load.notOk };
}

async function killOnce(rig: FailoverRig, load: Load, s: Schedule): Promise<{ name: string; send: number; recv: number }> {
  const diag = (what: string) => () => `${what} (${rig.label})\n${rig.diag()}`;
  const { master } = await waitFor(
    async () => {
      const st = await rig.state();
      return st.healthy && st.master ? st : null;
    },
    s.healthyTimeoutMs,
    diag("a healthy group"),
  );
  await Bun.sleep(s.settleMs);
  const before = load.acked.size;
  await waitFor(() => load.acked.size > before + 10, 30_000, diag("sends to flow"));
  const killedAt = Date.now();
  await master!.kill();
  // Only sends started once the master is gone count: an ack it sent just before it died would not
  // say anything about the new one. The gaps are still measured from the kill.
  const w = load.open(Date.now());
  const firstAck = await waitFor(() => w.firstAck, 120_000, diag("a send started after the kill to be acknowledged"));
  const firstRecv = await waitFor(() => w.firstRecv, 120_000, diag("a message sent after the kill to be received"));
  await master!.start();
  return { name: master!.name, send: firstAck - killedAt, recv: firstRecv - killedAt };
}
