import {
  counterRandom,
  defineModel,
  FEDAVG_CNN,
  initParameters,
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
import { createStrategy, type StrategyConfig, type StrategyState } from '../../federation/strategy/index.ts';
import { createCpuEngine } from '../../gpu/cpu/index.ts';
import type { Dataset, TrainingEngine } from '../../gpu/index.ts';
import { createWebGpuEngine } from '../../gpu/webgpu/index.ts';
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
import { TrainPool } from './train-pool.ts';
import {
  type Contribution,
  float32Channel,
  heChannel,
  quantizedChannel,
  type UpdateChannel,
} from './update-channel.ts';

/** Metrics of one round. */
export interface RoundMetrics {
  readonly run: string;
  readonly round: number;
  /** Mean local training loss of the sampled sites. */
  readonly trainLoss: number;
  /** Test loss and accuracy of the new global model (null when not evaluated this round). */
  readonly testLoss: number | null;
  readonly accuracy: number | null;
  /** Bytes sent by sites this round. */
  readonly bytesUp: number;
  readonly clip: number | null;
  readonly sites: number;
  readonly seconds: number;
}

/** Outcome of a run. */
export interface RunSummary {
  readonly run: string;
  readonly engine: string;
  readonly mode: string;
  readonly bits: number | null;
  /** Rounds run: the configured count, or fewer when `stopAtTarget` ended the run early. */
  readonly rounds: number;
  readonly targetAccuracy: number;
  /** First evaluated round reaching the target, or null. */
  readonly roundsToTarget: number | null;
  readonly finalAccuracy: number;
  readonly bestAccuracy: number;
  readonly totalBytesUp: number;
  readonly seconds: number;
}

/** Callbacks for progress display and metric sinks. */
export interface SimulationHooks {
  onClientDone?(run: string, round: number, done: number, total: number): void;
  onRound?(metrics: RoundMetrics): void;
}

interface LoadedData {
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

function loadData(cfg: RunConfig): LoadedData {
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
function modelOf(cfg: RunConfig, data: Dataset): ModelSpec {
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

function partition(cfg: RunConfig, data: LoadedData): Uint32Array[] {
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

/** m = max(1, round(C·K)) distinct sites, chosen by a seeded partial Fisher–Yates shuffle. */
export function sampleSites(sites: number, fraction: number, seed: number, round: number): number[] {
  const m = Math.max(1, Math.round(fraction * sites));
  const pool = Array.from({ length: sites }, (_, i) => i);
  for (let i = 0; i < m; i++) {
    const j = i + Math.floor((counterRandom(seed >>> 0, (0x10000 + round) >>> 0, i) / 2 ** 32) * (sites - i));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, m).sort((a, b) => a - b);
}

function strategyConfig(cfg: RunConfig): StrategyConfig {
  const s = cfg.strategy;
  const defined = Object.fromEntries(Object.entries(s).filter(([, v]) => v !== undefined));
  return defined as unknown as StrategyConfig;
}

async function createEngine(cfg: RunConfig): Promise<TrainingEngine> {
  return cfg.training.engine === 'cpu'
    ? createCpuEngine()
    : createWebGpuEngine({ allowSoftware: cfg.training.allowSoftwareGpu });
}

async function createChannel(cfg: RunConfig): Promise<UpdateChannel> {
  const c = cfg.codec;
  if (c.mode === 'float32') return float32Channel();
  if (c.mode === 'quantized') return quantizedChannel(c.bits, cfg.seed);
  return heChannel(c.bits, cfg.seed, c.maxContributors, 'simulation');
}

/**
 * Runs one simulated federation in this process: N virtual sites hold partitions of the data;
 * each round samples C·N of them, trains each locally on the chosen engine from the global model,
 * moves the weighted updates through the chosen channel (float32, quantized with error feedback,
 * or the real CKKS codec), applies the server strategy, and evaluates on the test set.
 */
export async function runSimulation(cfg: RunConfig, hooks: SimulationHooks = {}): Promise<RunSummary> {
  const started = performance.now();
  const data = loadData(cfg);
  const spec = modelOf(cfg, data.train);
  const parts = partition(cfg, data);
  const sampledPerRound = Math.max(1, Math.round(cfg.training.clientFraction * parts.length));
  if (cfg.codec.mode === 'he' && sampledPerRound > cfg.codec.maxContributors) {
    throw new InvalidArgumentError(
      `codec.maxContributors ${cfg.codec.maxContributors} is below the ${sampledPerRound} sites sampled per round`,
    );
  }
  const siteData = parts.map((idx) => subset(data.train, idx));
  if (cfg.training.workers > 1 && cfg.training.engine !== 'cpu') {
    throw new InvalidArgumentError(`training.workers ${cfg.training.workers} needs training.engine cpu`);
  }
  const engine = await createEngine(cfg);
  // Several CPU workers train the round's sites side by side (the same results as one after another).
  const pool =
    cfg.training.workers > 1 ? new TrainPool(cfg.training.workers, spec, data.train, data.test, parts) : null;
  const channel = await createChannel(cfg);
  const strategy = createStrategy(strategyConfig(cfg));
  let global = initParameters(spec, cfg.model.initSeed);
  let state: StrategyState | null = null;
  let clip = cfg.codec.initialClip;
  let lr = cfg.training.learningRate;
  let roundsToTarget: number | null = null;
  let roundsRun = 0;
  let finalAccuracy = 0;
  let bestAccuracy = 0;
  let totalBytes = 0;
  try {
    for (let round = 1; round <= cfg.rounds; round++) {
      const t0 = performance.now();
      const chosen = sampleSites(parts.length, cfg.training.clientFraction, cfg.seed, round);
      const totalExamples = chosen.reduce((a, s) => a + siteData[s]!.count, 0);
      const contributions: Contribution[] = [];
      let lossSum = 0;
      const settings = (site: number) => ({
        learningRate: lr,
        momentum: cfg.training.momentum,
        batchSize: cfg.training.batchSize,
        epochs: cfg.training.epochs,
        proximalMu: strategy.clientProximalMu,
        shuffleSeed: counterRandom(cfg.seed >>> 0, round >>> 0, site),
      });
      let done = 0;
      const trainSite = async (site: number) => {
        const r =
          pool === null
            ? await engine.train(spec, global, siteData[site]!, settings(site))
            : await pool.train(site, global, settings(site));
        hooks.onClientDone?.(cfg.name, round, ++done, chosen.length);
        return r;
      };
      // One engine trains one site at a time; a pool trains as many at once as it has workers.
      const results = [];
      if (pool === null) for (const site of chosen) results.push(await trainSite(site));
      else results.push(...(await Promise.all(chosen.map(trainSite))));
      for (const [k, site] of chosen.entries()) {
        const local = siteData[site]!;
        const result = results[k]!;
        // Weighted share n_k·m/N: the plain mean of the contributions is FedAvg's weighted mean.
        const scale = (local.count * chosen.length) / totalExamples;
        const update = new Float32Array(global.length);
        for (let i = 0; i < update.length; i++) update[i] = (result.parameters[i]! - global[i]!) * scale;
        contributions.push({ site, update });
        lossSum += result.meanLoss * local.count;
      }
      const usedClip = channel.mode === 'float32' ? null : clip;
      const agg = await channel.aggregate(round, clip, contributions);
      totalBytes += agg.bytesUp;
      const next = strategy.apply(global, agg.mean, state);
      global = next.parameters;
      state = next.state;
      clip = Math.max(cfg.codec.clipMultiplier * agg.meanRms, 1e-8);
      lr *= cfg.training.learningRateDecay;

      let testLoss: number | null = null;
      let accuracy: number | null = null;
      if (round % cfg.evalEvery === 0 || round === cfg.rounds) {
        const ev =
          pool === null ? await engine.evaluate(spec, global, data.test) : await pool.evaluate(global);
        testLoss = ev.loss;
        accuracy = ev.accuracy;
        finalAccuracy = ev.accuracy;
        bestAccuracy = Math.max(bestAccuracy, ev.accuracy);
        if (roundsToTarget === null && ev.accuracy >= cfg.targetAccuracy) roundsToTarget = round;
      }
      hooks.onRound?.({
        run: cfg.name,
        round,
        trainLoss: lossSum / totalExamples,
        testLoss,
        accuracy,
        bytesUp: agg.bytesUp,
        clip: usedClip,
        sites: chosen.length,
        seconds: (performance.now() - t0) / 1000,
      });
      roundsRun = round;
      if (cfg.stopAtTarget && roundsToTarget !== null) break;
    }
  } finally {
    channel.dispose();
    await pool?.close();
    await engine.dispose();
  }
  return {
    run: cfg.name,
    engine: pool === null ? engine.description : `${engine.description} × ${cfg.training.workers} workers`,
    mode: cfg.codec.mode,
    bits: cfg.codec.mode === 'float32' ? null : cfg.codec.bits,
    rounds: roundsRun,
    targetAccuracy: cfg.targetAccuracy,
    roundsToTarget,
    finalAccuracy,
    bestAccuracy,
    totalBytesUp: totalBytes,
    seconds: (performance.now() - started) / 1000,
  };
}
