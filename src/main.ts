/**
 * The `rocketbun` program, run by server.ts: argv → config → start the role's components → signals
 * (SIGTERM/SIGINT stop; SIGHUP reloads the config through runtime-config.ts).
 * Nothing else lives here. Exit codes: 0 = clean, 2 = bad command line or config (nothing was
 * started), 1 = failure at run time.
 */
import { writeFileSync } from "node:fs";
import { HELP_TEXT, parseArgs } from "./cli/args.ts";
import { loadConfig, toYaml } from "./config/load.ts";
import { RuntimeConfig, type RuntimeTargets } from "./runtime-config.ts";
import { preflight } from "./config/preflight.ts";
import type { Config } from "./config/schema.ts";
import { err, out, scope, setLogLevel } from "./common/log.ts";
import { TlsContext } from "./common/tls.ts";
import { buildAdminApp, startAdminServer, type AdminServer, type AdminTls } from "./admin/index.ts";
import { BrokerController } from "./broker/index.ts";
import { NamesrvController } from "./namesrv/index.ts";
import { GIT_COMMIT, VERSION } from "./version.ts";

const EXIT_CONFIG = 2;
const SHUTDOWN_DEADLINE_MS = 9000;
const log = scope("server");

interface Running {
  stop(): Promise<void>;
}

function fmt(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if ("errors" in args) {
    for (const e of args.errors) err(`rocketbun: ${e}`);
    err("Run 'rocketbun --help' for usage.");
    return EXIT_CONFIG;
  }
  if (args.action === "version") {
    out(`rocketbun ${VERSION} (commit ${GIT_COMMIT}, bun ${Bun.version})`);
    return 0;
  }
  if (args.action === "help") {
    out(args.helpText ?? HELP_TEXT);
    return 0;
  }
  // Loaded only for `bench`: the client library and the node:zlib / node:crypto modules it uses
  // are not part of a server's start (they kept ~9 MiB of the executable and heap resident).
  if (args.action === "bench" && args.bench) return await (await import("./bench-cli.ts")).runBench(args.bench);
  // Likewise for `admin` (mqadmin's commands over the wire; src/admin-cli/).
  if (args.action === "admin" && args.admin) return await (await import("./admin-cli/index.ts")).runAdmin(args.admin);
  const loaded = loadConfig(args.flags.config !== undefined ? { file: args.flags.config, flags: args.flags } : { flags: args.flags });
  if ("errors" in loaded) {
    for (const e of loaded.errors) err(e);
    err(`rocketbun: ${loaded.errors.length} configuration problem(s); nothing was started`);
    return EXIT_CONFIG;
  }
  for (const w of loaded.warnings ?? []) err(`rocketbun: warning: ${w}`);
  const config = loaded.config;
  if (args.action === "print-config") {
    out(toYaml(config));
    return 0;
  }
  const problems = await preflight(config, loaded);
  if (problems.length > 0) {
    for (const p of problems) err(p);
    err(`rocketbun: ${problems.length} configuration problem(s); nothing was started`);
    return EXIT_CONFIG;
  }
  if (args.action === "check-config") {
    out(`rocketbun: configuration OK (role ${config.role})`);
    return 0;
  }
  setLogLevel(config.logLevel);
  const tls = await loadTls(config);
  if (!tls) return EXIT_CONFIG;
  // Filled in by startRole as the components come up; the runtime config applies reloads to them.
  const targets: RuntimeTargets = { setLogLevel, resolveNamesrvAddr: (list) => list, reloadTls: () => tls.reload() };
  const runtime = new RuntimeConfig({ config, sources: loaded.sources, file: args.flags.config, flags: args.flags, targets });
  // Installed before anything starts: without a handler a SIGHUP would terminate the process.
  // One that arrives during start-up is run once the components are there.
  let started = false;
  let hupDuringStart = false;
  process.on("SIGHUP", () => {
    if (started) void runtime.reload();
    else hupDuringStart = true;
  });
  let running: Running;
  try {
    running = startRole(config, args.flags.portsFile, runtime, targets, tls);
  } catch (e) {
    err(`rocketbun: cannot start: ${e instanceof Error ? e.message : String(e)}`);
    return EXIT_CONFIG;
  }
  started = true;
  if (hupDuringStart) void runtime.reload();
  return await waitForSignal(running);
}

/** One TLS context for every port and outgoing connection of the process; SIGHUP re-reads its files. */
async function loadTls(config: Config): Promise<TlsContext | undefined> {
  try {
    return await TlsContext.load(config.tls, scope("tls"));
  } catch (e) {
    // Preflight checked the files a moment ago: only a file changed since then gets here.
    err(`rocketbun: cannot start: ${e instanceof Error ? e.message : String(e)}`);
    return undefined;
  }
}

/** What start-up has done so far: how to undo it, the ports for --ports-file, the start-up line. */
interface Startup {
  readonly config: Config;
  readonly runtime: RuntimeConfig;
  readonly targets: RuntimeTargets;
  readonly stops: (() => void | Promise<void>)[];
  readonly ports: Record<string, number | string>;
  readonly line: string[];
  /** The TLS material of every port (serverPem() for an HTTPS admin port). */
  readonly tls: TlsContext;
}

/** Starts everything or nothing: a failure part-way stops what already started, then rethrows. */
function startRole(config: Config, portsFile: string | undefined, runtime: RuntimeConfig, targets: RuntimeTargets, tls: TlsContext): Running {
  const startedAt = Date.now();
  const s: Startup = {
    config,
    runtime,
    targets,
    tls,
    stops: [],
    ports: { pid: process.pid, role: config.role },
    line: [`role=${config.role}`, `version=${VERSION}`],
  };
  try {
    const namesrv = config.role === "namesrv" || config.role === "standalone" ? startNamesrv(s) : undefined;
    const broker = config.role !== "namesrv" ? startBroker(s, namesrv) : undefined;
    startAdmin(s, startedAt, namesrv, broker);
    if (portsFile) writeFileSync(portsFile, JSON.stringify(s.ports) + "\n");
    out(`rocketbun started: ${s.line.join(" ")}`);
  } catch (e) {
    for (const stop of s.stops.reverse()) void stop();
    throw e;
  }
  return {
    async stop() {
      for (const stop of s.stops.reverse()) await stop();
    },
  };
}

function startNamesrv(s: Startup): NamesrvController {
  const ns = s.config.namesrv;
  const namesrv = new NamesrvController({
    namesrv: ns,
    remoting: s.config.remoting,
    storeDir: s.config.store.dir,
    configAccess: s.runtime.namesrvAccess(),
    tls: s.tls,
  });
  const port = bindOrExplain("namesrv.listen", ns.listen.host, ns.listen.port, () => namesrv.start());
  s.stops.push(() => namesrv.stop());
  s.targets.namesrv = namesrv;
  s.ports.namesrv = port;
  s.line.push(`${s.config.role === "namesrv" ? "listen" : "namesrv"}=${fmt(ns.listen.host, port)}`);
  return namesrv;
}

function startBroker(s: Startup, own: NamesrvController | undefined): BrokerController {
  const { config } = s;
  const b = config.broker;
  const broker = new BrokerController({
    broker: b,
    store: config.store,
    remoting: config.remoting,
    configAccess: s.runtime.brokerAccess(),
    tls: s.tls,
  });
  const bound = bindOrExplain("broker.listen", b.listen.host, b.listen.port, () => broker.bind());
  // Standalone without namesrvAddr: register with our own name server (also after a reload).
  const resolve = (list: string[]): string[] => {
    if (list.length > 0 || !own) return list;
    const h = config.namesrv.listen.host;
    return [fmt(h === "0.0.0.0" || h === "::" ? "127.0.0.1" : h, own.port)];
  };
  broker.start(resolve(b.namesrvAddr));
  s.stops.push(() => broker.stop());
  s.targets.broker = broker;
  s.targets.resolveNamesrvAddr = resolve;
  s.ports.broker = bound.listen;
  s.ports.vip = bound.vip;
  s.ports.ha = bound.ha;
  s.line.push(`listen=${fmt(b.listen.host, bound.listen)}`);
  return broker;
}

/** The HTTP admin API: the broker's admin address when a broker runs, else the name server's. */
function startAdmin(s: Startup, startedAt: number, namesrv: NamesrvController | undefined, broker: BrokerController | undefined): void {
  const { config } = s;
  const adminAddr = config.role === "namesrv" ? config.namesrv.admin : config.broker.admin;
  const app = buildAdminApp({
    role: config.role,
    version: VERSION,
    startedAt,
    config: () => s.runtime.describe(),
    token: () => s.runtime.adminToken(),
    reload: () => s.runtime.reload(),
    ...(namesrv ? { namesrv: namesrv.info, namesrvAtRoot: !broker } : {}),
    ...(broker ? { broker: broker.info } : {}),
  });
  const key = config.role === "namesrv" ? "namesrv.admin" : "broker.admin";
  const tls = config.admin.https ? adminTls(s.tls) : undefined;
  const admin: AdminServer = bindOrExplain(key, adminAddr.host, adminAddr.port, () => startAdminServer(app, adminAddr.host, adminAddr.port, tls));
  s.stops.push(() => admin.stop());
  s.ports.admin = admin.port;
  s.line.push(`admin=${tls ? "https://" : ""}${fmt(adminAddr.host, admin.port)}`, `store=${config.store.dir}`);
}

/** admin.https: the remoting ports' certificate (the config check guarantees there is one). */
function adminTls(tls: TlsContext): AdminTls {
  const pem = () => {
    const p = tls.serverPem();
    if (!p) throw new Error("admin.https: no certificate is loaded (tls.certPath / tls.keyPath)");
    return { cert: p.cert, key: p.key, ...(p.passphrase !== undefined ? { passphrase: p.passphrase } : {}) };
  };
  return { pem, onChange: (listener) => tls.onServerPemChange(() => listener()) };
}

function bindOrExplain<T>(key: string, host: string, port: number, bind: () => T): T {
  try {
    return bind();
  } catch (e) {
    const code = (e as { code?: string }).code;
    const why = code === "EADDRINUSE" ? "is already in use" : `cannot be bound (${e instanceof Error ? e.message : String(e)})`;
    throw new Error(`${key}: ${fmt(host, port)} ${why}`);
  }
}

function waitForSignal(running: Running): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    const shutdown = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info(`${signal} received: shutting down`);
      const deadline = setTimeout(() => {
        log.error(`shutdown did not finish within ${SHUTDOWN_DEADLINE_MS} ms; exiting anyway`);
        resolve(1);
      }, SHUTDOWN_DEADLINE_MS);
      running.stop().then(
        () => {
          clearTimeout(deadline);
          log.info("stopped");
          resolve(0);
        },
        (e) => {
          clearTimeout(deadline);
          log.error(`shutdown failed: ${e instanceof Error ? e.message : String(e)}`);
          resolve(1);
        },
      );
    };
    process.on("SIGTERM", () => shutdown("SIGTERM"));
    process.on("SIGINT", () => shutdown("SIGINT"));
  });
}

process.exit(await main(process.argv.slice(2)));
