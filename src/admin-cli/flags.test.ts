import { describe, expect, test } from "bun:test";
import { commandHelp, parseFlags, UsageError, type CommandSpec, type Flags } from "./flags.ts";

const SPEC: CommandSpec = {
  name: "updateTopic",
  summary: "test",
  flags: [
    { short: "b", long: "brokerAddr", value: "ADDR", desc: "broker" },
    { short: "c", long: "clusterName", value: "NAME", desc: "cluster" },
    { short: "t", long: "topic", value: "TOPIC", desc: "topic", required: true },
    { short: "r", long: "readQueueNums", value: "N", desc: "read queues" },
    { short: "o", long: "order", value: "true|false", desc: "order" },
    { short: "l", long: "list", desc: "a switch" },
  ],
  oneOf: [["brokerAddr", "clusterName"]],
};

function ok(argv: string[]): Flags {
  const r = parseFlags(SPEC, argv);
  if (!("flags" in r)) throw new Error(JSON.stringify(r));
  return r.flags;
}

function errors(argv: string[]): string[] {
  const r = parseFlags(SPEC, argv);
  if (!("errors" in r)) throw new Error(`expected errors, got ${JSON.stringify(r)}`);
  return r.errors;
}

describe("admin flag parser", () => {
  test("short and long forms, attached values, values trimmed", () => {
    const f = ok(["-c", "C1", "--topic", " T1 ", "-r8", "--order=true", "-l", "-n", "h:1;h:2"]);
    expect(f.str("clusterName")).toBe("C1");
    expect(f.req("topic")).toBe("T1");
    expect(f.int("readQueueNums", 0, 0, 100)).toBe(8);
    expect(f.bool("order", false)).toBe(true);
    expect(f.has("list")).toBe(true);
    expect(f.str("namesrvAddr")).toBe("h:1;h:2");
    expect(f.has("brokerAddr")).toBe(false);
  });

  test("long names are matched without regard to case, as commons-cli's lookups of mqadmin's are not; a value may start with -", () => {
    const f = ok(["--CLUSTERNAME", "C", "-t", "-weird-"]);
    expect(f.str("clusterName")).toBe("C");
    expect(f.req("topic")).toBe("-weird-");
  });

  test("required flags and one-of groups are checked, every problem reported at once", () => {
    expect(errors([])).toEqual(["-t/--topic: required", "one of -b/--brokerAddr, -c/--clusterName is required"]);
    expect(errors(["-t", "T", "-b", "a:1", "-c", "C"])).toEqual(["-b/--brokerAddr, -c/--clusterName: give only one"]);
  });

  test("unknown flags, stray words, missing and repeated values, a value given to a switch", () => {
    expect(errors(["-t", "T", "-c", "C", "--topik", "x"])).toEqual([
      "--topik: unknown flag (did you mean --topic?)",
      'unexpected argument "x" (every value follows its flag, e.g. -t TOPIC)',
    ]);
    expect(errors(["-c", "C", "-t"])).toEqual(["-t/--topic: missing value (TOPIC)", "-t/--topic: required"]);
    expect(errors(["-c", "C", "-t", "A", "-t", "B"])).toEqual(["-t/--topic: given more than once"]);
    expect(errors(["-c", "C", "-t", "A", "--list=yes"])).toEqual(["-l/--list: takes no value"]);
    expect(errors(["-c", "C", "-t", "A", "-q"])).toEqual(["-q: unknown flag"]);
    expect(errors(["-c", "", "-t", "A"])).toEqual(["-c/--clusterName: empty value", "one of -b/--brokerAddr, -c/--clusterName is required"]);
  });

  test("-h wins over every other problem", () => {
    expect(parseFlags(SPEC, ["--nope", "-h"])).toEqual({ help: true });
    expect(parseFlags(SPEC, ["--help"])).toEqual({ help: true });
  });

  test("typed accessors refuse bad values with the flag's name", () => {
    const f = ok(["-c", "C", "-t", "T", "-r", "x", "-o", "yes"]);
    expect(() => f.int("readQueueNums", 8, 0, 100)).toThrow(new UsageError('-r/--readQueueNums: expected a whole number from 0 to 100, got "x"'));
    expect(() => f.bool("order", false)).toThrow(new UsageError('-o/--order: expected true or false, got "yes"'));
    const g = ok(["-c", "C", "-t", "T", "-r", "101"]);
    expect(() => g.int("readQueueNums", 8, 0, 100)).toThrow(UsageError);
    expect(ok(["-c", "C", "-t", "T"]).int("readQueueNums", 8, 0, 100)).toBe(8);
    expect(ok(["-c", "C", "-t", "T", "-o", "FALSE"]).bool("order", true)).toBe(false);
  });

  test("help lists the command's flags, marks the required ones and the groups, then the common flags", () => {
    const h = commandHelp(SPEC);
    expect(h).toContain("Usage: rocketbun admin updateTopic [flags]");
    expect(h).toMatch(/-t, --topic TOPIC\s+topic \(required\)/);
    expect(h).toContain("One of --brokerAddr, --clusterName is required.");
    expect(h).toMatch(/-n, --namesrvAddr ADDR\[;ADDR\]/);
    expect(h).toContain("--json");
  });
});
