/**
 * The real mqadmin (rocketmq-tools 4.9.8, MQAdminStartup) against RocketBun and against Apache
 * RocketMQ 4.9.7 (test/harness/interop-cluster.ts), side by side. Every command runs against both;
 * its output is normalised (addresses, times, ids, client ids, rates and other values that
 * legitimately differ) into a comparable shape per command, and RocketBun's must equal Apache's.
 * A command is OK on a broker when it exits 0 (clusterRT loops forever: it is stopped after its
 * first row), prints no exception, and — on RocketBun — matches Apache's shape.
 *
 * mqadmin exits 0 even when the command failed (it prints the exception to stderr), and each JVM
 * takes ~3.5 s (Netty's 2 s graceful shutdown), so independent commands run in parallel and the
 * two clusters at the same time.
 *
 * Differences settled as legitimate (normalised away, see `norm`): Apache creates
 * RMQ_SYS_TRANS_HALF_TOPIC / RMQ_SYS_TRACE_TOPIC at start (RocketBun on first use); brokerStatus
 * and getBrokerConfig/getNamesrvConfig list each broker's own configuration keys (compared: the
 * keys both share); clusterList's version column (4.9.7 vs RocketBun's 4.9.8).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PushConsumer, Producer } from "../../src/client/index.ts";
import { tempDir } from "../harness/binary.ts";
import { recordCompat } from "../harness/compat.ts";
import { BROKER_KINDS, BROKER_NAME, CLUSTER_NAME, startCluster, type BrokerKind, type InteropCluster } from "../harness/interop-cluster.ts";
import { JVM_FLAGS, mavenClasspath, toolsPresent } from "../harness/java.ts";

const enabled = toolsPresent("mqadmin interop", ["java", "mvn"]);

interface Run {
  code: number | null;
  out: string;
  err: string;
}

const T = "AdminT"; // 4 queues: progress, status, stats
const Q = "AdminQ"; // 1 queue: queries and resets are deterministic
const CG = "AdminCG";
const OFFLINE_CG = "AdminOfflineCG";
const PG = "AdminPG";

/** The commands in the order their tests and rows appear; each maps to its run's name. */
const COMMANDS = [
  "updateTopic",
  "sendMessage",
  "topicList",
  "topicList -c",
  "topicRoute",
  "topicStatus",
  "clusterList",
  "brokerStatus",
  "consumerProgress",
  "consumerProgress -g",
  "consumerProgress -s",
  "consumerConnection",
  "producerConnection",
  "updateSubGroup",
  "deleteSubGroup",
  "resetOffsetByTime online",
  "resetOffsetByTime offline",
  "queryMsgById",
  "queryMsgByKey",
  "queryMsgByUniqueKey",
  "queryMsgByOffset",
  "consumeMessage",
  "getBrokerConfig",
  "updateBrokerConfig",
  "getNamesrvConfig",
  "updateNamesrvConfig",
  "statsAll",
  "cleanExpiredCQ",
  "clusterRT",
  "checkMsgSendRT",
  "deleteTopic",
] as const;
type Command = (typeof COMMANDS)[number];

const TOOLS_LOGBACK = `<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>\${user.home}/tools.log</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5p %c{0} - %m%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="F"/></root>
</configuration>
`;

let home = "";
let cp = "";

/**
 * JVMs running at once, over both clusters. More starve the two-core machine: mqadmin's 3 s
 * request timeouts fire (against Apache RocketMQ first, whose broker is a JVM too).
 */
const JVMS_AT_ONCE = 4;
let running = 0;
const queue: (() => void)[] = [];

async function mqadmin(c: InteropCluster, args: string[], stopAfterMs?: number): Promise<Run> {
  if (running >= JVMS_AT_ONCE) await new Promise<void>((r) => queue.push(r));
  running++;
  try {
    return await mqadminNow(c, args, stopAfterMs);
  } finally {
    running--;
    queue.shift()?.();
  }
}

async function mqadminNow(c: InteropCluster, args: string[], stopAfterMs?: number): Promise<Run> {
  const argv = [
    "java",
    ...JVM_FLAGS,
    "-Xmx128m",
    `-Drocketmq.home.dir=${home}`,
    `-Duser.home=${home}`,
    `-Drocketmq.client.logRoot=${join(home, "logs")}`,
    "-cp",
    cp,
    "org.apache.rocketmq.tools.command.MQAdminStartup",
    ...args,
    "-n",
    c.namesrvAddr,
  ];
  const p = Bun.spawn(argv, { cwd: home, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { ...process.env, HOME: home } });
  const timer = setTimeout(() => p.kill("SIGKILL"), stopAfterMs ?? 60_000);
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  clearTimeout(timer);
  return { code: stopAfterMs !== undefined && p.signalCode === "SIGKILL" ? 0 : code, out, err };
}

/** Runs every command against one cluster; independent commands in parallel. */
async function runAll(c: InteropCluster): Promise<Map<Command, Run>> {
  const runs = new Map<Command, Run>();
  const go = async (name: Command, args: string[], stopAfterMs?: number) => {
    runs.set(name, await mqadmin(c, args, stopAfterMs));
  };
  await Promise.all([
    go("updateTopic", ["updateTopic", "-c", CLUSTER_NAME, "-t", T, "-r", "4", "-w", "4"]),
    mqadmin(c, ["updateTopic", "-c", CLUSTER_NAME, "-t", Q, "-r", "1", "-w", "1"]),
    mqadmin(c, ["updateTopic", "-c", CLUSTER_NAME, "-t", "AdminDelT"]),
  ]);
  await go("sendMessage", ["sendMessage", "-t", T, "-p", "hello", "-k", "key1", "-c", "TagA"]);
  const producer = new Producer({ namesrv: c.namesrvAddr, group: PG });
  await producer.start();
  const consumers: PushConsumer[] = [];
  try {
    const t0 = Date.now();
    for (let i = 0; i < 4; i++) await producer.send({ topic: T, body: `t${i}`, tags: "TagA", keys: [`tk${i}`] });
    const sent = [];
    for (let i = 0; i < 3; i++) sent.push(await producer.send({ topic: Q, body: `q${i}`, tags: "TagQ", keys: ["qkey"] }));
    const first = sent[0]!;
    // The offline group consumes Q, commits and leaves; CG stays online on T and Q.
    const offline = new PushConsumer({ namesrv: c.namesrvAddr, group: OFFLINE_CG, fromWhere: "first", persistOffsetIntervalMs: 500 });
    offline.subscribe(Q, "*", () => {});
    const online = new PushConsumer({ namesrv: c.namesrvAddr, group: CG, fromWhere: "first", persistOffsetIntervalMs: 500 });
    online.subscribe(T, "*", () => {});
    online.subscribe(Q, "*", () => {});
    consumers.push(online);
    await offline.start();
    await online.start();
    // Everything consumed and committed (5 on T, 3 on Q for each group).
    await Bun.sleep(3000);
    await offline.shutdown();
    await Promise.all([
      go("topicList", ["topicList"]),
      go("topicList -c", ["topicList", "-c"]),
      go("topicRoute", ["topicRoute", "-t", T]),
      go("topicStatus", ["topicStatus", "-t", T]),
      go("clusterList", ["clusterList"]),
      go("brokerStatus", ["brokerStatus", "-b", c.brokerAddr]),
      go("consumerProgress", ["consumerProgress"]),
      go("consumerProgress -g", ["consumerProgress", "-g", CG]),
      go("consumerProgress -s", ["consumerProgress", "-g", CG, "-s", "true"]),
      go("consumerConnection", ["consumerConnection", "-g", CG]),
      go("producerConnection", ["producerConnection", "-g", PG, "-t", T]),
      go("queryMsgById", ["queryMsgById", "-i", first.offsetMsgId ?? ""]),
      go("queryMsgByKey", ["queryMsgByKey", "-t", Q, "-k", "qkey"]),
      go("queryMsgByUniqueKey", ["queryMsgByUniqueKey", "-t", Q, "-i", first.msgId]),
      go("queryMsgByOffset", ["queryMsgByOffset", "-t", Q, "-b", BROKER_NAME, "-i", "0", "-o", "1"]),
      go("consumeMessage", ["consumeMessage", "-t", Q, "-b", BROKER_NAME, "-i", "0", "-o", "0", "-c", "2"]),
      go("getBrokerConfig", ["getBrokerConfig", "-b", c.brokerAddr]),
      go("getNamesrvConfig", ["getNamesrvConfig"]),
      go("statsAll", ["statsAll", "-t", T]),
      go("cleanExpiredCQ", ["cleanExpiredCQ", "-b", c.brokerAddr]),
    ]);
    await Promise.all([
      go("updateSubGroup", ["updateSubGroup", "-c", CLUSTER_NAME, "-g", "AdminSG"]).then(() =>
        go("deleteSubGroup", ["deleteSubGroup", "-c", CLUSTER_NAME, "-g", "AdminSG"]),
      ),
      go("resetOffsetByTime online", ["resetOffsetByTime", "-g", CG, "-t", Q, "-s", String(t0 - 1000)]),
      go("resetOffsetByTime offline", ["resetOffsetByTime", "-g", OFFLINE_CG, "-t", Q, "-s", String(t0 - 1000)]),
      go("updateBrokerConfig", ["updateBrokerConfig", "-b", c.brokerAddr, "-k", "maxMessageSize", "-v", "4000000"]),
      go("updateNamesrvConfig", ["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"]),
      go("clusterRT", ["clusterRT", "-a", "5", "-s", "16", "-c", CLUSTER_NAME], 9000),
      go("checkMsgSendRT", ["checkMsgSendRT", "-t", T, "-a", "5", "-s", "16"]),
      go("deleteTopic", ["deleteTopic", "-c", CLUSTER_NAME, "-t", "AdminDelT"]),
    ]);
  } finally {
    for (const cons of consumers) await cons.shutdown();
    await producer.shutdown();
  }
  return runs;
}

// ------------------------------------------------------------------ normalising

const ADDR = /\b\d{1,3}(?:\.\d{1,3}){3}:\d+\b/g;
const TIME = /\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d{3})?\b/g;
const HEX_ID = /\b[0-9A-F]{32,}\b/g;
const CLIENT_ID = /\S+@\S+/g;

const MILLIS = /\b1\d{12}\b/g;

/** Placeholders stand for values of any length, so the padding after one (a table column) is not compared. */
const PLACEHOLDER_PADDING = /(<ms>|<time>|<addr>|<id>|<client>) +/g;

function general(text: string): string {
  return text
    .replace(MILLIS, "<ms>")
    .replace(TIME, "<time>")
    .replace(ADDR, "<addr>")
    .replace(HEX_ID, "<id>")
    .replace(CLIENT_ID, "<client>")
    .replace(PLACEHOLDER_PADDING, "$1 ");
}

function lines(text: string): string[] {
  return general(text)
    .split("\n")
    .map((l) => l.trimEnd())
    .filter((l) => l.length > 0);
}

function cols(line: string): string[] {
  return line.trim().split(/\s{2,}|\s+(?=\S)/);
}

/** Rows as their first `n` whitespace-separated columns, sorted (order is a map's iteration order). */
function rows(text: string, n: number, skip: (l: string) => boolean = () => false): string[] {
  return lines(text)
    .filter((l) => !skip(l))
    .map((l) => l.trim().split(/\s+/).slice(0, n).join(" "))
    .sort();
}

const sysTopic = (l: string) => /RMQ_SYS_/.test(l);
/** "key = value" / "key : value" lines → their keys. */
function keysOf(text: string, sep: RegExp): string[] {
  return lines(text)
    .map((l) => l.split(sep)[0]!.trim())
    .filter((k) => k.length > 0 && !k.startsWith("="))
    .sort();
}
function valueOf(text: string, key: string): string | undefined {
  for (const l of text.split("\n")) {
    const m = /^(\S+)\s*[=:]\s+(.*)$/.exec(l.trim());
    if (m && m[1] === key) return m[2]!.trim();
  }
  return undefined;
}

/** The comparable shape of a command's output. Apache's and RocketBun's must be equal. */
function norm(cmd: Command, r: Run): unknown {
  const o = r.out;
  switch (cmd) {
    case "sendMessage":
    case "checkMsgSendRT":
      // header + rows without QID, msg ids and times
      return lines(o).map((l) => (l.startsWith("#") ? l : l.startsWith("Avg RT") ? "Avg RT" : cols(l)[0] + " " + /SEND_OK|true|false/.exec(l)?.[0]));
    case "topicList":
      return rows(o, 1, sysTopic);
    case "topicList -c":
      return rows(o, 3, sysTopic);
    case "topicStatus": {
      // Which queue each send picked differs between runs: the queue ids, and the offsets as a multiset.
      const body = lines(o).filter((l) => !l.startsWith("#"));
      const queues = body.map((l) => l.trim().split(/\s+/).slice(0, 2).join(" "));
      const offsets = body.map((l) => l.trim().split(/\s+/).slice(2, 4).join(" ") + (l.includes("<time>") ? " T" : "")).sort();
      return [lines(o)[0], ...queues, ...offsets];
    }
    case "clusterList":
      return lines(o).map((l) => (l.startsWith("#") ? l : l.trim().split(/\s+/).slice(0, 4).join(" ")));
    case "brokerStatus": {
      // Keys whose names carry a path, and the delay levels that have moved, are per broker.
      const own = (k: string) => k.startsWith("commitLogDiskRatio_") || k === "commitLogDirCapacity" || k.startsWith("scheduleMessageOffset_");
      return keysOf(o, /\s+:\s/).filter((k) => !own(k));
    }
    case "consumerProgress":
      return lines(o).map((l) => (l.startsWith("#") ? l : l.trim().split(/\s+/).slice(0, 5).join(" ")));
    case "consumerProgress -g":
    case "consumerProgress -s":
      // AdminT's rows: the queue each send picked differs, so its offsets compare as a multiset.
      return lines(o)
        .map((l) => {
          if (l.startsWith("#") || l.startsWith("Diff Total")) return l;
          if (l.startsWith("Consume TPS")) return "Consume TPS";
          const c = l.trim().split(/\s+/);
          return [c[0], c[1], c[0] === T ? "q" : c[2], ...c.slice(3, 6)].join(" ") + (l.includes("N/A") ? " N/A" : "");
        })
        .sort();
    case "queryMsgById":
    case "queryMsgByUniqueKey": {
      const keep = ["Topic", "Tags", "Keys", "Queue ID", "Queue Offset", "Reconsume Times", "System Flag", "MessageTrack"];
      return lines(o)
        .filter((l) => keep.some((k) => l.startsWith(k)))
        .map((l) => (l.startsWith("Properties") ? "Properties" : l));
    }
    case "queryMsgByOffset":
    case "consumeMessage":
      return lines(o)
        .filter((l) => !/^(CommitLog Offset|Born|Store|Message Body Path|Properties|OffsetID)/.test(l))
        .map((l) =>
          l.replace(
            /bornTimestamp=\d+|storeTimestamp=\d+|commitLogOffset=\d+|storeSize=\d+|bodyCRC=\d+|preparedTransactionOffset=\d+|sysFlag=\d+/g,
            "…",
          ),
        );
    case "getBrokerConfig": {
      const shared = [
        "brokerClusterName",
        "brokerName",
        "brokerId",
        "brokerRole",
        "flushDiskType",
        "autoCreateTopicEnable",
        "brokerIP1",
        "maxMessageSize",
      ];
      return [lines(o)[0], ...shared.map((k) => `${k}=${valueOf(o, k)}`)];
    }
    case "getNamesrvConfig":
      return [lines(o)[0], `orderMessageEnable=${valueOf(o, "orderMessageEnable") !== undefined}`];
    case "statsAll":
      return lines(o).map((l) => (l.startsWith("#") ? l : l.trim().split(/\s+/).slice(0, 3).join(" ")));
    case "clusterRT":
      return lines(o)
        .slice(0, 2)
        .map((l) =>
          l.startsWith("#")
            ? l
            : cols(l)
                .filter((_, i) => i !== 2)
                .join(" "),
        );
    default:
      return lines(o);
  }
}

/** Why a run is not OK on its own terms (exit code, an exception, nothing printed), or null. */
function problem(cmd: Command, r: Run): string | null {
  if (r.code !== 0) return `exit ${r.code}\n${r.out}\n${r.err}`.slice(0, 2000);
  if (/Exception|command failed/.test(r.err) || /Exception/.test(r.out)) return `error:\n${r.out}\n${r.err}`.slice(0, 2000);
  if (r.out.trim() === "" && cmd !== "cleanExpiredCQ") return `printed nothing\n${r.err}`.slice(0, 2000);
  return null;
}

const results = new Map<BrokerKind, Map<Command, Run>>();
const clusters: InteropCluster[] = [];

describe.skipIf(!enabled)("mqadmin 4.9.8 against RocketBun and Apache RocketMQ", () => {
  beforeAll(async () => {
    cp = mavenClasspath("mqadmin");
    home = tempDir("mqadmin-");
    mkdirSync(join(home, "conf"));
    writeFileSync(join(home, "conf", "logback_tools.xml"), TOOLS_LOGBACK);
    const started = await Promise.all(BROKER_KINDS.map((k) => startCluster(k)));
    clusters.push(...started);
    const all = await Promise.all(clusters.map((c) => runAll(c)));
    clusters.forEach((c, i) => results.set(c.kind, all[i]!));
  }, 240_000);

  afterAll(async () => {
    for (const c of clusters) await c.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  for (const cmd of COMMANDS) {
    test(cmd, () => {
      const apache = results.get("apache")!.get(cmd)!;
      const ours = results.get("rocketbun")!.get(cmd)!;
      const apacheProblem = problem(cmd, apache);
      const expected = norm(cmd, apache);
      const actual = norm(cmd, ours);
      let oursProblem = problem(cmd, ours);
      if (!oursProblem && !Bun.deepEquals(actual, expected)) {
        oursProblem = `differs from Apache RocketMQ:\n--- apache\n${JSON.stringify(expected, null, 1)}\n--- rocketbun\n${JSON.stringify(actual, null, 1)}`;
      }
      recordCompat({
        scenario: `mqadmin ${cmd}`,
        client: "mqadmin-4.9.8",
        broker: "apache",
        ok: apacheProblem === null,
        ...(apacheProblem ? { detail: apacheProblem.slice(0, 500) } : {}),
      });
      recordCompat({
        scenario: `mqadmin ${cmd}`,
        client: "mqadmin-4.9.8",
        broker: "rocketbun",
        ok: oursProblem === null,
        ...(oursProblem ? { detail: oursProblem.slice(0, 500) } : {}),
      });
      // A command that fails on Apache RocketMQ is a bad test, not a RocketBun bug.
      expect(apacheProblem).toBeNull();
      expect(oursProblem).toBeNull();
    });
  }
});
