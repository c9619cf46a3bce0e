// The checks every fault case ends with, and its row of the outcome table. A case passes only if
// the log is whole (every entry verified by LogHistory, sequences contiguous from 1, the entries
// before the case unchanged, no round opened or decided twice, no partial or vote counted twice,
// no round left undecided), its decisions form one chain, and every live site's store reaches the
// log's head (drift 0).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, inject } from 'vitest';
import type { LogEntry } from '../../src/services/federation-log/index.ts';
import { expectSingleChain, type Federation, hex } from '../helpers/federation.ts';
import { waitAllAt } from '../recovery/recovery-helpers.ts';
import type { FaultCaseId, FaultRow } from './fault-cases.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where each case writes its row (test/faults/fault-table.ts reads them at the end). */
    faultRowsDir: string;
  }
}

/** The highest round number the log names (0 on an empty log). */
export function lastRound(entries: readonly LogEntry[]): number {
  let r = 0;
  for (const e of entries) r = Math.max(r, e.record.roundOpen?.round ?? 0, e.record.decision?.round ?? 0);
  return r;
}

/** The decision of `round` in `entries` (fails the test when there is none). */
export function decisionOf(entries: readonly LogEntry[], round: number) {
  const d = entries.find((e) => e.record.decision?.round === round)?.record.decision;
  expect(d, `round ${round} has a decision in the log`).toBeDefined();
  return d!;
}

/** `r5 COMMIT (3 sites)` or `r5 ABORT: <reason>`. */
function describeDecision(entries: readonly LogEntry[], round: number): string {
  const d = decisionOf(entries, round);
  if (d.commit) return `r${round} COMMIT (${d.aggregate?.contributors.length ?? 0} sites)`;
  return `r${round} ABORT (${d.reason})`;
}

/** What {@link finishCase} needs besides the federation. */
export interface CaseReport {
  readonly id: FaultCaseId;
  readonly fault: string;
  readonly injectedAt: string;
  /** The log before the case ran. */
  readonly before: readonly LogEntry[];
  /** Sites that must be at the log's head (every site alive at the end). */
  readonly sites: readonly string[];
}

/**
 * Checks the log and the sites after a case (see the file comment), writes the case's row for
 * the outcome table, and returns it with the log's entries.
 */
export async function finishCase(
  f: Federation,
  c: CaseReport,
): Promise<{ row: FaultRow; entries: LogEntry[] }> {
  // Verified while read: signatures, hash chain, LogHistory's rules (one open round at a time…).
  const entries = await f.logEntries();
  expect(
    entries.map((e) => e.sequence),
    'log sequences contiguous from 1',
  ).toEqual(entries.map((_, i) => i + 1));
  expect(entries.length).toBeGreaterThan(c.before.length);
  for (const [i, e] of c.before.entries()) {
    expect(hex(entries[i]!.hash), `entry ${e.sequence} unchanged by the case`).toBe(hex(e.hash));
  }
  const seen = new Set<string>();
  const once = (key: string) => {
    expect(seen.has(key), `${key} logged once`).toBe(false);
    seen.add(key);
  };
  const opened = new Set<number>();
  for (const e of entries) {
    const r = e.record;
    if (r.roundOpen) {
      once(`roundOpen ${r.roundOpen.round}`);
      opened.add(r.roundOpen.round);
    }
    if (r.decision) once(`decision ${r.decision.round}`);
    if (r.partial) once(`partial ${r.partial.round} ${r.partial.aggregator}`);
    if (r.vote) once(`vote ${r.vote.round} ${r.vote.member}`);
    for (const v of r.votes?.votes ?? []) once(`vote ${r.votes!.round} ${v.member}`);
  }
  for (const round of opened) expect(seen.has(`decision ${round}`), `round ${round} decided`).toBe(true);
  const decisions = entries
    .filter((e) => e.record.decision)
    .map((e) => ({ ...e.record.decision!, sequence: e.sequence }));
  expectSingleChain(decisions, f.genesis);
  const commits = decisions.filter((d) => d.commit);
  const head = commits.length === 0 ? f.genesis : hex(commits.at(-1)!.commitHash);
  await waitAllAt(f, c.sites, head, 120_000);
  const drift = c.sites.filter((s) => f.storeHead(s)?.hash !== head).length;
  expect(drift).toBe(0);

  const fresh = decisions.filter((d) => d.sequence > (c.before.at(-1)?.sequence ?? 0));
  const row: FaultRow = {
    id: c.id,
    fault: c.fault,
    injectedAt: c.injectedAt,
    outcome: fresh.map((d) => describeDecision(entries, d.round)).join('; '),
    committed: fresh.filter((d) => d.commit).length,
    aborted: fresh.filter((d) => !d.commit).length,
    drift,
    logEntries: entries.length,
    appended: entries.length - c.before.length,
  };
  const dir = inject('faultRowsDir');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${c.id}.json`), JSON.stringify(row));
  console.log(`fault case ${c.id}: ${row.outcome}`);
  return { row, entries };
}
