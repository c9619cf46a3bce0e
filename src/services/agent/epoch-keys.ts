import { AggregateMacKey } from '../../../crypto/mac/index.ts';
import { ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import { epochAt } from '../../round/index.ts';
import type { AgentCore } from './agent-core.ts';

/**
 * The data key of `round` at this site: under a shared key, or in the key ceremony's epoch, the
 * federation data key; in a re-shared epoch, that epoch's own data key (docs/threshold-ckks.md,
 * "Re-sharing"), which only the epoch's roster holds. Null when this site does not hold it (it
 * was not in that epoch's roster, or has no data key at all).
 */
export function dataKeyAt(core: AgentCore, round: number): Uint8Array | null {
  const id = epochKeyId(core, round);
  return id === '' ? core.dataKey : (core.epochDataKeys.get(id) ?? null);
}

/** The aggregate MAC key of `round` at this site (derived from {@link dataKeyAt}, kept), or null. */
export function macKeyAt(core: AgentCore, round: number): AggregateMacKey | null {
  if (core.options.macKeyOverride !== undefined) return core.options.macKeyOverride;
  const id = epochKeyId(core, round);
  if (id === '') return core.macKey;
  const held = core.macKeys.get(id);
  if (held !== undefined) return held;
  const key = core.epochDataKeys.get(id);
  if (key === undefined) return null;
  const mac = AggregateMacKey.fromDataKey(key, core.ctx.config.federation.id);
  core.macKeys.set(id, mac);
  return mac;
}

/** '' for the federation data key; otherwise the hex id of the re-shared epoch `round` is in. */
function epochKeyId(core: AgentCore, round: number): string {
  if (!(core.ctx.ckks instanceof ThresholdLaneContext)) return '';
  const epoch = epochAt(undefined, core.follower.history.thresholdEpochs, round);
  return epoch === undefined ? '' : Buffer.from(epoch.epochId).toString('hex');
}
