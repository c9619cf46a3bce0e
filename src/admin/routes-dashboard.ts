import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AdminApiError } from './admin-error.ts';
import { addRoute, type RouteContext } from './route-kit.ts';
import { WHOAMI } from './schemas.ts';

/**
 * The dashboard's Content-Security-Policy: its own script and style only, no inline code, calls to
 * this API only, no framing, no form submission, images only as data URLs (the favicon).
 */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Headers of every dashboard file. */
const DASHBOARD_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': DASHBOARD_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
});

/** The dashboard's files (src/admin/dashboard), by the path they are served under. */
const FILES = [
  { url: '/dashboard/', file: 'index.html', type: 'text/html; charset=utf-8', what: 'the page' },
  { url: '/dashboard', file: 'index.html', type: 'text/html; charset=utf-8', what: 'the page' },
  {
    url: '/dashboard/dashboard.js',
    file: 'dashboard.js',
    type: 'text/javascript; charset=utf-8',
    what: 'its script',
  },
  {
    url: '/dashboard/dashboard.css',
    file: 'dashboard.css',
    type: 'text/css; charset=utf-8',
    what: 'its style',
  },
] as const;

/**
 * The operator dashboard (docs/admin-api.md, "Dashboard"): one static page, read once when the API
 * is built, served without a token (it holds no data; it asks for a token and reads the auditor
 * routes with it) under {@link DASHBOARD_CSP}; and `GET /v1/whoami`, which tells the page what the
 * token may do so it shows only the controls the API would accept.
 */
export function registerDashboardRoutes(ctx: RouteContext): void {
  for (const f of FILES) {
    const body = readFileSync(fileURLToPath(new URL(`./dashboard/${f.file}`, import.meta.url)), 'utf8');
    addRoute(ctx, {
      method: 'GET',
      url: f.url,
      scope: 'public',
      tag: 'dashboard',
      summary: `The operator dashboard: ${f.what} (static; the page asks for a token)`,
      response: {
        200: { description: f.file, content: { [f.type.split(';')[0]!]: { schema: { type: 'string' } } } },
      },
      handler: async (_req, reply) => reply.headers(DASHBOARD_HEADERS).type(f.type).send(body),
    });
  }
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/whoami',
    scope: 'auditor',
    tag: 'service',
    summary: "The presented token's id and scopes (what the dashboard may offer)",
    response: { 200: WHOAMI },
    handler: async (req) => {
      const caller = req.adminCaller;
      if (caller === undefined) throw new AdminApiError('UNAUTHENTICATED', 'no caller');
      return { tokenId: caller.tokenId, scopes: [...caller.scopes] };
    },
  });
}
