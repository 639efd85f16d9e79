/**
 * fastjson's object-keyed maps (docs/PROTOCOL.md §3.17). Java serialises a `Map<MessageQueue, …>`
 * with the key objects written as JSON objects:
 *
 *   {"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":5,...},...}}
 *
 * Standard JSON cannot express that, and fastjson cannot map a string key back to a MessageQueue,
 * so the admin bodies Java decodes into such maps (TopicStatsTable, ConsumeStats, …) are written
 * with `objectKeyedJson`. `parseObjectKeyedJson` is the tolerant reader for the same form (and for
 * fastjson's unquoted numeric keys): an object whose keys are all strings or numbers becomes a
 * plain record (numeric keys as strings), an object with any object or array key becomes a Map.
 *
 * Input limits: nesting depth at most OBJECT_KEY_JSON_DEPTH_MAX; anything malformed is a reason
 * string, never an exception.
 */

export const OBJECT_KEY_JSON_DEPTH_MAX = 64;

/**
 * `{<key>:<value>,...}` with each key and value written by JSON.stringify. Keys are written as
 * given, so callers list their fields in fastjson's (alphabetical) order.
 */
export function objectKeyedJson(entries: Iterable<readonly [key: object, value: unknown]>): string {
  const parts: string[] = [];
  for (const [k, v] of entries) parts.push(`${JSON.stringify(k)}:${JSON.stringify(v)}`);
  return `{${parts.join(",")}}`;
}

export type ObjectKeyJsonResult = { value: unknown } | { invalid: string };

export function parseObjectKeyedJson(text: string): ObjectKeyJsonResult {
  const p = new Parser(text);
  try {
    const value = p.value(0);
    p.ws();
    if (p.pos !== text.length) return { invalid: `unexpected ${JSON.stringify(text[p.pos])} at ${p.pos}` };
    return { value };
  } catch (e) {
    if (e instanceof SyntaxProblem) return { invalid: e.message };
    throw e;
  }
}

class SyntaxProblem extends Error {}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LITERALS: [string, unknown][] = [
  ["true", true],
  ["false", false],
  ["null", null],
];

class Parser {
  pos = 0;
  readonly #t: string;

  constructor(text: string) {
    this.#t = text;
  }

  ws(): void {
    while (this.pos < this.#t.length && " \t\r\n".includes(this.#t[this.pos]!)) this.pos++;
  }

  #fail(what: string): never {
    throw new SyntaxProblem(`${what} at ${this.pos}`);
  }

  value(depth: number): unknown {
    if (depth > OBJECT_KEY_JSON_DEPTH_MAX) this.#fail(`nesting deeper than ${OBJECT_KEY_JSON_DEPTH_MAX}`);
    this.ws();
    const c = this.#t[this.pos];
    if (c === "{") return this.#object(depth);
    if (c === "[") return this.#array(depth);
    if (c === '"') return this.#string();
    for (const [word, v] of LITERALS) {
      if (this.#t.startsWith(word, this.pos)) {
        this.pos += word.length;
        return v;
      }
    }
    NUMBER.lastIndex = this.pos;
    const m = NUMBER.exec(this.#t);
    if (!m) this.#fail(c === undefined ? "unexpected end" : `unexpected ${JSON.stringify(c)}`);
    this.pos += m[0].length;
    return Number(m[0]);
  }

  #string(): string {
    const start = this.pos;
    this.pos++;
    while (this.pos < this.#t.length) {
      const c = this.#t[this.pos]!;
      if (c === "\\") this.pos += 2;
      else if (c === '"') {
        this.pos++;
        try {
          return JSON.parse(this.#t.slice(start, this.pos)) as string;
        } catch {
          this.pos = start;
          this.#fail("bad string");
        }
      } else this.pos++;
    }
    this.pos = start;
    return this.#fail("unterminated string");
  }

  #array(depth: number): unknown[] {
    this.pos++;
    const out: unknown[] = [];
    this.ws();
    if (this.#t[this.pos] === "]") {
      this.pos++;
      return out;
    }
    for (;;) {
      out.push(this.value(depth + 1));
      this.ws();
      const c = this.#t[this.pos++];
      if (c === "]") return out;
      if (c !== ",") {
        this.pos--;
        this.#fail("expected , or ]");
      }
    }
  }

  #object(depth: number): Record<string, unknown> | Map<unknown, unknown> {
    this.pos++;
    const entries: [unknown, unknown][] = [];
    let objectKeys = false;
    this.ws();
    if (this.#t[this.pos] === "}") {
      this.pos++;
      return {};
    }
    for (;;) {
      this.ws();
      const c = this.#t[this.pos];
      let key: unknown;
      if (c === "{" || c === "[") {
        key = this.value(depth + 1);
        objectKeys = true;
      } else if (c === '"') key = this.#string();
      else {
        const k = this.value(depth + 1);
        if (typeof k !== "number") this.#fail("expected a key");
        // fastjson's unquoted numeric keys are read as the digits they were written with.
        key = String(k);
      }
      this.ws();
      if (this.#t[this.pos] !== ":") this.#fail("expected :");
      this.pos++;
      entries.push([key, this.value(depth + 1)]);
      this.ws();
      const d = this.#t[this.pos++];
      if (d === "}") break;
      if (d !== ",") {
        this.pos--;
        this.#fail("expected , or }");
      }
    }
    if (objectKeys) return new Map(entries);
    const out: Record<string, unknown> = {};
    // defineProperty, not assignment: a "__proto__" key must stay an ordinary property.
    for (const [k, v] of entries) Object.defineProperty(out, k as string, { value: v, enumerable: true, writable: true, configurable: true });
    return out;
  }
}
