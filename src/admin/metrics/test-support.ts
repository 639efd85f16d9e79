/**
 * A reader of the Prometheus text format for tests (unit and integration): samples with their
 * labels unescaped, and the HELP/TYPE of each family. Strict where the writer must be: a sample
 * line it cannot read throws, naming the line.
 */
export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface ParsedExposition {
  samples: ParsedSample[];
  types: Map<string, string>;
  helps: Map<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;

function unescape(v: string): string {
  return v.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
}

function value(s: string): number {
  if (s === "+Inf") return Infinity;
  if (s === "-Inf") return -Infinity;
  return Number(s);
}

export function parseExposition(text: string): ParsedExposition {
  const out: ParsedExposition = { samples: [], types: new Map(), helps: new Map() };
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      (meta[1] === "HELP" ? out.helps : out.types).set(meta[2]!, meta[3]!);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? "";
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const l = LABEL.exec(body);
      if (!l) throw new Error(`bad labels in: ${line}`);
      labels[l[1]!] = unescape(l[2]!);
    }
    out.samples.push({ name: m[1]!, labels, value: value(m[3]!) });
  }
  return out;
}

/** The samples of `name` whose labels include `match`. */
export function samplesOf(p: ParsedExposition, name: string, match: Record<string, string> = {}): ParsedSample[] {
  return p.samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}
