/**
 * The runtime settings the broker is measured and shipped with, applied before anything else runs.
 *
 * Bun reads both from the environment once, at process start, so a process that lacks them
 * replaces itself (execve: same PID, same argv) with one that has them. The systemd unit, `npm
 * start` and the benchmark set them, so they start once; a binary run by hand pays one extra
 * runtime start (~15–30 ms) instead of running untuned. A variable already in the environment is
 * left as it is, so either can be overridden (e.g. `BUN_JSC_useFTLJIT=1`);
 * `ROCKETBUN_RUNTIME_TUNING=off` turns the re-exec off.
 *
 * - MIMALLOC_PURGE_DELAY=-1: Bun's allocator otherwise hands freed pages back to the kernel after
 *   every burst; its madvise + page faults cost 20–45 % of W1/W4 throughput here, in the broker
 *   and in a client process alike (bench W1/W4 with delays 10, 200 and 1000 ms, session 4).
 * - BUN_JSC_useFTLJIT=0: JSC's fourth tier. The broker's hot paths are object and buffer
 *   plumbing that the DFG tier already compiles well: with FTL off, bench W1/W2/W4/W5 broker CPU
 *   per message was the same within noise (W1 11.0–11.1 vs 11.8–12.5 µs, W2 1.8–1.9 vs 1.9), and
 *   RSS after W1 was 12 MiB lower (112–113 vs 124–125 MiB): FTL's compiler threads allocate
 *   heavily while the broker warms up, and with the purge delay above that memory stays resident.
 */
export const RUNTIME_ENV: Readonly<Record<string, string>> = {
  MIMALLOC_PURGE_DELAY: "-1",
  BUN_JSC_useFTLJIT: "0",
};

/**
 * `rocketbun bench producer|consumer` is a client: FTL stays on there (the producer ran 10–13 %
 * faster with it: 57.7k vs 50.9k and 86.0k vs 78.1k msgs/s, 4 s runs against a standalone broker).
 */
const CLIENT_ENV: Readonly<Record<string, string>> = { MIMALLOC_PURGE_DELAY: "-1" };

const GUARD = "ROCKETBUN_RUNTIME_TUNED";

/** The argv that starts this same program again: the compiled binary, or `bun [flags] script`. */
function selfArgv(): string[] {
  const script = process.argv[1] ?? "";
  const compiled = script.startsWith("/$bunfs/") || script.startsWith("B:/~BUN/");
  return compiled ? [process.execPath, ...process.argv.slice(2)] : [process.execPath, ...process.execArgv, script, ...process.argv.slice(2)];
}

/** The settings for this command line: the client's for the bench subcommand, else the server's. */
export function wantedEnv(args: readonly string[]): Readonly<Record<string, string>> {
  return args[0] === "bench" ? CLIENT_ENV : RUNTIME_ENV;
}

/** The variables of `wanted` missing from `env` (empty: nothing to do). */
export function missingRuntimeEnv(env: NodeJS.ProcessEnv, wanted: Readonly<Record<string, string>> = RUNTIME_ENV): Record<string, string> {
  const missing: Record<string, string> = {};
  for (const [k, v] of Object.entries(wanted)) if (env[k] === undefined) missing[k] = v;
  return missing;
}

/** Called first by server.ts; returns only when this process already runs with the settings (or cannot re-exec). */
export function applyRuntimeTuning(): void {
  const env = process.env;
  if (env.ROCKETBUN_RUNTIME_TUNING === "off" || env[GUARD] === "1") return;
  const missing = missingRuntimeEnv(env, wantedEnv(process.argv.slice(2)));
  if (Object.keys(missing).length === 0 || typeof process.execve !== "function") return;
  try {
    process.execve(process.execPath, selfArgv(), { ...env, ...missing, [GUARD]: "1" });
  } catch {
    // execve failed (e.g. the binary was replaced on disk): run untuned rather than not at all.
  }
}
