/** Every YAML file in config/ loads with zero errors and documents the keys of the schema. */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig, type CliFlags } from "./load.ts";
import { KEYS, ROLES, type Role } from "./schema.ts";

const CONFIG_DIR = join(import.meta.dir, "..", "..", "config");
const ROLE_FILES: Record<string, Role> = {
  "namesrv.yaml": "namesrv",
  "master.yaml": "master",
  "slave.yaml": "slave",
  "standalone.yaml": "standalone",
};

function loadClean(file: string, flags: CliFlags) {
  const r = loadConfig({ file, flags });
  expect("errors" in r ? r.errors : []).toEqual([]);
  return r;
}

describe("shipped configs", () => {
  for (const [name, role] of Object.entries(ROLE_FILES)) {
    const file = join(CONFIG_DIR, name);

    test(`${name} loads clean as role ${role}`, () => {
      const r = loadClean(file, {});
      if ("config" in r) {
        expect(r.config.role).toBe(role);
        expect(r.warnings).toEqual([]);
      }
    });

    test(`${name} documents every key`, () => {
      const text = readFileSync(file, "utf8");
      for (const def of KEYS) {
        const name = def.key.split(".").pop() ?? "";
        // Keys the role reads appear as "key:" lines (commented out = default); the rest by name.
        const pattern = def.roles.includes(role) ? new RegExp(`^\\s*(# )?${name}:`, "m") : new RegExp(`\\b${name}\\b`);
        expect({ key: def.key, documented: pattern.test(text) }).toEqual({ key: def.key, documented: true });
      }
    });
  }

  test("test-min.yaml loads clean for every role", () => {
    const file = join(CONFIG_DIR, "test-min.yaml");
    for (const role of ROLES) {
      const r = loadClean(file, { role, namesrv: "127.0.0.1:9876" });
      if ("config" in r) {
        expect(r.config.store.commitLogSegmentBytes).toBe(65536);
        expect(r.config.broker.listen.port).toBe(0);
        expect(r.config.namesrv.listen.port).toBe(0);
      }
    }
  });
});
