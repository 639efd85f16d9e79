/**
 * Issue #18 item 2, the seeded short run: every port of the compiled binary fuzzed with
 * structure-aware and garbage input (test/harness/fuzz-campaign.ts), then checked:
 *   - the processes live, answer /health, and serve a real send and pull with rocketbun/client;
 *   - RSS: the second half of the campaign grows it by less than RSS_SECOND_HALF_MAX_KIB (memory
 *     that keeps growing with input is a leak; the first half pays for warm-up and pools);
 *   - the sentinel topic and group (never named by the campaign) are byte-for-byte unchanged:
 *     stored records, max and committed offsets, their entries in topics.json and consumerOffset.json;
 *   - every malformed frame was answered or its connection closed, every decoded request answered
 *     (the per-connection rules of test/harness/fuzz-remoting.ts), no 5xx from the admin API;
 *   - no topic or group bears a name that only refused requests carried.
 * Standalone: name server, broker and VIP remoting ports and the admin API. A master and its
 * slave: the master's HA port and the slave's remoting port; the slave still catches up after.
 *
 * `SEED=<n>` replays a run, `FUZZ_ITERATIONS=<n>` sets the inputs per port (default 1500).
 */
import { expect, test } from "bun:test";
import { fuzzIterations, fuzzSeed } from "../harness/fuzz.ts";
import {
  describeAdmin,
  describeRemoting,
  FUZZ_CONFIG,
  fuzzNames,
  fuzzPorts,
  namesWithTokens,
  rssKiB,
  seedSentinel,
  sendAndPull,
  sentinelState,
} from "../harness/fuzz-campaign.ts";
import { fuzzHaPort } from "../harness/fuzz-ha.ts";
import { brokerYaml, HaCluster } from "../harness/ha-cluster.ts";
import { Env, uniq, until } from "../client/support.ts";

const SEED = fuzzSeed();
const INPUTS = fuzzIterations(1500);
const RSS_SECOND_HALF_MAX_KIB = 64 * 1024;
const note = (s: string) => process.stderr.write(`fuzz-ports: ${s}\n`);

test(`fuzz every port of a standalone: ${INPUTS} inputs per port (seed ${SEED})`, async () => {
  note(`standalone SEED=${SEED} FUZZ_ITERATIONS=${INPUTS} (replay: SEED=${SEED} bun test test/integration/fuzz-ports.test.ts)`);
  await using env = await Env.start({ config: FUZZ_CONFIG });
  const before = await seedSentinel(env);
  const ports = env.srv.ports;
  const targets = { host: "127.0.0.1", remoting: { namesrv: ports.namesrv!, broker: ports.broker!, vip: ports.vip! }, adminUrl: env.srv.adminUrl, adminPort: ports.admin!, frameSizeMaxBytes: 262_144 };
  const names = fuzzNames(SEED);
  const rss0 = rssKiB(env.srv.proc.pid);
  const first = await fuzzPorts(targets, SEED, Math.ceil(INPUTS / 2), names);
  const rss1 = rssKiB(env.srv.proc.pid);
  const second = await fuzzPorts(targets, SEED + 1000, Math.floor(INPUTS / 2), names);
  const rss2 = rssKiB(env.srv.proc.pid);
  for (const half of [first, second]) {
    for (const [n, r] of Object.entries(half.remoting)) note(describeRemoting(n, r));
    if (half.admin) note(describeAdmin(half.admin));
  }
  note(`RSS KiB: before ${rss0}, after the first half ${rss1}, after the second ${rss2}`);

  expect(env.srv.proc.exitCode).toBeNull();
  expect([...first.findings, ...second.findings]).toEqual([]);
  const health = await fetch(`${env.srv.adminUrl}/health`);
  expect(health.status).toBe(200);
  expect(rss2 - rss1).toBeLessThan(RSS_SECOND_HALF_MAX_KIB);
  expect(await sentinelState(env.wire, env.brokerAddr, `${env.srv.dir}/store`)).toBe(before);
  const refused = new Map([...first.refusedTokens, ...second.refusedTokens]);
  expect(refused.size).toBeGreaterThan(0);
  expect(await namesWithTokens(env.srv.adminUrl, refused)).toEqual([]);
  await sendAndPull(env);
}, 120_000);

test(`fuzz the HA port of a master and the remoting port of its slave (seed ${SEED})`, async () => {
  note(`HA SEED=${SEED} FUZZ_ITERATIONS=${INPUTS}`);
  // brokerYaml has a remoting section already: the frame timeout goes into it. No admin token:
  // the cluster harness reads the admin API without one, and this test does not fuzz it.
  const yaml = brokerYaml().replace("remoting:\n", `remoting:\n  frameTimeoutMs: ${FUZZ_CONFIG.remoting.frameTimeoutMs}\n`);
  await using cluster = await HaCluster.start({ groups: [{ name: "fuzz-ha", role: "ASYNC_MASTER", masterYaml: yaml, slaveYaml: yaml }] });
  const topic = uniq("HaFuzz");
  await cluster.createTopic(topic);
  await cluster.send(topic, 40);
  const end = await cluster.caughtUp();
  const master = cluster.master();
  const slave = cluster.slave();
  const rss0 = rssKiB(master.pid);
  const ha = await fuzzHaPort({ host: "127.0.0.1", port: master.proc.ports.ha!, seed: SEED, inputs: INPUTS, concurrency: 8, maxOffset: end });
  note(`HA: ${ha.inputs} reports on ${ha.connections} connections, ${ha.chunks} chunks (${ha.bytesStreamed} bytes) streamed, ${ha.closedByServer} closed by the master; master RSS KiB ${rss0} → ${rssKiB(master.pid)}`);
  expect(ha.findings).toEqual([]);
  const slaveTargets = { host: "127.0.0.1", remoting: { slave: slave.proc.ports.broker! }, frameSizeMaxBytes: 16_777_216 };
  const s = await fuzzPorts(slaveTargets, SEED + 2000, INPUTS, fuzzNames(SEED + 2000));
  note(describeRemoting("slave", s.remoting.slave!));
  expect(s.findings).toEqual([]);
  expect(master.proc.proc.exitCode).toBeNull();
  expect(slave.proc.proc.exitCode).toBeNull();
  // The fake slaves are forgotten once closed: the master lists its one real slave.
  await until(async () => (await master.ha()).slaves?.length === 1, 10_000, () => `one slave on the master's /ha: ${cluster.diag()}`);
  await cluster.send(topic, 20);
  expect(await cluster.caughtUp()).toBeGreaterThan(end);
}, 120_000);

test("the campaign's checks have teeth: a server that never answers, never closes, and fails with 500 is caught", async () => {
  // Accepts every connection and ignores every byte.
  const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const http = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) =>
      new URL(req.url).pathname === "/openapi.json"
        ? Response.json({ paths: { "/topics/{topic}": { get: {}, delete: {} } } })
        : new Response("boom", { status: 500 }),
  });
  try {
    const remoting = await fuzzPorts({ host: "127.0.0.1", remoting: { silent: silent.port }, frameSizeMaxBytes: 262_144 }, SEED, 40, fuzzNames(SEED));
    expect(remoting.findings.some((f) => f.includes("no answer to the probe"))).toBe(true);
    expect(remoting.findings.some((f) => f.includes("kept the connection open"))).toBe(true);
    const admin = await fuzzPorts({ host: "127.0.0.1", remoting: {}, adminUrl: `http://127.0.0.1:${http.port}`, adminPort: http.port!, frameSizeMaxBytes: 0 }, SEED, 30, fuzzNames(SEED));
    expect(admin.findings.some((f) => f.includes("HTTP 500"))).toBe(true);
  } finally {
    silent.stop(true);
    await http.stop(true);
  }
}, 60_000);
