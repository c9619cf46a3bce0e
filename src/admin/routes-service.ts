import { AdminApiError } from './admin-error.ts';
import { addRoute, type RouteContext, required } from './route-kit.ts';
import { closed } from './schemas.ts';

/** Health, readiness, the OpenAPI document and the Prometheus metrics. */
export function registerServiceRoutes(ctx: RouteContext): void {
  const { deps } = ctx;
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/health',
    scope: 'public',
    tag: 'service',
    summary: 'Liveness: the API answers',
    response: { 200: closed({ status: { type: 'string', enum: ['ok'] } }) },
    handler: async () => ({ status: 'ok' }),
  });
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/ready',
    scope: 'public',
    tag: 'service',
    summary:
      'Readiness: the coordinator holds the lease and has read the log (503 before, and after it ended)',
    response: { 200: closed({ ready: { type: 'boolean' }, phase: { type: 'string' } }) },
    handler: async () => {
      const phase = deps.coordinator.stats().phase;
      if (phase === 'starting') throw new AdminApiError('NOT_STARTED', 'the coordinator is still starting');
      if (phase === 'done') throw new AdminApiError('STOPPED', 'the coordinator has ended its rounds');
      return { ready: true, phase };
    },
  });
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/openapi.json',
    scope: 'public',
    tag: 'service',
    summary: 'This API as an OpenAPI 3 document',
    response: { 200: { type: 'object', additionalProperties: true } },
    handler: async () => ctx.app.swagger(),
  });
  addRoute(ctx, {
    method: 'GET',
    url: '/metrics',
    scope: ctx.metricsScope,
    tag: 'service',
    summary: 'Prometheus metrics (text exposition format)',
    response: {
      200: { description: 'the exposition', content: { 'text/plain': { schema: { type: 'string' } } } },
    },
    handler: async (_req, reply) => {
      const metrics = required(deps.metrics, 'the metrics provider');
      const text = await metrics.text();
      return reply.header('content-type', metrics.contentType).send(text);
    },
  });
}
