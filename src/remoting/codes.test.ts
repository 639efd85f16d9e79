/**
 * Freezes the request-code and response-code tables (docs/CONVENTIONS.md §11): the golden JSON files in
 * test/golden/protocol/ are diffed against RequestCode / ResponseCode, so any change to a wire
 * number shows up as a failing test and a reviewed diff of the golden file.
 */
import { describe, expect, test } from "bun:test";
import { RequestCode, requestCodeName } from "./request-code.ts";
import { ResponseCode, responseCodeName } from "./response-code.ts";
import { readGoldenJson } from "./test-support.ts";

/** Human-readable differences between a golden name→code table and the code's table. */
function diffTables(golden: Record<string, number>, actual: Record<string, number>): string[] {
  const out: string[] = [];
  for (const [name, code] of Object.entries(golden)) {
    if (!(name in actual)) out.push(`- ${name} = ${code} (in golden, missing from code)`);
    else if (actual[name] !== code) out.push(`~ ${name}: golden ${code}, code ${actual[name]}`);
  }
  for (const [name, code] of Object.entries(actual)) {
    if (!(name in golden)) out.push(`+ ${name} = ${code} (in code, missing from golden)`);
  }
  return out;
}

async function goldenCodes(file: string): Promise<Record<string, number>> {
  const doc = (await readGoldenJson(file)) as { codes: Record<string, number> };
  expect(typeof doc.codes).toBe("object");
  return doc.codes;
}

describe.each([
  ["request-codes.json", RequestCode as Record<string, number>, requestCodeName] as const,
  ["response-codes.json", ResponseCode as Record<string, number>, responseCodeName] as const,
])("%s", (file, table, nameOf) => {
  test("golden table equals the code's table", async () => {
    expect(diffTables(await goldenCodes(file), table)).toEqual([]);
  });

  test("every number is used by one name only, and is a non-negative integer", () => {
    const seen = new Map<number, string>();
    for (const [name, code] of Object.entries(table)) {
      expect(Number.isInteger(code) && code >= 0).toBe(true);
      expect(seen.get(code) ?? name).toBe(name);
      seen.set(code, name);
    }
  });

  // 5.x's POP codes (2000xx) do not fit: Java writes the code as a short there too, so they
  // travel only with JSON headers, the 5.x clients' default.
  test("fits the ROCKETMQ header's signed 16-bit code field, but for 5.x's POP codes", () => {
    for (const [name, code] of Object.entries(table)) if (code < 200_000 || code >= 300_000) expect([name, code <= 0x7fff]).toEqual([name, true]);
  });

  test("name lookup is the inverse of the table; unknown numbers are named UNKNOWN(n)", () => {
    for (const [name, code] of Object.entries(table)) expect(nameOf(code)).toBe(name);
    expect(nameOf(9999)).toBe("UNKNOWN(9999)");
  });
});

describe("numbers clients depend on (docs/PROTOCOL.md §2)", () => {
  test("request codes ali-ons and Java clients send", () => {
    expect(RequestCode.SEND_MESSAGE_V2).toBe(310);
    expect(RequestCode.PULL_MESSAGE).toBe(11);
    expect(RequestCode.HEART_BEAT).toBe(34);
    expect(RequestCode.UPDATE_CONSUMER_OFFSET).toBe(15);
    expect(RequestCode.GET_ROUTEINFO_BY_TOPIC).toBe(105);
    expect(RequestCode.REGISTER_BROKER).toBe(103);
  });

  test("remoting system response codes 0–4", () => {
    expect([
      ResponseCode.SUCCESS,
      ResponseCode.SYSTEM_ERROR,
      ResponseCode.SYSTEM_BUSY,
      ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
      ResponseCode.TRANSACTION_FAILED,
    ]).toEqual([0, 1, 2, 3, 4]);
  });
});
