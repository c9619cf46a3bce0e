import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import { eraseOlderThresholdKeys, erasePendingDeals, openSiteThreshold } from '../site-threshold.ts';
import type { AgentCore } from './agent-core.ts';
import { describe } from './voter.ts';

/**
 * Threshold keys: makes the site's keys those of key epoch `epochId` (what a RoundOpen names).
 * Nothing to do when they are; otherwise the epoch must be in the log (read up to now): the
 * site's key file of that generation is opened and checked against it, replaces the keys in
 * use, and key files of earlier generations and pending deals up to its generation are erased. Returns why it cannot, or undefined.
 */
export async function useEpoch(core: AgentCore, epochId: Uint8Array): Promise<string | undefined> {
  if (core.threshold !== null && bytesEqual(core.threshold.material.epochId, epochId)) return undefined;
  const hex = bytesToHex(epochId);
  try {
    await core.follower.sync();
  } catch (err) {
    return `the log cannot be read for key epoch ${hex}: ${describe(err)}`;
  }
  const logged = core.follower.history.thresholdEpochs.find((e) => bytesEqual(e.epochId, epochId));
  if (logged === undefined) return `key epoch ${hex} is not in the log`;
  const { ctx, member } = core;
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
