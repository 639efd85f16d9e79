/**
 * The MessagingService handlers served so far, each answering as Apache's proxy does in local
 * mode (docs/PROTOCOL.md §9): QueryRoute, Heartbeat, SendMessage, Telemetry (the settings
 * exchange), NotifyClientTermination. Errors travel in-band as a response Status with the gRPC
 * status OK; only Telemetry ends its stream with a gRPC error. The RPCs not listed here are
 * answered UNIMPLEMENTED by grpc-js.
 */
import {
  status as GrpcStatus,
  type Metadata,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type sendUnaryData,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import type { BrokerMessaging } from "../broker/index.ts";
import type { Logger } from "../common/log.ts";
import { isReadable, isWriteable } from "../protocol/permission.ts";
import { AddressScheme, ClientType, Code, MessageType, Permission } from "./codes.ts";
import type {
  HeartbeatRequest,
  GrpcMessageQueue,
  NotifyClientTerminationRequest,
  QueryRouteRequest,
  QueryRouteResponse,
  SendMessageRequest,
  SendMessageResponse,
  Settings,
  Status,
  StatusResponse,
  TelemetryCommand,
} from "./messages.ts";
import { MAX_BODY_BYTES, QueueSelector, sendMessage } from "./send-message.ts";
import { groupProblem, topicProblem } from "./validate.ts";

export interface MessagingServiceOptions {
  broker: BrokerMessaging;
  /** The port clients reach this endpoint on (QueryRoute's endpoints). */
  port: () => number;
  log: Logger;
  now?: () => number;
}

const CLIENT_ID = "x-mq-client-id";
const OK: Status = { code: Code.OK, message: "OK" };
const NO_CLIENT_ID: Status = { code: Code.CLIENT_ID_REQUIRED, message: "client id cannot be empty" };
const NO_SETTINGS: Status = { code: Code.UNRECOGNIZED_CLIENT_TYPE, message: "cannot find client settings for this client" };

function clientIdOf(md: Metadata): string {
  const v = md.get(CLIENT_ID)[0];
  return typeof v === "string" ? v.trim() : "";
}

/** The scheme of a host as the proxy parses it. */
export function addressScheme(host: string): number {
  if (host.includes(":")) return AddressScheme.IPv6;
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) ? AddressScheme.IPv4 : AddressScheme.DOMAIN_NAME;
}

/** The host part of `ip:port` or `[ipv6]:port`. */
function hostOf(addr: string): string {
  const i = addr.lastIndexOf(":");
  const host = i < 0 ? addr : addr.slice(0, i);
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

/**
 * QueryRoute's queues of one topic on this broker, numbered as the proxy numbers them: with
 * read r and write w, min(r, w) READ_WRITE queues, the rest READ or WRITE; ids in the order
 * READ, WRITE, READ_WRITE; no permission: max(1, r, w) queues of NONE.
 */
export function routeQueues(topic: string, read: number, write: number, perm: number, broker: GrpcMessageQueue["broker"]): GrpcMessageQueue[] {
  const canRead = isReadable(perm);
  const canWrite = isWriteable(perm);
  const groups: [number, number][] = [];
  if (canRead && canWrite) {
    const rw = Math.min(read, write);
    groups.push([Permission.READ, read - rw], [Permission.WRITE, write - rw], [Permission.READ_WRITE, rw]);
  } else if (canWrite) groups.push([Permission.WRITE, write]);
  else if (canRead) groups.push([Permission.READ, read]);
  else groups.push([Permission.NONE, Math.max(1, read, write)]);
  const out: GrpcMessageQueue[] = [];
  for (const [permission, n] of groups) {
    for (let i = 0; i < n; i++) out.push({ topic: { name: topic }, id: out.length, permission, broker, accept_message_types: [MessageType.NORMAL] });
  }
  return out;
}

/** The Settings the proxy answers a client's with (and keeps for the client's other RPCs). */
export function serverSettings(client: Settings): Settings {
  const metric = { on: false };
  if (client.publishing) {
    return {
      ...client,
      backoff_policy: { max_attempts: 3, exponential_backoff: { initial: { seconds: 0, nanos: 10_000_000 }, max: { seconds: 1 }, multiplier: 2 } },
      publishing: { topics: client.publishing.topics, max_body_size: MAX_BODY_BYTES, validate_message_type: true },
      metric,
    };
  }
  const sub = client.subscription ?? { subscriptions: [] };
  return {
    ...client,
    backoff_policy: client.backoff_policy ?? { max_attempts: 17, customized_backoff: { next: CONSUMER_BACKOFF_S.map((s) => ({ seconds: s })) } },
    subscription: { ...sub, fifo: sub.fifo ?? false, receive_batch_size: 32, long_polling_timeout: { seconds: 20 } },
    metric,
  };
}

/** An empty group config's retry delays: 1 s, 5 s, 10 s, 30 s, 1 m … 10 m, 20 m, 30 m, 1 h, 2 h. */
const CONSUMER_BACKOFF_S = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200];

/** Each client's Settings as answered, by client id, kept while the Telemetry stream that set them is open. */
class ClientSettings {
  readonly #byId = new Map<string, { settings: Settings; stream: object }>();

  get(id: string): Settings | undefined {
    return this.#byId.get(id)?.settings;
  }
  set(id: string, settings: Settings, stream: object): void {
    this.#byId.set(id, { settings, stream });
  }
  delete(id: string): void {
    this.#byId.delete(id);
  }
  /** The stream closed: its client's settings go unless a newer stream set them since. */
  closed(id: string, stream: object): void {
    if (this.#byId.get(id)?.stream === stream) this.#byId.delete(id);
  }
  get size(): number {
    return this.#byId.size;
  }
}

type Unary<Req, Res> = (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void;

/** A unary handler that answers CLIENT_ID_REQUIRED first, and INTERNAL_SERVER_ERROR for anything thrown. */
function unary<Req, Res extends { status: Status }>(
  log: Logger,
  name: string,
  blank: (s: Status) => Res,
  run: (req: Req, clientId: string, peer: string) => Res | Promise<Res>,
): Unary<Req, Res> {
  return (call, callback) => {
    const clientId = clientIdOf(call.metadata);
    if (clientId === "") return callback(null, blank(NO_CLIENT_ID));
    Promise.resolve()
      .then(() => run(call.request, clientId, call.getPeer()))
      .then(
        (res) => callback(null, res),
        (e: unknown) => {
          log.error(`${name} from ${call.getPeer()}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
          callback(null, blank({ code: Code.INTERNAL_SERVER_ERROR, message: e instanceof Error ? e.message : String(e) }));
        },
      );
  };
}

export function messagingService(o: MessagingServiceOptions): UntypedServiceImplementation {
  const clients = new ClientSettings();
  const selector = new QueueSelector();
  const now = o.now ?? Date.now;
  const statusOnly = (status: Status): StatusResponse => ({ status });
  return {
    QueryRoute: unary<QueryRouteRequest, QueryRouteResponse>(
      o.log,
      "QueryRoute",
      (status) => ({ status, message_queues: [] }),
      (req) => queryRoute(o, req),
    ),
    Heartbeat: unary<HeartbeatRequest, StatusResponse>(o.log, "Heartbeat", statusOnly, (req, id) => {
      const s = clients.get(id);
      if (!s) return statusOnly(NO_SETTINGS);
      if (s.client_type === ClientType.PUSH_CONSUMER || s.client_type === ClientType.SIMPLE_CONSUMER)
        return statusOnly(groupProblem(req.group) ?? OK);
      return statusOnly(OK);
    }),
    SendMessage: unary<SendMessageRequest, SendMessageResponse>(
      o.log,
      "SendMessage",
      (status) => ({ status, entries: [] }),
      (req, _id, peer) => sendMessage(o.broker, selector, req, peer, now()),
    ),
    NotifyClientTermination: unary<NotifyClientTerminationRequest, StatusResponse>(o.log, "NotifyClientTermination", statusOnly, (req, id) => {
      const s = clients.get(id);
      if (!s) return statusOnly(NO_SETTINGS);
      clients.delete(id);
      if (s.subscription) return statusOnly(groupProblem(req.group) ?? OK);
      return statusOnly(OK);
    }),
    Telemetry: (call: ServerDuplexStream<TelemetryCommand, TelemetryCommand>) => telemetry(call, clients, o.log),
  };
}

function queryRoute(o: MessagingServiceOptions, req: QueryRouteRequest): QueryRouteResponse {
  const problem = topicProblem(req.topic);
  if (problem) return { status: problem, message_queues: [] };
  const topic = req.topic!.name;
  const tc = o.broker.topic(topic);
  if (!tc) return { status: { code: Code.TOPIC_NOT_FOUND, message: `topic ${topic} not found` }, message_queues: [] };
  const host = hostOf(o.broker.brokerAddr());
  const broker = { name: o.broker.brokerName(), id: 0, endpoints: { scheme: addressScheme(host), addresses: [{ host, port: o.port() }] } };
  return { status: OK, message_queues: routeQueues(topic, tc.readQueueNums, tc.writeQueueNums, tc.perm, broker) };
}

/** A Settings command's problem, as the stream's end: INVALID_ARGUMENT (a 400xx), like the proxy's. */
function settingsProblem(s: Settings): string | null {
  if (s.publishing) {
    for (const t of s.publishing.topics) {
      const p = topicProblem(t);
      if (p) return p.message;
    }
    return null;
  }
  if (s.subscription) {
    const p = groupProblem(s.subscription.group);
    if (p) return p.message;
    for (const e of s.subscription.subscriptions) {
      const t = topicProblem(e.topic);
      if (t) return t.message;
    }
    return null;
  }
  return "there is no publishing or subscription data in settings";
}

/**
 * The Telemetry stream: each Settings the client sends is checked, kept, and answered with the
 * server's Settings on the same stream; the other client commands are ignored for now; the
 * client's half-close completes the stream.
 */
function telemetry(call: ServerDuplexStream<TelemetryCommand, TelemetryCommand>, clients: ClientSettings, log: Logger): void {
  const clientId = clientIdOf(call.metadata);
  const stream = {};
  call.on("data", (cmd: TelemetryCommand) => {
    if (clientId === "") {
      call.write({ status: NO_CLIENT_ID });
      call.end();
      return;
    }
    if (cmd.command !== "settings" || !cmd.settings) return;
    const problem = settingsProblem(cmd.settings);
    if (problem) {
      call.emit("error", { code: GrpcStatus.INVALID_ARGUMENT, details: problem });
      return;
    }
    const settings = serverSettings(cmd.settings);
    clients.set(clientId, settings, stream);
    call.write({ status: OK, settings });
  });
  call.on("end", () => call.end());
  call.on("close", () => clients.closed(clientId, stream));
  call.on("error", (e: Error) => log.debug(`Telemetry from ${call.getPeer()}: ${e.message}`));
}
