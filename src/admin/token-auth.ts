import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AdminApiError } from './admin-error.ts';
import { type AdminScope, type RouteScope, scopeAllows } from './scopes.ts';

/** A configured token: its id, the SHA-256 of its value, its scopes. */
export interface AdminToken {
  readonly id: string;
  /** SHA-256 of the token, 64 lowercase hex digits. */
  readonly sha256: string;
  readonly scopes: readonly AdminScope[];
}

/** Who is calling: the token's id and scopes (never its value). */
export interface AdminCaller {
  readonly tokenId: string;
  readonly scopes: readonly AdminScope[];
  /** The scope the route required. */
  readonly scope: RouteScope;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (see `scopes.ts`); every route names one. */
    scope?: RouteScope;
  }
  interface FastifyRequest {
    /** Set by the authentication hook on routes that need a token. */
    adminCaller?: AdminCaller;
  }
}

/** SHA-256 of a token, hex (what `admin.tokens[].sha256` holds). */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Longest `Authorization` header value looked at, characters. */
const MAX_AUTHORIZATION = 512;

/** The bearer token of `Authorization: Bearer <token>`, or undefined. */
function bearer(header: string | undefined): string | undefined {
  if (typeof header !== 'string' || header.length > MAX_AUTHORIZATION) return undefined;
  const m = /^Bearer +([!-~]+) *$/i.exec(header);
  return m?.[1];
}

/**
 * The token whose hash matches `token`, compared with `timingSafeEqual` against every configured
 * hash (no early exit), so the time taken does not tell how much of a hash matched.
 */
export function findToken(tokens: readonly AdminToken[], token: string): AdminToken | undefined {
  const presented = createHash('sha256').update(token, 'utf8').digest();
  let found: AdminToken | undefined;
  for (const t of tokens) {
    const expected = Buffer.from(t.sha256, 'hex');
    if (expected.length === presented.length && timingSafeEqual(expected, presented)) found ??= t;
  }
  return found;
}

/** A check run before authentication (the by-address rate limit); throws to refuse. */
export type PreAuthCheck = (req: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * The one `onRequest` hook that decides who may call (STYLE §1.2): it runs before the body is
 * read, applies `preAuth` (the by-address rate limit), then checks the bearer token against the
 * route's `config.scope`: 401 `UNAUTHENTICATED` for a missing or unknown token, 403 `FORBIDDEN`
 * for one without the scope. A matched route without a scope is refused (fail closed). Logs name
 * the token id only.
 */
export function installTokenAuth(
  app: FastifyInstance,
  tokens: readonly AdminToken[],
  preAuth: PreAuthCheck,
): void {
  app.addHook('onRequest', async (req, reply) => {
    await preAuth(req, reply);
    if (req.routeOptions.url === undefined) return; // no route: the not-found handler answers
    const scope = req.routeOptions.config.scope;
    if (scope === undefined) throw new AdminApiError('FORBIDDEN', 'this route names no scope');
    if (scope === 'public') return;
    const token = bearer(req.headers.authorization);
    if (token === undefined) {
      throw new AdminApiError(
        'UNAUTHENTICATED',
        'a bearer token is required (Authorization: Bearer <token>)',
      );
    }
    const match = findToken(tokens, token);
    if (match === undefined) {
      req.log.info({ route: req.routeOptions.url }, 'admin request with an unknown token');
      throw new AdminApiError('UNAUTHENTICATED', 'unknown token');
    }
    if (!scopeAllows(match.scopes, scope)) {
      req.log.info({ tokenId: match.id, route: req.routeOptions.url, scope }, 'admin request refused: scope');
      throw new AdminApiError('FORBIDDEN', `token ${match.id} lacks the ${scope} scope`);
    }
    req.adminCaller = { tokenId: match.id, scopes: match.scopes, scope };
    req.log.debug({ tokenId: match.id, route: req.routeOptions.url }, 'admin request');
  });
}
