/**
 * The store's ConsumeQueues, one per topic and queue id (RocketMQ's consumeQueueTable), under
 * `<store>/consumequeue/<topic>/<queueId>/`, and which of them hold units not yet flushed (the
 * checkpoint tick looks only at those, not at every queue).
 */
import { join } from "node:path";
import { ConsumeQueue } from "./consume-queue.ts";
import type { StoreDisk } from "./disk.ts";

export class ConsumeQueueTable {
  readonly #root: string;
  readonly #unitsPerFile: number;
  readonly #disk: StoreDisk;
  readonly #queues = new Map<string, Map<number, ConsumeQueue>>();
  /** Queues with units not yet flushed. */
  readonly unflushed = new Set<ConsumeQueue>();

  constructor(storeDir: string, unitsPerFile: number, disk: StoreDisk) {
    this.#root = join(storeDir, "consumequeue");
    this.#unitsPerFile = unitsPerFile;
    this.#disk = disk;
  }

  get(topic: string, queueId: number): ConsumeQueue | undefined {
    return this.#queues.get(topic)?.get(queueId);
  }

  getOrCreate(topic: string, queueId: number): ConsumeQueue {
    let byId = this.#queues.get(topic);
    if (!byId) this.#queues.set(topic, (byId = new Map()));
    let cq = byId.get(queueId);
    if (!cq) {
      cq = new ConsumeQueue(this.#root, topic, queueId, this.#unitsPerFile, this.#disk);
      byId.set(queueId, cq);
    }
    return cq;
  }

  *all(): Generator<ConsumeQueue> {
    for (const byId of this.#queues.values()) yield* byId.values();
  }

  /** Maps every queue found on disk; the problems their files showed. */
  loadAll(): string[] {
    const disk = this.#disk;
    if (!disk.exists(this.#root)) return [];
    const problems: string[] = [];
    for (const topic of disk.list(this.#root)) {
      if (!disk.isDirectory(join(this.#root, topic))) continue;
      for (const qid of disk.list(join(this.#root, topic))) {
        if (!/^\d+$/.test(qid)) continue;
        problems.push(...this.getOrCreate(topic, Number(qid)).load());
      }
    }
    return problems;
  }

  /** Topics with at least one ConsumeQueue, with their queue ids in order. */
  queueIds(): Map<string, number[]> {
    const out = new Map<string, number[]>();
    for (const [topic, byId] of this.#queues) out.set(topic, [...byId.keys()].sort((a, b) => a - b));
    return out;
  }

  /** Drops a topic's queues and their files; true when it had any. */
  deleteTopic(topic: string): boolean {
    const byId = this.#queues.get(topic);
    if (!byId) return false;
    for (const cq of byId.values()) {
      cq.destroy();
      this.unflushed.delete(cq);
    }
    this.#queues.delete(topic);
    this.#disk.remove(join(this.#root, topic));
    return true;
  }

  close(): void {
    for (const cq of this.all()) cq.close();
  }
}
