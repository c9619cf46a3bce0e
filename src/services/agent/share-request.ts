import { bytesEqual } from '../../../crypto/digest/index.ts';
import { holds, type ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import { CONTROL_MAX_BYTES, type ControlBodies } from '../../protocol/index.ts';
import { makeShareBundleYielding, shareContextOf, shareRequestObjectName } from '../../round/index.ts';
import { failpoint } from '../failpoint.ts';
import { aggregateStore } from '../store/index.ts';
import type { AgentCore } from './agent-core.ts';
import { fetchAggregate, fetchObject } from './aggregate-fetch.ts';
import { dataKeyAt } from './epoch-keys.ts';
import { useEpoch } from './epoch-switch.ts';
import { replayProblem } from './round-attempt.ts';
import { describe } from './voter.ts';

/**
 * Threshold keys: a share request from the coordinator (already verified as its; `raw` its signed
 * bytes). A site of the decrypting set answers with its share bundle for the round's aggregate (a
 * request on `cohort.F.share.<site>`); any other site ignores it. Refused without an answer: a
 * request for a round attempt the log does not have open (a replay), for fewer contributors than
 * this site's own `round.minContributors`, one that is not byte for byte the request stored
 * write-once for the round (so every site answers the one context of the attempt), whose
 * contributors are not exactly the sites of the partials the log recorded for the attempt, whose
 * aggregate is not the stored one (digest and blocks), or that the site's position ledger refuses
 * (a second context at one attempt: `SHARES_CONTEXT_CHANGED`). Asked again for the same context,
 * the site sends the same bundle. Returns whether a bundle was sent.
 */
export async function onShareRequest(
  core: AgentCore,
  r: ControlBodies['share-request'],
  raw: Uint8Array,
): Promise<boolean> {
  const log = core.ctx.log.child({ round: r.round });
  if (!r.decrypting.some((d) => d.site === core.member)) return false;
  if (failpoint('agent.share-request', r.round) === 'skip') return false; // a decrypter that never answers
  // A site that missed the RoundOpen naming a re-shared epoch switches now (from the log).
  const switched = await useEpoch(core, r.epochId, r.round);
  if (switched !== undefined) {
    log.warn({ reason: switched }, 'share request refused');
    return false;
  }
  const threshold = core.threshold;
  const dataKey = dataKeyAt(core, r.round);
  if (threshold === null || dataKey === null) {
    log.error(
      { reason: core.keysetError },
      'asked for decryption shares without threshold keys or a data key',
    );
    return false;
  }
  if (!holds(threshold.material.roster, core.member)) {
    log.warn('share request refused: this site holds no shares in its key epoch');
    return false;
  }
  const replay = await replayProblem(core, 'share-request', r.round, r.attempt);
  if (replay !== undefined) {
    if (!replay.unavailable) core.counters.replaysRefused++;
    log.warn({ reason: replay.reason }, 'share request refused');
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
  const problem = await requestProblem(core, r, raw);
  if (problem !== undefined) {
    core.counters.replaysRefused++;
    log.warn({ reason: problem }, 'share request refused');
    return false;
  }
  let bundle: Uint8Array;
  try {
    bundle = await makeShareBundleYielding({
      lanes: core.ctx.ckks as ThresholdLaneContext,
      context: shareContextOf(r),
      material: threshold.material,
      signer: { id: core.member, key: core.ctx.signing },
      dataKey,
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

/**
 * Why `r` is not the one context of its attempt the federation committed to, or undefined: the
 * write-once request object, the log's partial records and the stored aggregate must all agree.
 */
async function requestProblem(
  core: AgentCore,
  r: ControlBodies['share-request'],
  raw: Uint8Array,
): Promise<string | undefined> {
  const store = aggregateStore(core.ctx.config.federation.id);
  let stored: Uint8Array;
  try {
    stored = await fetchObject(
      core,
      store,
      shareRequestObjectName(r.round),
      CONTROL_MAX_BYTES['share-request'],
    );
  } catch (err) {
    return `no share request stored for round ${r.round}: ${(err as Error).message}`;
  }
  if (!bytesEqual(stored, raw)) return `not the share request stored for round ${r.round}`;
  try {
    await core.follower.sync();
  } catch (err) {
    return `the log cannot be read to check the cohort: ${(err as Error).message}`;
  }
  const open = core.follower.history.openRound;
  if (open == null || open.roundOpen.round !== r.round || !bytesEqual(open.roundOpen.attempt, r.attempt)) {
    return `round ${r.round} of that attempt is not open in the log`;
  }
  const logged = [...new Set(open.evidence.partials.flatMap((p) => p.sites.map((c) => c.site)))].sort();
  if (logged.length !== r.contributors.length || logged.some((site, k) => site !== r.contributors[k])) {
    return `its contributors (${r.contributors.join(', ')}) are not the sites of the partials the log recorded (${logged.join(', ')})`;
  }
  if (r.aggregateObject !== `round-${r.round}`)
    return `its aggregate object ${r.aggregateObject} is not round ${r.round}'s`;
  let ciphertexts: Uint8Array[];
  try {
    ciphertexts = await fetchAggregate(
      core,
      r.aggregateObject,
      open.roundOpen.totalParams,
      r.aggregateDigest,
      'vote-no',
    );
  } catch (err) {
    return `its aggregate: ${(err as Error).message}`;
  }
  if (ciphertexts.length !== r.blocks)
    return `${r.blocks} blocks, the stored aggregate has ${ciphertexts.length}`;
  return undefined;
}
