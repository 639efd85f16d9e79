import { describe, expect, test } from "bun:test";
import { missingRuntimeEnv, RUNTIME_ENV, wantedEnv } from "./runtime-tuning.ts";

describe("runtime settings", () => {
  test("a server gets both settings; the bench subcommand (a client) keeps FTL on", () => {
    expect(wantedEnv(["--role", "master"])).toEqual(RUNTIME_ENV);
    expect(wantedEnv([])).toEqual(RUNTIME_ENV);
    expect(wantedEnv(["bench", "producer", "-n", "127.0.0.1:9876"])).toEqual({ MIMALLOC_PURGE_DELAY: "-1" });
  });

  test("only what the environment lacks is added; a value already set wins", () => {
    expect(missingRuntimeEnv({})).toEqual({ MIMALLOC_PURGE_DELAY: "-1", BUN_JSC_useFTLJIT: "0" });
    expect(missingRuntimeEnv({ BUN_JSC_useFTLJIT: "1" })).toEqual({ MIMALLOC_PURGE_DELAY: "-1" });
    expect(missingRuntimeEnv({ MIMALLOC_PURGE_DELAY: "10", BUN_JSC_useFTLJIT: "1" })).toEqual({});
    expect(missingRuntimeEnv({}, wantedEnv(["bench", "consumer"]))).toEqual({ MIMALLOC_PURGE_DELAY: "-1" });
  });
});
