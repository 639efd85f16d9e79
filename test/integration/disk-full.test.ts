/**
 * A full disk (issue #18 item 3), with the compiled binary: a standalone broker whose whole store
 * (CommitLog, ConsumeQueues, IndexFiles, metadata JSON, the name server's KV file) lies on a
 * 48 MiB tmpfs this test mounts (root only: elsewhere it skips with one line, under CI=true it
 * fails). Checked:
 *   - sends are refused with SERVICE_NOT_AVAILABLE and a remark naming the disk before the disk
 *     is full, and nothing torn is left: every acknowledged message reads back whole (CRC);
 *   - with the disk written full by another process, reads go on, a topic creation and a name
 *     server KV write are refused with an error and leave their files as they were, sends stay
 *     refused, and the broker killed -9 and restarted on the full disk comes up with every
 *     acknowledged message intact;
 *   - once space is freed and retention (made to run by a live config change) deletes old
 *     segments, sends resume by themselves.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { createRequest, RequestCode, ResponseCode } from "../../src/remoting/index.ts";
import { tempDir, waitFor } from "../harness/binary.ts";
import { Env, uniq } from "../client/support.ts";
import { createTopicExt, newClient } from "../harness/wire.ts";

const MOUNT_MIB = 48;

/** Whether this process may mount a tmpfs (root, mount present); one printed line when not. */
function canMount(): boolean {
  const probe = tempDir("disk-full-probe-");
  try {
    const r = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", probe], { stdout: "pipe", stderr: "pipe" });
    if (r.exitCode === 0) {
      Bun.spawnSync(["umount", probe]);
      return true;
    }
    const why = `cannot mount a tmpfs (${r.stderr.toString().trim() || `exit ${r.exitCode}`}; needs root)`;
    if (process.env.CI === "true") throw new Error(`disk-full.test.ts: ${why}`);
    process.stderr.write(`skip disk-full.test.ts: ${why}\n`);
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

const present = canMount();
let dir = "";
let store = "";

beforeAll(() => {
  if (!present) return;
  dir = tempDir("disk-full-");
  store = join(dir, "store");
  mkdirSync(store);
  const r = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${MOUNT_MIB}m`, "tmpfs", store], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`mount: ${r.stderr.toString()}`);
});

afterAll(() => {
  if (!present) return;
  Bun.spawnSync(["umount", "-l", store]);
  rmSync(dir, { recursive: true, force: true });
});

const TOKEN = "disk-full-admin-token";
const CONFIG = {
  admin: { token: TOKEN },
  broker: { maxMessageSizeBytes: 16384 },
  store: {
    commitLogSegmentBytes: 1048576,
    // Retention is off until the last step turns it on; past half the disk it then deletes the
    // oldest segments (disk pressure), whatever their age.
    deleteCommitLogFilesIntervalMs: 3_600_000,
    diskMaxUsedSpaceRatio: 0.5,
    diskCriticalRatio: 0.95,
    // Released when the broker restarts on the full disk, so its recovery can write.
    diskReserveBytes: 4194304,
  },
};

/** Writes `path` until the filesystem refuses (ENOSPC): the disk written full by someone else. */
function fillDisk(path: string): number {
  const fd = openSync(path, "w");
  const chunk = new Uint8Array(256 * 1024).fill(1);
  let written = 0;
  try {
    for (;;) {
      try {
        written += writeSync(fd, chunk);
      } catch (e) {
        if (String(e).includes("ENOSPC")) break;
        throw e;
      }
    }
    // The last partial pages.
    for (let n = 4096; n >= 1; n >>= 1) {
      try {
        for (;;) written += writeSync(fd, chunk.subarray(0, n));
      } catch {
        // Next smaller size.
      }
    }
  } finally {
    closeSync(fd);
  }
  return written;
}

interface Acked {
  key: string;
  body: string;
  queueId: number;
  queueOffset: number;
}

async function readBack(env: Env, topic: string, acked: Acked[]): Promise<void> {
  const byQueue = new Map<number, Map<number, string>>();
  for (let q = 0; q < 4; q++) {
    const m = new Map<number, string>();
    for (const r of await env.rawRecords(topic, q)) m.set(r.queueOffset, new TextDecoder().decode(r.body));
    byQueue.set(q, m);
  }
  const missing = acked.filter((a) => byQueue.get(a.queueId)?.get(a.queueOffset) !== a.body);
  expect({ acked: acked.length, missing: missing.slice(0, 5).map((a) => a.key) }).toEqual({ acked: acked.length, missing: [] });
}

describe.skipIf(!present)("a full disk (compiled binary, store on a 48 MiB tmpfs)", () => {
  test("refused before full, reads and restarts on a full disk keep every acknowledged message, writes resume after retention", async () => {
    let env = await Env.start({ dir, config: CONFIG });
    try {
      const topic = uniq("DiskFull");
      await env.createTopic(topic, 4);
      // The reserve a fresh broker writes a moment after it starts.
      await waitFor(() => existsSync(join(store, "disk-reserve")), 10_000, "the disk reserve file");
      // No compression: the bodies must take the disk space they say.
      const producer = await env.producer({ retryTimesWhenSendFailed: 0, compressThresholdBytes: 1 << 20 });
      const acked: Acked[] = [];
      let refusal = "";
      for (let i = 0; i < 10_000 && refusal === ""; i++) {
        const key = `k-${i}`;
        const body = `${key}:${Buffer.from(crypto.getRandomValues(new Uint8Array(11_000))).toString("base64")}`;
        try {
          const r = await producer.send({ topic, body, keys: key });
          acked.push({ key, body, queueId: r.queue.queueId, queueOffset: r.queueOffset });
        } catch (e) {
          refusal = String(e);
        }
      }
      // Refused before the disk is full, with the broker's reason.
      expect(refusal).toMatch(/disk is full: .* MiB free/);
      expect(refusal).toContain(String(ResponseCode.SERVICE_NOT_AVAILABLE));
      expect(acked.length).toBeGreaterThan(1000);
      await readBack(env, topic, acked);

      // Someone else writes the disk full.
      const filler = join(store, "filler.bin");
      fillDisk(filler);
      const topicsJson = readFileSync(join(store, "config", "topics.json"), "utf8");
      const wire = newClient();
      try {
        // A topic creation (as mqadmin updateTopic sends it) fails with a reason and leaves
        // topics.json as it was.
        const noRoom = uniq("NoRoom");
        const created = await wire.invoke(env.brokerAddr, createRequest(RequestCode.UPDATE_AND_CREATE_TOPIC, createTopicExt(noRoom, 4)), 5000);
        expect(created.code).not.toBe(ResponseCode.SUCCESS);
        expect(created.remark ?? "").toMatch(/ENOSPC|no space|disk/i);
        expect(readFileSync(join(store, "config", "topics.json"), "utf8")).toBe(topicsJson);
        // The name server's KV file: the write is refused, the file stays valid.
        const put = await wire.invoke(env.namesrv, createRequest(RequestCode.PUT_KV_CONFIG, { namespace: "ORDER_TOPIC_CONFIG", key: uniq("t"), value: "b:4" }), 5000);
        expect(put.code).not.toBe(ResponseCode.SUCCESS);
        expect(put.remark ?? "").toMatch(/ENOSPC|no space|disk/i);
      } finally {
        await wire.close();
      }
      const kvFile = join(store, "namesrv", "kvConfig.json");
      if (existsSync(kvFile)) expect(() => JSON.parse(readFileSync(kvFile, "utf8"))).not.toThrow();
      // Sends stay refused; reads go on.
      await expect(producer.send({ topic, body: "late" })).rejects.toThrow(/disk is full/);
      await readBack(env, topic, acked);

      // kill -9 and a restart on the full disk: everything acknowledged is there.
      env.srv.proc.kill("SIGKILL");
      await env.srv.proc.exited;
      await env[Symbol.asyncDispose]();
      env = await Env.start({ dir, config: CONFIG });
      expect(existsSync(join(store, "disk-reserve"))).toBe(false);
      expect(env.srv.output.err() + env.srv.output.out()).toContain("so recovery can write");
      await readBack(env, topic, acked);

      // Space back, retention on: old segments go, sends resume without a restart.
      unlinkSync(filler);
      const patch = await fetch(`${env.srv.adminUrl}/config`, {
        method: "PATCH",
        headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ "store.deleteCommitLogFilesIntervalMs": 500 }),
      });
      expect(patch.status).toBe(200);
      const again = await env.producer({ retryTimesWhenSendFailed: 0 });
      let sent = "";
      await waitFor(
        async () => {
          try {
            sent = (await again.send({ topic, body: "after", keys: "after" })).msgId;
            return true;
          } catch (e) {
            sent = String(e);
            return false;
          }
        },
        30_000,
        () => `a send to succeed after retention (last: ${sent})`,
      );
      // With room again, the next retention check keeps the reserve again.
      await waitFor(() => existsSync(join(store, "disk-reserve")), 10_000, () => `the disk reserve to be back:\n${Bun.spawnSync(["df", store]).stdout.toString()}`);
    } finally {
      await env[Symbol.asyncDispose]();
    }
  }, 180_000);
});
