/**
 * The name server's only persisted state: namespace → key → value (e.g. ORDER_TOPIC_CONFIG,
 * topic → "broker-a:4;broker-b:4"), in `kvConfig.json` as RocketMQ writes it:
 *   {"configTable":{"ORDER_TOPIC_CONFIG":{"TopicA":"broker-a:4"}}}
 * Written atomically on every change.
 */
import { readFileWithBackup, writeFileAtomic } from "../common/atomic-file.ts";
import { parseJsonLenient } from "../common/json.ts";

export class KvConfigManager {
  readonly #path: string;
  readonly #table = new Map<string, Map<string, string>>();

  constructor(path: string) {
    this.#path = path;
  }

  /** Loads the file; a corrupt file (and corrupt backup) is an error the caller reports. */
  load(): void {
    const data = readFileWithBackup(this.#path, (text) => parseJsonLenient(text));
    if (data === null) return;
    const table = (data as { configTable?: unknown }).configTable;
    if (typeof table !== "object" || table === null) throw new Error(`${this.#path}: configTable missing`);
    for (const [ns, kv] of Object.entries(table as Record<string, unknown>)) {
      if (typeof kv !== "object" || kv === null) continue;
      const m = new Map<string, string>();
      for (const [k, v] of Object.entries(kv as Record<string, unknown>)) if (typeof v === "string") m.set(k, v);
      this.#table.set(ns, m);
    }
  }

  put(namespace: string, key: string, value: string): void {
    let m = this.#table.get(namespace);
    if (!m) this.#table.set(namespace, (m = new Map()));
    m.set(key, value);
    this.#persist();
  }

  get(namespace: string, key: string): string | undefined {
    return this.#table.get(namespace)?.get(key);
  }

  delete(namespace: string, key: string): void {
    const m = this.#table.get(namespace);
    if (!m || !m.delete(key)) return;
    if (m.size === 0) this.#table.delete(namespace);
    this.#persist();
  }

  list(namespace: string): Record<string, string> | undefined {
    const m = this.#table.get(namespace);
    return m && m.size > 0 ? Object.fromEntries(m) : undefined;
  }

  #persist(): void {
    const configTable: Record<string, Record<string, string>> = {};
    for (const [ns, m] of this.#table) configTable[ns] = Object.fromEntries(m);
    writeFileAtomic(this.#path, JSON.stringify({ configTable }, null, 2));
  }
}
