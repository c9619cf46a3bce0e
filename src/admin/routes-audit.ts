import type { AuditReport } from '../audit/index.ts';
import { addRoute, type RouteContext, required } from './route-kit.ts';
import { AUDIT_VERIFIED, BINARY } from './schemas.ts';

/** Problems and unchecked items a verify answer lists (the counts say how many there were). */
const MAX_FINDINGS = 100;
/** Decided rounds a verify answer lists, the newest. */
const MAX_ROUNDS = 1000;

/** The answer of `GET /v1/audit/verify`: `report` with its lists bounded. */
function verifiedJson(
  report: AuditReport,
  skipAggregates: boolean,
  startedUnixMs: number,
  durationMs: number,
) {
  const finding = (f: { sequence: number; code: string; message: string }) => ({
    sequence: f.sequence,
    code: f.code,
    message: f.message,
  });
  return {
    verified: report.verified,
    federation: report.federation,
    registry: report.registry,
    genesis: report.genesis,
    head: { hash: report.head.hash, height: report.head.height, sequence: report.head.sequence },
    entries: report.entries,
    lastEntry:
      report.lastEntry === null ? null : { sequence: report.lastEntry.sequence, hash: report.lastEntry.hash },
    historyThrough: report.historyThrough,
    // Every count the report has (src/audit adds checks over time); numbers only.
    checked: Object.fromEntries(Object.entries(report.checked).filter(([, n]) => Number.isInteger(n))),
    problemCount: report.problems.length,
    problems: report.problems.slice(0, MAX_FINDINGS).map(finding),
    uncheckedCount: report.unchecked.length,
    unchecked: report.unchecked.slice(0, MAX_FINDINGS).map(finding),
    rounds: report.rounds.slice(-MAX_ROUNDS).map((r) => ({
      round: r.round,
      sequence: r.sequence,
      outcome: r.outcome,
      kind: r.kind,
      commit: r.commit,
      height: r.height,
      aggregate: r.aggregate,
    })),
    aggregatesSkipped: skipAggregates,
    startedUnixMs,
    durationMs,
  };
}

/** The audit bundle and the audit of the live log (both built by src/audit). */
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
  // One audit at a time per option: concurrent callers (dashboards) share the one in progress.
  const running = new Map<boolean, Promise<ReturnType<typeof verifiedJson>>>();
  addRoute(ctx, {
    method: 'GET',
    url: '/v1/audit/verify',
    scope: 'auditor',
    tag: 'audit',
    summary:
      'Audit the live log as `cohort audit verify` does (signatures, chain, history rules, aggregates unless aggregates=false) and summarize the report',
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
    handler: async (req) => {
      const verify = required(ctx.deps.verifyLog, 'the log audit (src/audit)');
      const skipAggregates = (req.query as { aggregates?: string }).aggregates === 'false';
      let run = running.get(skipAggregates);
      if (run === undefined) {
        const now = ctx.deps.now ?? Date.now;
        const started = now();
        run = verify({ skipAggregates }).then((report) =>
          verifiedJson(report, skipAggregates, started, Math.max(0, now() - started)),
        );
        running.set(skipAggregates, run);
        const clear = () => running.delete(skipAggregates);
        run.then(clear, clear);
      }
      return run;
    },
  });
}
