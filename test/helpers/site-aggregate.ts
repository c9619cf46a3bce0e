import { AggregateMacKey } from '../../crypto/mac/index.ts';
import {
  type Aggregate,
  BlockVerifier,
  type CodecOptions,
  encodeUpdate,
  type RoundContext,
  type RoundMac,
  rmsLevels,
  sumUpdates,
} from '../../src/protocol/index.ts';
import { loadSiteDataKey, loadSiteKeyset, type MemberContext } from '../../src/services/index.ts';

/** A site's aggregate-MAC key, from its own data-key envelope (as its agent derives it). */
export function siteMacKey(site: MemberContext): AggregateMacKey {
  const federation = site.config.federation.id;
  return AggregateMacKey.fromDataKey(loadSiteDataKey(site.keysDir, site.member, federation), federation);
}

/** The aggregate MAC of `round` (and its RoundOpen's `attempt`) under `key`. */
export function macOf(
  key: AggregateMacKey,
  round: { readonly federation: string; readonly round: number; readonly attempt: Uint8Array },
): RoundMac {
  return { key, nonce: { federation: round.federation, round: round.round, attempt: round.attempt } };
}

/**
 * An aggregate of one site's update of `context`'s round, as a test playing the aggregator makes
 * it: the site's update (a small fixed step of `params` parameters, then its RMS histogram lanes) encoded with the site's own
 * CKKS, MAC and signing keys, verified with `verifier`'s registry and summed. Its MAC is bound to
 * the round and `attempt`, so it decodes in that round (and attempt) only.
 */
export function siteAggregate(
  site: MemberContext,
  verifier: MemberContext,
  input: {
    readonly context: RoundContext;
    readonly options: CodecOptions;
    readonly params: number;
    readonly examples: number;
    /** The RoundOpen's attempt the update's MAC is bound to. */
    readonly attempt: Uint8Array;
    readonly roundingSeed?: { readonly key0: number; readonly key1: number };
  },
): Aggregate {
  const federation = site.config.federation.id;
  const keyset = loadSiteKeyset(site.ckks, site.keysDir, site.member, federation);
  const macKey = siteMacKey(site);
  const mac = macOf(macKey, { federation, round: input.context.round, attempt: input.attempt });
  try {
    const encoded = encodeUpdate({
      update: new Float32Array(input.params).fill(0.001),
      // The RMS histogram every training update carries after its parameters.
      extraLevels: rmsLevels(0.001, input.options.clip),
      residual: null,
      credentials: { signer: site.member, ckks: keyset, signing: site.signing, mac },
      context: input.context,
      options: input.options,
      exampleWeight: input.examples,
      ...(input.roundingSeed === undefined ? {} : { roundingSeed: input.roundingSeed }),
    });
    const v = new BlockVerifier({
      context: input.context,
      ckksParamsId: verifier.ckks.paramsId,
      keys: verifier.keys,
      allowedAlgorithms: verifier.config.crypto.signature.allowed,
    });
    return sumUpdates(verifier.ckks, [v.verifyUpdate(encoded)]);
  } finally {
    macKey.delete();
    keyset.delete();
  }
}
