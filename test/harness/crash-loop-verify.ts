/**
 * The crash loop's check (test/harness/crash-loop.ts): every queue of the topic read back over the
 * wire from offset 0 (raw PULL_MESSAGE, CRCs checked), then compared with what the Java client was
 * told. An acknowledged message is kept when the record at its acknowledged queue and queue offset
 * carries its body; lost otherwise (and "moved" when its body is stored elsewhere). A key stored
 * twice is a duplicate: "retried" when the client has a reason to have sent it twice (its
 * acknowledged copy is one of them, or the send failed after retries), "other" when not; two
 * queue entries for one CommitLog record would be the store's own duplicate ("same record").
 */
import { decodeRecordAt, parseProperties } from "../../src/common/message-record.ts";
import type { FlushDiskType } from "../../src/protocol/broker-config.ts";
import { createRequest, RequestCode, ResponseCode } from "../../src/remoting/index.ts";
import type { ChaosAck, ChaosFail } from "./chaos-client.ts";
import { newClient } from "./wire.ts";

export interface StoredMessage {
  body: string;
  key: string;
  queueId: number;
  queueOffset: number;
  commitLogOffset: number;
}

const PULL_BATCH = 32;

/** Every message of `topic`'s queues, in queue order, through PULL_MESSAGE from offset 0. */
export async function readBack(broker: string, topic: string, queues: number): Promise<StoredMessage[]> {
  const c = newClient();
  const out: StoredMessage[] = [];
  try {
    for (let q = 0; q < queues; q++) {
      const maxRes = await c.invoke(broker, createRequest(RequestCode.GET_MAX_OFFSET, { topic, queueId: String(q) }), 10_000);
      const max = Number(maxRes.extFields?.offset ?? -1);
      if (maxRes.code !== ResponseCode.SUCCESS || max < 0) throw new Error(`GET_MAX_OFFSET ${topic}/${q}: ${maxRes.code} ${maxRes.remark ?? ""}`);
      for (let offset = 0; offset < max; ) {
        const res = await c.invoke(broker, createRequest(RequestCode.PULL_MESSAGE, pullFields(topic, q, offset)), 10_000);
        if (res.code !== ResponseCode.SUCCESS || !res.body) throw new Error(`PULL ${topic}/${q}@${offset} of ${max}: ${res.code} ${res.remark ?? ""}`);
        decodePullBody(res.body, out);
        const next = Number(res.extFields?.nextBeginOffset ?? offset);
        if (next <= offset) throw new Error(`PULL ${topic}/${q}@${offset}: no progress`);
        offset = next;
      }
    }
  } finally {
    await c.close();
  }
  return out;
}

function pullFields(topic: string, queueId: number, offset: number): Record<string, string> {
  return {
    consumerGroup: "crash-loop-verify",
    topic,
    queueId: String(queueId),
    queueOffset: String(offset),
    maxMsgNums: String(PULL_BATCH),
    sysFlag: "4",
    commitOffset: "0",
    suspendTimeoutMillis: "0",
    subscription: "*",
    subVersion: "0",
  };
}

function decodePullBody(body: Uint8Array, into: StoredMessage[]): void {
  const dec = new TextDecoder();
  for (let p = 0; p < body.length; ) {
    const r = decodeRecordAt(body, p, { checkCrc: true });
    if ("invalid" in r) throw new Error(`a pulled record does not decode: ${r.invalid}`);
    if ("blank" in r || "end" in r) throw new Error("a pull answer holds a blank or an end marker");
    const key = parseProperties(r.properties).KEYS ?? "";
    into.push({ body: dec.decode(r.body), key, queueId: r.queueId, queueOffset: r.queueOffset, commitLogOffset: r.physicalOffset });
    p += r.totalSize;
  }
}

export interface Verdict {
  acked: Record<FlushDiskType, number>;
  /** Acknowledged, and not at the acknowledged place: bodies, by the acknowledging master's mode. */
  lost: Record<FlushDiskType, string[]>;
  /** Of the lost, those whose body is stored at another place. */
  moved: string[];
  stored: number;
  duplicates: { retried: number; other: string[]; sameRecord: number };
  /** Failed sends whose message is stored all the same (not a loss: the client was told nothing). */
  storedThoughFailed: number;
  /** Acknowledged but never received by the consumer. */
  notConsumed: string[];
}

export function verify(o: {
  acks: ChaosAck[];
  fails: ChaosFail[];
  stored: StoredMessage[];
  received: Set<string>;
  modeOfAck: (a: ChaosAck) => FlushDiskType;
}): Verdict {
  const at = new Map<string, StoredMessage>();
  const byKey = new Map<string, StoredMessage[]>();
  const byRecord = new Map<number, number>();
  for (const m of o.stored) {
    at.set(`${m.queueId}/${m.queueOffset}`, m);
    byKey.set(m.key, [...(byKey.get(m.key) ?? []), m]);
    byRecord.set(m.commitLogOffset, (byRecord.get(m.commitLogOffset) ?? 0) + 1);
  }
  const v: Verdict = {
    acked: { ASYNC_FLUSH: 0, SYNC_FLUSH: 0 },
    lost: { ASYNC_FLUSH: [], SYNC_FLUSH: [] },
    moved: [],
    stored: o.stored.length,
    duplicates: { retried: 0, other: [], sameRecord: [...byRecord.values()].filter((n) => n > 1).length },
    storedThoughFailed: o.fails.filter((f) => byKey.has(f.body)).length,
    notConsumed: o.acks.filter((a) => !o.received.has(a.body)).map((a) => a.body),
  };
  const ackOf = new Map(o.acks.map((a) => [a.body, a]));
  const failed = new Set(o.fails.map((f) => f.body));
  for (const a of o.acks) {
    const mode = o.modeOfAck(a);
    v.acked[mode]++;
    if (at.get(`${a.queueId}/${a.queueOffset}`)?.body === a.body) continue;
    v.lost[mode].push(a.body);
    if (byKey.has(a.body)) v.moved.push(a.body);
  }
  for (const [key, copies] of byKey) {
    if (copies.length < 2) continue;
    const a = ackOf.get(key);
    const explained = failed.has(key) || (a !== undefined && copies.some((m) => m.queueId === a.queueId && m.queueOffset === a.queueOffset));
    if (explained) v.duplicates.retried += copies.length - 1;
    else v.duplicates.other.push(key);
  }
  return v;
}
