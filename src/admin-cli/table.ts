/**
 * Text output of `rocketbun admin`: tables with mqadmin's "#Header" columns, each as wide as its
 * widest cell (mqadmin pads to fixed widths; a long topic name then breaks its layout), and
 * "key : value" lists. What a command prints with --json is its own data, not these strings.
 */

export type Cell = string | number | boolean | null | undefined;

export interface Table {
  /** Header texts without the leading "#" (added when printed, as mqadmin does). */
  readonly headers: readonly string[];
  readonly rows: readonly (readonly Cell[])[];
  /** Column indexes aligned right (numbers). */
  readonly right?: readonly number[];
}

const GAP = "  ";

function cellText(c: Cell): string {
  if (c === null || c === undefined) return "";
  return String(c);
}

/** The table as lines: a header line, then one line per row; trailing blanks trimmed. */
export function renderTable(t: Table): string {
  const right = new Set(t.right ?? []);
  const head = t.headers.map((h) => `#${h}`);
  const body = t.rows.map((r) => t.headers.map((_, i) => cellText(r[i])));
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (right.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join(GAP)
      .trimEnd();
  return [line(head), ...body.map(line)].join("\n");
}

/** "key<pad> : value" lines, keys padded to the longest (brokerStatus, getBrokerConfig). */
export function renderPairs(pairs: readonly (readonly [string, Cell])[], sep = " : "): string {
  const w = Math.max(0, ...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(w)}${sep}${cellText(v)}`.trimEnd()).join("\n");
}

/**
 * `yyyy-MM-dd HH:mm:ss,SSS` in local time (UtilAll.timeMillisToHumanString2), or without the
 * milliseconds (UtilAll.YYYY_MM_DD_HH_MM_SS); "" for 0 or less.
 */
export function humanTime(ms: number, millis = true): string {
  if (!(ms > 0)) return "";
  const d = new Date(ms);
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  const date = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
  const time = `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  return `${date} ${time}${millis ? `,${p(d.getMilliseconds(), 3)}` : ""}`;
}
