/**
 * AclAdminProcessor: the mqadmin ACL requests (Java AdminBrokerProcessor 4.9.8), which change and
 * show the broker's plain_acl.yml (broker.aclFile) through src/acl/edit.ts (docs/PROTOCOL.md §3.19):
 *
 *   UPDATE_AND_CREATE_ACL_CONFIG (50)      accessKey, secretKey, whiteRemoteAddress, admin, defaultTopicPerm,
 *                                          defaultGroupPerm, topicPerms, groupPerms ("a=PUB,b=SUB")
 *                                          → SUCCESS | 209 UPDATE_AND_CREATE_ACL_CONFIG_FAILED, remark = what is wrong
 *   DELETE_ACL_CONFIG (51)                 accessKey → SUCCESS | 210 DELETE_ACL_CONFIG_FAILED
 *   GET_BROKER_CLUSTER_ACL_INFO (52)       → SUCCESS, extFields version (DataVersion JSON), allAclFileVersion
 *                                          ({"<file>":DataVersion}), brokerName, brokerAddr, clusterName
 *   UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53)  globalWhiteAddrs ("a,b"), aclFileFullPath (optional: must name
 *                                          broker.aclFile) → SUCCESS | 211 UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
 *   GET_BROKER_CLUSTER_ACL_CONFIG (54)     → REQUEST_CODE_NOT_SUPPORTED: removed in 4.9.8, it leaked every secret key
 *
 * The ACL hook checks these requests first; 50–53 need an admin account (src/acl/validator.ts).
 * A change is written atomically and the hook reloads at once, so the next request already meets
 * the new rules. With ACL off a Java broker has no validator and fails on a null pointer (50, 51, 53:
 * their failure code with no remark; 52: no answer at all, so the caller times out); here the same
 * codes, and SYSTEM_ERROR for 52, say that ACL is off.
 */
import { resolve } from "node:path";
import { deleteAccount, javaSplit, rewriteAclFile, setGlobalWhite, upsertAccount, type AclEdit, type AclHook } from "../../acl/index.ts";
import {
  createResponse,
  RequestCode,
  ResponseCode,
  type RemotingCommand,
  type RemotingConnection,
  type RequestProcessor,
} from "../../remoting/index.ts";
import type { BrokerContext } from "../context.ts";

const ACL_OFF = "The broker does not enable acl: set broker.aclEnable and broker.aclFile";
const CODE_54_REMOVED =
  " request type 54 not supported: GET_BROKER_CLUSTER_ACL_CONFIG was removed in RocketMQ 4.9.8 because it returned every account's secret key";

/** Java UtilAll.split: absent stays absent. */
const splitList = (s: string | undefined): string[] | undefined => (s === undefined ? undefined : javaSplit(s, ","));

export class AclAdminProcessor implements RequestProcessor {
  readonly #ctx: BrokerContext;
  readonly #acl: AclHook | undefined;

  /** `acl` is the broker's ACL hook (undefined when broker.aclEnable is off): its file is the one changed. */
  constructor(ctx: BrokerContext, acl: AclHook | undefined) {
    this.#ctx = ctx;
    this.#acl = acl;
  }

  static readonly CODES = [
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
    RequestCode.DELETE_ACL_CONFIG,
    RequestCode.GET_BROKER_CLUSTER_ACL_INFO,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
    RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG,
  ];

  process(conn: RemotingConnection, cmd: RemotingCommand): RemotingCommand {
    const ext = cmd.extFields ?? {};
    const now = this.#ctx.now();
    switch (cmd.code) {
      case RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: {
        const change = {
          ...(ext.accessKey !== undefined ? { accessKey: ext.accessKey } : {}),
          ...(ext.secretKey !== undefined ? { secretKey: ext.secretKey } : {}),
          ...(ext.whiteRemoteAddress !== undefined ? { whiteRemoteAddress: ext.whiteRemoteAddress } : {}),
          // Java Boolean.parseBoolean.
          admin: ext.admin?.toLowerCase() === "true",
          ...(ext.defaultTopicPerm !== undefined ? { defaultTopicPerm: ext.defaultTopicPerm } : {}),
          ...(ext.defaultGroupPerm !== undefined ? { defaultGroupPerm: ext.defaultGroupPerm } : {}),
          ...(ext.topicPerms !== undefined ? { topicPerms: splitList(ext.topicPerms)! } : {}),
          ...(ext.groupPerms !== undefined ? { groupPerms: splitList(ext.groupPerms)! } : {}),
        };
        return this.#rewrite(conn, cmd, ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, `account ${ext.accessKey} updated`, (file, text) =>
          upsertAccount(file, text, change, now),
        );
      }
      case RequestCode.DELETE_ACL_CONFIG:
        return this.#rewrite(conn, cmd, ResponseCode.DELETE_ACL_CONFIG_FAILED, `account ${ext.accessKey} deleted`, (file, text) =>
          deleteAccount(file, text, ext.accessKey, now),
        );
      case RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG:
        return this.#globalWhite(conn, cmd, now);
      case RequestCode.GET_BROKER_CLUSTER_ACL_INFO:
        return this.#version(cmd);
      default:
        return createResponse(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, CODE_54_REMOVED);
    }
  }

  #globalWhite(conn: RemotingConnection, cmd: RemotingCommand, now: number): RemotingCommand {
    const failed = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED;
    const ext = cmd.extFields ?? {};
    const path = ext.aclFileFullPath;
    // Java keeps one file per path under ${ROCKETMQ_HOME}/conf; RocketBun enforces one file.
    if (this.#acl !== undefined && path !== undefined && path !== "" && resolve(path) !== resolve(this.#acl.file)) {
      return createResponse(cmd, failed, `aclFileFullPath ${path} is not the broker's ACL file; this broker enforces ${this.#acl.file} only`);
    }
    if (ext.globalWhiteAddrs === undefined) return createResponse(cmd, failed, "globalWhiteAddrs is required");
    const patterns = javaSplit(ext.globalWhiteAddrs, ",");
    return this.#rewrite(conn, cmd, failed, `global white list set to ${patterns.join(",")}`, (file, text) =>
      setGlobalWhite(file, text, patterns, now),
    );
  }

  /** Applies an edit to the ACL file, then reloads the hook so the change is in force for the next request. */
  #rewrite(
    conn: RemotingConnection,
    cmd: RemotingCommand,
    failCode: number,
    what: string,
    edit: (file: string, text: string) => AclEdit,
  ): RemotingCommand {
    const acl = this.#acl;
    if (acl === undefined) return createResponse(cmd, failCode, ACL_OFF);
    const out = rewriteAclFile(acl.file, (text) => edit(acl.file, text));
    if ("invalid" in out) {
      this.#ctx.log.warn(`ACL change from ${conn.remoteAddress} refused (${acl.file} unchanged): ${out.invalid}`);
      return createResponse(cmd, failCode, out.invalid);
    }
    const reloaded = acl.reload();
    if ("errors" in reloaded) return createResponse(cmd, failCode, `written, but not loaded: ${reloaded.errors.join("; ")}`);
    this.#ctx.log.info(`ACL file ${acl.file}: ${what} by ${conn.remoteAddress} (dataVersion ${out.dataVersion.counter})`);
    return createResponse(cmd, ResponseCode.SUCCESS);
  }

  #version(cmd: RemotingCommand): RemotingCommand {
    const acl = this.#acl;
    if (acl === undefined) return createResponse(cmd, ResponseCode.SYSTEM_ERROR, ACL_OFF);
    const { counter, timestamp } = acl.rules.dataVersion;
    const version = JSON.stringify({ counter, timestamp });
    const s = this.#ctx.settings;
    return createResponse(cmd, ResponseCode.SUCCESS, undefined, {
      version,
      allAclFileVersion: `{${JSON.stringify(resolve(acl.file))}:${version}}`,
      brokerName: s.brokerName,
      brokerAddr: s.brokerAddr,
      clusterName: s.clusterName,
    });
  }
}
