/**
 * The flags of `rocketbun admin <command>`, shared by every command: mqadmin's letters and long
 * names (commons-cli: `-t T`, `-tT`, `--topic T`, `--topic=T`; a switch takes no value), the
 * required flags and the "one of" groups each command declares, and the flags every command has
 * (-n, -h, --json, TLS, credentials, --timeout). A problem here is bad usage: exit 2, nothing sent.
 */

/** One flag of a command. `value` names the argument in help; a flag without one is a switch. */
export interface FlagSpec {
  readonly short?: string;
  readonly long: string;
  readonly value?: string;
  readonly desc: string;
  readonly required?: boolean;
}

/** A command's name, help and flags (the runner adds COMMON_FLAGS). */
export interface CommandSpec {
  readonly name: string;
  readonly alias?: string;
  readonly summary: string;
  readonly flags: readonly FlagSpec[];
  /** Groups of long names of which exactly one must be given (mqadmin's required OptionGroups). */
  readonly oneOf?: readonly (readonly string[])[];
  readonly examples?: readonly string[];
}

/** Bad command line: the runner prints the message and exits 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** Every command has these (mqadmin's -h and -n, plus what a script and a secured cluster need). */
export const COMMON_FLAGS: readonly FlagSpec[] = [
  { short: "n", long: "namesrvAddr", value: "ADDR[;ADDR]", desc: "name servers (default $NAMESRV_ADDR)" },
  { short: "h", long: "help", desc: "print this help" },
  { long: "json", desc: "print JSON instead of a table" },
  { long: "tls", desc: "TLS to the name servers and brokers (any certificate accepted, as Java's test mode)" },
  { long: "tls-ca", value: "FILE", desc: "with --tls: check the servers' certificate chain against this CA (PEM)" },
  { long: "access-key", value: "KEY", desc: "ACL AccessKey (default $ROCKETMQ_ACCESS_KEY, else $ROCKETMQ_HOME/conf/tools.yml)" },
  { long: "secret-key", value: "KEY", desc: "ACL SecretKey (default $ROCKETMQ_SECRET_KEY, else tools.yml)" },
  { long: "timeout", value: "MS", desc: "per-request timeout in milliseconds (default 5000)" },
];

/** The flags given, by long name, with accessors that turn a bad value into a UsageError. */
export class Flags {
  readonly #values: ReadonlyMap<string, string | true>;
  readonly #specs: ReadonlyMap<string, FlagSpec>;

  constructor(values: ReadonlyMap<string, string | true>, specs: readonly FlagSpec[]) {
    this.#values = values;
    this.#specs = new Map(specs.map((s) => [s.long, s]));
  }

  has(long: string): boolean {
    return this.#values.has(long);
  }

  /** The value of a flag that takes one, or undefined when it was not given. */
  str(long: string): string | undefined {
    const v = this.#values.get(long);
    return typeof v === "string" ? v : undefined;
  }

  /** A flag the spec marks required (the parser checked it is there). */
  req(long: string): string {
    const v = this.str(long);
    if (v === undefined) throw new UsageError(`${this.label(long)}: required`);
    return v;
  }

  /** A whole number in [min, max], or `dflt` when absent. */
  int(long: string, dflt: number, min: number, max: number): number {
    const v = this.str(long);
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new UsageError(`${this.label(long)}: expected a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`);
    }
    return n;
  }

  /** "true" or "false" (either case), or `dflt` when absent. Java would read any other word as false; we refuse it. */
  bool(long: string, dflt: boolean): boolean {
    const v = this.str(long);
    if (v === undefined) return dflt;
    const l = v.toLowerCase();
    if (l !== "true" && l !== "false") throw new UsageError(`${this.label(long)}: expected true or false, got ${JSON.stringify(v)}`);
    return l === "true";
  }

  /** "-t/--topic" for messages. */
  label(long: string): string {
    const s = this.#specs.get(long);
    return s?.short !== undefined ? `-${s.short}/--${long}` : `--${long}`;
  }
}

function flagLabel(s: FlagSpec): string {
  return s.short !== undefined ? `-${s.short}/--${s.long}` : `--${s.long}`;
}

/**
 * Parses a command's arguments (after its name). `-h`/`--help` wins over every other problem, so
 * help always works; otherwise every problem is collected and reported at once.
 */
export function parseFlags(spec: CommandSpec, argv: readonly string[]): { flags: Flags } | { help: true } | { errors: string[] } {
  const all = [...spec.flags, ...COMMON_FLAGS];
  const byShort = new Map(all.filter((s) => s.short !== undefined).map((s) => [s.short!, s]));
  const byLong = new Map(all.map((s) => [s.long.toLowerCase(), s]));
  const values = new Map<string, string | true>();
  const errors: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const found = lookup(arg, byShort, byLong);
    if ("error" in found) {
      errors.push(found.error);
      continue;
    }
    const { s, inline } = found;
    if (s.long === "help") return { help: true };
    let value: string | true;
    if (s.value === undefined) {
      if (inline !== undefined) errors.push(`${flagLabel(s)}: takes no value`);
      value = true;
    } else if (inline !== undefined) value = inline;
    else if (i + 1 < argv.length) value = argv[++i]!;
    else {
      errors.push(`${flagLabel(s)}: missing value (${s.value})`);
      continue;
    }
    if (typeof value === "string") value = value.trim();
    if (value === "") errors.push(`${flagLabel(s)}: empty value`);
    else if (values.has(s.long)) errors.push(`${flagLabel(s)}: given more than once`);
    else values.set(s.long, value);
  }
  errors.push(...missing(spec, values));
  return errors.length > 0 ? { errors } : { flags: new Flags(values, all) };
}

function lookup(
  arg: string,
  byShort: ReadonlyMap<string, FlagSpec>,
  byLong: ReadonlyMap<string, FlagSpec>,
): { s: FlagSpec; inline?: string } | { error: string } {
  if (arg.startsWith("--") && arg.length > 2) {
    const eq = arg.indexOf("=");
    const name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    const s = byLong.get(name.toLowerCase());
    if (s === undefined)
      return {
        error: unknown(
          `--${name}`,
          [...byLong.values()].map((x) => `--${x.long}`),
        ),
      };
    return eq >= 0 ? { s, inline: arg.slice(eq + 1) } : { s };
  }
  if (arg.startsWith("-") && arg.length > 1) {
    const s = byShort.get(arg[1]!);
    // No guess for one letter: every other letter is as close.
    if (s === undefined) return { error: `${arg.slice(0, 2)}: unknown flag` };
    // POSIX style: "-tTopicA" is -t with the value TopicA (a switch must stand alone).
    if (arg.length > 2) return s.value !== undefined ? { s, inline: arg.slice(2) } : { error: `${arg}: unknown flag` };
    return { s };
  }
  return { error: `unexpected argument ${JSON.stringify(arg)} (every value follows its flag, e.g. -t TOPIC)` };
}

function unknown(name: string, known: readonly string[]): string {
  const near = nearest(name, known);
  return `${name}: unknown flag${near !== undefined ? ` (did you mean ${near}?)` : ""}`;
}

/** Required flags and one-of groups that the command line does not satisfy. */
function missing(spec: CommandSpec, values: ReadonlyMap<string, string | true>): string[] {
  const errors: string[] = [];
  for (const s of spec.flags) if (s.required && !values.has(s.long)) errors.push(`${flagLabel(s)}: required`);
  for (const group of spec.oneOf ?? []) {
    const given = group.filter((g) => values.has(g));
    const labels = group.map((g) => flagLabel(spec.flags.find((s) => s.long === g) ?? { long: g, desc: "" }));
    if (given.length === 0) errors.push(`one of ${labels.join(", ")} is required`);
    if (given.length > 1) errors.push(`${labels.join(", ")}: give only one`);
  }
  return errors;
}

/** The known name closest to a mistyped one, when it is close (edit distance ≤ 2). */
export function nearest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = 3;
  for (const k of known) {
    const d = editDistance(name.toLowerCase(), k.toLowerCase());
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur.push(Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    prev = cur;
  }
  return prev[b.length]!;
}

/** `rocketbun admin <command> -h`: usage line, summary, flags (required ones marked), examples. */
export function commandHelp(spec: CommandSpec): string {
  const line = (s: FlagSpec) => {
    const name = `${s.short !== undefined ? `-${s.short}, ` : "    "}--${s.long}${s.value !== undefined ? ` ${s.value}` : ""}`;
    return `  ${name.padEnd(36)} ${s.desc}${s.required ? " (required)" : ""}`;
  };
  const groups = (spec.oneOf ?? []).map((g) => `One of ${g.map((x) => `--${x}`).join(", ")} is required.`);
  return [
    `Usage: rocketbun admin ${spec.name} [flags]${spec.alias !== undefined ? `   (also: ${spec.alias})` : ""}`,
    "",
    spec.summary,
    "",
    "Flags:",
    ...spec.flags.map(line),
    ...(groups.length > 0 ? ["", ...groups] : []),
    "",
    "Common flags:",
    ...COMMON_FLAGS.map(line),
    ...(spec.examples && spec.examples.length > 0 ? ["", "Examples:", ...spec.examples.map((e) => `  ${e}`)] : []),
  ].join("\n");
}
