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

/**
 * Called for a request that no token authenticates (no token, an unknown one, a public or unknown
 * route without one), before it is answered: the by-address budget; throws to refuse.
 */
export type UnauthenticatedCheck = (req: FastifyRequest, reply: FastifyReply) => void;

/**
 * The one `onRequest` hook that decides who may call: it runs before the body is read and
 * authenticates first: a presented bearer token is checked (SHA-256, compared with
 * every configured hash) and, when it matches, the caller is set (`req.adminCaller`, public routes
 * included, so that every authenticated request is limited by its token id alone) and the
 * route's `config.scope` is checked: 403 `FORBIDDEN` for a token without it. A request no token
 * authenticates goes through `unauthenticated` (the by-address budget, which may refuse it 429)
 * and then, on a route that needs a token, 401 `UNAUTHENTICATED`. A matched route without a scope
 * is refused (fail closed). Nothing is logged here: refusals are counted and summarized.
 */
export function installTokenAuth(
  app: FastifyInstance,
  tokens: readonly AdminToken[],
  unauthenticated: UnauthenticatedCheck,
): void {
  app.addHook('onRequest', async (req, reply) => {
    const presented = bearer(req.headers.authorization);
    const match = presented === undefined ? undefined : findToken(tokens, presented);
    const matched = req.routeOptions.url !== undefined;
    const scope = matched ? req.routeOptions.config.scope : undefined;
    if (match === undefined) {
      unauthenticated(req, reply);
      if (!matched) return; // no route: the not-found handler answers
      if (scope === undefined) throw new AdminApiError('FORBIDDEN', 'this route names no scope');
      if (scope === 'public') return;
      throw new AdminApiError(
        'UNAUTHENTICATED',
        presented === undefined
          ? 'a bearer token is required (Authorization: Bearer <token>)'
          : 'unknown token',
      );
    }
    if (!matched) return;
    if (scope === undefined) throw new AdminApiError('FORBIDDEN', 'this route names no scope');
    if (!scopeAllows(match.scopes, scope)) {
      throw new AdminApiError('FORBIDDEN', `token ${match.id} lacks the ${scope} scope`);
    }
    req.adminCaller = { tokenId: match.id, scopes: match.scopes, scope };
  });
}
