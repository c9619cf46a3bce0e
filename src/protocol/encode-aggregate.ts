import type { SigningKeyPair } from '../../crypto/signature/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import type { Aggregate } from './aggregate.ts';
import { type SignedBlocks, signBlocks } from './encode-update.ts';
import { assertRoundContext, type RoundContext } from './round-context.ts';

/** Who signs a partial aggregate: an aggregator (or the root) with its own lattice key. */
export interface AggregatorCredentials {
  readonly signer: string;
  readonly signing: SigningKeyPair;
}

/**
 * Frames a (partial) aggregate as ParameterBlocks signed by the aggregator: contributors = the
 * number of sites summed, and a manifest listing each site with its update digest and weight,
 * whose SHA-256 the signature covers. The parent verifies it with the same `BlockVerifier` and
 * adds it with the same `AggregateBuilder`, which refuses a site counted twice.
 */
export function encodeAggregate(
  aggregate: Aggregate,
  credentials: AggregatorCredentials,
  context: RoundContext,
  options: {
    crcChunkBytes: number;
    shardCount?: number;
    /** Each listed site's own framed manifest, in `aggregate.sites` order, forwarded to the parent. */
    siteManifests?: readonly Uint8Array[];
  },
): SignedBlocks {
  assertRoundContext(context);
  if (aggregate.sites.length === 0) throw new InvalidArgumentError('aggregate has no contributors');
  const forwarded = options.siteManifests ?? [];
  if (forwarded.length !== 0 && forwarded.length !== aggregate.sites.length) {
    throw new InvalidArgumentError(
      `siteManifests has ${forwarded.length} entries for ${aggregate.sites.length} contributors`,
    );
  }
  const list = aggregate.sites.map((c) => ({ site: c.site, digest: c.digest, weight: c.weight }));
  return signBlocks(
    context,
    credentials.signer,
    credentials.signing,
    {
      totalParams: aggregate.totalParams,
      exampleWeight: aggregate.totalWeight,
      encoding: aggregate.encoding,
      crcChunkBytes: options.crcChunkBytes,
    },
    aggregate.ciphertexts,
    options.shardCount ?? 1,
    list,
    forwarded,
  );
}
