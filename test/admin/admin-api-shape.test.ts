// The API's shape: every route names a scope and carries schemas (a closed querystring, a body
// schema on POSTs that take one, responses), and the committed OpenAPI document is the one the
// routes generate. Regenerate it with `COHORT_WRITE_OPENAPI=1 npx vitest run test/admin/admin-api-shape.test.ts`.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  ADMIN_SCOPES,
  adminOpenApiText,
  adminRoutes,
  buildAdminApi,
  STATUS_BY_CODE,
} from '../../src/admin/index.ts';
import { fixture, TOKENS } from './admin-fixture.ts';

const DOC = fileURLToPath(new URL('../../docs/openapi.json', import.meta.url));

describe('admin API shape', () => {
  it('every route names a scope and has its schemas', async () => {
    const app = buildAdminApi(fixture().deps, { tokens: TOKENS });
    await app.ready();
    const routes = adminRoutes(app);
    expect(routes.length).toBeGreaterThanOrEqual(20);
    const problems: string[] = [];
    for (const r of routes) {
      const where = `${r.method} ${r.url}`;
      if (r.scope === undefined || ![...ADMIN_SCOPES, 'public'].includes(r.scope))
        problems.push(`${where}: scope`);
      const schema = r.schema as Record<string, { additionalProperties?: boolean } | undefined> | undefined;
      if (schema?.response === undefined) problems.push(`${where}: response schema`);
      const responses = Object.keys(schema?.response ?? {});
      if (!responses.some((s) => /^2\d\d$/.test(s))) problems.push(`${where}: no 2xx response`);
      if (!responses.includes('4xx') || !responses.includes('5xx'))
        problems.push(`${where}: error responses`);
      if (schema?.querystring?.additionalProperties !== false) problems.push(`${where}: open querystring`);
      if (r.url.includes(':') && schema?.params?.additionalProperties !== false)
        problems.push(`${where}: params`);
      const security = (schema as { security?: unknown[] } | undefined)?.security;
      if (!Array.isArray(security) || (r.scope === 'public') !== (security.length === 0))
        problems.push(`${where}: OpenAPI security does not match its scope`);
    }
    // Every POST that reads a body closes it.
    for (const r of routes.filter((x) => x.method === 'POST' && !x.url.endsWith('/stop'))) {
      const body = (r.schema as { body?: { additionalProperties?: boolean } }).body;
      if (body?.additionalProperties !== false) problems.push(`POST ${r.url}: open body`);
    }
    expect(problems).toEqual([]);
    await app.close();
  });

  it('refuses to register a route without a scope', async () => {
    const app = buildAdminApi(fixture().deps, { tokens: TOKENS });
    app.register(async (scoped) => {
      scoped.get('/v1/unscoped', { schema: { response: { 200: { type: 'string' } } } }, async () => 'x');
    });
    await expect(app.ready()).rejects.toThrow(/scope/);
  });

  it('the committed docs/openapi.json is what the routes generate', async () => {
    const text = await adminOpenApiText(fixture().deps);
    if (process.env.COHORT_WRITE_OPENAPI === '1') writeFileSync(DOC, text);
    const committed = readFileSync(DOC, 'utf8');
    expect(JSON.parse(committed)).toEqual(JSON.parse(text));
    const doc = JSON.parse(text) as {
      paths: Record<string, Record<string, { security: unknown[]; responses: Record<string, unknown> }>>;
    };
    // OpenAPI writes path parameters in braces; the rollback route asks for the bearer scheme.
    expect(doc.paths['/v1/versions/rollback']?.post?.security).toEqual([{ bearer: [] }]);
    expect(doc.paths['/v1/health']?.get?.security).toEqual([]);
    expect(Object.keys(doc.paths)).toContain('/v1/rounds/{round}/abort');
  });

  it('maps every status it names to an error status', () => {
    for (const [code, status] of Object.entries(STATUS_BY_CODE)) {
      expect(status, code).toBeGreaterThanOrEqual(400);
    }
  });
});
