/**
 * The one place in src/ that writes to the console. Every component gets a scoped logger
 * (`log.scope("namesrv")`) so lines carry their origin; hot paths use `rateLimited` so a flood of
 * bad frames cannot flood the log.
 */
export type LogLevel = "debug" | "info" | "warn" | "error";

export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

let threshold = RANK.info;

export function setLogLevel(level: LogLevel): void {
  threshold = RANK[level];
}

export interface Logger {
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
  /** Logs at most once per `intervalMs` per key; counts what it suppressed. */
  rateLimited(level: LogLevel, key: string, msg: string, intervalMs?: number): void;
}

function emit(level: LogLevel, scope: string, msg: string): void {
  if (RANK[level] < threshold) return;
  const line = `${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} [${scope}] ${msg}`;
  if (level === "error" || level === "warn") console.error(line);
  else console.log(line);
}

export function scope(name: string): Logger {
  const last = new Map<string, { at: number; suppressed: number }>();
  return {
    debug: (m) => emit("debug", name, m),
    info: (m) => emit("info", name, m),
    warn: (m) => emit("warn", name, m),
    error: (m) => emit("error", name, m),
    rateLimited(level, key, msg, intervalMs = 5000) {
      const now = Date.now();
      const prev = last.get(key);
      if (prev && now - prev.at < intervalMs) {
        prev.suppressed++;
        return;
      }
      const suffix = prev && prev.suppressed > 0 ? ` (${prev.suppressed} similar suppressed)` : "";
      last.set(key, { at: now, suppressed: 0 });
      emit(level, name, msg + suffix);
    },
  };
}

/** Plain output for the CLI (start-up line, --print-config, config errors): no timestamp/scope. */
export function out(text: string): void {
  console.log(text);
}

export function err(text: string): void {
  console.error(text);
}
