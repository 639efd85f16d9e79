/**
 * config/messageRequestMode.json (./message-request-mode.ts): Java's file read as it is, bad
 * entries skipped and named, the load table of metadata-file.ts (a damaged file falls back to its
 * .bak), and a master's body that does not decode changing nothing.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MessageRequestMode } from "../protocol/message-request-mode.ts";
import { MessageRequestModeManager } from "./message-request-mode.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function storeDir(): string {
  const d = mkdtempSync(join(tmpdir(), "rocketbun-mode-table-"));
  dirs.push(d);
  mkdirSync(join(d, "config"));
  return d;
}

const file = (dir: string) => join(dir, "config", "messageRequestMode.json");
const entry = (topic: string, consumerGroup: string, mode: MessageRequestMode = "POP", popShareQueueNum = 0) => ({
  consumerGroup,
  mode,
  popShareQueueNum,
  topic,
});

describe("messageRequestMode.json", () => {
  test("Java's file (tabs, fastjson order) loads; bad entries are skipped and named, the rest kept", () => {
    const dir = storeDir();
    const java = {
      messageRequestModeMap: {
        T: { G: entry("T", "G"), H: entry("T", "Other"), I: { ...entry("T", "I"), mode: "PUSH" } },
        U: "not an object",
        V: { G: { topic: "V", consumerGroup: "G" } },
      },
    };
    writeFileSync(file(dir), JSON.stringify(java, null, "\t"));
    const m = new MessageRequestModeManager({ dir });
    expect(m.load()).toEqual([
      'config/messageRequestMode.json: messageRequestModeMap.T.H: names "T"/"Other", not its keys; entry skipped',
      'config/messageRequestMode.json: messageRequestModeMap.T.I.mode: expected PULL or POP, got "PUSH"; entry skipped',
      'config/messageRequestMode.json: messageRequestModeMap.U: expected an object, got "not an object"; entry skipped',
    ]);
    expect(m.loadedFrom).toBe("main");
    expect(m.wrapper()).toEqual({ messageRequestModeMap: { T: { G: entry("T", "G") }, V: { G: entry("V", "G", "PULL") } } });
  });

  test("a damaged file falls back to the previous version in .bak, kept as .corrupt", () => {
    const dir = storeDir();
    const m = new MessageRequestModeManager({ dir });
    m.set({ topic: "T", consumerGroup: "G", mode: "POP", popShareQueueNum: 1 });
    m.set({ topic: "T", consumerGroup: "H", mode: "POP", popShareQueueNum: 0 });
    writeFileSync(file(dir), '{"messageRequestModeMap":{"T":');
    const again = new MessageRequestModeManager({ dir });
    const problems = again.load();
    expect(again.loadedFrom).toBe("bak");
    expect(problems).toHaveLength(1);
    expect(problems[0]).toStartWith("config/messageRequestMode.json: unreadable (not valid JSON");
    expect(again.wrapper()).toEqual({ messageRequestModeMap: { T: { G: entry("T", "G", "POP", 1) } } });
    expect(existsSync(`${file(dir)}.corrupt`)).toBe(true);
  });

  test("a master's body with a bad top level changes nothing; an equal one writes nothing", () => {
    const dir = storeDir();
    const m = new MessageRequestModeManager({ dir });
    m.set({ topic: "T", consumerGroup: "G", mode: "POP", popShareQueueNum: 0 });
    expect(m.replaceAll({ messageRequestModeMap: [] })).toEqual([
      "message request mode body: messageRequestModeMap: expected an object, got []; nothing changed",
    ]);
    expect(m.get("T", "G")?.mode).toBe("POP");
    rmSync(file(dir));
    expect(m.replaceAll(m.wrapper())).toEqual([]);
    expect(existsSync(file(dir))).toBe(false);
    expect(m.replaceAll({})).toEqual([]);
    expect(m.wrapper()).toEqual({ messageRequestModeMap: {} });
    expect(existsSync(file(dir))).toBe(true);
  });
});
