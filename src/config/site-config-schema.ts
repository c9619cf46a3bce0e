import { z } from 'zod';
import type { DeepReadonly } from './schema.ts';

const path = z.string().min(1);

/** A CSV file with a header row; tabular contracts only. */
const csvSourceSchema = z.strictObject({
  path,
  /**
   * Contract feature name → this file's header name, for the features whose column is named
   * differently here; a feature not mapped is read from the column of its own name.
   */
  columns: z.record(z.string().min(1), z.string().min(1)).default(() => ({})),
  /** This file's label column (default: the contract's `label.name`). */
  label: z.string().min(1).optional(),
});

/** An unsigned-byte IDX pair (MNIST's format, gzip or not): images `[n, …]`, labels `[n]`. */
const idxSourceSchema = z.strictObject({ images: path, labels: path });

/** A NumPy `.npy` pair: features `[n, …]`, labels `[n]`. */
const npySourceSchema = z.strictObject({ features: path, labels: path });

/** Where the site's rows are: exactly one of `csv`, `idx`, `npy`. */
const siteDataSchema = z
  .strictObject({
    csv: csvSourceSchema.optional(),
    idx: idxSourceSchema.optional(),
    npy: npySourceSchema.optional(),
  })
  .superRefine((data, ctx) => {
    const given = (['csv', 'idx', 'npy'] as const).filter((k) => data[k] !== undefined);
    if (given.length === 0) {
      ctx.addIssue({ code: 'custom', path: [], message: 'give the data files: one of csv, idx or npy' });
    } else if (given.length > 1) {
      ctx.addIssue({
        code: 'custom',
        path: [given[1]!],
        message: `give one of csv, idx or npy, not ${given.join(' and ')}`,
      });
    }
  });

/** The deterministic local split of the site's rows into training and validation rows. */
const validationSchema = z.strictObject({
  /** Share of the rows held out for validation, in (0, 1) (stratified by class). */
  fraction: z.number().gt(0).lt(1),
  /** uint32 seed of the split: the same seed and file give the same split. */
  seed: z.int().min(0).max(0xffff_ffff).default(1),
});

/** A bring-your-own trainer (carried for `src/trainer`): the command and its time limit. */
const trainerSchema = z.strictObject({
  /** Program and arguments, run without a shell. */
  command: z.array(z.string().min(1)).min(1),
  timeoutMs: z.int().min(1).max(86_400_000).default(600_000),
});

/**
 * Schema of a site's own configuration file (`cohort agent --site-config site.yaml`; never shared):
 * where the site's data files are (`data`: one of `csv`, `idx`, `npy`), the optional local
 * train/validation split (`validation`) and an optional external trainer (`trainer`). Strict like
 * the federation configuration: an unknown key is an error.
 */
export const siteConfigSchema = z.strictObject({
  data: siteDataSchema,
  validation: validationSchema.optional(),
  trainer: trainerSchema.optional(),
});

/** A validated site configuration as plain data (zod's output type of {@link siteConfigSchema}). */
export type SiteConfigData = z.output<typeof siteConfigSchema>;

/** What a site configuration file may contain before defaults are filled. */
export type SiteConfigInput = z.input<typeof siteConfigSchema>;

/**
 * A validated, frozen site configuration, as `loadSiteConfig` returns it: data paths resolved
 * against the file's folder and `file` the file it was read from (absent for a configuration built
 * in code, whose relative paths are then relative to the working directory).
 */
export type SiteConfig = DeepReadonly<SiteConfigData & { file?: string }>;
