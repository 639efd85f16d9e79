/**
 * Well-known message property keys (Java `MessageConst`, docs/PROTOCOL.md §4.4): the names in a
 * record's property string, written by producers and the broker's send, schedule and
 * transaction paths, read by the store's index, consumers and the admin tools. The property
 * string's own form (separators, parsing) is src/common/message-record.ts's.
 */
/** The values are the strings on the wire. */
export const MessageConst = {
  KEYS: "KEYS",
  TAGS: "TAGS",
  WAIT: "WAIT",
  DELAY: "DELAY",
  RETRY_TOPIC: "RETRY_TOPIC",
  REAL_TOPIC: "REAL_TOPIC",
  REAL_QID: "REAL_QID",
  TRAN_MSG: "TRAN_MSG",
  PGROUP: "PGROUP",
  MIN_OFFSET: "MIN_OFFSET",
  MAX_OFFSET: "MAX_OFFSET",
  ORIGIN_MESSAGE_ID: "ORIGIN_MESSAGE_ID",
  RECONSUME_TIME: "RECONSUME_TIME",
  MAX_RECONSUME_TIMES: "MAX_RECONSUME_TIMES",
  UNIQ_KEY: "UNIQ_KEY",
  CLUSTER: "CLUSTER",
  MSG_REGION: "MSG_REGION",
  TRACE_ON: "TRACE_ON",
  CONSUME_START_TIME: "CONSUME_START_TIME",
  TRAN_PREPARED_QUEUE_OFFSET: "TRAN_PREPARED_QUEUE_OFFSET",
  TRANSACTION_CHECK_TIMES: "TRANSACTION_CHECK_TIMES",
  CHECK_IMMUNITY_TIME_IN_SECONDS: "CHECK_IMMUNITY_TIME_IN_SECONDS",
  INSTANCE_ID: "INSTANCE_ID",
  /** ali-ons setStartDeliverTime; the Apache broker stores it as a plain property. */
  START_DELIVER_TIME: "__STARTDELIVERTIME",
  /** ali-ons queue selection; a plain property for the broker. */
  SHARDING_KEY: "__SHARDING_KEY",
  /** 5.x message group (a FIFO message's group; Apache's PROPERTY_SHARDING_KEY, unlike ali-ons's above). */
  SHARDINGKEY: "__SHARDINGKEY",
  /** 5.x: the producer's address as the gRPC client gave it (the record's BORNHOST is the proxy's view). */
  BORN_HOST: "__BORNHOST",
  /** 5.x: the producer's born time in ms, as the gRPC message carried it. */
  BORN_TIMESTAMP: "BORN_TIMESTAMP",
  /** 5.x: the message's trace context (OpenTelemetry), as the gRPC message carried it. */
  TRACE_CONTEXT: "TRACE_CONTEXT",
  TIMER_DELIVER_MS: "TIMER_DELIVER_MS",
  TIMER_DELAY_SEC: "TIMER_DELAY_SEC",
  TIMER_DELAY_MS: "TIMER_DELAY_MS",
  /** 5.x POP: a popped message's receipt handle (../protocol/pop.ts). */
  POP_CK: "POP_CK",
  /** 5.x POP: when the message was first popped (set on a revived copy). */
  FIRST_POP_TIME: "1ST_POP_TIME",
  /** Separates the keys inside KEYS. */
  PROPERTY_KEY_SEPARATOR: " ",
} as const;
