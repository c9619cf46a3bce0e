import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TextSink } from '../log/index.ts';
import type { RunConfig } from './experiment-schema.ts';
import type { Experiment } from './load-experiment.ts';
import { RoundProgress } from './progress.ts';
import { channelOf } from './results-table.ts';
import { type RoundMetrics, type RunSummary, runSimulation } from './run-simulation.ts';
import { renderLinePlot } from './svg-plot.ts';

/** Files an experiment writes. */
export interface ExperimentOutput {
  readonly dir: string;
  readonly metrics: string;
  readonly summaryJson: string;
  readonly summaryMarkdown: string;
  readonly plot: string;
  readonly summaries: readonly RunSummary[];
}

function fmtBytes(b: number): string {
  return b >= 1e9
    ? `${(b / 1e9).toFixed(2)} GB`
    : b >= 1e6
      ? `${(b / 1e6).toFixed(1)} MB`
      : `${(b / 1e3).toFixed(1)} kB`;
}

/**
 * The summary as a Markdown table (also printed at the end of a run). The first run is the
 * reference: each run's accuracy is also shown at the round where the reference first reached the
 * target, and its final accuracy as a difference from the reference's, in points.
 */
export function summaryTable(
  summaries: readonly RunSummary[],
  curves: ReadonlyMap<string, readonly (readonly [number, number])[]> = new Map(),
): string {
  const ref = summaries[0];
  const at = ref?.roundsToTarget ?? null;
  const accAt = (run: string) => curves.get(run)?.find((p) => p[0] === at)?.[1];
  const head = `| run | channel | rounds | rounds to target | acc. at round ${at ?? '—'} | final acc. | Δ final vs ${ref?.run ?? '—'} | bytes up | time |`;
  const sep = '|---|---|---|---|---|---|---|---|---|';
  const pct = (v: number | undefined) => (v === undefined ? '—' : `${(v * 100).toFixed(2)}%`);
  const rows = summaries.map(
    (s) =>
      `| ${s.run} | ${s.mode}${s.bits ? ` ${s.bits}-bit` : ''} | ${s.rounds} | ${s.roundsToTarget ?? `not reached (${(s.targetAccuracy * 100).toFixed(1)}%)`} | ${pct(accAt(s.run))} | ${pct(s.finalAccuracy)} | ${ref ? `${((s.finalAccuracy - ref.finalAccuracy) * 100).toFixed(2)} pt` : '—'} | ${fmtBytes(s.totalBytesUp)} | ${s.seconds.toFixed(0)} s |`,
  );
  return [head, sep, ...rows].join('\n');
}

/**
 * Runs every run of an experiment in turn with a progress display, appending per-round metrics to
 * `<outputDir>/<experiment>/metrics.jsonl` (one JSON object per round) and writing the summary
 * (JSON and Markdown) and an accuracy-vs-round SVG plot.
 */
export async function runExperiment(
  experiment: Experiment,
  out: { stdout: TextSink; stderr: TextSink; tty: boolean },
  select?: (run: RunConfig) => boolean,
): Promise<ExperimentOutput> {
  const dir = join(experiment.outputDir, experiment.name);
  mkdirSync(dir, { recursive: true });
  const files = {
    metrics: join(dir, 'metrics.jsonl'),
    summaryJson: join(dir, 'summary.json'),
    summaryMarkdown: join(dir, 'summary.md'),
    plot: join(dir, 'accuracy.svg'),
  };
  writeFileSync(files.metrics, '');
  const runs = experiment.runs.filter((r) => select?.(r) ?? true);
  const curves = new Map<string, [number, number][]>();
  const summaries: RunSummary[] = [];
  for (const run of runs) {
    const progress = new RoundProgress(out.stderr, run.rounds, out.tty);
    const curve: [number, number][] = [];
    curves.set(run.name, curve);
    out.stdout.write(
      `\n== ${run.name}: ${run.partition.kind} over ${run.partition.sites} sites, C=${run.training.clientFraction}, E=${run.training.epochs}, B=${run.training.batchSize}, ${run.strategy.name}${run.aggregation.name === 'mean' ? '' : ` (${run.aggregation.name})`}, ${channelOf(run)}${run.attack === undefined ? '' : `, attack ${run.attack.kind} by ${run.attack.fraction * 100}% of sites`}, ${run.training.engine}\n`,
    );
    const summary = await runSimulation(run, {
      onClientDone: (name, round, done, total) => progress.sites(name, round, done, total),
      onRound: (m: RoundMetrics) => {
        appendFileSync(files.metrics, `${JSON.stringify(m)}\n`);
        if (m.accuracy !== null) curve.push([m.round, m.accuracy]);
        progress.round(
          `${m.run} round ${String(m.round).padStart(4)}: train loss ${m.trainLoss.toFixed(4)}` +
            (m.accuracy === null
              ? ''
              : `, test acc ${(m.accuracy * 100).toFixed(2)}%, test loss ${m.testLoss!.toFixed(4)}`) +
            (m.epsilon === null ? '' : `, ε ${m.epsilon.toFixed(3)}`) +
            `, up ${fmtBytes(m.bytesUp)}${m.clip === null ? '' : `, clip ${m.clip.toExponential(2)}`}, ${m.seconds.toFixed(1)} s`,
        );
      },
    });
    summaries.push(summary);
    if (summary.privacy?.stoppedAtBudget) {
      out.stdout.write(
        `${run.name}: stopped after round ${summary.rounds}: one more round would spend more than ε ${run.privacy?.epsilon}\n`,
      );
    }
    out.stdout.write(
      `${run.name}: ${summary.roundsToTarget === null ? 'target not reached' : `reached ${(run.targetAccuracy * 100).toFixed(1)}% at round ${summary.roundsToTarget}`}, final ${(summary.finalAccuracy * 100).toFixed(2)}% (${summary.engine})\n`,
    );
    // Rewritten after every run so a long experiment leaves usable results if stopped.
    writeFileSync(
      files.summaryJson,
      `${JSON.stringify({ experiment: experiment.name, runs: summaries }, null, 2)}\n`,
    );
    writeFileSync(files.summaryMarkdown, `# ${experiment.name}\n\n${summaryTable(summaries, curves)}\n`);
    const target = runs[0]!.targetAccuracy;
    writeFileSync(
      files.plot,
      renderLinePlot({
        title: `${experiment.name}: test accuracy per round`,
        xLabel: 'round',
        yLabel: 'test accuracy',
        series: [...curves].map(([name, points]) => ({ name, points })),
        target,
        yMin: Math.max(0, Math.min(target - 0.1, ...[...curves.values()].flat().map((p) => p[1]))),
        yMax: 1,
      }),
    );
  }
  out.stdout.write(
    `\n${summaryTable(summaries, curves)}\n\nwrote ${files.metrics}, ${files.summaryJson}, ${files.plot}\n`,
  );
  return { dir, ...files, summaries };
}
