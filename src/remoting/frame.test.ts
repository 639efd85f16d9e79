/**
 * The outer frame (docs/PROTOCOL.md §1.1) and the FrameDecoder's limits and state. Split and fuzz
 * tests of the same decoder are in frame-split.test.ts and frame-fuzz.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { type RemotingCommand, SerializeType } from "./command.ts";
import {
  encodeCommand,
  FRAME_HEADER_LENGTH_FIELD_SIZE,
  FRAME_LENGTH_FIELD_SIZE,
  FRAME_PREFIX_SIZE,
  FRAME_SIZE_MAX_BYTES_DEFAULT,
  FrameDecoder,
  HEADER_SIZE_MAX_BYTES,
} from "./frame.ts";
import { concat, frameBytes, u32, utf8 } from "./test-support.ts";

function commands(r: RemotingCommand[] | { invalid: string }): RemotingCommand[] {
  if (!Array.isArray(r)) throw new Error(`unexpected invalid: ${r.invalid}`);
  return r;
}

function invalidReason(r: RemotingCommand[] | { invalid: string }): string {
  if (Array.isArray(r)) throw new Error(`expected invalid, got ${r.length} commands`);
  return r.invalid;
}

/** A JSON frame whose total size (length word included) is exactly `total` bytes. */
function jsonFrameOfTotalSize(total: number): Uint8Array {
  const header = utf8('{"code":10,"opaque":1}');
  return frameBytes(0, header, new Uint8Array(total - FRAME_PREFIX_SIZE - header.length).fill(0x61));
}

describe("frame layout constants (docs/PROTOCOL.md §1.1)", () => {
  test("the prefix is the 4-byte length word plus the 4-byte type/header-length word", () => {
    expect(FRAME_LENGTH_FIELD_SIZE).toBe(4);
    expect(FRAME_HEADER_LENGTH_FIELD_SIZE).toBe(4);
    expect(FRAME_PREFIX_SIZE).toBe(FRAME_LENGTH_FIELD_SIZE + FRAME_HEADER_LENGTH_FIELD_SIZE);
  });

  test("the default frame limit is Java's 16 MiB frameMaxLength; the header limit fits the 24-bit field", () => {
    expect(FRAME_SIZE_MAX_BYTES_DEFAULT).toBe(16777216);
    expect(HEADER_SIZE_MAX_BYTES).toBeLessThanOrEqual(0xffffff);
  });
});

describe("FrameDecoder limits", () => {
  test("a frame of exactly frameSizeMaxBytes (length word included) is accepted", () => {
    const d = new FrameDecoder({ frameSizeMaxBytes: 256 });
    const frame = jsonFrameOfTotalSize(256);
    expect(frame.length).toBe(256);
    expect(commands(d.feed(frame)).length).toBe(1);
    expect(d.bufferedBytes).toBe(0);
  });

  test("one byte over frameSizeMaxBytes is invalid with a reason naming frameSizeMaxBytes", () => {
    const d = new FrameDecoder({ frameSizeMaxBytes: 256 });
    const why = invalidReason(d.feed(jsonFrameOfTotalSize(257)));
    expect(why).toContain("frameSizeMaxBytes");
    expect(why).toContain("257");
  });

  test("an oversized frame is refused from its length word alone, before the rest arrives", () => {
    const d = new FrameDecoder({ frameSizeMaxBytes: 1024 });
    expect(commands(d.feed(Uint8Array.of(0, 0)))).toEqual([]);
    expect(d.bufferedBytes).toBe(2);
    expect(invalidReason(d.feed(Uint8Array.of(0x10, 0)))).toContain("frameSizeMaxBytes");
    expect(d.bufferedBytes).toBe(0);
  });

  test("a huge length word (0xFFFFFFFF) is invalid under the default limit", () => {
    const d = new FrameDecoder();
    expect(invalidReason(d.feed(u32(0xffffffff)))).toContain("frameSizeMaxBytes 16777216");
  });

  test("a length word below 4 cannot hold the header-length word", () => {
    for (const n of [0, 1, 2, 3]) {
      expect(invalidReason(new FrameDecoder().feed(u32(n)))).toBe(`frame length ${n} < 4`);
    }
  });

  test("a header length longer than the frame is invalid", () => {
    const d = new FrameDecoder();
    expect(invalidReason(d.feed(concat(u32(6), u32(3), utf8("{}"))))).toBe("header length exceeds frame length");
  });

  test("a header over HEADER_SIZE_MAX_BYTES is invalid even inside an allowed frame", () => {
    const headerLength = HEADER_SIZE_MAX_BYTES + 1;
    const frame = concat(u32(4 + headerLength), u32(headerLength), new Uint8Array(headerLength));
    const d = new FrameDecoder({ frameSizeMaxBytes: 4 * HEADER_SIZE_MAX_BYTES });
    expect(invalidReason(d.feed(frame))).toContain(`exceeds ${HEADER_SIZE_MAX_BYTES}`);
  });

  test("an unknown serialize type is invalid", () => {
    expect(invalidReason(new FrameDecoder().feed(frameBytes(2, utf8('{"code":1}'))))).toBe("unknown serialize type 2");
  });
});

describe("FrameDecoder state", () => {
  const base = { language: "JAVA", version: 1, flag: 0 };
  const a = encodeCommand({ ...base, code: 1, opaque: 1, serializeType: SerializeType.JSON, body: utf8("first") });
  const b = encodeCommand({ ...base, code: 2, opaque: 2, serializeType: SerializeType.ROCKETMQ, body: utf8("second") });

  test("several frames in one chunk come out in order", () => {
    const out = commands(new FrameDecoder().feed(concat(a, b, a)));
    expect(out.map((c) => c.opaque)).toEqual([1, 2, 1]);
  });

  test("a partial frame is buffered and counted until it completes", () => {
    const d = new FrameDecoder();
    expect(commands(d.feed(concat(a, b.subarray(0, 10))))).toHaveLength(1);
    expect(d.bufferedBytes).toBe(10);
    expect(commands(d.feed(new Uint8Array(0)))).toEqual([]);
    expect(d.bufferedBytes).toBe(10);
    expect(commands(d.feed(b.subarray(10))).map((c) => c.opaque)).toEqual([2]);
    expect(d.bufferedBytes).toBe(0);
  });

  test("bodies stay intact after later feeds reuse the decoder's buffer and the input is overwritten", () => {
    const d = new FrameDecoder();
    const kept: RemotingCommand[] = [];
    for (let i = 0; i < 5; i++) {
      const chunk = concat(a, b);
      // Cut inside b so the tail goes through the decoder's pending buffer.
      kept.push(...commands(d.feed(chunk.subarray(0, a.length + 5))));
      kept.push(...commands(d.feed(chunk.subarray(a.length + 5))));
      chunk.fill(0);
    }
    expect(kept.map((c) => new TextDecoder().decode(c.body))).toEqual(Array(5).fill(["first", "second"]).flat());
  });

  test("after an invalid frame the decoder stays broken, holds nothing, and ignores good input", () => {
    const d = new FrameDecoder();
    expect(commands(d.feed(a.subarray(0, 6)))).toEqual([]);
    const why = invalidReason(d.feed(concat(a.subarray(6), frameBytes(7, utf8("{}")))));
    expect(why).toBe("unknown serialize type 7");
    expect(d.bufferedBytes).toBe(0);
    expect(d.feed(a)).toEqual({ invalid: why });
    expect(d.feed(new Uint8Array(0))).toEqual({ invalid: why });
    expect(d.bufferedBytes).toBe(0);
  });

  test("a 200 KiB frame split in 1000-byte chunks decodes, then the decoder keeps working", () => {
    const big = encodeCommand({
      code: 310,
      language: "JAVA",
      version: 409,
      opaque: 9,
      flag: 0,
      serializeType: SerializeType.JSON,
      body: new Uint8Array(200 * 1024).map((_, i) => (i * 7) & 0xff),
    });
    const d = new FrameDecoder();
    const got: RemotingCommand[] = [];
    for (let pos = 0; pos < big.length; pos += 1000) got.push(...commands(d.feed(big.subarray(pos, pos + 1000))));
    expect(got).toHaveLength(1);
    expect(got[0]!.body).toEqual(new Uint8Array(200 * 1024).map((_, i) => (i * 7) & 0xff));
    expect(d.bufferedBytes).toBe(0);
    expect(commands(d.feed(concat(a, b.subarray(0, 3))))).toHaveLength(1);
    expect(commands(d.feed(b.subarray(3)))).toHaveLength(1);
    expect(d.bufferedBytes).toBe(0);
  });
});
