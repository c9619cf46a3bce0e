import {
  defineModel,
  FEDAVG_CNN,
  type LayerSpec,
  logisticRegression,
  MNIST_2NN,
  type ModelSpec,
  mlp,
  modelLayout,
} from '../../federation/index.ts';
import {
  partitionByColumn,
  partitionDirichlet,
  partitionIid,
  partitionShards,
} from '../../federation/partition/index.ts';
import type { Dataset } from '../../gpu/index.ts';
import {
  applyStandardizer,
  fitStandardizer,
  loadIdxDataset,
  loadMnist,
  loadNpyDataset,
  readCsvColumns,
  readCsvDataset,
  subset,
  trainTestSplit,
} from '../data/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import type { RunConfig } from './experiment-schema.ts';

// What a simulation run is made of before its first round: its data, model and partition.

/** A run's training and test data, and the site column of a CSV partitioned by column. */
export interface LoadedData {
  train: Dataset;
  test: Dataset;
  siteColumn?: readonly string[];
}

/** Seeded train/test split, then (optionally) standardization fitted on the training rows. */
function splitAndStandardize(
  all: Dataset,
  testFraction: number,
  standardize: boolean,
  seed: number,
): LoadedData & { split: ReturnType<typeof trainTestSplit> } {
  const split = trainTestSplit(all, testFraction, seed);
  let train = subset(all, split.train);
  let test = subset(all, split.test);
  if (standardize) {
    const s = fitStandardizer(train);
    train = applyStandardizer(train, s);
    test = applyStandardizer(test, s);
  }
  return { train, test, split };
}

/** Loads `cfg.data` (seeded split and standardization where the source has no test set). */
export function loadData(cfg: RunConfig): LoadedData {
  const d = cfg.data;
  if (d.kind === 'mnist') {
    return {
      train: loadMnist('train', { limit: d.trainLimit }),
      test: loadMnist('test', { limit: d.testLimit }),
    };
  }
  if (d.kind !== 'csv' && cfg.partition.kind === 'column') {
    throw new InvalidArgumentError(
      `partition.kind column needs CSV data (a site column), data.kind is ${d.kind}`,
    );
  }
  if (d.kind === 'idx') {
    const opts = { classCount: d.classCount };
    return {
      train: loadIdxDataset(d.train.images, d.train.labels, { ...opts, limit: d.trainLimit }),
      test: loadIdxDataset(d.test.images, d.test.labels, { ...opts, limit: d.testLimit }),
    };
  }
  if (d.kind === 'npy') {
    const all = loadNpyDataset(d.features, d.labels, { classCount: d.classCount });
    return splitAndStandardize(all, d.testFraction, d.standardize, cfg.seed);
  }
  const csv = readCsvDataset(d.path, {
    labelColumn: d.labelColumn,
    classCount: d.classCount,
    dropColumns: [...d.dropColumns],
  });
  const { train, test, split } = splitAndStandardize(csv.dataset, d.testFraction, d.standardize, cfg.seed);
  let siteColumn: string[] | undefined;
  if (cfg.partition.kind === 'column') {
    const column = cfg.partition.column;
    if (!column) throw new InvalidArgumentError('partition.column is required when partition.kind is column');
    const all = readCsvColumns(d.path)[column];
    if (!all)
      throw new InvalidArgumentError(
        `partition.column ${JSON.stringify(column)} is not a column of ${d.path}`,
      );
    siteColumn = Array.from(split.train, (i) => all[i]!);
  }
  return { train, test, siteColumn };
}

/**
 * The model of `cfg.model` for `data`'s features and classes. `cnn` and `custom` see each row as an
 * image of `model.input` ([1, 28, 28] for MNIST); a shape that does not fit fails naming the field.
 */
export function modelOf(cfg: RunConfig, data: Dataset): ModelSpec {
  const { kind, hidden } = cfg.model;
  if (kind === '2nn') {
    if (data.featureCount !== 784 || data.classCount !== 10) {
      throw new InvalidArgumentError(
        `model.kind 2nn needs 784 features and 10 classes, data has ${data.featureCount} and ${data.classCount}`,
      );
    }
    return MNIST_2NN;
  }
  if (kind === 'logreg') return logisticRegression(data.featureCount, data.classCount);
  if (kind === 'mlp') return mlp(data.featureCount, hidden, data.classCount);
  const input = cfg.model.input ?? (cfg.data.kind === 'mnist' ? [1, 28, 28] : undefined);
  if (input === undefined) {
    throw new InvalidArgumentError(
      `model.input is required for model.kind ${kind} on ${cfg.data.kind} data: the [channels, height, width] of a row`,
    );
  }
  const values = input.reduce((a, d) => a * d, 1);
  if (values !== data.featureCount) {
    throw new InvalidArgumentError(
      `model.input [${input.join(', ')}] holds ${values} values, the data has ${data.featureCount} features per row`,
    );
  }
  const layers: readonly LayerSpec[] =
    kind === 'cnn'
      ? FEDAVG_CNN.layers.map((l, i) =>
          i === FEDAVG_CNN.layers.length - 2 ? { type: 'dense' as const, units: data.classCount } : l,
        )
      : (cfg.model.layers ?? []);
  // Names the bad field as the experiment file does: model.layers[2].kernel.
  const spec = { name: kind, input, layers };
  const layout = modelLayout(spec, 'model');
  if (layout.classes !== data.classCount) {
    throw new InvalidArgumentError(
      `model.layers: the last dense layer has ${layout.classes} units, the data has ${data.classCount} classes`,
    );
  }
  return defineModel(kind, input, layers);
}

/** The training rows of each site, by `cfg.partition`. */
export function partition(cfg: RunConfig, data: LoadedData): Uint32Array[] {
  const p = cfg.partition;
  const seed = cfg.seed;
  switch (p.kind) {
    case 'iid':
      return partitionIid(data.train.count, p.sites, seed);
    case 'dirichlet':
      return partitionDirichlet(data.train.labels, data.train.classCount, p.sites, p.alpha, seed);
    case 'shards':
      return partitionShards(data.train.labels, p.sites, p.shardsPerSite, seed);
    case 'column':
      return partitionByColumn(data.siteColumn!).indices;
  }
}
