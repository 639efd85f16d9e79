export { buildAdminApp, startAdminServer, type AdminAppDeps, type AdminReloadOutcome, type AdminServer, type AdminTls } from "./app.ts";
export { ApiError, API_ERRORS, type ApiErrorCode } from "./errors.ts";
