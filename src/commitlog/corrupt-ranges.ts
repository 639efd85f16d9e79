/**
 * The CommitLog ranges the store never serves (docs/STORAGE.md §9.3): damage recovery found,
 * damage the master streamed as such, records found superseded by a later record with the same
 * queue offset. Kept sorted by `from` in `<store>/corrupt.json` (atomic, with a `.bak`), so a
 * restart still knows them after the bytes' neighbours were verified again.
 */
import { join } from "node:path";
import type { StoreDisk } from "./disk.ts";
import type { CorruptRange } from "./recovery.ts";

export class CorruptRanges {
  readonly #path: string;
  readonly #disk: StoreDisk;
  #ranges: CorruptRange[] = [];

  constructor(storeDir: string, disk: StoreDisk) {
    this.#path = join(storeDir, "corrupt.json");
    this.#disk = disk;
  }

  get list(): readonly CorruptRange[] {
    return this.#ranges;
  }

  get size(): number {
    return this.#ranges.length;
  }

  /**
   * At the end of recovery: newly found damage merged with what earlier runs recorded, minus what
   * lies past the log's end or below its start; persisted when there is anything to keep or drop.
   */
  load(found: CorruptRange[], endOffset: number, minOffset: number): void {
    const old = this.#read();
    const keep = [...old, ...found].filter((r) => r.to <= endOffset && r.to > minOffset);
    const unique = new Map(keep.map((r) => [`${r.from}-${r.to}`, r]));
    this.#ranges = [...unique.values()].sort((a, b) => a.from - b.from);
    if (this.#ranges.length > 0 || old.length > 0) this.#save();
  }

  has(phy: number): boolean {
    for (const r of this.#ranges) if (phy >= r.from && phy < r.to) return true;
    return false;
  }

  /** The range holding `offset`, if any. */
  at(offset: number): CorruptRange | undefined {
    return this.#ranges.find((r) => offset >= r.from && offset < r.to);
  }

  /** Replicated bytes the master marked damaged, at the log's end: consecutive parts of one range merge. */
  appendStreamed(from: number, to: number, reason: string): void {
    const last = this.#ranges.at(-1);
    if (last !== undefined && last.to === from) last.to = to;
    else this.#ranges.push({ from, to, reason: `streamed by the master: ${reason}` });
    this.#save();
  }

  /** A range anywhere in the log, kept in order. */
  insert(range: CorruptRange): void {
    const at = this.#ranges.findIndex((r) => r.from > range.from);
    this.#ranges.splice(at < 0 ? this.#ranges.length : at, 0, range);
    this.#save();
  }

  #save(): void {
    this.#disk.writeFileAtomic(this.#path, JSON.stringify(this.#ranges, null, 2));
  }

  /** corrupt.json, or its `.bak` when the main copy is missing or unparsable (readFileWithBackup's rule). */
  #read(): CorruptRange[] {
    let firstError: unknown = null;
    for (const p of [this.#path, `${this.#path}.bak`]) {
      const bytes = this.#disk.readFile(p);
      if (bytes === null) continue;
      try {
        return JSON.parse(new TextDecoder().decode(bytes)) as CorruptRange[];
      } catch (e) {
        firstError ??= e;
      }
    }
    if (firstError !== null) throw firstError;
    return [];
  }
}
