import type { AuditReport } from '../audit/index.ts';

/** Problems and unchecked items a verify answer lists (the counts say how many there were). */
export const MAX_FINDINGS = 100;
/** Decided rounds a verify answer lists, the newest. */
export const MAX_ROUNDS = 1000;

/** The answer of `GET /v1/audit/verify` (schema `AUDIT_VERIFIED`): `report` with its lists bounded. */
export function verifiedJson(
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

/** The body of a verify answer. */
export type VerifiedJson = ReturnType<typeof verifiedJson>;
