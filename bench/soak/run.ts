/**
 * Soak (issue #18 item 6): a name server, a master and a slave (the compiled binary, 64 MiB
 * CommitLog segments, retention deleting every segment but the last at every check) under mixed
 * load for `--minutes` (default 30):
 *
 *   - rocketbun/client producing 1 KiB bodies at `--rate` msgs/s (default 25,000: half of W1 on
 *     this machine), keys on every message, one in 100 delayed (levels 1–3);
 *   - a push consumer group consuming everything;
 *   - a transactional producer: 20 half messages a second, committed, rolled back, or left
 *     UNKNOWN for the broker's check-back (which commits them);
 *   - the slave replicating throughout.
 *
 * Every 10 s: the master's RSS, heap, event-loop lag, open fds and connections (GET /metrics on
 * its admin port), the slave's replication lag, the producer's ack p99 over the last 10 s, and the
 * consume rate. Written to bench/results/soak-<time>.json and a self-contained chart
 * (bench/results/soak-<time>.html, inline SVG, no script). The test of success: memory flat (the
 * mean RSS of the last third within 10 % of the middle third's) and no growth in p99 (the last
 * third's median within 1.5× of the middle third's). Not a test: the verdict is printed.
 *
 *   npx bun bench/soak/run.ts [--minutes 30] [--rate 25000] [--binary FILE]
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Producer, PushConsumer, TransactionProducer, type TransactionState } from "../../src/client/index.ts";

interface Args {
  minutes: number;
  rate: number;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { minutes: 30, rate: 25_000 };
  for (let i = 0; i < argv.length; i += 2) {
    const v = argv[i + 1] ?? "";
    if (argv[i] === "--minutes") a.minutes = Number(v);
    else if (argv[i] === "--rate") a.rate = Number(v);
    else if (argv[i] === "--binary") process.env.ROCKETBUN_BINARY = v;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return a;
}

// The arguments first: `--binary` must be in the environment before test/harness/binary.ts loads.
const args = parseArgs(process.argv.slice(2));
const { brokerYaml, HaCluster } = await import("../../test/harness/ha-cluster.ts");
const { PROJECT } = await import("../lib/cluster.ts");

const SAMPLE_MS = 10_000;
const TOPIC = "soak";
const TX_TOPIC = "soak-tx";
const EVERY_HOUR = Array.from({ length: 24 }, (_, h) => String(h).padStart(2, "0")).join(";");

interface Sample {
  t_s: number;
  rss_mib: number;
  heap_used_mib: number;
  eventloop_lag_max_ms: number;
  open_fds: number;
  connections: number;
  slave_lag_bytes: number;
  sent_per_s: number;
  consumed_per_s: number;
  ack_p99_ms: number;
  send_failures: number;
  tx_sent: number;
  tx_unknown: number;
  checkbacks: number;
  /** CommitLog bytes retention had deleted by then (its min offset). */
  commitlog_deleted_mib: number;
}

const log = (msg: string) => process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** The value of an unlabelled metric (or the sum over its labels) in Prometheus text. */
function metric(text: string, name: string): number {
  let sum = 0;
  let found = false;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || (line[name.length] !== " " && line[name.length] !== "{")) continue;
    const v = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (Number.isFinite(v)) {
      sum += v;
      found = true;
    }
  }
  return found ? sum : Number.NaN;
}

function p99(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.99) - 1)]!;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const round = (v: number, d = 1) => Math.round(v * 10 ** d) / 10 ** d;

/** One inline SVG line chart per series. */
function chart(samples: Sample[], key: keyof Sample, title: string): string {
  const w = 640;
  const h = 160;
  const xs = samples.map((s) => s.t_s);
  const ys = samples.map((s) => Number(s[key]));
  const xMax = Math.max(1, ...xs);
  const yMax = Math.max(1e-9, ...ys) * 1.1;
  const pts = samples.map((s, i) => `${round((xs[i]! / xMax) * (w - 50) + 45)},${round(h - 20 - (ys[i]! / yMax) * (h - 35))}`).join(" ");
  return (
    `<figure><figcaption>${title} (max ${round(Math.max(...ys), 2)})</figcaption>` +
    `<svg width="${w}" height="${h}" xmlns="http://www.w3.org/2000/svg">` +
    `<line x1="45" y1="${h - 20}" x2="${w - 5}" y2="${h - 20}" stroke="#999"/><line x1="45" y1="10" x2="45" y2="${h - 20}" stroke="#999"/>` +
    `<text x="2" y="18" font-size="10">${round(yMax, 1)}</text><text x="2" y="${h - 22}" font-size="10">0</text>` +
    `<text x="${w - 60}" y="${h - 5}" font-size="10">${xMax} s</text>` +
    `<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="${pts}"/></svg></figure>`
  );
}

async function main(): Promise<void> {
  const yaml = brokerYaml({
    // 64 MiB segments fill in ~2.5 s here; a retention pass every second deletes every one but
    // the last (every 10 s, RocketMQ's default, fell behind 16 MiB ones: a pass deletes at most 10).
    // A half message lives until its segment is deleted, 0.5–3 s: the check-back is due 0.5 s
    // after the send and the check runs every 0.5 s, so most UNKNOWN ones are checked back (with
    // 16 MiB segments and a 3 s timeout almost none were).
    store: { commitLogSegmentBytes: 64 * 1024 * 1024, fileReservedTimeHours: 0, deleteWhen: EVERY_HOUR, deleteCommitLogFilesIntervalMs: 1_000 },
    broker: { transactionTimeOutMs: 500, transactionCheckIntervalMs: 500, messageDelayLevel: "1s 2s 3s 5s" },
  });
  const c = await HaCluster.start({ groups: [{ name: "broker-soak", role: "ASYNC_MASTER", slaves: 1, masterYaml: yaml, slaveYaml: yaml }] });
  const ns = c.namesrvs[0]!.addr;
  try {
    await c.createTopic(TOPIC, 8);
    await c.createTopic(TX_TOPIC, 4);
    const producer = new Producer({ namesrv: ns, group: "soak-producer", sendTimeoutMs: 10_000, maxInFlight: 4096 });
    await producer.start();
    let checkbacks = 0;
    const tx = new TransactionProducer({
      namesrv: ns,
      group: "soak-tx",
      checkListener: () => {
        checkbacks++;
        return "COMMIT";
      },
    });
    await tx.start();
    let consumed = 0;
    const consumer = new PushConsumer({ namesrv: ns, group: "soak-consumer", fromWhere: "first" });
    consumer.subscribe(TOPIC, "*", () => {
      consumed++;
    });
    consumer.subscribe(TX_TOPIC, "*", () => {
      consumed++;
    });
    await consumer.start();

    const body = Buffer.alloc(1024, 7);
    const deadline = Date.now() + args.minutes * 60_000;
    const lat: number[] = [];
    let sent = 0;
    let failures = 0;
    let txSent = 0;
    let txUnknown = 0;
    let running = true;
    // Producer: paced, `rate` a second off a 10 ms tick.
    const produce = (async () => {
      const t0 = performance.now();
      let i = 0;
      while (running) {
        const due = Math.floor(((performance.now() - t0) * args.rate) / 1000);
        for (; i < due; i++) {
          const start = performance.now();
          const delayLevel = i % 100 === 0 ? 1 + (i % 3) : undefined;
          producer.send({ topic: TOPIC, body, keys: `k${i}`, ...(delayLevel ? { delayLevel } : {}) }).then(
            () => {
              sent++;
              lat.push(performance.now() - start);
            },
            () => failures++,
          );
        }
        await Bun.sleep(10);
      }
    })();
    const states: TransactionState[] = ["COMMIT", "ROLLBACK", "UNKNOWN"];
    const transact = (async () => {
      let j = 0;
      while (running) {
        const state = states[j % 3]!;
        j++;
        await tx.sendMessageInTransaction({ topic: TX_TOPIC, body: `tx-${j}`, keys: `tx${j}` }, () => state).then(
          () => {
            txSent++;
            if (state === "UNKNOWN") txUnknown++;
          },
          () => failures++,
        );
        await Bun.sleep(50);
      }
    })();

    const samples: Sample[] = [];
    const minOffset0 = metric(await (await fetch(`${c.master().proc.adminUrl}/metrics`)).text(), "rocketmq_brokeruntime_commitlog_minoffset");
    const t0 = Date.now();
    let lastSent = 0;
    let lastConsumed = 0;
    while (Date.now() < deadline) {
      await Bun.sleep(SAMPLE_MS);
      const metrics = await (await fetch(`${c.master().proc.adminUrl}/metrics`)).text();
      // The master's view: how far behind its slave's acknowledgement is.
      const ha = await c.master().admin<{ slaves?: { lagBytes: number }[] }>("/ha").catch(() => ({}) as { slaves?: { lagBytes: number }[] });
      const window = lat.splice(0);
      const s: Sample = {
        t_s: Math.round((Date.now() - t0) / 1000),
        rss_mib: round(metric(metrics, "process_resident_memory_bytes") / 2 ** 20),
        heap_used_mib: round(metric(metrics, "nodejs_heap_size_used_bytes") / 2 ** 20),
        eventloop_lag_max_ms: round((metric(metrics, "nodejs_eventloop_lag_max_seconds") || 0) * 1000, 2),
        open_fds: metric(metrics, "process_open_fds"),
        connections: metric(metrics, "rocketbun_remoting_connections"),
        slave_lag_bytes: ha.slaves?.[0]?.lagBytes ?? -1,
        sent_per_s: Math.round(((sent - lastSent) * 1000) / SAMPLE_MS),
        consumed_per_s: Math.round(((consumed - lastConsumed) * 1000) / SAMPLE_MS),
        ack_p99_ms: round(p99(window), 2),
        send_failures: failures,
        tx_sent: txSent,
        tx_unknown: txUnknown,
        checkbacks,
        commitlog_deleted_mib: round((metric(metrics, "rocketmq_brokeruntime_commitlog_minoffset") - minOffset0) / 2 ** 20),
      };
      lastSent = sent;
      lastConsumed = consumed;
      samples.push(s);
      log(JSON.stringify(s));
    }
    running = false;
    await Promise.all([produce, transact]);
    await Promise.all([producer.shutdown(), tx.shutdown(), consumer.shutdown()]);

    const third = Math.max(1, Math.floor(samples.length / 3));
    const middle = samples.slice(third, 2 * third);
    const last = samples.slice(2 * third);
    const rssMid = mean(middle.map((s) => s.rss_mib));
    const rssLast = mean(last.map((s) => s.rss_mib));
    const p99Mid = median(middle.map((s) => s.ack_p99_ms));
    const p99Last = median(last.map((s) => s.ack_p99_ms));
    // The tail: each window whose event-loop lag passed 500 ms, beside what changed in it (a heap
    // that fell is a major collection; retention's deletions), to tell a collector's pause from
    // the store's work.
    const tail = samples.flatMap((s, i) => {
      if (s.eventloop_lag_max_ms <= 500) return [];
      const prev = samples[i - 1];
      return [
        {
          t_s: s.t_s,
          lag_ms: s.eventloop_lag_max_ms,
          ack_p99_ms: s.ack_p99_ms,
          heap_change_mib: round(s.heap_used_mib - (prev?.heap_used_mib ?? s.heap_used_mib)),
          rss_mib: s.rss_mib,
          deleted_mib: round(s.commitlog_deleted_mib - (prev?.commitlog_deleted_mib ?? 0)),
        },
      ];
    });
    const lastSample = samples.at(-1);
    const verdict = {
      rss_mid_mib: round(rssMid),
      rss_last_mib: round(rssLast),
      memory_flat: rssLast <= rssMid * 1.1,
      p99_mid_ms: p99Mid,
      p99_last_ms: p99Last,
      p99_flat: p99Last <= p99Mid * 1.5,
      lag_over_500ms_samples: tail.length,
      tx_unknown: lastSample?.tx_unknown ?? 0,
      checkbacks: lastSample?.checkbacks ?? 0,
    };
    const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
    const dir = join(PROJECT, "bench/results");
    mkdirSync(dir, { recursive: true });
    const out = { at: new Date().toISOString(), args, verdict, tail, samples };
    writeFileSync(join(dir, `soak-${stamp}.json`), JSON.stringify(out, null, 2) + "\n");
    const series: [keyof Sample, string][] = [
      ["rss_mib", "master RSS (MiB)"],
      ["heap_used_mib", "master heap used (MiB)"],
      ["eventloop_lag_max_ms", "event-loop lag max (ms)"],
      ["open_fds", "open fds"],
      ["ack_p99_ms", "producer ack p99 (ms, per 10 s)"],
      ["sent_per_s", "sent msgs/s"],
      ["consumed_per_s", "consumed msgs/s"],
      ["slave_lag_bytes", "slave lag (bytes)"],
    ];
    const html =
      `<!doctype html><meta charset="utf-8"><title>RocketBun soak ${stamp}</title><body style="font-family:sans-serif">` +
      `<h1>Soak ${args.minutes} min at ${args.rate} msgs/s</h1><pre>${JSON.stringify(verdict, null, 2)}</pre>` +
      series.map(([k, t]) => chart(samples, k, t)).join("") +
      "</body>";
    writeFileSync(join(dir, `soak-${stamp}.html`), html);
    for (const t of tail) process.stdout.write(`lag over 500 ms: ${JSON.stringify(t)}\n`);
    process.stdout.write(`${JSON.stringify(verdict)}\nresults: bench/results/soak-${stamp}.json and .html\n`);
  } finally {
    await c[Symbol.asyncDispose]();
  }
}

await main();
