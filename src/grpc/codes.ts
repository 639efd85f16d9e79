/**
 * The enum values the endpoint answers with, by their messaging.proto names: `Code` (a
 * response's Status, docs/PROTOCOL.md §9.2), `Permission`, `MessageType`, `ClientType`,
 * `AddressScheme`, `Encoding`. codes.test.ts checks each against the .proto text.
 */
export const Code = {
  OK: 20000,
  MULTIPLE_RESULTS: 30000,
  BAD_REQUEST: 40000,
  ILLEGAL_TOPIC: 40002,
  ILLEGAL_CONSUMER_GROUP: 40003,
  ILLEGAL_MESSAGE_TAG: 40004,
  ILLEGAL_MESSAGE_KEY: 40005,
  ILLEGAL_MESSAGE_GROUP: 40006,
  ILLEGAL_MESSAGE_PROPERTY_KEY: 40007,
  ILLEGAL_MESSAGE_ID: 40009,
  ILLEGAL_DELIVERY_TIME: 40012,
  MESSAGE_PROPERTY_CONFLICT_WITH_TYPE: 40014,
  UNRECOGNIZED_CLIENT_TYPE: 40015,
  MESSAGE_CORRUPTED: 40016,
  CLIENT_ID_REQUIRED: 40017,
  FORBIDDEN: 40300,
  TOPIC_NOT_FOUND: 40402,
  MESSAGE_BODY_TOO_LARGE: 41301,
  MESSAGE_BODY_EMPTY: 41302,
  MESSAGE_PROPERTIES_TOO_LARGE: 43101,
  INTERNAL_SERVER_ERROR: 50001,
  HA_NOT_AVAILABLE: 50002,
  MASTER_PERSISTENCE_TIMEOUT: 50401,
  SLAVE_PERSISTENCE_TIMEOUT: 50402,
} as const;

export const Permission = { NONE: 1, READ: 2, WRITE: 3, READ_WRITE: 4 } as const;

export const MessageType = { MESSAGE_TYPE_UNSPECIFIED: 0, NORMAL: 1, FIFO: 2, DELAY: 3, TRANSACTION: 4 } as const;

export const ClientType = { CLIENT_TYPE_UNSPECIFIED: 0, PRODUCER: 1, PUSH_CONSUMER: 2, SIMPLE_CONSUMER: 3 } as const;

export const AddressScheme = { IPv4: 1, IPv6: 2, DOMAIN_NAME: 3 } as const;

export const Encoding = { IDENTITY: 1, GZIP: 2 } as const;
