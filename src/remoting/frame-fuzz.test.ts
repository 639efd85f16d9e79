/**
 * Fuzzing the FrameDecoder in the style of NATS `FuzzParser`: thousands of random and mutated
 * frames, each fed in two halves cut at a random offset. Properties checked on every input:
 *   - nothing throws;
 *   - every feed returns commands or `{ invalid: reason }` with a non-empty reason;
 *   - once invalid, the decoder stays invalid (same reason) and holds no bytes;
 *   - the split does not matter: the two-halves result equals feeding the input whole;
 *   - decoded commands are canonical: encoding and decoding one again gives the same command.
 *
 * The run is seeded. The seed is printed; `SEED=<n> bun test src/remoting/frame-fuzz.test.ts`
 * replays a run exactly; `FUZZ_ITERATIONS=<n>` runs longer.
 */
import { expect, test } from "bun:test";
import { type RemotingCommand, SerializeType } from "./command.ts";
import { encodeCommand, FRAME_SIZE_MAX_BYTES_DEFAULT, FrameDecoder } from "./frame.ts";
import { fuzzIterations, fuzzSeed, prng, type Rng } from "../../test/harness/fuzz.ts";
import { concat, frameBytes, rocketmqHeaderBytes, u16, u32, utf8 } from "./test-support.ts";

const ITERATIONS = fuzzIterations(6000);
const SEED = fuzzSeed();

const ALPHABET = ["a", "Z", "0", "_", "%", " ", "\u0001", "\u0002", "é", "€", "😀", '"', "\\", "{", "}"];
function randomString(rng: Rng, max: number): string {
  let s = "";
  const n = rng.int(0, max);
  for (let i = 0; i < n; i++) s += rng.pick(ALPHABET);
  return s;
}

function randomCommand(rng: Rng): RemotingCommand {
  const serializeType = rng.bool() ? SerializeType.JSON : SerializeType.ROCKETMQ;
  const cmd: RemotingCommand = {
    code: rng.pick([0, 1, 3, 10, 11, 34, 105, 310, rng.int(0, 0x7fff)]),
    language: rng.pick(["JAVA", "GO", "CPP", "OTHER"]),
    version: rng.int(0, 0x7fff),
    opaque: rng.int(-0x80000000, 0x7fffffff),
    flag: rng.int(0, 3),
    serializeType,
  };
  if (rng.bool(0.3)) cmd.remark = randomString(rng, 20) || "r";
  if (rng.bool(0.7)) {
    const ext: Record<string, string> = {};
    for (let i = rng.int(0, 6); i > 0; i--) ext[randomString(rng, 6) || "k"] = randomString(rng, 12) || "v";
    cmd.extFields = ext;
  }
  if (rng.bool(0.5)) cmd.body = rng.bytes(rng.int(1, 300));
  return cmd;
}

/** Hand-made frames that target one decoding rule each. */
function targetedFrame(rng: Rng): Uint8Array {
  switch (rng.int(0, 9)) {
    case 0: // serialize type 2..255
      return frameBytes(rng.int(2, 255), utf8('{"code":1}'));
    case 1: // invalid UTF-8 inside a JSON header
      // a stray byte, a cut 2-byte sequence, an encoded surrogate
      const bad = rng.pick([Uint8Array.of(0xff), Uint8Array.of(0xc3), Uint8Array.of(0xed, 0xa0, 0x80)]);
      return frameBytes(0, concat(utf8('{"code":1,"remark":"'), bad, utf8('"}')));
    case 2: // JSON that is not an object
      return frameBytes(0, utf8(rng.pick(["[]", "[1,2]", "1", '"x"', "null", "true", "", " ", "{"])));
    case 3: // extFields arrays and nested objects
      return frameBytes(
        0,
        utf8(
          rng.pick([
            '{"code":1,"extFields":[1]}',
            '{"code":1,"extFields":{"a":{"b":1}}}',
            '{"code":1,"extFields":{"a":[]}}',
            '{"code":1,"extFields":"s"}',
          ]),
        ),
      );
    case 4: {
      // A ROCKETMQ ext section truncated at a random point, with its length word (and the frame)
      // adjusted to the truncated size, so the only thing wrong is the cut entry.
      const entries = concat(u16(3), utf8("key"), u32(5), utf8("value"), u16(1), utf8("b"), u32(2), utf8("xy"));
      const firstEntryEnd = 2 + 3 + 4 + 5;
      let cut = rng.int(1, entries.length - 1);
      if (cut === firstEntryEnd) cut++; // a cut between entries is a valid, shorter section
      const fixed = rocketmqHeaderBytes({ code: 310, languageByte: 0, version: 409, opaque: 1, flag: 0 }).subarray(0, 17);
      return frameBytes(1, concat(fixed, u32(cut), entries.subarray(0, cut)));
    }
    case 5: {
      // Header length larger than the frame.
      const header = utf8('{"code":1}');
      return concat(u32(4 + header.length), u32(header.length + rng.int(1, 1000)), header);
    }
    case 6: // Huge or tiny length words.
      return concat(u32(rng.pick([0xffffffff, 0x80000000, FRAME_SIZE_MAX_BYTES_DEFAULT, rng.int(0, 7)])), rng.bytes(rng.int(0, 16)));
    case 7: // ROCKETMQ header shorter than its fixed part.
      return frameBytes(1, rng.bytes(rng.int(0, 20)));
    case 8: // JSON header with wrong field types.
      return frameBytes(0, utf8(rng.pick(['{"code":"1"}', '{"code":1,"opaque":"x"}', '{"code":1.25}', '{"opaque":1}', '{"flag":[]}'])));
    default: // Random bytes after a plausible length word.
      return concat(u32(rng.int(4, 64)), rng.bytes(rng.int(0, 64)));
  }
}

function flip(bytes: Uint8Array, at: number, mask: number): void {
  bytes[at] = (bytes[at] ?? 0) ^ mask;
}

function mutate(rng: Rng, input: Uint8Array): Uint8Array {
  const out = Uint8Array.from(input);
  if (out.length === 0) return out;
  switch (rng.int(0, 5)) {
    case 0: // flip 1..4 random bytes
      for (let i = rng.int(1, 4); i > 0; i--) flip(out, rng.int(0, out.length - 1), rng.int(1, 255));
      return out;
    case 1: // flip a byte within the first 12 (length word, type/header-length word, start of header)
      flip(out, rng.int(0, Math.min(11, out.length - 1)), 1 << rng.int(0, 7));
      return out;
    case 2: // random length word
      if (out.length >= 4) out.set(u32(rng.pick([rng.int(0, 0xffffffff), rng.int(0, out.length + 8)])), 0);
      return out;
    case 3: // truncate
      return out.subarray(0, rng.int(0, out.length - 1));
    case 4: {
      // insert a random byte
      const at = rng.int(0, out.length);
      return concat(out.subarray(0, at), rng.bytes(1), out.subarray(at));
    }
    default: {
      // delete a byte
      const at = rng.int(0, out.length - 1);
      return concat(out.subarray(0, at), out.subarray(at + 1));
    }
  }
}

function randomInput(rng: Rng): Uint8Array {
  const parts: Uint8Array[] = [];
  for (let n = rng.int(1, 3); n > 0; n--) {
    let frame = rng.bool(0.3) ? targetedFrame(rng) : encodeCommand(randomCommand(rng));
    if (rng.bool(0.5)) frame = mutate(rng, frame);
    parts.push(frame);
  }
  if (rng.bool(0.1)) parts.push(rng.bytes(rng.int(0, 32)));
  return concat(...parts);
}

type FeedResult = RemotingCommand[] | { invalid: string };

function checkShape(r: FeedResult): void {
  if (Array.isArray(r)) {
    for (const c of r) {
      if (typeof c.code !== "number" || typeof c.opaque !== "number" || typeof c.flag !== "number" || typeof c.version !== "number") {
        throw new Error(`malformed command ${JSON.stringify(c)}`);
      }
      if (typeof c.language !== "string" || (c.serializeType !== 0 && c.serializeType !== 1)) throw new Error("malformed command");
      if (c.extFields) for (const v of Object.values(c.extFields)) if (typeof v !== "string") throw new Error("non-string ext value");
    }
  } else if (typeof r.invalid !== "string" || r.invalid.length === 0) {
    throw new Error(`invalid without a reason: ${JSON.stringify(r)}`);
  }
}

/**
 * Compare commands by wire meaning: -0 and 0 are the same number, and a ROCKETMQ ext section whose
 * entries all had an empty key or value decodes to `{}`, which re-encodes as "no extFields".
 */
function normalize(c: RemotingCommand): RemotingCommand {
  const out = { ...c, code: c.code + 0, opaque: c.opaque + 0, flag: c.flag + 0, version: c.version + 0 };
  if (c.serializeType === SerializeType.ROCKETMQ && c.extFields && Object.keys(c.extFields).length === 0) delete out.extFields;
  return out;
}

interface Outcome {
  commands: RemotingCommand[];
  invalid: string | null;
  buffered: number;
}

function feedAll(decoder: FrameDecoder, pieces: Uint8Array[]): Outcome {
  const out: Outcome = { commands: [], invalid: null, buffered: 0 };
  for (const p of pieces) {
    const r = decoder.feed(p);
    checkShape(r);
    if (Array.isArray(r)) {
      if (out.invalid !== null) throw new Error("decoder returned commands after it had reported invalid");
      out.commands.push(...r);
    } else {
      if (out.invalid !== null && r.invalid !== out.invalid) throw new Error(`invalid reason changed: ${out.invalid} -> ${r.invalid}`);
      out.invalid = r.invalid;
      if (decoder.bufferedBytes !== 0) throw new Error("bytes still buffered after invalid");
    }
  }
  out.buffered = decoder.bufferedBytes;
  return out;
}

function fuzzOne(rng: Rng): void {
  const input = randomInput(rng);
  const frameSizeMaxBytes = rng.pick([64, 4096, FRAME_SIZE_MAX_BYTES_DEFAULT, FRAME_SIZE_MAX_BYTES_DEFAULT]);
  const cut = rng.int(0, input.length);

  const split = new FrameDecoder({ frameSizeMaxBytes });
  const halves = feedAll(split, [input.subarray(0, cut), input.subarray(cut)]);
  const whole = feedAll(new FrameDecoder({ frameSizeMaxBytes }), [input]);

  if (halves.invalid !== whole.invalid) throw new Error(`split changed the verdict: ${halves.invalid} vs ${whole.invalid}`);
  if (whole.invalid === null) {
    expect(halves.commands).toEqual(whole.commands);
    expect(halves.buffered).toBe(whole.buffered);
    if (halves.buffered > input.length) throw new Error("buffered more than was fed");
  } else {
    // Broken for good: more input, good or bad, gets the same answer.
    const again = split.feed(rng.bool() ? encodeCommand(randomCommand(rng)) : rng.bytes(rng.int(0, 40)));
    expect(again).toEqual({ invalid: whole.invalid });
    expect(split.bufferedBytes).toBe(0);
  }
  // A length word over the limit is reported against the named limit.
  if (whole.invalid?.startsWith("frame length") && !whole.invalid.includes("< 4")) {
    expect(whole.invalid).toContain(`exceeds frameSizeMaxBytes ${frameSizeMaxBytes}`);
  }

  for (const c of whole.commands) {
    const r = new FrameDecoder().feed(encodeCommand(c));
    if (!Array.isArray(r)) throw new Error(`re-encoding a decoded command made it invalid: ${r.invalid} (${JSON.stringify(c)})`);
    expect(r.map(normalize)).toEqual([normalize(c)]);
  }
}

test(
  `fuzz: ${ITERATIONS} random and mutated inputs fed in two halves (seed ${SEED})`,
  () => {
    process.stderr.write(`frame-fuzz: SEED=${SEED} (replay with SEED=${SEED} bun test src/remoting/frame-fuzz.test.ts)\n`);
    const rng = prng(SEED);
    let i = 0;
    try {
      for (; i < ITERATIONS; i++) fuzzOne(rng);
    } catch (e) {
      throw new Error(`fuzz failure at iteration ${i} with SEED=${SEED}: ${e instanceof Error ? e.message : String(e)}`);
    }
  },
  Math.max(30_000, ITERATIONS / 10),
);

test("fuzz: targeted frames alone are invalid or incomplete, never decoded (seeded)", () => {
  const rng = prng(SEED ^ 0x5eed);
  for (let i = 0; i < 1000; i++) {
    const frame = targetedFrame(rng);
    const d = new FrameDecoder();
    const r = d.feed(frame);
    // Kinds 6 and 9 (random length words) may legitimately just wait for more bytes.
    if (Array.isArray(r)) {
      expect(r).toEqual([]);
      expect(d.bufferedBytes).toBe(frame.length);
    } else {
      expect(d.bufferedBytes).toBe(0);
      expect(d.feed(frame)).toEqual(r);
    }
  }
});
