/**
 * Remoting on virtual time: a RemotingServer and RemotingClient over in-memory sockets
 * (MemNetwork) with a simulated clock (src/common/sim-clock.ts), as the in-process broker fixture
 * and test/sim run them. Request timeouts, the connect timeout and the server's idle and
 * partial-frame deadlines all fire when the simulated clock passes them, and not before; no test
 * waits for them in real time (each checks that it took well under the virtual time it covered).
 */
import { describe, expect, test } from "bun:test";
import { SimClock, type ClockView } from "../common/sim-clock.ts";
import { RemotingClient, REMOTING_CLIENT_DEFAULTS } from "./client.ts";
import { createRequest, createResponse, type RemotingCommand } from "./command.ts";
import { RemotingClosedError, RemotingTimeoutError } from "./connection.ts";
import { RemotingServer, type ConnectionLimits } from "./server.ts";
import { MemNetwork, recordingLogger, u32 } from "./test-support.ts";
import type { AcceptedSocketEvents, RemotingListener, RemotingNetwork, SocketEvents, SocketLike } from "./transport.ts";

const HOST = "127.0.0.1";
const ECHO = 11;
const SILENT = 12;

interface World {
  sim: SimClock;
  clock: ClockView;
  network: MemNetwork;
  server: RemotingServer;
  addr: string;
  log: ReturnType<typeof recordingLogger>;
}

/** A server on `network` and virtual time: ECHO is answered at once, SILENT never. */
function world(o: { limits?: ConnectionLimits; watchNetwork?: boolean; network?: RemotingNetwork } = {}): World {
  const sim = new SimClock();
  const clock = sim.view();
  const network = new MemNetwork();
  const log = recordingLogger();
  const server = new RemotingServer({
    host: HOST,
    port: 0,
    frameSizeMaxBytes: 1 << 20,
    connectionBufferMaxBytes: 1 << 20,
    log,
    clock,
    network: o.network ?? network,
    ...(o.limits ? { limits: o.limits } : {}),
    ...(o.watchNetwork !== undefined ? { watchNetwork: o.watchNetwork } : {}),
  });
  server.register(ECHO, { process: (_c, cmd) => createResponse(cmd, 0, "echo") });
  server.register(SILENT, { process: () => new Promise<null>(() => {}) });
  const port = server.start();
  return { sim, clock, network, server, addr: `${HOST}:${port}`, log };
}

function client(w: World, o: { network?: RemotingNetwork; connectTimeoutMs?: number } = {}): RemotingClient {
  return new RemotingClient({
    ...REMOTING_CLIENT_DEFAULTS,
    ...(o.connectTimeoutMs !== undefined ? { connectTimeoutMs: o.connectTimeoutMs } : {}),
    log: w.log,
    clock: w.clock,
    network: o.network ?? w.network,
  });
}

/** The outcome of a promise as it stands: "pending", or what it settled with. */
function watch<T>(p: Promise<T>): { state: "pending" | "resolved" | "rejected"; value?: T; error?: unknown } {
  const s: { state: "pending" | "resolved" | "rejected"; value?: T; error?: unknown } = { state: "pending" };
  p.then(
    (v) => Object.assign(s, { state: "resolved", value: v }),
    (e: unknown) => Object.assign(s, { state: "rejected", error: e }),
  );
  return s;
}

/** Real time spent by `fn`, which covers minutes of virtual time: far below it. */
async function realMs(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

describe("request timeouts on virtual time", () => {
  test("a request nobody answers times out when the simulated clock passes its deadline, not before; the connection still works", async () => {
    const w = world();
    const c = client(w);
    const spent = await realMs(async () => {
      const silent = watch(c.invoke(w.addr, createRequest(SILENT), 30_000));
      await w.sim.advance(29_999);
      expect(silent.state).toBe("pending");
      await w.sim.advance(1);
      expect(silent.state).toBe("rejected");
      expect(silent.error).toBeInstanceOf(RemotingTimeoutError);
      expect((silent.error as Error).message).toBe(`request code ${SILENT} to ${w.addr} timed out after 30000 ms`);
      const res = await c.invoke(w.addr, createRequest(ECHO), 30_000);
      expect(res.remark).toBe("echo");
      expect(w.server.connectionCount).toBe(1);
    });
    expect(spent).toBeLessThan(1000);
    await c.close();
    w.server.stop();
  });

  test("deadlines of different lengths on one connection fire in order, each at its own virtual time", async () => {
    const w = world();
    const c = client(w);
    const fired: [string, number][] = [];
    const t0 = w.clock.now();
    const track = (name: string, ms: number) =>
      c.invoke(w.addr, createRequest(SILENT), ms).catch((e: unknown) => {
        expect(e).toBeInstanceOf(RemotingTimeoutError);
        fired.push([name, w.clock.now() - t0]);
      });
    // The long one first: one timer per connection, re-armed for the earliest deadline.
    const all = Promise.all([track("long", 60_000), track("short", 3000), track("mid", 15_000), track("short2", 3000)]);
    await w.sim.advance(60_000);
    await all;
    expect(fired).toEqual([
      ["short", 3000],
      ["short2", 3000],
      ["mid", 15_000],
      ["long", 60_000],
    ]);
    await c.close();
    w.server.stop();
  });

  test("the timer armed for a request answered in time fires harmlessly; the next deadline is still met to the millisecond", async () => {
    const w = world();
    const c = client(w);
    expect((await c.invoke(w.addr, createRequest(ECHO), 5000)).remark).toBe("echo");
    const late = watch(c.invoke(w.addr, createRequest(SILENT), 10_000));
    await w.sim.advance(9999);
    expect(late.state).toBe("pending");
    await w.sim.advance(1);
    expect(late.state).toBe("rejected");
    await c.close();
    w.server.stop();
  });
});

/** MemNetwork whose connects complete only when the test releases them (a SYN nobody answers yet). */
class HeldNetwork implements RemotingNetwork {
  readonly chunksOwned = true;
  readonly #inner: MemNetwork;
  readonly #held: (() => void)[] = [];

  constructor(inner: MemNetwork) {
    this.#inner = inner;
  }

  listen(host: string, port: number, accept: (s: SocketLike) => AcceptedSocketEvents): RemotingListener {
    return this.#inner.listen(host, port, accept);
  }

  connect(host: string, port: number, ev: SocketEvents): Promise<SocketLike> {
    return new Promise((resolve, reject) => this.#held.push(() => this.#inner.connect(host, port, ev).then(resolve, reject)));
  }

  release(): void {
    for (const go of this.#held.splice(0)) go();
  }
}

describe("the connect timeout on virtual time", () => {
  test("a connect that does not complete fails at connectTimeoutMs of simulated time; completing later, it is closed, not kept", async () => {
    const w = world();
    const held = new HeldNetwork(w.network);
    const c = client(w, { network: held, connectTimeoutMs: 3000 });
    const spent = await realMs(async () => {
      const call = watch(c.invoke(w.addr, createRequest(ECHO), 30_000));
      await w.sim.advance(2999);
      expect(call.state).toBe("pending");
      await w.sim.advance(1);
      expect(call.state).toBe("rejected");
      expect(call.error).toBeInstanceOf(RemotingClosedError);
      expect((call.error as Error).message).toBe(`connect to ${w.addr} timed out after 3000 ms`);
      // The connect completes after all: the server sees the connection open, then closed by the client.
      held.release();
      await w.sim.advance(0);
      expect(w.server.connectionCount).toBe(0);
    });
    expect(spent).toBeLessThan(1000);
    // The next call connects (the connect timer of the first never fires into it).
    const next = watch(c.invoke(w.addr, createRequest(ECHO), 30_000));
    held.release();
    await w.sim.advance(5000);
    expect(next.state).toBe("resolved");
    expect((next.value as RemotingCommand).remark).toBe("echo");
    expect(w.server.connectionCount).toBe(1);
    await c.close();
    w.server.stop();
  });
});

const IDLE: ConnectionLimits = { maxConnections: 0, idleTimeoutMs: 120_000, frameTimeoutMs: 0 };

describe("the server's connection deadlines on virtual time (watchNetwork)", () => {
  test("idleTimeoutMs: a quiet connection is closed once the simulated clock passes it (within a sweep); one with traffic is kept", async () => {
    const w = world({ limits: IDLE, watchNetwork: true });
    const quiet = client(w);
    const busy = client(w);
    const spent = await realMs(async () => {
      await quiet.invoke(w.addr, createRequest(ECHO), 5000);
      const quietConn = await quiet.connection(w.addr);
      for (let t = 0; t < 119_000; t += 10_000) {
        await busy.invoke(w.addr, createRequest(ECHO), 5000);
        await w.sim.advance(10_000);
      }
      // 120 s without traffic, counted in whole 1 s sweeps: never early, at most one sweep late.
      expect(quietConn.closed).toBe(false);
      await w.sim.advance(1000);
      expect(quietConn.closed).toBe(true);
      expect(w.server.connectionCount).toBe(1);
      expect(w.log.lines.some((l) => l.msg.includes("no traffic for 120000 ms (remoting.idleTimeoutMs 120000)"))).toBe(true);
      // The busy one is still served; the quiet client reconnects on its next call.
      expect((await busy.invoke(w.addr, createRequest(ECHO), 5000)).remark).toBe("echo");
      expect((await quiet.invoke(w.addr, createRequest(ECHO), 5000)).remark).toBe("echo");
      expect(w.server.connectionCount).toBe(2);
    });
    expect(spent).toBeLessThan(2000);
    await quiet.close();
    await busy.close();
    w.server.stop();
  });

  test("frameTimeoutMs: a frame begun and never finished closes its connection on simulated time", async () => {
    const w = world({ limits: { maxConnections: 0, idleTimeoutMs: 0, frameTimeoutMs: 30_000 }, watchNetwork: true });
    let closed = false;
    const socket = await w.network.connect(HOST, w.server.port, { open: () => {}, data: () => {}, drain: () => {}, close: () => (closed = true) });
    // A length word announcing 100 bytes, and nothing after it.
    socket.write(u32(100));
    await w.sim.advance(30_000);
    expect(closed).toBe(false);
    await w.sim.advance(1000);
    expect(closed).toBe(true);
    expect(w.log.lines.some((l) => /a frame begun \d+ ms ago is not complete \(4 bytes; remoting\.frameTimeoutMs 30000\)/.test(l.msg))).toBe(true);
    w.server.stop();
  });

  test("without watchNetwork (the in-process broker fixture, test/sim) in-memory connections are not watched", async () => {
    const w = world({ limits: IDLE });
    const c = client(w);
    await c.invoke(w.addr, createRequest(ECHO), 5000);
    const conn = await c.connection(w.addr);
    await w.sim.advance(600_000);
    expect(conn.closed).toBe(false);
    expect(w.server.connectionCount).toBe(1);
    await c.close();
    w.server.stop();
  });
});
