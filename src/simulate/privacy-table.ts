import type { RunConfig } from './experiment-schema.ts';
import { markdownTable } from './markdown-table.ts';
import type { RoundMetrics } from './run-simulation.ts';

const pct = (v: number | null | undefined) =>
  v === null || v === undefined ? '—' : `${(v * 100).toFixed(2)}%`;

/**
 * The table of a privacy experiment, one row per run: its ε budget and δ, the noise multiplier the
 * run used, the ε it spent and the rounds it ran, its test accuracy at rounds 25, 50 and 100 (or
 * the last evaluation before) and its final accuracy. Everything comes from the metrics.
 */
export function privacyTable(byRun: ReadonlyMap<RunConfig, readonly RoundMetrics[]>): string {
  const marks = [25, 50, 100];
  const head = [
    'run',
    'privacy',
    'noise multiplier',
    'ε spent',
    'rounds run',
    ...marks.map((m) => `round ${m}`),
    'final',
  ];
  const rows = [...byRun].map(([run, list]) => {
    const last = list.at(-1)!;
    const evaluated = list.filter((m) => m.accuracy !== null);
    const at = (round: number) => evaluated.filter((m) => m.round <= round).at(-1)?.accuracy;
    const privacy =
      run.privacy === undefined
        ? 'none'
        : `ε ≤ ${run.privacy.epsilon ?? '∞'}, δ = ${run.privacy.delta.toExponential()}, clip ${run.privacy.clipNorm}`;
    return [
      run.name,
      privacy,
      last.noiseMultiplier === null ? '—' : last.noiseMultiplier.toFixed(3),
      last.epsilon === null ? '—' : last.epsilon.toFixed(3),
      String(last.round),
      ...marks.map((m) => (m <= last.round ? pct(at(m)) : '—')),
      pct(evaluated.at(-1)?.accuracy),
    ];
  });
  return markdownTable(head, rows);
}
