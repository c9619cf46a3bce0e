import type { Command } from 'commander';
import { checkDataFiles, formatDataFileReport } from '../../data/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import type { CliContext } from '../cli-context.ts';
import { integerFlag } from './data-split.ts';

interface DataCheckFlags {
  classes?: string;
  imageShape?: string;
  label?: string;
}

/** `28x28` (or `28×28`, `784`) as dimensions. */
function parseImageShape(raw: string): number[] {
  const parts = raw.split(/[x×]/);
  return parts.map((p) => {
    if (!/^[0-9]+$/.test(p)) throw new InvalidArgumentError(`--image-shape ${raw} must look like 28x28`);
    return integerFlag('image-shape', p, 1, 1 << 20);
  });
}

/**
 * `cohort data check <path…> [--classes K] [--image-shape 28x28] [--label <column>]`: validates
 * site data files (IDX pairs, `.npy` pairs, CSV; a folder stands for its data files) with
 * {@link checkDataFiles}, printing one line per valid file; the first bad file ends it with
 * `error [CODE]: <file> …` and exit status 2.
 */
export function registerDataCheckCommand(data: Command, ctx: CliContext): void {
  data
    .command('check')
    .description('validate site data files: IDX images/labels, .npy features/labels, CSV')
    .argument('<paths...>', 'data files or folders')
    .option('--classes <k>', 'number of classes; labels must be below it')
    .option('--image-shape <shape>', 'shape of one example, e.g. 28x28')
    .option('--label <column>', 'label column of CSV files')
    .action((paths: string[], flags: DataCheckFlags) => {
      const report = checkDataFiles(paths, {
        ...(flags.classes === undefined ? {} : { classCount: integerFlag('classes', flags.classes, 1, 256) }),
        ...(flags.imageShape === undefined ? {} : { imageShape: parseImageShape(flags.imageShape) }),
        ...(flags.label === undefined ? {} : { labelColumn: flags.label }),
      });
      for (const f of report.files) ctx.stdout.write(`${formatDataFileReport(f)}\n`);
      if (!report.ok) throw report.error;
    });
}
