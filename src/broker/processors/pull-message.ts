/**
 * PullMessageProcessor: PULL_MESSAGE (docs/PROTOCOL.md §3.5), and LITE_PULL_MESSAGE, which the 5.x
 * client's DefaultLitePullConsumer sends with the same header and the LITE_PULL sys flag and which
 * the 5.x broker answers with the same processor. Checks the group and topic, picks
 * the subscription (from the request when the SUBSCRIPTION flag is set, else from the group's
 * heartbeat), reads stored records from the MessageStore, and maps the store's status to the
 * response code and nextBeginOffset exactly as RocketMQ does. A pull that finds nothing and may
 * be suspended is parked in the PullRequestHoldService (long polling); its answer is then a Promise
 * that the hold service settles (null when the connection closed first), so the server's request
 * pipeline sees it with the time it was parked.
 *
 * The body is the stored records byte for byte, concatenated: no re-encoding.
 */
import { type GetMessageResult, type GetMessageStatus } from "../../commitlog/index.ts";
import { isReadable } from "../../protocol/permission.ts";
import {
  createResponse,
  optInt,
  optString,
  reqInt,
  reqString,
  RequestCode,
  ResponseCode,
  type ProcessResult,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import type { BrokerContext } from "../context.ts";
import { PullSysFlag } from "../../protocol/pull-sys-flag.ts";
import { MASTER_ID } from "../../protocol/route.ts";
import { buildSubscription, isSupportedType, recordFilter, tagCodeFilter, unsupportedFilterRemark, type SubscriptionData } from "../subscription.ts";


const STATUS_TO_CODE: Record<GetMessageStatus, number> = {
  FOUND: ResponseCode.SUCCESS,
  NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
  MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
  OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
  OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
  OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
  OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
  NO_MATCHED_LOGIC_QUEUE: ResponseCode.PULL_NOT_FOUND,
  NO_MESSAGE_IN_QUEUE: ResponseCode.PULL_NOT_FOUND,
};

interface PullHeader {
  consumerGroup: string;
  topic: string;
  queueId: number;
  queueOffset: number;
  maxMsgNums: number;
  sysFlag: number;
  commitOffset: number;
  suspendTimeoutMillis: number;
  subscription: string | undefined;
  subVersion: number;
  expressionType: string | undefined;
}

export class PullMessageProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;

  constructor(ctx: BrokerContext) {
    this.#ctx = ctx;
  }

  static readonly CODES = [RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE];

  process(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand | Promise<ProcessResult> {
    const ext = cmd.extFields;
    const h: PullHeader = {
      consumerGroup: reqString(ext, "consumerGroup"),
      topic: reqString(ext, "topic"),
      queueId: reqInt(ext, "queueId"),
      queueOffset: reqInt(ext, "queueOffset"),
      maxMsgNums: Math.max(1, Math.min(reqInt(ext, "maxMsgNums"), 1024)),
      sysFlag: reqInt(ext, "sysFlag"),
      commitOffset: optInt(ext, "commitOffset") ?? 0,
      suspendTimeoutMillis: optInt(ext, "suspendTimeoutMillis") ?? 15000,
      subscription: optString(ext, "subscription"),
      subVersion: optInt(ext, "subVersion") ?? 0,
      expressionType: optString(ext, "expressionType"),
    };
    return this.#pull(conn, cmd, h, (h.sysFlag & PullSysFlag.SUSPEND) !== 0);
  }

  #pull(conn: RemotingConnection, cmd: RemotingCommand, h: PullHeader, allowSuspend: boolean): RemotingCommand | Promise<ProcessResult> {
    const ctx = this.#ctx;
    const fail = (code: number, remark: string) => createResponse(cmd, code, remark);
    const group = ctx.groups.findOrCreate(h.consumerGroup, ctx.settings.autoCreateSubscriptionGroup);
    if (!group) return fail(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, `subscription group [${h.consumerGroup}] does not exist`);
    if (!group.consumeEnable) return fail(ResponseCode.NO_PERMISSION, `subscription group no permission, ${h.consumerGroup}`);
    const tc = ctx.topics.get(h.topic);
    if (!tc) return fail(ResponseCode.TOPIC_NOT_EXIST, `topic[${h.topic}] not exist, apply first please!`);
    if (!isReadable(tc.perm)) return fail(ResponseCode.NO_PERMISSION, `the topic[${h.topic}] pulling message is forbidden`);
    if (h.queueId < 0 || h.queueId >= tc.readQueueNums) {
      return fail(ResponseCode.SYSTEM_ERROR, `queueId[${h.queueId}] is illegal, topic:[${h.topic}] topicConfig.readQueueNums:[${tc.readQueueNums}]`);
    }
    let sub: SubscriptionData;
    if ((h.sysFlag & PullSysFlag.SUBSCRIPTION) !== 0) {
      // Java: SQL92 without enablePropertyFilter (or an unknown type) is "not supported" (1), a bad
      // expression is SUBSCRIPTION_PARSE_FAILED (23).
      const sql = ctx.settings.enablePropertyFilter;
      if (!isSupportedType(h.expressionType, sql)) return fail(ResponseCode.SYSTEM_ERROR, unsupportedFilterRemark(h.expressionType));
      const s = buildSubscription(h.topic, h.subscription, h.expressionType, h.subVersion, sql);
      if ("invalid" in s) return fail(ResponseCode.SUBSCRIPTION_PARSE_FAILED, s.invalid);
      sub = s;
    } else {
      const known = ctx.consumers.subscription(h.consumerGroup, h.topic);
      if (!known)
        return fail(ResponseCode.SUBSCRIPTION_NOT_EXIST, `the consumer's subscription not exist, group: ${h.consumerGroup}, topic: ${h.topic}`);
      if (known.subVersion < h.subVersion) return fail(ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest");
      sub = known;
    }
    // enablePropertyFilter turned off since the consumer's heartbeat registered its SQL92 subscription.
    if (sub.selector && !ctx.settings.enablePropertyFilter) return fail(ResponseCode.SYSTEM_ERROR, unsupportedFilterRemark(sub.expressionType));
    const filter = tagCodeFilter(sub);
    // A SQL92 subscription has no tag-code filter: any arrival wakes its held pull, which then
    // re-runs the record filter (RocketMQ evaluates the arriving message's properties instead).
    const r = ctx.store.getMessage(h.topic, h.queueId, h.queueOffset, h.maxMsgNums, filter, recordFilter(sub));
    ctx.stats.recordGet(r.status === "FOUND" ? r.messages.length : 0, r.bufferTotalBytes, h.topic, h.consumerGroup);
    let code = STATUS_TO_CODE[r.status];
    let next = r.nextBeginOffset;
    if (r.status === "NO_MATCHED_LOGIC_QUEUE" || r.status === "NO_MESSAGE_IN_QUEUE") {
      // Empty or unknown queue: offset 0 is simply "nothing yet"; any other offset has moved.
      if (h.queueOffset !== 0) code = ResponseCode.PULL_OFFSET_MOVED;
      next = 0;
    }
    if (ctx.role.isSlave && code === ResponseCode.PULL_OFFSET_MOVED) {
      // A slave may lag its master: never move a consumer's offset from a slave's view.
      code = ResponseCode.PULL_RETRY_IMMEDIATELY;
      next = h.queueOffset;
    }

    if (code === ResponseCode.PULL_NOT_FOUND && allowSuspend && ctx.settings.pullHoldMaxMs > 0) {
      const parked = this.#park(conn, cmd, h, filter);
      if (parked) {
        this.#commitOffset(h, group.consumeEnable);
        return parked;
      }
    }
    this.#commitOffset(h, true);
    return this.#response(cmd, code, next, r, group.whichBrokerWhenConsumeSlowly, group.brokerId);
  }

  /**
   * Parks the pull: the answer is a Promise settled when the hold service re-runs it without
   * suspension (a throw becomes the server's SYSTEM_ERROR), or with null when its connection
   * closed first. Null when the connection has too many parked already (answer at once).
   */
  #park(
    conn: RemotingConnection,
    cmd: RemotingCommand,
    h: PullHeader,
    filter: ((tagsCode: number) => boolean) | undefined,
  ): Promise<ProcessResult> | null {
    let settle!: (res: ProcessResult | Promise<ProcessResult>) => void;
    let fail!: (e: unknown) => void;
    const answer = new Promise<ProcessResult>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    const run = () => {
      try {
        settle(this.#pull(conn, cmd, { ...h, sysFlag: h.sysFlag & ~PullSysFlag.COMMIT_OFFSET }, false));
      } catch (e) {
        fail(e);
      }
    };
    const held = this.#ctx.hold.hold(
      h.topic,
      h.queueId,
      { conn, offset: h.queueOffset, matches: filter, run, drop: () => settle(null) },
      h.suspendTimeoutMillis,
    );
    return held ? answer : null;
  }

  #commitOffset(h: PullHeader, enabled: boolean): void {
    if (!enabled || (h.sysFlag & PullSysFlag.COMMIT_OFFSET) === 0 || this.#ctx.role.isSlave) return;
    this.#ctx.consumerOffsets.commit(h.consumerGroup, h.topic, h.queueId, h.commitOffset);
  }

  #response(cmd: RemotingCommand, code: number, next: number, r: GetMessageResult, slowBrokerId: number, groupBrokerId: number): RemotingCommand {
    const s = this.#ctx.settings;
    const suggest = s.slaveReadEnable && r.suggestPullingFromSlave ? slowBrokerId : s.slaveReadEnable ? groupBrokerId : MASTER_ID;
    const ext = {
      suggestWhichBrokerId: String(suggest),
      nextBeginOffset: String(next),
      minOffset: String(r.minOffset),
      maxOffset: String(r.maxOffset),
    };
    const res = createResponse(cmd, code, r.status, ext);
    // The stored records go into the frame as they are, copied once from the CommitLog mapping
    // (the frame is encoded as soon as the response is sent, while the views are valid).
    if (code === ResponseCode.SUCCESS && r.messages.length > 0) res.bodyParts = r.messages;
    return res;
  }
}
