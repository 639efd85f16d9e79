/**
 * The TypeScript shapes of the MessagingService messages the endpoint reads and writes, field
 * for field as messaging.proto names them (keepCase: snake_case, as on the wire). Decoded
 * messages carry every field (proto3 defaults: "", 0, [], null); int64 fields decode as Long,
 * read with `int64`. Objects written may leave fields out.
 */

/** A decoded int64: protobufjs gives a Long (the `long` package grpc-js brings) or a number. */
export type Int64 = number | { toNumber(): number };

export function int64(v: Int64 | null | undefined): number {
  if (v === null || v === undefined) return 0;
  return typeof v === "number" ? v : v.toNumber();
}

export interface Status {
  code: number;
  message: string;
}

export interface Resource {
  resource_namespace?: string;
  name: string;
}

export interface Duration {
  seconds: Int64;
  nanos?: number;
}

export type Timestamp = Duration;

export interface Address {
  host: string;
  port: number;
}

export interface Endpoints {
  scheme: number;
  addresses: Address[];
}

export interface Broker {
  name: string;
  id: number;
  endpoints: Endpoints;
}

export interface GrpcMessageQueue {
  topic: Resource;
  id: number;
  permission: number;
  broker: Broker;
  accept_message_types: number[];
}

export interface ExponentialBackoff {
  initial: Duration;
  max: Duration;
  multiplier: number;
}

export interface RetryPolicy {
  max_attempts: number;
  exponential_backoff?: ExponentialBackoff | null;
  customized_backoff?: { next: Duration[] } | null;
}

export interface Publishing {
  topics: Resource[];
  max_body_size: number;
  validate_message_type: boolean;
}

export interface GrpcSubscription {
  group?: Resource | null;
  subscriptions: { topic: Resource | null; expression: { type: number; expression: string } | null }[];
  fifo?: boolean;
  receive_batch_size?: number;
  long_polling_timeout?: Duration | null;
}

export interface UA {
  language: number;
  version: string;
  platform: string;
  hostname: string;
}

export interface Settings {
  client_type?: number;
  access_point?: Endpoints | null;
  backoff_policy?: RetryPolicy | null;
  request_timeout?: Duration | null;
  publishing?: Publishing | null;
  subscription?: GrpcSubscription | null;
  user_agent?: UA | null;
  metric?: { on: boolean; endpoints?: Endpoints | null } | null;
}

export interface TelemetryCommand {
  status?: Status | null;
  settings?: Settings | null;
  /** Which member of the `command` oneof is set (protobufjs's virtual oneof field, on decoded messages). */
  command?: string;
}

export interface SystemProperties {
  tag?: string;
  keys: string[];
  message_id: string;
  body_encoding: number;
  message_type: number;
  born_timestamp?: Timestamp | null;
  born_host: string;
  delivery_timestamp?: Timestamp | null;
  queue_id: number;
  delivery_attempt?: number;
  message_group?: string;
  trace_context?: string;
  orphaned_transaction_recovery_duration?: Duration | null;
}

export interface GrpcMessage {
  topic: Resource | null;
  user_properties: Record<string, string>;
  system_properties: SystemProperties | null;
  body: Uint8Array;
}

export interface QueryRouteRequest {
  topic: Resource | null;
  endpoints: Endpoints | null;
}

export interface QueryRouteResponse {
  status: Status;
  message_queues: GrpcMessageQueue[];
}

export interface SendMessageRequest {
  messages: GrpcMessage[];
}

export interface SendResultEntry {
  status: Status;
  message_id?: string;
  transaction_id?: string;
  offset?: number;
}

export interface SendMessageResponse {
  status: Status;
  entries: SendResultEntry[];
}

export interface HeartbeatRequest {
  group?: Resource | null;
  client_type: number;
}

export interface NotifyClientTerminationRequest {
  group?: Resource | null;
}

/** HeartbeatResponse, NotifyClientTerminationResponse: a status only. */
export interface StatusResponse {
  status: Status;
}
