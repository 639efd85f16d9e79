/**
 * The shipped systemd units (deploy/): each passes `systemd-analyze verify` (with ExecStart pointed
 * at the built binary, which verify requires to exist), carries the hardening a bare-metal
 * operator expects, and `systemd-analyze security` rates it no worse than "OK". The broker unit is
 * a template: it is verified as an instance.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BINARY, ensureBinary, ROOT, tempDir } from "../harness/binary.ts";
import { toolsPresent } from "../harness/java.ts";

const DEPLOY = join(ROOT, "deploy");
const UNITS = readdirSync(DEPLOY).filter((f) => f.endsWith(".service"));
const run = toolsPresent("systemd units", ["systemd-analyze"]);
const dir = tempDir("rocketbun-systemd-");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The unit as installed, with the binary where this checkout built it; a template becomes instance "a". */
function staged(unit: string): string {
  ensureBinary();
  const name = unit.replace("@.service", "@a.service");
  const path = join(dir, name);
  writeFileSync(path, readFileSync(join(DEPLOY, unit), "utf8").replaceAll("/usr/local/bin/rocketbun", BINARY));
  return path;
}

function analyze(args: string[]): { code: number; out: string } {
  const p = Bun.spawnSync(["systemd-analyze", ...args], { stdout: "pipe", stderr: "pipe", cwd: dir });
  return { code: p.exitCode ?? -1, out: p.stdout.toString() + p.stderr.toString() };
}

describe.skipIf(!run)("systemd units (deploy/)", () => {
  test("one unit per role is shipped: the name server, a broker template, and the single-config unit", () => {
    expect(UNITS.sort()).toEqual(["rocketbun-broker@.service", "rocketbun-namesrv.service", "rocketbun.service"]);
  });

  for (const unit of UNITS) {
    test(`${unit}: systemd-analyze verify passes`, () => {
      const r = analyze(["verify", staged(unit)]);
      expect({ code: r.code, out: r.out.trim() }).toEqual({ code: 0, out: "" });
    });

    test(`${unit}: hardened (read-only system, no privileges, private /tmp, no capabilities, writes only its store)`, () => {
      const text = readFileSync(join(DEPLOY, unit), "utf8");
      for (const line of ["ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes", "CapabilityBoundingSet=\n", "ProtectHome=yes"]) {
        expect({ unit, has: line.trim(), ok: text.includes(line) }).toEqual({ unit, has: line.trim(), ok: true });
      }
      const rw = /^ReadWritePaths=(.+)$/m.exec(text)?.[1] ?? "";
      const state = /^StateDirectory=(.+)$/m.exec(text)?.[1] ?? "";
      expect(rw).toBe(`/var/lib/${state}`);
      expect(text).toContain("ExecReload=/bin/kill -HUP $MAINPID");
      expect(text).toContain("--check-config");
    });

    test(`${unit}: systemd-analyze security rates the exposure OK or better`, () => {
      const path = staged(unit);
      const r = analyze(["security", "--offline=yes", path]);
      const level = /Overall exposure level for \S+: ([0-9.]+)/.exec(r.out);
      expect(level, r.out.slice(-2000)).not.toBeNull();
      expect(Number(level![1])).toBeLessThanOrEqual(4.0);
    });
  }

  test("the broker template's instances keep separate configs and stores", () => {
    const path = staged("rocketbun-broker@.service");
    copyFileSync(path, join(dir, "rocketbun-broker@b.service"));
    const text = readFileSync(join(DEPLOY, "rocketbun-broker@.service"), "utf8");
    expect(text).toContain("--config /etc/rocketbun/broker-%i.yaml");
    expect(text).toContain("StateDirectory=rocketbun/broker-%i");
    expect(analyze(["verify", join(dir, "rocketbun-broker@b.service")]).code).toBe(0);
  });
});
