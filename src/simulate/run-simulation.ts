import { attackingSites, flipLabels, poisonUpdate } from '../../federation/attack/index.ts';
import { counterRandom, initParameters } from '../../federation/index.ts';
import { robustAggregate } from '../../federation/robust/index.ts';
import { createStrategy, type StrategyConfig, type StrategyState } from '../../federation/strategy/index.ts';
import { createCpuEngine } from '../../gpu/cpu/index.ts';
import type { Dataset, TrainingEngine } from '../../gpu/index.ts';
import { createWebGpuEngine } from '../../gpu/webgpu/index.ts';
import { subset } from '../data/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import type { RunConfig } from './experiment-schema.ts';
import { PrivateAggregation } from './private-aggregation.ts';
import { loadData, modelOf, partition } from './simulation-setup.ts';
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
  /** Sampled sites that attack (0 without an attack). */
  readonly attackers: number;
  /** ε spent after this round (null without privacy). */
  readonly epsilon: number | null;
  /** The run's noise multiplier z (null without privacy). */
  readonly noiseMultiplier: number | null;
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
  /** Privacy: the noise multiplier used, ε spent, and whether the budget ended the run. */
  readonly privacy: {
    noiseMultiplier: number;
    epsilon: number;
    delta: number;
    stoppedAtBudget: boolean;
  } | null;
  readonly seconds: number;
}

/** Callbacks for progress display and metric sinks. */
export interface SimulationHooks {
  onClientDone?(run: string, round: number, done: number, total: number): void;
  onRound?(metrics: RoundMetrics): void;
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
  checkRunSections(cfg);
  const attackers = cfg.attack
    ? attackingSites(parts.length, cfg.attack.fraction, cfg.seed)
    : new Set<number>();
  // Label flipping poisons the attackers' rows of the training set (partitions are disjoint).
  const train = cfg.attack?.kind === 'label-flip' ? flipRowsOf(data.train, parts, attackers) : data.train;
  const siteData = parts.map((idx) => subset(train, idx));
  if (cfg.training.workers > 1 && cfg.training.engine !== 'cpu') {
    throw new InvalidArgumentError(`training.workers ${cfg.training.workers} needs training.engine cpu`);
  }
  const engine = await createEngine(cfg);
  // Several CPU workers train the round's sites side by side (the same results as one after another).
  const pool =
    cfg.training.workers > 1 ? new TrainPool(cfg.training.workers, spec, train, data.test, parts) : null;
  const channel = await createChannel(cfg);
  const strategy = createStrategy(strategyConfig(cfg));
  const privacy =
    cfg.privacy === undefined
      ? null
      : new PrivateAggregation(cfg.privacy, {
          sites: parts.length,
          dimension: initParameters(spec, cfg.model.initSeed).length,
          samplingRate: cfg.training.clientFraction,
          rounds: cfg.rounds,
          seed: cfg.seed,
        });
  let stoppedAtBudget = false;
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
      if (privacy !== null && !privacy.allowsRound()) {
        stoppedAtBudget = true;
        break;
      }
      const chosen =
        privacy === null
          ? sampleSites(parts.length, cfg.training.clientFraction, cfg.seed, round)
          : privacy.sample(round);
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
        // Under DP every site counts once: a weight would scale one site's sensitivity.
        const scale = privacy === null ? (local.count * chosen.length) / totalExamples : 1;
        const update = new Float32Array(global.length);
        for (let i = 0; i < update.length; i++) update[i] = (result.parameters[i]! - global[i]!) * scale;
        const sent = cfg.attack && attackers.has(site) ? poisonUpdate(update, cfg.attack) : update;
        contributions.push({ site, update: sent });
        lossSum += result.meanLoss * local.count;
      }
      const usedClip = channel.mode === 'float32' || privacy !== null ? null : clip;
      let epsilon: number | null = null;
      let mean: Float32Array;
      let bytesUp: number;
      if (privacy !== null) {
        const released = privacy.aggregate(round, global.length, contributions);
        bytesUp = released.bytesUp;
        epsilon = released.spent.epsilon;
        mean = released.mean;
      } else {
        const agg = await aggregateRound(cfg, channel, round, clip, contributions);
        bytesUp = agg.bytesUp;
        mean = agg.mean;
        clip = Math.max(cfg.codec.clipMultiplier * agg.meanRms, 1e-8);
      }
      totalBytes += bytesUp;
      const next = strategy.apply(global, mean, state);
      global = next.parameters;
      state = next.state;
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
        trainLoss: totalExamples === 0 ? Number.NaN : lossSum / totalExamples,
        testLoss,
        accuracy,
        bytesUp,
        clip: usedClip,
        sites: chosen.length,
        attackers: chosen.filter((site) => attackers.has(site)).length,
        epsilon,
        noiseMultiplier: privacy?.plan.settings.noiseMultiplier ?? null,
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
    mode: privacy === null ? cfg.codec.mode : 'skellam',
    bits: cfg.codec.mode === 'float32' || privacy !== null ? null : cfg.codec.bits,
    rounds: roundsRun,
    targetAccuracy: cfg.targetAccuracy,
    roundsToTarget,
    finalAccuracy,
    bestAccuracy,
    totalBytesUp: totalBytes,
    privacy:
      privacy === null
        ? null
        : {
            noiseMultiplier: privacy.plan.settings.noiseMultiplier,
            epsilon: privacy.ledger.spent().epsilon,
            delta: privacy.ledger.delta,
            stoppedAtBudget,
          },
    seconds: (performance.now() - started) / 1000,
  };
}

/** Fails naming the field when the run's privacy, attack and aggregation sections do not fit together. */
function checkRunSections(cfg: RunConfig): void {
  if (cfg.privacy !== undefined && cfg.codec.mode !== 'quantized') {
    throw new InvalidArgumentError(
      `privacy needs codec.mode quantized (the noise is added to integer levels), not ${cfg.codec.mode}`,
    );
  }
  const robust = cfg.aggregation.name !== 'mean' || cfg.aggregation.normBound !== undefined;
  if (robust && (cfg.privacy !== undefined || cfg.codec.mode === 'he')) {
    throw new InvalidArgumentError(
      `aggregation ${cfg.aggregation.name} looks at each update: it needs plain updates (codec.mode float32 or quantized, no privacy)`,
    );
  }
}

/** The training set with the labels of `attackers`' rows flipped. */
function flipRowsOf(train: Dataset, parts: readonly Uint32Array[], attackers: ReadonlySet<number>): Dataset {
  const labels = train.labels.slice();
  for (const site of attackers) {
    const rows = parts[site]!;
    const flipped = flipLabels(
      Uint8Array.from(rows, (r) => labels[r]!),
      train.classCount,
    );
    rows.forEach((r, k) => {
      labels[r] = flipped[k]!;
    });
  }
  return { ...train, labels };
}

/** The round's mean through the channel, or the robust rule over the updates the server decodes. */
async function aggregateRound(
  cfg: RunConfig,
  channel: UpdateChannel,
  round: number,
  clip: number,
  contributions: readonly Contribution[],
): Promise<{ mean: Float32Array; bytesUp: number; meanRms: number }> {
  const rule = cfg.aggregation;
  if (rule.name === 'mean' && rule.normBound === undefined)
    return channel.aggregate(round, clip, contributions);
  const collected = await channel.collect!(round, clip, contributions);
  return { ...collected, mean: robustAggregate(collected.updates, rule).mean };
}
