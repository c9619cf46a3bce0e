import { logItems, logJson, resolveRef, showJson } from '../history/index.ts';
import { ADMIN_ACTION_ROLLBACK } from '../services/federation-log/index.ts';
import { bytesToHex } from '../versions/index.ts';
import { AdminApiError } from './admin-error.ts';
import { addRoute, type RouteContext, recordAction, required } from './route-kit.ts';
import {
  ABORT,
  BINARY,
  COMMIT,
  COMMIT_DETAIL,
  COUNT_TEXT,
  closed,
  REASON,
  REF,
  ROLLBACK_QUEUED,
} from './schemas.ts';

const REF_PARAMS = closed({ ref: REF });

/** Versions as `cohort versions` shows them: log, show, export; and rollback. */
export function registerVersionRoutes(ctx: RouteContext): void {
  const { deps } = ctx;
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/versions',
    scope: 'auditor',
    tag: 'versions',
    summary: 'The chain, newest first (`cohort versions log --json`); all=true adds ABORTed rounds',
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: { limit: COUNT_TEXT, all: { type: 'string', enum: ['true', 'false'] } },
    },
    response: { 200: { type: 'array', items: { oneOf: [COMMIT, ABORT] } } },
    handler: async (req) => {
      const q = req.query as { limit?: string; all?: string };
      const timeline = await deps.history.timeline();
      const items = logItems(timeline, {
        all: q.all === 'true',
        ...(q.limit === undefined ? {} : { limit: Number(q.limit) }),
      });
      return logJson(timeline, items);
    },
  });
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/versions/:ref',
    scope: 'auditor',
    tag: 'versions',
    summary: 'One commit in full (`cohort versions show --json`)',
    params: REF_PARAMS,
    response: { 200: COMMIT_DETAIL },
    handler: async (req) => {
      const timeline = await deps.history.timeline();
      return showJson(timeline, resolveRef(timeline.history, (req.params as { ref: string }).ref));
    },
  });
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/versions/:ref/export',
    scope: 'operator',
    tag: 'versions',
    summary: "A commit's model as safetensors, from the site model store configured as admin.modelStore",
    params: REF_PARAMS,
    response: {
      200: { description: 'safetensors', content: { 'application/octet-stream': { schema: BINARY } } },
    },
    handler: async (req, reply) => {
      const exportModel = required(deps.exportModel, 'model export (admin.modelStore)');
      const timeline = await deps.history.timeline();
      const commit = resolveRef(timeline.history, (req.params as { ref: string }).ref);
      const file = await exportModel(commit, timeline);
      return reply
        .header('content-type', file.contentType)
        .header('content-disposition', `attachment; filename="${file.fileName}"`)
        .send(Buffer.from(file.bytes));
    },
  });
  addRoute(ctx, {
    method: 'POST',
    url: '/v1/versions/rollback',
    scope: 'admin',
    tag: 'versions',
    summary: 'Roll back to an earlier commit: a rollback round decided by 2PC (queued; 202)',
    sensitive: true,
    body: { ...closed({ target: REF, reason: REASON }), required: ['target'] },
    response: { 202: ROLLBACK_QUEUED },
    handler: async (req, reply) => {
      const body = req.body as { target: string; reason?: string };
      const timeline = await deps.history.timeline();
      const target = resolveRef(timeline.history, body.target);
      if (target.commit.height >= timeline.head.commit.height) {
        throw new AdminApiError(
          'ROLLBACK_REFUSED',
          `${body.target} is the head (@${target.commit.height}), not an earlier commit`,
        );
      }
      const hash = bytesToHex(target.commit.hash);
      const reason = body.reason ?? '';
      const actionSequence = await recordAction(ctx, req, ADMIN_ACTION_ROLLBACK, hash, {
        target: hash,
        ref: body.target,
        reason,
      });
      await deps.coordinator.queueRollback(target.commit.hash, reason);
      return reply
        .code(202)
        .send({ queued: true, target: hash, height: target.commit.height, actionSequence });
    },
  });
}
