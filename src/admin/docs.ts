/**
 * GET /docs: the OpenAPI document as one server-rendered HTML page — every operation with its
 * parameters, request body, and responses, schemas drawn as TypeScript-like sketches. No script,
 * no external asset: it works offline and adds a few KiB to the binary, where an embedded
 * renderer (Swagger UI, Redoc, Scalar) would add megabytes of bundled assets for an API of a few
 * dozen operations. The document itself stays at /openapi.json for tools.
 */

/** The part of an OpenAPI 3.0 document this page reads (the generator's output is wider). */
interface Doc {
  info: { title: string; version: string; description?: string };
  paths?: Record<string, Record<string, Operation | undefined> | undefined>;
  components?: { schemas?: Record<string, Schema> };
}

interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { name: string; in: string; required?: boolean; description?: string; schema?: Schema }[];
  requestBody?: { description?: string; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>;
}

type Schema = {
  $ref?: string;
  type?: string;
  format?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: boolean | Schema;
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  nullable?: boolean;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  default?: unknown;
  description?: string;
};

const METHODS = ["get", "post", "put", "patch", "delete"] as const;
/** Numbers this wide are "any safe integer": not worth printing as a range. */
const WIDE = 2 ** 52;

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch] ?? ch);
}

function refName(ref: string): string {
  return ref.slice(ref.lastIndexOf("/") + 1);
}

/** min..max, length, default, format: what a reader needs to fill a value in. */
function constraints(s: Schema): string {
  const out: string[] = [];
  const lo = s.minimum !== undefined && Math.abs(s.minimum) < WIDE ? String(s.minimum) : "";
  const hi = s.maximum !== undefined && Math.abs(s.maximum) < WIDE ? String(s.maximum) : "";
  if (lo || hi) out.push(`${lo}..${hi}`);
  if (s.minLength !== undefined || s.maxLength !== undefined) out.push(`length ${s.minLength ?? 0}..${s.maxLength ?? ""}`);
  if (s.format) out.push(s.format);
  if (s.default !== undefined) out.push(`default ${JSON.stringify(s.default)}`);
  return out.length > 0 ? ` (${out.join(", ")})` : "";
}

/** A schema as a TypeScript-like sketch; named schemas are expanded once per sketch (none is recursive). */
function sketch(s: Schema | undefined, doc: Doc, indent: string, seen: Set<string>): string {
  if (!s) return "unknown";
  if (s.$ref) {
    const name = refName(s.$ref);
    const target = doc.components?.schemas?.[name];
    if (!target || seen.has(name)) return name;
    return sketch(target, doc, indent, new Set([...seen, name]));
  }
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return alts.map((a) => sketch(a, doc, indent, seen)).join(" | ");
  if (s.allOf) return s.allOf.map((a) => sketch(a, doc, indent, seen)).join(" & ");
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
  const nullable = s.nullable ? " | null" : "";
  if (s.type === "array") return `${sketch(s.items, doc, indent, seen)}[]${nullable}`;
  if (s.type === "object" || s.properties || s.additionalProperties !== undefined) {
    const inner = `${indent}  `;
    const lines: string[] = [];
    for (const [k, p] of Object.entries(s.properties ?? {})) {
      const opt = s.required?.includes(k) ? "" : "?";
      const note = p.description ? `  // ${p.description}` : "";
      lines.push(`${inner}${k}${opt}: ${sketch(p, doc, inner, seen)}${note}`);
    }
    if (typeof s.additionalProperties === "object") lines.push(`${inner}[key: string]: ${sketch(s.additionalProperties, doc, inner, seen)}`);
    return lines.length === 0 ? `{}${nullable}` : `{\n${lines.join("\n")}\n${indent}}${nullable}`;
  }
  if (s.type === undefined) return "any JSON";
  return `${s.type}${constraints(s)}${nullable}`;
}

function schemaBlock(content: Record<string, { schema?: Schema }> | undefined, doc: Doc): string {
  if (!content) return "";
  return Object.entries(content)
    .map(([type, c]) => `<pre><span class="ct">${esc(type)}</span>\n${esc(sketch(c.schema, doc, "", new Set()))}</pre>`)
    .join("");
}

function operationHtml(method: string, path: string, op: Operation, doc: Doc): string {
  const id = `${method}-${path}`.replace(/[^A-Za-z0-9]+/g, "-");
  const params = (op.parameters ?? [])
    .map((p) => {
      const req = p.required ? "required" : "optional";
      const what = sketch(p.schema, doc, "", new Set());
      const cells = [`<code>${esc(p.name)}</code>`, esc(p.in), req, `<code>${esc(what)}</code>`, esc(p.description ?? p.schema?.description ?? "")];
      return `<tr>${cells.map((x) => `<td>${x}</td>`).join("")}</tr>`;
    })
    .join("");
  const body = op.requestBody
    ? `<h4>Request body</h4>${op.requestBody.description ? `<p>${esc(op.requestBody.description)}</p>` : ""}${schemaBlock(op.requestBody.content, doc)}`
    : "";
  const responses = Object.entries(op.responses ?? {})
    .map(
      ([status, r]) =>
        `<details${status.startsWith("2") ? " open" : ""}><summary><b>${esc(status)}</b> ${esc(r.description ?? "")}</summary>` +
        `${schemaBlock(r.content, doc)}</details>`,
    )
    .join("");
  const open = Array.isArray(op.security) && op.security.length === 0 ? ' <span class="open">no token</span>' : "";
  return `<section class="op" id="${esc(id)}">
<h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${esc(path)}</code>${open}</h3>
${op.summary ? `<p>${esc(op.summary)}</p>` : ""}${op.description ? `<p class="d">${esc(op.description)}</p>` : ""}
${params ? `<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th></th><th>type</th><th>description</th></tr>${params}</table>` : ""}
${body}<h4>Responses</h4>${responses}</section>`;
}

const STYLE = `body{font:15px/1.45 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
code,pre{font:13px/1.4 ui-monospace,Menlo,Consolas,monospace}pre{background:#f5f5f7;padding:.6rem .8rem;overflow:auto;border-radius:4px}
.op{border-top:1px solid #ddd;padding:.4rem 0 .8rem}
.m{display:inline-block;min-width:4.2rem;text-align:center;color:#fff;border-radius:3px;font-size:13px;padding:1px 4px}
.get{background:#2f7d32}.post{background:#1565c0}.put{background:#8e5b00}.patch{background:#6a1b9a}.delete{background:#b71c1c}
.open{font-size:12px;color:#2f7d32;border:1px solid #2f7d32;border-radius:3px;padding:0 4px}.ct{color:#777}.d{color:#444}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}summary{cursor:pointer}h4{margin:.6rem 0 .2rem}`;

/** The whole page, from the document the app generated (read through the narrower Doc shape). */
export function docsPage(document: object): string {
  const doc = document as Doc;
  const byTag = new Map<string, string[]>();
  const index: string[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item?.[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? "other";
      const list = byTag.get(tag) ?? [];
      list.push(operationHtml(method, path, op, doc));
      byTag.set(tag, list);
      const id = `${method}-${path}`.replace(/[^A-Za-z0-9]+/g, "-");
      index.push(`<li><a href="#${esc(id)}"><code>${method.toUpperCase()} ${esc(path)}</code></a> ${esc(op.summary ?? "")}</li>`);
    }
  }
  const sections = [...byTag].map(([tag, ops]) => `<h2>${esc(tag)}</h2>${ops.join("\n")}`).join("\n");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(doc.info.title)}</title><style>${STYLE}</style></head><body>
<h1>${esc(doc.info.title)} <small>${esc(doc.info.version)}</small></h1>
<p>${esc(doc.info.description ?? "")} Machine-readable: <a href="openapi.json"><code>/openapi.json</code></a> (OpenAPI 3.0).
Authentication: <code>Authorization: Bearer &lt;admin.token&gt;</code> on every endpoint but <code>/health</code> when a token is set;
writes are refused (403) while none is set.</p>
<details><summary>All operations</summary><ul>${index.join("")}</ul></details>
${sections}</body></html>`;
}
