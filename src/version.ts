/**
 * Version and git commit, stamped into the compiled binary by scripts/build-binary.ts through
 * `--define`; running from sources reports the package version with "-dev" and commit "unknown".
 */
import pkg from "../package.json" with { type: "json" };

declare const ROCKETBUN_VERSION: string | undefined;
declare const ROCKETBUN_COMMIT: string | undefined;

export const VERSION: string = typeof ROCKETBUN_VERSION === "string" ? ROCKETBUN_VERSION : `${pkg.version}-dev`;
export const GIT_COMMIT: string = typeof ROCKETBUN_COMMIT === "string" ? ROCKETBUN_COMMIT : "unknown";
