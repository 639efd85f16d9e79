import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, type CliFlags, type LoadedConfig } from "./load.ts";
import { preflight } from "./preflight.ts";

const dir = mkdtempSync(join(tmpdir(), "rocketbun-preflight-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function load(flags: CliFlags, file?: string): LoadedConfig {
  const r = loadConfig(file === undefined ? { flags } : { file, flags });
  if ("errors" in r) throw new Error(r.errors.join("\n"));
  return r;
}

/** Holds a port on 127.0.0.1 for the duration of `fn`. */
async function withBusyPort(fn: (port: number) => Promise<void>): Promise<void> {
  const busy = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  try {
    await fn(busy.port);
  } finally {
    busy.stop(true);
  }
}

describe("preflight", () => {
  test("passes with ephemeral ports and a fresh store dir, which it creates", async () => {
    const store = join(dir, "fresh", "nested");
    const file = join(dir, "ephemeral.yaml");
    writeFileSync(file, "namesrv:\n  listen: 127.0.0.1:0\nbroker:\n  listen: 127.0.0.1:0\n");
    const loaded = load({ role: "standalone", store }, file);
    expect(await preflight(loaded.config, loaded)).toEqual([]);
    expect(existsSync(store)).toBe(true);
    expect(readdirSync(store)).toEqual([]); // the probe file is gone
  });

  test("reports a port in use with the file position of its key", async () => {
    await withBusyPort(async (port) => {
      const file = join(dir, "ns.yaml");
      writeFileSync(file, `role: namesrv\nnamesrv:\n  listen: 127.0.0.1:${port}\n  admin: 127.0.0.1:0\n`);
      const loaded = load({ store: join(dir, "s1") }, file);
      expect(await preflight(loaded.config, loaded)).toEqual([`${file}:3:3: namesrv.listen: 127.0.0.1:${port} is already in use`]);
    });
  });

  test("reports a port in use that came from a flag", async () => {
    await withBusyPort(async (port) => {
      const loaded = load({ role: "namesrv", listen: `127.0.0.1:${port}`, admin: "127.0.0.1:0", store: join(dir, "s2") });
      expect(await preflight(loaded.config, loaded)).toEqual([`--listen: namesrv.listen: 127.0.0.1:${port} is already in use`]);
    });
  });

  test("names a derived broker port (HA = listen + 1) by its purpose", async () => {
    await withBusyPort(async (port) => {
      const loaded = load({
        role: "master",
        namesrv: "127.0.0.1:9876",
        listen: `127.0.0.1:${port - 1}`,
        admin: "127.0.0.1:0",
        store: join(dir, "s3"),
      });
      const problems = await preflight(loaded.config, loaded);
      expect(problems).toContain(`--listen: broker.listen: HA port 127.0.0.1:${port} (listen port + 1) is already in use`);
    });
  });

  test("reports a store dir that cannot be created, e.g. under a regular file", async () => {
    const file = join(dir, "plain-file");
    writeFileSync(file, "x");
    const loaded = load({ role: "namesrv", listen: "127.0.0.1:0", store: join(file, "data") });
    const problems = await preflight(loaded.config, loaded);
    expect(problems).toEqual([`--store: store.dir: cannot create ${join(file, "data")}: a parent path is a regular file, not a directory (ENOTDIR)`]);
  });

  test("without sources, every value is described as (default)", async () => {
    const file = join(dir, "another-file");
    writeFileSync(file, "x");
    const loaded = load({ role: "namesrv", listen: "127.0.0.1:0", store: file });
    const problems = await preflight(loaded.config);
    expect(problems).toEqual([`(default): store.dir: cannot create ${file}: a file with that name exists and is not a directory (EEXIST)`]);
  });
});

describe("preflight: ACL files", () => {
  test("an enabled ACL needs a readable file, named with where the key was set; a disabled one is not looked at", async () => {
    const store = join(dir, "acl-store");
    const file = join(dir, "acl.yaml");
    writeFileSync(
      file,
      `role: standalone\nbroker:\n  listen: 127.0.0.1:0\n  aclEnable: true\n  aclFile: ${join(dir, "missing.yml")}\nnamesrv:\n  listen: 127.0.0.1:0\n`,
    );
    const problems = await preflight(load({ store }, file).config, load({ store }, file));
    expect(problems).toEqual([
      `${file}:5:3: broker.aclFile: cannot read ${join(dir, "missing.yml")}: no such file (ENOENT) (the ACL is enabled; see config/plain_acl.yml for the format)`,
    ]);
    const loaded = load({ store }, file);
    loaded.config.broker.aclEnable = false;
    expect(await preflight(loaded.config, loaded)).toEqual([]);
  });

  test("aclFile defaults to <store.dir>/conf/plain_acl.yml, made absolute", () => {
    const c = load({ role: "standalone", store: "some/where" }).config;
    expect(c.broker.aclFile).toBe(join(process.cwd(), "some/where", "conf", "plain_acl.yml"));
    expect(c.namesrv.aclFile).toBe(c.broker.aclFile);
  });
});
