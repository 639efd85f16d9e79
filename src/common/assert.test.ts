/**
 * The assertion helper (./assert.ts): a holding condition does nothing and never builds its lazy
 * message; a failing one throws an AssertionError, which a catch can tell apart from other errors.
 */
import { describe, expect, test } from "bun:test";
import { assert, AssertionError } from "./assert.ts";

describe("assert", () => {
  test("a holding condition returns and never calls the message builder", () => {
    let built = 0;
    const message = () => {
      built++;
      return "never";
    };
    for (const cond of [true, 1, "x", {}, [], -1]) assert(cond, message);
    expect(built).toBe(0);
  });

  test("a failing condition throws an AssertionError with the message", () => {
    for (const cond of [false, 0, "", null, undefined, Number.NaN]) {
      expect(() => assert(cond, "queue offsets go forward")).toThrow(AssertionError);
    }
    expect(() => assert(false, "queue offsets go forward")).toThrow("invariant violated: queue offsets go forward");
  });

  test("details fill the message's {} in order, only on failure", () => {
    expect(() => assert(1 > 2, "queue {}-{}: offset {} is not its end {}", "TopicA", 1, 17, 18)).toThrow(
      "invariant violated: queue TopicA-1: offset 17 is not its end 18",
    );
    expect(() => assert(false, "missing {} stays {}", "x")).toThrow("invariant violated: missing x stays undefined");
  });

  test("a lazy message is built only on failure", () => {
    const offset = 7;
    expect(() => assert(offset < 5, () => `offset ${offset} is not below 5`)).toThrow("invariant violated: offset 7 is not below 5");
  });

  test("an AssertionError is an Error, told apart by class and name", () => {
    let caught: unknown;
    try {
      assert(false, "bug");
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(Error);
    expect(caught).toBeInstanceOf(AssertionError);
    expect((caught as Error).name).toBe("AssertionError");
    expect(new RangeError("input")).not.toBeInstanceOf(AssertionError);
  });

  test("narrows the type it asserts", () => {
    const v: string | undefined = ["a"].at(0);
    assert(v !== undefined, "array has an element");
    expect(v.length).toBe(1);
  });
});
