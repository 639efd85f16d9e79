/**
 * Builds the client library for Node 20: `dist/client/index.js` (ESM), from src/client. Bun
 * imports the TypeScript sources directly; Node uses this bundle (package.json "exports").
 *   npx bun scripts/build-client.ts
 */
import { resolve } from "node:path";

const root = resolve(import.meta.dir, "..");
const result = await Bun.build({
  entrypoints: [resolve(root, "src/client/index.ts")],
  outdir: resolve(root, "dist/client"),
  target: "node",
  format: "esm",
  sourcemap: "linked",
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.log(`built ${result.outputs.map((o) => o.path).join(", ")}`);
