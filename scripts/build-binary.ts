/**
 * Builds the single executable `dist/rocketbun` with `bun build --compile`, stamping the package
 * version and the git commit (plus "-dirty" when the tree has uncommitted changes) into it.
 *   npx bun scripts/build-binary.ts [--outfile dist/rocketbun]
 */
import { $ } from "bun";
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import pkg from "../package.json" with { type: "json" };

const root = resolve(import.meta.dir, "..");
const outIdx = process.argv.indexOf("--outfile");
const outfile = resolve(root, outIdx > 0 ? process.argv[outIdx + 1]! : "dist/rocketbun");

async function gitCommit(): Promise<string> {
  try {
    const sha = (await $`git -C ${root} rev-parse --short=12 HEAD`.quiet().text()).trim();
    const dirty = (await $`git -C ${root} status --porcelain --untracked-files=no`.quiet().text()).trim() !== "";
    return dirty ? `${sha}-dirty` : sha;
  } catch {
    return "unknown";
  }
}

const commit = await gitCommit();
mkdirSync(dirname(outfile), { recursive: true });
const result = await Bun.build({
  entrypoints: [resolve(root, "src/server.ts")],
  // server.ts imports the program dynamically after the runtime settings are in place; split
  // there, a start that re-execs (runtime-tuning.ts) parses only the small entry chunk first.
  splitting: true,
  compile: { outfile },
  minify: false,
  sourcemap: "inline",
  define: {
    ROCKETBUN_VERSION: JSON.stringify(pkg.version),
    ROCKETBUN_COMMIT: JSON.stringify(commit),
  },
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
console.log(`built ${outfile} (rocketbun ${pkg.version}, commit ${commit})`);
