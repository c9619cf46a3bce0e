import { counterRandom } from '../../../federation/index.ts';
import type { TrainResult } from '../../../gpu/index.ts';
import type { ControlBodies } from '../../protocol/index.ts';
import type { AgentCore } from './agent-core.ts';
import { standardizationOf } from './site-evaluation.ts';
import type { SiteRows } from './site-rows.ts';

/**
 * Trains the round's base model `w` locally: with the site's own trainer process when its site
 * configuration names one (bring your own trainer: it reads its own rows and applies the
 * federation's standardization itself), else with the engine on `rows.train`. Stops early on
 * `signal` or at `stopAtUnixMs` (the engine cuts mini-batches; a trainer process is told the
 * deadline and killed on abort).
 */
export async function trainLocally(
  core: AgentCore,
  w: Float32Array,
  rows: SiteRows,
  open: ControlBodies['round-open'],
  signal: AbortSignal,
  stopAtUnixMs: number,
): Promise<TrainResult> {
  const learning = core.ctx.config.learning;
  const settings = {
    learningRate: learning.learningRate,
    batchSize: learning.batchSize,
    epochs: learning.epochs,
    proximalMu: core.strategy.clientProximalMu,
    shuffleSeed: counterRandom(learning.initSeed >>> 0, open.round >>> 0, core.siteIndex),
  };
  if (core.trainer !== null) {
    const standardization = standardizationOf(rows);
    const trained = await core.trainer.train(
      core.spec,
      w,
      {
        ...settings,
        round: open.round,
        deadlineUnixMs: Math.floor(stopAtUnixMs),
        ...(standardization === undefined ? {} : { standardization }),
      },
      signal,
    );
    return {
      parameters: trained.parameters,
      meanLoss: trained.meanLoss,
      samples: trained.examples * learning.epochs,
      steps: trained.steps,
      stopped: 'complete',
    };
  }
  return core.engine!.train(core.spec, w, rows.train, { ...settings, momentum: 0, signal, stopAtUnixMs });
}
