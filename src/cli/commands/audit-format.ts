import type { AuditReport } from '../../audit/index.ts';
import { auditIncomplete } from '../../audit/index.ts';
import { alignColumns, isoDate, plural, printable } from './versions-format.ts';

/** `result` line's verdict: `verified`, `N problem(s)`, or `incomplete` (no problem, some aggregate unread). */
export function auditVerdict(report: AuditReport): string {
  if (report.problems.length > 0) return plural(report.problems.length, 'problem');
  return auditIncomplete(report) ? 'incomplete' : 'verified';
}

/**
 * `cohort audit verify`'s lines: a summary (federation, source, trusted registry and genesis,
 * entries, head, rounds, the checks made), then one `unchecked` line per check not made and one
 * `problem` line per problem (`entry <sequence>  <CODE>  <message>`), then `result`.
 */
export function auditLines(report: AuditReport): string[] {
  const s = report.source;
  const source =
    s.kind === 'live'
      ? `live log ${s.stream}${s.member === null ? '' : ` as ${s.member}`}`
      : `bundle of ${s.stream}${s.member === null ? '' : ` exported by ${s.member}`} at ${isoDate(s.exportedUnixMs)}, ${s.sealedBy === null ? 'not sealed by its exporter' : `sealed by ${s.sealedBy}`}`;
  const commits = report.rounds.filter((r) => r.outcome === 'commit').length;
  const c = report.checked;
  const rows: string[][] = [
    ['federation', printable(report.federation)],
    ['source', printable(source)],
    ['registry', report.registry],
    ['genesis', report.genesis],
    [
      'entries',
      report.lastEntry === null
        ? '0'
        : `${report.entries} (last ${report.lastEntry.sequence}, ${report.lastEntry.hash.slice(0, 12)})`,
    ],
    [
      'head',
      `@${report.head.height} ${report.head.hash}${report.head.sequence > 0 ? ` (entry ${report.head.sequence})` : ''}`,
    ],
    ['rounds', `${report.rounds.length} decided: ${commits} COMMIT, ${report.rounds.length - commits} ABORT`],
    [
      'checked',
      [
        plural(c.signatures, 'signature'),
        plural(c.links, 'link'),
        `history rules through entry ${report.historyThrough}`,
        plural(c.commitHashes, 'commit hash').replace(/hashs$/, 'hashes'),
        plural(c.aggregates, 'aggregate'),
        plural(c.registryChanges, 'registry change'),
        plural(c.snapshots, 'snapshot'),
        plural(c.adminActions, 'admin action'),
      ].join(', '),
    ],
  ];
  for (const u of report.unchecked) {
    rows.push(['unchecked', `entry ${u.sequence}  ${u.code}  ${printable(u.message)}`]);
  }
  for (const p of report.problems) {
    rows.push(['problem', `entry ${p.sequence}  ${p.code}  ${printable(p.message)}`]);
  }
  rows.push(['result', auditVerdict(report)]);
  return alignColumns(rows);
}
