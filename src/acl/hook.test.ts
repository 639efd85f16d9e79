/** The pipeline hook: refusals as a Java broker answers them, rate-limited logging, reloads that keep valid rules. */
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../common/log.ts";
import { signRequest } from "../protocol/acl-signature.ts";
import { createRequest, isResponse } from "../remoting/command.ts";
import type { RemotingConnection } from "../remoting/connection.ts";
import { RequestCode } from "../remoting/request-code.ts";
import { ResponseCode } from "../remoting/response-code.ts";
import { AclHook, createAclHook, DENIAL_LOG_KEYS_MAX } from "./hook.ts";

const ACL = (topicPerm: string) => `accounts:\n  - accessKey: producer1\n    secretKey: secret-1\n    defaultTopicPerm: ${topicPerm}\n`;

function memoryLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (m: string) => void lines.push(m);
  const keys = new Set<string>();
  const once = (k: string, m: string) => {
    if (!keys.has(k)) push(m);
    keys.add(k);
  };
  return { lines, debug: push, info: push, warn: push, error: push, rateLimited: (_l, k, m) => once(k, m) };
}

const conn = (remoteAddress: string) => ({ remoteAddress }) as unknown as RemotingConnection;
const dirs: string[] = [];
const hooks: AclHook[] = [];
afterEach(() => {
  for (const h of hooks.splice(0)) h.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(text: string, pollIntervalMs = 0) {
  const dir = mkdtempSync(join(tmpdir(), "acl-hook-"));
  dirs.push(dir);
  const file = join(dir, "plain_acl.yml");
  writeFileSync(file, text);
  const log = memoryLog();
  const hook = createAclHook({ file, log, pollIntervalMs });
  if ("errors" in hook) throw new Error(hook.errors.join("\n"));
  hooks.push(hook);
  return { file, log, hook };
}

const send = (topic: string) => {
  const cmd = createRequest(RequestCode.SEND_MESSAGE, { topic, group: "g" });
  signRequest(cmd, { accessKey: "producer1", secretKey: "secret-1" });
  return cmd;
};

test("a refusal is SYSTEM_ERROR with Java's AclException remark; an allowed request passes", () => {
  const { hook } = setup(ACL("PUB"));
  expect(hook.before(conn("10.0.0.1:4000"), send("t"))).toBeUndefined();
  const cmd = createRequest(RequestCode.SEND_MESSAGE, { topic: "t" });
  const res = hook.before(conn("10.0.0.1:4000"), cmd)!;
  expect(isResponse(res)).toBe(true);
  expect(res.opaque).toBe(cmd.opaque);
  expect(res.code).toBe(ResponseCode.SYSTEM_ERROR);
  expect(res.remark).toBe("org.apache.rocketmq.acl.common.AclException: No accessKey is configured");
});

test("refusals are logged once per client and reason, and never show the secret", () => {
  const { hook, log } = setup(ACL("PUB"));
  const forged = send("t");
  forged.extFields!.Signature = "forged";
  for (let i = 0; i < 1000; i++) hook.before(conn("10.0.0.1:4000"), forged);
  hook.before(conn("10.0.0.2:4000"), forged);
  hook.before(conn("10.0.0.1:4001"), createRequest(RequestCode.SEND_MESSAGE, { topic: "t" }));
  expect(log.lines.length).toBe(3);
  expect(log.lines.join("\n")).not.toContain("secret-1");
  // Many clients: the table stays bounded, the overflow shares one line.
  for (let i = 0; i < DENIAL_LOG_KEYS_MAX + 10; i++) hook.before(conn(`172.16.${i >> 8}.${i & 255}:1`), forged);
  expect(log.lines.length).toBeLessThanOrEqual(DENIAL_LOG_KEYS_MAX + 4);
});

test("reload swaps in a valid file, and keeps the old rules when the new file is bad", () => {
  const { hook, file, log } = setup(ACL("PUB"));
  writeFileSync(file, ACL("DENY"));
  expect(hook.reload()).toEqual({ ok: true });
  expect(hook.before(conn("10.0.0.1:1"), send("t"))?.remark).toContain("No default permission for topic:t");
  writeFileSync(file, ACL("WRITE"));
  const r = hook.reload();
  expect("errors" in r && r.errors[0]).toBe(`${file}:4:23: accounts[0].defaultTopicPerm: "WRITE" is not DENY, PUB, SUB or PUB|SUB`);
  expect(log.lines.some((l) => l.includes("previous rules stay in force"))).toBe(true);
  expect(hook.before(conn("10.0.0.1:1"), send("t"))?.remark).toContain("No default permission for topic:t");
});

test("a bad file at start is refused with its problems", () => {
  const dir = mkdtempSync(join(tmpdir(), "acl-hook-"));
  dirs.push(dir);
  const missing = createAclHook({ file: join(dir, "none.yml"), log: memoryLog() });
  expect("errors" in missing && missing.errors[0]).toContain("cannot read the ACL file: no such file");
});

test("a changed file is picked up by the watcher (replaced by rename, as editors do)", async () => {
  const { hook, file } = setup(ACL("PUB"), 50);
  writeFileSync(`${file}.new`, ACL("DENY"));
  renameSync(`${file}.new`, file);
  const deadline = Date.now() + 5000;
  while (hook.before(conn("10.0.0.1:1"), send("t")) === undefined && Date.now() < deadline) await Bun.sleep(20);
  expect(hook.before(conn("10.0.0.1:1"), send("t"))?.remark).toContain("No default permission for topic:t");
});
