/**
 * A writer of the Prometheus text exposition format, version 0.0.4 (what every Prometheus server
 * scrapes; Content-Type below). Written here rather than taken from prom-client: every value is
 * read from the broker's state at scrape time, so there are no instruments to keep up to date on
 * the send path, and what a registry would add (a copy of each series in its label-hash maps on
 * every scrape, async collection) is cost without use. The format is small:
 *
 *   # HELP <name> <help: \ and newline escaped as \\ and \n>
 *   # TYPE <name> counter | gauge | histogram
 *   <name>{<label>="<value>",...} <number>                      counter, gauge
 *   <name>_bucket{...,le="<upper bound>"} <cumulative count>     histogram, bounds ascending,
 *   <name>_bucket{...,le="+Inf"} <count>                          the last one +Inf = _count
 *   <name>_sum{...} <sum>
 *   <name>_count{...} <count>
 *
 * Rules the writer keeps (the format's, and Prometheus' parser refuses or misreads text without them):
 *   - a family's HELP and TYPE come once, before its samples, and its samples are contiguous:
 *     a family begun twice is a bug of the caller (asserted);
 *   - label values escape backslash, double quote and newline (\\, \", \n); nothing else;
 *   - numbers: integers and decimals as JavaScript prints them (shortest round trip, exponents
 *     included, which Go's ParseFloat reads), NaN, +Inf, -Inf;
 *   - metric and label names come from the closed set in ./families.ts, checked by its test.
 */
import { assert } from "../../common/assert.ts";

export const EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export type MetricType = "counter" | "gauge" | "histogram";

export interface MetricFamily {
  name: string;
  type: MetricType;
  help: string;
}

/** Label name → value; written in the object's order. */
export type Labels = Readonly<Record<string, string>>;

/** One cumulative bucket: observations ≤ `le`. */
export interface Bucket {
  le: number;
  count: number;
}

const LABEL_VALUE_SPECIAL = /[\\"\n]/;
const LABEL_VALUE_SPECIAL_ALL = /[\\"\n]/g;

export function escapeLabelValue(v: string): string {
  if (!LABEL_VALUE_SPECIAL.test(v)) return v;
  return v.replace(LABEL_VALUE_SPECIAL_ALL, (c) => (c === "\n" ? "\\n" : `\\${c}`));
}

export function escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, (c) => (c === "\n" ? "\\n" : "\\\\"));
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

/** `{a="1",b="2"}`, or "" for no labels; `extra` (e.g. le) goes last. */
export function labelText(labels: Labels, extra?: string, escape: (v: string) => string = escapeLabelValue): string {
  let s = "";
  for (const k in labels) s += `${s === "" ? "" : ","}${k}="${escape(labels[k]!)}"`;
  if (extra !== undefined) s += `${s === "" ? "" : ","}${extra}`;
  return s === "" ? "" : `{${s}}`;
}

export class Exposition {
  readonly #lines: string[] = [];
  readonly #begun = new Set<string>();
  #current: MetricFamily | null = null;
  /**
   * Label values repeat across a scrape's families (every topic and group name appears in a dozen
   * of them): each is escaped once. 75,000 regex tests were ~5 ms of a 10,000-queue scrape.
   */
  readonly #escaped = new Map<string, string>();
  readonly #escape = (v: string): string => {
    let e = this.#escaped.get(v);
    if (e === undefined) this.#escaped.set(v, (e = escapeLabelValue(v)));
    return e;
  };

  /** A counter or gauge sample of `f`. */
  sample(f: MetricFamily, labels: Labels, value: number): void {
    this.#begin(f);
    this.#lines.push(`${f.name}${labelText(labels, undefined, this.#escape)} ${formatValue(value)}`);
  }

  /** A histogram sample of `f`: `buckets` cumulative with ascending finite bounds; +Inf is `count`. */
  histogram(f: MetricFamily, labels: Labels, buckets: readonly Bucket[], sum: number, count: number): void {
    assert(f.type === "histogram", "{} is not a histogram", f.name);
    this.#begin(f);
    for (const b of buckets) this.#lines.push(`${f.name}_bucket${labelText(labels, `le="${formatValue(b.le)}"`, this.#escape)} ${formatValue(b.count)}`);
    this.#lines.push(`${f.name}_bucket${labelText(labels, 'le="+Inf"', this.#escape)} ${formatValue(count)}`);
    const l = labelText(labels, undefined, this.#escape);
    this.#lines.push(`${f.name}_sum${l} ${formatValue(sum)}`, `${f.name}_count${l} ${formatValue(count)}`);
  }

  text(): string {
    return this.#lines.length === 0 ? "" : `${this.#lines.join("\n")}\n`;
  }

  #begin(f: MetricFamily): void {
    if (this.#current === f) return;
    assert(!this.#begun.has(f.name), "metric family {} written in two places", f.name);
    this.#begun.add(f.name);
    this.#current = f;
    this.#lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
  }
}
