import type { Command } from 'commander';
import { readMnistIdx, type SitePartition, splitSites } from '../../data/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import type { CliContext } from '../context/cli-context.ts';

interface DataSplitFlags {
  sites: string;
  partition: string;
  alpha?: string;
  seed: string;
  format: string;
  trainLimit?: string;
  out: string;
  force?: boolean;
}

/** `--name raw` as an integer in [min, max], else `INVALID_ARGUMENT` naming the flag. */
export function integerFlag(name: string, raw: string, min: number, max: number): number {
  const n = /^[0-9]+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new InvalidArgumentError(`--${name} ${raw} must be an integer in [${min}, ${max}]`);
  }
  return n;
}

/**
 * `cohort data split --sites N [--partition iid|dirichlet --alpha A] [--seed S] [--format idx|npy]
 * [--train-limit n] --out <dir> [--force]`: splits the bundled MNIST training set into
 * `<out>/site-<i>/` folders (gzip IDX or `.npy`) with the federation partition functions and writes
 * the test set once to `<out>/test/`; prints one line per folder.
 */
export function registerDataSplitCommand(data: Command, ctx: CliContext): void {
  data
    .command('split')
    .description('split the bundled MNIST training set into one folder per site, plus the test set')
    .requiredOption('--sites <n>', 'number of sites')
    .option('--partition <kind>', 'iid or dirichlet', 'iid')
    .option('--alpha <a>', 'Dirichlet concentration (with --partition dirichlet)')
    .option('--seed <s>', 'uint32 seed of the partition', '1')
    .option('--format <format>', 'idx (gzip) or npy', 'idx')
    .option('--train-limit <n>', 'use only the first n training rows')
    .requiredOption('-o, --out <dir>', 'output folder')
    .option('-f, --force', 'overwrite existing files')
    .action((flags: DataSplitFlags) => {
      const sites = integerFlag('sites', flags.sites, 1, 60_000);
      const seed = integerFlag('seed', flags.seed, 0, 0xffff_ffff);
      if (flags.format !== 'idx' && flags.format !== 'npy') {
        throw new InvalidArgumentError(`--format ${flags.format} must be idx or npy`);
      }
      let partition: SitePartition;
      if (flags.partition === 'iid') {
        if (flags.alpha !== undefined) throw new InvalidArgumentError('--alpha needs --partition dirichlet');
        partition = { kind: 'iid' };
      } else if (flags.partition === 'dirichlet') {
        const alpha = flags.alpha === undefined ? Number.NaN : Number(flags.alpha);
        if (!(alpha > 0) || !Number.isFinite(alpha)) {
          throw new InvalidArgumentError(`--alpha ${flags.alpha ?? '(missing)'} must be a number > 0`);
        }
        partition = { kind: 'dirichlet', alpha };
      } else {
        throw new InvalidArgumentError(`--partition ${flags.partition} must be iid or dirichlet`);
      }
      const limit =
        flags.trainLimit === undefined ? undefined : integerFlag('train-limit', flags.trainLimit, 1, 60_000);
      const mnist = readMnistIdx(limit);
      const report = splitSites(mnist.train, mnist.test, {
        out: flags.out,
        sites,
        partition,
        seed,
        format: flags.format,
        classCount: 10,
        force: flags.force === true,
      });
      for (const f of [...report.sites, ...(report.test ? [report.test] : [])]) {
        ctx.stdout.write(
          `${f.dir}: ${f.rows} rows, labels ${f.histogram.map((n, y) => `${y}:${n}`).join(' ')}\n`,
        );
      }
    });
}
