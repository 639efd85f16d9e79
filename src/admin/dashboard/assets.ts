/**
 * The dashboard's static files, embedded in the binary: its own script and style sheet
 * (./static/) and uPlot's (the chart library, MIT, from the `uplot` package). Imported as text,
 * so `bun build --compile` carries them; nothing is fetched from elsewhere at run time.
 * URLs carry a hash of the content, so a new binary's files are never mixed with an old cache.
 */
import uplotJs from "uplot/dist/uPlot.iife.min.js" with { type: "text" };
import uplotCss from "uplot/dist/uPlot.min.css" with { type: "text" };
import dashboardJs from "./static/dashboard.js" with { type: "text" };
import dashboardCss from "./static/dashboard.css" with { type: "text" };

export interface Asset {
  contentType: string;
  body: string;
  version: string;
}

const JS = "text/javascript; charset=utf-8";
const CSS = "text/css; charset=utf-8";

const asset = (contentType: string, body: string): Asset => ({ contentType, body, version: Bun.hash(body).toString(36) });

export const ASSETS: Readonly<Record<string, Asset>> = {
  "uplot.js": asset(JS, uplotJs),
  "uplot.css": asset(CSS, uplotCss),
  "dashboard.js": asset(JS, dashboardJs),
  "dashboard.css": asset(CSS, dashboardCss),
};

/** The URL of an embedded file, with its content hash. */
export function assetUrl(name: keyof typeof ASSETS & string): string {
  const a = ASSETS[name];
  return `/ui/assets/${name}?v=${a?.version ?? ""}`;
}
