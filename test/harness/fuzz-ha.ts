/**
 * A fuzz campaign against a master's HA port (layouts in src/ha/transfer.ts): each connection
 * plays a fake slave that sends 8-byte reports — offsets at 0, inside the log, at its end, past
 * it, past 2^53 and 2^63 — identity reports with random replica ids, reports cut across writes,
 * and garbage, then holds the socket a little while and reads what the master streams.
 * Checked per connection: the master's stream decodes (ChunkDecoder) and never holds a chunk
 * larger than HA_CHUNK_MAX_BYTES; no chunk reaches past the master's log end.
 * A reported offset is not validated by RocketMQ's master either (a slave may ask anything); what
 * must hold is that the process lives, serves, and forgets the connection once it is closed.
 */
import { ChunkDecoder, encodeIdentity, encodeReport, HA_CHUNK_MAX_BYTES } from "../../src/ha/transfer.ts";
import { connectionRng, type Rng } from "./fuzz.ts";

export interface HaFuzzOptions {
  host: string;
  port: number;
  seed: number;
  /** Reports (and garbage pieces) to send in all. */
  inputs: number;
  concurrency: number;
  /** The master's CommitLog end; nothing is written during the campaign, so no chunk passes it. */
  maxOffset: number;
}

export interface HaFuzzReport {
  inputs: number;
  connections: number;
  chunks: number;
  bytesStreamed: number;
  closedByServer: number;
  findings: string[];
}

function report(rng: Rng, maxOffset: number): Uint8Array {
  switch (rng.int(0, 7)) {
    case 0:
      return encodeReport(0);
    case 1:
      return encodeReport(rng.int(0, maxOffset));
    case 2:
      return encodeReport(maxOffset);
    case 3:
      return encodeReport(maxOffset + rng.int(1, 1 << 30));
    case 4:
      return encodeIdentity(rng.int(0, 0xffffffff));
    case 5: {
      // Past 2^53 (not a safe integer) and the top bit set (negative as a Java long).
      const b = rng.bytes(8);
      b[0] = rng.pick([0x00, 0x7f, 0x80, 0xff, 0xfe]);
      return b;
    }
    case 6:
      return rng.bytes(rng.int(1, 7));
    default:
      return rng.bytes(rng.int(9, 200));
  }
}

async function oneConnection(o: HaFuzzOptions, conn: number, out: HaFuzzReport): Promise<number> {
  const rng = connectionRng(o.seed, conn);
  const pieces = Array.from({ length: rng.int(1, 8) }, () => report(rng, o.maxOffset));
  const decoder = new ChunkDecoder();
  let closed = false;
  let ending = false;
  const where = `HA connection ${conn}`;
  const socket = await Bun.connect({
    hostname: o.host,
    port: o.port,
    socket: {
      data(_s, chunk) {
        const r = decoder.feed(new Uint8Array(chunk));
        if (!Array.isArray(r)) {
          out.findings.push(`${where}: the master's stream does not decode: ${r.invalid}`);
          return;
        }
        for (const c of r) {
          out.chunks++;
          out.bytesStreamed += c.data.length;
          if (c.data.length > HA_CHUNK_MAX_BYTES) out.findings.push(`${where}: chunk of ${c.data.length} bytes`);
          if (c.offset + c.data.length > o.maxOffset) out.findings.push(`${where}: chunk [${c.offset}, +${c.data.length}) past the log end ${o.maxOffset}`);
        }
      },
      close() {
        closed ||= !ending;
      },
      error() {
        closed ||= !ending;
      },
    },
  });
  for (const p of pieces) {
    if (closed) break;
    socket.write(p);
    if (rng.bool(0.3)) await Bun.sleep(rng.int(1, 30));
  }
  await Bun.sleep(rng.int(20, 200));
  if (closed) out.closedByServer++;
  ending = true;
  socket.end();
  return pieces.length;
}

export async function fuzzHaPort(o: HaFuzzOptions): Promise<HaFuzzReport> {
  const out: HaFuzzReport = { inputs: 0, connections: 0, chunks: 0, bytesStreamed: 0, closedByServer: 0, findings: [] };
  const worker = async (): Promise<void> => {
    while (out.inputs < o.inputs) {
      const conn = out.connections++;
      try {
        const sent = await oneConnection(o, conn, out);
        out.inputs += sent;
      } catch (e) {
        out.findings.push(`HA connection ${conn}: ${String(e)}`);
        out.inputs++;
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  return out;
}
