import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { canonicalJson } from '../data/index.ts';
import type { AdminApiEvents, AdminDeps } from './admin-deps.ts';
import { AdminApiError } from './admin-error.ts';
import type { AuditJobSlots } from './audit-job-slots.ts';
import type { AdminAuditLimits } from './audit-limits.ts';
import { ERROR_SCHEMA } from './error-handler.ts';
import type { RouteScope } from './scopes.ts';

/** Request limits of the API (`admin.rateLimit`). */
export interface AdminRateLimits {
  /** Window of every limit, ms. */
  readonly windowMs: number;
  /**
   * Requests per window by client address that no token authenticates (no token, an unknown
   * one, public routes without one); a request a token authenticates never counts here.
   */
  readonly perIp: number;
  /** Requests per window by token (its id), over all routes but the sensitive ones. */
  readonly perToken: number;
  /** Requests per window by token on each sensitive route (rollback, key rotation). */
  readonly sensitive: number;
}

/** What route modules register with. */
export interface RouteContext {
  readonly app: FastifyInstance;
  readonly deps: AdminDeps;
  readonly limits: AdminRateLimits;
  /** Scope of `GET /metrics` (`public` with `admin.metricsPublic`). */
  readonly metricsScope: RouteScope;
  /** Bounds of audit work (`admin.audit`). */
  readonly audit: AdminAuditLimits;
  /** Who runs audit jobs now (one per token, `audit.maxJobs` in all). */
  readonly jobs: AuditJobSlots;
  /** Where refusals and audit jobs are reported (the metrics'; empty without). */
  readonly events: AdminApiEvents;
}

/** One route of the API: where, who may call, what it takes and answers. */
export interface AdminRoute {
  readonly method: 'GET' | 'POST';
  readonly url: string;
  readonly scope: RouteScope;
  readonly summary: string;
  readonly tag: string;
  readonly params?: object;
  readonly querystring?: object;
  readonly body?: object;
  /** Success answers by status (error answers are added: {@link ERROR_SCHEMA}). */
  readonly response: Readonly<Record<number, object>>;
  /** A sensitive route gets its own, tighter per-token limit (rollback, key rotation). */
  readonly sensitive?: boolean;
  readonly handler: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

/** The rate-limit key of a request: its token id once authenticated, else its address. */
export function rateLimitKey(req: FastifyRequest): string {
  return req.adminCaller === undefined ? `ip:${req.ip}` : `token:${req.adminCaller.tokenId}`;
}

/** Registers `route`: its scope in `config`, its schemas (errors included) and OpenAPI security. */
export function addRoute(ctx: RouteContext, route: AdminRoute): void {
  const options: RouteOptions = {
    method: route.method,
    url: route.url,
    config: {
      scope: route.scope,
      ...(route.sensitive === true
        ? {
            rateLimit: {
              max: ctx.limits.sensitive,
              timeWindow: ctx.limits.windowMs,
              keyGenerator: rateLimitKey,
              groupId: route.url,
            },
          }
        : {}),
    },
    schema: {
      summary: route.summary,
      description: `Scope: ${route.scope}${route.sensitive === true ? ' (tighter rate limit)' : ''}.`,
      tags: [route.tag],
      security: route.scope === 'public' ? [] : [{ bearer: [] }],
      ...(route.params === undefined ? {} : { params: route.params }),
      // A route without query parameters still refuses unknown ones.
      querystring: route.querystring ?? { type: 'object', additionalProperties: false, properties: {} },
      ...(route.body === undefined ? {} : { body: route.body }),
      response: { ...route.response, '4xx': ERROR_SCHEMA, '5xx': ERROR_SCHEMA },
    },
    handler: route.handler,
  };
  ctx.app.route(options);
}

/**
 * Appends the signed admin-action record of `req` (its caller's token id and the route's scope)
 * before the action is carried out; resolves with the record's log sequence. `args` are the
 * validated request arguments, stored as canonical JSON.
 */
export async function recordAction(
  ctx: RouteContext,
  req: FastifyRequest,
  action: string,
  target: string,
  args: Record<string, unknown>,
): Promise<number> {
  const caller = req.adminCaller;
  if (caller === undefined) throw new AdminApiError('UNAUTHENTICATED', 'no caller');
  return ctx.deps.coordinator.appendAdminAction({
    action,
    caller: caller.tokenId,
    scope: caller.scope,
    target,
    arguments: new TextEncoder().encode(canonicalJson(args)),
    unixMs: (ctx.deps.now ?? Date.now)(),
  });
}

/** The caller's token id (routes that need a token always have one). */
export function callerId(req: FastifyRequest): string {
  return req.adminCaller?.tokenId ?? 'unknown';
}

/** An optional slot of the deps, or 501 `NOT_CONFIGURED` naming what is missing. */
export function required<T>(value: T | undefined, what: string): T {
  if (value === undefined)
    throw new AdminApiError('NOT_CONFIGURED', `${what} is not configured on this coordinator`);
  return value;
}
