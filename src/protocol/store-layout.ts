/**
 * The fixed sizes of RocketMQ's stored structures that layers other than the store compute with
 * (config/ checks file sizes against them; tools size files from them). The layouts themselves
 * are drawn at the top of the files that own them: src/commitlog/consume-queue.ts (docs/STORAGE.md
 * §3) and src/commitlog/index-file.ts (docs/STORAGE.md §4).
 */

/** One ConsumeQueue unit: CommitLog offset (8), record size (4), tag code (8). */
export const CQ_UNIT_SIZE = 20;

/** IndexFile: a 40-byte header, then 4-byte hash slots, then 20-byte entries. */
export const INDEX_HEADER_SIZE_BYTES = 40;
export const INDEX_SLOT_SIZE_BYTES = 4;
export const INDEX_ENTRY_SIZE_BYTES = 20;

/** Size of one IndexFile for a slot and entry count (RocketMQ's defaults give 420000040 bytes). */
export function indexFileBytes(slotNum: number, indexNum: number): number {
  return INDEX_HEADER_SIZE_BYTES + slotNum * INDEX_SLOT_SIZE_BYTES + indexNum * INDEX_ENTRY_SIZE_BYTES;
}
