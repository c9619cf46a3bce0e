import { z } from 'zod';
import { robustRuleSchema } from '../config/aggregation-schema.ts';
import { layersSchema, MODEL_KINDS } from '../config/model-schema.ts';

const idxPairSchema = z.strictObject({ images: z.string().min(1), labels: z.string().min(1) });

const dataSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('mnist'),
    /** Use only the first N training rows (for short runs). */
    trainLimit: z.int().min(1).optional(),
    testLimit: z.int().min(1).optional(),
  }),
  z.strictObject({
    kind: z.literal('csv'),
    path: z.string().min(1),
    labelColumn: z.string().min(1),
    classCount: z.int().min(2),
    /** Columns that are not features (e.g. a site column). */
    dropColumns: z.array(z.string()).default(() => []),
    testFraction: z.number().gt(0).lt(1).default(0.2),
    standardize: z.boolean().default(true),
  }),
  z.strictObject({
    kind: z.literal('idx'),
    /** IDX images `[n, …]` (unsigned bytes, scaled to [0, 1]) and labels `[n]`, gzip or not; relative to the experiment file. */
    train: idxPairSchema,
    test: idxPairSchema,
    classCount: z.int().min(2).max(256).default(10),
    trainLimit: z.int().min(1).optional(),
    testLimit: z.int().min(1).optional(),
  }),
  z.strictObject({
    kind: z.literal('npy'),
    /** `.npy` features `[n, d]` or `[n, h, w]` (flattened) and labels `[n]`; relative to the experiment file. */
    features: z.string().min(1),
    labels: z.string().min(1),
    classCount: z.int().min(2).max(256),
    testFraction: z.number().gt(0).lt(1).default(0.2),
    standardize: z.boolean().default(true),
  }),
]);

/** Paths of a data source, as `[field path, file]`, e.g. `['data.train.images', 'x.idx.gz']`. */
export function dataPaths(data: DataConfig): [string, string][] {
  switch (data.kind) {
    case 'mnist':
      return [];
    case 'csv':
      return [['data.path', data.path]];
    case 'idx':
      return [
        ['data.train.images', data.train.images],
        ['data.train.labels', data.train.labels],
        ['data.test.images', data.test.images],
        ['data.test.labels', data.test.labels],
      ];
    case 'npy':
      return [
        ['data.features', data.features],
        ['data.labels', data.labels],
      ];
  }
}

const partitionSchema = z.strictObject({
  kind: z.enum(['iid', 'dirichlet', 'shards', 'column']).default('iid'),
  sites: z.int().min(1).max(10_000).default(10),
  /** Dirichlet concentration (kind dirichlet). */
  alpha: z.number().gt(0).default(0.5),
  /** Shards per site (kind shards). */
  shardsPerSite: z.int().min(1).default(2),
  /** CSV column naming each row's site (kind column). */
  column: z.string().optional(),
});

const modelSchema = z
  .strictObject({
    /**
     * `2nn`, `mlp` (dense `hidden`…), `logreg`, `cnn` (the FedAvg paper's MNIST CNN) or `custom`
     * (`layers`, as `learning.layers` of a federation configuration).
     */
    kind: z.enum(MODEL_KINDS).default('2nn'),
    hidden: z.array(z.int().min(1)).default(() => [200, 200]),
    /** Layers of a `custom` model; only with `custom`. */
    layers: layersSchema.optional(),
    /**
     * Shape of one sample, [channels, height, width], for `cnn` and `custom` (the features of a row
     * in CHW order); default [1, 28, 28] for MNIST, required for other image data.
     */
    input: z
      .array(
        z
          .int()
          .min(1)
          .max(1 << 16),
      )
      .length(3)
      .optional(),
    initSeed: z.int().min(0).max(0xffffffff).default(1),
  })
  .superRefine((model, ctx) => {
    if ((model.kind === 'custom') !== (model.layers !== undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['layers'],
        message:
          model.kind === 'custom'
            ? "kind 'custom' needs its layers"
            : `only kind 'custom' takes layers, not '${model.kind}'`,
      });
    }
  });

const trainingSchema = z.strictObject({
  engine: z.enum(['cpu', 'webgpu']).default('cpu'),
  /** Allow a software WebGPU adapter (Mesa lavapipe) when no GPU is found. */
  allowSoftwareGpu: z.boolean().default(false),
  /** Fraction C of sites sampled per round. */
  clientFraction: z.number().gt(0).max(1).default(0.1),
  epochs: z.int().min(1).default(1),
  batchSize: z.int().min(1).default(10),
  learningRate: z.number().gt(0).default(0.1),
  /** Multiply the learning rate by this every round (1 = constant). */
  learningRateDecay: z.number().gt(0).max(1).default(1),
  momentum: z.number().min(0).lt(1).default(0),
  /**
   * Worker threads training the sampled sites in parallel (CPU engine only): same results as one,
   * in about 1/workers of the time on that many cores.
   */
  workers: z.int().min(1).max(64).default(1),
});

const strategySchema = z.strictObject({
  name: z.enum(['fedavg', 'fedprox', 'fedadam', 'fedyogi']).default('fedavg'),
  serverLearningRate: z.number().gt(0).optional(),
  /** FedProx proximal coefficient μ. */
  mu: z.number().min(0).optional(),
  beta1: z.number().min(0).lt(1).optional(),
  beta2: z.number().min(0).lt(1).optional(),
  tau: z.number().gt(0).optional(),
});

const codecSchema = z.strictObject({
  /** float32: exact FedAvg; quantized: error-feedback quantizer in the clear; he: the real CKKS codec. */
  mode: z.enum(['float32', 'quantized', 'he']).default('float32'),
  bits: z.union([z.literal(1), z.literal(2), z.literal(4), z.literal(8)]).default(8),
  /** Clip of round 1; later rounds use clipMultiplier × the mean RMS of the previous round's updates. */
  initialClip: z.number().gt(0).default(0.01),
  clipMultiplier: z.number().gt(0).default(4),
  maxContributors: z.int().min(1).max(65_535).default(32),
});

const privacySchema = z
  .strictObject({
    /**
     * ε the run may spend. With no `noiseMultiplier`, the multiplier is calibrated so that
     * `plannedRounds` rounds spend exactly this; either way the run stops before a round would pass it.
     */
    epsilon: z.number().gt(0).optional(),
    /** Standard deviation of the summed noise over the L2 sensitivity. */
    noiseMultiplier: z.number().gt(0).optional(),
    delta: z.number().gt(0).lt(1).default(1e-5),
    /** L2 norm every site's update is clipped to (model units). */
    clipNorm: z.number().gt(0),
    /** Rounds the calibration plans for; default the run's `rounds`. */
    plannedRounds: z.int().min(1).optional(),
  })
  .refine((p) => p.epsilon !== undefined || p.noiseMultiplier !== undefined, {
    message: 'needs epsilon (a budget), noiseMultiplier, or both',
  });

const attackSchema = z.strictObject({
  /** sign-flip sends −factor·Δ, scaling sends factor·Δ, label-flip trains on labels c ↦ classes − 1 − c. */
  kind: z.enum(['sign-flip', 'scaling', 'label-flip']),
  /** Share of the sites that attack, chosen once per run from the seed. */
  fraction: z.number().gt(0).lt(1),
  /** Default 1 for sign-flip, 10 for scaling. */
  factor: z.number().gt(0).optional(),
});

const aggregationSchema = robustRuleSchema.default({ name: 'mean' });

/** One fully specified simulation run. */
export const runSchema = z.strictObject({
  name: z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$/),
  seed: z.int().min(0).max(0xffffffff).default(1),
  rounds: z.int().min(1).max(100_000),
  /** Accuracy whose first crossing is reported as "rounds to target". */
  targetAccuracy: z.number().gt(0).max(1).default(0.97),
  /**
   * A published result for the same setting, shown as the results table's last row: where it is
   * from (paper, table and row) and its rounds to `targetAccuracy`.
   */
  reference: z
    .strictObject({ source: z.string().min(1).max(200), roundsToTarget: z.int().min(1) })
    .optional(),
  /** End the run at the first evaluated round that reaches `targetAccuracy` instead of running all `rounds`. */
  stopAtTarget: z.boolean().default(false),
  /** Evaluate on the test set every N rounds (and always at the last round). */
  evalEvery: z.int().min(1).default(1),
  data: dataSchema,
  partition: partitionSchema.default(() => partitionSchema.parse({})),
  model: modelSchema.default(() => modelSchema.parse({})),
  training: trainingSchema.default(() => trainingSchema.parse({})),
  strategy: strategySchema.default(() => strategySchema.parse({})),
  codec: codecSchema.default(() => codecSchema.parse({})),
  /**
   * Distributed differential privacy (the Skellam mechanism on integer levels, site-level, sites
   * sampled secretly at rate `training.clientFraction`); needs `codec.mode: quantized`.
   */
  privacy: privacySchema.optional(),
  /** Sites that poison their updates or their labels. */
  attack: attackSchema.optional(),
  /** How the server combines the round's updates: the mean, or a robust rule (plain updates only). */
  aggregation: aggregationSchema,
});

/**
 * An experiment file: the shared settings of a run (everything but `name`), an output folder, and
 * the list of runs, each a partial override deep-merged over the shared settings.
 */
export const experimentSchema = z.strictObject({
  experiment: z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$/),
  /** Where metrics (JSONL), the summary and the plot go. */
  outputDir: z.string().default('results'),
  base: z.record(z.string(), z.unknown()),
  runs: z.array(z.looseObject({ name: z.string() })).min(1),
});

export type RunConfig = z.output<typeof runSchema>;
/** The `data` section of a run: MNIST, or CSV, IDX or `.npy` files by path. */
export type DataConfig = z.output<typeof dataSchema>;
export type ExperimentFile = z.output<typeof experimentSchema>;
/** The `privacy` section of a run. */
export type PrivacyConfig = z.output<typeof privacySchema>;
/** The `attack` section of a run. */
export type AttackSection = z.output<typeof attackSchema>;
