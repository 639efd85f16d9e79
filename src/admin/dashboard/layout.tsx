/**
 * The frame of every dashboard page: head (the embedded style sheets), the navigation, the page's
 * content, and the one script. Pages are rendered on the server with Hono's JSX (which escapes
 * every interpolated value); the script only adds behaviour (actions, lookups, charts) to what the
 * server rendered. Data a script needs travels in data-* attributes, never in inline script, so
 * the Content-Security-Policy can forbid inline script and style altogether.
 */
import type { Child, FC } from "hono/jsx";
import { assetUrl } from "./assets.ts";

/** Header sent with every dashboard page: same-origin scripts and styles only, nothing inline, no framing. */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

export interface PageFrame {
  title: string;
  /** Which navigation entry is current (its path). */
  nav: string;
  /** What the script does on this page (dashboard.js dispatches on it). */
  script?: string;
  /** Role and version, shown in the header. */
  process: { role: string; version: string; hasBroker: boolean };
  /** Show the "log out" link (a token is configured). */
  loggedIn: boolean;
  /** Extra assets for this page (the chart library). */
  charts?: boolean;
}

const NAV: readonly (readonly [string, string, boolean])[] = [
  ["/ui/", "Cluster", false],
  ["/ui/topics", "Topics", true],
  ["/ui/groups", "Consumer groups", true],
  ["/ui/clients", "Producers & connections", true],
  ["/ui/messages", "Messages", true],
  ["/ui/dlq", "Dead letters", true],
  ["/ui/transactions", "Transactions", true],
  ["/ui/charts", "Charts", true],
  ["/ui/config", "Config", false],
];

export const Layout: FC<{ frame: PageFrame; children?: Child }> = ({ frame, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{`${frame.title} · RocketBun`}</title>
      <link rel="icon" href="data:," />
      {frame.charts ? <link rel="stylesheet" href={assetUrl("uplot.css")} /> : null}
      <link rel="stylesheet" href={assetUrl("dashboard.css")} />
    </head>
    <body data-page={frame.script ?? ""}>
      <header>
        <span class="brand">RocketBun</span>
        <span class="proc">
          {frame.process.role} · {frame.process.version}
        </span>
        {frame.loggedIn ? (
          <a class="logout" href="/ui/login?logout=1" id="logout">
            Log out
          </a>
        ) : null}
      </header>
      <nav>
        {NAV.filter(([, , needsBroker]) => frame.process.hasBroker || !needsBroker).map(([href, label]) => (
          <a href={href} class={href === frame.nav ? "current" : ""}>
            {label}
          </a>
        ))}
      </nav>
      <main>
        <h1>{frame.title}</h1>
        <p class="error" id="error" hidden></p>
        {children}
      </main>
      {frame.charts ? <script src={assetUrl("uplot.js")}></script> : null}
      <script src={assetUrl("dashboard.js")}></script>
    </body>
  </html>
);

/** A table from rows of cells; `empty` is shown when there are none. */
export const Table: FC<{ head: readonly string[]; rows: readonly (readonly Child[])[]; empty: string; id?: string }> = (p) =>
  p.rows.length === 0 ? (
    <p class="empty">{p.empty}</p>
  ) : (
    <table id={p.id}>
      <thead>
        <tr>
          {p.head.map((h) => (
            <th>{h}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {p.rows.map((r) => (
          <tr>
            {r.map((cell) => (
              <td>{cell}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );

/** Milliseconds since the epoch as "YYYY-MM-DD HH:MM:SS UTC"; 0 or less as "—". */
export function when(ms: number): string {
  return ms > 0 ? `${new Date(ms).toISOString().slice(0, 19).replace("T", " ")} UTC` : "—";
}

export function num(n: number, digits = 0): string {
  return n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${num(v, i === 0 ? 0 : 1)} ${units[i]}`;
}
