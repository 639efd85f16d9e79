/**
 * Split tests in the style of NATS `split_test.go`: a stream of captured/golden frames is cut at
 * every byte offset (two pieces), and fed one byte at a time. However TCP slices the stream, the
 * decoder must produce exactly the commands of the unsplit stream and end with nothing buffered.
 */
import { describe, expect, test } from "bun:test";
import { type RemotingCommand, SerializeType } from "./command.ts";
import { encodeCommand, FrameDecoder } from "./frame.ts";
import { concat, readGoldenHex } from "./test-support.ts";

function commands(r: RemotingCommand[] | { invalid: string }): RemotingCommand[] {
  if (!Array.isArray(r)) throw new Error(`unexpected invalid: ${r.invalid}`);
  return r;
}

/** Frame end offsets within `stream` (where each complete frame stops). */
function frameEnds(stream: Uint8Array): number[] {
  const view = new DataView(stream.buffer, stream.byteOffset, stream.byteLength);
  const ends: number[] = [];
  for (let pos = 0; pos < stream.length;) {
    pos += 4 + view.getUint32(pos);
    ends.push(pos);
  }
  return ends;
}

async function buildStream(): Promise<Uint8Array> {
  const frames = [
    await readGoldenHex("ali-ons-send-message-v2.json-frame.hex"),
    await readGoldenHex("rocketmq-send-message-v2.binary-frame.hex"),
    await readGoldenHex("java-send-message-v2-response.json-frame.hex"),
    // Bigger than the decoder's initial 4 KiB pending buffer, so a cut inside it grows the buffer.
    encodeCommand({
      code: 11,
      language: "JAVA",
      version: 409,
      opaque: 77,
      flag: 0,
      serializeType: SerializeType.ROCKETMQ,
      remark: "big",
      extFields: { topic: "T", queueId: "3" },
      body: new Uint8Array(5000).map((_, i) => i & 0xff),
    }),
    // A header-only frame last: the stream ends on a frame boundary with no body.
    encodeCommand({ code: 0, language: "JAVA", version: 409, opaque: 78, flag: 1, serializeType: SerializeType.JSON }),
  ];
  return concat(...frames);
}

describe("FrameDecoder split tests", async () => {
  const stream = await buildStream();
  const whole = commands(new FrameDecoder().feed(stream));
  const ends = frameEnds(stream);

  test("the unsplit stream decodes to all frames", () => {
    expect(whole.map((c) => c.opaque)).toEqual([7, 16909060, 7, 77, 78]);
    expect(ends.at(-1)).toBe(stream.length);
  });

  test("cut at every byte offset into two pieces", () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      const d = new FrameDecoder();
      const first = commands(d.feed(stream.subarray(0, cut)));
      const complete = ends.filter((e) => e <= cut);
      if (first.length !== complete.length) {
        throw new Error(`cut ${cut}: ${first.length} commands from the first piece, expected ${complete.length}`);
      }
      const expectBuffered = cut - (complete.at(-1) ?? 0);
      if (d.bufferedBytes !== expectBuffered) throw new Error(`cut ${cut}: buffered ${d.bufferedBytes}, expected ${expectBuffered}`);
      const all = first.concat(commands(d.feed(stream.subarray(cut))));
      expect(all).toEqual(whole);
      expect(d.bufferedBytes).toBe(0);
    }
  });

  test("fed one byte at a time", () => {
    const d = new FrameDecoder();
    const all: RemotingCommand[] = [];
    for (let i = 0; i < stream.length; i++) {
      const got = commands(d.feed(stream.subarray(i, i + 1)));
      // A command can only complete on the last byte of its frame.
      if (got.length > 0 && !ends.includes(i + 1)) throw new Error(`command completed at byte ${i + 1}, not a frame end`);
      all.push(...got);
    }
    expect(all).toEqual(whole);
    expect(d.bufferedBytes).toBe(0);
  });

  test("fed through a copied, reused chunk buffer (the socket layer may recycle its buffer)", () => {
    // Each piece is copied into the same scratch array, which is overwritten before the next feed.
    const scratch = new Uint8Array(97);
    const d = new FrameDecoder();
    const all: RemotingCommand[] = [];
    for (let pos = 0; pos < stream.length; pos += scratch.length) {
      const piece = stream.subarray(pos, pos + scratch.length);
      scratch.set(piece);
      all.push(...commands(d.feed(scratch.subarray(0, piece.length))));
      scratch.fill(0xee);
    }
    expect(all).toEqual(whole);
    expect(d.bufferedBytes).toBe(0);
  });

  test("cut at every pair of offsets near each frame boundary (three pieces)", () => {
    for (const end of ends.slice(0, -1)) {
      for (let i = Math.max(0, end - 10); i <= end + 10; i++) {
        for (let j = i; j <= Math.min(stream.length, end + 20); j++) {
          const d = new FrameDecoder();
          const all = [stream.subarray(0, i), stream.subarray(i, j), stream.subarray(j)].flatMap((p) => commands(d.feed(p)));
          expect(all).toEqual(whole);
          expect(d.bufferedBytes).toBe(0);
        }
      }
    }
  });
});

describe("FrameDecoder memory for a partial frame", () => {
  const big = encodeCommand({
    code: 320,
    language: "JAVA",
    version: 409,
    opaque: 9,
    flag: 0,
    serializeType: SerializeType.ROCKETMQ,
    extFields: { b: "T" },
    body: new Uint8Array(15 * 1024 * 1024).map((_, i) => (i * 7) & 0xff),
  });

  test("a peer that announces a 15 MiB frame and stalls holds at most 64 KiB or twice what it sent", () => {
    for (const sent of [4, 8, 1000, 65_536, 300_000]) {
      const d = new FrameDecoder({ frameSizeMaxBytes: 16 * 1024 * 1024 });
      expect(commands(d.feed(big.subarray(0, sent)))).toEqual([]);
      expect(d.bufferedBytes).toBe(sent);
      expect(d.reservedBytes).toBeLessThanOrEqual(sent + Math.max(sent, 64 * 1024));
    }
  });

  test("a frame arriving in 64 KiB reads grows its buffer a logarithmic number of times, not once per read", () => {
    const d = new FrameDecoder({ frameSizeMaxBytes: 16 * 1024 * 1024 });
    const sizes = new Set<number>();
    let got: RemotingCommand[] = [];
    for (let i = 0; i < big.length; i += 65_536) {
      got = commands(d.feed(big.subarray(i, i + 65_536)));
      if (d.reservedBytes > 0) sizes.add(d.reservedBytes);
    }
    // 241 reads; doubling from 128 KiB to 16 MiB is 8 sizes. Reallocating to stay a fixed distance
    // ahead of every read (as the decoder once did past 1 MiB) made a new size per read.
    expect(sizes.size).toBeLessThanOrEqual(10);
    expect(got.length).toBe(1);
    expect(got[0]!.body).toEqual(big.subarray(big.length - 15 * 1024 * 1024));
    expect(d.reservedBytes).toBe(0);
  });
});
