export type {
  AdminCoordinator,
  AdminDeps,
  AdminDownload,
  AdminHistory,
  AdminMetrics,
  VerifyLogOptions,
} from './admin-deps.ts';
export { AdminApiError } from './admin-error.ts';
export { generateAdminToken, type NewAdminToken, TOKEN_BYTES } from './admin-token.ts';
export {
  ADMIN_API_VERSION,
  ADMIN_BODY_LIMIT,
  type AdminApiOptions,
  adminRoutes,
  buildAdminApi,
  DEFAULT_RATE_LIMITS,
  type RegisteredRoute,
} from './build-admin-api.ts';
export { type CoordinatorDepsInput, coordinatorAdminDeps, logHistorySource } from './coordinator-deps.ts';
export { type ErrorBody, STATUS_BY_CODE } from './error-handler.ts';
export { adminOpenApiText } from './openapi-document.ts';
export type { AdminRateLimits } from './route-kit.ts';
export { DASHBOARD_CSP } from './routes-dashboard.ts';
export { ADMIN_SCOPES, type AdminScope, type RouteScope, scopeAllows } from './scopes.ts';
export { type ServedAdminApi, serveAdminApi } from './serve-admin-api.ts';
export { type AdminCaller, type AdminToken, findToken, hashToken } from './token-auth.ts';
