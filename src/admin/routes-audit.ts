import { addRoute, type RouteContext, required } from './route-kit.ts';
import { BINARY } from './schemas.ts';

/** The audit bundle (built by src/audit). */
export function registerAuditRoutes(ctx: RouteContext): void {
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/audit/bundle',
    scope: 'auditor',
    tag: 'audit',
    summary: 'Export the audit bundle (the verified log and what an auditor needs to check it)',
    response: {
      200: { description: 'the bundle', content: { 'application/octet-stream': { schema: BINARY } } },
    },
    handler: async (_req, reply) => {
      const bundle = await required(ctx.deps.exportAuditBundle, 'the audit bundle (src/audit)')();
      return reply
        .header('content-type', bundle.contentType)
        .header('content-disposition', `attachment; filename="${bundle.fileName}"`)
        .send(Buffer.from(bundle.bytes));
    },
  });
}
