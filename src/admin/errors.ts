/**
 * The admin API's error table: one stable code per failure, its HTTP status and a message
 * template. Routes throw ApiError; the app's single onError turns it into
 * `{"error":{"code":"...","message":"..."}}`. A bad request is always a 4xx with a JSON body.
 */
import type { RefusalKind } from "../broker/index.ts";

export const API_ERRORS = {
  NOT_FOUND: { status: 404, message: "no such endpoint: {path}" },
  METHOD_NOT_ALLOWED: { status: 405, message: "method not allowed" },
  TOPIC_NOT_EXIST: { status: 404, message: "no route for topic {topic}" },
  TOPIC_NOT_FOUND: { status: 404, message: "topic {topic} does not exist on this broker" },
  GROUP_NOT_FOUND: { status: 404, message: "consumer group {group} is not known to this broker" },
  MESSAGE_NOT_FOUND: { status: 404, message: "{detail}" },
  NOT_FOUND_HERE: { status: 404, message: "{detail}" },
  BAD_REQUEST: { status: 400, message: "{detail}" },
  CONFIG_NEEDS_RESTART: { status: 400, message: "{detail}" },
  TOPIC_EXISTS: { status: 409, message: "topic {topic} exists already: change it with PUT /topics/{topic}" },
  GROUP_EXISTS: { status: 409, message: "group {group} exists already: change it with PUT /groups/{group}" },
  REFUSED: { status: 409, message: "{detail}" },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: "send the body as application/json" },
  UNAUTHORIZED: { status: 401, message: "{detail}: send the header 'Authorization: Bearer <admin token>'" },
  ADMIN_TOKEN_NOT_CONFIGURED: {
    status: 403,
    message: "{method} {path} changes state and needs an admin token; none is configured (set admin.token or admin.tokenFile)",
  },
  RELOAD_REFUSED: { status: 422, message: "the configuration was not reloaded: {detail}" },
  UNAVAILABLE: { status: 503, message: "{detail}" },
  INTERNAL: { status: 500, message: "internal error: {detail}" },
} as const;

export type ApiErrorCode = keyof typeof API_ERRORS;

export class ApiError extends Error {
  override name = "ApiError";
  readonly code: ApiErrorCode;
  readonly status: number;

  constructor(code: ApiErrorCode, params: Record<string, string> = {}) {
    const spec = API_ERRORS[code];
    super(spec.message.replace(/\{(\w+)\}/g, (_, k: string) => params[k] ?? ""));
    this.code = code;
    this.status = spec.status;
  }
}

/** The API error of a refused shared operation (src/broker's OpRefusal), by its kind; the wire remark is the message. */
export function refusalError(kind: RefusalKind, remark: string): ApiError {
  const code = ({ invalid: "BAD_REQUEST", not_found: "NOT_FOUND_HERE", conflict: "REFUSED", unavailable: "UNAVAILABLE" } as const)[kind];
  return new ApiError(code, { detail: remark });
}
