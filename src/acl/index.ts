/**
 * ACL as Apache RocketMQ 4.9's plain ACL: the plain_acl.yml model (rules.ts, address.ts), the
 * access decision (validator.ts), the request-pipeline hook with its file reloader (hook.ts) and
 * the file changes of the mqadmin ACL requests, codes 50–53 (edit.ts; served by the broker's
 * processors/acl-admin.ts). The signature itself is shared with the client: src/protocol/acl-signature.ts.
 */
export { parseAddressPattern, remoteHost, type AddressMatcher } from "./address.ts";
export { AclPerm, EMPTY_ACL_RULES, parseAclRules, type AclAccount, type AclRules } from "./rules.ts";
export { BROKER_ADMIN_CODES, checkAccess, NAMESRV_WRITE_CODES, requestResources, type AclDenial, type AclScope } from "./validator.ts";
export { ACL_EXCEPTION_PREFIX, AclHook, aclHookOrThrow, createAclHook, readAclFile, type AclHookOptions } from "./hook.ts";
export { deleteAccount, javaSplit, rewriteAclFile, setGlobalWhite, upsertAccount, type AccountChange, type AclEdit } from "./edit.ts";
