/** How the bench reports print figures: one definition shared by bench/lib/report.ts and its sections. */

/** A JSON figure as a number, NaN when missing or not a number. */
export const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : NaN);
export const int = (v: number) => (Number.isFinite(v) ? Math.round(v).toLocaleString("en-US") : "–");
export const ms = (v: number) => (!Number.isFinite(v) ? "–" : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toFixed(3));
export const mib = (v: number) => (Number.isFinite(v) ? `${(v / 1048576).toFixed(0)} MiB` : "–");
export const one = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : "–");
export const ratio = (v: number) => (Number.isFinite(v) ? `${v >= 10 ? v.toFixed(0) : v.toFixed(2)}×` : "–");
export const pct = (v: number) => (Number.isFinite(v) ? `${(v * 100).toFixed(v < 0.1 ? 1 : 0)}%` : "–");
