/**
 * rocketbun/client PullConsumer reading bodies compressed as the 5.x Java producer stores them:
 * LZ4 and ZSTD bytes from test/golden/compression/ (written by the Java client's compressors) sent
 * over a raw SEND_MESSAGE_V2 with sysFlag COMPRESSED | codec << 8, next to a zlib one and one with
 * an unknown codec, which is delivered as stored with bodyError.
 */
import { expect } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compatTest } from "../harness/compat.ts";
import { parseHexFixture } from "../harness/fuzz.ts";
import type { MessageExt } from "rocketbun/client";
import { createRequest, RequestCode, ResponseCode } from "../../src/remoting/index.ts";
import { Env, text, uniq, until } from "./support.ts";

const test = compatTest("rocketbun-client", "rocketbun");
const golden = (name: string) => parseHexFixture(readFileSync(join(import.meta.dir, "../golden/compression", name), "utf8"));

function textInput(): string {
  let s = "";
  for (let i = 0; i < 80; i++) s += `RocketBun body line ${String(i).padStart(4, "0")}: the quick brown fox jumps over the lazy dog\n`;
  return s;
}

test("LZ4, ZSTD and zlib bodies from the Java compressors decompress; an unknown codec comes with bodyError", async () => {
  await using env = await Env.start();
  const topic = uniq("T_compressed");
  await env.createTopic(topic, 1);
  const sends: [string, Uint8Array, number][] = [
    ["lz4", golden("text.lz4.hex"), 0x101],
    ["zstd", golden("text.zstd.hex"), 0x201],
    ["zlib", golden("text.zlib.hex"), 0x301],
    ["unknown", golden("text.lz4.hex"), 0x501],
  ];
  for (const [key, body, sysFlag] of sends) {
    const ext = { a: "PG", b: topic, c: "TBW102", d: "1", e: "0", f: String(sysFlag), g: String(Date.now()), h: "0", i: `KEYS\u0001${key}` };
    const res = await env.wire.invoke(env.brokerAddr, createRequest(RequestCode.SEND_MESSAGE_V2, ext, body), 5000);
    expect(res.code).toBe(ResponseCode.SUCCESS);
  }
  const c = env.pull({ group: uniq("G_compressed") });
  c.subscribe(topic, "*");
  await c.start();
  const got: MessageExt[] = [];
  await until(
    async () => {
      got.push(...(await c.poll(100)));
      return got.length >= sends.length;
    },
    10_000,
    () => `${sends.length} messages (have ${got.length})`,
  );
  const byKey = new Map(got.map((m) => [m.keys[0], m]));
  for (const key of ["lz4", "zstd", "zlib"]) {
    expect(text(byKey.get(key)!.body)).toBe(textInput());
    expect(byKey.get(key)!.bodyError).toBeUndefined();
  }
  const bad = byKey.get("unknown")!;
  expect(bad.body).toEqual(golden("text.lz4.hex"));
  expect(bad.bodyError).toBe("unknown compression type 5 (sysFlag bits 8-10 = 0x500)");
});
