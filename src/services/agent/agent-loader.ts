import { join } from 'node:path';
import { AggregateMacKey } from '../../../crypto/mac/index.ts';
import { ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import { createStrategy, type StrategyConfig } from '../../../federation/index.ts';
import { createCpuEngine } from '../../../gpu/cpu/index.ts';
import type { Dataset, TrainingEngine } from '../../../gpu/index.ts';
import { createWebGpuEngine } from '../../../gpu/webgpu/index.ts';
import { openModelStore } from '../../versions/index.ts';
import { envelopeTrust, loadSiteDataKey, loadSiteKeyset } from '../key-ceremony.ts';
import type { MemberContext } from '../member-context.ts';
import {
  loadEpochDataKeys,
  openSiteThreshold,
  type SiteThreshold,
  thresholdKeyGenerations,
} from '../site-threshold.ts';
import { loadThresholdEpoch } from '../threshold-dealing.ts';
import type { AgentCore, AgentCounters, AgentOptions } from './agent-core.ts';
import type { AgentStateMachine } from './agent-state.ts';
import { federationGenesis } from './genesis.ts';
import { LogFollower } from './log-follower.ts';
import { loadAgentData, loadTestSet } from './site-data.ts';
import { engineEvaluator, evaluationState, trainerEvaluator } from './site-evaluation.ts';
import { openSiteTrainer } from './site-trainer.ts';
import { describe } from './voter.ts';

/**
 * Loads what a site agent works with (state LOADING): the CKKS keyset (a failure is not fatal: the
 * site then votes NO with `cannot decrypt: …`), the federation data key (snapshots; optional), its
 * data (checked first: the site's own files against the data contract with `options.siteConfig`,
 * else its IID MNIST shard), the genesis, the model store in `<paths.dataDir>/<member>` (not
 * initialised: recovery decides between genesis and a snapshot), a read-only view of the
 * federation log and the engine.
 * `ownsKeyset` is false when the keyset came from `options.keysetOverride`.
 */
export async function loadAgentCore(
  ctx: MemberContext,
  options: AgentOptions,
  machine: AgentStateMachine,
  counters: AgentCounters,
): Promise<{ core: AgentCore; ownsKeyset: boolean }> {
  const { config } = ctx;
  // The site's data first: a file that breaks the data contract stops the start before anything else.
  const data = loadAgentData(config, ctx.member, options.siteConfig, options.siteData);
  const genesis = federationGenesis(config);
  const trainer = await openSiteTrainer(ctx, data.siteConfig, genesis.spec);
  let keyset: AgentCore['keyset'] = null;
  let keysetError: string | null = null;
  let ownsKeyset = false;
  let threshold: SiteThreshold | null = null;
  let thresholdGenesis: AgentCore['thresholdGenesis'] = null;
  const override = options.keysetOverride;
  try {
    if (override === undefined && ctx.ckks instanceof ThresholdLaneContext) {
      const pin = config.members?.keyFingerprints?.threshold;
      const lanes = ctx.ckks;
      try {
        thresholdGenesis = {
          fromRound: 0,
          ...loadThresholdEpoch({
            dir: ctx.keysDir,
            federation: config.federation.id,
            ctx: lanes.tc,
            registry: ctx.registryView,
            ...(pin === undefined ? {} : { pin }),
          }),
        };
      } catch (err) {
        ctx.log.warn(
          { err: describe(err) },
          'the key ceremony epoch cannot be read: rounds before a re-sharing cannot be replayed',
        );
      }
      // The newest key file: a round's RoundOpen names the epoch, and the site switches then.
      const generation = thresholdKeyGenerations(ctx.keysDir, ctx.member)[0] ?? 0;
      threshold = openSiteThreshold({
        lanes,
        keysDir: ctx.keysDir,
        dataDir: config.paths.dataDir,
        site: ctx.member,
        federation: config.federation.id,
        generation,
        ...(pin === undefined ? {} : { pin }),
      });
      keyset = threshold.keyset;
    } else if (override === undefined) {
      keyset = loadSiteKeyset(ctx.ckks, ctx.keysDir, ctx.member, envelopeTrust(ctx));
      ownsKeyset = true;
    } else {
      keyset = typeof override === 'function' ? override() : override;
    }
  } catch (err) {
    keysetError = describe(err);
    ctx.log.error(
      { err: keysetError },
      'cannot load the CKKS key: this site will not train and will vote NO',
    );
  }
  let dataKey: Uint8Array | null = null;
  try {
    dataKey = loadSiteDataKey(ctx.keysDir, ctx.member, envelopeTrust(ctx));
  } catch (err) {
    keysetError ??= `no federation data key (the aggregate MAC's key): ${describe(err)}`;
    ctx.log.error(
      { err },
      'no federation data key: this site cannot tag its updates or check aggregates, and neither writes nor reads snapshots',
    );
  }
  let epochDataKeys = new Map<string, Uint8Array>();
  if (ctx.ckks instanceof ThresholdLaneContext) {
    try {
      epochDataKeys = loadEpochDataKeys(ctx.keysDir, ctx.member);
    } catch (err) {
      ctx.log.error({ err: describe(err) }, 'the data keys of re-shared epochs cannot be read');
    }
  }
  const macKey =
    options.macKeyOverride ??
    (dataKey === null ? null : AggregateMacKey.fromDataKey(dataKey, config.federation.id));
  const store = openModelStore(join(config.paths.dataDir, ctx.member));
  let follower: LogFollower;
  let engine: TrainingEngine;
  try {
    follower = await LogFollower.open(ctx.transport.connection, {
      federation: config.federation.id,
      coordinator: ctx.members.coordinator,
      keys: ctx.keys,
      genesis: genesis.commit,
      ...(options.sharedLogReads === undefined ? {} : { shared: options.sharedLogReads }),
    });
    engine = options.engine ?? (await createEngine(config.learning));
  } catch (err) {
    // Nothing owns the keys yet: wipe them and close the ledger before the failure goes up.
    threshold?.close();
    if (ownsKeyset) keyset?.delete();
    dataKey?.fill(0);
    throw err;
  }
  const core: AgentCore = {
    ctx,
    options,
    member: ctx.member,
    machine,
    strategy: createStrategy({ name: config.learning.strategy } as StrategyConfig),
    spec: genesis.spec,
    genesis: { commit: genesis.commit, parameters: genesis.parameters },
    shard: data.shard.data,
    examples: trainer?.description?.examples ?? data.shard.data.count,
    trainer,
    validation: data.validation,
    siteConfig: data.siteConfig,
    siteIndex: data.shard.index,
    store,
    follower,
    counters,
    engine,
    testSet: options.evaluate ? mnistTestSet(ctx) : null,
    keyset,
    keysetError,
    threshold,
    thresholdGenesis,
    epochAnswers: new Set(),
    epochDataKeys,
    macKeys: new Map(),
    dataKey,
    macKey,
    preparedRms: null,
    preparedRound: null,
    lastUpdate: null,
    lastUploadMs: 0,
    // Federated evaluation: each round's base model scored on the site's validation rows, by its
    // own trainer or the engine.
    evaluation: evaluationState(
      trainer !== null
        ? trainerEvaluator(trainer, genesis.spec, data.shard.data.classCount)
        : data.validation === null
          ? null
          : engineEvaluator(() => core.engine, genesis.spec, data.validation.classCount),
    ),
  };
  return { core, ownsKeyset };
}

/** Frees the engine, the keyset (when owned) and wipes the data key. */
export async function releaseAgentCore(core: AgentCore, ownsKeyset: boolean): Promise<void> {
  const engine = core.engine;
  core.engine = null;
  if (engine) await engine.dispose();
  if (ownsKeyset) core.keyset?.delete();
  core.keyset = null;
  core.threshold?.close();
  core.threshold = null;
  core.dataKey?.fill(0);
  core.dataKey = null;
  if (core.options.macKeyOverride === undefined) core.macKey?.delete();
  core.macKey = null;
  for (const k of core.epochDataKeys.values()) k.fill(0);
  core.epochDataKeys.clear();
  for (const k of core.macKeys.values()) k.delete();
  core.macKeys.clear();
}

async function createEngine(learning: MemberContext['config']['learning']): Promise<TrainingEngine> {
  return learning.engine === 'webgpu'
    ? createWebGpuEngine({ allowSoftware: learning.allowSoftwareGpu })
    : createCpuEngine();
}

/**
 * The bundled MNIST test set for `--evaluate`, when the federation learns MNIST-shaped rows (no data
 * contract, or a 1×28×28, 10-class image contract); otherwise null with a warning (federated
 * evaluation on the sites' validation rows reports accuracy instead).
 */
function mnistTestSet(ctx: MemberContext): Dataset | null {
  const contract = ctx.config.data;
  const mnistShaped =
    contract === undefined ||
    (contract.kind === 'image' &&
      contract.image?.channels === 1 &&
      contract.image.height === 28 &&
      contract.image.width === 28 &&
      contract.label.classes.length === 10);
  if (!mnistShaped) {
    ctx.log.warn('--evaluate scores on the MNIST test set, which does not fit this data contract: ignored');
    return null;
  }
  return loadTestSet(ctx.config);
}
