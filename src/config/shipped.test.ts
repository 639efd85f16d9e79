/** Every YAML file in config/ loads with zero errors and documents the keys of the schema. */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, type CliFlags } from "./load.ts";
import { keyDef, KEYS, ROLES, type Role } from "./schema.ts";

const CONFIG_DIR = join(import.meta.dir, "..", "..", "config");
const ROLE_FILES: Record<string, Role> = {
  "namesrv.yaml": "namesrv",
  "master.yaml": "master",
  "slave.yaml": "slave",
  "standalone.yaml": "standalone",
};

const tmp = mkdtempSync(join(tmpdir(), "rocketbun-shipped-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function loadClean(file: string, flags: CliFlags) {
  const r = loadConfig({ file, flags });
  expect("errors" in r ? r.errors : []).toEqual([]);
  return r;
}

/** The file with every "  # key: value" line of a known key uncommented. */
function uncommentDefaults(text: string): string {
  let section = "";
  let group = ""; // a commented-out group of deeper keys ("#   failover:"), uncommented with them
  return text
    .split("\n")
    .map((line) => {
      const top = /^([A-Za-z0-9]+):/.exec(line);
      if (top) section = top[1] ?? "";
      const g = /^  # ([A-Za-z0-9]+):$/.exec(line);
      if (g && KEYS.some((d) => d.key.startsWith(`${section}.${g[1]}.`))) {
        group = g[1] ?? "";
        return `  ${group}:`;
      }
      const deep = /^  #   ([A-Za-z0-9]+): (.*)$/.exec(line);
      if (deep && group !== "" && keyDef(`${section}.${group}.${deep[1]}`) !== undefined) return `    ${deep[1]}: ${deep[2]}`;
      if (!/^  #/.test(line)) group = "";
      const m = /^  # ([A-Za-z0-9]+): (.*)$/.exec(line);
      return m && keyDef(`${section}.${m[1]}`) !== undefined ? `  ${m[1]}: ${m[2]}` : line;
    })
    .join("\n");
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
        const pattern = def.roles.includes(role) ? new RegExp(`^\\s*(#\\s+)?${name}:`, "m") : new RegExp(`\\b${name}\\b`);
        expect({ key: def.key, documented: pattern.test(text) }).toEqual({ key: def.key, documented: true });
      }
    });

    test(`${name}: every commented-out key shows its built-in default`, () => {
      const text = readFileSync(file, "utf8");
      const uncommented = uncommentDefaults(text);
      const copy = join(tmp, name);
      writeFileSync(copy, uncommented);
      const shipped = loadClean(file, {});
      const allSet = loadClean(copy, {});
      if ("config" in shipped && "config" in allSet) expect(allSet.config).toEqual(shipped.config);
    });
  }

  test("test-min.yaml loads clean for every role", () => {
    const file = join(CONFIG_DIR, "test-min.yaml");
    for (const role of ROLES) {
      const r = loadClean(file, { role, namesrv: "127.0.0.1:9876" });
      if ("config" in r) {
        const s = r.config.store;
        expect(s.commitLogSegmentBytes).toBe(65536);
        expect([s.consumeQueueUnitsPerFile, s.indexSlotNum, s.indexNum, s.syncFlushTimeoutMs]).toEqual([64, 64, 256, 2000]);
        expect(r.config.broker.listen.port).toBe(0);
        expect(r.config.namesrv.listen.port).toBe(0);
      }
    }
  });
});

describe("shipped configs list the reloadable keys", () => {
  for (const [name, role] of Object.entries(ROLE_FILES)) {
    test(`${name} lists exactly the live keys role ${role} reads`, () => {
      const text = readFileSync(join(CONFIG_DIR, name), "utf8");
      const start = text.indexOf("#   Reloadable: ");
      expect(start).toBeGreaterThan(0);
      const block = text.slice(start).split("\n\n")[0] ?? "";
      const listed = block
        .replace(/#\s+(Reloadable:)?/g, " ")
        .split(/[\s,]+/)
        .filter((k) => k !== "");
      const expected = KEYS.filter((d) => d.live === true && d.roles.includes(role)).map((d) => d.key);
      expect(listed).toEqual(expected);
    });
  }
});
