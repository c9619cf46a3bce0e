export { AddressLimiter, MAX_TRACKED_ADDRESSES } from './address-limiter.ts';
export type {
  AdminApiEvents,
  AdminCoordinator,
  AdminDeps,
  AdminDownload,
  AdminHistory,
  AdminMetrics,
  AdminStream,
  AuditBundleRequest,
  AuditJobOutcome,
  VerifyLogOptions,
} from './admin-deps.ts';
export { AdminApiError } from './admin-error.ts';
export { ADMIN_REFUSAL_REASONS, type AdminRefusalReason, refusalReason } from './admin-refusals.ts';
export { generateAdminToken, type NewAdminToken, TOKEN_BYTES } from './admin-token.ts';
export { AUDIT_RETRY_AFTER_S, type AuditJobSlot, AuditJobSlots } from './audit-job-slots.ts';
export {
  type AdminAuditLimits,
  auditLimitsOf,
  DEFAULT_AUDIT_LIMITS,
  MAX_AUDIT_JOBS,
} from './audit-limits.ts';
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
export { type AdminSection, type ServedAdminApi, serveAdminApi } from './serve-admin-api.ts';
export { type AdminCaller, type AdminToken, findToken, hashToken } from './token-auth.ts';
