import type { AdminDeps } from './admin-deps.ts';
import { buildAdminApi } from './build-admin-api.ts';

/**
 * The API's OpenAPI document as `docs/openapi.json` holds it: built from the routes with the
 * default options (metrics behind the operator scope), formatted with two-space indents.
 */
export async function adminOpenApiText(deps: AdminDeps): Promise<string> {
  const app = buildAdminApi(deps, { tokens: [] });
  try {
    await app.ready();
    return `${JSON.stringify(app.swagger(), null, 2)}\n`;
  } finally {
    await app.close();
  }
}
