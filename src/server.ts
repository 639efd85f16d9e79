/**
 * Entry point of the `rocketbun` binary and of `bun src/server.ts`. It applies the runtime
 * settings first (runtime-tuning.ts: may replace this process with a tuned one, same PID) and only
 * then loads the program (main.ts). The dynamic import keeps that order and, with the bundle split
 * at it (scripts/build-binary.ts), keeps the untuned first start from parsing the whole program:
 * the re-exec costs ~20 ms instead of ~70.
 */
import { applyRuntimeTuning } from "./runtime-tuning.ts";

applyRuntimeTuning();
await import("./main.ts");
