import { expect, test } from "bun:test";
import { scope } from "../common/log.ts";
import { createRequest } from "./command.ts";
import { RemotingConnection } from "./connection.ts";
import { FrameDecoder } from "./frame.ts";
import type { SocketLike } from "./transport.ts";

function fakeSocket(): SocketLike & { writes: Uint8Array[] } {
  const writes: Uint8Array[] = [];
  return {
    writes,
    write: (d) => {
      // A copy, as a real socket takes one: the connection reuses its buffer (Buffer.slice would be a view).
      writes.push(Uint8Array.prototype.slice.call(d));
      return d.length;
    },
    end: () => {},
    remoteAddress: "127.0.0.1",
    remotePort: 1,
  };
}

function conn(sock: SocketLike): RemotingConnection {
  return new RemotingConnection(sock, {
    frameSizeMaxBytes: 1 << 24,
    connectionBufferMaxBytes: 1 << 26,
    log: scope("test"),
    onRequest: () => {},
  });
}

function decodeAll(writes: Uint8Array[]): number[] {
  const d = new FrameDecoder();
  const out: number[] = [];
  for (const w of writes) {
    const r = d.feed(w);
    if (!Array.isArray(r)) throw new Error(r.invalid);
    for (const c of r) out.push(c.opaque);
  }
  return out;
}

test("small frames of one turn go out in one write, at the end of the turn", async () => {
  const sock = fakeSocket();
  const c = conn(sock);
  const reqs = Array.from({ length: 5 }, () => createRequest(10, { k: "v" }));
  for (const r of reqs) c.send(r);
  expect(sock.writes).toHaveLength(0);
  await Promise.resolve();
  expect(sock.writes).toHaveLength(1);
  expect(decodeAll(sock.writes)).toEqual(reqs.map((r) => r.opaque));
});

test("a burst is written in parts as it is queued (16 frames or 16 KiB), in order, nothing lost", async () => {
  const sock = fakeSocket();
  const c = conn(sock);
  const reqs = Array.from({ length: 40 }, () => createRequest(10, { k: "v" }, new Uint8Array(100)));
  for (const r of reqs) c.send(r);
  // 40 small frames: written after the 16th and the 32nd, the last 8 at the end of the turn.
  expect(sock.writes).toHaveLength(2);
  await Promise.resolve();
  expect(sock.writes).toHaveLength(3);
  expect(decodeAll(sock.writes)).toEqual(reqs.map((r) => r.opaque));

  const big = fakeSocket();
  const c2 = conn(big);
  const bigReqs = Array.from({ length: 6 }, () => createRequest(10, {}, new Uint8Array(6000)));
  for (const r of bigReqs) c2.send(r);
  // 6 × ~6 KiB: a write each time 16 KiB is reached (after the 3rd and the 6th).
  expect(big.writes).toHaveLength(2);
  await Promise.resolve();
  expect(big.writes).toHaveLength(2);
  expect(decodeAll(big.writes)).toEqual(bigReqs.map((r) => r.opaque));
});

test("a socket that takes only part of a write: the rest waits for drain, in order, while more is queued behind it", async () => {
  const writes: Uint8Array[] = [];
  let budget = 1000;
  const sock: SocketLike = {
    write: (d) => {
      const n = Math.min(budget, d.length);
      budget -= n;
      writes.push(Uint8Array.prototype.slice.call(d, 0, n));
      return n;
    },
    end: () => {},
    remoteAddress: "127.0.0.1",
    remotePort: 1,
  };
  const c = conn(sock);
  const reqs = Array.from({ length: 30 }, (_, i) => createRequest(10, { i: String(i) }, new Uint8Array(200).fill(i)));
  for (const r of reqs.slice(0, 20)) c.send(r);
  await Promise.resolve();
  // Queued while waiting for drain: appended behind the unwritten rest, not written yet.
  for (const r of reqs.slice(20)) c.send(r);
  await Promise.resolve();
  const before = writes.length;
  budget = Infinity;
  c.handleDrain();
  expect(writes.length).toBe(before + 1);
  expect(decodeAll(writes)).toEqual(reqs.map((r) => r.opaque));
});
