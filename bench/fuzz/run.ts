/**
 * The full port-fuzzing run of issue #18 item 2 (not in CI; the seeded short run is
 * test/integration/fuzz-ports.test.ts): a standalone binary's name server, broker and VIP
 * remoting ports and admin API, then a master's HA port and its slave's remoting port, each with
 * `--inputs` inputs (default 10^6) in `--rounds` rounds. Prints per round the counts and RSS, and at
 * the end the findings and the checks of the short run (process alive, sentinel unchanged, no
 * name created by a refused request, a real send and pull). Exit 1 on any finding.
 *
 *   npx bun bench/fuzz/run.ts [--inputs 1000000] [--rounds 20] [--seed N] [--skip-ha] [--skip-standalone]
 *
 * Uses dist/rocketbun (or ROCKETBUN_BINARY). Replays from the seed.
 */
import { parseArgs } from "node:util";
import { out } from "../../src/common/log.ts";
import { Env } from "../../test/client/support.ts";
import {
  type CampaignResult,
  describeAdmin,
  describeRemoting,
  FUZZ_ADMIN_TOKEN,
  FUZZ_CONFIG,
  FUZZ_FRAME_TIMEOUT_MS,
  fuzzNames,
  fuzzPorts,
  namesWithTokens,
  rssKiB,
  seedSentinel,
  sendAndPull,
  sentinelState,
} from "../../test/harness/fuzz-campaign.ts";
import { fuzzHaPort } from "../../test/harness/fuzz-ha.ts";
import { brokerYaml, HaCluster } from "../../test/harness/ha-cluster.ts";

const { values } = parseArgs({
  options: {
    inputs: { type: "string", default: "1000000" },
    rounds: { type: "string", default: "20" },
    seed: { type: "string", default: String((Math.random() * 0x100000000) >>> 0) },
    "skip-ha": { type: "boolean", default: false },
    "skip-standalone": { type: "boolean", default: false },
  },
});
const INPUTS = Number(values.inputs);
const ROUNDS = Math.max(1, Number(values.rounds));
const SEED = Number(values.seed) >>> 0;
const findings: string[] = [];

/** The broker's heap and its topic and group counts: RSS that grows with accepted state is not a leak. */
async function footprint(adminUrl: string): Promise<string> {
  const get = async <T>(path: string): Promise<T> => (await fetch(`${adminUrl}${path}`, { headers: { authorization: `Bearer ${FUZZ_ADMIN_TOKEN}` } })).json() as Promise<T>;
  const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
  const h = await get<{ memory: { heapUsedBytes: number; externalBytes: number; arrayBuffersBytes: number } }>("/health");
  const topics = (await get<{ topics: unknown[] }>("/topics")).topics.length;
  const groups = (await get<{ groups: unknown[] }>("/groups")).groups.length;
  return `heap used ${mib(h.memory.heapUsedBytes)}, external ${mib(h.memory.externalBytes)}; ${topics} topics, ${groups} groups`;
}

function summarize(round: number, r: CampaignResult, rss: number, ms: number, extra = ""): void {
  out(`round ${round + 1}/${ROUNDS}: ${(ms / 1000).toFixed(1)} s, RSS ${(rss / 1024).toFixed(1)} MiB${extra ? `, ${extra}` : ""}`);
  for (const [n, rep] of Object.entries(r.remoting)) out(`  ${describeRemoting(n, rep)}`);
  if (r.admin) out(`  ${describeAdmin(r.admin)}`);
  for (const f of r.findings.slice(0, 20)) out(`  FINDING ${f}`);
  findings.push(...r.findings);
}

async function standalone(): Promise<void> {
  await using env = await Env.start({ config: FUZZ_CONFIG });
  const before = await seedSentinel(env);
  const p = env.srv.ports;
  const targets = { host: "127.0.0.1", remoting: { namesrv: p.namesrv!, broker: p.broker!, vip: p.vip! }, adminUrl: env.srv.adminUrl, adminPort: p.admin!, frameSizeMaxBytes: 262_144 };
  const names = fuzzNames(SEED);
  const refused = new Map<string, string>();
  const rss0 = rssKiB(env.srv.proc.pid);
  out(`standalone (pid ${env.srv.proc.pid}): seed ${SEED}, ${INPUTS} inputs per port, RSS before ${(rss0 / 1024).toFixed(1)} MiB`);
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = Date.now();
    const r = await fuzzPorts(targets, SEED + round * 10, Math.ceil(INPUTS / ROUNDS), names);
    for (const [t, how] of r.refusedTokens) refused.set(t, how);
    summarize(round, r, rssKiB(env.srv.proc.pid), Date.now() - t0, await footprint(env.srv.adminUrl));
    if (env.srv.proc.exitCode !== null) throw new Error(`the standalone exited with ${env.srv.proc.exitCode}`);
  }
  if ((await fetch(`${env.srv.adminUrl}/health`)).status !== 200) findings.push("standalone: /health is not 200 after the campaign");
  if ((await sentinelState(env.wire, env.brokerAddr, `${env.srv.dir}/store`)) !== before) findings.push("standalone: the sentinel's data changed");
  const created = await namesWithTokens(env.srv.adminUrl, refused);
  if (created.length > 0) findings.push(`standalone: names of refused requests exist: ${created.slice(0, 10).join(", ")}`);
  await sendAndPull(env);
  out(`standalone: RSS ${(rss0 / 1024).toFixed(1)} → ${(rssKiB(env.srv.proc.pid) / 1024).toFixed(1)} MiB; ${refused.size} refused names checked`);
}

async function haPair(): Promise<void> {
  const yaml = brokerYaml().replace("remoting:\n", `remoting:\n  frameTimeoutMs: ${FUZZ_FRAME_TIMEOUT_MS}\n`);
  await using cluster = await HaCluster.start({ groups: [{ name: "fuzz-ha", role: "ASYNC_MASTER", masterYaml: yaml, slaveYaml: yaml }] });
  await cluster.createTopic("HaFuzz");
  await cluster.send("HaFuzz", 100);
  const end = await cluster.caughtUp();
  const master = cluster.master();
  const slave = cluster.slave();
  const rss0 = [rssKiB(master.pid), rssKiB(slave.pid)];
  const names = fuzzNames(SEED + 1);
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = Date.now();
    const n = Math.ceil(INPUTS / ROUNDS);
    // The master's HA port and the slave's remoting port at once: each campaign mostly waits on its
    // peer, and one after the other took an hour for 10^6 inputs each.
    const [ha, s] = await Promise.all([
      fuzzHaPort({ host: "127.0.0.1", port: master.proc.ports.ha!, seed: SEED + round * 10, inputs: n, concurrency: 8, maxOffset: end }),
      fuzzPorts({ host: "127.0.0.1", remoting: { slave: slave.proc.ports.broker! }, frameSizeMaxBytes: 16_777_216 }, SEED + round * 10 + 5, n, names),
    ]);
    findings.push(...ha.findings);
    out(`round ${round + 1}/${ROUNDS} (HA pair): ${((Date.now() - t0) / 1000).toFixed(1)} s; HA ${ha.inputs} reports on ${ha.connections} connections, ${ha.chunks} chunks; RSS master ${(rssKiB(master.pid) / 1024).toFixed(1)} MiB, slave ${(rssKiB(slave.pid) / 1024).toFixed(1)} MiB`);
    out(`  ${describeRemoting("slave", s.remoting.slave!)}`);
    for (const f of [...ha.findings, ...s.findings].slice(0, 20)) out(`  FINDING ${f}`);
    findings.push(...s.findings);
  }
  await cluster.send("HaFuzz", 20);
  if ((await cluster.caughtUp()) <= end) findings.push("HA pair: the slave did not catch up after the campaign");
  out(`HA pair: RSS master ${(rss0[0]! / 1024).toFixed(1)} → ${(rssKiB(master.pid) / 1024).toFixed(1)} MiB, slave ${(rss0[1]! / 1024).toFixed(1)} → ${(rssKiB(slave.pid) / 1024).toFixed(1)} MiB`);
}

if (!values["skip-standalone"]) await standalone();
if (!values["skip-ha"]) await haPair();
for (const f of findings) out(`FINDING ${f}`);
out(findings.length === 0 ? `fuzz run (seed ${SEED}): no finding` : `fuzz run (seed ${SEED}): ${findings.length} findings`);
process.exit(findings.length === 0 ? 0 : 1);
