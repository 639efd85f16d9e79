/**
 * The abuser of bench/abuse/consumers.ts, in its own process so its sockets and CPU are not the
 * measured consumer's: `bun bench/abuse/consumer-abuse.ts MODE HOST:PORT TOPIC N QUEUES CONNECTIONS`,
 * runs until stdin closes, prints one JSON line of counters every second. The consumers are
 * test/harness/consumers.ts's.
 *
 *   dead    N consumers each sending 5,000 PULL_MESSAGE for TOPIC's queue 0 (a backlog of QUEUES
 *           messages) and never reading; each the broker closes is replaced by a new one, so N
 *           stay dead for as long as the phase lasts
 *   parked  N long polls (15 s hold) over CONNECTIONS connections on TOPIC's QUEUES empty queues,
 *           each parked again as soon as it is answered
 *   group   N members of one consumer group over CONNECTIONS connections on TOPIC (QUEUES queues)
 *           join; once the group settled (every member's list is the whole group and every queue
 *           has one owner) the time is printed, then one member leaves and rejoins every second,
 *           each settle timed again
 */
import { DeadConsumer, GroupMembers, ownershipProblems, PollLoop } from "../../test/harness/consumers.ts";

const [mode = "", addr = "", topic = "", nArg = "0", queuesArg = "1", connArg = "1"] = process.argv.slice(2);
const n = Number(nArg);
const queues = Number(queuesArg);
const connections = Number(connArg);
let counters: () => Record<string, number | boolean> = () => ({});
const closers: (() => Promise<void> | void)[] = [];

/** Keeps `n` dead consumers: each one the broker closes is replaced by a new one. */
async function dead(): Promise<void> {
  let stopping = false;
  const live = new Set<DeadConsumer>();
  let closedByServer = 0;
  let sentBytes = 0;
  closers.push(() => {
    stopping = true;
    for (const d of live) d.close();
  });
  counters = () => ({ open: live.size, closedByServer, sentBytes: sentBytes + [...live].reduce((a, d) => a + d.sentBytes, 0) });
  const one = async () => {
    while (!stopping) {
      const d = await DeadConsumer.open(addr).catch(() => undefined);
      if (!d) {
        await Bun.sleep(100);
        continue;
      }
      live.add(d);
      d.sendPulls({ group: "bench_dead_consumer", topic, queueId: 0, offset: 0, maxMsgNums: 32 }, 5000, queues);
      while (!d.closed && !stopping) await Bun.sleep(50);
      live.delete(d);
      sentBytes += d.sentBytes;
      if (!stopping) closedByServer++;
    }
  };
  // One look at the kernel's sockets a second for all of them.
  const check = setInterval(() => DeadConsumer.checkClosed([...live]), 1000);
  closers.push(() => clearInterval(check));
  await Promise.all(Array.from({ length: n }, one));
}

function parked(): void {
  const loop = new PollLoop(connections);
  closers.push(() => loop.close());
  counters = () => ({ ...loop.counts });
  loop.start(addr, n, { group: "bench_parked", topic, queues, suspendMs: 15_000 });
}

/** Until every member refreshed its list after `since` and the queues have one owner each. */
async function settle(g: GroupMembers, since: number): Promise<number> {
  const live = () => g.live().map((i) => g.ids[i]!);
  while (!(g.refreshedSince(since) && ownershipProblems(g.views(), live(), queues).length === 0)) await Bun.sleep(5);
  return performance.now() - since;
}

async function group(): Promise<void> {
  const g = new GroupMembers(addr, "bench_group", topic, queues, n, connections);
  closers.push(() => g.close());
  const times: number[] = [];
  let joined = false;
  counters = () => ({
    joined,
    notices: g.totalNotified,
    listRequests: g.listRequests,
    joinSettleMs: Math.round(times[0] ?? -1),
    churnSettles: Math.max(0, times.length - 1),
    churnSettleMaxMs: Math.round(Math.max(-1, ...times.slice(1))),
  });
  const t0 = performance.now();
  await g.join();
  await settle(g, t0);
  joined = true;
  times.push(performance.now() - t0);
  for (let k = 0; ; k = (k + 1) % n) {
    await Bun.sleep(1000);
    const t = performance.now();
    await g.leave([k]);
    const back = performance.now();
    await g.rejoin([k]);
    await settle(g, back);
    times.push(performance.now() - t);
  }
}

setInterval(() => process.stdout.write(JSON.stringify({ mode, ...counters() }) + "\n"), 1000);
if (mode === "dead") void dead();
else if (mode === "parked") parked();
else if (mode === "group") void group();
else throw new Error(`unknown mode ${mode}`);
void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // Only the end of stdin matters.
  }
  for (const c of closers) await c();
  process.exit(0);
})();
