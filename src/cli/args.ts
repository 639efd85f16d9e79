/**
 * The command line, as a contract that black-box tests rely on. Flags stay strings here;
 * config/load.ts validates and converts them, so that a bad value is reported the same way
 * whether it came from a flag or the YAML file.
 */
import type { CliFlags } from "../config/load.ts";
import { closest, ROLES } from "../config/schema.ts";

export type { CliFlags } from "../config/load.ts";

export type CliAction = "run" | "check-config" | "print-config" | "version" | "help" | "bench" | "admin";

export interface CliArgs {
  action: CliAction;
  flags: CliFlags;
  /** `rocketbun bench producer|consumer ...` */
  bench?: BenchOptions;
  /** `rocketbun admin <command> ...`: the arguments after "admin", parsed by src/admin-cli/. */
  admin?: string[];
  /** With action "help": which text (`rocketbun bench … --help` prints the bench's own). */
  helpText?: string;
}

/** `rocketbun bench`: a load generator like RocketMQ's producer.sh / consumer.sh. */
export interface BenchOptions {
  mode: "producer" | "consumer";
  /** Name servers, "a:9876;b:9876". */
  namesrv: string;
  topic: string;
  /** Producer: sends in flight (each awaits its answer before the next). */
  inflight: number;
  /** Producer: body bytes. */
  bodySize: number;
  /** Producer: give every message a unique key (the broker indexes it). */
  keys: boolean;
  group: string;
  /** Consumer: start from the first offset instead of the last when the group has none. */
  from: "first" | "last";
  /** Stop after this many messages sent (producer) or received (consumer). */
  count?: number;
  /** Stop after this many seconds. */
  seconds?: number;
}

/** Flags that take a value, with the placeholder shown in messages. */
const VALUE_FLAGS: Record<string, { prop: keyof CliFlags; arg: string }> = {
  "--role": { prop: "role", arg: ROLES.join("|") },
  "--config": { prop: "config", arg: "FILE" },
  "--listen": { prop: "listen", arg: "HOST:PORT" },
  "--admin": { prop: "admin", arg: "HOST:PORT" },
  "--namesrv": { prop: "namesrv", arg: "ADDR[;ADDR...]" },
  "--store": { prop: "store", arg: "DIR" },
  "--cluster": { prop: "cluster", arg: "NAME" },
  "--broker-name": { prop: "brokerName", arg: "NAME" },
  "--broker-id": { prop: "brokerId", arg: "N" },
  "--broker-role": { prop: "brokerRole", arg: "ASYNC_MASTER|SYNC_MASTER" },
  "--flush-disk": { prop: "flushDisk", arg: "ASYNC_FLUSH|SYNC_FLUSH" },
  "--log-level": { prop: "logLevel", arg: "debug|info|warn|error" },
  "--ports-file": { prop: "portsFile", arg: "FILE" },
  "--etcd": { prop: "etcd", arg: "HOST:PORT[;HOST:PORT...]" },
};

const ACTION_FLAGS: Record<string, Exclude<CliAction, "run">> = {
  "--check-config": "check-config",
  "--print-config": "print-config",
  "--version": "version",
  "--help": "help",
  "-h": "help",
};

/**
 * Parses the arguments after the program name. Accepts `--flag value` and `--flag=value`.
 * `--help` and `--version` win over everything else, including other errors, so they always work.
 */
export function parseArgs(argv: string[]): CliArgs | { errors: string[] } {
  if (argv[0] === "bench") return parseBenchArgs(argv.slice(1));
  if (argv[0] === "admin") return { action: "admin", flags: {}, admin: argv.slice(1) };
  const flags: CliFlags = {};
  const errors: string[] = [];
  const actions = new Set<Exclude<CliAction, "run">>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const name = eq >= 0 ? arg.slice(0, eq) : arg;
    const action = ACTION_FLAGS[name];
    if (action !== undefined) {
      if (eq >= 0) errors.push(`${name}: takes no value`);
      actions.add(action);
      continue;
    }
    const spec = VALUE_FLAGS[name];
    if (spec === undefined) {
      if (!arg.startsWith("-")) {
        errors.push(`unexpected argument ${JSON.stringify(arg)} (flags start with --)`);
        continue;
      }
      const near = closest(name, [...Object.keys(VALUE_FLAGS), ...Object.keys(ACTION_FLAGS)]);
      errors.push(`${name}: unknown flag${near !== undefined ? ` (did you mean "${near}"?)` : ""}`);
      continue;
    }
    let value: string | undefined;
    if (eq >= 0) value = arg.slice(eq + 1);
    else if (argv[i + 1] !== undefined && !(argv[i + 1] ?? "").startsWith("--")) value = argv[++i];
    if (value === undefined || value === "") {
      errors.push(`${name}: missing value (${spec.arg})`);
      continue;
    }
    if (flags[spec.prop] !== undefined) {
      errors.push(`${name}: given more than once`);
      continue;
    }
    flags[spec.prop] = value;
  }
  if (actions.has("help")) return { action: "help", flags };
  if (actions.has("version")) return { action: "version", flags };
  if (flags.role !== undefined && !(ROLES as readonly string[]).includes(flags.role)) {
    errors.push(`--role: unknown role ${JSON.stringify(flags.role)} (expected ${ROLES.join("|")})`);
  }
  if (actions.has("check-config") && actions.has("print-config")) {
    errors.push("--check-config and --print-config cannot be combined");
  }
  if (errors.length > 0) return { errors };
  const action = actions.has("print-config") ? "print-config" : actions.has("check-config") ? "check-config" : "run";
  return { action, flags };
}

const BENCH_FLAGS: Record<string, "namesrv" | "topic" | "inflight" | "size" | "keys" | "group" | "count" | "seconds" | "from"> = {
  "-n": "namesrv",
  "--namesrv": "namesrv",
  "-t": "topic",
  "--topic": "topic",
  "-w": "inflight",
  "--inflight": "inflight",
  "-s": "size",
  "--size": "size",
  "-k": "keys",
  "--keys": "keys",
  "-g": "group",
  "--group": "group",
  "--count": "count",
  "--seconds": "seconds",
  "--from": "from",
};

/** `bench producer|consumer [flags]` (RocketMQ's benchmark flags: -n -t -w -s -k -g). */
export function parseBenchArgs(argv: string[]): CliArgs | { errors: string[] } {
  const errors: string[] = [];
  if (argv.includes("--help") || argv.includes("-h")) return { action: "help", flags: {}, helpText: BENCH_HELP_TEXT };
  const mode = argv[0];
  if (mode !== "producer" && mode !== "consumer") return { errors: [`bench: expected "producer" or "consumer", got ${JSON.stringify(mode ?? "")}`] };
  const o: BenchOptions = {
    mode,
    namesrv: process.env.NAMESRV_ADDR ?? "127.0.0.1:9876",
    topic: "BenchmarkTest",
    inflight: 64,
    bodySize: 128,
    keys: false,
    group: mode === "producer" ? "benchmark_producer" : "benchmark_consumer",
    from: "last",
  };
  const positive = (name: string, v: string, max: number): number | undefined => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max) {
      errors.push(`${name}: expected a whole number from 1 to ${max}, got ${JSON.stringify(v)}`);
      return undefined;
    }
    return n;
  };
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const name = eq >= 0 ? arg.slice(0, eq) : arg;
    const key = BENCH_FLAGS[name];
    if (key === undefined) {
      const near = closest(name, Object.keys(BENCH_FLAGS));
      errors.push(`bench: ${name}: unknown flag${near !== undefined ? ` (did you mean "${near}"?)` : ""}`);
      continue;
    }
    let value: string | undefined;
    if (eq >= 0) value = arg.slice(eq + 1);
    else if (key === "keys") {
      // RocketMQ writes "-k true"; a bare -k means true.
      const next = argv[i + 1];
      value = next === "true" || next === "false" ? argv[++i] : "true";
    } else if (argv[i + 1] !== undefined) value = argv[++i];
    if (value === undefined || value === "") {
      errors.push(`bench: ${name}: missing value`);
      continue;
    }
    if (key === "namesrv") o.namesrv = value;
    else if (key === "topic") o.topic = value;
    else if (key === "group") o.group = value;
    else if (key === "inflight") o.inflight = positive(name, value, 65536) ?? o.inflight;
    else if (key === "size") o.bodySize = positive(name, value, 4 * 1024 * 1024) ?? o.bodySize;
    else if (key === "count") o.count = positive(name, value, Number.MAX_SAFE_INTEGER);
    else if (key === "seconds") o.seconds = positive(name, value, 365 * 24 * 3600);
    else if (key === "keys") {
      if (value !== "true" && value !== "false") errors.push(`bench: ${name}: expected true or false, got ${JSON.stringify(value)}`);
      o.keys = value === "true";
    } else if (key === "from") {
      if (value !== "first" && value !== "last") errors.push(`bench: ${name}: expected first or last, got ${JSON.stringify(value)}`);
      else o.from = value;
    }
  }
  if (errors.length > 0) return { errors };
  return { action: "bench", flags: {}, bench: o };
}

/** The bench's flags: part of the general help, and all of `rocketbun bench … --help`. */
const BENCH_FLAGS_TEXT = `Benchmark (like RocketMQ's producer.sh / consumer.sh; standard requests only, so it works against
Apache RocketMQ too). One line per second; a summary at the end:
  rocketbun bench producer    Send TPS, max and average RT (ms), failures
  rocketbun bench consumer    Consume TPS, average and max latency from the born (B2C) and store (S2C) time
  -n, --namesrv ADDR[;ADDR]   name servers (default $NAMESRV_ADDR, else 127.0.0.1:9876)
  -t, --topic TOPIC           topic (default BenchmarkTest; create it first)
  -w, --inflight N            producer: sends in flight (default 64)
  -s, --size BYTES            producer: body size (default 128)
  -k, --keys [true|false]     producer: a unique key per message (default false)
  -g, --group GROUP           producer or consumer group (default benchmark_producer / benchmark_consumer)
  --from first|last           consumer: where a new group starts (default last)
  --count N                   stop after N messages sent or received
  --seconds N                 stop after N seconds (without either: run until Ctrl-C)
  -h, --help                  print the bench's flags and exit
`;

export const BENCH_HELP_TEXT = `Usage: rocketbun bench producer|consumer [-n NAMESRV] [-t TOPIC] [bench flags]

${BENCH_FLAGS_TEXT}`;

export const HELP_TEXT = `Usage: rocketbun --role namesrv|master|slave|standalone [--config FILE] [flags]
       rocketbun bench producer|consumer [-n NAMESRV] [-t TOPIC] [bench flags]
       rocketbun admin <command> -n NAMESRV [flags]     (mqadmin's commands; 'rocketbun admin --help')

A RocketMQ-compatible message broker. Precedence: flags > config file > built-in defaults.

Roles:
  namesrv      name server only
  master       broker master (brokerId 0); needs --namesrv or broker.namesrvAddr
  slave        broker slave (brokerId >= 1); replicates from its master's HA port
  standalone   a name server and a master broker in one process

Flags:
  --role ROLE                 role to run; may instead come from "role:" in the config file
  --config FILE               YAML config file (see config/*.yaml); flags override its values
  --listen HOST:PORT          remoting address (namesrv.listen for namesrv, else broker.listen)
  --admin HOST:PORT           admin HTTP address (namesrv.admin for namesrv, else broker.admin)
  --namesrv ADDR[;ADDR...]    name servers the broker registers with (broker.namesrvAddr)
  --store DIR                 data directory (store.dir, default ./data)
  --cluster NAME              cluster name (broker.brokerClusterName, default DefaultCluster)
  --broker-name NAME          broker name shared by a master and its slaves (default broker-a)
  --broker-id N               0 = master, >= 1 = slave (default 0; 1 for role slave)
  --broker-role ROLE          ASYNC_MASTER or SYNC_MASTER (default ASYNC_MASTER)
  --flush-disk TYPE           ASYNC_FLUSH or SYNC_FLUSH (store.flushDiskType, default ASYNC_FLUSH)
  --etcd ADDR[;ADDR...]       etcd endpoints for automatic failover (broker.failover.etcd)
  --log-level LEVEL           debug, info, warn or error (default info)
  --ports-file FILE           after binding, write the ports actually bound as JSON to FILE
  --check-config              validate the configuration, store dir and ports, then exit
  --print-config              print the effective configuration as YAML, then exit
  --version                   print the version and exit
  --help, -h                  print this help and exit

Both --flag value and --flag=value are accepted.

${BENCH_FLAGS_TEXT}
Default ports (port 0 = any free port; see --ports-file):
  name server  9876, admin 9877 (listen port + 1)
  broker       10911, HA 10912 (listen + 1), VIP 10909 (listen - 2), admin 10910 (listen - 1)
`;
