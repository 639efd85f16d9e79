/**
 * `rocketbun admin <command> [flags]`: mqadmin's commands, names and flags, over the RocketMQ
 * remoting protocol only, so it works against RocketBun and Apache RocketMQ alike. Loaded by
 * main.ts only for `admin`, so a server's start never loads it.
 *
 * Exit codes: 0 done; 1 failed (a server refused, could not be reached, or answered what could
 * not be read: the message says which and what it said); 2 bad usage (nothing was sent).
 * Output: a table like mqadmin's on stdout, or with --json the command's data; errors and the
 * progress line of long work on stderr.
 */
import { err, out, setLogLevel } from "../common/log.ts";
import type { Command, CommandContext, Output } from "./command.ts";
import { ACL_COMMANDS } from "./commands-acl.ts";
import { CLUSTER_COMMANDS } from "./commands-cluster.ts";
import { CONFIG_COMMANDS } from "./commands-config.ts";
import { GROUP_COMMANDS } from "./commands-group.ts";
import { MESSAGE_COMMANDS } from "./commands-message.ts";
import { OFFSET_COMMANDS } from "./commands-offset.ts";
import { PRODUCE_COMMANDS } from "./commands-produce.ts";
import { TOPIC_COMMANDS } from "./commands-topic.ts";
import { credentials, namesrvAddrs, tlsOption, type Env } from "./credentials.ts";
import { commandHelp, nearest, parseFlags, UsageError, type Flags } from "./flags.ts";
import { Progress } from "./progress.ts";
import { AdminError, AdminSession } from "./session.ts";

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

const DEFAULT_TIMEOUT_MS = 5000;

export const COMMANDS: readonly Command[] = [
  ...TOPIC_COMMANDS,
  ...CLUSTER_COMMANDS,
  ...GROUP_COMMANDS,
  ...OFFSET_COMMANDS,
  ...MESSAGE_COMMANDS,
  ...PRODUCE_COMMANDS,
  ...CONFIG_COMMANDS,
  ...ACL_COMMANDS,
];

function findCommand(name: string): Command | undefined {
  const l = name.toLowerCase();
  return COMMANDS.find((c) => c.name.toLowerCase() === l || c.alias?.toLowerCase() === l);
}

export function adminHelp(): string {
  const w = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "Usage: rocketbun admin <command> -n NAMESRV [flags]",
    "",
    "mqadmin's commands and flags over the RocketMQ protocol (RocketBun or Apache RocketMQ).",
    "Tables by default, --json for scripts. Exit codes: 0 ok, 1 failed, 2 bad usage.",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(w)}  ${c.summary}`),
    "",
    "Run 'rocketbun admin <command> -h' for a command's flags.",
  ].join("\n");
}

/** Runs one admin command line (the arguments after `admin`); returns the exit code. */
export async function runAdmin(argv: readonly string[], env: Env = process.env): Promise<number> {
  const name = argv[0];
  if (name === undefined || name === "-h" || name === "--help" || name === "help") {
    const cmd = name === "help" && argv[1] !== undefined ? findCommand(argv[1]) : undefined;
    out(cmd ? commandHelp(cmd) : adminHelp());
    return EXIT_OK;
  }
  const cmd = findCommand(name);
  if (cmd === undefined) {
    const near = nearest(
      name,
      COMMANDS.map((c) => c.name),
    );
    err(`rocketbun admin: unknown command ${JSON.stringify(name)}${near !== undefined ? ` (did you mean ${near}?)` : ""}`);
    err("Run 'rocketbun admin --help' for the list of commands.");
    return EXIT_USAGE;
  }
  const parsed = parseFlags(cmd, argv.slice(1));
  if ("help" in parsed) {
    out(commandHelp(cmd));
    return EXIT_OK;
  }
  if ("errors" in parsed) return usage(cmd, parsed.errors);
  // The client library's own log lines (a heartbeat that failed) would mix into stdout.
  setLogLevel("error");
  try {
    return await runWith(cmd, parsed.flags, env);
  } catch (e) {
    if (e instanceof UsageError) return usage(cmd, [e.message]);
    err(`rocketbun admin ${cmd.name}: ${e instanceof AdminError ? "" : "error: "}${e instanceof Error ? e.message : String(e)}`);
    return EXIT_FAILED;
  }
}

function usage(cmd: Command, problems: readonly string[]): number {
  for (const p of problems) err(`rocketbun admin ${cmd.name}: ${p}`);
  err(`Run 'rocketbun admin ${cmd.name} -h' for usage.`);
  return EXIT_USAGE;
}

async function runWith(cmd: Command, flags: Flags, env: Env): Promise<number> {
  const creds = credentials(flags, env);
  const tls = tlsOption(flags);
  const session = new AdminSession({
    namesrv: namesrvAddrs(flags, env),
    timeoutMs: flags.int("timeout", DEFAULT_TIMEOUT_MS, 1, 600_000),
    ...(creds !== undefined ? { credentials: creds } : {}),
    ...(tls !== undefined ? { tls } : {}),
  });
  const json = flags.has("json");
  const ctx: CommandContext = {
    session,
    flags,
    progress: (label, total) => new Progress(label, total),
    emit: (o) => print(o, json, true),
    pause,
  };
  try {
    const o = await cmd.run(ctx);
    print(o, json, false);
    return o.failed ? EXIT_FAILED : EXIT_OK;
  } finally {
    await session.close();
  }
}

function print(o: Output, json: boolean, oneLine: boolean): void {
  if (json) {
    if (o.json !== null) out(JSON.stringify(o.json, null, oneLine ? undefined : 2));
  } else if (o.text !== "") out(o.text);
}

/**
 * Waits `ms`; SIGINT/SIGTERM during the wait end it early with false, so a repeating command
 * stops between rounds and still closes its connections. Outside a wait a signal ends the
 * process as usual.
 */
function pause(ms: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const done = (v: boolean) => {
      clearTimeout(t);
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve(v);
    };
    const stop = () => done(false);
    const t = setTimeout(() => done(true), ms);
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
