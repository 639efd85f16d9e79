/**
 * What a command of `rocketbun admin` is: its spec (name, flags: flags.ts) and a `run` that does
 * the work through the session and returns what to print, once as text (tables like mqadmin's)
 * and once as data (--json). The runner (index.ts) parses, connects, prints and picks the exit code.
 */
import { isInvalid, type Invalid } from "../common/invalid.ts";
import type { CommandSpec, Flags } from "./flags.ts";
import type { Progress } from "./progress.ts";
import { AdminError, type AdminSession } from "./session.ts";

export interface Output {
  /** Printed with --json (JSON.stringify, two-space indent). */
  readonly json: unknown;
  /** Printed otherwise. */
  readonly text: string;
  /** A partial failure (some brokers refused): printed, and the exit code is 1. */
  readonly failed?: boolean;
}

export interface CommandContext {
  readonly session: AdminSession;
  readonly flags: Flags;
  /** For long work: a progress line on stderr. */
  progress(label: string, total: number): Progress;
  /** Prints one round of a repeating command (-i) now; --json prints it as one line. */
  emit(o: Output): void;
  /** Waits `ms`; false when SIGINT/SIGTERM came first (a repeating command then stops). */
  pause(ms: number): Promise<boolean>;
}

export interface Command extends CommandSpec {
  run(ctx: CommandContext): Promise<Output>;
}

/** A decoded body, or an AdminError naming what could not be read from whom. */
export function readable<T>(v: T | Invalid, what: string): T {
  if (isInvalid(v)) throw new AdminError(`${what} is not readable: ${v.invalid}`);
  return v;
}

/** Runs `f` over `items` with at most `width` in flight, in order of the results. */
export async function mapLimit<T, R>(items: readonly T[], width: number, f: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return out;
}
