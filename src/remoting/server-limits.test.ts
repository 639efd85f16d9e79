/**
 * The remoting server's connection limits over real sockets on 127.0.0.1 (port 0):
 * remoting.maxConnections (silent sockets count too), remoting.frameTimeoutMs (a slow sender is
 * cut, a well-behaved peer on the same port is not) and remoting.idleTimeoutMs (silent before the
 * first byte, or quiet after a request), remoting.partialFramesMaxBytes, and
 * remoting.maxNewConnectionsPerSecondPerAddress. Deadlines are short here; waits poll with a deadline.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { Socket } from "bun";
import { createRequest, createResponse, type RemotingCommand } from "./command.ts";
import { encodeCommand, FrameDecoder } from "./frame.ts";
import { ResponseCode } from "./response-code.ts";
import { RemotingServer, type ConnectionLimits } from "./server.ts";
import { recordingLogger, u32 } from "./test-support.ts";

const PING = 9001;

async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(5);
  }
}

interface Peer {
  closed: boolean;
  responses: RemotingCommand[];
  socket: Socket<undefined>;
  ping(): Promise<RemotingCommand>;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

async function peer(port: number): Promise<Peer> {
  const decoder = new FrameDecoder();
  const p: Peer = {
    closed: false,
    responses: [],
    socket: undefined as unknown as Socket<undefined>,
    async ping() {
      const req = createRequest(PING);
      const before = p.responses.length;
      p.socket.write(encodeCommand(req));
      await waitFor(() => p.responses.length > before || p.closed, 3000, "the ping's answer");
      const r = p.responses[before];
      if (r === undefined) throw new Error("closed before the answer");
      return r;
    },
  };
  p.socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      binaryType: "uint8array",
      data: (_s, chunk) => {
        const r = decoder.feed(chunk);
        if (Array.isArray(r)) p.responses.push(...r);
      },
      close: () => {
        p.closed = true;
      },
      error: () => {
        p.closed = true;
      },
    },
  });
  cleanups.push(() => p.socket.terminate());
  return p;
}

function server(limits: ConnectionLimits) {
  const log = recordingLogger();
  const s = new RemotingServer({ host: "127.0.0.1", port: 0, frameSizeMaxBytes: 1 << 20, connectionBufferMaxBytes: 1 << 20, log, limits });
  s.register(PING, { process: (_c, cmd) => createResponse(cmd, ResponseCode.SUCCESS) });
  s.start();
  cleanups.push(() => s.stop());
  return { s, log };
}

describe("remoting connection limits (real sockets)", () => {
  test("maxConnections: silent sockets count; one more is closed at once with a warning; a freed slot is taken again", async () => {
    const { s, log } = server({ maxConnections: 3, idleTimeoutMs: 0, frameTimeoutMs: 0 });
    const held = [await peer(s.port), await peer(s.port), await peer(s.port)];
    await waitFor(() => s.socketCount === 3, 2000, "3 sockets counted");
    const extra = await peer(s.port);
    await waitFor(() => extra.closed, 2000, "the 4th socket to be closed");
    expect(log.lines.some((l) => l.level === "warn" && /refused: 3 connections open, the limit \(remoting\.maxConnections\)/.test(l.msg))).toBe(true);
    // The held ones still work, and a slot freed is taken by the next.
    expect((await held[0]!.ping()).code).toBe(ResponseCode.SUCCESS);
    held[1]!.socket.end();
    await waitFor(() => s.socketCount === 2, 2000, "the count to drop to 2");
    const next = await peer(s.port);
    expect((await next.ping()).code).toBe(ResponseCode.SUCCESS);
    expect(s.socketCount).toBe(3);
  });

  test("maxNewConnectionsPerSecondPerAddress: past a second's worth, new connections are closed unanswered; connected ones are served; the rate refills", async () => {
    const { s, log } = server({ maxConnections: 0, idleTimeoutMs: 0, frameTimeoutMs: 0, maxNewConnectionsPerSecondPerAddress: 5 });
    const first = await peer(s.port);
    expect((await first.ping()).code).toBe(ResponseCode.SUCCESS);
    // 20 more at once from the same host: the bucket had 4 tokens left (and refills 5 a second).
    const storm = await Promise.all(Array.from({ length: 20 }, () => peer(s.port)));
    for (const p of storm) p.socket.write(encodeCommand(createRequest(PING)));
    await waitFor(() => storm.every((p) => p.closed || p.responses.length > 0), 3000, "every storm connection answered or closed");
    const answered = storm.filter((p) => p.responses.length > 0).length;
    expect(answered).toBeGreaterThanOrEqual(4);
    expect(answered).toBeLessThanOrEqual(6);
    expect(storm.filter((p) => p.closed && p.responses.length === 0).length).toBe(20 - answered);
    expect(log.lines.some((l) => l.level === "warn" && /refused: over 5 new connections a second from this address \(remoting\.maxNewConnectionsPerSecondPerAddress\)/.test(l.msg))).toBe(
      true,
    );
    // The connection made before the storm is untouched, and after a second the host may connect again.
    expect((await first.ping()).code).toBe(ResponseCode.SUCCESS);
    await Bun.sleep(1100);
    const later = await peer(s.port);
    expect((await later.ping()).code).toBe(ResponseCode.SUCCESS);
  });

  test("frameTimeoutMs: a peer sending a frame a byte at a time is closed; a well-behaved peer is served throughout", async () => {
    const { s, log } = server({ maxConnections: 0, idleTimeoutMs: 0, frameTimeoutMs: 400 });
    const slow = await peer(s.port);
    const good = await peer(s.port);
    const frame = encodeCommand(createRequest(PING));
    slow.socket.write(u32(frame.length - 4));
    let sent = 4;
    const started = performance.now();
    let answered = 0;
    while (!slow.closed && performance.now() - started < 5000) {
      if (sent < frame.length - 1) slow.socket.write(frame.subarray(sent, ++sent));
      if ((await good.ping()).code === ResponseCode.SUCCESS) answered++;
      await Bun.sleep(40);
    }
    const took = performance.now() - started;
    expect(slow.closed).toBe(true);
    expect(took).toBeGreaterThanOrEqual(400);
    expect(slow.responses).toEqual([]);
    expect(good.closed).toBe(false);
    expect(answered).toBeGreaterThan(3);
    expect(log.lines.some((l) => /a frame begun \d+ ms ago is not complete \(\d+ bytes; remoting\.frameTimeoutMs 400\)/.test(l.msg))).toBe(true);
  });

  test("idleTimeoutMs: silent from the start, or quiet after a request, is closed; a peer with traffic is kept", async () => {
    const { s } = server({ maxConnections: 0, idleTimeoutMs: 400, frameTimeoutMs: 0 });
    const silent = await peer(s.port);
    const quiet = await peer(s.port);
    const chatty = await peer(s.port);
    expect((await quiet.ping()).code).toBe(ResponseCode.SUCCESS);
    const started = performance.now();
    while (performance.now() - started < 1500) {
      expect((await chatty.ping()).code).toBe(ResponseCode.SUCCESS);
      await Bun.sleep(50);
    }
    expect(silent.closed).toBe(true);
    expect(quiet.closed).toBe(true);
    expect(chatty.closed).toBe(false);
    await waitFor(() => s.socketCount === 1, 2000, "only the chatty socket to be counted");
  });

  test("partialFramesMaxBytes: peers holding partial frames add up to the limit; the one past it is closed; the others finish", async () => {
    const { s, log } = server({ maxConnections: 0, idleTimeoutMs: 0, frameTimeoutMs: 0, partialFramesMaxBytes: 1 << 20 });
    // Pings with a 900 KiB body. A partial frame holds what arrived and at most as much again,
    // never more than the whole frame (frame.ts).
    const big = encodeCommand(createRequest(PING, undefined, new Uint8Array(900 * 1024)));
    const a = await peer(s.port);
    const b = await peer(s.port);
    const c = await peer(s.port);
    const good = await peer(s.port);
    a.socket.write(big.subarray(0, 100 * 1024));
    b.socket.write(big.subarray(0, 100 * 1024));
    // A connection is made at its first byte: these two are A's and B's.
    await waitFor(() => s.connectionCount === 2, 2000, "A's and B's first reads");
    await Bun.sleep(50);
    // A and B hold 128–200 KiB each; all of C's frame but a byte (900 KiB) takes the port past 1 MiB.
    c.socket.write(big.subarray(0, big.length - 1));
    await waitFor(() => c.closed, 2000, "the peer past the limit to be closed");
    expect(a.closed || b.closed).toBe(false);
    expect(log.lines.some((l) => l.level === "warn" && /over remoting\.partialFramesMaxBytes \(1\.0 MiB\)/.test(l.msg))).toBe(true);
    expect((await good.ping()).code).toBe(ResponseCode.SUCCESS);
    // B leaves, and its charge is returned: A may now grow to its whole frame, and is answered.
    b.socket.end();
    await waitFor(() => s.connectionCount === 2, 2000, "B's close");
    a.socket.write(big.subarray(100 * 1024));
    await waitFor(() => a.responses.length === 1 || a.closed, 3000, "A's answer");
    expect(a.responses.map((r) => r.code)).toEqual([ResponseCode.SUCCESS]);
  });
});
