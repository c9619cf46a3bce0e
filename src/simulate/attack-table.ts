import type { RunConfig } from './experiment-schema.ts';
import { markdownTable } from './markdown-table.ts';
import type { RoundMetrics } from './run-simulation.ts';

/** Column title of an aggregation rule. */
function ruleTitle(run: RunConfig): string {
  const a = run.aggregation;
  const bound = a.normBound === undefined ? '' : `, norm ≤ ${a.normBound}`;
  switch (a.name) {
    case 'mean':
      return `FedAvg (mean${bound})`;
    case 'median':
      return `coordinate median${bound}`;
    case 'trimmed-mean':
      return `trimmed mean β = ${a.trimFraction}${bound}`;
    case 'multi-krum':
      return `Multi-Krum f = ${a.byzantine}${a.select === undefined ? '' : `, m = ${a.select}`}${bound}`;
  }
}

/** Row title of an attack. */
function attackTitle(run: RunConfig): string {
  const a = run.attack;
  if (a === undefined) return 'no attack';
  const factor = a.factor === undefined ? '' : ` ×${a.factor}`;
  return `${a.kind}${factor}, ${Math.round(a.fraction * 100)}% of sites`;
}

/**
 * The table of a robustness experiment: one row per attack (kind, factor and share of attacking
 * sites), one column per aggregation rule, each cell the final test accuracy of that run (the
 * last evaluation). Rows and columns keep the order in which runs first name them.
 */
export function attackTable(byRun: ReadonlyMap<RunConfig, readonly RoundMetrics[]>): string {
  const columns: string[] = [];
  const rows = new Map<string, Map<string, string>>();
  for (const [run, list] of byRun) {
    const column = ruleTitle(run);
    if (!columns.includes(column)) columns.push(column);
    const row = attackTitle(run);
    const cells = rows.get(row) ?? new Map<string, string>();
    const last = list.filter((m) => m.accuracy !== null).at(-1);
    cells.set(column, last === undefined ? '—' : `${(last.accuracy! * 100).toFixed(2)}%`);
    rows.set(row, cells);
  }
  return markdownTable(
    ['attack', ...columns],
    [...rows].map(([row, cells]) => [row, ...columns.map((c) => cells.get(c) ?? '—')]),
  );
}
