/**
 * What the remoting layer's assertions (src/common/assert.ts) catch when our own code breaks an
 * invariant: they fail loudly where silence lost a request or corrupted a stream before.
 */
import { describe, expect, test } from "bun:test";
import { AssertionError } from "../common/assert.ts";
import { SimClock } from "../common/sim-clock.ts";
import { RemotingClient, REMOTING_CLIENT_DEFAULTS } from "./client.ts";
import { createRequest, createResponse } from "./command.ts";
import { RemotingConnection } from "./connection.ts";
import { encodeCommand } from "./frame.ts";
import { ResponseCode } from "./response-code.ts";
import { RemotingServer } from "./server.ts";
import { MemNetwork, recordingLogger } from "./test-support.ts";

describe("remoting invariants", () => {
  test("a request invoked again while it waits (its opaque reused) is refused: the first would never settle", async () => {
    const conn = new RemotingConnection(
      { write: (d) => d.length, end: () => {}, remoteAddress: "127.0.0.1", remotePort: 1 },
      { frameSizeMaxBytes: 1 << 20, connectionBufferMaxBytes: 1 << 20, log: recordingLogger(), clock: new SimClock().view(), onRequest: () => {} },
    );
    const req = createRequest(11);
    const first = conn.invoke(req, 1000);
    const again = await conn.invoke(req, 1000).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(AssertionError);
    expect((again as Error).message).toBe(`invariant violated: opaque ${req.opaque} is already waiting for its response on 127.0.0.1:1`);
    // The assertion came after the second took its place: the first is lost, as it was, unasserted, before.
    let firstSettled = false;
    void first.then(
      () => (firstSettled = true),
      () => (firstSettled = true),
    );
    conn.close();
    await Bun.sleep(0);
    expect(firstSettled).toBe(false);
  });

  test("a header longer than its 3-byte length field can say is not encoded into a frame the peer would misread", () => {
    const res = createResponse(createRequest(11), ResponseCode.SYSTEM_ERROR, "x".repeat(0x1000000));
    expect(() => encodeCommand(res)).toThrow(AssertionError);
    expect(() => encodeCommand(res)).toThrow(/request code 1: a header of \d+ bytes does not fit its length field/);
  });

  test("a before-hook refusing with a command that is not this request's response: SYSTEM_ERROR, not an answer to another request", async () => {
    const sim = new SimClock();
    const network = new MemNetwork();
    const log = recordingLogger();
    const hook = { name: "bad-hook", before: () => createResponse(createRequest(11), ResponseCode.NO_PERMISSION) };
    const server = new RemotingServer({
      host: "127.0.0.1",
      port: 0,
      frameSizeMaxBytes: 1 << 20,
      connectionBufferMaxBytes: 1 << 20,
      log,
      network,
      hooks: [hook],
    });
    server.register(11, { process: (_c, cmd) => createResponse(cmd, ResponseCode.SUCCESS) });
    const port = server.start();
    const client = new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log, network, clock: sim.view() });
    const req = createRequest(11);
    const res = await client.invoke(`127.0.0.1:${port}`, req, 1000);
    expect(res.opaque).toBe(req.opaque);
    expect(res.code).toBe(ResponseCode.SYSTEM_ERROR);
    expect(res.remark).toMatch(new RegExp(`^invariant violated: before-hook bad-hook refused opaque ${req.opaque} with a command for \\d+$`));
    await client.close();
    server.stop();
  });
});
