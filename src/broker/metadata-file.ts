/**
 * Shared plumbing for the four config JSON files under `<storeDir>/config/`: load with `.bak`
 * fallback and a loss report, persist atomically, and field readers that turn untrusted JSON into
 * typed values or a short reason (docs/CONVENTIONS.md §2). The tables built on it, and the
 * managers' common scaffolding, are in `metadata-table.ts`.
 *
 * Load outcomes (the recovery table; `metadata.test.ts` walks every row):
 *
 *   main file          | .bak          | result            | problems reported
 *   -------------------+---------------+-------------------+---------------------------------------
 *   absent             | absent        | "none"  (empty)   | none
 *   parses             | any           | "main"            | entry-level only
 *   absent             | parses        | "bak"             | main missing, previous version used
 *   unparsable         | parses        | "bak"             | latest version lost; kept as .corrupt
 *   unparsable/absent  | unparsable    | "unreadable"      | both copies kept as .corrupt; caller
 *                      |               |  (empty)          |  decides whether to start empty
 *
 * "Unparsable" means: not JSON (fastjson's unquoted numeric keys are fine), or the top-level shape
 * is wrong. A bad entry inside a good file is skipped and reported, never a reason to fall back,
 * because the `.bak` copy is older and would lose more than the one entry.
 *
 * Damaged copies are copied to `<name>.corrupt` before anything else happens: the next persist
 * copies the main file over `.bak`, which would otherwise destroy the operator's only evidence.
 */
import { copyFileSync, existsSync } from "node:fs";
import { basename, join } from "node:path";
import { readFileWithBackup, writeFileAtomic, writeFileAtomicAsync } from "../common/atomic-file.ts";
import { parseJsonLenient } from "../common/json.ts";
import { isInvalid, type Invalid } from "../common/invalid.ts";
import { INT32_MAX } from "../common/int32.ts";
import type { DataVersion } from "../protocol/data-version.ts";

export interface MetadataOptions {
  /** The store root; files live in `<dir>/config/`. */
  dir: string;
  /** Wall clock for DataVersion timestamps (ms); injectable for tests. */
  now?: () => number;
}

/** Where the last `load()` took its content from; see the table at the top of this file. */
export type LoadedFrom = "none" | "main" | "bak" | "unreadable";

export type JsonObject = Record<string, unknown>;

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function configPath(dir: string, file: string): string {
  return join(dir, "config", file);
}

export function dataVersionFromJson(raw: unknown): DataVersion | Invalid {
  if (!isJsonObject(raw)) return { invalid: "dataVersion: expected an object" };
  const counter = readInt(raw, "counter", 0, 0, Number.MAX_SAFE_INTEGER);
  if (isInvalid(counter)) return { invalid: `dataVersion.${counter.invalid}` };
  const timestamp = readInt(raw, "timestamp", 0, 0, Number.MAX_SAFE_INTEGER);
  if (isInvalid(timestamp)) return { invalid: `dataVersion.${timestamp.invalid}` };
  return { counter, timestamp };
}

/**
 * Reads an integer field. A missing field takes `def`, as fastjson leaves a bean's default when the
 * key is absent; a present field of the wrong type or out of range is a reason string.
 * Java longs beyond 2^53 cannot be represented exactly here, so they are rejected, not rounded.
 */
export function readInt(o: JsonObject, key: string, def: number, min: number, max: number): number | Invalid {
  if (!Object.hasOwn(o, key)) return def;
  const v = o[key];
  if (typeof v !== "number" || !Number.isSafeInteger(v)) return { invalid: `${key}: expected an integer, got ${show(v)}` };
  if (v < min || v > max) return { invalid: `${key}: ${v} is outside ${min}..${max}` };
  return v;
}

export function readBool(o: JsonObject, key: string, def: boolean): boolean | Invalid {
  if (!Object.hasOwn(o, key)) return def;
  const v = o[key];
  if (typeof v !== "boolean") return { invalid: `${key}: expected true or false, got ${show(v)}` };
  return v;
}

export function show(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

/** `table.key.field: reason` when the reason names a field, else `table.key: reason`. */
export function entryProblem(at: string, reason: string): string {
  return /^\w+: /.test(reason) ? `${at}.${reason}` : `${at}: ${reason}`;
}

export interface Decoded<T> {
  value: T;
  /** Entry-level problems (entries skipped), without the file prefix. */
  problems: string[];
}

export interface Loaded<T> {
  value: T | null;
  from: LoadedFrom;
  problems: string[];
}

/**
 * Loads one config file through `readFileWithBackup`. `decode` validates the top-level shape
 * (returning Invalid makes that copy count as unparsable, so the `.bak` is tried) and each entry
 * (skipping bad ones into `problems`). Never throws for bad content.
 */
export function loadConfigFile<T>(path: string, decode: (raw: unknown) => Decoded<T> | Invalid): Loaded<T> {
  const label = `config/${basename(path)}`;
  const bak = `${path}.bak`;
  const mainExists = existsSync(path);
  // readFileWithBackup tries the main file, then .bak, skipping absent ones; so the n-th failure
  // recorded here belongs to the n-th existing copy.
  const tried = [path, bak].filter((p) => existsSync(p));
  const failures: string[] = [];
  const parse = (text: string): Decoded<T> => {
    let raw: unknown;
    try {
      raw = parseJsonLenient(text);
    } catch (e) {
      failures.push(`not valid JSON (${e instanceof Error ? e.message : String(e)})`);
      throw e;
    }
    const d = decode(raw);
    if (isInvalid(d)) {
      failures.push(d.invalid);
      throw new Error(d.invalid);
    }
    return d;
  };

  let decoded: Decoded<T> | null;
  try {
    decoded = readFileWithBackup(path, parse);
  } catch (e) {
    // Neither copy is usable. Keep both for the operator, report, and let the caller decide.
    // An IO error (not a parse error) never reaches `parse`; then the reasons cannot be paired
    // with copies, so they are listed as they came.
    const reasons =
      failures.length === tried.length
        ? tried.map((p, i) => `${basename(p)}: ${failures[i]}`)
        : [...failures, e instanceof Error ? e.message : String(e)];
    const kept = tried.map((p) => keepCorrupt(p)).join("; ");
    return {
      value: null,
      from: "unreadable",
      problems: [`${label}: no readable copy (${reasons.join("; ")}); ${kept}; starting empty would lose this table`],
    };
  }
  if (decoded === null) return { value: null, from: "none", problems: [] };

  const problems = decoded.problems.map((p) => `${label}: ${p}`);
  if (failures.length > 0) {
    // The main copy existed and failed: the most recent change is lost, the one before it is used.
    problems.unshift(`${label}: unreadable (${failures[0]}); loaded the previous version from ${basename(bak)}; ${keepCorrupt(path)}`);
    return { value: decoded.value, from: "bak", problems };
  }
  if (!mainExists) {
    problems.unshift(`${label}: missing; loaded the previous version from ${basename(bak)}`);
    return { value: decoded.value, from: "bak", problems };
  }
  return { value: decoded.value, from: "main", problems };
}

function keepCorrupt(p: string): string {
  try {
    copyFileSync(p, `${p}.corrupt`);
    return `damaged copy kept as ${basename(p)}.corrupt`;
  } catch (e) {
    return `could not keep a copy of ${basename(p)} (${e instanceof Error ? e.message : String(e)})`;
  }
}

/** Pretty-printed (2 spaces) for operators; standard JSON, which fastjson and mqadmin also read. */
export function persistConfigFile(path: string, body: unknown): void {
  writeFileAtomic(path, `${JSON.stringify(body, null, 2)}\n`);
}

/** persistConfigFile with the fsyncs on the thread pool (periodic writes on a busy broker). */
export function persistConfigFileAsync(path: string, body: unknown): Promise<void> {
  return writeFileAtomicAsync(path, `${JSON.stringify(body, null, 2)}\n`);
}
