/**
 * The broker's persisted metadata: JSON files in `<storeDir>/config/`, with RocketMQ's names
 * and shapes so an operator, a Java slave or mqadmin recognises them (docs/STORAGE.md §5).
 *
 *   file                      owner                       written
 *   ------------------------  --------------------------  ------------------------------------
 *   topics.json               TopicConfigManager          on every change (write-through)
 *   subscriptionGroup.json    SubscriptionGroupManager    on every change (write-through)
 *   consumerOffset.json       ConsumerOffsetManager       persistIfDirty(): every 5 s, shutdown
 *   delayOffset.json          DelayOffsetManager          persistIfDirty(): every 5 s, shutdown
 *   messageRequestMode.json   MessageRequestModeManager   on every change (write-through;
 *                             (message-request-mode.ts)    no dataVersion, as in Java)
 *
 * Each file is written through `writeFileAtomic` (temp + fsync + `.bak` of the previous version +
 * rename) and read through `readFileWithBackup` with fastjson's unquoted numeric keys accepted.
 * The load outcomes and what each reports are tabled in `metadata-file.ts`; the scaffolding the
 * managers share (load, dataVersion, write-through or dirty-flag persistence, a slave's adoption
 * of its master's table) is written once in `metadata-table.ts`. `load()` never throws
 * on bad content: it returns problem strings and sets `loadedFrom`; "unreadable" means a file was
 * there but no copy parsed, and the caller decides whether to start with an empty table.
 *
 * Write-through managers make the change on disk first and in memory second, so a write error
 * (thrown) leaves both as they were. The dirty-flag managers stay dirty after a failed write, so
 * the next timer tick retries.
 */
export { type LoadedFrom, type MetadataOptions } from "./metadata-file.ts";
export { TopicConfigManager, topicConfigFromJson, type SystemTopicOptions, type TopicConfigWrapper } from "./metadata-topics.ts";
export { ConsumerOffsetManager, DelayOffsetManager, type ConsumerOffsetBody, type DelayOffsetBody } from "./metadata-offsets.ts";
export {
  GROUP_NAME_MAX_CHARS,
  GROUP_NAME_PATTERN,
  PRE_CREATED_GROUPS,
  SubscriptionGroupManager,
  defaultSubscriptionGroupConfig,
  subscriptionGroupFromJson,
  type SubscriptionGroupConfig,
  type SubscriptionGroupWrapper,
} from "./metadata-groups.ts";
