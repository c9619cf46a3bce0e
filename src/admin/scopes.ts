import type { CohortConfig } from '../config/index.ts';

/** Scopes a token may hold, widest first: admin ⊇ operator ⊇ auditor. */
export const ADMIN_SCOPES = ['admin', 'operator', 'auditor'] as const;

/** One of {@link ADMIN_SCOPES} (the configuration's `admin.tokens[].scopes`). */
export type AdminScope = NonNullable<CohortConfig['admin']>['tokens'][number]['scopes'][number] &
  (typeof ADMIN_SCOPES)[number];

/** What a route requires: a scope, or `public` (no token: health, readiness, the OpenAPI document). */
export type RouteScope = AdminScope | 'public';

const RANK: Readonly<Record<AdminScope, number>> = { admin: 3, operator: 2, auditor: 1 };

/** Whether a token holding `granted` may call a route requiring `required`. */
export function scopeAllows(granted: readonly AdminScope[], required: RouteScope): boolean {
  if (required === 'public') return true;
  return granted.some((g) => RANK[g] >= RANK[required]);
}
