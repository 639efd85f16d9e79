/**
 * RemotingServer over real sockets on 127.0.0.1, port 0. Peers are raw Bun.connect sockets that
 * write hand-made bytes (ali-ons style JSON, ROCKETMQ binary, garbage, partial frames) and decode
 * what comes back with a FrameDecoder. Every server and socket is closed in afterEach.
 * Waits poll a condition with a deadline; nothing sleeps for a fixed time.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { Socket } from "bun";
import { createResponse, FLAG_ONEWAY, FLAG_RESPONSE, type RemotingCommand, SerializeType } from "./command.ts";
import type { RemotingConnection } from "./connection.ts";
import { FrameDecoder } from "./frame.ts";
import type { RequestHook } from "./pipeline.ts";
import type { ProcessResult, RequestProcessor } from "./processor.ts";
import { RequestCode } from "./request-code.ts";
import { RequestStats } from "./request-stats.ts";
import { ResponseCode } from "./response-code.ts";
import { RemotingServer } from "./server.ts";
import { concat, frameBytes, recordingLogger, rocketmqHeaderBytes, u32, utf8 } from "./test-support.ts";

async function waitFor(cond: () => boolean, timeoutMs = 2000, what = "condition"): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** Lets pending socket callbacks run; used between writes that must not be coalesced by us. */
const tick = () => new Promise((r) => setImmediate(r));

interface RawPeer {
  received: RemotingCommand[];
  /** Every byte received, to check the serialize-type byte of responses. */
  bytes: Uint8Array[];
  closed: boolean;
  invalid: string | null;
  write(bytes: Uint8Array): void;
  /** The next response not yet returned by next(). */
  next(what?: string): Promise<RemotingCommand>;
  end(): void;
}

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function rawPeer(port: number): Promise<RawPeer> {
  const decoder = new FrameDecoder();
  let taken = 0;
  const peer: RawPeer = {
    received: [],
    bytes: [],
    closed: false,
    invalid: null,
    write(bytes) {
      const n = socket.write(bytes);
      if (n !== bytes.length) throw new Error(`short write ${n}/${bytes.length}`);
    },
    async next(what = "a response") {
      await waitFor(() => peer.received.length > taken || peer.closed, 2000, what);
      const c = peer.received[taken];
      if (!c) throw new Error(`connection closed while waiting for ${what}`);
      taken++;
      return c;
    },
    end() {
      socket.end();
    },
  };
  const socket: Socket<undefined> = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      binaryType: "uint8array",
      data(_s, chunk) {
        peer.bytes.push(Uint8Array.from(chunk));
        const r = decoder.feed(chunk);
        if (Array.isArray(r)) peer.received.push(...r);
        else peer.invalid = r.invalid;
      },
      close() {
        peer.closed = true;
      },
      error() {
        peer.closed = true;
      },
    },
  });
  cleanups.push(() => {
    if (!peer.closed) socket.terminate();
  });
  return peer;
}

function startServer(processors: Record<number, RequestProcessor> = {}, frameSizeMaxBytes = 1024 * 1024, hooks: RequestHook[] = []) {
  const log = recordingLogger();
  const server = new RemotingServer({ host: "127.0.0.1", port: 0, frameSizeMaxBytes, connectionBufferMaxBytes: 4 * 1024 * 1024, log, hooks });
  for (const [code, p] of Object.entries(processors)) server.register(Number(code), p);
  const port = server.start();
  cleanups.push(() => server.stop());
  return { server, port, log };
}

/** An ali-ons style JSON request: its key order, native JSON ext values. */
function aliOnsRequest(code: number, opaque: number, flag = 0, extJson = '{"d":4,"k":false}', body?: Uint8Array): Uint8Array {
  const header = `{"code":${code},"language":"JAVA","opaque":${opaque},"flag":${flag},"version":121,"extFields":${extJson}}`;
  return frameBytes(0, utf8(header), body);
}

function binaryRequest(code: number, opaque: number, flag = 0): Uint8Array {
  return frameBytes(
    1,
    rocketmqHeaderBytes({
      code,
      languageByte: 0,
      version: 409,
      opaque,
      flag,
      remark: utf8("from java"),
      ext: [
        [utf8("d"), utf8("4")],
        [utf8("k"), utf8("false")],
      ],
    }),
    utf8("payload"),
  );
}

/**
 * Reads a response the way ali-ons 3.12.0 does (docs/PROTOCOL.md §1.1): the whole word at offset 4
 * is the header length (no type mask), and the header always goes through JSON.parse.
 */
function aliOnsDecode(frame: Uint8Array): { header: Record<string, unknown>; body: Uint8Array } {
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  const length = view.getInt32(0);
  const headerLength = view.getInt32(4);
  const header = JSON.parse(new TextDecoder().decode(frame.subarray(8, 8 + headerLength))) as Record<string, unknown>;
  return { header, body: frame.subarray(8 + headerLength, 4 + length) };
}

/** Echoes the request's ext fields and body back, and counts calls. */
function echo(): RequestProcessor & { calls: RemotingCommand[] } {
  const calls: RemotingCommand[] = [];
  return {
    calls,
    process(_conn, cmd) {
      calls.push(cmd);
      return createResponse(cmd, ResponseCode.SUCCESS, undefined, { ...cmd.extFields, seen: String(cmd.opaque) }, cmd.body);
    },
  };
}

describe("RemotingServer", () => {
  test("binds port 0 to a real port", () => {
    const { server, port } = startServer();
    expect(port).toBeGreaterThan(0);
    expect(server.port).toBe(port);
  });

  test("a JSON request from an ali-ons-style peer gets a JSON response with the same opaque and flag 1", async () => {
    const p = echo();
    const { port } = startServer({ 310: p });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(310, 7, 0, '{"d":4,"k":false}', utf8("body!")));
    const res = await peer.next();
    expect(res).toMatchObject({ code: ResponseCode.SUCCESS, opaque: 7, flag: FLAG_RESPONSE, serializeType: SerializeType.JSON });
    expect(res.extFields).toEqual({ d: "4", k: "false", seen: "7" });
    expect(res.body).toEqual(utf8("body!"));
    // ali-ons' own decoding of the bytes we sent works: type byte 0, a JSON header, the body after it.
    const seenByAliOns = aliOnsDecode(concat(...peer.bytes));
    expect(seenByAliOns.header).toMatchObject({ code: 0, opaque: 7, flag: 1, extFields: { d: "4", k: "false", seen: "7" } });
    expect(seenByAliOns.body).toEqual(utf8("body!"));
    expect(p.calls[0]!.extFields).toEqual({ d: "4", k: "false" });
  });

  test("a ROCKETMQ request gets a ROCKETMQ response", async () => {
    const { port } = startServer({ 310: echo() });
    const peer = await rawPeer(port);
    peer.write(binaryRequest(310, 0x01020304));
    const res = await peer.next();
    expect(res).toMatchObject({ code: 0, opaque: 0x01020304, flag: FLAG_RESPONSE, serializeType: SerializeType.ROCKETMQ });
    expect(res.extFields).toEqual({ d: "4", k: "false", seen: String(0x01020304) });
    expect(res.body).toEqual(utf8("payload"));
    expect(peer.bytes[0]![4]).toBe(1);
  });

  test("an unknown code gets REQUEST_CODE_NOT_SUPPORTED with a remark, in the request's serialize type", async () => {
    const { port } = startServer({ 310: echo() });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(9999, 5));
    const json = await peer.next();
    expect(json).toMatchObject({ code: ResponseCode.REQUEST_CODE_NOT_SUPPORTED, opaque: 5, flag: FLAG_RESPONSE, serializeType: 0 });
    expect(json.remark).toBe(" request type 9999 not supported");
    peer.write(binaryRequest(4242, 6));
    const bin = await peer.next();
    expect(bin).toMatchObject({ code: 3, opaque: 6, serializeType: 1, remark: " request type 4242 not supported" });
  });

  test("a processor that throws gets SYSTEM_ERROR with the message, and the connection keeps working", async () => {
    const { port, log } = startServer({
      1: {
        process: () => {
          throw new Error("disk on fire");
        },
      },
      2: {
        process: async () => {
          throw new Error("async failure");
        },
      },
      310: echo(),
    });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(1, 10));
    expect(await peer.next()).toMatchObject({ code: ResponseCode.SYSTEM_ERROR, opaque: 10, flag: 1, remark: "disk on fire" });
    peer.write(aliOnsRequest(2, 11));
    expect(await peer.next()).toMatchObject({ code: ResponseCode.SYSTEM_ERROR, opaque: 11, flag: 1, remark: "async failure" });
    peer.write(aliOnsRequest(310, 12));
    expect(await peer.next()).toMatchObject({ code: 0, opaque: 12 });
    expect(peer.closed).toBe(false);
    expect(log.lines.some((l) => l.level === "error" && l.msg.includes("disk on fire"))).toBe(true);
  });

  test("an async processor's response is sent", async () => {
    const { port } = startServer({ 34: { process: async (_c, cmd) => createResponse(cmd, 0, "later") } });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(34, 3));
    expect(await peer.next()).toMatchObject({ code: 0, opaque: 3, remark: "later" });
  });

  test("requests with the oneway flag get no reply, not even errors; the next normal request does", async () => {
    const p = echo();
    const { port } = startServer({
      15: p,
      1: {
        process: () => {
          throw new Error("nope");
        },
      },
    });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(15, 100, FLAG_ONEWAY)); // handled, no reply
    peer.write(aliOnsRequest(9999, 101, FLAG_ONEWAY)); // unknown code, no reply
    peer.write(aliOnsRequest(1, 102, FLAG_ONEWAY)); // throws, no reply
    peer.write(binaryRequest(15, 103, FLAG_ONEWAY)); // binary oneway, no reply
    peer.write(aliOnsRequest(15, 104)); // a normal request after them
    // Requests on one connection are handled in order, so once 104 is answered, any reply to
    // 100..103 would already have arrived.
    const res = await peer.next();
    expect(res.opaque).toBe(104);
    expect(peer.received).toHaveLength(1);
    expect(p.calls.map((c) => c.opaque)).toEqual([100, 103, 104]);
    expect(p.calls[0]!.flag).toBe(FLAG_ONEWAY);
  });

  test("a flag-0 'fire and forget' request from ali-ons (UPDATE_CONSUMER_OFFSET) is answered", async () => {
    const { port } = startServer({ 15: echo() });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(15, 77, 0, '{"consumerGroup":"G","topic":"T","queueId":0,"commitOffset":-1}'));
    expect(await peer.next()).toMatchObject({ code: 0, opaque: 77, flag: 1, extFields: { commitOffset: "-1", queueId: "0" } });
  });

  test("a stray response frame from the peer is ignored, and the connection stays usable", async () => {
    const p = echo();
    const { port } = startServer({ 310: p });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(310, 50, FLAG_RESPONSE));
    peer.write(aliOnsRequest(310, 51));
    expect((await peer.next()).opaque).toBe(51);
    expect(p.calls.map((c) => c.opaque)).toEqual([51]);
  });

  test("a processor returning null sends nothing", async () => {
    const { port } = startServer({ 40: { process: () => null }, 310: echo() });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(40, 1));
    peer.write(aliOnsRequest(310, 2));
    expect((await peer.next()).opaque).toBe(2);
    expect(peer.received).toHaveLength(1);
  });

  test("a processor whose reject() says so gets SYSTEM_BUSY without being called", async () => {
    let called = 0;
    const { port } = startServer({
      310: {
        process: () => {
          called++;
          return null;
        },
        reject: () => true,
      },
    });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(310, 8));
    const res = await peer.next();
    expect(res).toMatchObject({ code: ResponseCode.SYSTEM_BUSY, opaque: 8 });
    expect(res.remark).toStartWith("[REJECTREQUEST]");
    expect(called).toBe(0);
  });

  test("the processor sees the peer address as IPv4 host:port", async () => {
    let seen: RemotingConnection | undefined;
    const { port } = startServer({
      310: {
        process: (conn, cmd) => {
          seen = conn;
          return createResponse(cmd, 0);
        },
      },
    });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(310, 1));
    await peer.next();
    expect(seen!.remoteAddress).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  test("garbage on one connection closes only that connection", async () => {
    const { server, port, log } = startServer({ 310: echo() });
    const good = await rawPeer(port);
    const bad = await rawPeer(port);
    good.write(aliOnsRequest(310, 1));
    bad.write(aliOnsRequest(310, 2));
    await good.next();
    await bad.next();
    expect(server.connectionCount).toBe(2);

    bad.write(concat(u32(12), utf8("GET / HTTP/1.1\r\n")));
    await waitFor(() => bad.closed, 2000, "the bad connection to close");
    await waitFor(() => server.connectionCount === 1, 2000, "the server to drop the bad connection");
    expect(log.lines.some((l) => l.level === "warn" && l.msg.includes("closing"))).toBe(true);

    good.write(aliOnsRequest(310, 3));
    expect((await good.next()).opaque).toBe(3);
    expect(good.closed).toBe(false);
  });

  test("an HTTP request line (not a frame at all) closes the connection", async () => {
    const { port } = startServer({ 310: echo() });
    const peer = await rawPeer(port);
    peer.write(utf8("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    await waitFor(() => peer.closed, 2000, "close");
    expect(peer.received).toHaveLength(0);
  });

  test("frames coalesced in one write are all answered, in order", async () => {
    const { port } = startServer({ 310: echo() });
    const peer = await rawPeer(port);
    peer.write(concat(aliOnsRequest(310, 1), binaryRequest(310, 2), aliOnsRequest(310, 3, 0, "{}", utf8("x"))));
    const got = [await peer.next(), await peer.next(), await peer.next()];
    expect(got.map((c) => [c.opaque, c.serializeType])).toEqual([
      [1, 0],
      [2, 1],
      [3, 0],
    ]);
  });

  test("frames split across writes are answered", async () => {
    const { port } = startServer({ 310: echo() });
    const peer = await rawPeer(port);
    const a = aliOnsRequest(310, 21, 0, '{"d":4}', utf8("split body"));
    const b = binaryRequest(310, 22);
    const c = aliOnsRequest(310, 23);
    // a byte by byte, then the end of b together with the start of c, then the rest of c.
    for (let i = 0; i < a.length; i++) {
      peer.write(a.subarray(i, i + 1));
      await tick();
    }
    peer.write(b.subarray(0, 5));
    await tick();
    peer.write(concat(b.subarray(5), c.subarray(0, 9)));
    await tick();
    peer.write(c.subarray(9));
    const got = [await peer.next(), await peer.next(), await peer.next()];
    expect(got.map((x) => x.opaque)).toEqual([21, 22, 23]);
    expect(got[0]!.body).toEqual(utf8("split body"));
  });

  test("a frame over frameSizeMaxBytes closes the connection as soon as its length word arrives", async () => {
    const { server, port, log } = startServer({ 310: echo() }, 1024);
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(310, 1));
    await peer.next();
    peer.write(concat(u32(2000), u32(10), utf8("{")));
    await waitFor(() => peer.closed, 2000, "close");
    await waitFor(() => server.connectionCount === 0, 2000, "server-side close");
    expect(log.lines.some((l) => l.msg.includes("frameSizeMaxBytes"))).toBe(true);
  });

  test("a peer that closes mid-frame is cleaned up and the server keeps serving", async () => {
    const { server, port } = startServer({ 310: echo() });
    const closedConns: number[] = [];
    server.onConnectionClose((c) => closedConns.push(c.id));
    const quitter = await rawPeer(port);
    // A connection counts once its first bytes came (they tell plaintext from TLS).
    quitter.write(aliOnsRequest(310, 1).subarray(0, 20));
    await waitFor(() => server.connectionCount === 1, 2000, "the connection to register");
    quitter.end();
    await waitFor(() => server.connectionCount === 0, 2000, "the server to notice the close");
    expect(closedConns).toHaveLength(1);

    const next = await rawPeer(port);
    next.write(aliOnsRequest(310, 2));
    expect((await next.next()).opaque).toBe(2);
  });

  test("a peer that closes right after sending does not break anything", async () => {
    const slow = {
      process: async (_c: RemotingConnection, cmd: RemotingCommand) => {
        await tick();
        return createResponse(cmd, 0);
      },
    };
    const { server, port } = startServer({ 310: slow });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(310, 1));
    peer.end();
    await waitFor(() => server.connectionCount === 0, 2000, "close");
    const again = await rawPeer(port);
    again.write(aliOnsRequest(310, 2));
    expect((await again.next()).opaque).toBe(2);
  });

  test("stop() closes live connections", async () => {
    const { server, port } = startServer({ 310: echo() });
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(310, 1));
    await peer.next();
    server.stop();
    await waitFor(() => peer.closed, 2000, "the peer to see the close");
    expect(server.connectionCount).toBe(0);
  });
});

/** What one hook saw: "name:before:opaque" and "name:after:opaque:responseCode|none". */
interface Seen {
  request: RemotingCommand;
  response: RemotingCommand | undefined;
  elapsedMs: number;
}

function recordingHook(name: string, events: string[], refuse?: (cmd: RemotingCommand) => RemotingCommand | undefined) {
  const after: Seen[] = [];
  const hook: RequestHook = {
    name,
    before(_conn, cmd) {
      events.push(`${name}:before:${cmd.opaque}`);
      return refuse?.(cmd);
    },
    after(_conn, cmd, response, elapsedMs) {
      events.push(`${name}:after:${cmd.opaque}:${response ? response.code : "none"}`);
      after.push({ request: cmd, response, elapsedMs });
    },
  };
  return { hook, after };
}

/** An after-only hook that keeps what it saw. */
function observer(): RequestHook & { seen: Seen[] } {
  const seen: Seen[] = [];
  return { name: "observer", seen, after: (_conn, request, response, elapsedMs) => seen.push({ request, response, elapsedMs }) };
}

describe("request pipeline (pipeline.ts contract)", () => {
  test("before-hooks run in order; the first refusal is the answer, later hooks and the processor are skipped; every after-hook sees it", async () => {
    const events: string[] = [];
    const p = echo();
    const a = recordingHook("a", events);
    const acl = recordingHook("acl", events, (cmd) =>
      cmd.extFields?.AccessKey === "bad" ? createResponse(cmd, ResponseCode.NO_PERMISSION, "signature mismatch") : undefined,
    );
    const c = recordingHook("c", events);
    const { port } = startServer({ 310: p }, undefined, [a.hook, acl.hook, c.hook]);
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(310, 1, 0, '{"AccessKey":"bad"}'));
    expect(await peer.next()).toMatchObject({ code: ResponseCode.NO_PERMISSION, opaque: 1, flag: FLAG_RESPONSE, remark: "signature mismatch" });
    expect(p.calls).toHaveLength(0);
    peer.write(aliOnsRequest(310, 2, 0, '{"AccessKey":"good"}'));
    expect(await peer.next()).toMatchObject({ code: ResponseCode.SUCCESS, opaque: 2 });
    expect(p.calls.map((x) => x.opaque)).toEqual([2]);
    expect(events).toEqual([
      "a:before:1",
      "acl:before:1",
      "a:after:1:16",
      "acl:after:1:16",
      "c:after:1:16",
      "a:before:2",
      "acl:before:2",
      "c:before:2",
      "a:after:2:0",
      "acl:after:2:0",
      "c:after:2:0",
    ]);
  });

  test("sync and async answers: one after-call each with the response sent and the time taken", async () => {
    const obs = observer();
    const { port } = startServer(
      {
        310: echo(),
        311: {
          process: async (_c, cmd) => {
            await Bun.sleep(25);
            return createResponse(cmd, ResponseCode.SUCCESS, "later");
          },
        },
      },
      undefined,
      [obs],
    );
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(311, 1));
    peer.write(aliOnsRequest(310, 2));
    const first = await peer.next();
    const second = await peer.next();
    expect([first.opaque, second.opaque]).toEqual([2, 1]);
    expect(obs.seen.map((s) => [s.request.opaque, s.response?.opaque, s.response?.code])).toEqual([
      [2, 2, 0],
      [1, 1, 0],
    ]);
    expect(obs.seen[1]!.response!.remark).toBe("later");
    expect(obs.seen[0]!.elapsedMs).toBeGreaterThanOrEqual(0);
    expect(obs.seen[0]!.elapsedMs).toBeLessThan(obs.seen[1]!.elapsedMs);
    expect(obs.seen[1]!.elapsedMs).toBeGreaterThanOrEqual(24);
  });

  test("an answer sent later (a parked request, settled by someone else) is seen once, with the time it was parked", async () => {
    // The shape of a parked pull (broker pull-message.ts + long-polling.ts): the processor returns
    // a Promise that a hold service settles later with the answer, or with null once the
    // connection closed.
    const parked: { cmd: RemotingCommand; settle: (r: ProcessResult) => void }[] = [];
    const obs = observer();
    const { server, port } = startServer(
      { 11: { process: (_c, cmd) => new Promise<ProcessResult>((settle) => parked.push({ cmd, settle })) }, 310: echo() },
      undefined,
      [obs],
    );
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(11, 1));
    peer.write(aliOnsRequest(310, 2));
    expect((await peer.next()).opaque).toBe(2);
    expect(parked).toHaveLength(1);
    expect(obs.seen.map((s) => s.request.opaque)).toEqual([2]);
    await Bun.sleep(30);
    parked[0]!.settle(createResponse(parked[0]!.cmd, ResponseCode.SUCCESS, "woken"));
    expect(await peer.next()).toMatchObject({ opaque: 1, remark: "woken" });
    expect(obs.seen.map((s) => [s.request.opaque, s.response?.remark])).toEqual([
      [2, undefined],
      [1, "woken"],
    ]);
    expect(obs.seen[1]!.elapsedMs).toBeGreaterThanOrEqual(29);

    // Parked, then the connection closes: the hold service settles with null; no response, one after-call.
    peer.write(aliOnsRequest(11, 3));
    await waitFor(() => parked.length === 2, 2000, "the second request to park");
    peer.end();
    await waitFor(() => server.connectionCount === 0, 2000, "close");
    parked[1]!.settle(null);
    await waitFor(() => obs.seen.length === 3, 2000, "the after-call of the dropped request");
    expect(obs.seen[2]).toMatchObject({ response: undefined });
    expect(obs.seen[2]!.request.opaque).toBe(3);
  });

  test("REQUEST_CODE_NOT_SUPPORTED, SYSTEM_BUSY and SYSTEM_ERROR (thrown, rejected, or from a before-hook) each get one after-call", async () => {
    const obs = observer();
    const throwingHook: RequestHook = {
      name: "broken-acl",
      before: (_c, cmd) => {
        if (cmd.code === 312) throw new Error("acl store unreachable");
        return undefined;
      },
    };
    const { port, log } = startServer(
      {
        1: {
          process: () => {
            throw new Error("disk on fire");
          },
        },
        2: { process: () => Promise.reject(new Error("async failure")) },
        310: { process: () => null, reject: () => true },
        312: echo(),
      },
      undefined,
      [throwingHook, obs],
    );
    const peer = await rawPeer(port);
    const cases: [number, number][] = [
      [9999, ResponseCode.REQUEST_CODE_NOT_SUPPORTED],
      [310, ResponseCode.SYSTEM_BUSY],
      [1, ResponseCode.SYSTEM_ERROR],
      [2, ResponseCode.SYSTEM_ERROR],
      [312, ResponseCode.SYSTEM_ERROR],
    ];
    cases.forEach(([code], i) => peer.write(aliOnsRequest(code, 100 + i)));
    const got: RemotingCommand[] = [];
    for (let i = 0; i < cases.length; i++) got.push(await peer.next());
    expect(got.map((r) => [r.opaque, r.code]).sort()).toEqual(cases.map(([, code], i) => [100 + i, code]).sort());
    expect(obs.seen.map((s) => [s.request.opaque, s.response?.code]).sort()).toEqual(cases.map(([, code], i) => [100 + i, code]).sort());
    expect(log.lines.some((l) => l.level === "error" && l.msg.includes("acl store unreachable"))).toBe(true);
  });

  test("oneway requests and null answers: one after-call with no response, once processed", async () => {
    const obs = observer();
    const p = echo();
    const { port } = startServer(
      {
        15: p,
        40: { process: () => null },
        1: {
          process: () => {
            throw new Error("nope");
          },
        },
      },
      undefined,
      [obs],
    );
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(15, 100, FLAG_ONEWAY)); // processed, its answer not sent
    peer.write(aliOnsRequest(9999, 101, FLAG_ONEWAY)); // unknown code
    peer.write(aliOnsRequest(1, 102, FLAG_ONEWAY)); // throws
    peer.write(aliOnsRequest(40, 103)); // answers null
    peer.write(aliOnsRequest(15, 104)); // a normal request after them, answered in order
    expect((await peer.next()).opaque).toBe(104);
    expect(peer.received).toHaveLength(1);
    expect(p.calls.map((c) => c.opaque)).toEqual([100, 104]);
    expect(obs.seen.map((s) => [s.request.opaque, s.response?.code])).toEqual([
      [100, undefined],
      [101, undefined],
      [102, undefined],
      [103, undefined],
      [104, ResponseCode.SUCCESS],
    ]);
  });

  test("an after-hook that throws is logged; the other hooks still run and the answer still goes out", async () => {
    const obs = observer();
    const broken: RequestHook = {
      name: "broken",
      after: () => {
        throw new Error("exporter down");
      },
    };
    const { port, log } = startServer({ 310: echo() }, undefined, [broken, obs]);
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(310, 1));
    expect((await peer.next()).opaque).toBe(1);
    expect(obs.seen).toHaveLength(1);
    expect(log.lines.some((l) => l.level === "error" && l.msg.includes("broken") && l.msg.includes("exporter down"))).toBe(true);
  });

  test("RequestStats as the hook: counts by request and response code, errors, latency", async () => {
    const stats = new RequestStats();
    const { port } = startServer(
      {
        [RequestCode.GET_ROUTEINFO_BY_TOPIC]: {
          process: (_c, cmd) => createResponse(cmd, cmd.extFields?.topic === "T" ? ResponseCode.SUCCESS : ResponseCode.TOPIC_NOT_EXIST, undefined),
        },
        [RequestCode.SEND_MESSAGE_V2]: { process: (_c, cmd) => createResponse(cmd, ResponseCode.SUCCESS), reject: () => false },
      },
      undefined,
      [stats],
    );
    const peer = await rawPeer(port);
    peer.write(aliOnsRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, 1, 0, '{"topic":"T"}'));
    peer.write(aliOnsRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, 2, 0, '{"topic":"%RETRY%G"}'));
    peer.write(aliOnsRequest(RequestCode.SEND_MESSAGE_V2, 3));
    peer.write(aliOnsRequest(4242, 4));
    for (let i = 0; i < 4; i++) await peer.next();
    const snap = stats.snapshot();
    expect(snap.codes.map((c) => [c.code, c.name, c.count, c.errors, c.responses])).toEqual([
      [RequestCode.GET_ROUTEINFO_BY_TOPIC, "GET_ROUTEINFO_BY_TOPIC", 2, 0, { SUCCESS: 1, TOPIC_NOT_EXIST: 1 }],
      [RequestCode.SEND_MESSAGE_V2, "SEND_MESSAGE_V2", 1, 0, { SUCCESS: 1 }],
      [4242, "UNKNOWN(4242)", 1, 1, { REQUEST_CODE_NOT_SUPPORTED: 1 }],
    ]);
    for (const c of snap.codes) {
      expect(c.latency.buckets.at(-1)!.count).toBe(c.count);
      expect(c.latency.sumMs).toBeGreaterThan(0);
    }
  });
});
