import type { Command } from 'commander';
import type { Dataset } from '../../../gpu/index.ts';
import { classText, type DataContract, loadSiteConfig } from '../../config/index.ts';
import {
  checkDataFiles,
  classHistogram,
  describeContract,
  formatDataFileReport,
  loadSiteData,
} from '../../data/index.ts';
import { ConfigError, InvalidArgumentError } from '../../errors/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';
import { integerFlag } from './data-split.ts';

interface DataCheckFlags extends ConfigFlags {
  classes?: string;
  imageShape?: string;
  label?: string;
  config?: string;
  siteConfig?: string;
}

/** `28x28` (or `28×28`, `784`) as dimensions. */
function parseImageShape(raw: string): number[] {
  const parts = raw.split(/[x×]/);
  return parts.map((p) => {
    if (!/^[0-9]+$/.test(p)) throw new InvalidArgumentError(`--image-shape ${raw} must look like 28x28`);
    return integerFlag('image-shape', p, 1, 1 << 20);
  });
}

/** `split: 455 rows, classes B:286 M:169`. */
function splitLine(split: string, data: Dataset, contract: DataContract): string {
  const classes = contract.label.classes;
  const hist = classHistogram(data).map((n, c) => `${classText(classes[c]!)}:${n}`);
  return `${split}: ${data.count} rows, classes ${hist.join(' ')}`;
}

/**
 * `--config` + `--site-config`: the site's files checked against the federation's data contract,
 * as the agent will check them at start; prints what fits and the rows per split by class.
 */
function checkAgainstContract(paths: readonly string[], flags: DataCheckFlags, ctx: CliContext): void {
  if (flags.config === undefined) {
    throw new InvalidArgumentError(
      "--site-config needs --config <federation.yaml> (the federation's data contract)",
    );
  }
  const extra = [
    ...(paths.length > 0 ? ['data paths'] : []),
    ...(flags.classes === undefined ? [] : ['--classes']),
    ...(flags.imageShape === undefined ? [] : ['--image-shape']),
    ...(flags.label === undefined ? [] : ['--label']),
  ];
  if (extra.length > 0) {
    throw new InvalidArgumentError(
      `with --site-config the site configuration names the files and the contract the rest; drop ${extra.join(', ')}`,
    );
  }
  const config = loadConfigWithFlags(flags.config, flags, ctx);
  const contract = config.data;
  if (contract === undefined) {
    throw new ConfigError('CONFIG_INVALID', `${flags.config} has no data contract (a \`data\` section)`, {
      details: { path: 'data', file: flags.config },
    });
  }
  const site = loadSiteConfig(flags.siteConfig!, { env: flags.env === false ? {} : ctx.env });
  const loaded = loadSiteData(contract, site);
  const out = (line: string) => ctx.stdout.write(`${line}\n`);
  out(`${flags.siteConfig}: fits the data contract of ${flags.config} (${describeContract(contract)})`);
  out(`files: ${loaded.files.join(', ')}`);
  out(splitLine('train', loaded.train, contract));
  if (loaded.validation !== null) out(splitLine('validation', loaded.validation, contract));
}

/**
 * `cohort data check <path…> [--classes K] [--image-shape 28x28] [--label <column>]`: validates
 * site data files (IDX pairs, `.npy` pairs, CSV; a folder stands for its data files) with
 * {@link checkDataFiles}, printing one line per valid file; the first bad file ends it with
 * `error [CODE]: <file> …` and exit status 2.
 *
 * `cohort data check --config <federation.yaml> --site-config <site.yaml>`: checks the files the
 * site configuration names against the federation's data contract, exactly as the agent does at
 * start (`loadSiteData`); prints the rows of each split by class, or ends with the first
 * violation (`error [CODE]: <file> line …`, exit status 2).
 */
export function registerDataCheckCommand(data: Command, ctx: CliContext): void {
  addConfigOptions(
    data
      .command('check')
      .description(
        'validate site data files (IDX images/labels, .npy features/labels, CSV), or a site configuration against the data contract',
      )
      .argument('[paths...]', 'data files or folders (without --site-config)')
      .option('--classes <k>', 'number of classes; labels must be below it')
      .option('--image-shape <shape>', 'shape of one example, e.g. 28x28')
      .option('--label <column>', 'label column of CSV files')
      .option('-c, --config <file>', 'federation YAML whose data contract the site configuration must fit')
      .option('--site-config <file>', 'a site’s own YAML: check the files it names against the contract'),
  ).action((paths: string[], flags: DataCheckFlags) => {
    if (flags.siteConfig !== undefined) {
      checkAgainstContract(paths, flags, ctx);
      return;
    }
    if (flags.config !== undefined) {
      throw new InvalidArgumentError('--config is for checking a --site-config against the data contract');
    }
    if (paths.length === 0) {
      throw new InvalidArgumentError(
        'give the data files or folders to check, or --config and --site-config',
      );
    }
    const report = checkDataFiles(paths, {
      ...(flags.classes === undefined ? {} : { classCount: integerFlag('classes', flags.classes, 1, 256) }),
      ...(flags.imageShape === undefined ? {} : { imageShape: parseImageShape(flags.imageShape) }),
      ...(flags.label === undefined ? {} : { labelColumn: flags.label }),
    });
    for (const f of report.files) ctx.stdout.write(`${formatDataFileReport(f)}\n`);
    if (!report.ok) throw report.error;
  });
}
