import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import { epochAt } from '../../round/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import { eraseOlderThresholdKeys, erasePendingDeals, openSiteThreshold } from '../site-threshold.ts';
import type { AgentCore } from './agent-core.ts';
import { describe } from './voter.ts';

/**
 * Threshold keys: makes the site's keys those of key epoch `epochId`, which a RoundOpen or share
 * request of `round` names. It must be the epoch the log has in force at `round` (read up to the
 * round), and no site of its roster may be revoked by then (a re-sharing the coordinator skipped):
 * otherwise the site refuses the round, whatever the coordinator says. When its keys are another
 * epoch's, the site's key file of that generation is opened and checked, replaces the keys in use,
 * and key files of earlier generations and pending deals up to its generation are erased. Returns
 * why it cannot, or undefined.
 */
export async function useEpoch(
  core: AgentCore,
  epochId: Uint8Array,
  round: number,
): Promise<string | undefined> {
  const hex = bytesToHex(epochId);
  if (epochId.length === 0) return `round ${round} names no key epoch`;
  try {
    if (core.follower.history.lastRound < round) await core.follower.sync();
  } catch (err) {
    return `the log cannot be read for key epoch ${hex}: ${describe(err)}`;
  }
  const inForce = epochAt(core.thresholdGenesis ?? undefined, core.follower.history.thresholdEpochs, round);
  if (inForce === undefined) return `no key epoch is known for round ${round}`;
  if (!bytesEqual(inForce.epochId, epochId)) {
    return `round ${round} names key epoch ${hex}; the log has ${bytesToHex(inForce.epochId)} in force`;
  }
  const { ctx, member } = core;
  const revoked = inForce.roster.sites.find((s) => ctx.registryView.isRevoked(s.id, round));
  if (revoked !== undefined) {
    return `key epoch ${hex} has ${revoked.id}, revoked by round ${round}: a re-sharing is due`;
  }
  if (core.threshold !== null && bytesEqual(core.threshold.material.epochId, epochId)) return undefined;
  const logged = inForce.fromRound === 0 ? undefined : inForce;
  if (logged === undefined) return `this site holds no key of the key ceremony's epoch ${hex}`;
  if (!logged.roster.sites.some((s) => s.id === member)) return `this site is not in key epoch ${hex}`;
  let opened: ReturnType<typeof openSiteThreshold>;
  try {
    opened = openSiteThreshold({
      lanes: ctx.ckks as ThresholdLaneContext,
      keysDir: ctx.keysDir,
      dataDir: ctx.config.paths.dataDir,
      site: member,
      federation: ctx.config.federation.id,
      generation: logged.roster.generation,
    });
  } catch (err) {
    return `no key of epoch ${hex}: ${describe(err)}`;
  }
  if (!bytesEqual(opened.material.epochId, epochId)) {
    opened.close();
    return `the key file of generation ${logged.roster.generation} is not of epoch ${hex}`;
  }
  core.threshold?.close();
  core.threshold = opened;
  core.keyset = opened.keyset;
  core.keysetError = null;
  try {
    eraseOlderThresholdKeys(ctx.keysDir, member, logged.roster.generation);
    erasePendingDeals(ctx.config.paths.dataDir, member, logged.roster.generation);
  } catch (err) {
    ctx.log.warn({ err: describe(err) }, 'older threshold key files not erased');
  }
  ctx.log.info({ epoch: hex, generation: logged.roster.generation }, 'switched to a re-shared key epoch');
  return undefined;
}
