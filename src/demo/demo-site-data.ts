import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { DataContractInput, SiteConfigInput } from '../config/index.ts';
import { readMnistIdx, splitSites } from '../data/index.ts';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';

/**
 * The data contract of MNIST as the demo federation declares it: 1×28×28 images, classes 0…9 (a
 * label byte is its class index), pixels scaled by 1/255 — the same [0, 1] features `loadMnist`
 * gives, bit for bit. A fresh object each call.
 */
export function mnistDataContract(): DataContractInput {
  return {
    kind: 'image',
    image: { channels: 1, height: 28, width: 28 },
    label: { name: 'digit', classes: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] },
    preprocessing: { scale: 1 / 255, standardize: 'none' },
  };
}

/** Options of {@link writeDemoSiteData}. */
export interface DemoSiteDataOptions {
  /** The demo's working folder: site data goes to `<dir>/site-data/`, site configurations to `<dir>/<site>.site.yaml`. */
  readonly dir: string;
  /** Site ids, in `members.sites` order. */
  readonly sites: readonly string[];
  /** MNIST training rows shared out (default: all 60,000). */
  readonly trainLimit?: number;
  /** uint32 seed of the IID split; `learning.initSeed` deals the same rows as the agents' MNIST shards. */
  readonly seed: number;
  /** Share of each site's rows kept for validation, in (0, 1); none when absent. */
  readonly validationFraction?: number;
}

/**
 * Gives each demo site its own data the way real sites have theirs: MNIST's training rows split
 * IID with `splitSites` (what `cohort data split` writes) into `<dir>/site-data/site-<i>/` (gzip
 * IDX files; site i of `sites` gets folder i), and a site configuration per site,
 * `<dir>/<site>.site.yaml`, naming its files relative to itself (and a validation split when
 * `validationFraction` is given). Returns the site configuration path of each site.
 */
export function writeDemoSiteData(options: DemoSiteDataOptions): Map<string, string> {
  const { dir, sites, seed } = options;
  if (sites.length === 0) throw new InvalidArgumentError('sites must name at least one site');
  assertInteger('seed', seed, 0, 0xffff_ffff);
  const fraction = options.validationFraction;
  if (fraction !== undefined && !(fraction > 0 && fraction < 1)) {
    throw new InvalidArgumentError(`validationFraction must be in (0, 1), got ${fraction}`);
  }
  const mnist = readMnistIdx(options.trainLimit);
  const report = splitSites(mnist.train, undefined, {
    out: join(dir, 'site-data'),
    sites: sites.length,
    partition: { kind: 'iid' },
    seed,
    format: 'idx',
    classCount: 10,
  });
  const paths = new Map<string, string>();
  sites.forEach((site, i) => {
    const folder = `site-data/site-${i}`;
    const config: SiteConfigInput = {
      data: {
        idx: {
          images: `${folder}/train-images-idx3-ubyte.gz`,
          labels: `${folder}/train-labels-idx1-ubyte.gz`,
        },
      },
      ...(fraction === undefined ? {} : { validation: { fraction, seed } }),
    };
    const path = join(dir, `${site}.site.yaml`);
    const rows = report.sites[i]!.rows;
    writeFileSync(
      path,
      `# ${site}'s own data: ${rows} MNIST training rows (cohort demo)\n${stringify(config)}`,
    );
    paths.set(site, path);
  });
  return paths;
}
