/**
 * RocketMQ's SQL92 message selector (`MessageSelector.bySql` in the Java client, expression type
 * "SQL92"), matched on the broker against a message's properties when `enablePropertyFilter` is on.
 *
 * The language is RocketMQ's (apache/rocketmq filter/SelectorParser.jj: ActiveMQ's JMS selector
 * without LIKE, arithmetic, hex and octal literals, plus CONTAINS):
 *
 *   expr     := and (OR and)*
 *   and      := equality (AND equality)*
 *   equality := cmp ( "=" cmp | "<>" cmp | IS NULL | IS NOT NULL )*
 *   cmp      := unary ( (">" | ">=" | "<" | "<=") unary | [NOT] BETWEEN unary AND unary
 *                     | [NOT] IN "(" 'str' ("," 'str')* ")" | [NOT] CONTAINS 'str' )*
 *   unary    := "+" unary | "-" unary | NOT unary | literal | identifier | "(" expr ")"
 *   literal  := 'string' ('' escapes a quote) | 123 | 123L | 1.5 | .5 | 1e3 | TRUE | FALSE | NULL
 *
 * Keywords are case-insensitive; identifiers ([A-Za-z_$][A-Za-z0-9_$]*) name properties, so
 * `TAGS` is the message's tag. `--` and block comments are skipped.
 *
 * Semantics, as RocketMQ evaluates them (three-valued: a missing property makes a comparison
 * unknown, and only TRUE matches):
 *   - property values are strings; compared with a number they are parsed as one (an integer
 *     literal wants an integer string, a decimal literal any number); `>` `<` etc. between two
 *     strings compare them as numbers; a value that does not parse makes the message not match;
 *   - `=` `<>` compare strings as strings, and a string with TRUE/FALSE as a boolean;
 *   - AND / OR / NOT follow SQL's three-valued logic; `x IS NULL` is true when x is absent;
 *   - at parse time: `>`-style operands must not be string or boolean literals, `=` must not
 *     compare with the NULL literal, BETWEEN's constant bounds must be in order, IN and CONTAINS
 *     apply to a property, and the whole must be a condition.
 */

export class SelectorError extends Error {
  override name = "SelectorError";
}

/** A number as RocketMQ types it: an integer (Java Long) or a decimal (Java Double) literal. */
class Num {
  constructor(
    readonly v: number,
    readonly integral: boolean,
  ) {}
}

type Value = string | boolean | Num | null;
type Props = Readonly<Record<string, string>>;

type Node =
  | { k: "const"; v: Value }
  | { k: "prop"; name: string }
  | { k: "neg"; e: Node }
  | { k: "not"; e: Node }
  | { k: "bool"; e: Node } // a bare property used as a condition
  | { k: "and" | "or"; l: Node; r: Node }
  | { k: "eq"; l: Node; r: Node }
  | { k: "cmp"; op: ">" | ">=" | "<" | "<="; l: Node; r: Node }
  | { k: "in"; e: Node; list: Set<string>; not: boolean }
  | { k: "contains"; e: Node; s: string; not: boolean };

/** A compiled selector: `matches(props)` is true only when the expression is TRUE for them. */
export interface Selector {
  readonly expression: string;
  matches(props: Props): boolean;
}

const KEYWORDS = new Set(["NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS", "CONTAINS"]);

type Token = { t: "kw"; v: string } | { t: "id"; v: string } | { t: "str"; v: string } | { t: "num"; v: Num } | { t: "op"; v: string } | { t: "end" };

/** A quoted string from the quote at `start` ('' is an escaped quote): its text and the index after it. */
function readString(src: string, start: number): [string, number] {
  let s = "";
  let j = start + 1;
  for (;;) {
    if (j >= src.length) throw new SelectorError(`unterminated string at ${start}`);
    if (src[j] === "'") {
      if (src[j + 1] !== "'") return [s, j + 1];
      s += "'";
      j += 2;
      continue;
    }
    s += src[j];
    j++;
  }
}

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\f") {
      i++;
      continue;
    }
    if (c === "-" && src[i + 1] === "-") {
      while (i < n && src[i] !== "\n" && src[i] !== "\r") i++;
      continue;
    }
    if (c === "/" && src[i + 1] === "*") {
      const end = src.indexOf("*/", i + 2);
      if (end < 0) throw new SelectorError(`unterminated comment at ${i}`);
      i = end + 2;
      continue;
    }
    if (c === "'") {
      const [text, next] = readString(src, i);
      out.push({ t: "str", v: text });
      i = next;
      continue;
    }
    const num = /^(?:\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|(0|[1-9]\d*)[lL]?)/.exec(src.slice(i));
    if (num && (c === "." || (c >= "0" && c <= "9"))) {
      const text = num[0];
      const integral = num[1] !== undefined;
      const v = Number(integral ? num[1] : text);
      out.push({ t: "num", v: new Num(v, integral) });
      i += text.length;
      continue;
    }
    const id = /^[A-Za-z_$][A-Za-z0-9_$]*/.exec(src.slice(i));
    if (id) {
      const up = id[0].toUpperCase();
      out.push(KEYWORDS.has(up) ? { t: "kw", v: up } : { t: "id", v: id[0] });
      i += id[0].length;
      continue;
    }
    const two = src.slice(i, i + 2);
    if (two === ">=" || two === "<=" || two === "<>") {
      out.push({ t: "op", v: two });
      i += 2;
      continue;
    }
    if ("=<>(),+-".includes(c)) {
      out.push({ t: "op", v: c });
      i++;
      continue;
    }
    throw new SelectorError(`unexpected character '${c}' at ${i}`);
  }
  out.push({ t: "end" });
  return out;
}

const isBoolean = (e: Node): boolean =>
  e.k === "not" ||
  e.k === "bool" ||
  e.k === "and" ||
  e.k === "or" ||
  e.k === "eq" ||
  e.k === "cmp" ||
  e.k === "in" ||
  e.k === "contains" ||
  (e.k === "const" && (e.v === null || typeof e.v === "boolean"));

class Parser {
  #pos = 0;
  constructor(readonly toks: Token[]) {}

  #peek(o = 0): Token {
    return this.toks[Math.min(this.#pos + o, this.toks.length - 1)]!;
  }
  #isKw(v: string, o = 0): boolean {
    const t = this.#peek(o);
    return t.t === "kw" && t.v === v;
  }
  #isOp(v: string): boolean {
    const t = this.#peek();
    return t.t === "op" && t.v === v;
  }
  #next(): Token {
    return this.toks[this.#pos++]!;
  }
  #expectKw(v: string): void {
    if (!this.#isKw(v)) throw new SelectorError(`expected ${v} at token ${this.#pos}`);
    this.#pos++;
  }
  #expectOp(v: string): void {
    if (!this.#isOp(v)) throw new SelectorError(`expected '${v}' at token ${this.#pos}`);
    this.#pos++;
  }

  parse(): Node {
    const e = this.#or();
    if (this.#peek().t !== "end") throw new SelectorError(`unexpected ${describe(this.#peek())} at token ${this.#pos}`);
    return asCondition(e);
  }

  #or(): Node {
    return this.#chain("OR", () => this.#and());
  }

  #and(): Node {
    return this.#chain("AND", () => this.#equality());
  }

  /** operand (KW operand)*, left-associative. */
  #chain(kw: "AND" | "OR", operand: () => Node): Node {
    let l = operand();
    while (this.#isKw(kw)) {
      this.#pos++;
      l = { k: kw === "AND" ? "and" : "or", l: asCondition(l), r: asCondition(operand()) };
    }
    return l;
  }

  /** At `KW` or `NOT KW`: consumes it and says whether NOT was there; otherwise null. */
  #negatable(kw: string): boolean | null {
    if (this.#isKw(kw)) {
      this.#pos++;
      return false;
    }
    if (this.#isKw("NOT") && this.#isKw(kw, 1)) {
      this.#pos += 2;
      return true;
    }
    return null;
  }

  #equality(): Node {
    let l = this.#comparison();
    for (;;) {
      if (this.#isOp("=") || this.#isOp("<>")) {
        const not = (this.#next() as { v: string }).v === "<>";
        const r = this.#comparison();
        for (const side of [l, r])
          if (side.k === "const" && side.v === null) throw new SelectorError("NULL cannot be compared with = or <> (use IS NULL)");
        if (l.k === "const" && r.k === "const" && typeof l.v === "boolean" && typeof r.v !== "boolean")
          throw new SelectorError("a boolean cannot be compared with a non-boolean");
        const eq: Node = { k: "eq", l, r };
        l = not ? { k: "not", e: eq } : eq;
      } else if (this.#isKw("IS")) {
        this.#pos++;
        const not = this.#isKw("NOT");
        if (not) this.#pos++;
        this.#expectKw("NULL");
        const isNull: Node = { k: "eq", l, r: { k: "const", v: null } };
        l = not ? { k: "not", e: isNull } : isNull;
      } else return l;
    }
  }

  #comparison(): Node {
    let l = this.#unary();
    for (;;) {
      const t = this.#peek();
      let not: boolean | null;
      if (t.t === "op" && (t.v === ">" || t.v === ">=" || t.v === "<" || t.v === "<=")) {
        this.#pos++;
        const r = this.#unary();
        l = cmp(t.v, l, r);
      } else if ((not = this.#negatable("BETWEEN")) !== null) {
        const low = this.#unary();
        this.#expectKw("AND");
        const high = this.#unary();
        if (low.k === "const" && high.k === "const" && low.v instanceof Num && high.v instanceof Num && high.v.v < low.v.v)
          throw new SelectorError(`BETWEEN bounds out of order: ${low.v.v} > ${high.v.v}`);
        l = not ? { k: "or", l: cmp("<", l, low), r: cmp(">", l, high) } : { k: "and", l: cmp(">=", l, low), r: cmp("<=", l, high) };
      } else if ((not = this.#negatable("IN")) !== null) {
        if (l.k !== "prop") throw new SelectorError("IN applies to a property");
        this.#expectOp("(");
        const list = new Set<string>([this.#string()]);
        while (this.#isOp(",")) {
          this.#pos++;
          list.add(this.#string());
        }
        this.#expectOp(")");
        l = { k: "in", e: l, list, not };
      } else if ((not = this.#negatable("CONTAINS")) !== null) {
        if (l.k !== "prop") throw new SelectorError("CONTAINS applies to a property");
        l = { k: "contains", e: l, s: this.#string(), not };
      } else return l;
    }
  }

  #string(): string {
    const t = this.#next();
    if (t.t !== "str") throw new SelectorError(`expected a 'string' literal, got ${describe(t)}`);
    return t.v;
  }

  #unary(): Node {
    if (this.#isOp("+")) {
      this.#pos++;
      return this.#unary();
    }
    if (this.#isOp("-")) {
      this.#pos++;
      const e = this.#unary();
      if (e.k === "const") {
        if (!(e.v instanceof Num)) throw new SelectorError("only a number can be negated");
        return { k: "const", v: new Num(-e.v.v, e.v.integral) };
      }
      return { k: "neg", e };
    }
    if (this.#isKw("NOT")) {
      this.#pos++;
      return { k: "not", e: asCondition(this.#unary()) };
    }
    const t = this.#next();
    switch (t.t) {
      case "str":
        return { k: "const", v: t.v };
      case "num":
        return { k: "const", v: t.v };
      case "id":
        return { k: "prop", name: t.v };
      case "kw":
        if (t.v === "TRUE") return { k: "const", v: true };
        if (t.v === "FALSE") return { k: "const", v: false };
        if (t.v === "NULL") return { k: "const", v: null };
        break;
      case "op":
        if (t.v === "(") {
          const e = this.#or();
          this.#expectOp(")");
          return e;
        }
        break;
      case "end":
        throw new SelectorError("unexpected end of expression");
    }
    throw new SelectorError(`unexpected ${describe(t)}`);
  }
}

function describe(t: Token): string {
  switch (t.t) {
    case "end":
      return "end of expression";
    case "num":
      return String(t.v.v);
    case "str":
      return `'${t.v}'`;
    default:
      return t.v;
  }
}

function asCondition(e: Node): Node {
  if (isBoolean(e)) return e;
  if (e.k === "prop") return { k: "bool", e };
  throw new SelectorError("the expression is not a condition");
}

function cmp(op: ">" | ">=" | "<" | "<=", l: Node, r: Node): Node {
  for (const side of [l, r]) {
    if (side.k === "const" && !(side.v instanceof Num)) throw new SelectorError(`only numbers can be compared with ${op}`);
    if (side.k !== "const" && isBoolean(side)) throw new SelectorError(`a condition cannot be compared with ${op}`);
  }
  return { k: "cmp", op, l, r };
}

/** Thrown while evaluating: the message does not match (RocketMQ logs it and skips the message). */
class EvalError extends Error {}

function toNum(s: string, like: Num): Num {
  if (like.integral) {
    // Java Long.valueOf: an optional sign and digits, nothing else.
    if (!/^[+-]?\d+$/.test(s)) throw new EvalError(`"${s}" is not an integer`);
    return new Num(Number(s), true);
  }
  const t = s.trim();
  const v = Number(t);
  if (t === "" || Number.isNaN(v)) throw new EvalError(`"${s}" is not a number`);
  return new Num(v, false);
}

/** Java's Comparable ordering after RocketMQ's conversions: <0, 0, >0, or -1 for incomparable types. */
function order(lv: Exclude<Value, null>, rv: Exclude<Value, null>): number {
  if (typeof lv === "string" && rv instanceof Num) lv = toNum(lv, rv);
  else if (lv instanceof Num && typeof rv === "string") rv = toNum(rv, lv);
  else if (typeof lv === "string" && typeof rv === "boolean") lv = lv.toLowerCase() === "true";
  if (lv instanceof Num && rv instanceof Num) return lv.v < rv.v ? -1 : lv.v > rv.v ? 1 : 0;
  if (typeof lv === "string" && typeof rv === "string") return lv < rv ? -1 : lv > rv ? 1 : 0;
  if (typeof lv === "boolean" && typeof rv === "boolean") return lv === rv ? 0 : lv ? 1 : -1;
  if (typeof lv === "boolean" && typeof rv === "string") throw new EvalError("a boolean cannot be compared with a string");
  return -1;
}

function evaluate(e: Node, p: Props): Value {
  switch (e.k) {
    case "const":
      return e.v;
    case "prop":
      return Object.prototype.hasOwnProperty.call(p, e.name) ? p[e.name]! : null;
    case "neg": {
      const v = evaluate(e.e, p);
      if (v === null) return null;
      if (v instanceof Num) return new Num(-v.v, v.integral);
      throw new EvalError("only a number can be negated");
    }
    case "bool": {
      const v = evaluate(e.e, p);
      return v === null ? null : typeof v === "boolean" ? v : false;
    }
    case "not": {
      const v = evaluate(e.e, p);
      return v === null ? null : v !== true;
    }
    case "and": {
      const l = evaluate(e.l, p);
      if (l === false) return false;
      const r = evaluate(e.r, p);
      if (r === false) return false;
      return l === null || r === null ? null : true;
    }
    case "or": {
      const l = evaluate(e.l, p);
      if (l === true) return true;
      const r = evaluate(e.r, p);
      if (r === true) return true;
      return l === null || r === null ? null : false;
    }
    case "eq": {
      const l = evaluate(e.l, p);
      const r = evaluate(e.r, p);
      if (l === null && r === null) return true;
      if (l === null) return null;
      if (r === null) return false;
      if (l === r || (l instanceof Num && r instanceof Num && l.integral === r.integral && l.v === r.v)) return true;
      return order(l, r) === 0;
    }
    case "cmp": {
      let l = evaluate(e.l, p);
      if (l === null) return null;
      let r = evaluate(e.r, p);
      if (r === null) return null;
      // Two strings (e.g. two properties) compare as numbers or not at all.
      if (typeof l === "string" && typeof r === "string") {
        l = toNum(l, new Num(0, false));
        r = toNum(r, new Num(0, false));
      }
      const o = order(l, r);
      return e.op === ">" ? o > 0 : e.op === ">=" ? o >= 0 : e.op === "<" ? o < 0 : o <= 0;
    }
    case "in": {
      const v = evaluate(e.e, p);
      if (v === null) return null;
      if (typeof v !== "string") return false;
      return e.list.has(v) !== e.not;
    }
    case "contains": {
      const v = evaluate(e.e, p);
      if (v === null) return null;
      if (typeof v !== "string") return false;
      return v.includes(e.s) !== e.not;
    }
  }
}

/** Compiles an expression; throws SelectorError with the reason when it is not valid. */
export function compileSelector(expression: string): Selector {
  if (expression.trim() === "") throw new SelectorError("empty expression");
  const root = new Parser(tokenize(expression)).parse();
  return {
    expression,
    matches(props: Props): boolean {
      try {
        return evaluate(root, props) === true;
      } catch (e) {
        if (e instanceof EvalError) return false;
        throw e;
      }
    },
  };
}

const cache = new Map<string, Selector | SelectorError>();

/** compileSelector with a small cache (each pull names its expression), or the reason it is invalid. */
export function selectorFor(expression: string): Selector | { invalid: string } {
  let s = cache.get(expression);
  if (s === undefined) {
    try {
      s = compileSelector(expression);
    } catch (e) {
      if (!(e instanceof SelectorError)) throw e;
      s = e;
    }
    if (cache.size >= 1024) cache.clear();
    cache.set(expression, s);
  }
  return s instanceof SelectorError ? { invalid: `Invalid MessageSelector: ${s.message}` } : s;
}
