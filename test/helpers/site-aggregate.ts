import {
  type Aggregate,
  BlockVerifier,
  type CodecOptions,
  encodeUpdate,
  type LanePosition,
  type RoundContext,
  sumUpdates,
} from '../../src/protocol/index.ts';
import { loadSiteKeyset, type MemberContext } from '../../src/services/index.ts';

/**
 * An aggregate of one site's update of `context`'s round, as a test playing the aggregator makes
 * it: the site's update (a small fixed step of `params` parameters) encoded with the site's own
 * CKKS and signing keys, verified with `verifier`'s registry and summed. Its integrity lanes carry
 * the round's tag, so it decodes in that round only.
 */
export function siteAggregate(
  site: MemberContext,
  verifier: MemberContext,
  input: {
    readonly context: RoundContext;
    readonly options: CodecOptions;
    readonly params: number;
    readonly examples: number;
    readonly position?: LanePosition;
    readonly roundingSeed?: { readonly key0: number; readonly key1: number };
  },
): Aggregate {
  const federation = site.config.federation.id;
  const keyset = loadSiteKeyset(site.ckks, site.keysDir, site.member, federation);
  try {
    const encoded = encodeUpdate({
      update: new Float32Array(input.params).fill(0.001),
      residual: null,
      credentials: { signer: site.member, ckks: keyset, signing: site.signing },
      context: input.context,
      options: input.options,
      exampleWeight: input.examples,
      ...(input.position === undefined ? {} : { position: input.position }),
      ...(input.roundingSeed === undefined ? {} : { roundingSeed: input.roundingSeed }),
    });
    const v = new BlockVerifier({
      context: input.context,
      ckksParamsId: verifier.ckks.paramsId,
      keys: verifier.keys,
      allowedAlgorithms: verifier.config.crypto.signature.allowed,
      participants: input.position?.participants ?? 1,
    });
    return sumUpdates(verifier.ckks, [v.verifyUpdate(encoded)]);
  } finally {
    keyset.delete();
  }
}
