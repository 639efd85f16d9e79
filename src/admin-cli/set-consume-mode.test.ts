/**
 * `rocketbun admin setConsumeMode` (./commands-group.ts, mqadmin 5.3.3's SetConsumeModeSubCommand,
 * docs/PROTOCOL.md §3.22): its flags as mqadmin's, the SET_MESSAGE_REQUEST_MODE body it sends to
 * each broker and the lines it prints, with a session whose requests are answered by the test.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { createRequest, createResponse, ResponseCode, type ExtFields, type RemotingCommand } from "../remoting/index.ts";
import type { CommandContext, Output } from "./command.ts";
import { setConsumeMode } from "./commands-group.ts";
import { parseFlags, UsageError } from "./flags.ts";
import { AdminError, AdminSession, type CallOptions } from "./session.ts";

const dec = new TextDecoder();

/** A session whose brokers answer from `answers` (SUCCESS when absent) and that records what was sent. */
class ScriptedSession extends AdminSession {
  readonly sent: { addr: string; code: number; body: unknown; timeoutMs: number | undefined }[] = [];
  readonly #answers: Record<string, { code: number; remark?: string }>;

  constructor(answers: Record<string, { code: number; remark?: string }> = {}) {
    super({ namesrv: ["127.0.0.1:9876"], timeoutMs: 3000 });
    this.#answers = answers;
  }

  override async call(addr: string, code: number, _ext?: ExtFields, body?: Uint8Array, o: CallOptions = {}): Promise<RemotingCommand> {
    this.sent.push({ addr, code, body: body === undefined ? undefined : JSON.parse(dec.decode(body)), timeoutMs: o.timeoutMs });
    const a = this.#answers[addr] ?? { code: ResponseCode.SUCCESS };
    return createResponse(createRequest(code), a.code, a.remark);
  }

  override async mastersOf(cluster: string): Promise<string[]> {
    return cluster === "DefaultCluster" ? ["10.0.0.1:10911", "10.0.0.2:10911"] : [];
  }
}

const sessions: AdminSession[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
});

async function run(argv: string[], session = new ScriptedSession()): Promise<Output> {
  sessions.push(session);
  const parsed = parseFlags(setConsumeMode, argv);
  if (!("flags" in parsed)) throw new Error(JSON.stringify(parsed));
  const unused = () => {
    throw new Error("not used by setConsumeMode");
  };
  const ctx: CommandContext = { session, flags: parsed.flags, progress: unused, emit: unused, pause: unused };
  return setConsumeMode.run(ctx);
}

describe("setConsumeMode", () => {
  test("mqadmin's flags: -t, -g, -m required, one of -b / -c", () => {
    expect(parseFlags(setConsumeMode, ["-b", "a:1"])).toEqual({
      errors: ["-t/--topicName: required", "-g/--groupName: required", "-m/--mode: required"],
    });
    expect(parseFlags(setConsumeMode, ["-t", "T", "-g", "G", "-m", "POP"])).toEqual({
      errors: ["one of -b/--brokerAddr, -c/--clusterName is required"],
    });
  });

  test("-b: one SET_MESSAGE_REQUEST_MODE with mqadmin's body and 5 s timeout; mqadmin's two lines", async () => {
    const s = new ScriptedSession();
    const out = await run(["-b", "10.0.0.9:10911", "-t", "Orders", "-g", "OrderConsumers", "-m", "POP", "-q", "1"], s);
    expect(s.sent).toEqual([
      {
        addr: "10.0.0.9:10911",
        code: 401,
        body: { consumerGroup: "OrderConsumers", mode: "POP", popShareQueueNum: 1, topic: "Orders" },
        timeoutMs: 5000,
      },
    ]);
    expect(out.text).toBe("set consume mode to 10.0.0.9:10911 success.\ntopic[Orders] group[OrderConsumers] consume mode[POP] popShareQueueNum[1]");
    expect(out.failed).toBeUndefined();
  });

  test("-c: every master; a refusal is printed, the others still set, and the command fails", async () => {
    const s = new ScriptedSession({ "10.0.0.1:10911": { code: ResponseCode.TOPIC_NOT_EXIST, remark: "topic[Orders] not exist" } });
    const out = await run(["-c", "DefaultCluster", "-t", "Orders", "-g", "G", "-m", "PULL"], s);
    expect(s.sent.map((r) => r.addr)).toEqual(["10.0.0.1:10911", "10.0.0.2:10911"]);
    expect(s.sent[1]!.body).toEqual({ consumerGroup: "G", mode: "PULL", popShareQueueNum: 0, topic: "Orders" });
    expect(out.text).toBe(
      [
        "set consume mode to 10.0.0.1:10911 failed: 17 topic[Orders] not exist",
        "set consume mode to 10.0.0.2:10911 success.",
        "topic[Orders] group[G] consume mode[PULL] popShareQueueNum[0]",
      ].join("\n"),
    );
    expect(out.failed).toBe(true);
  });

  test("-b: a refusal fails the command with the broker's remark; the mode is case-sensitive, as Java's valueOf", async () => {
    const s = new ScriptedSession({ "10.0.0.9:10911": { code: ResponseCode.NO_PERMISSION, remark: "retry topic is not allowed to set mode" } });
    const refused = run(["-b", "10.0.0.9:10911", "-t", "%RETRY%G", "-g", "G", "-m", "POP"], s);
    await expect(refused).rejects.toBeInstanceOf(AdminError);
    await expect(refused).rejects.toThrow("retry topic is not allowed to set mode");
    const lower = run(["-b", "10.0.0.9:10911", "-t", "T", "-g", "G", "-m", "pop"]);
    await expect(lower).rejects.toBeInstanceOf(UsageError);
    await expect(lower).rejects.toThrow('-m/--mode: expected PULL or POP, got "pop"');
  });
});
