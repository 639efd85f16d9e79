/**
 * RemotingClient against real sockets on 127.0.0.1, port 0: a RemotingServer where a well-behaved
 * peer is enough, and raw Bun.listen servers (hand-made bytes) to misbehave on purpose: never
 * answer, answer late, answer out of order, close mid-request. Everything is closed in afterEach;
 * waits poll a condition with a deadline.
 */
import { afterEach, describe, expect, spyOn, test } from "bun:test";
import type { Socket } from "bun";
import { RemotingClient, REMOTING_CLIENT_DEFAULTS, splitHostPort } from "./client.ts";
import { createRequest, createResponse, FLAG_ONEWAY, newOpaque, type RemotingCommand, SerializeType } from "./command.ts";
import { normalizeAddress, RemotingClosedError, type RemotingConnection, RemotingTimeoutError } from "./connection.ts";
import { FrameDecoder } from "./frame.ts";
import { ResponseCode } from "./response-code.ts";
import { RemotingServer } from "./server.ts";
import { frameBytes, recordingLogger, utf8 } from "./test-support.ts";

async function waitFor(cond: () => boolean, timeoutMs = 2000, what = "condition"): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function newClient(over: Partial<ConstructorParameters<typeof RemotingClient>[0]> = {}) {
  const log = recordingLogger();
  const client = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log, ...over });
  cleanups.push(() => client.close());
  return client;
}

function startServer(setup: (s: RemotingServer) => void, frameSizeMaxBytes = 1024 * 1024): { server: RemotingServer; addr: string } {
  const server = new RemotingServer({
    host: "127.0.0.1",
    port: 0,
    frameSizeMaxBytes,
    connectionBufferMaxBytes: 4 * 1024 * 1024,
    log: recordingLogger(),
  });
  setup(server);
  const port = server.start();
  cleanups.push(() => server.stop());
  return { server, addr: `127.0.0.1:${port}` };
}

interface RawConn {
  id: number;
  socket: Socket<RawConn>;
  requests: RemotingCommand[];
  closed: boolean;
}

/** A hand-driven peer: decodes requests and lets the test decide what to write back, if anything. */
function rawServer(onRequest: (conn: RawConn, cmd: RemotingCommand) => void = () => {}) {
  const conns: RawConn[] = [];
  const decoders = new Map<RawConn, FrameDecoder>();
  const listener = Bun.listen<RawConn>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      binaryType: "uint8array",
      open(socket) {
        const conn: RawConn = { id: conns.length + 1, socket, requests: [], closed: false };
        socket.data = conn;
        conns.push(conn);
        decoders.set(conn, new FrameDecoder());
      },
      data(socket, chunk) {
        const r = decoders.get(socket.data)!.feed(chunk);
        if (!Array.isArray(r)) throw new Error(`raw server got an invalid frame: ${r.invalid}`);
        for (const cmd of r) {
          socket.data.requests.push(cmd);
          onRequest(socket.data, cmd);
        }
      },
      close(socket) {
        socket.data.closed = true;
      },
    },
  });
  cleanups.push(() => listener.stop(true));
  return { conns, addr: `127.0.0.1:${listener.port}`, requests: () => conns.flatMap((c) => c.requests) };
}

/** A JSON response header written by hand, Java style. */
function jsonResponse(opaque: number, code = 0, remark?: string): Uint8Array {
  return frameBytes(0, utf8(JSON.stringify({ code, flag: 1, language: "JAVA", opaque, remark, version: 409 })));
}

function write(conn: RawConn, bytes: Uint8Array): void {
  expect(conn.socket.write(bytes)).toBe(bytes.length);
}

describe("RemotingClient", () => {
  test("invoke gets the matching response", async () => {
    const { addr } = startServer((s) =>
      s.register(105, { process: (_c, cmd) => createResponse(cmd, 0, undefined, { topic: cmd.extFields!.topic! }, utf8("route")) }),
    );
    const client = newClient();
    const req = createRequest(105, { topic: "TopicA" });
    const res = await client.invoke(addr, req, 2000);
    expect(res).toMatchObject({ code: 0, opaque: req.opaque, flag: 1, extFields: { topic: "TopicA" } });
    expect(res.body).toEqual(utf8("route"));
  });

  test("large frames in both directions survive partial socket writes (backpressure and drain)", async () => {
    const { addr } = startServer(
      (s) => s.register(310, { process: (_c, cmd) => createResponse(cmd, 0, undefined, undefined, cmd.body) }),
      16 * 1024 * 1024,
    );
    const client = newClient();
    // 2 MiB each way per request is well past the socket buffers, so writes come back short.
    const size = 2 * 1024 * 1024;
    const bodies = [1, 2, 3].map((k) => {
      const b = new Uint8Array(size);
      for (let i = 0; i < size; i++) b[i] = (i * k + k) & 0xff;
      return b;
    });
    const res = await Promise.all(bodies.map((b) => client.invoke(addr, createRequest(310, undefined, b), 5000)));
    res.forEach((r, k) => {
      expect(r.body?.length).toBe(size);
      expect(Buffer.compare(r.body!, bodies[k]!)).toBe(0);
    });
  });

  test("a ROCKETMQ request gets a ROCKETMQ response", async () => {
    const { addr } = startServer((s) => s.register(105, { process: (_c, cmd) => createResponse(cmd, 0, "ok") }));
    const res = await newClient().invoke(addr, createRequest(105, { topic: "T" }, undefined, SerializeType.ROCKETMQ), 2000);
    expect(res).toMatchObject({ code: 0, remark: "ok", serializeType: SerializeType.ROCKETMQ });
  });

  test("an error response resolves (it is data, not an exception)", async () => {
    const { addr } = startServer(() => {});
    const res = await newClient().invoke(addr, createRequest(9999), 2000);
    expect(res.code).toBe(ResponseCode.REQUEST_CODE_NOT_SUPPORTED);
  });

  test("concurrent invokes share one connection and are matched by opaque even when answered out of order", async () => {
    const raw = rawServer((conn) => {
      if (conn.requests.length === 3) {
        for (const r of [...conn.requests].reverse()) write(conn, jsonResponse(r.opaque, 0, `answer ${r.opaque}`));
      }
    });
    const client = newClient();
    const reqs = [createRequest(11), createRequest(11), createRequest(11)];
    const res = await Promise.all(reqs.map((r) => client.invoke(raw.addr, r, 2000)));
    expect(res.map((r) => r.remark)).toEqual(reqs.map((r) => `answer ${r.opaque}`));
    expect(raw.conns).toHaveLength(1);
  });

  test("a timeout rejects with RemotingTimeoutError; the late response is dropped and the connection still works", async () => {
    const raw = rawServer((conn, cmd) => {
      // Ignore the first request; answer the second together with a (late) answer to the first.
      if (conn.requests.length === 2) {
        write(conn, jsonResponse(conn.requests[0]!.opaque, 0, "late"));
        write(conn, jsonResponse(cmd.opaque, 0, "on time"));
      }
    });
    const client = newClient();
    const first = createRequest(11);
    const err = await client.invoke(raw.addr, first, 50).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemotingTimeoutError);
    expect((err as Error).message).toContain("timed out after 50 ms");

    const second = createRequest(11);
    const res = await client.invoke(raw.addr, second, 2000);
    expect(res).toMatchObject({ opaque: second.opaque, remark: "on time" });
    expect(raw.conns).toHaveLength(1);
    expect(raw.conns[0]!.closed).toBe(false);
  });

  test("timeouts of different lengths on one connection each fire on time (one timer, earliest deadline first)", async () => {
    const raw = rawServer(() => {}); // never answers
    const client = newClient();
    const t0 = performance.now();
    const settled: [string, number][] = [];
    const track = (name: string, ms: number) =>
      client.invoke(raw.addr, createRequest(11), ms).catch((e: unknown) => {
        expect(e).toBeInstanceOf(RemotingTimeoutError);
        settled.push([name, performance.now() - t0]);
      });
    // The long one first: the short ones that follow must not wait for it.
    await Promise.all([track("long", 400), track("short", 60), track("mid", 200), track("short2", 60)]);
    expect(settled.map(([n]) => n)).toEqual(["short", "short2", "mid", "long"]);
    const at = Object.fromEntries(settled);
    expect(at.short!).toBeGreaterThanOrEqual(59);
    expect(at.short!).toBeLessThan(190);
    expect(at.mid!).toBeGreaterThanOrEqual(199);
    expect(at.long!).toBeGreaterThanOrEqual(399);
  });

  test("a response nobody asked for is dropped", async () => {
    const raw = rawServer((conn, cmd) => {
      write(conn, jsonResponse(cmd.opaque + 1000, 0, "stray"));
      write(conn, jsonResponse(cmd.opaque, 0, "mine"));
    });
    const res = await newClient().invoke(raw.addr, createRequest(11), 2000);
    expect(res.remark).toBe("mine");
  });

  test("the server closing the connection rejects in-flight invokes with RemotingClosedError; the next invoke reconnects", async () => {
    const raw = rawServer((conn) => {
      if (conn.id === 1 && conn.requests.length === 2) conn.socket.end();
      if (conn.id === 2) write(conn, jsonResponse(conn.requests.at(-1)!.opaque, 0, "second connection"));
    });
    const client = newClient();
    const inflight = [client.invoke(raw.addr, createRequest(11), 5000), client.invoke(raw.addr, createRequest(11), 5000)];
    const errors = await Promise.all(
      inflight.map((p) =>
        p.then(
          () => null,
          (e: unknown) => e,
        ),
      ),
    );
    for (const e of errors) expect(e).toBeInstanceOf(RemotingClosedError);

    const res = await client.invoke(raw.addr, createRequest(11), 2000);
    expect(res.remark).toBe("second connection");
    expect(raw.conns).toHaveLength(2);
  });

  test("invokeOneway sends the request with the oneway flag and expects nothing", async () => {
    const seen: RemotingCommand[] = [];
    const { addr } = startServer((s) =>
      s.register(15, {
        process: (_c, cmd) => {
          seen.push(cmd);
          return createResponse(cmd, 0);
        },
      }),
    );
    const client = newClient();
    const req = createRequest(15, { consumerGroup: "G", commitOffset: "5" });
    await client.invokeOneway(addr, req);
    await waitFor(() => seen.length === 1, 2000, "the oneway request to arrive");
    expect(seen[0]!.flag & FLAG_ONEWAY).toBe(FLAG_ONEWAY);
    expect(seen[0]!.extFields).toEqual({ consumerGroup: "G", commitOffset: "5" });
    // The connection is still fine for normal calls.
    expect((await client.invoke(addr, createRequest(15), 2000)).code).toBe(0);
  });

  test("opaque ids are never 0 and never repeat", async () => {
    const seen = new Set<number>();
    for (let i = 0; i < 100_000; i++) {
      const o = newOpaque();
      if (o <= 0 || seen.has(o)) throw new Error(`bad opaque ${o}`);
      seen.add(o);
    }
    const raw = rawServer((conn, cmd) => write(conn, jsonResponse(cmd.opaque)));
    const client = newClient();
    for (let i = 0; i < 20; i++) await client.invoke(raw.addr, createRequest(11), 2000);
    await client.invokeOneway(raw.addr, createRequest(15));
    await waitFor(() => raw.requests().length === 21, 2000, "all requests");
    const opaques = raw.requests().map((r) => r.opaque);
    expect(opaques.includes(0)).toBe(false);
    expect(new Set(opaques).size).toBe(21);
  });

  test("connecting to a closed port rejects with RemotingClosedError", async () => {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    const err = await newClient()
      .invoke(`127.0.0.1:${port}`, createRequest(11), 1000)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemotingClosedError);
  });

  test("a connect that completes after connectTimeoutMs is closed, not left open as an orphan", async () => {
    const raw = rawServer((conn, cmd) => write(conn, jsonResponse(cmd.opaque)));
    // Hold back the socket's `open` event (the connect settles there; the server side opens at
    // once) until the test releases it.
    const realConnect = Bun.connect;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const spy = spyOn(Bun, "connect").mockImplementation(((opts: Parameters<typeof Bun.connect>[0]) =>
      realConnect({
        ...opts,
        socket: { ...opts.socket, open: (s) => void gate.then(() => opts.socket.open?.(s)) },
      })) as typeof Bun.connect);
    try {
      const client = newClient({ connectTimeoutMs: 20 });
      const err = await client.invoke(raw.addr, createRequest(11), 2000).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RemotingClosedError);
      expect((err as Error).message).toContain("timed out");
      await waitFor(() => raw.conns.length === 1, 2000, "the late socket to open on the server");
      release();
      await waitFor(() => raw.conns[0]!.closed, 2000, "the late socket to be closed by the client");
    } finally {
      spy.mockRestore();
    }
    // And the next call connects normally.
    expect((await newClient().invoke(raw.addr, createRequest(11), 2000)).code).toBe(0);
  });

  test("disconnect(addr) closes the connection and the next invoke opens a new one", async () => {
    const ids: number[] = [];
    const { addr } = startServer((s) =>
      s.register(11, {
        process: (conn: RemotingConnection, cmd) => {
          ids.push(conn.id);
          return createResponse(cmd, 0);
        },
      }),
    );
    const client = newClient();
    await client.invoke(addr, createRequest(11), 2000);
    await client.disconnect(addr);
    await client.invoke(addr, createRequest(11), 2000);
    expect(ids).toHaveLength(2);
    expect(ids[0]).not.toBe(ids[1]);
  });

  test("close() rejects in-flight invokes and refuses new ones", async () => {
    const raw = rawServer();
    const client = newClient();
    const pending = client.invoke(raw.addr, createRequest(11), 5000).catch((e: unknown) => e);
    await waitFor(() => raw.requests().length === 1, 2000, "the request to arrive");
    await client.close();
    expect(await pending).toBeInstanceOf(RemotingClosedError);
    expect(await client.invoke(raw.addr, createRequest(11), 1000).catch((e: unknown) => e)).toBeInstanceOf(RemotingClosedError);
  });

  test("a request from the server side reaches onRequest", async () => {
    const got: RemotingCommand[] = [];
    const { addr } = startServer((s) =>
      s.register(34, {
        process: (conn, cmd) => {
          conn.send(createRequest(40, { consumerGroup: "G" }));
          return createResponse(cmd, 0);
        },
      }),
    );
    const client = newClient({ onRequest: (_c, cmd) => got.push(cmd) });
    await client.invoke(addr, createRequest(34), 2000);
    await waitFor(() => got.length === 1, 2000, "the server's request");
    expect(got[0]).toMatchObject({ code: 40, flag: 0, extFields: { consumerGroup: "G" } });
  });

  test("a send over connectionBufferMaxBytes closes the connection and rejects", async () => {
    const raw = rawServer();
    const client = newClient({ connectionBufferMaxBytes: 1024 });
    const req = createRequest(310, undefined, new Uint8Array(4096));
    const err = await client.invoke(raw.addr, req, 2000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemotingClosedError);
  });
});

describe("addresses", () => {
  test("splitHostPort accepts host:port and [v6]:port, rejects the rest", () => {
    expect(splitHostPort("127.0.0.1:9876")).toEqual({ host: "127.0.0.1", port: 9876 });
    expect(splitHostPort("namesrv:9876")).toEqual({ host: "namesrv", port: 9876 });
    expect(splitHostPort("[::1]:10911")).toEqual({ host: "::1", port: 10911 });
    for (const bad of ["", "host", "host:", ":9876", "::1:9876", "host:port"]) expect(() => splitHostPort(bad)).toThrow("bad address");
  });

  test("normalizeAddress shows IPv4-mapped IPv6 peers as IPv4 and brackets real IPv6", () => {
    expect(normalizeAddress("::ffff:10.0.0.1", 10911)).toBe("10.0.0.1:10911");
    expect(normalizeAddress("10.0.0.1", 10911)).toBe("10.0.0.1:10911");
    expect(normalizeAddress("::1", 10911)).toBe("[::1]:10911");
  });
});
