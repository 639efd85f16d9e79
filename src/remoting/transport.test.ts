import { afterEach, expect, test } from "bun:test";
import { chunksAreOwned, connectSocket } from "./transport.ts";
import { FrameDecoder } from "./frame.ts";

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.splice(0)) c();
});

/**
 * The frame decoder keeps views into socket chunks instead of copying them (chunksOwned) because
 * Bun hands every read a buffer of its own and never writes into it again. If a Bun upgrade starts
 * reusing a receive buffer, this fails before any message body gets overwritten.
 */
test("Bun gives every socket read its own buffer, never reused (both Bun.listen and Bun.connect sides)", async () => {
  expect(chunksAreOwned).toBe(true);
  const serverKept: Uint8Array[] = [];
  const clientKept: Uint8Array[] = [];
  const server = Bun.listen<undefined>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      binaryType: "uint8array",
      data(s, c) {
        serverKept.push(c);
        // Echo a differently filled buffer so the client side sees many reads too.
        s.write(new Uint8Array(c.length).fill((c[0]! + 1) & 0xff));
      },
    },
  });
  cleanup.push(() => server.stop(true));
  const sock = await connectSocket("127.0.0.1", server.port, {
    open() {},
    data: (c) => clientKept.push(c),
    drain() {},
    close() {},
  });
  cleanup.push(() => sock.end());
  for (let i = 0; i < 40; i++) {
    sock.write(new Uint8Array(60_000 + i).fill(i * 2));
    await Bun.sleep(2);
  }
  const deadline = performance.now() + 3000;
  const total = (l: Uint8Array[]) => l.reduce((n, c) => n + c.length, 0);
  while (total(clientKept) < total(serverKept) || total(serverKept) < 40 * 60_000) {
    if (performance.now() > deadline) throw new Error("echo did not complete");
    await Bun.sleep(5);
  }
  for (const kept of [serverKept, clientKept]) {
    expect(kept.length).toBeGreaterThan(5);
    const buffers = new Set<ArrayBufferLike>();
    for (const c of kept) {
      // Each chunk still holds only what was sent in it (one fill value per write; a read may
      // straddle two writes, so at most two values, in order) ...
      const values = new Set(c);
      expect(values.size).toBeLessThanOrEqual(2);
      // ... and no two reads share storage.
      expect(buffers.has(c.buffer)).toBe(false);
      buffers.add(c.buffer);
    }
  }
});

test("with owned chunks, bodies are views into the chunk (no copy) and survive later feeds", () => {
  const frame = (body: number[]) => {
    const header = new TextEncoder().encode('{"code":1,"flag":0,"opaque":1,"version":1}');
    const out = new Uint8Array(8 + header.length + body.length);
    const len = 4 + header.length + body.length;
    out.set([len >>> 24, (len >>> 16) & 255, (len >>> 8) & 255, len & 255, 0, 0, 0, header.length], 0);
    out.set(header, 8);
    out.set(body, 8 + header.length);
    return out;
  };
  const a = frame([1, 2, 3]);
  const b = frame([4, 5, 6, 7]);
  const chunk = new Uint8Array(a.length + b.length + 3);
  chunk.set(a, 0);
  chunk.set(b, a.length);
  chunk.set(b.subarray(0, 3), a.length + b.length); // the start of a third frame
  const d = new FrameDecoder({ frameSizeMaxBytes: 1 << 20, chunksOwned: true });
  const got = d.feed(chunk);
  if (!Array.isArray(got)) throw new Error(got.invalid);
  expect(got.map((c) => [...c.body!])).toEqual([
    [1, 2, 3],
    [4, 5, 6, 7],
  ]);
  expect(got[0]!.body!.buffer).toBe(chunk.buffer);
  const rest = d.feed(b.subarray(3));
  if (!Array.isArray(rest)) throw new Error(rest.invalid);
  expect([...rest[0]!.body!]).toEqual([4, 5, 6, 7]);
  // The earlier bodies are untouched by the later feed.
  expect([...got[1]!.body!]).toEqual([4, 5, 6, 7]);

  // Not owned: a private copy, whatever happens to the chunk afterwards.
  const copyDecoder = new FrameDecoder({ frameSizeMaxBytes: 1 << 20 });
  const c = a.slice();
  const copied = copyDecoder.feed(c);
  if (!Array.isArray(copied)) throw new Error(copied.invalid);
  c.fill(0);
  expect([...copied[0]!.body!]).toEqual([1, 2, 3]);
});
