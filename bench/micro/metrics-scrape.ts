/**
 * GET /metrics cost with many queues: an in-process broker (src/broker/test-support.ts: in-memory
 * sockets, a temp store dir) with `--topics` × `--queues` queues (default 1250 × 8 = 10,000), a
 * message in every queue, and `--groups` consumer groups that each committed offsets on every
 * queue of `--topics-per-group` topics, half of them one message behind (a backlog to compute).
 * Then `--scrapes` scrapes through the admin app, timed two ways: BrokerInfo.metrics() alone (the
 * state, O(topics + groups + queues)) and the whole response (state, text, process metrics).
 *
 *   npx bun bench/micro/metrics-scrape.ts [--topics 1250] [--queues 8] [--groups 20]
 *        [--topics-per-group 63] [--scrapes 20]
 *
 * The budget is 50 ms per scrape at 10,000 queues. Not a test: nothing is asserted.
 */
import { createTopicRequest, InProcessBroker, sendV2Request } from "../../src/broker/test-support.ts";
import { buildAdminApp } from "../../src/admin/index.ts";
import { createRequest, RequestCode } from "../../src/remoting/index.ts";

interface Opts {
  topics: number;
  queues: number;
  groups: number;
  topicsPerGroup: number;
  scrapes: number;
}

function parse(argv: string[]): Opts {
  const o: Opts = { topics: 1250, queues: 8, groups: 20, topicsPerGroup: 63, scrapes: 20 };
  for (let i = 0; i < argv.length; i += 2) {
    const v = Number(argv[i + 1]);
    if (argv[i] === "--topics") o.topics = v;
    else if (argv[i] === "--queues") o.queues = v;
    else if (argv[i] === "--groups") o.groups = v;
    else if (argv[i] === "--topics-per-group") o.topicsPerGroup = v;
    else if (argv[i] === "--scrapes") o.scrapes = v;
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

/** Runs `jobs` with at most `width` in flight. */
async function inFlight(jobs: (() => Promise<unknown>)[], width = 256): Promise<void> {
  for (let i = 0; i < jobs.length; i += width) await Promise.all(jobs.slice(i, i + width).map((j) => j()));
}

async function populate(b: InProcessBroker, o: Opts): Promise<void> {
  const topic = (t: number) => `MetricsBench_${t}`;
  await inFlight(Array.from({ length: o.topics }, (_, t) => () => b.ok(createTopicRequest(topic(t), o.queues))));
  const sends: (() => Promise<unknown>)[] = [];
  for (let t = 0; t < o.topics; t++) for (let q = 0; q < o.queues; q++) sends.push(() => b.ok(sendV2Request(topic(t), "m", { queueId: q })));
  await inFlight(sends);
  const commits: (() => Promise<unknown>)[] = [];
  for (let g = 0; g < o.groups; g++) {
    for (let k = 0; k < o.topicsPerGroup; k++) {
      const t = topic((g * o.topicsPerGroup + k) % o.topics);
      for (let q = 0; q < o.queues; q++) {
        const ext = { consumerGroup: `MetricsBenchGroup_${g}`, topic: t, queueId: String(q), commitOffset: String(q % 2) };
        commits.push(() => b.ok(createRequest(RequestCode.UPDATE_CONSUMER_OFFSET, ext)));
      }
    }
  }
  await inFlight(commits);
}

function summary(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!.toFixed(2);
  return `p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${s.at(-1)!.toFixed(2)} ms`;
}

async function main(): Promise<void> {
  const o = parse(process.argv.slice(2));
  await using b = InProcessBroker.start();
  const t0 = performance.now();
  await populate(b, o);
  const info = b.controller.info;
  const app = buildAdminApp({ role: "master", version: "bench", startedAt: Date.now(), broker: info });
  process.stdout.write(
    `${o.topics * o.queues} queues, ${o.groups} groups × ${o.topicsPerGroup} topics; set up in ${(performance.now() - t0).toFixed(0)} ms\n`,
  );
  const state: number[] = [];
  const whole: number[] = [];
  let bytes = 0;
  for (let i = 0; i < o.scrapes; i++) {
    let t = performance.now();
    info.metrics();
    state.push(performance.now() - t);
    t = performance.now();
    const text = await (await app.request("/metrics")).text();
    whole.push(performance.now() - t);
    bytes = text.length;
  }
  process.stdout.write(`BrokerInfo.metrics(): ${summary(state)}\nGET /metrics:         ${summary(whole)} (${bytes} bytes)\n`);
}

await main();
