import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { LaneKeyset } from '../../../crypto/lanes/index.ts';
import { type RnsPoly, rosterHolders, ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import { type AggregateInfo, openControl } from '../../protocol/index.ts';
import {
  aggregateDigest,
  decodeSharesObject,
  epochAt,
  openShareBundleYielding,
  shareContextOf,
  sharesDecryptor,
  sharesInvalidReason,
  sharesObjectName,
} from '../../round/index.ts';
import { aggregateStore } from '../store/index.ts';
import type { AgentCore } from './agent-core.ts';
import { AgentError } from './agent-error.ts';
import { fetchObject } from './aggregate-fetch.ts';
import type { RoundAttempt } from './apply-aggregate.ts';
import { dataKeyAt, macKeyAt } from './epoch-keys.ts';
import { VoteNo } from './voter-error.ts';

/**
 * Why this site cannot decrypt an aggregate of `round`, or undefined: it needs the round's
 * aggregate MAC key, and under a shared key its CKKS keyset. Under threshold keys it needs no CKKS
 * key of its own (the stored shares decrypt), only the data key of the round's epoch, so a site
 * enrolled since the epoch began still votes and catches up.
 */
export function decryptProblem(core: AgentCore, round: number): string | undefined {
  if (core.keyset === null && !(core.ctx.ckks instanceof ThresholdLaneContext))
    return core.keysetError ?? 'no key';
  if (macKeyAt(core, round) === null) {
    return core.keysetError ?? `this site holds no data key of round ${round}'s key epoch`;
  }
  return undefined;
}

/**
 * What decrypts a round's aggregate at this site: its keyset under a shared key; under threshold
 * keys, a decryptor from the t share bundles stored beside the aggregate (`round-<n>-shares`).
 * Before any bundle is opened the stored share request must be the coordinator's, for this
 * round's attempt, this key epoch, the aggregate these ciphertexts are, exactly its contributors,
 * at least this site's own `round.minContributors`, and a decrypting set of roster sites at their
 * points, as many as the threshold; then each bundle must verify under its site's registered key
 * and open under the data key. Any failure is a {@link VoteNo} on PREPARE and `REPLAY_MISMATCH`
 * (or `REPLAY_UNAVAILABLE` when nothing is stored) on catch-up. Delete the result after use.
 */
export async function aggregateDecryptor(
  core: AgentCore,
  info: AggregateInfo,
  ciphertexts: readonly Uint8Array[],
  round: RoundAttempt,
  onMismatch: 'vote-no' | 'REPLAY_MISMATCH',
): Promise<{ readonly keyset: LaneKeyset; readonly owned: boolean }> {
  if (!(core.ctx.ckks instanceof ThresholdLaneContext)) {
    if (core.keyset === null) throw new AgentError('REPLAY_UNAVAILABLE', `no CKKS key: ${core.keysetError}`);
    return { keyset: core.keyset, owned: false };
  }
  const fail = (why: string): Error =>
    onMismatch === 'vote-no'
      ? new VoteNo(`decryption shares of round ${round.round}: ${why}`)
      : new AgentError('REPLAY_MISMATCH', `decryption shares of round ${round.round}: ${why}`);
  const dataKey = dataKeyAt(core, round.round);
  if (dataKey === null) throw fail('no data key of its key epoch to open them');
  const lanes = core.ctx.ckks;
  // The epoch the round was encrypted under (a later re-sharing does not unmake it).
  const epoch = epochAt(
    core.thresholdGenesis ?? undefined,
    core.follower.history.thresholdEpochs,
    round.round,
  );
  if (epoch === undefined) throw fail('no key epoch is known for the round');
  const { roster, epochId } = epoch;
  const name = sharesObjectName(round.round);
  const maxBytes = (roster.threshold + 1) * (ciphertexts.length * lanes.maxCiphertextBytes + 512 * 1024);
  const stored = await fetchObject(core, aggregateStore(core.ctx.config.federation.id), name, maxBytes);
  let request: ReturnType<typeof openControl<'share-request'>>['body'];
  let bundles: Uint8Array[];
  try {
    const object = decodeSharesObject(stored);
    bundles = object.bundles;
    request = openControl(object.request, 'share-request', core.ctx.keys, {
      signer: core.ctx.members.coordinator,
    }).body;
  } catch (cause) {
    throw fail(`${name} is not the coordinator's share request and bundles (${(cause as Error).message})`);
  }
  const sites = info.contributors.map((c) => c.site).sort();
  const problem =
    request.federation !== round.federation || request.round !== round.round
      ? 'made for another round'
      : !bytesEqual(request.attempt, round.attempt)
        ? 'made for another attempt of the round'
        : !bytesEqual(request.epochId, epochId)
          ? 'made under another key epoch'
          : !bytesEqual(request.aggregateDigest, aggregateDigest(ciphertexts)) ||
              request.blocks !== ciphertexts.length
            ? 'made for another aggregate'
            : request.contributors.length !== sites.length ||
                request.contributors.some((s, k) => s !== sites[k])
              ? 'made for other contributors than the aggregate lists'
              : // On catch-up the round is committed: the minimum then in force was the voters' to check.
                onMismatch === 'vote-no' && request.minContributors < core.ctx.config.round.minContributors
                ? `made for round.minContributors ${request.minContributors}, below this site's ${core.ctx.config.round.minContributors}`
                : request.decrypting.length < roster.threshold
                  ? `a decrypting set of ${request.decrypting.length}, the threshold is ${roster.threshold}`
                  : request.decrypting.some(
                        (d) => rosterHolders(roster).find((s) => s.id === d.site)?.point !== d.point,
                      )
                    ? 'a decrypting site or point the roster does not give a key holder'
                    : bundles.length !== request.decrypting.length
                      ? `${bundles.length} bundles for ${request.decrypting.length} decrypting sites`
                      : undefined;
  if (problem !== undefined) throw fail(problem);
  const context = shareContextOf(request);
  const opened = new Map<string, RnsPoly[]>();
  try {
    for (const [k, d] of request.decrypting.entries()) {
      // The key the site held in that round (a later rotation or revocation does not unmake it).
      const key = core.ctx.registryView.keyFor(d.site, round.round) ?? core.ctx.keys(d.site);
      if (key === undefined) throw fail(`${d.site} has no registered signing key`);
      try {
        opened.set(
          d.site,
          await openShareBundleYielding(bundles[k]!, { lanes, context, site: d.site, key, dataKey }),
        );
      } catch (cause) {
        // Its signed bundle does not open: that site's fault, named so the coordinator strikes it.
        throw onMismatch === 'vote-no'
          ? new VoteNo(sharesInvalidReason(d.site, (cause as Error).message))
          : fail((cause as Error).message);
      }
    }
    return { keyset: sharesDecryptor(lanes, context, opened), owned: true };
  } finally {
    for (const shares of opened.values()) for (const d of shares) d.fill(0n);
  }
}
