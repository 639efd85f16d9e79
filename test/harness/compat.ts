/**
 * Results of the compatibility suites, one row per scenario × client × broker, appended by each
 * suite as it runs to test/artifacts/compat/<client>.jsonl. `scripts/compat-matrix.ts` turns the
 * rows of the last run into docs/COMPATIBILITY.md (npm test runs it after the suites).
 */
import { test } from "bun:test";
import { appendFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./binary.ts";
import type { BrokerKind } from "./interop-cluster.ts";

export const COMPAT_DIR = join(ROOT, "test", "artifacts", "compat");

/** The client columns of the matrix. */
export type CompatClient = "ali-ons" | "java-4.9.8" | "java-5.3.3" | "go-v2" | "mqadmin-4.9.8" | "rocketbun-client";

export interface CompatRow {
  scenario: string;
  client: CompatClient;
  /** "apache-5" (Apache RocketMQ 5.3.3) gets its own columns, in the tables that have such rows only. */
  broker: BrokerKind;
  ok: boolean;
  /** Why it failed (first lines), or what it measured. */
  detail?: string;
}

export function recordCompat(row: CompatRow): void {
  mkdirSync(COMPAT_DIR, { recursive: true });
  appendFileSync(join(COMPAT_DIR, `${row.client}.jsonl`), `${JSON.stringify({ ...row, at: new Date().toISOString() })}\n`);
}

/**
 * `test` for a suite whose every test is a compatibility scenario of one client against one
 * broker: records the outcome as a row (the test's title is the scenario) and rethrows failures.
 */
export function compatTest(client: CompatClient, broker: BrokerKind) {
  return (name: string, fn: () => unknown, timeoutMs?: number): void => {
    test(
      name,
      async () => {
        try {
          await fn();
        } catch (e) {
          recordCompat({ scenario: name, client, broker, ok: false, detail: String(e).slice(0, 400) });
          throw e;
        }
        recordCompat({ scenario: name, client, broker, ok: true });
      },
      timeoutMs,
    );
  };
}
