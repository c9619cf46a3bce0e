import type { ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import type { ControlBodies } from '../../protocol/index.ts';
import { makeShareBundle, shareContextOf } from '../../round/index.ts';
import { failpoint } from '../failpoint.ts';
import type { AgentCore } from './agent-core.ts';
import { replayProblem } from './round-attempt.ts';
import { describe } from './voter.ts';

/**
 * Threshold keys: a share request from the coordinator (already verified as its). A site of the
 * decrypting set answers with its share bundle for the round's aggregate (a request on
 * `cohort.F.share.<site>`); any other site ignores it. Refused without an answer: a request for a
 * round attempt the log does not have open (a replay), for fewer contributors than this site's own
 * `round.minContributors`, or that the site's position ledger refuses (a second context at one
 * attempt: `SHARES_CONTEXT_CHANGED`). Asked again for the same context, the site sends the same
 * bundle. Returns whether a bundle was sent.
 */
export async function onShareRequest(core: AgentCore, r: ControlBodies['share-request']): Promise<boolean> {
  const log = core.ctx.log.child({ round: r.round });
  if (!r.decrypting.some((d) => d.site === core.member)) return false;
  if (failpoint('agent.share-request', r.round) === 'skip') return false; // a decrypter that never answers
  const threshold = core.threshold;
  if (threshold === null || core.dataKey === null) {
    log.error(
      { reason: core.keysetError },
      'asked for decryption shares without threshold keys or a data key',
    );
    return false;
  }
  const replay = await replayProblem(core, 'share-request', r.round, r.attempt);
  if (replay !== undefined) {
    core.counters.replaysRefused++;
    log.warn({ reason: replay }, 'share request refused');
    return false;
  }
  const minimum = core.ctx.config.round.minContributors;
  if (r.contributors.length < minimum || r.minContributors < minimum) {
    log.warn(
      { contributors: r.contributors.length, minContributors: r.minContributors, mine: minimum },
      'share request refused: an aggregate this small would show individual updates',
    );
    return false;
  }
  let bundle: Uint8Array;
  try {
    bundle = makeShareBundle({
      lanes: core.ctx.ckks as ThresholdLaneContext,
      context: shareContextOf(r),
      material: threshold.material,
      signer: { id: core.member, key: core.ctx.signing },
      dataKey: core.dataKey,
      ledger: threshold.ledger,
    });
  } catch (err) {
    log.warn({ reason: describe(err) }, 'share request refused');
    return false;
  }
  try {
    await core.ctx.transport.request(core.ctx.subjects.share(core.member), bundle);
    log.info({ bytes: bundle.length, decrypting: r.decrypting.map((d) => d.site) }, 'decryption shares sent');
    return true;
  } catch (err) {
    log.error({ err }, 'decryption shares not acknowledged');
    return false;
  }
}
