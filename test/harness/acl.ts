/**
 * The ACL fixture every ACL suite shares (test/integration/acl.test.ts, the Java, Go and ali-ons
 * ACL runs): accounts, fixed resource names and the plain_acl.yml that grants them, in RocketMQ
 * 4.9's format so that Apache RocketMQ reads the same file.
 *
 *   admin  ACL_ADMIN   admin: true, no perms listed → every topic and group, admin requests too
 *   user   ACL_USER    not admin; every topic PUB|SUB and every group SUB by default, except
 *                      ACL_SUB_ONLY_TOPIC (SUB: may not publish), ACL_DENIED_TOPIC (DENY) and
 *                      ACL_DENIED_GROUP (DENY: may not consume)
 *   white  ACL_WHITE   not admin, whiteRemoteAddress 127.0.0.1: from here, no signature needed
 *
 * Resource names are fixed (a plain_acl.yml lists exact names), so suites that share one broker
 * compare offsets before and after instead of expecting empty topics.
 */
import type { AclCredentials } from "../../src/protocol/acl-signature.ts";

export const ACL_ADMIN: AclCredentials = { accessKey: "RbAclAdmin", secretKey: "rb-admin-secret-1" };
export const ACL_USER: AclCredentials = { accessKey: "RbAclUser", secretKey: "rb-user-secret-1" };
export const ACL_WHITE: AclCredentials = { accessKey: "RbAclWhite", secretKey: "rb-white-secret-1" };
/** ACL_USER with a secret the broker does not have. */
export const ACL_WRONG_SECRET: AclCredentials = { accessKey: ACL_USER.accessKey, secretKey: "not-the-secret" };
/** An access key no account has. */
export const ACL_UNKNOWN_KEY: AclCredentials = { accessKey: "RbAclNobody", secretKey: "whatever-secret" };

export const ACL_SUB_ONLY_TOPIC = "AclSubOnlyTopic";
export const ACL_DENIED_TOPIC = "AclDeniedTopic";
export const ACL_DENIED_GROUP = "AclDeniedGroup";

export interface AclYamlOptions {
  /** globalWhiteRemoteAddresses (none by default). */
  globalWhite?: string[];
  /** Extra topicPerms lines of the user, e.g. "AclSubOnlyTopic=PUB|SUB". */
  userTopicPerms?: string[];
  /** Leave the white-listed account out. */
  noWhiteAccount?: boolean;
}

/** The fixture's plain_acl.yml. */
export function aclYaml(o: AclYamlOptions = {}): string {
  const global = o.globalWhite && o.globalWhite.length > 0 ? `globalWhiteRemoteAddresses:\n${o.globalWhite.map((a) => `  - ${a}\n`).join("")}\n` : "";
  const topicPerms = [...(o.userTopicPerms ?? []), `${ACL_SUB_ONLY_TOPIC}=SUB`, `${ACL_DENIED_TOPIC}=DENY`];
  // A later entry for the same topic wins in neither implementation reliably: keep one per topic.
  const seen = new Set<string>();
  const perms = topicPerms.filter((p) => {
    const t = p.split("=")[0]!;
    if (seen.has(t)) return false;
    seen.add(t);
    return true;
  });
  const white = o.noWhiteAccount
    ? ""
    : `
  - accessKey: ${ACL_WHITE.accessKey}
    secretKey: ${ACL_WHITE.secretKey}
    whiteRemoteAddress: 127.0.0.1
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
`;
  return `${global}accounts:
  - accessKey: ${ACL_ADMIN.accessKey}
    secretKey: ${ACL_ADMIN.secretKey}
    admin: true

  - accessKey: ${ACL_USER.accessKey}
    secretKey: ${ACL_USER.secretKey}
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
    topicPerms:
${perms.map((p) => `      - ${p}\n`).join("")}    groupPerms:
      - ${ACL_DENIED_GROUP}=DENY
${white}`;
}

/** The remark prefix of an ACL refusal (Java's AclException escaping the broker's RPC hook). */
export const ACL_REMARK = "org.apache.rocketmq.acl.common.AclException: ";
