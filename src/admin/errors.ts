/**
 * The admin API's error table: one stable code per failure, its HTTP status and a message
 * template. Routes throw ApiError; the app's single onError turns it into
 * `{"error":{"code":"...","message":"..."}}`. A bad request is always a 4xx with a JSON body.
 */
export const API_ERRORS = {
  NOT_FOUND: { status: 404, message: "no such endpoint: {path}" },
  METHOD_NOT_ALLOWED: { status: 405, message: "method not allowed" },
  TOPIC_NOT_EXIST: { status: 404, message: "no route for topic {topic}" },
  TOPIC_NOT_FOUND: { status: 404, message: "topic {topic} does not exist on this broker" },
  GROUP_NOT_FOUND: { status: 404, message: "consumer group {group} is not known to this broker" },
  BAD_REQUEST: { status: 400, message: "{detail}" },
  UNAUTHORIZED: { status: 401, message: "{detail}: send the header 'Authorization: Bearer <admin token>'" },
  ADMIN_TOKEN_NOT_CONFIGURED: {
    status: 403,
    message: "{method} {path} changes state and needs an admin token; none is configured (set admin.token or admin.tokenFile)",
  },
  RELOAD_REFUSED: { status: 422, message: "the configuration was not reloaded: {detail}" },
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
