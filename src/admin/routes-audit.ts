import type { FastifyReply } from 'fastify';
import type { AdminStream } from './admin-deps.ts';
import { AdminApiError } from './admin-error.ts';
import { AuditJobRun } from './audit-job-run.ts';
import { verifiedJson } from './audit-verify-answer.ts';
import { AuditVerifyCache } from './audit-verify-cache.ts';
import { byteLimit } from './byte-limit.ts';
import { addRoute, type RouteContext, required } from './route-kit.ts';
import { AUDIT_VERIFIED, BINARY } from './schemas.ts';
import { type AdminScope, scopeAllows } from './scopes.ts';

/** Calls `onLeft` when the client goes away before its answer is complete. */
function whenClientLeaves(reply: FastifyReply, onLeft: () => void): void {
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) onLeft();
  });
}

/** A job of `tokenId`: its slot (429/503 when none is free), its time bound, its signal. */
function startJob(ctx: RouteContext, tokenId: string, kind: 'bundle' | 'verify'): AuditJobRun {
  return new AuditJobRun(kind, ctx.jobs.acquire(tokenId), ctx.audit.timeoutMs, ctx.events);
}

/**
 * Whether `scopes` may export the stored contributions: always in `he` mode (ciphertexts); in
 * `plain` mode (or an unknown one) they are the sites' updates in the clear, for
 * `admin.audit.plainContributions` and wider only.
 */
function mayExportContributions(ctx: RouteContext, scopes: readonly AdminScope[]): boolean {
  if (ctx.deps.aggregation?.mode === 'he') return true;
  return scopeAllows(scopes, ctx.audit.plainContributions);
}

/**
 * The audit bundle and the audit of the live log (both built by src/audit, run by the deps outside
 * the coordinator's event loop). Each request that needs a job takes one of `ctx.jobs` (one per
 * token, `admin.audit.maxJobs` in all), is stopped when its client leaves or a bound is reached,
 * and is reported to the metrics with its outcome.
 */
export function registerAuditRoutes(ctx: RouteContext): void {
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/audit/bundle',
    scope: 'auditor',
    tag: 'audit',
    summary:
      'Export the audit bundle (the log, aggregates, and the stored contributions where the scope may have them), streamed',
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        contributions: {
          type: 'string',
          enum: ['true', 'false'],
          description:
            "include the stored contributions (default: when the caller's scope may: always in he mode; in plain mode, where they are plaintext updates, admin.audit.plainContributions and wider, admin by default); true from a narrower scope is 403",
        },
      },
    },
    response: {
      200: { description: 'the bundle', content: { 'application/octet-stream': { schema: BINARY } } },
    },
    handler: async (req, reply) => {
      const exportBundle = required(ctx.deps.exportAuditBundle, 'the audit bundle (src/audit)');
      const caller = req.adminCaller!;
      const asked = (req.query as { contributions?: string }).contributions;
      const allowed = mayExportContributions(ctx, caller.scopes);
      if (asked === 'true' && !allowed) {
        throw new AdminApiError(
          'FORBIDDEN',
          `in plain mode the stored contributions are the sites' updates in the clear: the ${ctx.audit.plainContributions} scope (admin.audit.plainContributions) may export them, token ${caller.tokenId} may not`,
        );
      }
      const run = startJob(ctx, caller.tokenId, 'bundle');
      whenClientLeaves(reply, () => run.stop('cancelled', 'the client left'));
      let download: AdminStream;
      try {
        download = await exportBundle({ contributions: asked !== 'false' && allowed, signal: run.signal });
      } catch (err) {
        throw run.errorFor(err);
      }
      if (run.outcome !== undefined) {
        // Stopped while it started (the client left, the time bound): nothing to send.
        download.body.destroy();
        throw run.errorFor(new AdminApiError('AUDIT_JOB_ABORTED', 'the audit job was stopped'));
      }
      const limited = byteLimit(ctx.audit.maxBundleBytes, () =>
        run.stop('too_large', `the bundle passed admin.audit.maxBundleBytes (${ctx.audit.maxBundleBytes})`),
      );
      // A job that fails mid-bundle cuts the answer off (no trailer): never taken for a whole one.
      download.body.once('error', (err) => {
        run.end('failed');
        limited.destroy(err);
      });
      download.body.pipe(limited);
      reply.raw.once('finish', () => run.end('completed'));
      return reply
        .header('content-type', download.contentType)
        .header('content-disposition', `attachment; filename="${download.fileName}"`)
        .send(limited);
    },
  });
  const audits = new AuditVerifyCache();
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/audit/verify',
    scope: 'auditor',
    tag: 'audit',
    summary:
      'Audit the live log as `cohort audit verify` does (signatures, chain, history rules, aggregates unless aggregates=false) and summarize the report; answered from the last audit while the log head has not moved',
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        aggregates: {
          type: 'string',
          enum: ['true', 'false'],
          description: 'read and check every aggregate (default true)',
        },
      },
    },
    response: { 200: AUDIT_VERIFIED },
    handler: async (req, reply) => {
      const verify = required(ctx.deps.verifyLog, 'the log audit (src/audit)');
      const skipAggregates = (req.query as { aggregates?: string }).aggregates === 'false';
      const head = ctx.deps.coordinator.stats().logSequence;
      const cached = audits.cached(skipAggregates, head);
      if (cached !== undefined) return cached;
      const now = ctx.deps.now ?? Date.now;
      const joined = audits.join(skipAggregates, head, () => {
        const run = startJob(ctx, req.adminCaller!.tokenId, 'verify');
        const started = now();
        const answer = verify({ skipAggregates, signal: run.signal }).then(
          (report) => verifiedJson(report, skipAggregates, started, Math.max(0, now() - started)),
          (err: unknown) => {
            throw run.errorFor(err);
          },
        );
        return { run, answer };
      });
      whenClientLeaves(reply, joined.leave);
      return joined.answer;
    },
  });
}
