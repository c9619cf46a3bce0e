import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type RouteOptions } from 'fastify';
import { InvalidArgumentError } from '../errors/index.ts';
import { AddressLimiter } from './address-limiter.ts';
import type { AdminDeps } from './admin-deps.ts';
import { AdminApiError } from './admin-error.ts';
import { AuditJobSlots } from './audit-job-slots.ts';
import { type AdminAuditLimits, auditLimitsOf } from './audit-limits.ts';
import { installErrorHandler } from './error-handler.ts';
import { RefusalLog } from './refusal-log.ts';
import { type AdminRateLimits, type RouteContext, rateLimitKey } from './route-kit.ts';
import { registerAuditRoutes } from './routes-audit.ts';
import { registerDashboardRoutes } from './routes-dashboard.ts';
import { registerFederationRoutes } from './routes-federation.ts';
import { registerRoundRoutes } from './routes-rounds.ts';
import { registerRunRoutes } from './routes-runs.ts';
import { registerServiceRoutes } from './routes-service.ts';
import { registerVersionRoutes } from './routes-versions.ts';
import type { RouteScope } from './scopes.ts';
import { type AdminToken, installTokenAuth } from './token-auth.ts';

/** Version of the API in its OpenAPI document (the `/v1` of its paths). */
export const ADMIN_API_VERSION = '1.0.0';

/** Largest request body, bytes (an officer-signed change in base64 is at most ≈ 22 KB). */
export const ADMIN_BODY_LIMIT = 64 * 1024;

/** Default limits (`admin.rateLimit`'s defaults). */
export const DEFAULT_RATE_LIMITS: AdminRateLimits = Object.freeze({
  windowMs: 60_000,
  perIp: 600,
  perToken: 120,
  sensitive: 5,
});

/** Options of {@link buildAdminApi} (from the configuration's `admin` section). */
export interface AdminApiOptions {
  /** Tokens by id, SHA-256 and scopes (`admin.tokens`). */
  readonly tokens: readonly AdminToken[];
  readonly rateLimit?: Partial<AdminRateLimits>;
  /** Bounds of audit work (`admin.audit`; defaults `DEFAULT_AUDIT_LIMITS`). */
  readonly audit?: Partial<AdminAuditLimits>;
  /** Serve `GET /metrics` without a token (`admin.metricsPublic`). */
  readonly metricsPublic?: boolean;
  /** HTTPS with this PEM certificate and key (contents, not paths). */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /** Where request logs go (the coordinator's pino logger); none by default. */
  readonly logger?: FastifyBaseLogger;
}

/** A route as the API registered it (what the route-walking test inspects). */
export interface RegisteredRoute {
  readonly method: string;
  readonly url: string;
  readonly scope: RouteScope | undefined;
  readonly schema: RouteOptions['schema'];
}

const routesOf = new WeakMap<FastifyInstance, RegisteredRoute[]>();

/** Every route `app` registered, as its `onRoute` hook saw them (after `ready()`). */
export function adminRoutes(app: FastifyInstance): readonly RegisteredRoute[] {
  return routesOf.get(app) ?? [];
}

/**
 * Builds the admin API (docs/admin-api.md) over `deps`, unstarted: the coordinator command calls
 * `listen`, tests call `inject()`. Order matters and is fixed here: the error handler (which counts
 * every error answer by reason: the metrics' `events`, and a refusal log that writes a summary a
 * window, not a line a request; Fastify's own request logging is off); the OpenAPI generator
 * before any route; the per-token rate limit (route hooks, after authentication, keyed by the
 * token id alone; its own bucket, tighter, on sensitive routes; requests no token authenticated
 * skip it); on the root, so that no route escapes them, an `onRoute` hook that refuses a route
 * without scope or schema and the one `onRequest` hook (the bearer token first, then, for a
 * request no token authenticates, the by-address budget, before any body is read); then the
 * routes. Ajv never strips unknown fields (`removeAdditional: false`) nor coerces types: every
 * body and query schema is closed, so an unknown field is a 400 naming it.
 *
 * @throws InvalidArgumentError when a token is malformed (id, 64-hex SHA-256, scopes) or an audit
 *   bound is out of range.
 */
export function buildAdminApi(deps: AdminDeps, options: AdminApiOptions): FastifyInstance {
  for (const [i, t] of options.tokens.entries()) {
    if (
      typeof t.id !== 'string' ||
      t.id.length === 0 ||
      !/^[0-9a-f]{64}$/.test(t.sha256) ||
      t.scopes.length === 0
    ) {
      throw new InvalidArgumentError(`options.tokens[${i}] needs an id, a 64-hex sha256 and scopes`, {
        details: { name: `tokens[${i}]` },
      });
    }
  }
  const limits: AdminRateLimits = { ...DEFAULT_RATE_LIMITS, ...options.rateLimit };
  const audit = auditLimitsOf(options.audit);
  const events = deps.metrics?.events ?? {};
  const app = Fastify({
    ...(options.logger === undefined ? { logger: false } : { loggerInstance: options.logger }),
    ...(options.tls === undefined ? {} : { https: { cert: options.tls.cert, key: options.tls.key } }),
    bodyLimit: ADMIN_BODY_LIMIT,
    exposeHeadRoutes: false,
    // No "incoming request" / "request completed" line per request: a flood would write two each.
    disableRequestLogging: true,
    ajv: {
      customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: true, allErrors: false },
    },
  }) as unknown as FastifyInstance;
  const refusals = new RefusalLog(options.logger, limits.windowMs);
  installErrorHandler(app, (req, reason) => {
    events.refused?.(reason);
    refusals.record(reason, req.ip, req.routeOptions.url);
  });
  app.addHook('onClose', async () => refusals.flush());
  // Accepted requests at debug level only (the caller's token id, never its value).
  app.addHook('onResponse', async (req, reply) => {
    if (req.adminCaller !== undefined && reply.statusCode < 400) {
      req.log.debug(
        { tokenId: req.adminCaller.tokenId, route: req.routeOptions.url, status: reply.statusCode },
        'admin request',
      );
    }
  });
  app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Cohort admin API',
        version: ADMIN_API_VERSION,
        description:
          "The coordinator's operator API (docs/admin-api.md). Bearer tokens with scopes admin ⊇ operator ⊇ auditor; every mutating call is logged as a signed admin-action record naming its caller.",
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'a token from `cohort admin token`' },
        },
      },
    },
  });
  app.register(rateLimit, {
    global: true,
    max: limits.perToken,
    timeWindow: limits.windowMs,
    hook: 'onRequest',
    keyGenerator: rateLimitKey,
    // A request no token authenticated spent the by-address budget instead (token-auth.ts).
    allowList: (req) => req.adminCaller === undefined,
    errorResponseBuilder: (_req, c) =>
      new AdminApiError('RATE_LIMITED', `rate limit of this token exceeded, retry in ${c.after}`, {
        details: { bucket: 'token' },
      }),
  });
  const routes: RegisteredRoute[] = [];
  routesOf.set(app, routes);
  // On the root, so that no route anywhere in the app escapes the check or the token hook.
  app.addHook('onRoute', (route) => {
    const scope = route.config?.scope;
    if (scope === undefined || route.schema?.response === undefined) {
      throw new InvalidArgumentError(
        `route ${route.method} ${route.url} needs a scope and a response schema`,
      );
    }
    routes.push({ method: String(route.method), url: route.url, scope, schema: route.schema });
  });
  const byAddress = new AddressLimiter(limits.perIp, limits.windowMs);
  installTokenAuth(app, options.tokens, (req) => {
    const verdict = byAddress.take(req.ip);
    if (!verdict.allowed) {
      throw new AdminApiError(
        'RATE_LIMITED',
        `too many requests without a valid token from ${req.ip}, retry in ${verdict.retryAfterS} s`,
        { details: { bucket: 'address', retryAfterS: verdict.retryAfterS } },
      );
    }
  });
  const jobs = new AuditJobSlots(audit.maxJobs);
  app.register(async (scoped) => {
    const ctx: RouteContext = {
      app: scoped,
      deps,
      limits,
      metricsScope: options.metricsPublic === true ? 'public' : 'operator',
      audit,
      jobs,
      events,
    };
    registerServiceRoutes(ctx);
    registerFederationRoutes(ctx);
    registerRunRoutes(ctx);
    registerRoundRoutes(ctx);
    registerVersionRoutes(ctx);
    registerAuditRoutes(ctx);
    registerDashboardRoutes(ctx);
  });
  return app;
}
