/**
 * The two kinds of table behind the broker's four config files, written once for all four (as
 * Java's managers all extend `ConfigManager`):
 *
 *   kind                  files                                   a change is
 *   --------------------  --------------------------------------  --------------------------------
 *   VersionedTableManager topics.json, subscriptionGroup.json     written at once (write-through),
 *                                                                 its dataVersion bumped
 *   OffsetTableManager    consumerOffset.json, delayOffset.json   marked dirty; a timer writes it
 *
 * Invariants: a versioned table's change is on disk before it is visible in memory, and its
 * dataVersion changes exactly when the table does; an offset table is dirty exactly when memory
 * differs from the last successful write. Loading never throws on bad content (metadata-file.ts).
 */
import { isInvalid, type Invalid } from "../common/invalid.ts";
import { nextVersion, sameVersion, type DataVersion } from "../protocol/data-version.ts";
import {
  type Decoded,
  type LoadedFrom,
  type MetadataOptions,
  configPath,
  dataVersionFromJson,
  entryProblem,
  isJsonObject,
  loadConfigFile,
  persistConfigFile,
  persistConfigFileAsync,
  show,
} from "./metadata-file.ts";

/**
 * The "write it if it changed" rule of the offset files (consumerOffset.json, delayOffset.json),
 * shared by their managers: `markDirty` on every change, then a timer calls `persistAsync` (one
 * write at a time, off the event loop) and shutdown calls `persistSync` after awaiting `idle()`.
 */
export class DirtyFile {
  readonly path: string;
  #dirty = false;
  #writing: Promise<boolean> | null = null;

  constructor(path: string) {
    this.path = path;
  }

  get dirty(): boolean {
    return this.#dirty;
  }

  markDirty(): void {
    this.#dirty = true;
  }

  /** Writes `body()` if anything changed; a write error is thrown and the file stays dirty. */
  persistSync(body: () => unknown): boolean {
    if (!this.#dirty) return false;
    persistConfigFile(this.path, body());
    this.#dirty = false;
    return true;
  }

  /**
   * As persistSync, off the event loop. The flag is cleared before the write starts: a change
   * made while it runs marks the file dirty again for the next call. Overlapping calls share
   * the write in progress.
   */
  persistAsync(body: () => unknown): Promise<boolean> {
    if (this.#writing) return this.#writing;
    if (!this.#dirty) return Promise.resolve(false);
    this.#dirty = false;
    const text = body();
    this.#writing = persistConfigFileAsync(this.path, text).then(
      () => {
        this.#writing = null;
        return true;
      },
      (e: unknown) => {
        this.#writing = null;
        this.#dirty = true;
        throw e;
      },
    );
    return this.#writing;
  }

  /** Resolves when no asynchronous write is running (before a final persistSync). */
  async idle(): Promise<void> {
    try {
      await this.#writing;
    } catch {
      // The caller's persistSync retries (the file stayed dirty).
    }
  }
}

/**
 * A table of offsets keyed by `K`, written when dirty (DirtyFile). Subclasses change `offsets`
 * and call `markDirty`; `adopt` applies a master's decoded body.
 */
export abstract class OffsetTableManager<K, V> {
  readonly #file: DirtyFile;
  readonly #label: string;
  readonly #decode: (raw: unknown) => Decoded<Map<K, V>> | Invalid;
  #loadedFrom: LoadedFrom = "none";
  protected offsets = new Map<K, V>();

  /** `label` names a master's body in the problems of `replaceAll`: `consumer offset body`. */
  protected constructor(opts: MetadataOptions, file: string, label: string, decode: (raw: unknown) => Decoded<Map<K, V>> | Invalid) {
    this.#file = new DirtyFile(configPath(opts.dir, file));
    this.#label = label;
    this.#decode = decode;
  }

  /** Reads the file (or its .bak), merged over what is in memory. Returns problems; see `loadedFrom`. */
  load(): string[] {
    const r = loadConfigFile(this.#file.path, this.#decode);
    this.#loadedFrom = r.from;
    if (r.value !== null) for (const [k, v] of r.value) this.offsets.set(k, v);
    return r.problems;
  }

  get loadedFrom(): LoadedFrom {
    return this.#loadedFrom;
  }

  get dirty(): boolean {
    return this.#file.dirty;
  }

  /** The GET_ALL_* body (and the file's content). */
  abstract table(): unknown;

  /**
   * A slave adopting its master's GET_ALL_* body through `adopt`. A malformed top level changes
   * nothing. Persists at once. Returns problems.
   */
  replaceAll(body: unknown): string[] {
    const d = this.#decode(body);
    if (isInvalid(d)) return [`${this.#label}: ${d.invalid}; nothing changed`];
    this.adopt(d.value);
    this.persistIfDirty();
    return d.problems.map((p) => `${this.#label}: ${p}`);
  }

  /**
   * Writes the file if anything changed since the last write; returns whether it wrote. A write
   * error is thrown and the table stays dirty, so the next call retries. The broker calls it
   * every 5 s and at shutdown.
   */
  persistIfDirty(): boolean {
    return this.#file.persistSync(() => this.table());
  }

  /** persistIfDirty off the event loop (the broker's timer); see DirtyFile. */
  persistIfDirtyAsync(): Promise<boolean> {
    return this.#file.persistAsync(() => this.table());
  }

  /** Resolves when no asynchronous write is running (before the final persistIfDirty). */
  idle(): Promise<void> {
    return this.#file.idle();
  }

  protected markDirty(): void {
    this.#file.markDirty();
  }

  /** Applies a master's body; marks the table dirty only if something changed (the slave polls every 10 s). */
  protected abstract adopt(master: Map<K, V>): void;
}

/** A versioned table as topics.json / subscriptionGroup.json and their GET_ALL_* bodies carry it. */
export interface VersionedTable<V> {
  dataVersion: DataVersion | null;
  entries: Map<string, V>;
}

export interface VersionedTableShape<V> {
  /** The file under `<storeDir>/config/`: `topics.json`, `subscriptionGroup.json`. */
  file: string;
  /** Names a master's body in the problems of `replaceAll`: `topic config body`. */
  label: string;
  /** The JSON key of the table: `topicConfigTable`, `subscriptionGroupTable`. */
  tableKey: string;
  /** The entry field that must equal its key: `topicName`, `groupName`. */
  nameField: string;
  fromJson: (raw: unknown) => V | Invalid;
  nameOf: (v: V) => string;
  toJson: (v: V) => unknown;
}

/** Top-level shape decides whether the copy is usable; each entry is checked on its own. */
export function decodeVersionedTable<V>(raw: unknown, shape: VersionedTableShape<V>): Decoded<VersionedTable<V>> | Invalid {
  if (!isJsonObject(raw)) return { invalid: "expected a JSON object at the top level" };
  const problems: string[] = [];
  let dataVersion: DataVersion | null = null;
  if (Object.hasOwn(raw, "dataVersion")) {
    const v = dataVersionFromJson(raw.dataVersion);
    if (isInvalid(v)) problems.push(`${v.invalid} (ignored)`);
    else dataVersion = v;
  }
  const k = shape.tableKey;
  const table = raw[k] ?? {};
  if (!isJsonObject(table)) return { invalid: `${k}: expected an object, got ${show(table)}` };
  const entries = new Map<string, V>();
  for (const [key, entry] of Object.entries(table)) {
    const c = shape.fromJson(entry);
    if (isInvalid(c)) problems.push(`${entryProblem(`${k}.${key}`, c.invalid)}; entry skipped`);
    else if (shape.nameOf(c) !== key) problems.push(`${k}.${key}.${shape.nameField}: ${show(shape.nameOf(c))} does not match its key; entry skipped`);
    else entries.set(key, Object.freeze(c));
  }
  return { value: { dataVersion, entries }, problems };
}

/** The `{dataVersion, <tableKey>: {...}}` body. Object.fromEntries keeps a key like "__proto__" a plain key. */
export function versionedTableBody<V>(shape: VersionedTableShape<V>, version: DataVersion, entries: Map<string, V>): Record<string, unknown> {
  return {
    dataVersion: { counter: version.counter, timestamp: version.timestamp },
    [shape.tableKey]: Object.fromEntries([...entries].map(([k, v]) => [k, shape.toJson(v)])),
  };
}

/**
 * A write-through table of named entries with its DataVersion. Subclasses validate and decide
 * what changes; every change goes through `put` or `delete`, which write the whole table first
 * and make it visible second, so a write error (thrown) leaves memory and disk as they were.
 */
export abstract class VersionedTableManager<V> {
  readonly #path: string;
  readonly #now: () => number;
  readonly #shape: VersionedTableShape<V>;
  #entries = new Map<string, V>();
  #version: DataVersion;
  #loadedFrom: LoadedFrom = "none";

  /** `initial` entries are in memory from the start and written with the first change. */
  protected constructor(opts: MetadataOptions, shape: VersionedTableShape<V>, initial: readonly V[] = []) {
    this.#path = configPath(opts.dir, shape.file);
    this.#now = opts.now ?? Date.now;
    this.#shape = shape;
    this.#version = { counter: 0, timestamp: this.#now() };
    for (const v of initial) this.#entries.set(shape.nameOf(v), Object.freeze(v));
  }

  /**
   * Reads the file (or its .bak). Returns problems; see `loadedFrom` for whether the table is
   * usable. Entries are merged over what is in memory, as Java's `putAll` does.
   */
  load(): string[] {
    const r = loadConfigFile(this.#path, (raw) => decodeVersionedTable(raw, this.#shape));
    this.#loadedFrom = r.from;
    if (r.value !== null) {
      for (const [k, v] of r.value.entries) this.#entries.set(k, v);
      if (r.value.dataVersion !== null) this.#version = r.value.dataVersion;
    }
    return r.problems;
  }

  /** "unreadable" means a file existed but neither copy parsed and the table is empty. */
  get loadedFrom(): LoadedFrom {
    return this.#loadedFrom;
  }

  get dataVersion(): DataVersion {
    return this.#version;
  }

  get(name: string): V | undefined {
    return this.#entries.get(name);
  }

  all(): V[] {
    return [...this.#entries.values()];
  }

  /** Returns whether the entry existed. */
  delete(name: string): boolean {
    if (!this.#entries.has(name)) return false;
    const next = new Map(this.#entries);
    next.delete(name);
    this.#commit(next, nextVersion(this.#version, this.#now()));
    return true;
  }

  /**
   * A slave adopting its master's GET_ALL_* body (Java `SlaveSynchronize`): replaced wholesale,
   * version included, when the master's dataVersion differs; a malformed top level changes
   * nothing; bad entries are skipped. Returns problems.
   */
  replaceAll(body: unknown): string[] {
    const label = this.#shape.label;
    const d = decodeVersionedTable(body, this.#shape);
    if (isInvalid(d)) return [`${label}: ${d.invalid}; nothing changed`];
    const problems = d.problems.map((p) => `${label}: ${p}`);
    if (d.value.dataVersion === null) return [...problems, `${label}: dataVersion missing or invalid; nothing changed`];
    if (!sameVersion(d.value.dataVersion, this.#version)) this.#commit(d.value.entries, d.value.dataVersion);
    return problems;
  }

  /** The file's content and the GET_ALL_* body. */
  protected body(): Record<string, unknown> {
    return versionedTableBody(this.#shape, this.#version, this.#entries);
  }

  /** Adds or replaces `values` (already valid) as one change: one version bump, one write. */
  protected put(values: readonly V[]): void {
    const next = new Map(this.#entries);
    for (const v of values) next.set(this.#shape.nameOf(v), Object.freeze(v));
    this.#commit(next, nextVersion(this.#version, this.#now()));
  }

  #commit(entries: Map<string, V>, version: DataVersion): void {
    persistConfigFile(this.#path, versionedTableBody(this.#shape, version, entries));
    this.#entries = entries;
    this.#version = version;
  }
}
