import { describe, expect, test } from "bun:test";
import { compileSelector, selectorFor, SelectorError } from "./sql92.ts";

const m = (expr: string, props: Record<string, string>) => compileSelector(expr).matches(props);

describe("SQL92 selector: RocketMQ's semantics", () => {
  test("numbers: property strings compared with number literals", () => {
    expect(m("a > 5", { a: "7" })).toBe(true);
    expect(m("a > 5", { a: "5" })).toBe(false);
    expect(m("a >= 5", { a: "5" })).toBe(true);
    expect(m("a < 5.5", { a: "5.25" })).toBe(true);
    expect(m("a <= -1", { a: "-1" })).toBe(true);
    expect(m("a = 10", { a: "10" })).toBe(true);
    expect(m("a <> 10", { a: "11" })).toBe(true);
    expect(m("a = 10.0", { a: "10" })).toBe(true);
    // An integer literal wants an integer string (Java Long.valueOf); a decimal one any number.
    expect(m("a > 1", { a: "2.5" })).toBe(false);
    expect(m("a > 1.0", { a: "2.5" })).toBe(true);
    // Not a number: no match either way.
    expect(m("a > 5", { a: "x" })).toBe(false);
    expect(m("NOT (a > 5)", { a: "x" })).toBe(false);
    expect(m("a = 5", { a: "x" })).toBe(false);
    // Two properties compare as numbers.
    expect(m("a > b", { a: "10", b: "9" })).toBe(true);
    expect(m("5 < a", { a: "6" })).toBe(true);
    expect(m("a > 10L", { a: "11" })).toBe(true);
    expect(m("a > 1e3", { a: "1001" })).toBe(true);
  });

  test("BETWEEN, IN, CONTAINS, strings and TAGS", () => {
    expect(m("a BETWEEN 0 AND 3", { a: "3" })).toBe(true);
    expect(m("a between 0 and 3", { a: "4" })).toBe(false);
    expect(m("a NOT BETWEEN 0 AND 3", { a: "4" })).toBe(true);
    expect(m("TAGS IN ('TagA', 'TagB')", { TAGS: "TagB" })).toBe(true);
    expect(m("TAGS NOT IN ('TagA', 'TagB')", { TAGS: "TagC" })).toBe(true);
    expect(m("b = 'name2'", { b: "name2" })).toBe(true);
    expect(m("b <> 'it''s'", { b: "it's" })).toBe(false);
    expect(m("b CONTAINS 'am'", { b: "name" })).toBe(true);
    expect(m("b NOT CONTAINS 'am'", { b: "name" })).toBe(false);
    expect(m("(TAGS IN ('TagA', 'TagB')) AND (c1 BETWEEN 4 AND 7) AND (c2 = 'v6')", { TAGS: "TagA", c1: "5", c2: "v6" })).toBe(true);
    expect(m("flag = TRUE", { flag: "true" })).toBe(true);
    expect(m("flag = FALSE", { flag: "yes" })).toBe(true);
  });

  test("three-valued logic: an absent property is unknown, never a match", () => {
    expect(m("a > 5", {})).toBe(false);
    expect(m("NOT (a > 5)", {})).toBe(false);
    expect(m("a = 'x'", {})).toBe(false);
    expect(m("a <> 'x'", {})).toBe(false);
    expect(m("a IS NULL", {})).toBe(true);
    expect(m("a IS NOT NULL", {})).toBe(false);
    expect(m("a IS NOT NULL", { a: "" })).toBe(true);
    expect(m("a > 5 OR b = 1", { b: "1" })).toBe(true);
    expect(m("a > 5 AND b = 1", { b: "1" })).toBe(false);
    expect(m("a > 5 AND b = 1", { b: "2" })).toBe(false);
    expect(m("a IN ('x')", {})).toBe(false);
    expect(m("NULL", {})).toBe(false);
    expect(m("TRUE", {})).toBe(true);
  });

  test("keywords in any case, comments, precedence", () => {
    expect(m("a = 1 or b = 1 and c = 1", { a: "1" })).toBe(true);
    expect(m("(a = 1 or b = 1) and c = 1", { a: "1" })).toBe(false);
    // NOT binds tighter than "=" in RocketMQ's grammar (it is a unary operator there):
    // `NOT a = 1` is `(NOT a) = 1`, a boolean against a number, which never matches.
    expect(m("not a = 1", { a: "2" })).toBe(false);
    expect(m("not (a = 1)", { a: "2" })).toBe(true);
    expect(m("a = 1 -- the rest is a comment", { a: "1" })).toBe(true);
    expect(m("/* lead */ a = 1", { a: "1" })).toBe(true);
  });

  test("invalid expressions are refused at compile time with a reason", () => {
    for (const bad of [
      "",
      "a >",
      "a > 'x'",
      "a = NULL",
      "a BETWEEN 3 AND 1",
      "'x' IN ('x')",
      "a IN (1, 2)",
      "5",
      "a = 1 b",
      "a LIKE 'x%'",
      "a = 'unterminated",
      "05 = a",
      "(a = 1",
      "a.b = 1",
      "a > TRUE",
      "(a = 1) > 2",
    ]) {
      expect(() => compileSelector(bad), bad).toThrow(SelectorError);
    }
    expect(selectorFor("a >")).toMatchObject({ invalid: expect.stringContaining("Invalid MessageSelector") });
    const ok = selectorFor("a > 1");
    expect("matches" in ok && ok.matches({ a: "2" })).toBe(true);
  });

  test("a bare property is a condition that is true only for a boolean (never for a string value)", () => {
    expect(m("a", { a: "true" })).toBe(false);
    expect(m("a", {})).toBe(false);
  });
});
