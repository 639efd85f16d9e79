import { expect, test } from "bun:test";
import { scope } from "../common/log.ts";
import { createRequest, createResponse } from "./command.ts";
import { RemotingConnection } from "./connection.ts";
import { encodeCommand, FrameDecoder } from "./frame.ts";
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

/** A socket that takes `budget` bytes and then nothing until the budget is raised; a connection answering every request with a 64 KiB body. */
function stalledPeer(limitBytes: number) {
  const state = { budget: 0, ended: false, processed: [] as number[] };
  const sock: SocketLike = {
    write: (d) => {
      const n = Math.min(state.budget, d.length);
      state.budget -= n;
      return n;
    },
    end: () => {
      state.ended = true;
    },
    remoteAddress: "127.0.0.1",
    remotePort: 1,
  };
  const c: RemotingConnection = new RemotingConnection(sock, {
    frameSizeMaxBytes: 1 << 24,
    connectionBufferMaxBytes: limitBytes,
    log: scope("test"),
    onRequest: (conn, cmd) => {
      state.processed.push(Number(cmd.extFields?.i));
      conn.send(createResponse(cmd, 0, undefined, undefined, new Uint8Array(64 * 1024)));
    },
  });
  const requests = (from: number, n: number) => encodeAll(Array.from({ length: n }, (_, k) => createRequest(11, { i: String(from + k) })));
  return { state, c, requests };
}

function encodeAll(cmds: ReturnType<typeof createRequest>[]): Uint8Array {
  return Buffer.concat(cmds.map((cmd) => encodeCommand(cmd)));
}

test("a peer that stops reading: its requests wait once its answers back up, and run in order when it drains", () => {
  const { state, c, requests } = stalledPeer(64 << 20);
  // 100 requests in one read, nothing taken by the socket: answers queue up to 1 MiB (16 of 64 KiB), the rest wait.
  c.handleData(requests(0, 100));
  expect(state.processed).toEqual(Array.from({ length: 16 }, (_, i) => i));
  c.handleData(requests(100, 10));
  expect(state.processed.length).toBe(16);
  expect(c.closed).toBe(false);
  // It reads again: everything runs, in arrival order.
  state.budget = Infinity;
  c.handleDrain();
  expect(state.processed).toEqual(Array.from({ length: 110 }, (_, i) => i));
});

test("a peer that stops reading and keeps sending is closed once 4,096 requests wait", () => {
  const { state, c, requests } = stalledPeer(64 << 20);
  c.handleData(requests(0, 4000));
  expect(c.closed).toBe(false);
  c.handleData(requests(4000, 200));
  expect(c.closed).toBe(true);
  expect(state.ended).toBe(true);
  // Nothing past the first 16 ran: the answers of a peer that reads none are not built.
  expect(state.processed.length).toBe(16);
});

test("with a small connectionBufferMaxBytes, requests wait from a quarter of it", () => {
  const { state, c, requests } = stalledPeer(1 << 20);
  c.handleData(requests(0, 20));
  expect(state.processed.length).toBe(4);
  expect(c.closed).toBe(false);
});
