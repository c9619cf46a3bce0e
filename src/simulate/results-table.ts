import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from '../errors/index.ts';
import { attackTable } from './attack-table.ts';
import type { RunConfig } from './experiment-schema.ts';
import { markdownTable } from './markdown-table.ts';
import { privacyTable } from './privacy-table.ts';
import type { RoundMetrics } from './run-simulation.ts';

/**
 * Reads per-round metrics (`metrics.jsonl` as `cohort simulate` writes it; several files may be
 * given, e.g. runs made by separate processes), one JSON object per line.
 *
 * @throws InvalidArgumentError naming the file and line of a line that is not a metrics record.
 */
export function readRoundMetrics(files: readonly string[]): RoundMetrics[] {
  const out: RoundMetrics[] = [];
  for (const file of files) {
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (line.trim() === '') return;
      let m: RoundMetrics;
      try {
        m = JSON.parse(line) as RoundMetrics;
      } catch (cause) {
        throw new InvalidArgumentError(`${file} line ${i + 1}: not JSON`, { cause });
      }
      const accuracy = m?.accuracy;
      if (
        typeof m?.run !== 'string' ||
        !Number.isInteger(m.round) ||
        m.round < 1 ||
        !(accuracy === null || (Number.isFinite(accuracy) && accuracy >= 0 && accuracy <= 1)) ||
        !Number.isFinite(m.bytesUp)
      ) {
        throw new InvalidArgumentError(
          `${file} line ${i + 1}: not a round's metrics (run, round, accuracy, bytesUp)`,
        );
      }
      out.push(m);
    });
  }
  return out;
}

/**
 * The Markdown table of an experiment's results, from its per-round metrics, one row per run of
 * `runs` that has metrics, in `runs` order: the updates' channel, the first round reaching the
 * target accuracy (or how many rounds ran without), the accuracy at the round where the first
 * listed run reached it, the best accuracy, the rounds run and the bytes sent up to the target
 * (or in all). Everything in it comes from the metrics: the tables of docs/results.md are this output, checked by
 * a test against the tracked metrics file. A first run with a `reference` adds it as the last row
 * (its source and rounds to the target, nothing else).
 */
export function resultsTable(runs: readonly RunConfig[], metrics: readonly RoundMetrics[]): string {
  if (runs.some((r) => r.privacy !== undefined)) return privacyTable(metricsByRun(runs, metrics));
  if (runs.some((r) => r.attack !== undefined)) return attackTable(metricsByRun(runs, metrics));
  const byRun = new Map<string, RoundMetrics[]>();
  for (const m of metrics) {
    const list = byRun.get(m.run) ?? [];
    list.push(m);
    byRun.set(m.run, list);
  }
  const present = runs.filter((r) => byRun.has(r.name));
  if (present.length === 0) throw new InvalidArgumentError('no metrics for any run of the experiment');
  const target = present[0]!.targetAccuracy;
  const pct = (v: number | undefined) => (v === undefined ? '—' : `${(v * 100).toFixed(2)}%`);
  const bytes = (b: number) => (b >= 1e9 ? `${(b / 1e9).toFixed(2)} GB` : `${(b / 1e6).toFixed(0)} MB`);
  const reached = (rows: readonly RoundMetrics[], goal: number) =>
    rows.find((m) => m.accuracy !== null && m.accuracy >= goal)?.round;
  const sorted = new Map(
    present.map((r) => [r.name, [...byRun.get(r.name)!].sort((a, b) => a.round - b.round)]),
  );
  const reference = reached(sorted.get(present[0]!.name)!, target);
  const head = [
    'run',
    'updates',
    `rounds to ${(target * 100).toFixed(0)}%`,
    `accuracy at round ${reference ?? '—'}`,
    'best',
    'rounds run',
    `bytes up${reference === undefined ? '' : ' to target'}`,
  ];
  const rows = present.map((r) => {
    const list = sorted.get(r.name)!;
    const at = reached(list, r.targetAccuracy);
    const channel = channelOf(r);
    const best = Math.max(...list.map((m) => m.accuracy ?? 0));
    const accAt = list.find((m) => m.round === reference)?.accuracy ?? undefined;
    const upTo = list.filter((m) => at === undefined || m.round <= at).reduce((a, m) => a + m.bytesUp, 0);
    return [
      r.name,
      channel,
      String(at ?? `not in ${list.length}`),
      pct(accAt),
      pct(best),
      String(list.length),
      bytes(upTo),
    ];
  });
  const ref = present[0]!.reference;
  if (ref !== undefined)
    rows.push([ref.source, 'as published', String(ref.roundsToTarget), '—', '—', '—', '—']);
  return markdownTable(head, rows);
}

/** How a run's updates travel, in words. */
export function channelOf(r: RunConfig): string {
  if (r.privacy !== undefined) return 'integer levels + Skellam noise';
  return r.codec.mode === 'float32'
    ? 'exact FedAvg (float32)'
    : r.codec.mode === 'he'
      ? `${r.codec.bits}-bit through CKKS + signatures`
      : `error feedback, ${r.codec.bits}-bit`;
}

/** Each present run's metrics in round order, in `runs` order; fails when no run has any. */
export function metricsByRun(
  runs: readonly RunConfig[],
  metrics: readonly RoundMetrics[],
): Map<RunConfig, RoundMetrics[]> {
  const out = new Map<RunConfig, RoundMetrics[]>();
  for (const r of runs) {
    const list = metrics.filter((m) => m.run === r.name).sort((a, b) => a.round - b.round);
    if (list.length > 0) out.set(r, list);
  }
  if (out.size === 0) throw new InvalidArgumentError('no metrics for any run of the experiment');
  return out;
}
