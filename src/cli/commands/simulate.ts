import type { Command } from 'commander';
import { InvalidArgumentError } from '../../errors/index.ts';
import { loadExperiment, readRoundMetrics, resultsTable, runExperiment } from '../../simulate/index.ts';
import type { CliContext } from '../context/cli-context.ts';

interface SimulateOptions {
  config?: string;
  experiment?: string;
  runs?: string;
  rounds?: string;
  out?: string;
  table?: string;
}

/**
 * `cohort simulate --config <yaml>` (or `--experiment <yaml>`): N virtual sites in one process through
 * the real engines and codec; with `--table <metrics.jsonl,…>` it prints the results table of runs
 * already made instead.
 */
export function registerSimulateCommand(program: Command, ctx: CliContext): void {
  program
    .command('simulate')
    .description('simulate a federation in one process and write metrics (JSONL), a summary and a plot')
    .option('-c, --config <file>', 'experiment YAML (see config/experiments/)')
    .option('-e, --experiment <file>', 'same as --config')
    .option('--runs <names>', 'comma-separated run names to execute (default: all)')
    .option('--rounds <n>', "override every run's round count (short runs)")
    .option('--out <dir>', "output folder (default: the file's outputDir)")
    .option(
      '--table <files>',
      'print the results table from metrics.jsonl files (comma-separated) instead of running',
    )
    .action(async (o: SimulateOptions) => {
      if ((o.config === undefined) === (o.experiment === undefined)) {
        throw new InvalidArgumentError(
          'give the experiment file with --config <file> (or --experiment <file>), once',
        );
      }
      const file = (o.config ?? o.experiment)!;
      const experiment = loadExperiment(file, { env: ctx.env });
      if (o.table !== undefined) {
        const files = o.table
          .split(',')
          .map((f) => f.trim())
          .filter(Boolean);
        ctx.stdout.write(`${resultsTable(experiment.runs, readRoundMetrics(files))}\n`);
        return;
      }
      let runs = experiment.runs;
      if (o.rounds !== undefined) {
        const rounds = Number(o.rounds);
        if (!Number.isInteger(rounds) || rounds < 1)
          throw new InvalidArgumentError(`--rounds ${o.rounds} must be an integer ≥ 1`);
        runs = runs.map((r) => ({ ...r, rounds }));
      }
      const wanted = o.runs
        ?.split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (wanted) {
        const unknown = wanted.filter((w) => !runs.some((r) => r.name === w));
        if (unknown.length > 0) {
          throw new InvalidArgumentError(
            `--runs names ${unknown.join(', ')}, not in ${file} (runs: ${runs.map((r) => r.name).join(', ')})`,
          );
        }
      }
      await runExperiment(
        { ...experiment, runs, outputDir: o.out ?? experiment.outputDir },
        {
          stdout: ctx.stdout,
          stderr: ctx.stderr,
          tty: Boolean((process.stderr as { isTTY?: boolean }).isTTY),
        },
        wanted ? (r) => wanted.includes(r.name) : undefined,
      );
    });
}
