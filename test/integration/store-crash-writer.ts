/**
 * The child of store-crash.test.ts: a write storm against a MessageStore that runs until the
 * parent SIGKILLs it.
 *
 *   bun test/integration/store-crash-writer.ts <dir> <ASYNC_FLUSH|SYNC_FLUSH> <startSeq>
 *
 * stdout protocol (one line each; the parent only trusts complete lines):
 *   ready <recovery report JSON>   once, after MessageStore.open returned; the storm starts next
 *   ack <seq>                      written only after the put carrying <seq> resolved PUT_OK
 * Anything unexpected goes to stderr and ends the process — exit 1 when open or a put throws,
 * exit 3 when a put is refused (any status but PUT_OK) — which the parent reports as a failure
 * (it expects to end the process itself, with SIGKILL).
 *
 * Every message carries property SEQ=<n> (a global sequence, unique across all rounds: the
 * parent passes the next one as <startSeq>) and the body crashBody(n), so the parent can check
 * the content of whatever it finds after a crash without knowing what was sent.
 */
import type { FlushDiskType } from "../../src/protocol/broker-config.ts";
import { MessageStore, type MessageStoreOptions, type PutMessageRequest } from "../../src/commitlog/message-store.ts";
import { message, testStoreOptions } from "../../src/commitlog/test-support.ts";

export const CRASH_TOPICS = ["CrashTopicA", "CrashTopicB", "CrashTopicC"] as const;
export const CRASH_QUEUES = 4;
export const SEQ_PROPERTY = "SEQ";
export const BODY_BYTES_MIN = 50;
export const BODY_BYTES_MAX = 3000;
/** Puts in flight at once. */
const LOOPS = 16;
/** Each loop yields to the event loop after this many puts, so timers (flush, checkpoint) and stdout run. */
const PUTS_PER_YIELD = 4;
/** Buffered ack bytes that trigger an immediate write to stdout (otherwise every few ms). */
const ACK_FLUSH_BYTES = 8 * 1024;
const ACK_FLUSH_INTERVAL_MS = 2;

/** Small segments and ConsumeQueue files: a storm of a few hundred ms crosses many rollovers. */
export function crashStoreOptions(dir: string, flushDiskType: FlushDiskType): MessageStoreOptions {
  return testStoreOptions(dir, { flushDiskType, segmentBytes: 256 * 1024, consumeQueueUnitsPerFile: 64 });
}

/** A 32-bit mix of the seq (murmur3 finaliser): drives body length and content. */
function mix(seq: number): number {
  let h = (seq ^ 0x9e3779b9) >>> 0;
  h ^= Math.floor(seq / 2 ** 32);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

export function crashBodyLength(seq: number): number {
  return BODY_BYTES_MIN + (mix(seq) % (BODY_BYTES_MAX - BODY_BYTES_MIN + 1));
}

/**
 * The body of message `seq`: its decimal seq and ':' (readable in a hex dump), then an xorshift32
 * stream seeded from the seq. Writes into `out` if given (must be crashBodyLength(seq) long).
 */
export function crashBody(seq: number, out?: Uint8Array): Uint8Array {
  const len = crashBodyLength(seq);
  const b = out ?? new Uint8Array(len);
  const head = `${seq}:`;
  let i = 0;
  for (; i < head.length && i < len; i++) b[i] = head.charCodeAt(i);
  let x = mix(seq) | 1;
  for (; i < len; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
    if (i + 1 < len) b[i + 1] = (x >>> 8) & 0xff;
    if (i + 2 < len) b[i + 2] = (x >>> 16) & 0xff;
    if (i + 3 < len) b[i + 3] = (x >>> 24) & 0xff;
  }
  return b;
}

async function main(argv: string[]): Promise<void> {
  const [dir, mode, startArg] = argv;
  if (!dir || (mode !== "ASYNC_FLUSH" && mode !== "SYNC_FLUSH") || !startArg || !/^\d+$/.test(startArg)) {
    process.stderr.write("usage: store-crash-writer.ts <dir> <ASYNC_FLUSH|SYNC_FLUSH> <startSeq>\n");
    process.exit(2);
  }
  const store = MessageStore.open(crashStoreOptions(dir, mode));
  process.stdout.write(`ready ${JSON.stringify(store.recovery)}\n`);

  let nextSeq = Number(startArg);
  let pending = "";
  const flushAcks = (): void => {
    if (pending.length === 0) return;
    process.stdout.write(pending);
    pending = "";
  };
  setInterval(flushAcks, ACK_FLUSH_INTERVAL_MS);

  const loop = async (id: number): Promise<void> => {
    // Topic/queue/batch choice only needs variety, not replay: the parent checks content by SEQ.
    for (let n = id; ; n++) {
      const topic = CRASH_TOPICS[(n * 7 + id) % CRASH_TOPICS.length]!;
      const queueId = (n * 5 + id * 3) % CRASH_QUEUES;
      const batch = Math.random() < 0.5 ? 1 : 2 + Math.floor(Math.random() * 4);
      const seqs: number[] = [];
      const reqs: PutMessageRequest[] = [];
      for (let k = 0; k < batch; k++) {
        const seq = nextSeq++;
        seqs.push(seq);
        reqs.push(message(topic, queueId, crashBody(seq), { [SEQ_PROPERTY]: String(seq), UNIQ_KEY: `CRASH${seq}` }));
      }
      const res = batch === 1 ? await store.putMessage(reqs[0]!) : await store.putMessages(reqs);
      if (res.status === "PUT_OK") {
        for (const s of seqs) pending += `ack ${s}\n`;
        if (pending.length >= ACK_FLUSH_BYTES) flushAcks();
      } else {
        // A SIGKILL must never leave the store refusing writes: stop, so the parent reports it.
        flushAcks();
        process.stderr.write(`put of seqs ${seqs.join(",")} to ${topic}/${queueId} refused: ${res.status} ${res.remark ?? ""}\n`);
        process.exit(3);
      }
      if (n % PUTS_PER_YIELD === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    }
  };
  await Promise.all(Array.from({ length: LOOPS }, (_, i) => loop(i)));
}

if (import.meta.main) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`store-crash-writer failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
